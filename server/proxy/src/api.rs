//! What the model APIs have in common for the proxy: the request as
//! ctxproxy sees it, the context-tool calls a reply holds (read as the
//! turn's messages are: `Api::calls`), and the interface
//! `openai`, `anthropic`, `responses` and `gemini` each implement (shapes in,
//! shapes out; no HTTP).

pub use ctxproxy_core::context_tool::is_context_tool;
use ctxproxy_core::message::{Message, ToolCall};
use ctxproxy_model_apis::Shape;
pub use ctxproxy_model_apis::{expected, push_read, BadRequest};
use serde_json::{Map, Value};

use super::sse;
use ctxproxy_service::api::FormattedPrompt;
use ctxproxy_service::format::Format;

/// What the body to forward is built from: the client's body less its
/// history, and the few history messages the API mapping reads back
/// (`Api::keeps`), by their index in the client's history (`Api::HISTORY`).
#[derive(Clone, Copy)]
pub struct ClientBody<'a> {
    pub envelope: &'a Value,
    pub kept: &'a [(usize, Value)],
}

/// The calls an assistant turn made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnCalls {
    /// The calls of the context tools, which the proxy answers itself.
    pub context: Vec<ToolCall>,
    /// Whether the client's own tools were called too.
    pub client: ClientCalls,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientCalls {
    /// Only context tools (or none) were called.
    None,
    /// A tool of the client's was called: the turn is the client's to answer.
    Some,
}

impl TurnCalls {
    /// Whether the proxy answers this turn itself and asks again: it called
    /// context tools and nothing of the client's.
    pub fn answered_inside(&self) -> bool {
        !self.context.is_empty() && self.client == ClientCalls::None
    }
}

/// Which of our own error bodies to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// 400: the request body.
    InvalidRequest,
    /// 401: `--token` given and the request lacks it.
    Unauthorized,
    /// 502: the upstream cannot be reached.
    Upstream,
    /// 500: ctxproxy's store failed.
    Internal,
}

/// One model API's shapes.
pub trait Api: Shape + Send + Sync + 'static {
    /// The shape `ctx/assemble` formats the prompt in.
    const FORMAT: Format;

    /// The body's field that holds the history: `messages`, `input`, `contents`.
    const HISTORY: &'static str;

    /// The body's field that states the system prompt outside the history,
    /// if the API has one (masked when forwarded).
    const SYSTEM: Option<&'static str>;

    /// Whether a history item is a tool's output (masked as one).
    fn is_tool_output(m: &Value) -> bool;

    /// The history field's value as the array of items it stands for (an
    /// API that also takes a plain string there reads it as one item).
    fn history_items(history: Value) -> Value {
        history
    }

    /// Whether the body points at history the upstream keeps and the proxy
    /// cannot see or rewrite: the request is then forwarded as sent.
    fn server_side_history(_envelope: &Value) -> bool {
        false
    }

    /// Whether a request to `path` streams whatever its body says (an API
    /// whose streaming is a method of its own); by default only the body's
    /// `stream` says so.
    fn streams_by_path(_path: &str) -> bool {
        false
    }

    /// The model a request asks for: the body's `model` (Gemini names it
    /// in the path instead).
    fn model(envelope: &Value, _path: &str) -> String {
        envelope["model"].as_str().unwrap_or_default().to_string()
    }

    /// The system prompt a body states outside its messages (`system`),
    /// checked; `None` for an API whose system prompt is its leading
    /// system messages. Errors name the field.
    fn envelope_system(body: &Value) -> Result<Option<String>, BadRequest>;

    /// Whether `upstream_body` reads this history message back (system
    /// messages, media, thinking blocks, cache breakpoints): kept whole, as
    /// the client sent it.
    fn keeps(m: &Value) -> bool;

    /// The body to forward: the client's, with the history replaced by the
    /// assembled prompt (`ctx/assemble`'s messages and tools in this API's
    /// format) and the context tools added.
    fn upstream_body(client: ClientBody, prompt: FormattedPrompt, session: &str) -> Value;

    /// The functions one entry of a body's `tools` declares, each in Chat
    /// Completions' shape (`{type: "function", function: {name,
    /// description, parameters}}`); none for a tool of another kind.
    fn function_tools(tool: &Value) -> Vec<Value>;

    /// The API's own error body.
    fn error_body(kind: ErrorKind, message: &str, param: Option<&str>) -> Value;

    /// An assistant turn as the ctxproxy messages that are recorded: read
    /// the way the client's next request will carry it, so that it matches
    /// (`Shape::joins` included). By default a turn is one history item,
    /// read as one assistant message; one that does not read records
    /// nothing.
    fn turn_messages(turn: &Value) -> Vec<Message> {
        let read = Self::read(turn, "reply").ok();
        read.and_then(|mut m| m.pop()).into_iter().collect()
    }

    /// The assistant message of a (non-streamed) reply, as a request carries it.
    fn assistant_turn(reply: &Value) -> Value;

    /// The calls of an assistant turn: context-tool calls, and whether the
    /// client's own tools were called too. Read from the turn's messages
    /// (`turn_messages`), so a call is seen as it is recorded.
    fn calls(turn: &Value) -> TurnCalls {
        let mut calls = TurnCalls {
            context: Vec::new(),
            client: match Self::calls_unread_tools(turn) {
                true => ClientCalls::Some,
                false => ClientCalls::None,
            },
        };
        for call in Self::turn_messages(turn)
            .into_iter()
            .flat_map(|m| m.tool_calls)
        {
            match is_context_tool(&call.name) {
                true => calls.context.push(call),
                false => calls.client = ClientCalls::Some,
            }
        }
        calls
    }

    /// Whether a turn calls one of the client's tools that `turn_messages`
    /// does not read as a call (a hosted shell or computer the client
    /// runs); none by default.
    fn calls_unread_tools(_turn: &Value) -> bool {
        false
    }

    /// Appends an assistant turn and the answers to its context calls to a
    /// request body, for the next round.
    fn continue_with(body: &mut Value, turn: &Value, answers: &[(ToolCall, String)]);

    /// The reply the client gets from the (non-streamed) replies of every
    /// round: one message, context calls left out, usage summed.
    fn splice(rounds: &[Value]) -> Value;

    /// A whole reply as the events the API streams for it, for an
    /// upstream that answers a streamed request with its whole reply.
    fn stream_events(reply: &Value) -> Vec<sse::Event>;

    /// The stream splicer for a streamed request.
    type Splicer: Splicer;
    fn splicer(client: &Value) -> Self::Splicer;
}

/// Turns the upstream's events of every round into one client stream.
pub trait Splicer: Send + 'static {
    /// An upstream event; returns the bytes to send the client now.
    fn event(&mut self, event: sse::Event) -> Vec<u8>;
    /// The round's assistant turn as a request carries it (context calls
    /// included), then ready for the next round.
    fn end_round(&mut self) -> Value;
    /// The closing events: one final chunk / `message_delta` + `message_stop`.
    fn finish(&mut self) -> Vec<u8>;
    /// What the client saw, as the assistant message a request carries.
    fn client_turn(&self) -> Value;
    /// What keeps the client's connection alive during an internal round.
    fn keep_alive(&self) -> Vec<u8>;
    /// Whether the upstream's stream reported an error event.
    fn failed(&self) -> bool;
    /// Whether this round's stream reached the API's last event (`[DONE]`,
    /// `message_stop`): a stream that ends before it was cut short.
    fn round_ended(&self) -> bool;
    /// An error body (the upstream's, or ours) as an event of this stream.
    fn error_event(&self, body: &Value) -> Vec<u8>;
}

/// Puts in `out` (the reply the client gets) the usage of every round's
/// reply summed, in the API's own field and shape; a reply stating none
/// gets none.
pub fn put_summed_usage<A: Api>(out: &mut Value, rounds: &[Value]) {
    let field = A::USAGE.reply_field();
    let mut usage = Value::Null;
    for r in rounds {
        add_usage(&mut usage, &r[field]);
    }
    if !usage.is_null() {
        out[field] = usage;
    }
}

/// Sums two usage objects number by number (nested objects too); other
/// values keep the latest.
pub fn add_usage(total: &mut Value, more: &Value) {
    match (total, more) {
        (Value::Object(t), Value::Object(m)) => add_maps(t, m),
        (t @ Value::Null, m) => *t = m.clone(),
        _ => {}
    }
}

fn add_maps(t: &mut Map<String, Value>, m: &Map<String, Value>) {
    for (k, v) in m {
        match (t.get_mut(k), v) {
            (Some(Value::Number(a)), Value::Number(b)) => {
                if let (Some(a), Some(b)) = (a.as_u64(), b.as_u64()) {
                    t.insert(k.clone(), Value::from(a + b));
                } else if let (Some(a), Some(b)) = (a.as_f64(), b.as_f64()) {
                    t.insert(k.clone(), Value::from(a + b));
                }
            }
            (Some(Value::Object(a)), Value::Object(b)) => add_maps(a, b),
            (_, v) => {
                t.insert(k.clone(), v.clone());
            }
        }
    }
}

/// Puts the client's tools followed by the assembled prompt's (the context
/// tools) in `body`, so the list a client keeps sending stays a stable
/// prefix. A prompt of the whole shape offers no tools of its own: a body
/// whose client sent none then gets no `tools` at all (OpenAI refuses an
/// empty list).
pub fn put_tools(body: &mut Value, client: &Value, ours: Value) {
    let mut tools = client["tools"].as_array().cloned().unwrap_or_default();
    match ours {
        Value::Array(ours) => tools.extend(ours),
        Value::Null => {}
        other => tools.push(other),
    }
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
}

/// A function tool in Chat Completions' shape, what `Api::function_tools`
/// gives in every API.
pub fn function_tool(name: &Value, description: &Value, parameters: &Value) -> Value {
    serde_json::json!({
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    })
}

/// `stream`, when present, is a boolean.
pub fn stream_flag(body: &Value) -> Result<bool, BadRequest> {
    match body.get("stream") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(expected("stream", "a boolean", other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Each API's turn with a context call and a call of the client's, then
    /// the context call alone: what `Api::calls` reads from it.
    #[test]
    fn calls_are_read_as_the_turn_is_recorded() {
        fn check<A: Api>(turn: Value, context: &[(&str, &str, &str)], client: ClientCalls) {
            let calls = A::calls(&turn);
            let read: Vec<_> = calls
                .context
                .iter()
                .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
                .collect();
            assert_eq!((read.as_slice(), calls.client), (context, client), "{turn}");
        }
        let retrieve = [("c1", "context_retrieve", r#"{"ids":["x1"]}"#)];
        let openai =
            |calls: Value| json!({"role": "assistant", "content": null, "tool_calls": calls});
        let openai_ctx = json!({"id": "c1", "type": "function", "function": {"name": "context_retrieve", "arguments": "{\"ids\":[\"x1\"]}"}});
        let openai_own = json!({"id": "c2", "type": "function", "function": {"name": "shell", "arguments": "{}"}});
        check::<crate::openai::OpenAi>(
            openai(json!([openai_ctx, openai_own])),
            &retrieve,
            ClientCalls::Some,
        );
        check::<crate::openai::OpenAi>(openai(json!([openai_ctx])), &retrieve, ClientCalls::None);

        let anthropic = |blocks: Value| json!({"role": "assistant", "content": blocks});
        let anthropic_ctx = json!({"type": "tool_use", "id": "c1", "name": "context_retrieve", "input": {"ids": ["x1"]}});
        let anthropic_own = json!({"type": "tool_use", "id": "c2", "name": "Bash", "input": {}});
        check::<crate::anthropic::Anthropic>(
            anthropic(json!([anthropic_ctx, anthropic_own])),
            &retrieve,
            ClientCalls::Some,
        );
        check::<crate::anthropic::Anthropic>(
            anthropic(json!([{"type": "text", "text": "Checking."}, anthropic_ctx])),
            &retrieve,
            ClientCalls::None,
        );

        let responses_ctx = json!({"type": "function_call", "call_id": "c1", "name": "context_retrieve", "arguments": "{\"ids\":[\"x1\"]}"});
        // A shell call is the client's though ctxproxy does not read it as a call.
        let responses_own = json!({"type": "local_shell_call", "call_id": "c2", "action": {"type": "exec", "command": ["ls"]}});
        let reasoning = json!({"type": "reasoning", "summary": []});
        check::<crate::responses::Responses>(
            json!([responses_ctx, responses_own]),
            &retrieve,
            ClientCalls::Some,
        );
        check::<crate::responses::Responses>(
            json!([reasoning, responses_ctx]),
            &retrieve,
            ClientCalls::None,
        );

        let gemini = |parts: Value| json!({"role": "model", "parts": parts});
        let gemini_ctx = json!({"functionCall": {"id": "c1", "name": "context_retrieve", "args": {"ids": ["x1"]}}});
        let gemini_own = json!({"functionCall": {"name": "run_shell_command", "args": {}}});
        check::<crate::gemini::Gemini>(
            gemini(json!([gemini_ctx, gemini_own])),
            &retrieve,
            ClientCalls::Some,
        );
        check::<crate::gemini::Gemini>(gemini(json!([gemini_ctx])), &retrieve, ClientCalls::None);
        // No calls at all: nothing to answer inside.
        check::<crate::openai::OpenAi>(
            json!({"role": "assistant", "content": "Done."}),
            &[],
            ClientCalls::None,
        );
    }

    #[test]
    fn usage_sums_numbers_at_every_depth() {
        let mut total = Value::Null;
        add_usage(
            &mut total,
            &json!({"prompt_tokens": 10, "details": {"cached_tokens": 4}}),
        );
        add_usage(
            &mut total,
            &json!({"prompt_tokens": 5, "completion_tokens": 2, "details": {"cached_tokens": 1}}),
        );
        assert_eq!(
            total,
            json!({"prompt_tokens": 15, "completion_tokens": 2, "details": {"cached_tokens": 5}})
        );
    }
}

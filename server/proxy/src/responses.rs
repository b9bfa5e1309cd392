//! OpenAI Responses: `input` items to ctxproxy messages, the assembled
//! prompt back into input items (the client's system messages, reasoning
//! items beside the calls they preceded, custom tool calls as custom), and
//! replies and stream events spliced over the internal context-tool rounds.
//!
//! A Responses history lists an assistant turn item by item (a message, a
//! reasoning item, each call its own item), so each item reads as at most
//! one ctxproxy message, and a reply is recorded the same way.

use std::collections::HashMap;

use ctxproxy_core::message::{Message, ToolCall};
use serde_json::{json, Value};

use super::api::{
    expected, function_tool, is_context_tool, push_read, put_summed_usage, put_tools, Api,
    BadRequest, ClientBody, ErrorKind,
};
use super::openai::OpenAi;
use super::sse;
use ctxproxy_model_apis::openai::content_text;
use ctxproxy_model_apis::responses::to_messages;
pub use ctxproxy_model_apis::responses::Responses;
use ctxproxy_service::api::FormattedPrompt;
use ctxproxy_service::format::Format;

mod stream;

pub use stream::ResponseSplicer;

/// Output items that are calls the client runs but that ctxproxy does not
/// read as calls (`is_read`): a reply with one is the client's to answer.
/// Hosted tools' calls (`web_search_call`, ...) are run by the upstream
/// and are not.
const UNREAD_CLIENT_CALLS: [&str; 5] = [
    "local_shell_call",
    "shell_call",
    "apply_patch_call",
    "computer_call",
    "tool_search_call",
];

fn kind(item: &Value) -> &str {
    item["type"].as_str().unwrap_or("message")
}

fn is_system_message(item: &Value) -> bool {
    kind(item) == "message" && matches!(item["role"].as_str(), Some("system" | "developer"))
}

/// A call the model made to one of the context tools.
fn is_context_call(item: &Value) -> bool {
    kind(item) == "function_call" && item["name"].as_str().is_some_and(is_context_tool)
}

/// A round's output items the client sees: all but the context-tool
/// calls and the reasoning items that led to them (the client could not
/// send those back beside their call).
fn client_items(output: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    let mut before_context_call = false;
    for item in output.iter().rev() {
        if is_context_call(item) {
            before_context_call = true;
        } else if !(before_context_call && item["type"] == "reasoning") {
            before_context_call = false;
            out.push(item.clone());
        }
    }
    out.reverse();
    out
}

/// The items ctxproxy reads as its messages; any other (reasoning, hosted
/// tools' calls, tool search) is read as nothing and kept as it came.
fn is_read(item: &Value) -> bool {
    matches!(
        kind(item),
        "message"
            | "function_call"
            | "custom_tool_call"
            | "function_call_output"
            | "custom_tool_call_output"
    )
}

/// A user message whose parts carry more than text (images, files, audio).
fn has_media(item: &Value) -> bool {
    kind(item) == "message"
        && item["role"] == "user"
        && item["content"].as_array().is_some_and(|parts| {
            !parts
                .iter()
                .all(|p| matches!(p["type"].as_str(), Some("input_text" | "output_text")))
        })
}

/// The kept items that lead the client's history and state the system
/// prompt: forwarded as they are.
fn leading_system(kept: &[(usize, Value)]) -> impl Iterator<Item = &Value> {
    kept.iter()
        .enumerate()
        .take_while(|(at, (i, item))| at == i && is_system_message(item))
        .map(|(_, (_, item))| item)
}

/// The items ctxproxy does not read (reasoning above all), by the call
/// they directly precede: the model gets them back beside that call while
/// the call is shown. Items that precede anything else (a message) are
/// left out with it.
fn unread_by_call(kept: &[(usize, Value)]) -> HashMap<String, Vec<Value>> {
    let mut out = HashMap::new();
    let mut pending: Vec<Value> = Vec::new();
    let mut last = None;
    for (i, item) in kept {
        if last.is_some_and(|l: usize| l + 1 != *i) {
            pending.clear();
        }
        last = Some(*i);
        if !is_read(item) {
            pending.push(item.clone());
        } else if let Some(id) = item["call_id"].as_str().filter(|_| !pending.is_empty()) {
            out.insert(id.to_string(), std::mem::take(&mut pending));
        } else {
            pending.clear();
        }
    }
    out
}

/// The client's user messages with media, by the text ctxproxy keeps of
/// them: where the assembled prompt shows that text, the model gets the
/// original parts back.
fn media_by_text(kept: &[(usize, Value)]) -> HashMap<String, Value> {
    let mut out = HashMap::new();
    for (i, item) in kept.iter().filter(|(_, item)| has_media(item)) {
        if let Ok(text) = content_text(&item["content"], &format!("input[{i}].content")) {
            out.insert(text.trim().to_string(), item["content"].clone());
        }
    }
    out
}

/// The client's custom tool calls (`apply_patch`), by call id.
fn custom_calls(kept: &[(usize, Value)]) -> HashMap<&str, &Value> {
    kept.iter()
        .filter(|(_, item)| kind(item) == "custom_tool_call")
        .filter_map(|(_, item)| Some((item["call_id"].as_str()?, item)))
        .collect()
}

/// An assembled prompt item as the client's API wants it back: a call of
/// one of the client's custom tools (and its output) as custom again, a
/// user message with media with its parts.
fn as_client_sent(
    mut item: Value,
    custom: &HashMap<&str, &Value>,
    media: &HashMap<String, Value>,
) -> Value {
    let original = item["call_id"].as_str().and_then(|id| custom.get(id));
    match (kind(&item), original) {
        ("function_call", Some(original)) => {
            // The prompt shows free text on one line: a call shown in full
            // (the same words) goes as sent, its patch's lines intact; one
            // cut to a digest goes as shown.
            let shown = item["arguments"].as_str().unwrap_or_default();
            let input = original["input"].as_str().unwrap_or_default();
            if shown.split_whitespace().eq(input.split_whitespace()) {
                (*original).clone()
            } else {
                json!({
                    "type": "custom_tool_call", "call_id": item["call_id"], "name": item["name"],
                    "input": shown,
                })
            }
        }
        ("function_call_output", Some(_)) => {
            item["type"] = json!("custom_tool_call_output");
            item
        }
        ("message", _) if item["role"] == "user" => {
            if let Some(parts) = item["content"].as_str().and_then(|t| media.get(t.trim())) {
                item["content"] = parts.clone();
            }
            item
        }
        _ => item,
    }
}

impl Api for Responses {
    const FORMAT: Format = Format::Responses;
    const HISTORY: &'static str = "input";
    const SYSTEM: Option<&'static str> = Some("instructions");

    fn is_tool_output(m: &Value) -> bool {
        matches!(kind(m), "function_call_output" | "custom_tool_call_output")
    }

    /// A plain string `input` is one user message.
    fn history_items(history: Value) -> Value {
        match history {
            Value::String(text) => json!([{"type": "message", "role": "user", "content": text}]),
            other => other,
        }
    }

    /// `previous_response_id` or `conversation`: the upstream's stored
    /// history comes before `input`.
    fn server_side_history(envelope: &Value) -> bool {
        ["previous_response_id", "conversation"]
            .iter()
            .any(|k| envelope.get(k).is_some_and(|v| !v.is_null()))
    }

    /// Function tools are flat; `custom`, `namespace`, `tool_search` and
    /// hosted tools declare no function.
    fn function_tools(tool: &Value) -> Vec<Value> {
        match tool["type"] == "function" {
            true => vec![function_tool(
                &tool["name"],
                &tool["description"],
                &tool["parameters"],
            )],
            false => Vec::new(),
        }
    }

    fn turn_messages(turn: &Value) -> Vec<Message> {
        let mut messages = Vec::new();
        for item in turn.as_array().into_iter().flatten() {
            push_read::<Self>(
                &mut messages,
                to_messages(item, "reply").unwrap_or_default(),
            );
        }
        messages
    }

    fn envelope_system(body: &Value) -> Result<Option<String>, BadRequest> {
        match body.get("instructions") {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(expected("instructions", "a string", other)),
        }
    }

    /// System messages and media (forwarded as sent), the items ctxproxy
    /// does not read, and the calls they may precede.
    fn keeps(m: &Value) -> bool {
        is_system_message(m)
            || has_media(m)
            || !is_read(m)
            || matches!(kind(m), "function_call" | "custom_tool_call")
    }

    fn upstream_body(client: ClientBody, prompt: FormattedPrompt, session: &str) -> Value {
        let mut body = client.envelope.clone();
        let mut unread = unread_by_call(client.kept);
        let media = media_by_text(client.kept);
        let custom = custom_calls(client.kept);
        let leading: Vec<&Value> = leading_system(client.kept).collect();
        let mut input: Vec<Value> = leading.iter().map(|&item| item.clone()).collect();
        for item in prompt.messages {
            // The system prompt's text, and the leading messages already
            // sent (the whole shape has them again when `instructions`
            // states the system prompt and they are history).
            if (kind(&item) == "message" && item["role"] == "system") || leading.contains(&&item) {
                continue;
            }
            let before = item["call_id"]
                .as_str()
                .filter(|_| matches!(kind(&item), "function_call" | "custom_tool_call"))
                .and_then(|id| unread.remove(id));
            // The whole shape forwards the client's items as sent: with their own.
            if let Some(before) = before.filter(|b| input.last() != b.last()) {
                input.extend(before);
            }
            input.push(as_client_sent(item, &custom, &media));
        }
        body["input"] = Value::Array(input);
        put_tools(&mut body, client.envelope, prompt.tools);
        if body.get("prompt_cache_key").is_none_or(Value::is_null) {
            body["prompt_cache_key"] = json!(format!("ctxproxy-{session}"));
        }
        body
    }

    fn error_body(kind: ErrorKind, message: &str, param: Option<&str>) -> Value {
        OpenAi::error_body(kind, message, param)
    }

    /// A turn is the reply's output items.
    fn assistant_turn(reply: &Value) -> Value {
        Value::Array(reply["output"].as_array().cloned().unwrap_or_default())
    }

    fn calls_unread_tools(turn: &Value) -> bool {
        let mut items = turn.as_array().into_iter().flatten();
        items.any(|item| UNREAD_CLIENT_CALLS.contains(&kind(item)))
    }

    fn continue_with(body: &mut Value, turn: &Value, answers: &[(ToolCall, String)]) {
        let input = body["input"]
            .as_array_mut()
            .expect("a forwarded body has input");
        input.extend(turn.as_array().into_iter().flatten().cloned());
        for (call, text) in answers {
            input.push(json!({"type": "function_call_output", "call_id": call.id, "output": text}));
        }
    }

    fn splice(rounds: &[Value]) -> Value {
        let mut out = rounds.last().cloned().unwrap_or(Value::Null);
        if let Some(id) = rounds.first().and_then(|r| r.get("id")) {
            out["id"] = id.clone();
        }
        out["output"] = rounds
            .iter()
            .flat_map(|r| client_items(r["output"].as_array().map_or(&[], Vec::as_slice)))
            .collect();
        put_summed_usage::<Self>(&mut out, rounds);
        out
    }

    /// `response.created`, each output item added and done, then
    /// `response.completed` with the whole response.
    fn stream_events(reply: &Value) -> Vec<sse::Event> {
        let mut head = reply.clone();
        head["output"] = json!([]);
        head["status"] = json!("in_progress");
        let mut events = vec![json!({"type": "response.created", "response": head})];
        for (i, item) in reply["output"].as_array().into_iter().flatten().enumerate() {
            for kind in ["response.output_item.added", "response.output_item.done"] {
                events.push(json!({"type": kind, "output_index": i, "item": item}));
            }
        }
        events.push(json!({"type": "response.completed", "response": reply}));
        events
            .into_iter()
            .enumerate()
            .map(|(n, mut data)| {
                data["sequence_number"] = json!(n);
                sse::Event {
                    event: data["type"].as_str().unwrap_or_default().to_string(),
                    data: data.to_string(),
                }
            })
            .collect()
    }

    type Splicer = ResponseSplicer;
    fn splicer(_client: &Value) -> ResponseSplicer {
        ResponseSplicer::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{ClientCalls, Splicer, TurnCalls};
    use ctxproxy_core::message::Role;
    use ctxproxy_core::packer::PromptMessage;
    use ctxproxy_core::render::Block;

    use crate::history::test_support::{forwarded, parse, pretty, request_as_text};

    fn message(role: &str, text: &str) -> Value {
        let part = if role == "assistant" {
            "output_text"
        } else {
            "input_text"
        };
        json!({"type": "message", "role": role, "content": [{"type": part, "text": text}]})
    }

    fn reasoning(id: &str) -> Value {
        json!({"type": "reasoning", "id": id, "summary": [{"type": "summary_text", "text": "**Planning**"}],
               "content": null, "encrypted_content": format!("gAAAA-{id}")})
    }

    /// A third turn of Codex, shaped as it sends it: developer messages,
    /// reasoning before each call, `apply_patch` as a custom tool call.
    fn codex_request() -> Value {
        let mut thanks = message("user", "now say thanks");
        thanks["content"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "input_image", "image_url": "data:image/png;base64,AAAA"}));
        json!({
            "model": "gpt-5.5",
            "stream": true,
            "tools": [
                {"type": "function", "name": "exec_command", "description": "Runs a command.", "strict": false, "parameters": {"type": "object"}},
                {"type": "custom", "name": "apply_patch", "description": "Edits files.", "format": {"type": "grammar", "syntax": "lark", "definition": "start: x"}},
                {"type": "web_search", "external_web_access": false}
            ],
            "tool_choice": "auto",
            "parallel_tool_calls": true,
            "reasoning": {"effort": "medium"},
            "store": false,
            "include": ["reasoning.encrypted_content"],
            "prompt_cache_key": "thread-1",
            "input": [
                message("developer", "You are Codex."),
                {"type": "message", "role": "developer", "content": [
                    {"type": "input_text", "text": "<permissions instructions>"},
                    {"type": "input_text", "text": "<tools>"}
                ]},
                message("user", "<environment_context>"),
                message("user", "create hello.txt containing hi"),
                reasoning("rs_1"),
                {"type": "custom_tool_call", "id": "ctc_1", "status": "completed", "call_id": "call_hello_1",
                 "name": "apply_patch", "input": "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"},
                {"type": "custom_tool_call_output", "call_id": "call_hello_1", "output": "Success."},
                reasoning("rs_m"),
                message("assistant", "Done: I created hello.txt."),
                message("user", "now run it"),
                reasoning("rs_2"),
                {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "exec_command", "arguments": "{\"cmd\":\"cat hello.txt\"}"},
                {"type": "function_call_output", "call_id": "call_2", "output": [{"type": "input_text", "text": "hi"}]},
                reasoning("rs_3"),
                {"type": "custom_tool_call", "call_id": "call_3", "name": "apply_patch", "input": "*** Begin Patch\n*** Delete File: hello.txt\n*** End Patch\n"},
                {"type": "custom_tool_call_output", "call_id": "call_3", "output": "Deleted."},
                thanks
            ]
        })
    }

    #[test]
    fn requests_become_ctxproxy_messages() {
        let parsed = parse::<Responses>(&codex_request()).unwrap();
        insta::assert_snapshot!(request_as_text(&parsed));
        // A plain string input is one user message; `instructions` is the system prompt.
        let plain =
            parse::<Responses>(&json!({"instructions": "Be brief.", "input": "hi"})).unwrap();
        assert_eq!(plain.system, "Be brief.");
        assert_eq!(plain.history.messages(), [Message::new(Role::User, "hi")]);
    }

    #[test]
    fn malformed_requests_name_the_field() {
        let cases = [
            json!({"input": 7}),
            json!({"input": []}),
            json!({"instructions": ["x"], "input": "hi"}),
            json!({"input": ["hi"]}),
            json!({"input": [{"type": "message", "content": "hi"}]}),
            json!({"input": [{"role": "robot", "content": "hi"}]}),
            json!({"input": [{"role": "user", "content": [{"type": "input_text"}]}]}),
            json!({"input": [{"role": "user", "content": "a"}, {"type": "function_call", "name": "f", "arguments": "{}"}]}),
            json!({"input": [{"type": "custom_tool_call", "call_id": "c", "name": "apply_patch"}]}),
            json!({"input": [{"type": "function_call_output", "call_id": "c", "output": 3}]}),
        ];
        let errors: Vec<String> = cases
            .iter()
            .map(|c| {
                let e = parse::<Responses>(c).unwrap_err();
                format!("{} | {}", e.param, e.message)
            })
            .collect();
        insta::assert_snapshot!(errors.join("\n"));
    }

    fn prompt_message(role: Role, blocks: Vec<Block>) -> PromptMessage {
        PromptMessage {
            role,
            blocks,
            charged: 0,
            block_tokens: Vec::new(),
        }
    }

    fn call(id: &str, name: &str, arguments: &str) -> Block {
        Block::ToolUse {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    fn result(id: &str, text: &str) -> Block {
        Block::ToolResult {
            call_id: id.into(),
            name: String::new(),
            text: text.into(),
        }
    }

    /// The first exchange shown as a header, the second in full, the input.
    #[test]
    fn the_assembled_prompt_keeps_system_messages_reasoning_and_custom_calls() {
        let messages = [
            prompt_message(
                Role::System,
                vec![Block::Text(
                    "You are Codex.\n\n<permissions instructions>".into(),
                )],
            ),
            prompt_message(
                Role::User,
                vec![Block::Text(
                    "## Earlier exchanges\nx1 create hello.txt containing hi\n".into(),
                )],
            ),
            prompt_message(Role::User, vec![Block::Text("now run it".into())]),
            prompt_message(
                Role::Assistant,
                vec![call(
                    "call_2",
                    "exec_command",
                    "{\"cmd\":\"cat hello.txt\"}",
                )],
            ),
            prompt_message(Role::Tool, vec![result("call_2", "hi")]),
            prompt_message(
                Role::Assistant,
                // Free text shown in full: on one line.
                vec![call(
                    "call_3",
                    "apply_patch",
                    "*** Begin Patch *** Delete File: hello.txt *** End Patch",
                )],
            ),
            prompt_message(Role::Tool, vec![result("call_3", "Deleted.")]),
            prompt_message(
                Role::User,
                vec![Block::Text("now say thanks\n[input_image]".into())],
            ),
        ];
        let tools = json!(ctxproxy_core::context_tool::definitions());
        let prompt = ctxproxy_service::format::prompt_fields(&messages, &tools, Format::Responses);
        let body = forwarded::<Responses>(&codex_request(), prompt, "s-abc");
        insta::assert_snapshot!(pretty(&body));
        // Without a cache key of the client's, the session's.
        let mut request = codex_request();
        request.as_object_mut().unwrap().remove("prompt_cache_key");
        let prompt = ctxproxy_service::format::prompt_fields(&messages, &tools, Format::Responses);
        assert_eq!(
            forwarded::<Responses>(&request, prompt, "s-abc")["prompt_cache_key"],
            "ctxproxy-s-abc"
        );
    }

    /// The whole shape forwards the client's items as sent: no reasoning
    /// item twice.
    #[test]
    fn the_whole_shape_forwards_the_items_as_sent() {
        let whole = |request: &Value| {
            let read = parse::<Responses>(request).unwrap();
            let prompt = FormattedPrompt {
                messages: read.history.sent_messages::<Responses>().unwrap(),
                tools: Value::Null,
                system: None,
                text: None,
            };
            Responses::upstream_body(read.client_body(), prompt, "s-abc")
        };
        let body = whole(&codex_request());
        assert_eq!(body["input"], codex_request()["input"]);
        assert_eq!(body["tools"], codex_request()["tools"]);
        // With `instructions` the developer messages are history: sent once, where they stand.
        let mut request = codex_request();
        request["instructions"] = json!("Be brief.");
        assert_eq!(whole(&request)["input"], codex_request()["input"]);
    }

    fn response(id: &str, output: Value, input_tokens: u64) -> Value {
        json!({"id": id, "object": "response", "status": "completed", "model": "gpt-5.5", "output": output,
               "usage": {"input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": 0},
                         "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 4}, "total_tokens": input_tokens + 10}})
    }

    #[test]
    fn whole_replies_splice_over_context_rounds() {
        let round1 = response(
            "resp_1",
            json!([reasoning("rs_a"),
                   {"type": "function_call", "id": "fc_a", "call_id": "call_ctx", "name": "context_retrieve", "arguments": "{\"ids\":[\"x1\"]}", "status": "completed"}]),
            100,
        );
        let turn = Responses::assistant_turn(&round1);
        let TurnCalls {
            context: calls,
            client,
        } = Responses::calls(&turn);
        assert_eq!((calls.len(), client), (1, ClientCalls::None));
        let mut body = json!({"input": []});
        Responses::continue_with(
            &mut body,
            &turn,
            &[(calls[0].clone(), "## x1 (full)\nhello".into())],
        );
        let round2 = response(
            "resp_2",
            json!([{"type": "message", "id": "msg_b", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": "Now running.", "annotations": []}]},
                   {"type": "function_call", "id": "fc_b", "call_id": "call_run", "name": "exec_command", "arguments": "{}", "status": "completed"}]),
            130,
        );
        assert_eq!(
            Responses::calls(&Responses::assistant_turn(&round2)).client,
            ClientCalls::Some
        );
        let spliced = Responses::splice(&[round1, round2]);
        insta::assert_snapshot!(pretty(&json!({"continuation": body, "client": spliced})));
        let recorded = Responses::turn_messages(&Responses::assistant_turn(&spliced));
        assert_eq!(
            recorded
                .iter()
                .map(|m| (m.content.as_str(), m.tool_calls.len()))
                .collect::<Vec<_>>(),
            [("Now running.", 1)],
            "the text and its call, one message, as Chat Completions sends them"
        );
    }

    fn event(data: Value) -> sse::Event {
        sse::Event {
            event: data["type"].as_str().unwrap().to_string(),
            data: data.to_string(),
        }
    }

    fn item_events(index: u64, item: Value, deltas: &[(&str, Value)]) -> Vec<Value> {
        let mut added = item.clone();
        added["status"] = json!("in_progress");
        let mut out = vec![
            json!({"type": "response.output_item.added", "output_index": index, "item": added}),
        ];
        for (kind, delta) in deltas {
            let mut e = delta.clone();
            e["type"] = json!(kind);
            e["output_index"] = json!(index);
            out.push(e);
        }
        out.push(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
        out
    }

    fn round_events(id: &str, items: Vec<Vec<Value>>, input_tokens: u64) -> Vec<Value> {
        let head = json!({"id": id, "object": "response", "status": "in_progress", "output": []});
        let mut out = vec![
            json!({"type": "response.created", "response": head}),
            json!({"type": "response.in_progress", "response": head}),
        ];
        let done: Vec<Value> = items
            .iter()
            .map(|events| events.last().unwrap()["item"].clone())
            .collect();
        out.extend(items.into_iter().flatten());
        out.push(json!({"type": "response.completed", "response": response(id, json!(done), input_tokens)}));
        for (n, e) in out.iter_mut().enumerate() {
            e["sequence_number"] = json!(n);
        }
        out
    }

    /// Feeds rounds of events through the splicer: what the client reads,
    /// and the turn recorded.
    fn splice_stream(rounds: &[Vec<Value>]) -> (String, Value) {
        let mut s = Responses::splicer(&json!({"stream": true}));
        let mut out = Vec::new();
        for (i, round) in rounds.iter().enumerate() {
            for e in round {
                out.extend(s.event(event(e.clone())));
            }
            assert!(s.round_ended());
            s.end_round();
            if i + 1 < rounds.len() {
                out.extend(s.keep_alive());
            }
        }
        out.extend(s.finish());
        (String::from_utf8(out).unwrap(), s.client_turn())
    }

    #[test]
    fn streams_splice_over_context_rounds() {
        let context_call = json!({"type": "function_call", "id": "fc_a", "call_id": "call_ctx", "name": "context_search",
                                  "arguments": "{\"query\":\"tests\"}", "status": "completed"});
        let round1 = round_events(
            "resp_1",
            vec![
                item_events(0, reasoning("rs_a"), &[]),
                item_events(
                    1,
                    context_call,
                    &[(
                        "response.function_call_arguments.delta",
                        json!({"item_id": "fc_a", "delta": "{\"query\":\"tests\"}"}),
                    )],
                ),
            ],
            50,
        );
        let text = json!({"type": "message", "id": "msg_b", "role": "assistant", "status": "completed",
                          "content": [{"type": "output_text", "text": "Found it.", "annotations": []}]});
        let patch = json!({"type": "custom_tool_call", "id": "ctc_b", "call_id": "call_patch", "name": "apply_patch",
                           "input": "*** Begin Patch\n*** End Patch\n", "status": "completed"});
        let round2 = round_events(
            "resp_2",
            vec![
                item_events(0, reasoning("rs_b"), &[]),
                item_events(
                    1,
                    text,
                    &[(
                        "response.output_text.delta",
                        json!({"item_id": "msg_b", "content_index": 0, "delta": "Found it."}),
                    )],
                ),
                item_events(
                    2,
                    patch,
                    &[(
                        "response.custom_tool_call_input.delta",
                        json!({"item_id": "ctc_b", "delta": "*** Begin Patch\n*** End Patch\n"}),
                    )],
                ),
            ],
            80,
        );
        let (text, turn) = splice_stream(&[round1, round2]);
        insta::assert_snapshot!(format!("{text}\nrecorded: {}", pretty(&turn)));
        // The recorded turn reads back as the client's next request lists it.
        let mut input = vec![message("user", "go")];
        input.extend(turn.as_array().unwrap().iter().cloned());
        let parsed = parse::<Responses>(&json!({"input": input})).unwrap();
        assert_eq!(
            Responses::turn_messages(&turn),
            parsed.history.messages()[1..]
        );
    }

    /// The upstream's error event ends the stream as it came; ours is the
    /// API's `error` event, its fields flat.
    #[test]
    fn errors_in_a_stream_are_the_apis_error_events() {
        let mut s = Responses::splicer(&json!({}));
        let upstream = json!({"type": "error", "code": "server_error", "message": "Overloaded", "param": null});
        let out = String::from_utf8(s.event(event(upstream))).unwrap();
        assert!(out.starts_with("event: error\n") && out.contains("Overloaded"));
        assert!(s.failed() && !s.round_ended());
        let ours = Responses::error_body(ErrorKind::Upstream, "the upstream broke off", None);
        let text = String::from_utf8(s.error_event(&ours)).unwrap();
        let data: Value =
            serde_json::from_str(text.lines().nth(1).unwrap().strip_prefix("data: ").unwrap())
                .unwrap();
        assert_eq!(text.lines().next(), Some("event: error"));
        assert_eq!(
            (&data["type"], &data["code"], &data["message"]),
            (
                &json!("error"),
                &json!("upstream_unreachable"),
                &json!("the upstream broke off")
            )
        );
    }

    /// A whole reply to a streamed request reaches the client as a stream.
    #[test]
    fn a_whole_reply_streams_as_its_events() {
        let reply = response(
            "resp_w",
            json!([{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi."}]}]),
            10,
        );
        let mut s = Responses::splicer(&json!({}));
        let mut out = Vec::new();
        for e in Responses::stream_events(&reply) {
            out.extend(s.event(e));
        }
        assert!(s.round_ended() && !s.failed());
        s.end_round();
        out.extend(s.finish());
        let text = String::from_utf8(out).unwrap();
        let last = text.trim_end().lines().last().unwrap();
        let completed: Value = serde_json::from_str(last.strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(completed["response"], reply);
        assert_eq!(s.client_turn(), reply["output"]);
    }
}

//! OpenAI Chat Completions: requests to ctxproxy messages, the assembled
//! prompt back into a request, replies and stream chunks spliced over the
//! internal context-tool rounds.

use ctxproxy_core::message::ToolCall;
use std::collections::HashMap;

use serde_json::{json, Value};

use super::api::{
    function_tool, is_context_tool, put_summed_usage, put_tools, Api, BadRequest, ClientBody,
    ErrorKind,
};
use super::sse;
use ctxproxy_model_apis::openai::content_text;
pub use ctxproxy_model_apis::openai::OpenAi;
use ctxproxy_service::api::FormattedPrompt;
use ctxproxy_service::format::Format;

mod stream;

pub use stream::ChatChunkSplicer;
use stream::DONE;

/// Roles that state the system prompt when they lead the history.
fn is_system_role(role: &str) -> bool {
    role == "system" || role == "developer"
}

/// A user message whose parts carry more than text (images, audio, files).
fn has_media(m: &Value) -> bool {
    m["role"] == "user"
        && m["content"].as_array().is_some_and(|parts| {
            !parts
                .iter()
                .all(|p| matches!(p["type"].as_str(), Some("text" | "input_text")))
        })
}

/// The client's user messages whose parts carry more than text, by the
/// text ctxproxy keeps of them (`[image_url]` in their place): where the
/// assembled prompt shows that text, the model gets the original parts
/// back, verbatim.
fn media_by_text(kept: &[(usize, Value)]) -> HashMap<String, Value> {
    let mut out = HashMap::new();
    for (i, m) in kept.iter().filter(|(_, m)| has_media(m)) {
        if let Ok(text) = content_text(&m["content"], &format!("messages[{i}].content")) {
            out.insert(text.trim().to_string(), m["content"].clone());
        }
    }
    out
}

/// The kept messages that lead the client's history and state the system
/// prompt: forwarded as they are.
fn leading_system(kept: &[(usize, Value)]) -> impl Iterator<Item = &Value> {
    kept.iter()
        .enumerate()
        .take_while(|(at, (i, m))| at == i && m["role"].as_str().is_some_and(is_system_role))
        .map(|(_, (_, m))| m)
}

impl Api for OpenAi {
    const FORMAT: Format = Format::OpenAi;
    const HISTORY: &'static str = "messages";
    const SYSTEM: Option<&'static str> = None;

    fn is_tool_output(m: &Value) -> bool {
        m["role"] == "tool"
    }

    fn function_tools(tool: &Value) -> Vec<Value> {
        let f = &tool["function"];
        match tool["type"] == "function" {
            true => vec![function_tool(
                &f["name"],
                &f["description"],
                &f["parameters"],
            )],
            false => Vec::new(),
        }
    }

    fn envelope_system(_body: &Value) -> Result<Option<String>, BadRequest> {
        Ok(None)
    }

    fn keeps(m: &Value) -> bool {
        m["role"].as_str().is_some_and(is_system_role) || has_media(m)
    }

    fn upstream_body(client: ClientBody, prompt: FormattedPrompt, session: &str) -> Value {
        let mut body = client.envelope.clone();
        let mut messages: Vec<Value> = leading_system(client.kept).cloned().collect();
        let media = media_by_text(client.kept);
        messages.extend(
            prompt
                .messages
                .into_iter()
                .filter(|m| m["role"] != "system")
                .map(|m| {
                    let original = m["content"]
                        .as_str()
                        .filter(|_| m["role"] == "user")
                        .and_then(|t| media.get(t.trim()));
                    match original {
                        Some(parts) => json!({"role": "user", "content": parts}),
                        None => m,
                    }
                }),
        );
        body["messages"] = Value::Array(messages);
        put_tools(&mut body, client.envelope, prompt.tools);
        if body.get("prompt_cache_key").is_none_or(Value::is_null) {
            body["prompt_cache_key"] = json!(format!("ctxproxy-{session}"));
        }
        if body["stream"] == true {
            // Usage is summed over the internal rounds: ask for it always;
            // the client gets the usage chunk only if it asked.
            body["stream_options"]["include_usage"] = json!(true);
        }
        body
    }

    fn error_body(kind: ErrorKind, message: &str, param: Option<&str>) -> Value {
        let (kind, code) = match kind {
            ErrorKind::InvalidRequest => ("invalid_request_error", Value::Null),
            ErrorKind::Unauthorized => ("invalid_request_error", json!("invalid_ctxproxy_token")),
            ErrorKind::Upstream => ("upstream_error", json!("upstream_unreachable")),
            ErrorKind::Internal => ("server_error", json!("ctxproxy_store")),
        };
        json!({"error": {"message": message, "type": kind, "param": param, "code": code}})
    }

    fn assistant_turn(reply: &Value) -> Value {
        let mut turn = reply["choices"][0]["message"].clone();
        if !turn.is_object() {
            turn = json!({"role": "assistant", "content": null});
        }
        turn
    }

    fn continue_with(body: &mut Value, turn: &Value, answers: &[(ToolCall, String)]) {
        let messages = body["messages"]
            .as_array_mut()
            .expect("a forwarded body has messages");
        messages.push(turn.clone());
        for (call, text) in answers {
            messages.push(json!({"role": "tool", "tool_call_id": call.id, "content": text}));
        }
    }

    fn splice(rounds: &[Value]) -> Value {
        let mut out = rounds.last().cloned().unwrap_or(Value::Null);
        let content: String = rounds
            .iter()
            .filter_map(|r| r["choices"][0]["message"]["content"].as_str())
            .collect();
        put_summed_usage::<Self>(&mut out, rounds);
        if let Some(choice) = out["choices"].get_mut(0) {
            let message = &mut choice["message"];
            if !content.is_empty() {
                message["content"] = json!(content);
            }
            if without_context_calls(message) && choice["finish_reason"] == "tool_calls" {
                choice["finish_reason"] = json!("stop");
            }
        }
        out
    }

    fn stream_events(reply: &Value) -> Vec<sse::Event> {
        let choice = &reply["choices"][0];
        let message = &choice["message"];
        let mut delta = json!({"role": "assistant"});
        for key in ["content", "refusal"] {
            if let Some(v) = message.get(key).filter(|v| !v.is_null()) {
                delta[key] = v.clone();
            }
        }
        if let Some(calls) = message["tool_calls"].as_array() {
            delta["tool_calls"] = calls
                .iter()
                .enumerate()
                .map(|(index, call)| {
                    let mut call = call.clone();
                    call["index"] = json!(index);
                    call
                })
                .collect();
        }
        let chunk = |choices: Value| {
            let mut chunk = json!({"object": "chat.completion.chunk", "choices": choices});
            for key in [
                "id",
                "created",
                "model",
                "system_fingerprint",
                "service_tier",
            ] {
                if let Some(v) = reply.get(key) {
                    chunk[key] = v.clone();
                }
            }
            chunk
        };
        let mut chunks = vec![
            chunk(json!([{"index": 0, "delta": delta, "finish_reason": null}])),
            chunk(json!([{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}])),
        ];
        if let Some(usage) = reply.get("usage").filter(|u| !u.is_null()) {
            let mut last = chunk(json!([]));
            last["usage"] = usage.clone();
            chunks.push(last);
        }
        chunks
            .into_iter()
            .map(|c| c.to_string())
            .chain([DONE.to_string()])
            .map(|data| sse::Event {
                event: String::new(),
                data,
            })
            .collect()
    }

    type Splicer = ChatChunkSplicer;
    fn splicer(client: &Value) -> ChatChunkSplicer {
        ChatChunkSplicer::new(client["stream_options"]["include_usage"] == true)
    }
}

/// Removes context-tool calls left in a final message (rounds exhausted, or
/// mixed with the client's own); true when no call is left.
fn without_context_calls(message: &mut Value) -> bool {
    let Some(calls) = message.get_mut("tool_calls").and_then(Value::as_array_mut) else {
        return false;
    };
    let before = calls.len();
    calls.retain(|c| !c["function"]["name"].as_str().is_some_and(is_context_tool));
    if calls.is_empty() && before > 0 {
        message
            .as_object_mut()
            .expect("message")
            .remove("tool_calls");
        true
    } else {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{ClientCalls, Splicer, TurnCalls};
    use serde_json::json;

    use crate::history::test_support::{forwarded, parse, pretty, request_as_text};

    fn client_request() -> Value {
        json!({
            "model": "gpt-4.1",
            "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": 0.2,
            "tool_choice": "auto",
            "tools": [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}],
            "messages": [
                {"role": "system", "content": "You are terse."},
                {"role": "developer", "content": [{"type": "text", "text": "Prefer Rust."}]},
                {"role": "user", "content": [
                    {"type": "text", "text": "What does this show?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
                ]},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"a.rs\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": "fn main() {}"},
                {"role": "assistant", "content": "It is an empty program."},
                {"role": "user", "content": "Thanks"}
            ]
        })
    }

    #[test]
    fn requests_become_ctxproxy_messages() {
        let parsed = parse::<OpenAi>(&client_request()).unwrap();
        insta::assert_snapshot!(request_as_text(&parsed));
    }

    #[test]
    fn malformed_requests_name_the_field() {
        let cases = [
            json!([]),
            json!({"messages": "hi"}),
            json!({"messages": []}),
            json!({"messages": [{"content": "hi"}]}),
            json!({"messages": [{"role": "robot", "content": "hi"}]}),
            json!({"messages": [{"role": "user", "content": 7}]}),
            json!({"messages": [{"role": "user", "content": [{"text": "x"}]}]}),
            json!({"messages": [{"role": "tool", "content": "x"}]}),
            json!({"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {}}]}]}),
            json!({"stream": "yes", "messages": [{"role": "user", "content": "hi"}]}),
        ];
        let errors: Vec<String> = cases
            .iter()
            .map(|c| {
                let e = parse::<OpenAi>(c).unwrap_err();
                format!("{} | {}", e.param, e.message)
            })
            .collect();
        insta::assert_snapshot!(errors.join("\n"));
    }

    #[test]
    fn the_assembled_prompt_replaces_the_history_only() {
        let prompt: FormattedPrompt = serde_json::from_value(json!({
            "promptId": "p2",
            "messages": [
                {"role": "system", "content": "You are terse.\n\nPrefer Rust."},
                {"role": "user", "content": "## Earlier exchanges\nx1 asked about an image\n"},
                {"role": "user", "content": "Thanks\n"},
            ],
            "tools": ctxproxy_core::context_tool::definitions(),
        }))
        .expect("a formatted prompt");
        let body = forwarded::<OpenAi>(&client_request(), prompt.clone(), "s-abc");
        insta::assert_snapshot!(pretty(&body));
        // A client's own cache key is kept.
        let mut own = client_request();
        own["prompt_cache_key"] = json!("mine");
        assert_eq!(
            forwarded::<OpenAi>(&own, prompt, "s-abc")["prompt_cache_key"],
            "mine"
        );
    }

    #[test]
    fn whole_replies_splice_over_context_rounds() {
        let round1 = json!({
            "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4.1",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "Checking. ",
                "tool_calls": [{"id": "call_ctx", "type": "function", "function": {"name": "context_retrieve", "arguments": "{\"ids\":[\"x1\"]}"}}]
            }}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110, "prompt_tokens_details": {"cached_tokens": 64}}
        });
        let turn = OpenAi::assistant_turn(&round1);
        let TurnCalls {
            context: calls,
            client,
        } = OpenAi::calls(&turn);
        assert_eq!(calls.len(), 1);
        assert_eq!(client, ClientCalls::None);
        let mut body = json!({"messages": []});
        OpenAi::continue_with(
            &mut body,
            &turn,
            &[(calls[0].clone(), "## x1 (full)\nhello".into())],
        );
        let round2 = json!({
            "id": "chatcmpl-2", "object": "chat.completion", "model": "gpt-4.1",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "Now reading.",
                "tool_calls": [{"id": "call_2", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]
            }}],
            "usage": {"prompt_tokens": 130, "completion_tokens": 5, "total_tokens": 135, "prompt_tokens_details": {"cached_tokens": 100}}
        });
        let spliced = OpenAi::splice(&[round1, round2]);
        insta::assert_snapshot!(pretty(&json!({"continuation": body, "client": spliced})));
    }

    /// Feeds rounds of chunks through the splicer: what the client reads,
    /// and the message recorded.
    fn splice_stream(client: &Value, rounds: &[Vec<Value>]) -> (String, Value) {
        let mut s = OpenAi::splicer(client);
        let mut out = Vec::new();
        for (i, round) in rounds.iter().enumerate() {
            for chunk in round {
                out.extend(s.event(sse::Event {
                    event: String::new(),
                    data: chunk.to_string(),
                }));
            }
            // Each round's own `[DONE]` is the upstream's; only ours reaches the client.
            assert!(s
                .event(sse::Event {
                    event: String::new(),
                    data: "[DONE]".into(),
                })
                .is_empty());
            s.end_round();
            if i + 1 < rounds.len() {
                out.extend(s.keep_alive());
            }
        }
        out.extend(s.finish());
        (String::from_utf8(out).unwrap(), s.client_turn())
    }

    fn chunk(id: &str, delta: Value, finish: Value) -> Value {
        json!({"id": id, "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    }

    #[test]
    fn streams_splice_over_context_rounds() {
        let round1 = vec![
            chunk(
                "c-1",
                json!({"role": "assistant", "content": ""}),
                Value::Null,
            ),
            chunk("c-1", json!({"content": "Let me check. "}), Value::Null),
            chunk(
                "c-1",
                json!({"tool_calls": [{"index": 0, "id": "call_ctx", "type": "function", "function": {"name": "context_search", "arguments": ""}}]}),
                Value::Null,
            ),
            chunk(
                "c-1",
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"query\":\"tests\"}"}}]}),
                Value::Null,
            ),
            chunk("c-1", json!({}), json!("tool_calls")),
            json!({"id": "c-1", "object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57}}),
        ];
        let round2 = vec![
            chunk(
                "c-2",
                json!({"role": "assistant", "content": "Found it. "}),
                Value::Null,
            ),
            chunk(
                "c-2",
                json!({"tool_calls": [{"index": 0, "id": "call_run", "type": "function", "function": {"name": "run", "arguments": "{\"cmd\":"}}]}),
                Value::Null,
            ),
            chunk(
                "c-2",
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"pytest\"}"}}]}),
                Value::Null,
            ),
            chunk("c-2", json!({}), json!("tool_calls")),
            json!({"id": "c-2", "object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 80, "completion_tokens": 9, "total_tokens": 89}}),
        ];
        let client = json!({"stream": true, "stream_options": {"include_usage": true}});
        let (text, turn) = splice_stream(&client, &[round1.clone(), round2.clone()]);
        insta::assert_snapshot!(format!("{text}\nrecorded: {}", pretty(&turn)));
        // The recorded turn reads back as the client's next request will carry it.
        let next = json!({"messages": [{"role": "user", "content": "go"}, turn]});
        let parsed = parse::<OpenAi>(&next).unwrap();
        assert_eq!(
            OpenAi::turn_messages(&turn).last(),
            parsed.history.messages().last()
        );
        // Without include_usage the client gets no usage chunk.
        let (text, _) = splice_stream(&json!({"stream": true}), &[round1, round2]);
        assert!(!text.contains("\"usage\""));
    }
}

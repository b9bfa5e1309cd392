//! Anthropic Messages: requests to ctxproxy messages, the assembled prompt
//! back into a request (the client's system blocks, thinking blocks with
//! their signatures, cache breakpoints), replies and stream events spliced
//! over the internal context-tool rounds.

use std::collections::HashMap;

use ctxproxy_core::message::ToolCall;
use serde_json::{json, Value};

use super::api::{
    function_tool, is_context_tool, put_summed_usage, put_tools, Api, BadRequest, ClientBody,
    ErrorKind,
};
use super::sse;
pub use ctxproxy_model_apis::anthropic::Anthropic;
use ctxproxy_model_apis::anthropic::{blocks_text, to_messages};
use ctxproxy_service::api::FormattedPrompt;
use ctxproxy_service::format::Format;

mod stream;

pub use stream::EventSplicer;

/// The API's limit on `cache_control` breakpoints in one request.
const MAX_BREAKPOINTS: usize = 4;

fn is_thinking(block: &Value) -> bool {
    matches!(
        block["type"].as_str(),
        Some("thinking" | "redacted_thinking")
    )
}

/// An assistant message with thinking blocks.
fn has_thinking(m: &Value) -> bool {
    m["role"] == "assistant"
        && m["content"]
            .as_array()
            .is_some_and(|blocks| blocks.iter().any(is_thinking))
}

/// A user message that carries more than text (images, documents) and no
/// tool results.
fn has_media(m: &Value) -> bool {
    let Some(blocks) = m["content"].as_array().filter(|_| m["role"] == "user") else {
        return false;
    };
    let kinds = || {
        blocks
            .iter()
            .map(|b| b["type"].as_str().unwrap_or_default())
    };
    !(kinds().any(|k| k == "tool_result") || kinds().all(|k| k == "text"))
}

/// The thinking blocks of the client's assistant messages, by the first
/// tool call they precede: the API wants them back, signatures intact, in
/// the assistant turn of a tool loop.
fn thinking_by_call(kept: &[(usize, Value)]) -> HashMap<String, Vec<Value>> {
    let mut out = HashMap::new();
    for (_, m) in kept.iter().filter(|(_, m)| has_thinking(m)) {
        let blocks = m["content"].as_array().into_iter().flatten();
        let thinking: Vec<Value> = blocks.clone().filter(|b| is_thinking(b)).cloned().collect();
        let first_call = blocks
            .clone()
            .find(|b| b["type"] == "tool_use")
            .and_then(|b| b["id"].as_str());
        if let Some(id) = first_call {
            out.insert(id.to_string(), thinking);
        }
    }
    out
}

/// The client's user messages that carry more than text, by the text
/// ctxproxy keeps of them (`[image]` in its place): where the assembled
/// prompt shows that text, the model gets the original blocks back,
/// verbatim.
fn media_by_text(kept: &[(usize, Value)]) -> HashMap<String, Vec<Value>> {
    let mut out = HashMap::new();
    for (i, m) in kept.iter().filter(|(_, m)| has_media(m)) {
        if let (Ok([kept]), Some(blocks)) = (
            to_messages(m, &format!("messages[{i}]")).as_deref(),
            m["content"].as_array(),
        ) {
            out.insert(kept.content.trim().to_string(), blocks.clone());
        }
    }
    out
}

fn count_breakpoints(v: &Value) -> usize {
    match v {
        Value::Object(map) => {
            usize::from(map.contains_key("cache_control"))
                + map.values().map(count_breakpoints).sum::<usize>()
        }
        Value::Array(items) => items.iter().map(count_breakpoints).sum(),
        _ => 0,
    }
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// Breakpoints at the end of the stable part: the system prompt, the tools
/// (never on one marked `defer_loading`), and the last message before the
/// newest input. A client that placed its own keeps them (its system and
/// tools untouched); the assembled messages get one if the limit allows.
fn place_breakpoints(body: &mut Value, client_placed: bool) {
    let mut placed = count_breakpoints(&body["system"]) + count_breakpoints(&body["tools"]);
    if !client_placed {
        // `get_mut`, not indexing: indexing a missing key inserts `null`,
        // which the API refuses for `system` and `tools`.
        match body.get_mut("system") {
            Some(system) if system.as_str().is_some_and(|s| !s.is_empty()) => {
                let text = system.as_str().unwrap_or_default().to_string();
                *system = json!([{"type": "text", "text": text, "cache_control": ephemeral()}]);
                placed += 1;
            }
            Some(system) => {
                if let Some(last) = system.as_array_mut().and_then(|b| b.last_mut()) {
                    last["cache_control"] = ephemeral();
                    placed += 1;
                }
            }
            None => {}
        }
        if let Some(tool) = body
            .get_mut("tools")
            .and_then(Value::as_array_mut)
            .and_then(|t| t.iter_mut().rev().find(|t| t["defer_loading"] != true))
        {
            tool["cache_control"] = ephemeral();
            placed += 1;
        }
    }
    if placed >= MAX_BREAKPOINTS {
        return;
    }
    let Some(messages) = body["messages"].as_array_mut() else {
        return;
    };
    let len = messages.len();
    if len >= 2 {
        if let Some(block) = messages[len - 2]["content"]
            .as_array_mut()
            .and_then(|b| b.iter_mut().rev().find(|b| !is_thinking(b)))
        {
            block["cache_control"] = ephemeral();
        }
    }
}

impl Api for Anthropic {
    const FORMAT: Format = Format::Anthropic;
    const HISTORY: &'static str = "messages";
    const SYSTEM: Option<&'static str> = Some("system");

    /// Tool results are blocks of a user message, told apart block by
    /// block as it is masked.
    fn is_tool_output(_m: &Value) -> bool {
        false
    }

    /// A client tool has an `input_schema`; a server tool (web search, code
    /// execution) has a `type` and none.
    fn function_tools(tool: &Value) -> Vec<Value> {
        match tool.get("input_schema") {
            Some(schema) => vec![function_tool(&tool["name"], &tool["description"], schema)],
            None => Vec::new(),
        }
    }

    fn envelope_system(body: &Value) -> Result<Option<String>, BadRequest> {
        blocks_text(body.get("system").unwrap_or(&Value::Null), "system").map(Some)
    }

    fn keeps(m: &Value) -> bool {
        has_thinking(m) || has_media(m) || count_breakpoints(m) > 0
    }

    fn upstream_body(client: ClientBody, prompt: FormattedPrompt, _session: &str) -> Value {
        let mut body = client.envelope.clone();
        let thinking = thinking_by_call(client.kept);
        let media = media_by_text(client.kept);
        let mut messages = prompt.messages;
        for m in &mut messages {
            if m["role"] == "user" {
                if let Some(blocks) = m["content"].as_array_mut().filter(|_| !media.is_empty()) {
                    *blocks = std::mem::take(blocks)
                        .into_iter()
                        .flat_map(
                            |b| match b["text"].as_str().and_then(|t| media.get(t.trim())) {
                                Some(original) => original.clone(),
                                None => vec![b],
                            },
                        )
                        .collect();
                }
                continue;
            }
            if m["role"] != "assistant" {
                continue;
            }
            // A message as the client sent it (the whole shape) has its own.
            let Some(blocks) = m["content"]
                .as_array_mut()
                .filter(|blocks| !blocks.iter().any(is_thinking))
            else {
                continue;
            };
            let kept = blocks
                .iter()
                .find(|b| b["type"] == "tool_use")
                .and_then(|b| b["id"].as_str())
                .and_then(|id| thinking.get(id));
            if let Some(kept) = kept {
                blocks.splice(0..0, kept.iter().cloned());
            }
        }
        body["messages"] = Value::Array(messages);
        put_tools(&mut body, client.envelope, prompt.tools);
        let client_placed = count_breakpoints(client.envelope) > 0
            || client.kept.iter().any(|(_, m)| count_breakpoints(m) > 0);
        place_breakpoints(&mut body, client_placed);
        body
    }

    fn error_body(kind: ErrorKind, message: &str, _param: Option<&str>) -> Value {
        let kind = match kind {
            ErrorKind::InvalidRequest => "invalid_request_error",
            ErrorKind::Unauthorized => "authentication_error",
            ErrorKind::Upstream | ErrorKind::Internal => "api_error",
        };
        json!({"type": "error", "error": {"type": kind, "message": message}})
    }

    fn assistant_turn(reply: &Value) -> Value {
        json!({"role": "assistant", "content": reply["content"].as_array().cloned().unwrap_or_default()})
    }

    fn continue_with(body: &mut Value, turn: &Value, answers: &[(ToolCall, String)]) {
        let messages = body["messages"]
            .as_array_mut()
            .expect("a forwarded body has messages");
        messages.push(turn.clone());
        messages.push(
            json!({"role": "user", "content": answers.iter().map(|(call, text)| json!({
            "type": "tool_result", "tool_use_id": call.id, "content": text,
        })).collect::<Vec<_>>()}),
        );
    }

    fn splice(rounds: &[Value]) -> Value {
        let mut out = rounds.last().cloned().unwrap_or(Value::Null);
        let content: Vec<Value> = rounds
            .iter()
            .flat_map(|r| r["content"].as_array().cloned().unwrap_or_default())
            .filter(|b| {
                !(b["type"] == "tool_use" && b["name"].as_str().is_some_and(is_context_tool))
            })
            .collect();
        let own_calls = content.iter().any(|b| b["type"] == "tool_use");
        out["content"] = Value::Array(content);
        put_summed_usage::<Self>(&mut out, rounds);
        if out["stop_reason"] == "tool_use" && !own_calls {
            out["stop_reason"] = json!("end_turn");
        }
        out
    }

    fn stream_events(reply: &Value) -> Vec<sse::Event> {
        let event = |name: &str, data: Value| sse::Event {
            event: name.to_string(),
            data: data.to_string(),
        };
        let mut head = reply.clone();
        head["content"] = json!([]);
        head["stop_reason"] = Value::Null;
        head["stop_sequence"] = Value::Null;
        let mut events = vec![event(
            "message_start",
            json!({"type": "message_start", "message": head}),
        )];
        for (index, block) in reply["content"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let (start, delta) = match block["type"].as_str().unwrap_or_default() {
                "text" => (
                    json!({"type": "text", "text": ""}),
                    Some(json!({"type": "text_delta", "text": block["text"]})),
                ),
                "thinking" => (
                    json!({"type": "thinking", "thinking": "", "signature": ""}),
                    Some(json!({"type": "thinking_delta", "thinking": block["thinking"]})),
                ),
                "tool_use" => {
                    let mut start = block.clone();
                    start["input"] = json!({});
                    let input = json!({"type": "input_json_delta", "partial_json": block["input"].to_string()});
                    (start, Some(input))
                }
                // Blocks the API streams whole (redacted thinking, server tool results).
                _ => (block.clone(), None),
            };
            events.push(event(
                "content_block_start",
                json!({"type": "content_block_start", "index": index, "content_block": start}),
            ));
            let signature = block
                .get("signature")
                .filter(|_| block["type"] == "thinking")
                .map(|s| json!({"type": "signature_delta", "signature": s}));
            for delta in delta.into_iter().chain(signature) {
                events.push(event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index, "delta": delta}),
                ));
            }
            events.push(event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ));
        }
        events.push(event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": reply["stop_reason"], "stop_sequence": reply["stop_sequence"]}, "usage": reply["usage"]}),
        ));
        events.push(event("message_stop", json!({"type": "message_stop"})));
        events
    }

    type Splicer = EventSplicer;
    fn splicer(_client: &Value) -> EventSplicer {
        EventSplicer::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{ClientCalls, Splicer};
    use ctxproxy_core::message::Role;
    use serde_json::json;

    use crate::history::test_support::{forwarded, parse, pretty, request_as_text};

    fn thinking() -> Value {
        json!({"type": "thinking", "thinking": "The file first.", "signature": "EqQBCkYIARgCKkA+sig/=="})
    }

    fn client_request() -> Value {
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 1024,
            "metadata": {"user_id": "u"},
            "thinking": {"type": "enabled", "budget_tokens": 2000},
            "system": [
                {"type": "text", "text": "You are Claude Code."},
                {"type": "text", "text": "Be brief."}
            ],
            "tools": [
                {"name": "Read", "description": "Reads a file", "input_schema": {"type": "object"}},
                {"name": "WebFetch", "input_schema": {"type": "object"}, "defer_loading": true}
            ],
            "messages": [
                {"role": "user", "content": "Look at main.rs"},
                {"role": "assistant", "content": [
                    thinking(),
                    {"type": "text", "text": "Reading it."},
                    {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "main.rs"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
                        {"type": "text", "text": "fn main() {}"},
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
                    ]},
                    {"type": "text", "text": "<system-reminder>be careful</system-reminder>"}
                ]}
            ]
        })
    }

    #[test]
    fn requests_become_ctxproxy_messages() {
        let parsed = parse::<Anthropic>(&client_request()).unwrap();
        insta::assert_snapshot!(request_as_text(&parsed));
        let plain = json!({"system": "Plain.", "messages": [{"role": "user", "content": "hi"}]});
        assert_eq!(parse::<Anthropic>(&plain).unwrap().system, "Plain.");
    }

    #[test]
    fn a_system_message_inside_messages_is_read_as_the_users_text() {
        let notes = "# Environment\nPrimary working directory: /work/demo";
        let body = json!({"system": "Plain.", "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Say hello."}]},
            {"role": "system", "content": [{"type": "text", "text": notes}]},
        ]});
        let parsed = parse::<Anthropic>(&body).unwrap();
        assert_eq!(parsed.system, "Plain.");
        let texts: Vec<(Role, &str)> = parsed
            .history
            .messages()
            .iter()
            .map(|m| (m.role, m.content.as_str()))
            .collect();
        assert_eq!(texts, vec![(Role::User, "Say hello."), (Role::User, notes)]);
    }

    #[test]
    fn malformed_requests_name_the_field() {
        let cases = [
            json!("hi"),
            json!({"messages": {}}),
            json!({"system": 3, "messages": [{"role": "user", "content": "hi"}]}),
            json!({"messages": [{"role": "tool", "content": "hi"}]}),
            json!({"messages": [{"role": "system", "content": [{"text": "no type"}]}]}),
            json!({"messages": [{"role": "user", "content": [{"text": "no type"}]}]}),
            json!({"messages": [{"role": "user", "content": [{"type": "tool_result"}]}]}),
            json!({"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "t"}]}]}),
            json!({"messages": [{"role": "user", "content": [{"type": "text"}]}]}),
        ];
        let errors: Vec<String> = cases
            .iter()
            .map(|c| {
                let e = parse::<Anthropic>(c).unwrap_err();
                format!("{} | {}", e.param, e.message)
            })
            .collect();
        insta::assert_snapshot!(errors.join("\n"));
    }

    /// What `ctx/assemble` returns for the request above, in this format.
    fn prompt() -> FormattedPrompt {
        serde_json::from_value(json!({
            "promptId": "p3",
            "system": "You are Claude Code.\nBe brief.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Look at main.rs\n"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Reading it.\n"},
                    {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "main.rs"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "fn main() {}\n"},
                    {"type": "text", "text": "## Current context\n"}
                ]}
            ],
            "tools": [{"name": "context_retrieve", "input_schema": {"type": "object"}}, {"name": "context_search", "input_schema": {"type": "object"}}]
        }))
        .expect("a formatted prompt")
    }

    #[test]
    fn the_assembled_prompt_keeps_system_blocks_thinking_and_gets_breakpoints() {
        let body = forwarded::<Anthropic>(&client_request(), prompt(), "s-abc");
        insta::assert_snapshot!(pretty(&body));
        // The thinking block comes back byte for byte, before the call it led to.
        assert_eq!(body["messages"][1]["content"][0], thinking());
        assert!(count_breakpoints(&body) <= MAX_BREAKPOINTS);
    }

    #[test]
    fn breakpoints_add_no_system_or_tools_a_body_lacks() {
        let mut body = json!({"messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
            {"role": "user", "content": [{"type": "text", "text": "and?"}]}
        ]});
        place_breakpoints(&mut body, false);
        assert!(
            body.get("system").is_none() && body.get("tools").is_none(),
            "{body}"
        );
        assert_eq!(
            count_breakpoints(&body),
            1,
            "on the stable part of the messages"
        );
    }

    #[test]
    fn a_client_with_its_own_breakpoints_keeps_them() {
        let mut client = client_request();
        for i in 0..3 {
            client["tools"][0]["cache_control"] = json!({"type": "ephemeral"});
            client["system"][i % 2]["cache_control"] = json!({"type": "ephemeral", "ttl": "1h"});
        }
        let body = forwarded::<Anthropic>(&client, prompt(), "s-abc");
        assert_eq!(body["system"], client["system"]);
        assert!(body["tools"][2].get("cache_control").is_none());
        // Three of the client's, one on the stable part of the messages.
        assert_eq!(count_breakpoints(&body), 4);
        assert!(body["messages"][1]["content"][2]
            .get("cache_control")
            .is_some());
        // A string system prompt is marked as one block.
        let plain = json!({"system": "Plain.", "messages": [{"role": "user", "content": "hi"}]});
        let body = forwarded::<Anthropic>(&plain, prompt(), "s-abc");
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "Plain.", "cache_control": {"type": "ephemeral"}}])
        );
    }

    fn event(name: &str, data: Value) -> sse::Event {
        sse::Event {
            event: name.into(),
            data: data.to_string(),
        }
    }

    fn round(
        id: &str,
        blocks: &[(Value, Vec<Value>)],
        stop: &str,
        usage: Value,
    ) -> Vec<sse::Event> {
        let mut out = vec![event(
            "message_start",
            json!({"type": "message_start", "message": {"id": id, "type": "message", "role": "assistant", "content": [], "model": "claude", "usage": usage}}),
        )];
        out.push(event("ping", json!({"type": "ping"})));
        for (i, (start, deltas)) in blocks.iter().enumerate() {
            out.push(event(
                "content_block_start",
                json!({"type": "content_block_start", "index": i, "content_block": start}),
            ));
            for d in deltas {
                out.push(event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": i, "delta": d}),
                ));
            }
            out.push(event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": i}),
            ));
        }
        out.push(event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 12}}),
        ));
        out.push(event("message_stop", json!({"type": "message_stop"})));
        out
    }

    #[test]
    fn streams_splice_over_context_rounds() {
        let round1 = round(
            "msg_1",
            &[
                (
                    json!({"type": "thinking", "thinking": "", "signature": ""}),
                    vec![
                        json!({"type": "thinking_delta", "thinking": "Need x2."}),
                        json!({"type": "signature_delta", "signature": "sig1=="}),
                    ],
                ),
                (
                    json!({"type": "text", "text": ""}),
                    vec![json!({"type": "text_delta", "text": "Checking history. "})],
                ),
                (
                    json!({"type": "tool_use", "id": "toolu_ctx", "name": "context_retrieve", "input": {}}),
                    vec![
                        json!({"type": "input_json_delta", "partial_json": "{\"ids\": [\"x"}),
                        json!({"type": "input_json_delta", "partial_json": "2\"]}"}),
                    ],
                ),
            ],
            "tool_use",
            json!({"input_tokens": 900, "output_tokens": 1, "cache_read_input_tokens": 800}),
        );
        let round2 = round(
            "msg_2",
            &[
                (
                    json!({"type": "text", "text": ""}),
                    vec![json!({"type": "text_delta", "text": "It was pytest."})],
                ),
                (
                    json!({"type": "tool_use", "id": "toolu_bash", "name": "Bash", "input": {}}),
                    vec![
                        json!({"type": "input_json_delta", "partial_json": "{\"command\": \"pytest\"}"}),
                    ],
                ),
            ],
            "tool_use",
            json!({"input_tokens": 950, "output_tokens": 1, "cache_read_input_tokens": 900}),
        );
        let mut s = Anthropic::splicer(&json!({}));
        let mut out = Vec::new();
        for e in round1 {
            out.extend(s.event(e));
        }
        let turn1 = s.end_round();
        let calls = Anthropic::calls(&turn1);
        assert_eq!((calls.context.len(), calls.client), (1, ClientCalls::None));
        let calls = calls.context;
        assert_eq!(calls[0].arguments, "{\"ids\":[\"x2\"]}");
        out.extend(s.keep_alive());
        for e in round2 {
            out.extend(s.event(e));
        }
        s.end_round();
        out.extend(s.finish());
        let client_turn = s.client_turn();
        insta::assert_snapshot!(format!(
            "{}\ncontinuation turn: {}\nrecorded: {}",
            String::from_utf8(out).unwrap(),
            pretty(&turn1),
            pretty(&client_turn)
        ));
        let next = json!({"messages": [{"role": "user", "content": "go"}, client_turn]});
        let parsed = parse::<Anthropic>(&next).unwrap();
        assert_eq!(
            Anthropic::turn_messages(&client_turn).last(),
            parsed.history.messages().last()
        );
    }

    #[test]
    fn whole_replies_splice_over_context_rounds() {
        let round1 = json!({"id": "msg_1", "type": "message", "role": "assistant", "stop_reason": "tool_use",
            "content": [
                {"type": "text", "text": "Checking. "},
                {"type": "tool_use", "id": "toolu_ctx", "name": "context_search", "input": {"query": "pytest"}}
            ],
            "usage": {"input_tokens": 100, "output_tokens": 10}});
        let turn = Anthropic::assistant_turn(&round1);
        let calls = Anthropic::calls(&turn).context;
        let mut body = json!({"messages": []});
        Anthropic::continue_with(
            &mut body,
            &turn,
            &[(calls[0].clone(), "x2 [s-1] ran pytest".into())],
        );
        let round2 = json!({"id": "msg_2", "type": "message", "role": "assistant", "stop_reason": "end_turn",
            "content": [{"type": "text", "text": "You ran pytest in x2."}],
            "usage": {"input_tokens": 130, "output_tokens": 8}});
        let spliced = Anthropic::splice(&[round1, round2]);
        insta::assert_snapshot!(pretty(&json!({"continuation": body, "client": spliced})));
    }
}

//! OpenAI's completion chunks spliced over the context-tool rounds: the
//! client sees one completion stream, whatever rounds the proxy ran.

use serde_json::{json, Value};

use crate::api::{add_usage, is_context_tool, Splicer};
use crate::sse;

/// A tool call being streamed: where it goes and what it holds so far.
#[derive(Default, Clone)]
struct StreamedCall {
    id: String,
    name: String,
    arguments: String,
    /// The client's index; `None` for a context call, withheld.
    client_index: Option<u64>,
}

/// The `data:` of the event that ends a completion stream.
pub const DONE: &str = "[DONE]";

/// Splices the chunks of every round into one completion stream: the first
/// round's id and role, client tool-call indexes renumbered, context calls
/// withheld, one final chunk with the summed usage, one `[DONE]`.
#[derive(Default)]
pub struct ChatChunkSplicer {
    client_wants_usage: bool,
    /// The first chunk, as the template of the closing ones.
    first: Option<Value>,
    role_sent: bool,
    next_index: u64,
    /// This round's calls by upstream index.
    round_calls: Vec<(u64, StreamedCall)>,
    round_content: String,
    content: String,
    client_calls: Vec<StreamedCall>,
    finish_reason: Option<Value>,
    usage: Value,
    failed: bool,
    /// This round's stream sent `[DONE]`.
    round_done: bool,
}

impl ChatChunkSplicer {
    /// `client_wants_usage`: the client asked for a usage chunk
    /// (`stream_options.include_usage`).
    pub fn new(client_wants_usage: bool) -> ChatChunkSplicer {
        ChatChunkSplicer {
            client_wants_usage,
            ..ChatChunkSplicer::default()
        }
    }

    fn chunk_bytes(chunk: &Value) -> Vec<u8> {
        sse::Event {
            event: String::new(),
            data: chunk.to_string(),
        }
        .encode()
    }

    fn call_at(&mut self, index: u64) -> &mut StreamedCall {
        let at = match self.round_calls.iter().position(|(i, _)| *i == index) {
            Some(at) => at,
            None => {
                self.round_calls.push((index, StreamedCall::default()));
                self.round_calls.len() - 1
            }
        };
        &mut self.round_calls[at].1
    }
}

impl Splicer for ChatChunkSplicer {
    fn event(&mut self, event: sse::Event) -> Vec<u8> {
        if event.data == DONE {
            // Ours is sent once, by `finish`.
            self.round_done = true;
            return Vec::new();
        }
        let Ok(mut chunk) = serde_json::from_str::<Value>(&event.data) else {
            return Vec::new();
        };
        if chunk.get("error").is_some() {
            self.failed = true;
            return event.encode();
        }
        if self.first.is_none() {
            self.first = Some(chunk.clone());
        }
        let first = self.first.as_ref().expect("set above");
        chunk["id"] = first["id"].clone();
        if let Some(usage) = chunk.as_object_mut().and_then(|c| c.remove("usage")) {
            add_usage(&mut self.usage, &usage);
        }
        let Some(choice) = chunk["choices"].get_mut(0) else {
            return Vec::new();
        };
        if let Some(reason) = choice.get_mut("finish_reason").filter(|r| !r.is_null()) {
            self.finish_reason = Some(reason.take());
        }
        let delta = &mut choice["delta"];
        if let Some(d) = delta.as_object_mut() {
            if self.role_sent {
                d.remove("role");
            } else if d.contains_key("role") {
                self.role_sent = true;
            }
        }
        if let Some(text) = delta["content"].as_str() {
            self.round_content.push_str(text);
            self.content.push_str(text);
        }
        let mut forwarded = Vec::new();
        for mut call in delta["tool_calls"].as_array().cloned().unwrap_or_default() {
            let index = call["index"].as_u64().unwrap_or(0);
            let mut next_index = self.next_index;
            let streamed = self.call_at(index);
            if let Some(id) = call["id"].as_str() {
                streamed.id = id.to_string();
            }
            if let Some(name) = call["function"]["name"].as_str() {
                streamed.name.push_str(name);
                if streamed.client_index.is_none() && !is_context_tool(&streamed.name) {
                    streamed.client_index = Some(next_index);
                    next_index += 1;
                }
            }
            if let Some(args) = call["function"]["arguments"].as_str() {
                streamed.arguments.push_str(args);
            }
            if let Some(client_index) = streamed.client_index {
                call["index"] = json!(client_index);
                forwarded.push(call);
            }
            self.next_index = next_index;
        }
        if let Some(d) = delta.as_object_mut() {
            if forwarded.is_empty() {
                d.remove("tool_calls");
            } else {
                d.insert("tool_calls".into(), Value::Array(forwarded));
            }
        }
        let carries = delta.as_object().is_some_and(|d| {
            d.contains_key("role")
                || d.contains_key("tool_calls")
                || d.get("content")
                    .is_some_and(|c| c.as_str().is_some_and(|s| !s.is_empty()))
                || d.get("refusal").is_some_and(|r| !r.is_null())
        });
        if carries {
            Self::chunk_bytes(&chunk)
        } else {
            Vec::new()
        }
    }

    fn end_round(&mut self) -> Value {
        self.round_done = false;
        let calls: Vec<Value> = self
            .round_calls
            .iter()
            .map(|(_, c)| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
            .collect();
        let content = std::mem::take(&mut self.round_content);
        let mut turn = json!({"role": "assistant", "content": if content.is_empty() { Value::Null } else { json!(content) }});
        if !calls.is_empty() {
            turn["tool_calls"] = Value::Array(calls);
        }
        for (_, c) in std::mem::take(&mut self.round_calls) {
            if c.client_index.is_some() {
                self.client_calls.push(c);
            }
        }
        turn
    }

    fn finish(&mut self) -> Vec<u8> {
        let mut template = self
            .first
            .clone()
            .unwrap_or_else(|| json!({"object": "chat.completion.chunk"}));
        if let Some(t) = template.as_object_mut() {
            t.remove("usage");
        }
        let reason = match self.finish_reason.take() {
            Some(r) if r == "tool_calls" && self.client_calls.is_empty() => json!("stop"),
            Some(r) => r,
            None if self.client_calls.is_empty() => json!("stop"),
            None => json!("tool_calls"),
        };
        template["choices"] = json!([{"index": 0, "delta": {}, "finish_reason": reason}]);
        let mut out = Self::chunk_bytes(&template);
        if self.client_wants_usage {
            template["choices"] = json!([]);
            template["usage"] = self.usage.clone();
            out.extend(Self::chunk_bytes(&template));
        }
        out.extend(
            sse::Event {
                event: String::new(),
                data: DONE.into(),
            }
            .encode(),
        );
        out
    }

    fn client_turn(&self) -> Value {
        let mut turn = json!({"role": "assistant", "content": if self.content.is_empty() { Value::Null } else { json!(self.content) }});
        if !self.client_calls.is_empty() {
            turn["tool_calls"] = self
                .client_calls
                .iter()
                .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                .collect();
        }
        turn
    }

    fn keep_alive(&self) -> Vec<u8> {
        sse::comment("ctxproxy: answering a context tool")
    }

    fn failed(&self) -> bool {
        self.failed
    }

    fn round_ended(&self) -> bool {
        self.round_done
    }

    fn error_event(&self, body: &Value) -> Vec<u8> {
        Self::chunk_bytes(body)
    }
}

//! Anthropic's stream events spliced over the context-tool rounds: the
//! client sees one message, whatever rounds the proxy ran.

use serde_json::{json, Value};

use crate::api::{add_usage, is_context_tool, Splicer};
use crate::sse;

/// A content block being streamed.
struct StreamedBlock {
    upstream_index: u64,
    /// `None` for a context-tool call, withheld.
    client_index: Option<u64>,
    block: Value,
    partial_json: String,
}

/// Splices the events of every round into one message: one
/// `message_start`, blocks renumbered, context-tool blocks withheld, one
/// `message_delta` (usage summed) and `message_stop`.
#[derive(Default)]
pub struct EventSplicer {
    started: bool,
    next_index: u64,
    round: Vec<StreamedBlock>,
    round_usage: Value,
    usage: Value,
    stop_reason: Value,
    stop_sequence: Value,
    client_blocks: Vec<Value>,
    failed: bool,
    /// This round's stream sent `message_stop`.
    round_stopped: bool,
}

impl EventSplicer {
    fn block_at(&mut self, index: u64) -> Option<&mut StreamedBlock> {
        self.round.iter_mut().find(|b| b.upstream_index == index)
    }

    fn forward(name: &str, data: &Value) -> Vec<u8> {
        sse::Event {
            event: name.to_string(),
            data: data.to_string(),
        }
        .encode()
    }
}

impl Splicer for EventSplicer {
    fn event(&mut self, event: sse::Event) -> Vec<u8> {
        let Ok(mut data) = serde_json::from_str::<Value>(&event.data) else {
            return event.encode();
        };
        let name = if event.event.is_empty() {
            data["type"].as_str().unwrap_or_default().to_string()
        } else {
            event.event.clone()
        };
        let index = data["index"].as_u64().unwrap_or(0);
        match name.as_str() {
            "message_start" => {
                self.round_usage = data["message"]["usage"].clone();
                if self.started {
                    return Vec::new();
                }
                self.started = true;
                event.encode()
            }
            "content_block_start" => {
                let block = data["content_block"].clone();
                let withheld = block["type"] == "tool_use"
                    && block["name"].as_str().is_some_and(is_context_tool);
                let client_index = (!withheld).then(|| {
                    self.next_index += 1;
                    self.next_index - 1
                });
                self.round.push(StreamedBlock {
                    upstream_index: index,
                    client_index,
                    block,
                    partial_json: String::new(),
                });
                match client_index {
                    Some(i) => {
                        data["index"] = json!(i);
                        Self::forward(&name, &data)
                    }
                    None => Vec::new(),
                }
            }
            "content_block_delta" | "content_block_stop" => {
                let Some(b) = self.block_at(index) else {
                    return event.encode();
                };
                let delta = &data["delta"];
                match delta["type"].as_str().unwrap_or_default() {
                    "text_delta" => append_str(&mut b.block, "text", &delta["text"]),
                    "thinking_delta" => append_str(&mut b.block, "thinking", &delta["thinking"]),
                    "signature_delta" => b.block["signature"] = delta["signature"].clone(),
                    "input_json_delta" => b
                        .partial_json
                        .push_str(delta["partial_json"].as_str().unwrap_or_default()),
                    _ => {}
                }
                if name == "content_block_stop" && b.block["type"] == "tool_use" {
                    let json_text = std::mem::take(&mut b.partial_json);
                    if !json_text.trim().is_empty() {
                        b.block["input"] = serde_json::from_str(&json_text).unwrap_or(json!({}));
                    }
                }
                match b.client_index {
                    Some(i) => {
                        data["index"] = json!(i);
                        Self::forward(&name, &data)
                    }
                    None => Vec::new(),
                }
            }
            "message_delta" => {
                if let Some(u) = data["usage"].as_object() {
                    for (k, v) in u {
                        self.round_usage[k] = v.clone();
                    }
                }
                self.stop_reason = data["delta"]["stop_reason"].clone();
                self.stop_sequence = data["delta"]["stop_sequence"].clone();
                Vec::new()
            }
            "message_stop" => {
                self.round_stopped = true;
                Vec::new()
            }
            "error" => {
                self.failed = true;
                event.encode()
            }
            _ => event.encode(),
        }
    }

    fn end_round(&mut self) -> Value {
        self.round_stopped = false;
        add_usage(&mut self.usage, &std::mem::take(&mut self.round_usage));
        let mut round = std::mem::take(&mut self.round);
        round.sort_by_key(|b| b.upstream_index);
        let content: Vec<Value> = round.iter().map(|b| b.block.clone()).collect();
        self.client_blocks.extend(
            round
                .into_iter()
                .filter(|b| b.client_index.is_some())
                .map(|b| b.block),
        );
        json!({"role": "assistant", "content": content})
    }

    fn finish(&mut self) -> Vec<u8> {
        let own_calls = self.client_blocks.iter().any(|b| b["type"] == "tool_use");
        let stop_reason = if self.stop_reason == "tool_use" && !own_calls {
            json!("end_turn")
        } else {
            self.stop_reason.clone()
        };
        let mut out = Self::forward(
            "message_delta",
            &json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": self.stop_sequence}, "usage": self.usage}),
        );
        out.extend(Self::forward(
            "message_stop",
            &json!({"type": "message_stop"}),
        ));
        out
    }

    fn client_turn(&self) -> Value {
        json!({"role": "assistant", "content": self.client_blocks})
    }

    fn keep_alive(&self) -> Vec<u8> {
        Self::forward("ping", &json!({"type": "ping"}))
    }

    fn failed(&self) -> bool {
        self.failed
    }

    fn round_ended(&self) -> bool {
        self.round_stopped
    }

    fn error_event(&self, body: &Value) -> Vec<u8> {
        Self::forward("error", body)
    }
}

fn append_str(block: &mut Value, key: &str, more: &Value) {
    let mut text = block[key].as_str().unwrap_or_default().to_string();
    text.push_str(more.as_str().unwrap_or_default());
    block[key] = json!(text);
}

//! The Responses API's stream events spliced over the context-tool rounds:
//! the client sees one response, whatever rounds the proxy ran.

use serde_json::{json, Value};

use super::is_context_call;
use crate::api::{add_usage, Splicer};
use crate::sse;

/// The events that end a round's stream with its response.
const ENDS: [&str; 2] = ["response.completed", "response.incomplete"];

/// Where an upstream output item goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    Client(u64),
    /// A context-tool call, or the reasoning before one.
    Withheld,
    /// A reasoning item: held until the next item says whether it
    /// preceded a context call.
    Held,
}

/// Where held reasoning items go once the next item is known: to the
/// client, or nowhere when they preceded a context call.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Release {
    ToClient,
    Nowhere,
}

/// Splices the events of every round into one response: the first round's
/// `response.created` / `response.in_progress`, output items renumbered,
/// context-tool calls (and the reasoning that led to them) withheld,
/// `sequence_number` counted across rounds, and one closing event whose
/// response has the first round's id, every item the client saw and the
/// summed usage.
#[derive(Default)]
pub struct ResponseSplicer {
    /// The first round's response id.
    id: Option<Value>,
    /// Rounds ended so far.
    rounds: usize,
    sequence: u64,
    next_index: u64,
    /// This round's items by upstream index.
    round_slots: Vec<(u64, Slot)>,
    /// The events of the held items, in order.
    held: Vec<(String, Value)>,
    /// This round's items as done, by upstream index.
    round_items: Vec<(u64, Value)>,
    client_items: Vec<Value>,
    usage: Value,
    /// The last round's closing event and its response.
    end: Option<(String, Value)>,
    failed: bool,
    round_ended: bool,
}

impl ResponseSplicer {
    fn encode(&mut self, name: &str, mut data: Value) -> Vec<u8> {
        data["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        sse::Event {
            event: name.to_string(),
            data: data.to_string(),
        }
        .encode()
    }

    fn slot(&self, upstream: u64) -> Option<Slot> {
        self.round_slots
            .iter()
            .find(|(i, _)| *i == upstream)
            .map(|(_, s)| *s)
    }

    /// The held items go where `release` says.
    fn release(&mut self, release: Release) -> Vec<u8> {
        for slot in self.round_slots.iter_mut().map(|(_, s)| s) {
            if *slot == Slot::Held {
                *slot = match release {
                    Release::ToClient => {
                        self.next_index += 1;
                        Slot::Client(self.next_index - 1)
                    }
                    Release::Nowhere => Slot::Withheld,
                };
            }
        }
        let mut out = Vec::new();
        for (name, data) in std::mem::take(&mut self.held) {
            if release == Release::ToClient {
                out.extend(self.client_event(&name, data));
            }
        }
        out
    }

    /// An event of an item the client sees, renumbered.
    fn client_event(&mut self, name: &str, mut data: Value) -> Vec<u8> {
        let upstream = data["output_index"].as_u64().unwrap_or_default();
        if let Some(Slot::Client(index)) = self.slot(upstream) {
            data["output_index"] = json!(index);
        }
        if name == "response.output_item.done" {
            self.client_items.push(data["item"].clone());
        }
        self.encode(name, data)
    }
}

impl Splicer for ResponseSplicer {
    fn event(&mut self, event: sse::Event) -> Vec<u8> {
        let Ok(mut data) = serde_json::from_str::<Value>(&event.data) else {
            return Vec::new();
        };
        let name = match event.event.as_str() {
            "" => data["type"].as_str().unwrap_or_default().to_string(),
            name => name.to_string(),
        };
        match name.as_str() {
            "response.created" | "response.queued" | "response.in_progress" => {
                if self.rounds > 0 {
                    return Vec::new();
                }
                self.id
                    .get_or_insert_with(|| data["response"]["id"].clone());
                self.encode(&name, data)
            }
            end if ENDS.contains(&end) => {
                add_usage(&mut self.usage, &data["response"]["usage"]);
                self.end = Some((name, data["response"].take()));
                self.round_ended = true;
                self.release(Release::ToClient)
            }
            "error" | "response.failed" => {
                self.failed = true;
                self.encode(&name, data)
            }
            _ => {
                let Some(upstream) = data["output_index"].as_u64() else {
                    return self.encode(&name, data);
                };
                let mut out = Vec::new();
                if name == "response.output_item.added" {
                    let item = &data["item"];
                    let slot = if item["type"] == "reasoning" {
                        Slot::Held
                    } else if is_context_call(item) {
                        out.extend(self.release(Release::Nowhere));
                        Slot::Withheld
                    } else {
                        out.extend(self.release(Release::ToClient));
                        self.next_index += 1;
                        Slot::Client(self.next_index - 1)
                    };
                    self.round_slots.push((upstream, slot));
                }
                if name == "response.output_item.done" {
                    self.round_items.push((upstream, data["item"].clone()));
                }
                match self.slot(upstream) {
                    Some(Slot::Withheld) => {}
                    Some(Slot::Held) => self.held.push((name, data)),
                    // An item this round never announced: as it came.
                    Some(Slot::Client(_)) | None => out.extend(self.client_event(&name, data)),
                }
                out
            }
        }
    }

    /// The round's output items as done, or, from an upstream that sent
    /// none, its closing response's.
    fn end_round(&mut self) -> Value {
        self.rounds += 1;
        self.round_ended = false;
        self.round_slots.clear();
        let mut items = std::mem::take(&mut self.round_items);
        if items.is_empty() {
            return self.end.as_ref().map_or(json!([]), |(_, r)| {
                json!(r["output"].as_array().cloned().unwrap_or_default())
            });
        }
        items.sort_by_key(|(i, _)| *i);
        Value::Array(items.into_iter().map(|(_, item)| item).collect())
    }

    fn finish(&mut self) -> Vec<u8> {
        let (name, mut response) = self
            .end
            .take()
            .unwrap_or_else(|| ("response.completed".into(), json!({"object": "response"})));
        if let Some(id) = self.id.clone() {
            response["id"] = id;
        }
        response["output"] = Value::Array(self.client_items.clone());
        if !self.usage.is_null() {
            response["usage"] = self.usage.clone();
        }
        self.encode(&name, json!({"type": name, "response": response}))
    }

    fn client_turn(&self) -> Value {
        Value::Array(self.client_items.clone())
    }

    fn keep_alive(&self) -> Vec<u8> {
        sse::comment("ctxproxy: answering a context tool")
    }

    fn failed(&self) -> bool {
        self.failed
    }

    fn round_ended(&self) -> bool {
        self.round_ended
    }

    /// The API's `error` event: an error body's fields, flat.
    fn error_event(&self, body: &Value) -> Vec<u8> {
        let error = body.get("error").unwrap_or(body);
        let data = json!({
            "type": "error",
            "code": error["code"],
            "message": error["message"],
            "param": error["param"],
            "sequence_number": self.sequence,
        });
        sse::Event {
            event: "error".into(),
            data: data.to_string(),
        }
        .encode()
    }
}

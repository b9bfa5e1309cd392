//! The model APIs' JSON shapes, both ways: a packed prompt written as a
//! request's fields (`ctx/assemble`'s `prompt`, and what the proxy
//! forwards), and a request's history items read as ctxproxy messages
//! (what the proxy stores). One module per API, each a `Shape`: adding an
//! API is one module and its tests. The proxy's HTTP side (routes, rounds,
//! streams) is built over these in `ctxproxy-proxy`.

use ctxproxy_core::message::{Message, Role};
use ctxproxy_core::packer::PromptMessage;
use ctxproxy_core::render::Block;
use serde_json::{json, Value};

pub mod anthropic;
pub mod gemini;
pub mod openai;
pub mod project;
pub mod responses;
#[cfg(test)]
mod tests;
pub mod usage;

/// One model API's JSON shape.
pub trait Shape {
    /// Where a reply states what the provider counted, and in which fields.
    const USAGE: usage::UsageShape;

    /// A packed prompt as this API's request fields.
    fn write(messages: &[PromptMessage], tools: &Value) -> Written;

    /// One item of a request's history (at `field`, e.g. `messages[3]`) as
    /// ctxproxy messages; errors name the field. An item reads the same
    /// wherever it stands: what lets the proxy keep an unchanged history's
    /// reading.
    fn read(item: &Value, field: &str) -> Result<Vec<Message>, BadRequest>;

    /// Whether `next`, read from the item after the one `previous` ended
    /// with, belongs to `previous`: an API that lists a turn's parts as
    /// items of their own (a text, then each call) has them read as the one
    /// message the other APIs send, so that a conversation is stored the
    /// same whichever API carried it. Its calls become more calls of
    /// `previous` (`push_read`).
    fn joins(_previous: &Message, _next: &Message) -> bool {
        false
    }
}

/// A prompt in an API's request fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    /// The history (`messages`, `input`, `contents`).
    pub messages: Vec<Value>,
    /// The tools, in the API's shape.
    pub tools: Value,
    /// The system prompt, for an API that states it beside the history.
    pub system: Option<String>,
}

/// A request body that cannot be read: the field and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRequest {
    pub param: String,
    pub message: String,
}

impl BadRequest {
    pub fn new(param: impl Into<String>, message: impl Into<String>) -> BadRequest {
        BadRequest {
            param: param.into(),
            message: message.into(),
        }
    }
}

/// The error for a field that is not what the API takes, naming the field
/// and the JSON kind it got.
pub fn expected(field: &str, what: &str, got: &Value) -> BadRequest {
    let kind = match got {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    BadRequest::new(field, format!("{field}: expected {what}, got {kind}"))
}

/// Appends the messages one history item was read as, each joined to the
/// message before it where the API says it belongs there (`Shape::joins`).
/// Whether the message that was last before changed.
pub fn push_read<S: Shape>(messages: &mut Vec<Message>, read: Vec<Message>) -> bool {
    let mut changed_last = false;
    let before = messages.len();
    for next in read {
        let count = messages.len();
        match messages
            .last_mut()
            .filter(|previous| S::joins(previous, &next))
        {
            Some(previous) => {
                changed_last |= count == before;
                previous.tool_calls.extend(next.tool_calls);
            }
            None => messages.push(next),
        }
    }
    changed_last
}

/// The system messages' text, for an API that states it beside the history.
pub(crate) fn system_text(messages: &[PromptMessage]) -> String {
    messages
        .iter()
        .filter(|m| m.role == Role::System)
        .flat_map(|m| m.blocks.iter().map(Block::text))
        .collect()
}

/// The history as alternating turns, as Anthropic and Gemini want it: the
/// messages but the system's, each block written by `part`, consecutive
/// turns of one role merged (a tool result travels in a user turn), and in
/// a user turn the tool results (`is_result`) first. `true`: the assistant's.
pub(crate) fn alternating_turns(
    messages: &[PromptMessage],
    mut part: impl FnMut(&Block) -> Value,
    is_result: impl Fn(&Value) -> bool,
) -> Vec<(bool, Vec<Value>)> {
    let mut turns: Vec<(bool, Vec<Value>)> = Vec::new();
    for m in messages.iter().filter(|m| m.role != Role::System) {
        let assistant = m.role == Role::Assistant;
        let parts = m.blocks.iter().map(&mut part);
        match turns.last_mut() {
            Some((a, existing)) if *a == assistant => existing.extend(parts),
            _ => turns.push((assistant, parts.collect())),
        }
    }
    for (assistant, parts) in &mut turns {
        if !*assistant {
            parts.sort_by_key(|p| !is_result(p));
        }
    }
    turns
}

pub(crate) fn joined_text(blocks: &[Block]) -> String {
    blocks
        .iter()
        .filter(|b| matches!(b, Block::Text(_)))
        .map(Block::text)
        .collect()
}

/// Each Chat Completions tool (`{type, function: {name, description,
/// parameters}}`) as `shape` writes its fields: the one reading of the
/// assembled tools every other API's shape starts from.
pub(crate) fn functions(
    tools: &Value,
    shape: impl Fn(&Value, &Value, &Value) -> Value,
) -> Vec<Value> {
    tools
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            let f = &t["function"];
            shape(&f["name"], &f["description"], &f["parameters"])
        })
        .collect()
}

/// A call's arguments as the object Anthropic and Gemini want; text that is not one
/// (shortened arguments) under `arguments`.
pub(crate) fn arguments_object(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({"arguments": arguments}),
    }
}

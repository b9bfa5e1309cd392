//! The Gemini API: `systemInstruction` beside `contents` of roles `user`
//! and `model` with parts (`functionCall`, `functionResponse`); tools as
//! one tool of `functionDeclarations`.

use std::collections::HashMap;

use ctxproxy_core::message::{Message, Role, ToolCall};
use ctxproxy_core::packer::PromptMessage;
use ctxproxy_core::render::Block;
use serde_json::{json, Value};

use crate::{alternating_turns, arguments_object, functions, system_text};
use crate::{expected, BadRequest, Shape, Written};

pub struct Gemini;

impl Shape for Gemini {
    const USAGE: crate::usage::UsageShape = crate::usage::UsageShape::Gemini;

    fn write(messages: &[PromptMessage], tools: &Value) -> Written {
        Written {
            system: Some(system_text(messages)),
            messages: gemini_contents(messages),
            tools: gemini_tools(tools),
        }
    }

    fn read(item: &Value, field: &str) -> Result<Vec<Message>, BadRequest> {
        to_messages(item, field)
    }
}

/// Gemini `contents`: roles `user` and `model`, alternating (consecutive
/// turns of one role merged), a call's `args` an object, a tool result a
/// `functionResponse` part of a user turn, named after the call it answers
/// (the API matches them by name), results first in their turn.
fn gemini_contents(messages: &[PromptMessage]) -> Vec<Value> {
    let mut names: HashMap<String, String> = HashMap::new();
    let part = |b: &Block| match b {
        Block::Text(t) => json!({"text": t}),
        Block::ToolUse {
            id,
            name,
            arguments,
        } => {
            names.insert(id.clone(), name.clone());
            json!({"functionCall": {"id": id, "name": name, "args": arguments_object(arguments)}})
        }
        Block::ToolResult {
            call_id,
            name,
            text,
        } => {
            let name = match name.as_str() {
                "" => names.get(call_id).map(String::as_str).unwrap_or_default(),
                name => name,
            };
            json!({"functionResponse": {"id": call_id, "name": name, "response": {"output": text}}})
        }
    };
    alternating_turns(messages, part, |p| p.get("functionResponse").is_some())
        .into_iter()
        .map(|(assistant, parts)| {
            let role = if assistant { "model" } else { "user" };
            json!({"role": role, "parts": parts})
        })
        .collect()
}

/// The tools as one Gemini tool of function declarations.
fn gemini_tools(tools: &Value) -> Value {
    let declarations = functions(
        tools,
        |name, description, parameters| json!({"name": name, "description": description, "parametersJsonSchema": parameters}),
    );
    match declarations.is_empty() {
        true => Value::Null,
        false => json!({"functionDeclarations": declarations}),
    }
}

/// The index a history field names (`contents[3]` is 3); 0 for a reply.
fn index_of(field: &str) -> usize {
    field
        .strip_suffix(']')
        .and_then(|f| f.rsplit_once('['))
        .and_then(|(_, i)| i.parse().ok())
        .unwrap_or(0)
}

/// A call's id: its own, else one from its place (the `nth` call of `name`
/// in the content at `index`), which the response in the next content
/// names the same way: the API pairs calls and responses by name and order.
pub fn call_id(own: &Value, name: &str, index: usize, nth: usize) -> String {
    match own.as_str().filter(|id| !id.is_empty()) {
        Some(id) => id.to_string(),
        None => format!("{name}_{index}_{nth}"),
    }
}

/// Counts the parts of one name seen so far: for `call_id`'s `nth`.
#[derive(Default)]
pub struct Ordinals<'a>(HashMap<&'a str, usize>);

impl<'a> Ordinals<'a> {
    pub fn next(&mut self, name: &'a str) -> usize {
        let n = self.0.entry(name).or_default();
        *n += 1;
        *n - 1
    }
}

pub fn parts_of<'a>(m: &'a Value, field: &str) -> Result<&'a [Value], BadRequest> {
    let parts = m.get("parts").unwrap_or(&Value::Null);
    let parts = parts
        .as_array()
        .ok_or_else(|| expected(&format!("{field}.parts"), "an array of parts", parts))?;
    for (i, p) in parts.iter().enumerate() {
        if !p.is_object() {
            return Err(expected(&format!("{field}.parts[{i}]"), "an object", p));
        }
    }
    Ok(parts)
}

/// A string field of a part, checked.
fn text_at<'a>(v: &'a Value, key: &str, at: &str) -> Result<&'a str, BadRequest> {
    let got = v.get(key).unwrap_or(&Value::Null);
    got.as_str()
        .ok_or_else(|| expected(&format!("{at}.{key}"), "a string", got))
}

/// The kind of part ctxproxy keeps no text of (`inlineData`, `fileData`,
/// …); `None` for a part that holds nothing but a thought signature.
fn part_kind(p: &Value) -> Option<&str> {
    p.as_object()?
        .keys()
        .map(String::as_str)
        .find(|k| !matches!(*k, "thoughtSignature" | "thought"))
}

/// A part's text as ctxproxy reads it: text as it is, a thought not at
/// all (the API does not want it back), anything else named in brackets.
pub fn part_text(p: &Value, at: &str) -> Result<Option<String>, BadRequest> {
    if p["thought"] == true {
        return Ok(None);
    }
    if p.get("text").is_some() {
        return text_at(p, "text", at).map(|t| Some(t.to_string()));
    }
    Ok(part_kind(p).map(|kind| format!("[{kind}]")))
}

/// A response's text: its `output` when that is text, else the response
/// as JSON (an `error`, structured output).
fn response_text(response: &Value) -> String {
    match &response["output"] {
        Value::String(s) => s.clone(),
        _ if response.is_null() => String::new(),
        _ => response.to_string(),
    }
}

/// One content of `contents` as ctxproxy messages: a user content with
/// `functionResponse` parts becomes one tool message per response (a
/// response repeated in the content read once; its other text joins the
/// last one), a model content's `functionCall` parts become tool calls.
pub fn to_messages(m: &Value, field: &str) -> Result<Vec<Message>, BadRequest> {
    let parts = parts_of(m, field)?;
    let index = index_of(field);
    let mut texts = Vec::new();
    let mut ordinals = Ordinals::default();
    match m.get("role").and_then(Value::as_str) {
        Some("model") => {
            let mut message = Message::new(Role::Assistant, "");
            for (i, p) in parts.iter().enumerate() {
                let at = format!("{field}.parts[{i}]");
                if let Some(call) = p.get("functionCall") {
                    let at = format!("{at}.functionCall");
                    let name = text_at(call, "name", &at)?;
                    message.tool_calls.push(ToolCall {
                        id: call_id(&call["id"], name, index, ordinals.next(name)),
                        name: name.to_string(),
                        arguments: match &call["args"] {
                            Value::Null => "{}".to_string(),
                            args => args.to_string(),
                        },
                    });
                } else if let Some(text) = part_text(p, &at)? {
                    texts.push(text);
                }
            }
            message.content = texts.concat();
            Ok(vec![message])
        }
        None | Some("user") => {
            let mut results: Vec<Message> = Vec::new();
            for (i, p) in parts.iter().enumerate() {
                let at = format!("{field}.parts[{i}]");
                let Some(response) = p.get("functionResponse") else {
                    texts.extend(part_text(p, &at)?);
                    continue;
                };
                let at = format!("{at}.functionResponse");
                let name = text_at(response, "name", &at)?;
                let id = call_id(
                    &response["id"],
                    name,
                    index.saturating_sub(1),
                    ordinals.next(name),
                );
                let repeated = results.iter().any(|r| {
                    r.tool_call_id.as_deref() == Some(id.as_str())
                        && r.name.as_deref() == Some(name)
                });
                if repeated {
                    continue;
                }
                results.push(Message {
                    tool_call_id: Some(id),
                    name: Some(name.to_string()),
                    ..Message::new(Role::Tool, response_text(&response["response"]))
                });
            }
            let text = texts.join("\n");
            match results.last_mut() {
                None => Ok(vec![Message::new(Role::User, text)]),
                Some(last) => {
                    if !text.is_empty() {
                        last.content.push('\n');
                        last.content.push_str(&text);
                    }
                    Ok(results)
                }
            }
        }
        Some(other) => Err(BadRequest::new(
            format!("{field}.role"),
            format!("{field}.role: expected user or model, got {other:?}"),
        )),
    }
}

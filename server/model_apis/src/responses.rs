//! The OpenAI Responses API: `input` items (`message`, `function_call`,
//! `function_call_output`, custom tools' calls); flat function tools.

use ctxproxy_core::message::{Message, Role, ToolCall};
use ctxproxy_core::packer::PromptMessage;
use ctxproxy_core::render::Block;
use serde_json::{json, Value};

use crate::openai::content_text;
use crate::{expected, BadRequest, Shape, Written};
use crate::{functions, joined_text};

pub struct Responses;

impl Shape for Responses {
    const USAGE: crate::usage::UsageShape = crate::usage::UsageShape::Responses;

    fn write(messages: &[PromptMessage], tools: &Value) -> Written {
        Written {
            messages: messages.iter().flat_map(responses_items).collect(),
            tools: responses_tools(tools),
            system: None,
        }
    }

    fn read(item: &Value, field: &str) -> Result<Vec<Message>, BadRequest> {
        to_messages(item, field)
    }

    /// A turn's calls follow its text (and each other) as items of their
    /// own; Chat Completions sends them as one message.
    fn joins(previous: &Message, next: &Message) -> bool {
        previous.role == Role::Assistant
            && next.role == Role::Assistant
            && next.content.is_empty()
            && !next.tool_calls.is_empty()
    }
}

/// A prompt message as Responses `input` items: text as a `message` item
/// (the system prompt's with role `system`), each tool call a
/// `function_call` item after its turn's text, each tool result a
/// `function_call_output` item.
fn responses_items(m: &PromptMessage) -> Vec<Value> {
    let text = joined_text(&m.blocks);
    let role = match m.role {
        Role::Tool => "user",
        role => role.as_str(),
    };
    let message = json!({"type": "message", "role": role, "content": text});
    let mut out = Vec::new();
    if m.role == Role::Assistant && !text.is_empty() {
        out.push(message.clone());
    }
    for b in &m.blocks {
        match b {
            Block::ToolUse {
                id,
                name,
                arguments,
            } => out.push(json!({
                "type": "function_call", "call_id": id, "name": name, "arguments": arguments,
            })),
            Block::ToolResult { call_id, text, .. } => out.push(json!({
                "type": "function_call_output", "call_id": call_id, "output": text,
            })),
            Block::Text(_) => {}
        }
    }
    if m.role != Role::Assistant && !text.is_empty() {
        out.push(message);
    }
    out
}

/// Chat Completions tools (`{type, function: {name, description,
/// parameters}}`) in the Responses API's flat shape.
fn responses_tools(tools: &Value) -> Value {
    Value::Array(functions(
        tools,
        |name, description, parameters| json!({"type": "function", "name": name, "description": description, "parameters": parameters}),
    ))
}

/// A string at `item[key]`, or the error naming `{field}.{key}`.
fn text_field(item: &Value, key: &str, field: &str) -> Result<String, BadRequest> {
    let v = item.get(key).unwrap_or(&Value::Null);
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| expected(&format!("{field}.{key}"), "a string", v))
}

/// One `input` item as ctxproxy messages: none for an item ctxproxy does
/// not read (`is_read`), else one.
pub fn to_messages(item: &Value, field: &str) -> Result<Vec<Message>, BadRequest> {
    if !item.is_object() {
        return Err(expected(field, "an object", item));
    }
    let kind = match item.get("type") {
        None | Some(Value::Null) => "message",
        Some(Value::String(kind)) => kind.as_str(),
        Some(other) => return Err(expected(&format!("{field}.type"), "a string", other)),
    };
    let message = match kind {
        "message" => {
            let role_value = item.get("role").unwrap_or(&Value::Null);
            let role = match role_value.as_str() {
                Some("user") => Role::User,
                Some("assistant") => Role::Assistant,
                Some("system" | "developer") => Role::System,
                Some(other) => {
                    return Err(BadRequest::new(
                        format!("{field}.role"),
                        format!(
                            "{field}.role: expected user, assistant, system or developer, got {other:?}"
                        ),
                    ))
                }
                None => return Err(expected(&format!("{field}.role"), "a string", role_value)),
            };
            let content = item.get("content").unwrap_or(&Value::Null);
            Message::new(role, content_text(content, &format!("{field}.content"))?)
        }
        "function_call" | "custom_tool_call" => {
            let arguments = match kind {
                "function_call" => match item.get("arguments") {
                    None | Some(Value::Null) => "{}".to_string(),
                    Some(_) => text_field(item, "arguments", field)?,
                },
                // A custom tool's input is free text (Codex's `apply_patch`: the patch).
                _ => text_field(item, "input", field)?,
            };
            let mut message = Message::new(Role::Assistant, "");
            message.tool_calls.push(ToolCall {
                id: text_field(item, "call_id", field)?,
                name: text_field(item, "name", field)?,
                arguments,
            });
            message
        }
        "function_call_output" | "custom_tool_call_output" => Message {
            tool_call_id: Some(text_field(item, "call_id", field)?),
            ..Message::new(
                Role::Tool,
                content_text(
                    item.get("output").unwrap_or(&Value::Null),
                    &format!("{field}.output"),
                )?,
            )
        },
        _ => return Ok(Vec::new()),
    };
    Ok(vec![message])
}

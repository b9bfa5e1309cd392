//! OpenAI Chat Completions: `messages` with `tool_calls` and `tool`
//! messages; tools as `{type: "function", function: {...}}`, the shape the
//! assembled tools come in.

use ctxproxy_core::message::{Message, Role, ToolCall};
use ctxproxy_core::packer::PromptMessage;
use ctxproxy_core::render::Block;
use serde_json::{json, Value};

use crate::joined_text;
use crate::{expected, BadRequest, Shape, Written};

pub struct OpenAi;

impl Shape for OpenAi {
    const USAGE: crate::usage::UsageShape = crate::usage::UsageShape::ChatCompletions;

    fn write(messages: &[PromptMessage], tools: &Value) -> Written {
        Written {
            messages: messages.iter().flat_map(openai_messages).collect(),
            tools: tools.clone(),
            system: None,
        }
    }

    fn read(item: &Value, field: &str) -> Result<Vec<Message>, BadRequest> {
        to_message(item, field).map(|m| vec![m])
    }
}

fn openai_messages(m: &PromptMessage) -> Vec<Value> {
    let text = joined_text(&m.blocks);
    match m.role {
        Role::Assistant => {
            let calls: Vec<Value> = m
                .blocks
                .iter()
                .filter_map(|b| match b {
                    Block::ToolUse { id, name, arguments } => Some(json!({
                        "id": id, "type": "function", "function": {"name": name, "arguments": arguments}
                    })),
                    _ => None,
                })
                .collect();
            let mut v = json!({"role": "assistant", "content": if text.is_empty() && !calls.is_empty() { Value::Null } else { json!(text) }});
            if !calls.is_empty() {
                v["tool_calls"] = Value::Array(calls);
            }
            vec![v]
        }
        role => {
            let mut out = Vec::new();
            for b in &m.blocks {
                if let Block::ToolResult { call_id, text, .. } = b {
                    out.push(json!({"role": "tool", "tool_call_id": call_id, "content": text}));
                }
            }
            if !text.is_empty() {
                let role = if role == Role::Tool {
                    "user"
                } else {
                    role.as_str()
                };
                out.push(json!({"role": role, "content": text}));
            }
            out
        }
    }
}

/// The text of a `content` (or a Responses call output's `output`): a
/// string, null, or parts, whose text is `text`, or `input_text` /
/// `output_text` as the Responses API names it. Parts that are not text
/// (images, audio, files) are named in brackets: ctxproxy keeps text.
pub fn content_text(content: &Value, field: &str) -> Result<String, BadRequest> {
    match content {
        Value::Null => Ok(String::new()),
        Value::String(s) => Ok(s.clone()),
        Value::Array(parts) => {
            let mut texts = Vec::with_capacity(parts.len());
            for (i, part) in parts.iter().enumerate() {
                let at = format!("{field}[{i}]");
                let kind = part.get("type").and_then(Value::as_str).ok_or_else(|| {
                    expected(
                        &format!("{at}.type"),
                        "a string",
                        part.get("type").unwrap_or(&Value::Null),
                    )
                })?;
                texts.push(match kind {
                    "text" | "input_text" | "output_text" => part
                        .get("text")
                        .and_then(Value::as_str)
                        .ok_or_else(|| {
                            expected(
                                &format!("{at}.text"),
                                "a string",
                                part.get("text").unwrap_or(&Value::Null),
                            )
                        })?
                        .to_string(),
                    "refusal" => part["refusal"].as_str().unwrap_or_default().to_string(),
                    other => format!("[{other}]"),
                });
            }
            Ok(texts.join("\n"))
        }
        other => Err(expected(
            field,
            "a string, null or an array of parts",
            other,
        )),
    }
}

/// One request message as a ctxproxy message.
pub fn to_message(m: &Value, field: &str) -> Result<Message, BadRequest> {
    let role_value = m.get("role").unwrap_or(&Value::Null);
    let role = role_value
        .as_str()
        .ok_or_else(|| expected(&format!("{field}.role"), "a string", role_value))?;
    let content = content_text(
        m.get("content").unwrap_or(&Value::Null),
        &format!("{field}.content"),
    )?;
    let mut message = match role {
        "user" => Message::new(Role::User, content),
        "system" | "developer" => Message::new(Role::System, content),
        "assistant" => {
            let mut message = Message::new(Role::Assistant, content);
            if let Some(calls) = m.get("tool_calls").filter(|c| !c.is_null()) {
                let calls = calls
                    .as_array()
                    .ok_or_else(|| expected(&format!("{field}.tool_calls"), "an array", calls))?;
                for (i, c) in calls.iter().enumerate() {
                    let at = format!("{field}.tool_calls[{i}]");
                    let text = |key: &str, v: &Value| {
                        v.as_str()
                            .map(str::to_string)
                            .ok_or_else(|| expected(&format!("{at}.{key}"), "a string", v))
                    };
                    message.tool_calls.push(ToolCall {
                        id: text("id", &c["id"])?,
                        name: text("function.name", &c["function"]["name"])?,
                        arguments: match &c["function"]["arguments"] {
                            Value::Null => "{}".to_string(),
                            v => text("function.arguments", v)?,
                        },
                    });
                }
            }
            message
        }
        "tool" => {
            let id = m.get("tool_call_id").unwrap_or(&Value::Null);
            let id = id
                .as_str()
                .ok_or_else(|| expected(&format!("{field}.tool_call_id"), "a string", id))?;
            Message {
                tool_call_id: Some(id.to_string()),
                ..Message::new(Role::Tool, content)
            }
        }
        "function" => Message {
            name: m["name"].as_str().map(str::to_string),
            ..Message::new(Role::Tool, content)
        },
        other => {
            return Err(BadRequest::new(
                format!("{field}.role"),
                format!(
                "{field}.role: expected system, developer, user, assistant or tool, got {other:?}"
            ),
            ))
        }
    };
    if let Some(name) = m.get("name").and_then(Value::as_str) {
        message.name = Some(name.to_string());
    }
    Ok(message)
}

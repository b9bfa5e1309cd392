//! Anthropic Messages: `system` beside alternating user/assistant
//! `messages` of content blocks (`tool_use`, `tool_result`); tools with an
//! `input_schema`.

use ctxproxy_core::message::{Message, Role, ToolCall};
use ctxproxy_core::packer::PromptMessage;
use ctxproxy_core::render::Block;
use serde_json::{json, Value};

use crate::{alternating_turns, arguments_object, functions, system_text};
use crate::{expected, BadRequest, Shape, Written};

pub struct Anthropic;

impl Shape for Anthropic {
    const USAGE: crate::usage::UsageShape = crate::usage::UsageShape::Anthropic;

    fn write(messages: &[PromptMessage], tools: &Value) -> Written {
        Written {
            system: Some(system_text(messages)),
            messages: anthropic_messages(messages),
            tools: anthropic_tools(tools),
        }
    }

    fn read(item: &Value, field: &str) -> Result<Vec<Message>, BadRequest> {
        to_messages(item, field)
    }
}

/// Anthropic wants alternating user/assistant turns of content blocks.
fn anthropic_messages(messages: &[PromptMessage]) -> Vec<Value> {
    let block = |b: &Block| match b {
        Block::Text(t) => json!({"type": "text", "text": t}),
        Block::ToolUse {
            id,
            name,
            arguments,
        } => json!({
            "type": "tool_use", "id": id, "name": name,
            "input": arguments_object(arguments),
        }),
        Block::ToolResult { call_id, text, .. } => {
            json!({"type": "tool_result", "tool_use_id": call_id, "content": text})
        }
    };
    alternating_turns(messages, block, |b| b["type"] == "tool_result")
        .into_iter()
        .map(|(assistant, blocks)| {
            let role = if assistant { "assistant" } else { "user" };
            json!({"role": role, "content": blocks})
        })
        .collect()
}

fn anthropic_tools(tools: &Value) -> Value {
    Value::Array(functions(
        tools,
        |name, description, parameters| json!({"name": name, "description": description, "input_schema": parameters}),
    ))
}

fn blocks_of<'a>(content: &'a Value, field: &str) -> Result<Vec<&'a Value>, BadRequest> {
    match content {
        Value::Array(blocks) => {
            for (i, b) in blocks.iter().enumerate() {
                if !b["type"].is_string() {
                    return Err(expected(
                        &format!("{field}[{i}].type"),
                        "a string",
                        &b["type"],
                    ));
                }
            }
            Ok(blocks.iter().collect())
        }
        other => Err(expected(
            field,
            "a string or an array of content blocks",
            other,
        )),
    }
}

/// A block's text: text blocks as they are, anything ctxproxy cannot keep
/// as text (images, documents) named in brackets.
fn block_text(b: &Value, field: &str) -> Result<String, BadRequest> {
    match b["type"].as_str().unwrap_or_default() {
        "text" => b["text"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| expected(&format!("{field}.text"), "a string", &b["text"])),
        other => Ok(format!("[{other}]")),
    }
}

/// The text of a `tool_result`'s content or a system prompt (`field`: where
/// it stands in the request): a string, or blocks joined by newlines.
pub fn blocks_text(content: &Value, field: &str) -> Result<String, BadRequest> {
    match content {
        Value::Null => Ok(String::new()),
        Value::String(s) => Ok(s.clone()),
        other => {
            let blocks = blocks_of(other, field)?;
            let texts = blocks
                .iter()
                .enumerate()
                .map(|(i, b)| block_text(b, &format!("{field}[{i}]")))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(texts.join("\n"))
        }
    }
}

/// One request message as ctxproxy messages: a user message with
/// `tool_result` blocks becomes one tool message per result (its other text
/// joins the last one: the exchange goes on); an assistant message's
/// `tool_use` blocks become tool calls. Thinking blocks are not history
/// ctxproxy keeps: `upstream_body` carries them over from the request.
pub fn to_messages(m: &Value, field: &str) -> Result<Vec<Message>, BadRequest> {
    let role = m.get("role").unwrap_or(&Value::Null);
    let content = m.get("content").unwrap_or(&Value::Null);
    let content_field = format!("{field}.content");
    match role.as_str() {
        Some("user") => {
            if let Value::String(s) = content {
                return Ok(vec![Message::new(Role::User, s.clone())]);
            }
            let blocks = blocks_of(content, &content_field)?;
            let mut results: Vec<Message> = Vec::new();
            let mut texts = Vec::new();
            for (i, b) in blocks.iter().enumerate() {
                let at = format!("{content_field}[{i}]");
                if b["type"] == "tool_result" {
                    let id = b["tool_use_id"].as_str().ok_or_else(|| {
                        expected(&format!("{at}.tool_use_id"), "a string", &b["tool_use_id"])
                    })?;
                    results.push(Message {
                        tool_call_id: Some(id.to_string()),
                        ..Message::new(
                            Role::Tool,
                            blocks_text(&b["content"], &format!("{at}.content"))?,
                        )
                    });
                } else {
                    texts.push(block_text(b, &at)?);
                }
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
        Some("assistant") => {
            let mut message = Message::new(Role::Assistant, "");
            if let Value::String(s) = content {
                message.content = s.clone();
                return Ok(vec![message]);
            }
            let mut texts = Vec::new();
            for (i, b) in blocks_of(content, &content_field)?.iter().enumerate() {
                let at = format!("{content_field}[{i}]");
                match b["type"].as_str().unwrap_or_default() {
                    "text" => texts.push(block_text(b, &at)?),
                    "tool_use" => {
                        let text = |key: &str| {
                            b[key].as_str().map(str::to_string).ok_or_else(|| {
                                expected(&format!("{at}.{key}"), "a string", &b[key])
                            })
                        };
                        message.tool_calls.push(ToolCall {
                            id: text("id")?,
                            name: text("name")?,
                            arguments: b["input"].to_string(),
                        });
                    }
                    _ => {}
                }
            }
            message.content = texts.join("\n");
            Ok(vec![message])
        }
        // Claude Code's per-turn-control beta sends its environment notes
        // as a `system` message inside `messages`. The client's own system
        // prompt is forwarded byte for byte (it is the cached prefix), so
        // these notes travel as the user's text, where the model reads them.
        Some("system") => Ok(vec![Message::new(
            Role::User,
            blocks_text(content, &content_field)?,
        )]),
        _ => Err(BadRequest::new(
            format!("{field}.role"),
            format!("{field}.role: expected user, assistant or system, got {role}"),
        )),
    }
}

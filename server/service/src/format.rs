//! Serialises a packed prompt for a model API: `openai` chat messages,
//! `anthropic` system + messages with content blocks, `responses` input
//! items, `gemini` contents with parts, or plain `text`; and
//! renders a recorded prompt for people (`show-prompt`), and a path (`path`).

use ctxproxy_core::message::Role;
use ctxproxy_core::packer::PromptMessage;
use ctxproxy_core::render::Block;
use serde_json::{json, Value};

pub use crate::api::Format;
use crate::api::{AssembleResult, FormattedPrompt, PathResult};

/// The fields of the `ctx/assemble` result that carry the prompt:
/// `messages`, `tools`, and `system` (anthropic, gemini) or `text` (text).
pub fn prompt_fields(messages: &[PromptMessage], tools: &Value, format: Format) -> FormattedPrompt {
    match format {
        Format::OpenAi => FormattedPrompt {
            messages: messages.iter().flat_map(openai_messages).collect(),
            tools: tools.clone(),
            system: None,
            text: None,
        },
        Format::Anthropic => FormattedPrompt {
            system: Some(system_text(messages)),
            messages: anthropic_messages(messages),
            tools: anthropic_tools(tools),
            text: None,
        },
        Format::Gemini => FormattedPrompt {
            system: Some(system_text(messages)),
            messages: gemini_contents(messages),
            tools: gemini_tools(tools),
            text: None,
        },
        Format::Responses => FormattedPrompt {
            messages: messages.iter().flat_map(responses_items).collect(),
            tools: responses_tools(tools),
            system: None,
            text: None,
        },
        Format::Text => {
            let text = text_prompt(messages);
            FormattedPrompt {
                messages: vec![json!({"role": "user", "content": text})],
                tools: tools.clone(),
                system: None,
                text: Some(text),
            }
        }
    }
}

/// The system messages' text, for an API that states it beside the history.
fn system_text(messages: &[PromptMessage]) -> String {
    messages
        .iter()
        .filter(|m| m.role == Role::System)
        .flat_map(|m| m.blocks.iter().map(Block::text))
        .collect()
}

fn joined_text(blocks: &[Block]) -> String {
    blocks
        .iter()
        .filter(|b| matches!(b, Block::Text(_)))
        .map(Block::text)
        .collect()
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

/// Anthropic wants alternating user/assistant turns: tool results travel in
/// user turns, and consecutive turns of one role are merged.
fn anthropic_messages(messages: &[PromptMessage]) -> Vec<Value> {
    let mut out: Vec<(String, Vec<Value>)> = Vec::new();
    for m in messages.iter().filter(|m| m.role != Role::System) {
        let role = if m.role == Role::Assistant {
            "assistant"
        } else {
            "user"
        };
        let blocks: Vec<Value> = m
            .blocks
            .iter()
            .map(|b| match b {
                Block::Text(t) => json!({"type": "text", "text": t}),
                Block::ToolUse { id, name, arguments } => json!({
                    "type": "tool_use", "id": id, "name": name,
                    "input": serde_json::from_str::<Value>(arguments).unwrap_or_else(|_| json!({"arguments": arguments})),
                }),
                Block::ToolResult { call_id, text, .. } => {
                    json!({"type": "tool_result", "tool_use_id": call_id, "content": text})
                }
            })
            .collect();
        match out.last_mut() {
            Some((r, existing)) if r == role => existing.extend(blocks),
            _ => out.push((role.to_string(), blocks)),
        }
    }
    // Within a user turn, tool results must come first.
    out.into_iter()
        .map(|(role, mut blocks)| {
            if role == "user" {
                blocks.sort_by_key(|b| b["type"] != "tool_result");
            }
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

/// Each Chat Completions tool (`{type, function: {name, description,
/// parameters}}`) as `shape` writes its fields: the one reading of the
/// assembled tools every other API's shape starts from.
fn functions(tools: &Value, shape: impl Fn(&Value, &Value, &Value) -> Value) -> Vec<Value> {
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

/// Gemini `contents`: roles `user` and `model`, alternating (consecutive
/// turns of one role merged), a call's `args` an object, a tool result a
/// `functionResponse` part of a user turn, named after the call it answers
/// (the API matches them by name), results first in their turn.
fn gemini_contents(messages: &[PromptMessage]) -> Vec<Value> {
    let mut names: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    let mut out: Vec<(&str, Vec<Value>)> = Vec::new();
    for m in messages.iter().filter(|m| m.role != Role::System) {
        let role = if m.role == Role::Assistant {
            "model"
        } else {
            "user"
        };
        let mut parts = Vec::with_capacity(m.blocks.len());
        for b in &m.blocks {
            parts.push(match b {
                Block::Text(t) => json!({"text": t}),
                Block::ToolUse { id, name, arguments } => {
                    names.insert(id, name);
                    json!({"functionCall": {"id": id, "name": name, "args": arguments_object(arguments)}})
                }
                Block::ToolResult {
                    call_id,
                    name,
                    text,
                } => {
                    let name = match name.as_str() {
                        "" => names.get(call_id.as_str()).copied().unwrap_or_default(),
                        name => name,
                    };
                    json!({"functionResponse": {"id": call_id, "name": name, "response": {"output": text}}})
                }
            });
        }
        match out.last_mut() {
            Some((r, existing)) if *r == role => existing.extend(parts),
            _ => out.push((role, parts)),
        }
    }
    out.into_iter()
        .map(|(role, mut parts)| {
            if role == "user" {
                parts.sort_by_key(|p| p.get("functionResponse").is_none());
            }
            json!({"role": role, "parts": parts})
        })
        .collect()
}

/// A call's arguments as the object Gemini wants; text that is not one
/// (shortened arguments) under `arguments`.
fn arguments_object(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({"arguments": arguments}),
    }
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

fn text_prompt(messages: &[PromptMessage]) -> String {
    let mut out = String::new();
    for m in messages {
        out.push_str(&format!("### {}\n", m.role.as_str()));
        for b in &m.blocks {
            out.push_str(&b.text());
        }
        out.push('\n');
    }
    out
}

/// The system prompt a recorded prompt was sent with, as the proxy passed
/// it: `system` (anthropic) or the first message's (openai); empty when the
/// prompt had none, `None` when that message's content is not text.
pub fn system_of(prompt: &FormattedPrompt) -> Option<String> {
    if let Some(s) = &prompt.system {
        return Some(s.clone());
    }
    let first = prompt.messages.first().unwrap_or(&Value::Null);
    match first["role"].as_str() {
        Some("system") => first["content"].as_str().map(str::to_string),
        _ => Some(String::new()),
    }
}

/// A recorded prompt (the `ctx/explain` result) for people to read.
pub fn explain_text(v: &AssembleResult) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{} of {}: {} tokens of a {} budget ({}, {}, {}); prefix reused: {} tokens\n",
        v.prompt_id,
        v.session_id,
        v.tokens.total,
        v.budget,
        v.encoding.as_str(),
        v.format.as_str(),
        v.order.as_str(),
        v.prefix_reused,
    ));
    if let Some(reason) = &v.reason {
        out.push_str(&format!("shape: {} ({reason})\n", v.shape.as_str()));
    }
    if v.client_tools_tokens > 0 {
        out.push_str(&format!(
            "client tools: {} tokens (the client's tool definitions, sent as they came; in the total)\n",
            v.client_tools_tokens
        ));
    }
    if let Some(s) = &v.state {
        let c = &s.call;
        out.push_str(&format!(
            "state: depth {} of max {}, iteration {}{}, tools [{}], budget {} of {} used; context: turn {}, phase {}{}\n",
            c.depth,
            c.max_depth,
            c.iteration,
            c.parent_session_id
                .as_ref()
                .map_or(String::new(), |p| format!(", called by {p}")),
            c.tools.join(", "),
            c.budget.used,
            c.budget.total,
            s.context.turn,
            s.context.phase.as_str(),
            match s.dropped {
                0 => String::new(),
                n => format!(", {n} items left out to fit the cap"),
            },
        ));
    }
    out.push_str("\nlayer            tokens  items\n");
    for layer in &v.layers {
        let items: Vec<String> = layer
            .items
            .iter()
            .map(|i| format!("{}:{}({})", i.id, i.format.as_str(), i.tokens))
            .collect();
        // The tokens are not padded: `show-prompt` has always printed them so
        // (a JSON number ignored the `>6` this once had).
        out.push_str(&format!(
            "{:<16} {}  {}\n",
            layer.layer.as_str(),
            layer.tokens,
            items.join(" ")
        ));
    }
    if !v.trimmed.is_empty() {
        out.push_str("\ntrimmed:\n");
        for t in &v.trimmed {
            out.push_str(&format!(
                "  {} {} -> {}: {}\n",
                t.id,
                t.from.as_str(),
                t.to.as_str(),
                t.reason
            ));
        }
    }
    if !v.recall.is_empty() {
        out.push_str("\nrecall (lines of earlier exchanges that match the question):\n");
        for hit in &v.recall {
            out.push_str(&format!(
                "  {} {} tokens, matched {}\n",
                hit.id,
                hit.tokens,
                hit.words.join(", ")
            ));
        }
    }
    if !v.superseded.is_empty() {
        out.push_str("\nsuperseded (shown as headers at most):\n");
        for s in &v.superseded {
            out.push_str(&format!("  {} superseded by {}\n", s.ids, s.by));
        }
    }
    out.push_str("\nmessages as sent:\n");
    out.push_str(&serde_json::to_string_pretty(&v.prompt.messages).unwrap_or_default());
    out.push('\n');
    out
}

/// A path (`ctx/path`) for people: each session, how it was reached, and
/// the exchanges of the path it made.
pub fn path_text(path: &PathResult) -> String {
    let mut out = String::new();
    for s in &path.sessions {
        let title = if s.title.is_empty() {
            "(untitled)"
        } else {
            &s.title
        };
        out.push_str(&format!("{}  {title}  depth {}", s.session_id, s.depth));
        if let Some(p) = &s.parent {
            out.push_str(&format!(
                ", {} of {} at x{}",
                p.kind.as_str(),
                p.session_id,
                p.at_exchange
            ));
        }
        out.push('\n');
        for x in &s.exchanges {
            out.push_str(&format!("  {:<5} {}", x.id, x.header));
            if let Some(by) = &x.superseded_by {
                out.push_str(&format!("  [superseded by {by}]"));
            }
            out.push('\n');
        }
    }
    out
}

//! Serialises a packed prompt in the shape its format names (each model
//! API's own in `ctxproxy-model-apis`, or plain `text`); and renders a
//! recorded prompt for people (`show-prompt`), and a path (`path`).

use ctxproxy_core::packer::PromptMessage;
use ctxproxy_model_apis::anthropic::Anthropic;
use ctxproxy_model_apis::gemini::Gemini;
use ctxproxy_model_apis::openai::OpenAi;
use ctxproxy_model_apis::responses::Responses;
use ctxproxy_model_apis::Shape;
use serde_json::{json, Value};

pub use crate::api::Format;
use crate::api::{AssembleResult, FormattedPrompt, PathResult};

/// The fields of the `ctx/assemble` result that carry the prompt:
/// `messages`, `tools`, and `system` (anthropic, gemini) or `text` (text).
pub fn prompt_fields(messages: &[PromptMessage], tools: &Value, format: Format) -> FormattedPrompt {
    let written = match format {
        Format::OpenAi => OpenAi::write(messages, tools),
        Format::Anthropic => Anthropic::write(messages, tools),
        Format::Gemini => Gemini::write(messages, tools),
        Format::Responses => Responses::write(messages, tools),
        Format::Text => {
            let text = text_prompt(messages);
            return FormattedPrompt {
                messages: vec![json!({"role": "user", "content": text})],
                tools: tools.clone(),
                system: None,
                text: Some(text),
            };
        }
    };
    FormattedPrompt {
        messages: written.messages,
        tools: written.tools,
        system: written.system,
        text: None,
    }
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

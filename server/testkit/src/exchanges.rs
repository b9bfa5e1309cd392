//! Exchanges written as text, for the tests of the summary and the context.

use ctxproxy_core::exchange::KeptMessage;
use ctxproxy_core::ids::BlobHash;
use ctxproxy_core::message::{Message, Role, ToolCall, UserKind};

use crate::kept::{kept, Output};

/// Exchanges written as text for tests, one message per line:
/// `user: …`, `feedback: …`, `assistant: … -> tool {json}`, `tool: …`
/// (`\n` in a tool line stands for a line break).
pub fn parse_exchange(id: u32, fixture: &str) -> Vec<KeptMessage> {
    let mut messages: Vec<Message> = Vec::new();
    let mut pending: Vec<(String, String)> = Vec::new();
    let mut calls = 0;
    for line in fixture.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (tag, rest) = line.split_once(':').expect("role: text");
        let rest = rest.trim();
        let mut m = match tag {
            "user" => Message::new(Role::User, rest),
            "feedback" => Message {
                kind: Some(UserKind::Feedback),
                ..Message::new(Role::User, rest)
            },
            "assistant" => {
                let spaced = format!(" {rest}");
                let mut parts = spaced.split(" -> ");
                let mut m = Message::new(Role::Assistant, parts.next().unwrap().trim());
                for call in parts {
                    calls += 1;
                    let (name, args) = call.split_once(' ').unwrap_or((call, "{}"));
                    let id = format!("c{id}_{calls}");
                    pending.push((id.clone(), name.to_string()));
                    m.tool_calls.push(ToolCall {
                        id,
                        name: name.into(),
                        arguments: args.into(),
                    });
                }
                m
            }
            "tool" => {
                let (call, name) = pending.remove(0);
                let mut m = Message::new(Role::Tool, rest.replace("\\n", "\n"));
                m.tool_call_id = Some(call);
                m.name = Some(name);
                m
            }
            other => panic!("unknown role {other}"),
        };
        m.at = None;
        messages.push(m);
    }
    kept(id, messages, |_, m| Output {
        blob: BlobHash::of(m.content.as_bytes()),
        kind: ctxproxy_core::digest::classify(&ctxproxy_core::digest::ToolOutput {
            tool: m.name.as_deref(),
            arguments: None,
            content: &m.content,
        }),
        path: None,
        bytes: m.content.len() as u64,
        tokens: m.content.len() as u32 / 4,
    })
}

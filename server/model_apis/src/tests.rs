//! Each API reads back what it writes: one prompt (a system prompt, a
//! question, a turn of text and two calls, their results, a follow-up and
//! an answer) written in every shape, each written item read again. The
//! calls, their results and every text come back the same whatever the
//! API, as the proxy relies on: a conversation is stored the same whichever
//! API carried it. The written shape and the reading are snapshotted.

use ctxproxy_core::message::{Message, Role};
use ctxproxy_core::packer::PromptMessage;
use ctxproxy_core::render::Block;
use serde_json::{json, Value};

use crate::anthropic::Anthropic;
use crate::gemini::Gemini;
use crate::openai::OpenAi;
use crate::responses::Responses;
use crate::{push_read, Shape, Written};

fn message(role: Role, blocks: Vec<Block>) -> PromptMessage {
    PromptMessage {
        role,
        blocks,
        charged: 0,
        block_tokens: Vec::new(),
    }
}

fn text(t: &str) -> Block {
    Block::Text(t.to_string())
}

fn call(id: &str, path: &str) -> Block {
    Block::ToolUse {
        id: id.to_string(),
        name: "read_file".to_string(),
        arguments: json!({ "path": path }).to_string(),
    }
}

fn result(id: &str, output: &str) -> Block {
    Block::ToolResult {
        call_id: id.to_string(),
        name: String::new(),
        text: output.to_string(),
    }
}

fn prompt() -> Vec<PromptMessage> {
    vec![
        message(Role::System, vec![text("You are terse.")]),
        message(
            Role::User,
            vec![text("Why does parse fail on empty input?")],
        ),
        message(
            Role::Assistant,
            vec![
                text("Reading both files."),
                call("c1", "src/parse.rs"),
                call("c2", "src/lib.rs"),
            ],
        ),
        message(
            Role::Tool,
            vec![
                result("c1", "fn parse(s: &str) -> usize { s.len() / 0 }"),
                result("c2", "pub mod parse;"),
            ],
        ),
        message(Role::User, vec![text("Is it the division?")]),
        message(Role::Assistant, vec![text("Yes: parse divides by zero.")]),
    ]
}

/// The tools as they come to every shape: Chat Completions'.
fn tools() -> Value {
    json!([{"type": "function", "function": {"name": "read_file", "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}])
}

fn read_back<S: Shape>(written: &Written) -> Vec<Message> {
    let mut out = Vec::new();
    for (i, item) in written.messages.iter().enumerate() {
        let read = S::read(item, &format!("history[{i}]"))
            .unwrap_or_else(|e| panic!("{}: {item}", e.message));
        push_read::<S>(&mut out, read);
    }
    out
}

/// A reading's calls (id, name, arguments as JSON) and results (call id, text).
type CallsAndResults = (Vec<(String, String, Value)>, Vec<(String, String)>);

fn calls_and_results(messages: &[Message]) -> CallsAndResults {
    let calls = messages
        .iter()
        .flat_map(|m| &m.tool_calls)
        .map(|c| {
            let arguments = serde_json::from_str(&c.arguments).expect("JSON arguments");
            (c.id.clone(), c.name.clone(), arguments)
        })
        .collect();
    let results = messages
        .iter()
        .filter_map(|m| {
            let id = m.tool_call_id.clone()?;
            // A result's message may also carry the user's text after it
            // (one user turn in Anthropic and Gemini): its first line is the result.
            let output = m.content.lines().next().unwrap_or_default().to_string();
            Some((id, output))
        })
        .collect();
    (calls, results)
}

fn snapshot(written: &Written, back: &[Message]) -> String {
    let messages: Vec<Value> = back
        .iter()
        .map(|m| {
            json!({
                "role": m.role.as_str(),
                "content": m.content,
                "calls": m.tool_calls.iter().map(|c| format!("{} {}({})", c.id, c.name, c.arguments)).collect::<Vec<_>>(),
                "callId": m.tool_call_id,
            })
        })
        .collect();
    serde_json::to_string_pretty(&json!({
        "written": {"system": written.system, "messages": written.messages, "tools": written.tools},
        "readBack": messages,
    }))
    .expect("JSON")
}

fn check<S: Shape>(name: &str) {
    let written = S::write(&prompt(), &tools());
    let back = read_back::<S>(&written);
    let reference = read_back::<OpenAi>(&OpenAi::write(&prompt(), &tools()));
    assert_eq!(
        calls_and_results(&back),
        calls_and_results(&reference),
        "{name}: calls and results"
    );
    let all_text: String = back.iter().map(|m| m.content.as_str()).collect();
    for m in prompt().iter().filter(|m| m.role != Role::System) {
        for b in m.blocks.iter().filter(|b| matches!(b, Block::Text(_))) {
            assert!(
                all_text.contains(&b.text()),
                "{name}: {:?} not read back",
                b.text()
            );
        }
    }
    // The system prompt is in the history or beside it, never lost.
    let system = written.system.clone().unwrap_or_default()
        + &back
            .iter()
            .filter(|m| m.role == Role::System)
            .map(|m| m.content.as_str())
            .collect::<String>();
    assert_eq!(system, "You are terse.", "{name}: system prompt");
    insta::assert_snapshot!(name, snapshot(&written, &back));
}

#[test]
fn chat_completions_reads_back_what_it_writes() {
    check::<OpenAi>("openai");
}

#[test]
fn messages_reads_back_what_it_writes() {
    check::<Anthropic>("anthropic");
}

#[test]
fn responses_reads_back_what_it_writes() {
    check::<Responses>("responses");
}

#[test]
fn gemini_reads_back_what_it_writes() {
    check::<Gemini>("gemini");
}

/// The APIs whose call arguments are an object (Anthropic's `input`, Gemini's
/// `args`) get one even when the arguments are not: a call the packer
/// shortened, or a client's arguments that are JSON but not an object. The
/// API would refuse the request otherwise.
#[test]
fn arguments_that_are_not_an_object_are_written_as_one() {
    let calls = [
        (r#"{"path": "src/lib.rs"}"#, json!({"path": "src/lib.rs"})),
        (
            r#"{"path": "src/li…"#,
            json!({"arguments": r#"{"path": "src/li…"#}),
        ),
        ("[1, 2]", json!({"arguments": "[1, 2]"})),
        ("", json!({"arguments": ""})),
    ];
    for (arguments, object) in calls {
        let prompt = vec![
            message(Role::User, vec![text("Read it.")]),
            message(
                Role::Assistant,
                vec![Block::ToolUse {
                    id: "c1".to_string(),
                    name: "read_file".to_string(),
                    arguments: arguments.to_string(),
                }],
            ),
        ];
        let anthropic = Anthropic::write(&prompt, &tools());
        assert_eq!(
            anthropic.messages[1]["content"][0]["input"], object,
            "{arguments}"
        );
        let gemini = Gemini::write(&prompt, &tools());
        assert_eq!(
            gemini.messages[1]["parts"][0]["functionCall"]["args"], object,
            "{arguments}"
        );
    }
}

//! A body read from a kept history reads exactly as the body read whole,
//! and a body read whole a message at a time exactly as parsed into one
//! `Value`:
//! bodies received one after another through `HistoryCache` and `receive`
//! (as the proxy does) against each read whole on its own, for edits at
//! the end, in the middle, of the system prompt, of the tools, malformed
//! bodies, clients sharing a prefix, and random edits (proptest).

use axum::body::Body;
use proptest::prelude::*;
use serde_json::{json, Value};

use super::anthropic::Anthropic;
use super::api::{Api, BadRequest};
use super::history::cache::HistoryCache;
use super::history::receive::receive;
use super::history::{read_checked, read_whole, Read};
use super::openai::OpenAi;
use super::responses::Responses;
use ctxproxy_service::api::WireMessage;

/// Everything a read gives the proxy, as JSON.
fn reading(r: &Read) -> Value {
    let messages: Vec<Value> = r
        .history
        .messages()
        .iter()
        .map(|m| serde_json::to_value(WireMessage::from_core(m)).unwrap())
        .collect();
    json!({
        "envelope": r.envelope,
        "system": r.system,
        "stream": r.stream,
        "messages": messages,
        "kept": r.client_body().kept.iter().map(|(i, m)| json!([i, m])).collect::<Vec<_>>(),
        "debug": format!("{:?}", r.history),
    })
}

/// How a body was read through the histories.
#[derive(Debug, PartialEq)]
enum Path {
    Resumed,
    Whole,
}

/// A proxy's reading of bodies in turn: each received and read as
/// `read_request` does, its history then kept.
struct Reader {
    histories: HistoryCache,
    runtime: tokio::runtime::Runtime,
}

impl Reader {
    fn new() -> Reader {
        Reader {
            histories: HistoryCache::default(),
            runtime: tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap(),
        }
    }

    /// Reads `body` under session header `key`: the reading (or the
    /// error's text) and whether it resumed a kept history.
    fn read<A: Api>(&self, key: Option<&str>, body: &[u8]) -> (Result<Value, String>, Path) {
        let received = self
            .runtime
            .block_on(receive(
                Body::from(body.to_vec()),
                &self.histories,
                A::FORMAT,
                key,
                body.len(),
            ))
            .unwrap();
        assert_eq!(received.body, body, "the body as received");
        let (read, resumed) = received.read::<A>();
        let path = if resumed { Path::Resumed } else { Path::Whole };
        match read {
            Ok(read) => {
                let out = reading(&read);
                drop(
                    self.histories
                        .put(A::FORMAT, key.map(str::to_string), read.history),
                );
                (Ok(out), path)
            }
            Err(e) => (Err(format!("{} | {}", e.param, e.message)), path),
        }
    }
}

/// `body` read whole on its own: a message at a time as parsed into one
/// `Value`, which must read the same.
fn whole<A: Api>(body: &[u8]) -> Result<Value, String> {
    let read = |r: Result<Read, BadRequest>| {
        r.map(|r| reading(&r))
            .map_err(|e| format!("{} | {}", e.param, e.message))
    };
    let whole = read(read_whole::<A>(body.to_vec()));
    assert_eq!(
        whole,
        read(read_checked::<A>(body.to_vec())),
        "a message at a time and as one value: {}",
        String::from_utf8_lossy(body)
    );
    whole
}

/// Reads `bodies` in turn through one reader; each must read as it does
/// whole. Returns the paths taken.
fn read_in_turn<A: Api>(bodies: &[(Option<&str>, Vec<u8>)]) -> Vec<Path> {
    let reader = Reader::new();
    bodies
        .iter()
        .map(|(key, body)| {
            let (read, path) = reader.read::<A>(*key, body);
            assert_eq!(read, whole::<A>(body), "{}", String::from_utf8_lossy(body));
            path
        })
        .collect()
}

fn openai_history(n: usize) -> Vec<Value> {
    let mut out = vec![json!({"role": "system", "content": "You are terse."})];
    for i in 0..n {
        out.push(json!({"role": "user", "content": format!("question {i}")}));
        out.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": format!("c{i}"), "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]}));
        out.push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": "x\n".repeat(i + 1)}));
        out.push(json!({"role": "assistant", "content": format!("answer {i}")}));
    }
    out
}

/// Bigger than the head bodies are matched by (`receive::HEAD`): a tool
/// output of 80 KB in the first exchange.
fn padded(mut history: Vec<Value>) -> Vec<Value> {
    history[3]["content"] = json!("x\n".repeat(40_000));
    history
}

/// An OpenAI body with its fields in this order (`messages` where the
/// `messages` key stands).
fn openai_body(order: &[&str], messages: &[Value], tools: &Value) -> Vec<u8> {
    let fields: Vec<String> = order
        .iter()
        .map(|k| {
            let v = match *k {
                "messages" => json!(messages),
                "tools" => tools.clone(),
                "model" => json!("gpt-4.1"),
                "stream" => json!(false),
                other => panic!("no field {other}"),
            };
            format!("{}: {}", json!(k), v)
        })
        .collect();
    format!("{{{}}}", fields.join(",\n ")).into_bytes()
}

fn tools(names: &[&str]) -> Value {
    names
        .iter()
        .map(|n| json!({"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}))
        .collect()
}

#[test]
fn appended_messages_are_read_alone_wherever_the_envelope_stands() {
    for order in [
        &["messages", "model", "tools"][..],
        &["model", "tools", "messages"],
        &["model", "messages", "stream", "tools"],
    ] {
        let t = tools(&["read_file"]);
        let bodies: Vec<(Option<&str>, Vec<u8>)> = (1..6)
            .map(|n| (Some("s1"), openai_body(order, &openai_history(n), &t)))
            .collect();
        let paths = read_in_turn::<OpenAi>(&bodies);
        assert_eq!(paths[0], Path::Whole);
        assert!(paths[1..].iter().all(|p| *p == Path::Resumed), "{order:?}");
    }
}

#[test]
fn an_edit_in_the_middle_a_new_system_prompt_or_new_tools_read_as_a_whole_read() {
    let order = ["model", "messages", "tools"];
    let t = tools(&["read_file"]);
    let base = padded(openai_history(4));
    let mut middle = padded(openai_history(5));
    middle[6]["content"] = json!("an edited answer");
    let mut system = middle.clone();
    system[0]["content"] = json!("You are verbose.");
    let bodies = vec![
        (None, openai_body(&order, &base, &t)),
        (None, openai_body(&order, &middle, &t)),
        (
            None,
            openai_body(&order, &middle, &tools(&["read_file", "run"])),
        ),
        (None, openai_body(&order, &system, &t)),
        (None, openai_body(&order, &system[..9], &t)),
    ];
    let paths = read_in_turn::<OpenAi>(&bodies);
    // The edit in the middle keeps the messages before it; new tools after
    // the history keep all of it; a new system prompt (the first message)
    // is another conversation's start, read whole; a shorter history
    // keeps what it repeats.
    assert_eq!(
        paths,
        [
            Path::Whole,
            Path::Resumed,
            Path::Resumed,
            Path::Whole,
            Path::Resumed
        ]
    );
}

#[test]
fn a_body_malformed_after_the_repeated_part_is_refused_as_a_whole_read_refuses_it() {
    let order = ["messages", "model"];
    let good = openai_body(&order, &openai_history(3), &Value::Null);
    let grown = openai_body(&order, &openai_history(4), &Value::Null);
    let cut = grown.len() - 40;
    let mut bad_role = openai_history(4);
    bad_role.push(json!({"role": "robot", "content": "hi"}));
    let cases: Vec<Vec<u8>> = vec![
        // Not JSON after the repeated messages.
        [&grown[..cut], b"}}".as_slice()].concat(),
        // A trailing comma, then nothing.
        [&good[..good.len() - 20], b",]}".as_slice()].concat(),
        openai_body(&order, &bad_role, &Value::Null),
        // `stream` is not a boolean: the envelope after the history.
        [
            &grown[..grown.len() - 1],
            b", \"stream\": \"yes\"}".as_slice(),
        ]
        .concat(),
        // A second `messages`: a whole read keeps the last.
        [&grown[..grown.len() - 1], b", \"messages\": []}".as_slice()].concat(),
    ];
    for bad in cases {
        let reader = Reader::new();
        let (first, _) = reader.read::<OpenAi>(None, &good);
        assert!(first.is_ok());
        let (read, _) = reader.read::<OpenAi>(None, &bad);
        assert!(read.is_err(), "{}", String::from_utf8_lossy(&bad));
        assert_eq!(read, whole::<OpenAi>(&bad));
        // Still read right after the refusal.
        let (again, _) = reader.read::<OpenAi>(None, &grown);
        assert_eq!(again, whole::<OpenAi>(&grown));
    }
}

#[test]
fn clients_sharing_a_prefix_each_resume_their_own() {
    let order = ["model", "messages"];
    let shared = openai_history(3);
    let fork = |n: usize, who: &str| {
        let mut h = shared.clone();
        for i in 0..n {
            h.push(json!({"role": "user", "content": format!("{who} asks {i}")}));
            h.push(json!({"role": "assistant", "content": format!("{who} is told {i}")}));
        }
        openai_body(&order, &h, &Value::Null)
    };
    let bodies = vec![
        (None, fork(1, "a")),
        (None, fork(1, "b")),
        (None, fork(2, "a")),
        (None, fork(2, "b")),
        (None, fork(3, "a")),
        (None, fork(3, "b")),
        // Another session header never resumes these.
        (Some("other"), fork(4, "b")),
    ];
    let paths = read_in_turn::<OpenAi>(&bodies);
    assert_eq!(
        paths,
        [
            Path::Whole,
            Path::Whole,
            Path::Resumed,
            Path::Resumed,
            Path::Resumed,
            Path::Resumed,
            Path::Whole
        ]
    );
}

fn anthropic_history(n: usize) -> Vec<Value> {
    let mut out = Vec::new();
    for i in 0..n {
        out.push(
            json!({"role": "user", "content": [{"type": "text", "text": format!("question {i}")}]}),
        );
        out.push(json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": format!("think {i}"), "signature": "sig"},
            {"type": "tool_use", "id": format!("t{i}"), "name": "read_file", "input": {"path": "a.rs"}}]}));
        out.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": format!("t{i}"), "content": "fn main() {}"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]}));
    }
    out[2]["content"][0]["content"] = json!("x\n".repeat(40_000));
    // Claude Code marks the newest message with a breakpoint.
    if let Some(last) = out.last_mut().and_then(|m| m["content"].as_array_mut()) {
        if let Some(block) = last.last_mut() {
            block["cache_control"] = json!({"type": "ephemeral"});
        }
    }
    out
}

#[test]
fn anthropic_bodies_resume_with_their_system_thinking_and_breakpoints() {
    let body = |n: usize, system: &str| {
        format!(
            "{{\"model\": \"claude\", \"messages\": {}, \"system\": {}, \"max_tokens\": 100}}",
            json!(anthropic_history(n)),
            json!([{"type": "text", "text": system}])
        )
        .into_bytes()
    };
    let bodies = vec![
        (Some("cc"), body(1, "Be brief.")),
        (Some("cc"), body(2, "Be brief.")),
        (Some("cc"), body(3, "Be brief.")),
        (Some("cc"), body(4, "Be thorough.")),
    ];
    let paths = read_in_turn::<Anthropic>(&bodies);
    assert_eq!(
        paths,
        [Path::Whole, Path::Resumed, Path::Resumed, Path::Resumed]
    );
}

/// A Responses turn: its text, a reasoning item and two calls, which read
/// as one message (`Api::joins`), then the outputs.
fn responses_turn(first_arguments: &str) -> Vec<Value> {
    vec![
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading both."}]}),
        json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}),
        json!({"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": first_arguments}),
        json!({"type": "function_call", "call_id": "c2", "name": "read_file", "arguments": "{\"path\":\"b.rs\"}"}),
        json!({"type": "function_call_output", "call_id": "c1", "output": "fn a() {}"}),
        json!({"type": "function_call_output", "call_id": "c2", "output": "fn b() {}"}),
    ]
}

#[test]
fn a_message_read_from_several_items_resumes_whole_or_is_read_again() {
    let body = |items: &[Value]| {
        let mut input = vec![json!({"role": "user", "content": "x\n".repeat(40_000)})];
        input.extend_from_slice(items);
        format!("{{\"model\": \"gpt-5\", \"input\": {}}}", json!(input)).into_bytes()
    };
    let turn = responses_turn("{\"path\":\"a.rs\"}");
    let edited = responses_turn("{\"path\":\"c.rs\"}");
    let bodies = vec![
        // The turn's first call, then the second joins the kept message.
        (Some("r"), body(&turn[..3])),
        (Some("r"), body(&turn)),
        // The first call edited: the message it joined is read again.
        (Some("r"), body(&edited)),
    ];
    let paths = read_in_turn::<Responses>(&bodies);
    assert_eq!(paths, [Path::Whole, Path::Resumed, Path::Resumed]);
    let read = whole::<Responses>(&bodies[2].1).unwrap();
    let assistant = &read["messages"][1];
    assert_eq!(
        (
            &assistant["content"],
            assistant["toolCalls"].as_array().map(Vec::len)
        ),
        (&json!("Reading both."), Some(2)),
    );
}

/// An edit of an OpenAI history: the bodies a client may send next.
#[derive(Debug, Clone)]
enum Edit {
    Append(String),
    Replace(usize, String),
    Truncate(usize),
    Tools(Vec<String>),
    Stream(bool),
    Garble(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        4 => "[a-z ]{0,12}".prop_map(Edit::Append),
        2 => (0usize..20, "[a-z\\n ]{0,8}").prop_map(|(i, t)| Edit::Replace(i, t)),
        1 => (0usize..20).prop_map(Edit::Truncate),
        1 => proptest::collection::vec("[a-z]{1,6}", 0..3).prop_map(Edit::Tools),
        1 => any::<bool>().prop_map(Edit::Stream),
        1 => (0usize..400).prop_map(Edit::Garble),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_edits_read_as_a_whole_read(
        edits in proptest::collection::vec(edit(), 1..12),
        order in Just(["messages", "model", "tools", "stream"]).prop_shuffle(),
        big in any::<bool>(),
    ) {
        let reader = Reader::new();
        // Past the head bodies are matched by, an edit anywhere after it resumes.
        let mut messages = if big { padded(openai_history(2)) } else { openai_history(2) };
        let mut tool_names: Vec<String> = vec!["read_file".into()];
        let mut stream = false;
        for e in edits {
            let mut garble = None;
            match e {
                Edit::Append(text) => {
                    let role = if messages.len() % 2 == 0 { "user" } else { "assistant" };
                    messages.push(json!({"role": role, "content": text}));
                }
                Edit::Replace(i, text) => {
                    let i = i % messages.len();
                    messages[i]["content"] = json!(text);
                }
                Edit::Truncate(n) => messages.truncate((n % messages.len()).max(1)),
                Edit::Tools(names) => tool_names = names,
                Edit::Stream(s) => stream = s,
                Edit::Garble(at) => garble = Some(at),
            }
            let names: Vec<&str> = tool_names.iter().map(String::as_str).collect();
            let mut body = openai_body(&order, &messages, &tools(&names));
            if stream {
                body.truncate(body.len() - 1);
                body.extend_from_slice(b", \"stream_options\": {\"include_usage\": true}}");
            }
            if let Some(at) = garble {
                let at = at % body.len();
                body[at] = b'{';
            }
            let (read, _) = reader.read::<OpenAi>(Some("p"), &body);
            prop_assert_eq!(read, whole::<OpenAi>(&body));
        }
    }
}

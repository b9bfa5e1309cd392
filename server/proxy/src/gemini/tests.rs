//! The Gemini mapping both ways, from a request shaped like Gemini CLI's:
//! contents read, the assembled prompt forwarded, replies and stream
//! chunks spliced.

use super::*;
use crate::api::Splicer;
use ctxproxy_core::context_tool::definitions as tool_definitions;
use ctxproxy_core::message::Role;
use ctxproxy_core::packer::PromptMessage;
use ctxproxy_core::render::Block;
use serde_json::json;

use crate::history::test_support::{forwarded, parse, pretty, request_as_text};

/// A turn of Gemini CLI's: the task, a `write_file` call with its thought
/// signature, its response (sent twice, as a resumed session once did),
/// an image, then a call and response without ids.
fn client_request() -> Value {
    json!({
        "systemInstruction": {"role": "user", "parts": [{"text": "You are Gemini CLI."}, {"text": "Be brief."}]},
        "tools": [{"functionDeclarations": [
            {"name": "write_file", "description": "Writes a file", "parametersJsonSchema": {"type": "object"}}
        ]}],
        "generationConfig": {"temperature": 1, "thinkingConfig": {"includeThoughts": true}},
        "contents": [
            {"role": "user", "parts": [
                {"text": "<session_context>\nThis is the Gemini CLI.\n</session_context>"},
                {"text": "create hello.txt containing hi"}
            ]},
            {"role": "model", "parts": [
                {"text": "Planning the file.", "thought": true},
                {"functionCall": {"id": "write_file_1_0", "name": "write_file", "args": {"file_path": "hello.txt", "content": "hi\n"}},
                 "thoughtSignature": "c2lnbmF0dXJlLW9wYXF1ZQ=="}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"id": "write_file_1_0", "name": "write_file", "response": {"output": "Created hello.txt"}}},
                {"functionResponse": {"id": "write_file_1_0", "name": "write_file", "response": {"output": "Created hello.txt"}}}
            ]},
            {"role": "model", "parts": [{"text": "Done. "}, {"text": "Anything else?"}]},
            {"role": "user", "parts": [
                {"text": "What is in this picture?"},
                {"inlineData": {"mimeType": "image/png", "data": "AAAA"}}
            ]},
            {"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": {"path": "a.png"}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "read_file", "response": {"error": "binary"}}}]}
        ]
    })
}

#[test]
fn requests_become_ctxproxy_messages() {
    let parsed = parse::<Gemini>(&client_request()).unwrap();
    insta::assert_snapshot!(request_as_text(&parsed));
}

#[test]
fn malformed_requests_name_the_field() {
    let user = json!({"role": "user", "parts": [{"text": "hi"}]});
    let cases = [
        json!({"contents": "hi"}),
        json!({"contents": []}),
        json!({"contents": [{"role": "user"}]}),
        json!({"contents": [{"role": "system", "parts": []}]}),
        json!({"contents": [{"role": "user", "parts": ["hi"]}]}),
        json!({"contents": [{"role": "user", "parts": [{"text": 7}]}]}),
        json!({"contents": [user, {"role": "model", "parts": [{"functionCall": {"args": {}}}]}]}),
        json!({"contents": [user, {"role": "model", "parts": []}, {"role": "user", "parts": [{"text": "x"}, {"functionResponse": {"name": 1}}]}]}),
        json!({"systemInstruction": {"parts": [{"text": false}]}, "contents": [user]}),
        json!({"systemInstruction": 3, "contents": [user]}),
    ];
    let errors: Vec<String> = cases
        .iter()
        .map(|c| {
            let e = parse::<Gemini>(c).unwrap_err();
            format!("{} | {}", e.param, e.message)
        })
        .collect();
    insta::assert_snapshot!(errors.join("\n"));
}

fn prompt_message(role: Role, blocks: Vec<Block>) -> PromptMessage {
    PromptMessage {
        role,
        blocks,
        charged: 0,
        block_tokens: Vec::new(),
    }
}

#[test]
fn the_assembled_prompt_keeps_signatures_media_and_the_system_instruction() {
    let text = |t: &str| Block::Text(t.to_string());
    let messages = [
        prompt_message(Role::System, vec![text("You are Gemini CLI.\nBe brief.")]),
        prompt_message(
            Role::User,
            vec![text("## Earlier exchanges\nx1 created hello.txt\n")],
        ),
        prompt_message(
            Role::Assistant,
            vec![Block::ToolUse {
                id: "write_file_1_0".into(),
                name: "write_file".into(),
                arguments: "{\"file_path\":\"hello.txt\",\"content\":\"hi\\n\"}".into(),
            }],
        ),
        prompt_message(
            Role::Tool,
            vec![Block::ToolResult {
                call_id: "write_file_1_0".into(),
                name: String::new(),
                text: "Created hello.txt".into(),
            }],
        ),
        prompt_message(
            Role::User,
            vec![text("What is in this picture?\n[inlineData]")],
        ),
    ];
    let prompt =
        ctxproxy_service::format::prompt_fields(&messages, &tool_definitions(), Format::Gemini);
    assert_eq!(
        prompt.system.as_deref(),
        Some("You are Gemini CLI.\nBe brief.")
    );
    let body = forwarded::<Gemini>(&client_request(), prompt, "s-abc");
    insta::assert_snapshot!(pretty(&body));
}

#[test]
fn the_context_tools_join_the_clients_declarations_or_come_alone() {
    let ours = json!({"functionDeclarations": [{"name": "context_search"}]});
    let mut body = json!({});
    put_declarations(&mut body, &json!({}), ours.clone());
    assert_eq!(body["tools"], json!([ours]));
    let client =
        json!({"tools": [{"googleSearch": {}}, {"functionDeclarations": [{"name": "ls"}]}]});
    put_declarations(&mut body, &client, ours);
    assert_eq!(
        body["tools"],
        json!([{"googleSearch": {}}, {"functionDeclarations": [{"name": "ls"}, {"name": "context_search"}]}])
    );
}

#[test]
fn a_request_for_json_output_gets_no_context_tools() {
    let prompt = || FormattedPrompt {
        messages: vec![json!({"role": "user", "parts": [{"text": "Which model?"}]})],
        tools: json!({"functionDeclarations": [{"name": "context_search"}]}),
        system: None,
        text: None,
    };
    let router = json!({
        "contents": [{"role": "user", "parts": [{"text": "Which model?"}]}],
        "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": {"type": "object"}}
    });
    assert!(forwarded::<Gemini>(&router, prompt(), "s")
        .get("tools")
        .is_none());
    let mut plain = router.clone();
    plain["generationConfig"] = json!({"temperature": 0});
    assert_eq!(
        forwarded::<Gemini>(&plain, prompt(), "s")["tools"],
        json!([{"functionDeclarations": [{"name": "context_search"}]}])
    );
}

fn reply(parts: Value, usage: Value) -> Value {
    json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": usage,
        "modelVersion": "gemini-2.5-pro",
        "responseId": "r-1"
    })
}

#[test]
fn whole_replies_splice_over_context_rounds() {
    let round1 = reply(
        json!([
            {"text": "Checking. "},
            {"functionCall": {"id": "ctx_1", "name": "context_retrieve", "args": {"ids": ["x1"]}}, "thoughtSignature": "c2ln"}
        ]),
        json!({"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}),
    );
    let turn = Gemini::assistant_turn(&round1);
    let crate::api::TurnCalls {
        context: calls,
        client,
    } = Gemini::calls(&turn);
    assert_eq!(calls.len(), 1);
    assert_eq!(client, crate::api::ClientCalls::None);
    let mut body = json!({"contents": []});
    Gemini::continue_with(
        &mut body,
        &turn,
        &[(calls[0].clone(), "## x1 (full)\nhello".into())],
    );
    let round2 = reply(
        json!([
            {"text": "Now reading."},
            {"functionCall": {"id": "call_2", "name": "read_file", "args": {"path": "a.rs"}}}
        ]),
        json!({"promptTokenCount": 130, "candidatesTokenCount": 5, "totalTokenCount": 135}),
    );
    let spliced = Gemini::splice(&[round1, round2]);
    insta::assert_snapshot!(pretty(&json!({"continuation": body, "client": spliced})));
}

/// A call the upstream sent without an id is read with one of ctxproxy's
/// (what is recorded); its answer goes back without one, as the call came.
#[test]
fn an_answer_names_the_call_only_by_an_id_it_had() {
    let turn = json!({"role": "model", "parts": [
        {"functionCall": {"name": "context_search", "args": {"query": "pytest"}}},
        {"functionCall": {"id": "ctx_2", "name": "context_retrieve", "args": {"ids": ["x1"]}}},
    ]});
    let calls = Gemini::calls(&turn).context;
    assert_eq!(calls.len(), 2);
    assert!(!calls[0].id.is_empty(), "read with an id of ctxproxy's");
    let answers: Vec<_> = calls
        .into_iter()
        .map(|c| (c, "No matches.".to_string()))
        .collect();
    let mut body = json!({"contents": []});
    Gemini::continue_with(&mut body, &turn, &answers);
    assert_eq!(
        body["contents"][1]["parts"],
        json!([
            {"functionResponse": {"name": "context_search", "response": {"output": "No matches."}}},
            {"functionResponse": {"id": "ctx_2", "name": "context_retrieve", "response": {"output": "No matches."}}},
        ])
    );
}

/// Feeds rounds of chunks through the splicer: what the client reads, and
/// the content recorded.
fn splice_stream(rounds: &[Vec<Value>]) -> (String, Value) {
    let mut s = Gemini::splicer(&json!({}));
    let mut out = Vec::new();
    for (i, round) in rounds.iter().enumerate() {
        for chunk in round {
            out.extend(s.event(sse::Event {
                event: String::new(),
                data: chunk.to_string(),
            }));
        }
        assert!(s.round_ended());
        s.end_round();
        if i + 1 < rounds.len() {
            out.extend(s.keep_alive());
        }
    }
    out.extend(s.finish());
    (String::from_utf8(out).unwrap(), s.client_turn())
}

fn chunk(parts: Value, finish: Option<&str>, usage: Value) -> Value {
    let mut chunk = json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}],
        "usageMetadata": usage,
        "modelVersion": "gemini-2.5-pro",
        "responseId": "r-1"
    });
    if let Some(reason) = finish {
        chunk["candidates"][0]["finishReason"] = json!(reason);
    }
    chunk
}

#[test]
fn streams_splice_over_context_rounds() {
    let round1 = vec![
        chunk(
            json!([{"text": "The tests first.", "thought": true}]),
            None,
            json!({"promptTokenCount": 50, "totalTokenCount": 50}),
        ),
        chunk(
            json!([{"text": "Let me "}]),
            None,
            json!({"promptTokenCount": 50, "candidatesTokenCount": 2, "totalTokenCount": 52}),
        ),
        chunk(
            json!([{"text": "check. "}, {"functionCall": {"id": "ctx_1", "name": "context_search", "args": {"query": "tests"}}, "thoughtSignature": "c2ln"}]),
            Some("STOP"),
            json!({"promptTokenCount": 50, "candidatesTokenCount": 7, "totalTokenCount": 57}),
        ),
    ];
    let round2 = vec![
        chunk(
            json!([{"text": "Found it. "}]),
            None,
            json!({"promptTokenCount": 80, "candidatesTokenCount": 3, "totalTokenCount": 83}),
        ),
        chunk(
            json!([{"functionCall": {"id": "call_run", "name": "run_shell_command", "args": {"command": "pytest"}}, "thoughtSignature": "c2ln"}]),
            Some("STOP"),
            json!({"promptTokenCount": 80, "candidatesTokenCount": 9, "totalTokenCount": 89}),
        ),
    ];
    let (text, turn) = splice_stream(&[round1, round2]);
    insta::assert_snapshot!(format!("{text}\nrecorded: {}", pretty(&turn)));
    // The recorded turn reads back as the client's next request carries it.
    let next = json!({"contents": [{"role": "user", "parts": [{"text": "go"}]}, turn]});
    let parsed = parse::<Gemini>(&next).unwrap();
    assert_eq!(
        Gemini::turn_messages(&turn).last(),
        parsed.history.messages().last()
    );
}

#[test]
fn calls_without_ids_are_named_as_the_client_sees_them() {
    let (text, turn) = splice_stream(&[vec![chunk(
        json!([{"functionCall": {"name": "read_file", "args": {"path": "a.rs"}}}]),
        Some("STOP"),
        Value::Null,
    )]]);
    let id = turn["parts"][0]["functionCall"]["id"].as_str().unwrap();
    assert!(id.starts_with("read_file_ctxproxy"), "{id}");
    assert!(text.contains(id), "{text}");
    let spliced = Gemini::splice(&[reply(
        json!([{"functionCall": {"name": "read_file", "args": {}}}]),
        Value::Null,
    )]);
    let other = spliced["candidates"][0]["content"]["parts"][0]["functionCall"]["id"]
        .as_str()
        .unwrap();
    assert!(
        other.starts_with("read_file_ctxproxy") && other != id,
        "{other}"
    );
}

#[test]
fn a_stream_without_a_finish_reason_has_not_ended() {
    let mut s = Gemini::splicer(&json!({}));
    s.event(sse::Event {
        event: String::new(),
        data: chunk(json!([{"text": "Hal"}]), None, Value::Null).to_string(),
    });
    assert!(!s.round_ended());
    let error = s.event(sse::Event {
        event: String::new(),
        data: json!({"error": {"code": 429, "message": "quota", "status": "RESOURCE_EXHAUSTED"}})
            .to_string(),
    });
    assert!(s.failed());
    assert!(String::from_utf8(error)
        .unwrap()
        .starts_with("data: {\"error\""));
}

#[test]
fn a_signature_on_text_goes_back_on_that_text() {
    let kept = [(
        1,
        json!({"role": "model", "parts": [{"text": "Done."}, {"text": "", "thoughtSignature": "c2ln"}]}),
    )];
    let mut content = json!({"role": "model", "parts": [{"text": "Done.\n"}]});
    Signatures::of(&kept).restore(&mut content);
    assert_eq!(content["parts"][0]["thoughtSignature"], "c2ln");
    // A part of nothing but a signature is no text of the history.
    let only = json!({"role": "model", "parts": [{"text": "Done."}, {"thoughtSignature": "c2ln"}]});
    assert_eq!(
        to_messages(&only, "contents[1]").unwrap()[0].content,
        "Done."
    );
}

#[test]
fn a_blocked_prompt_ends_the_stream_with_its_feedback() {
    let mut s = Gemini::splicer(&json!({}));
    let blocked = json!({"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 9}});
    let out = s.event(sse::Event {
        event: String::new(),
        data: blocked.to_string(),
    });
    assert!(String::from_utf8(out)
        .unwrap()
        .contains("\"blockReason\":\"SAFETY\""));
    assert!(s.round_ended());
    s.end_round();
    let last = String::from_utf8(s.finish()).unwrap();
    assert!(last.contains("\"promptTokenCount\":9"), "{last}");
}

//! The context tools' runner: names and arguments read (errors naming the field),
//! answers rendered, calls run against a store, and `ctx/callContextTool`'s
//! answers and errors against the text the proxy gives a model.

use serde_json::json;

use super::*;
use crate::from_json;

fn service() -> (tempfile::TempDir, Service) {
    let dir = tempfile::tempdir().expect("temp dir");
    let service =
        Service::open(dir.path().join("store.db"), Default::default(), None).expect("store");
    (dir, service)
}

#[test]
fn an_unknown_name_is_an_error_not_a_search() {
    for name in ["shell", "", "context_searches", "Context_Search"] {
        let e = ContextToolCall::read_text(name, r#"{"query": "cargo"}"#).unwrap_err();
        assert!(
            matches!(&e, ContextToolError::UnknownTool(u) if u.0 == name),
            "{name}: {e}"
        );
        assert_eq!(e.code(), -32602);
    }
}

#[test]
fn bad_arguments_are_errors_naming_the_field() {
    let cases = [
        ("context_retrieve", "{}", "context_retrieve failed: arguments: missing field `ids`"),
        ("context_retrieve", "", "context_retrieve failed: arguments: missing field `ids`"),
        (
            "context_retrieve",
            r#"{"ids": "x1"}"#,
            "context_retrieve failed: arguments: ids: invalid type: string \"x1\", expected a sequence",
        ),
        (
            "context_retrieve",
            r#"{"ids": ["x1"], "lines": [1]}"#,
            "context_retrieve failed: arguments: lines: invalid length 1, expected an array of length 2",
        ),
        (
            "context_retrieve",
            r#"{"ids": ["x1"], "max_tokens": 50}"#,
            "context_retrieve failed: arguments: unknown field `max_tokens`, did you mean `maxTokens`?",
        ),
        (
            "context_search",
            r#"{"query": 3}"#,
            "context_search failed: arguments: query: invalid type: integer `3`, expected a string",
        ),
        (
            "context_search",
            r#"{"query": "cargo", "limit": -1}"#,
            "context_search failed: arguments: limit: invalid value: integer `-1`, expected u32",
        ),
    ];
    for (name, arguments, expected) in cases {
        let e = ContextToolCall::read_text(name, arguments).unwrap_err();
        assert!(
            matches!(e, ContextToolError::Arguments { .. }),
            "{name} {arguments}"
        );
        assert_eq!(e.to_string(), expected, "{name} {arguments}");
        assert_eq!(e.code(), -32602);
    }
    let e = ContextToolCall::read_text("context_search", "{\"query\": ").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("context_search failed: arguments: not JSON: "),
        "{e}"
    );
}

#[test]
fn arguments_read_as_the_definitions_name_them() {
    let call = ContextToolCall::read(
        "context_retrieve",
        json!({"ids": ["x1", "b3:ff00ff00"], "format": "summary", "lines": [2, 9], "grep": "err", "maxTokens": 300}),
    )
    .expect("retrieve");
    assert_eq!(
        call,
        ContextToolCall::Retrieve(RetrieveArgs {
            ids: vec!["x1".into(), "b3:ff00ff00".into()],
            format: Some(RetrieveFormat::Summary),
            lines: Some([2, 9]),
            grep: Some("err".into()),
            max_tokens: Some(300),
        })
    );
    // Every property a definition offers is one the arguments take, and a
    // required one is one they cannot do without.
    for tool in ContextTool::ALL {
        let parameters = &tool.definition()["function"]["parameters"];
        let unknown = ContextToolCall::read(tool.name(), json!({"zzz": 1})).unwrap_err();
        for (property, _) in parameters["properties"].as_object().expect("properties") {
            assert!(
                unknown.to_string().contains(&format!("`{property}`")),
                "{tool}: {unknown}"
            );
        }
        for required in parameters["required"].as_array().expect("required") {
            let missing = ContextToolCall::read(tool.name(), json!({})).unwrap_err();
            let field = required.as_str().expect("a name");
            assert!(missing
                .to_string()
                .ends_with(&format!("missing field `{field}`")));
        }
    }
}

#[test]
fn answers_render_as_the_model_reads_them() {
    let retrieved: RetrieveResult = from_json::parse(json!({"items": [
        {"id": "x2", "kind": "exchange", "format": "summary", "tokens": 12, "truncated": false,
         "text": "asked for tests", "at": null, "outcome": "completed"},
        {"id": "b3:ff", "error": {"code": -32002, "message": "no blob b3:ff"}},
    ]}))
    .expect("a result");
    assert_eq!(
        render_retrieve(&retrieved),
        "## x2 (summary, 12 tokens)\nasked for tests\n\n## b3:ff: error -32002: no blob b3:ff"
    );
    assert_eq!(
        render_retrieve(&RetrieveResult { items: Vec::new() }),
        "No items."
    );
    let found: SearchResult = from_json::parse(json!({"hits": [
        {"id": "x3", "sessionId": "s-1", "header": "ran pytest", "snippet": "…9 passed in 0.2s…", "score": 1.0},
        {"id": "x1", "sessionId": "s-1", "header": "asked", "snippet": "", "score": 0.5},
    ]}))
    .expect("a result");
    assert_eq!(
        render_search(&found),
        "x3 [s-1] ran pytest\n  …9 passed in 0.2s…\nx1 [s-1] asked"
    );
    assert_eq!(
        render_search(&SearchResult { hits: Vec::new() }),
        "No matches."
    );
}

#[tokio::test]
async fn a_call_runs_in_the_session_and_fails_as_text() {
    let (_dir, service) = service();
    let session = service
        .open_session(from_json::parse(json!({"title": "tools"})).expect("params"))
        .await
        .expect("open")
        .session_id;
    service
        .append(
            from_json::parse(json!({"sessionId": session, "messages": [
                {"role": "user", "content": "Why does cargo build fail?"},
                {"role": "assistant", "content": "A missing semicolon in src/lib.rs."},
            ]}))
            .expect("params"),
        )
        .await
        .expect("append");
    let answer = |name: &'static str, arguments: &'static str| {
        let (service, session) = (&service, session.clone());
        async move { service.answer_context_call(&session, name, arguments).await }
    };
    assert_eq!(
        answer("context_retrieve", r#"{"ids": ["x1.1", "x9"]}"#).await,
        "## x1.1 (full, 6 tokens)\nWhy does cargo build fail?\n\n## x9: error -32002: unknown id `x9`"
    );
    assert!(answer("context_search", r#"{"query": "semicolon"}"#)
        .await
        .starts_with(&format!("x1 [{session}] ")));
    assert_eq!(
        answer("shell", "{}").await,
        "unknown tool `shell`: the context tools are context_retrieve and context_search"
    );
    // `ctx/callContextTool` answers with the same text, or fails with it.
    let called = service
        .call_context_tool(
            from_json::parse(json!({"sessionId": session, "name": "context_retrieve",
                                    "arguments": {"ids": ["x1.1", "x9"]}}))
            .expect("params"),
        )
        .await
        .expect("an answer");
    assert_eq!(
        called.text,
        answer("context_retrieve", r#"{"ids": ["x1.1", "x9"]}"#).await
    );
    let failed = service
        .call_context_tool(
            from_json::parse(json!({"sessionId": "s-nope00", "name": "context_search",
                                    "arguments": {"query": "cargo"}}))
            .expect("params"),
        )
        .await
        .unwrap_err();
    assert_eq!(failed.code(), -32001);
    assert_eq!(
        failed.to_string(),
        service
            .answer_context_call("s-nope00", "context_search", r#"{"query": "cargo"}"#)
            .await
    );
}

//! Drives `Service` directly, without a transport: open a session, append
//! an exchange with a bulky tool result, assemble, retrieve. The typed
//! replies are snapshotted as the wire carries them, so a change to a reply
//! type's fields or to what the service puts in them shows up here.

use ctxproxy::protocol::{to_wire, RetrievedItem};
use ctxproxy::service::Service;
use serde::Serialize;
use serde_json::json;

/// The reply as JSON on the wire, the random session id made stable.
fn wire<T: Serialize>(reply: &T, session: &str) -> String {
    serde_json::to_string_pretty(&to_wire(reply))
        .expect("JSON")
        .replace(session, "s-SESSION")
}

#[tokio::test]
async fn open_append_assemble_retrieve() {
    let dir = tempfile::tempdir().expect("temp dir");
    let service =
        Service::open(dir.path().join("store.db"), Default::default(), None).expect("store");
    let opened = service
        .open_session(json!({"title": "typed replies", "workspace": "/w"}))
        .await
        .expect("open");
    let session = opened.session_id.clone();

    let listing: String = (1..=400)
        .map(|i| format!("src/module_{i}.rs: fn handler_{i}() -> Result<(), Error>\n"))
        .collect();
    let appended = service
        .append(json!({"sessionId": session, "messages": [
            {"role": "user", "content": "Which handlers return a Result?", "at": "2026-01-02T03:04:05Z"},
            {"role": "assistant", "content": "", "toolCalls": [
                {"id": "c1", "name": "grep", "arguments": {"pattern": "fn handler_"}}]},
            {"role": "tool", "toolCallId": "c1", "name": "grep", "content": listing},
            {"role": "assistant", "content": "All 400 handlers return Result<(), Error>."},
        ]}))
        .await
        .expect("append");
    assert_eq!(
        appended.blobs.len(),
        1,
        "the grep output is stored as a blob"
    );

    let assembled = service
        .assemble(json!({
            "sessionId": session,
            "input": {"role": "user", "content": "And handler_7?"},
            "format": "text",
            "budget": 2000,
        }))
        .await
        .expect("assemble");
    assert_eq!(
        assembled.tokens.layers.values().sum::<u32>(),
        assembled.layers.iter().map(|l| l.tokens).sum::<u32>(),
        "the per-layer totals are the layers' tokens"
    );

    let blob = appended.blobs[0].id.clone();
    let retrieved = service
        .retrieve(json!({
            "sessionId": session,
            "ids": ["x1", "x1.3", blob, "x9"],
            "lines": [7, 7],
        }))
        .await
        .expect("retrieve");
    assert!(
        matches!(&retrieved.items[3], RetrievedItem::Failed(f) if f.error.code == -32002),
        "an unknown id is answered in place"
    );

    let snapshot = [
        ("ctx/openSession", wire(&opened, &session)),
        ("ctx/append", wire(&appended, &session)),
        ("ctx/assemble", wire(&assembled, &session)),
        ("ctx/retrieve", wire(&retrieved, &session)),
    ]
    .map(|(method, reply)| format!("## {method}\n{reply}"))
    .join("\n\n");
    insta::assert_snapshot!(snapshot);
}

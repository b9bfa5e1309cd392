//! Drives `Service` directly, without a transport: open a session, append
//! an exchange with a bulky tool result, assemble, retrieve. The typed
//! replies are snapshotted as the wire carries them, so a change to a reply
//! type's fields or to what the service puts in them shows up here.

use ctxproxy_service::api::{to_wire, OpenSessionParams, RetrievedItem};
use ctxproxy_service::from_json;
use ctxproxy_service::service::Service;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

/// Params as a client sends them, read as the LSP server reads them.
fn params<P: DeserializeOwned>(json: Value) -> P {
    from_json::parse(json).expect("params")
}

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
        .open_session(params(json!({"title": "typed replies", "workspace": "/w"})))
        .await
        .expect("open");
    let session = opened.session_id.clone();

    let listing: String = (1..=400)
        .map(|i| format!("src/module_{i}.rs: fn handler_{i}() -> Result<(), Error>\n"))
        .collect();
    let appended = service
        .append(params(json!({"sessionId": session, "messages": [
            {"role": "user", "content": "Which handlers return a Result?", "at": "2026-01-02T03:04:05Z"},
            {"role": "assistant", "content": "", "toolCalls": [
                {"id": "c1", "name": "grep", "arguments": {"pattern": "fn handler_"}}]},
            {"role": "tool", "toolCallId": "c1", "name": "grep", "content": listing},
            {"role": "assistant", "content": "All 400 handlers return Result<(), Error>."},
        ]})))
        .await
        .expect("append");
    assert_eq!(
        appended.blobs.len(),
        1,
        "the grep output is stored as a blob"
    );

    let assembled = service
        .assemble(params(json!({
            "sessionId": session,
            "input": {"role": "user", "content": "And handler_7?"},
            "format": "text",
            "budget": 2000,
        })))
        .await
        .expect("assemble");
    assert_eq!(
        assembled.tokens.layers.values().sum::<u32>(),
        assembled.layers.iter().map(|l| l.tokens).sum::<u32>(),
        "the per-layer totals are the layers' tokens"
    );

    // Explain shows what assemble answered, in every format: both are the
    // one conversion of the same record.
    for format in ["openai", "anthropic", "responses", "gemini", "text"] {
        let sent = service
            .assemble(params(json!({
                "sessionId": session,
                "input": {"role": "user", "content": "And handler_7?"},
                "format": format,
                "budget": 2000,
            })))
            .await
            .expect("assemble");
        let explained = service
            .explain(params(
                json!({"sessionId": session, "promptId": sent.prompt_id}),
            ))
            .await
            .expect("explain");
        assert_eq!(to_wire(&explained.prompt), to_wire(&sent), "{format}");
    }

    let blob = appended.blobs[0].id.clone();
    let retrieved = service
        .retrieve(params(json!({
            "sessionId": session,
            "ids": ["x1", "x1.3", blob, "x9"],
            "lines": [7, 7],
        })))
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

/// A call tree (recursive calls): a root, a child at depth 1 and its child at
/// depth 2 = maxDepth. Snapshotted: the child's layered prompt (L0 with its
/// lineage) and state envelope, the one-shot prompt with its reason, and
/// the listing with depths and parents. Token figures that depend on the
/// random session ids (L0 names the caller) are left out; L0's cap is
/// raised so that which lines fit does not depend on them either.
#[tokio::test]
async fn a_call_tree_down_to_the_one_shot_prompt() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = ctxproxy_core::config::Config::default();
    config.layers.current_context_max = Some(300);
    let service = Service::open(dir.path().join("store.db"), config, None).expect("store");
    let root = service
        .open_session(params(json!({"title": "root"})))
        .await
        .expect("open")
        .session_id;
    service
        .append(params(json!({"sessionId": root, "messages": [
            {"role": "user", "content": "Which functions of textwrap.py raise ValueError?"},
            {"role": "assistant", "content": "Asking a child call about TextWrapper."},
        ]})))
        .await
        .expect("append");
    let child = |parent: &str, query: &str, context: String| {
        params::<OpenSessionParams>(json!({"title": query, "parent": {"sessionId": parent},
               "child": {"query": query, "context": context}}))
    };
    let c1 = service
        .open_session(child(
            &root,
            "Which methods of TextWrapper raise ValueError?",
            "class TextWrapper:\n    def _wrap_chunks(self, chunks): ...\n".into(),
        ))
        .await
        .expect("child")
        .session_id;
    let context: String = (1..=300)
        .map(|i| format!("{i:>4}: if self.width <= 0: raise ValueError(\"invalid width\")\n"))
        .collect();
    let c1a = service
        .open_session(child(&c1, "When is the width invalid?", context))
        .await
        .expect("grandchild")
        .session_id;
    let layered = service
        .assemble(params(
            json!({"sessionId": c1, "format": "text", "budget": 3000}),
        ))
        .await
        .expect("assemble c1");
    let one_shot = service
        .assemble(params(
            json!({"sessionId": c1a, "format": "text", "budget": 1000,
                         "system": "Answer in one line."}),
        ))
        .await
        .expect("assemble c1a");
    let mut state = layered.state.clone().expect("a state");
    state.call.budget.used = 0;
    let listed = service
        .list_sessions(params(json!({})))
        .await
        .expect("list")
        .sessions
        .into_iter()
        .map(|s| {
            (
                s.title,
                s.depth,
                s.parent.map(|p| (p.kind.as_str(), p.at_exchange)),
            )
        })
        .collect::<std::collections::BTreeSet<_>>();
    let stable = |text: String| {
        text.replace(&root, "s-ROOT")
            .replace(&c1a, "s-C1A")
            .replace(&c1, "s-C1")
    };
    let pretty = |v: serde_json::Value| serde_json::to_string_pretty(&v).expect("JSON");
    let snapshot = [
        (
            "layered (c1): shape, text, state (budget.used left out)",
            stable(pretty(json!({
                "shape": layered.shape,
                "text": layered.prompt.text,
                "state": to_wire(&state),
            }))),
        ),
        (
            "oneShot (c1a)",
            pretty(json!({
                "shape": one_shot.shape,
                "reason": one_shot.reason,
                "tokens": to_wire(&one_shot.tokens),
                "text": one_shot.prompt.text,
            })),
        ),
        ("listSessions", format!("{listed:#?}")),
    ]
    .map(|(what, reply)| format!("## {what}\n{reply}"))
    .join("\n\n");
    insta::assert_snapshot!(snapshot);
}

/// Prompt records written before records had a version are the wire
/// `AssembleResult` itself; they read back as written, field for field.
/// The files are records the previous code wrote (`ctxproxy replay` of
/// `mcts-cubic.jsonl` at a budget of 3,000, and of `rlm-recursive.jsonl`,
/// taken from the store): a layered prompt with trims, a recall hit and
/// superseded ranges, and a one-shot prompt.
#[test]
fn unversioned_prompt_records_still_read() {
    use ctxproxy_core::ids::PromptId;
    use ctxproxy_service::assemble::{read_record, recorded_shape};
    use ctxproxy_store::PromptRecord;

    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    for name in [
        "record-unversioned-layered.json",
        "record-unversioned-one-shot.json",
    ] {
        let json = std::fs::read_to_string(data.join(name)).expect(name);
        let record = PromptRecord {
            id: PromptId(1),
            created_at: "2026-11-28T00:00:00Z".into(),
            total_tokens: 0,
            record: json.clone(),
        };
        let read = read_record(&record, &data.join("store.db")).expect(name);
        let written: Value = serde_json::from_str(&json).expect(name);
        assert_eq!(to_wire(&read), written, "{name}");
        // The shape a restart reads alone (`recorded_shape`) is the one
        // the whole record says.
        assert_eq!(recorded_shape(&record), Some(read.shape), "{name}");
    }
}

/// `forget --project`: the project's sessions and their forks go, forks
/// first, with the tool outputs only they showed; an output another
/// project's session showed too stays.
#[tokio::test]
async fn forget_removes_a_project_its_forks_and_the_outputs_only_they_showed() {
    use ctxproxy_service::service::Forget;

    let dir = tempfile::tempdir().expect("temp dir");
    let service =
        Service::open(dir.path().join("store.db"), Default::default(), None).expect("store");
    let open = |json: Value| service.open_session(params(json));
    let append = |session: &str, outputs: &[&str]| {
        let mut messages = Vec::new();
        for (i, out) in outputs.iter().enumerate() {
            messages.push(json!({"role": "user", "content": format!("run step {i}")}));
            messages.push(json!({"role": "assistant", "content": "", "toolCalls": [
                {"id": format!("c{i}"), "name": "bash", "arguments": {"command": "make"}}]}));
            messages.push(
                json!({"role": "tool", "toolCallId": format!("c{i}"), "name": "bash",
                                 "content": out.repeat(40)}),
            );
            messages.push(json!({"role": "assistant", "content": "done"}));
        }
        service.append(params(json!({"sessionId": session, "messages": messages})))
    };
    let shared = "make: the shared build log line\n";
    let root = open(json!({"title": "root", "workspace": "/p"}))
        .await
        .expect("open")
        .session_id;
    append(&root, &[shared, "only the project showed this line\n"])
        .await
        .expect("append");
    let fork = open(json!({"title": "fork", "parent": {"sessionId": root}}))
        .await
        .expect("fork")
        .session_id;
    let other = open(json!({"title": "other", "workspace": "/q"}))
        .await
        .expect("open")
        .session_id;
    append(&other, &[shared]).await.expect("append");

    let removed = service
        .forget(Forget::Project {
            tenant: None,
            project: "/p".into(),
        })
        .await
        .expect("forget");
    assert_eq!(removed, [fork, root]);
    let stats = service.stats(params(json!({}))).await.expect("stats");
    assert_eq!((stats.sessions, stats.blobs), (1, 1), "{stats:?}");
}

/// Project memory's standing section is kept from one prompt to the next
/// and made again once what it shows changes: a header rewritten, an
/// exchange stored before the session's first one.
#[tokio::test]
async fn the_standing_section_follows_the_project() {
    let dir = tempfile::tempdir().expect("temp dir");
    let service =
        Service::open(dir.path().join("store.db"), Default::default(), None).expect("store");
    let open = |title: &str| {
        service.open_session(params(json!({"title": title, "workspace": "/project"})))
    };
    let earlier = open("earlier").await.expect("open").session_id;
    let ask = |question: &str| {
        json!({"sessionId": earlier, "messages": [
            {"role": "user", "content": question},
            {"role": "assistant", "content": "The linter's config is in pyproject.toml."},
        ]})
    };
    service
        .append(params(ask("Where is the linter configured?")))
        .await
        .expect("append");
    let new = open("new").await.expect("open").session_id;
    let prompt = || async {
        let assembled = service
            .assemble(params(json!({
                "sessionId": new,
                "input": {"role": "user", "content": "Which linter do we use?"},
                "format": "text",
            })))
            .await
            .expect("assemble");
        serde_json::to_string(&to_wire(&assembled)).expect("JSON")
    };
    assert!(prompt().await.contains(&format!("{earlier}/x1")));

    service
        .housekeeping(params(json!({
            "sessionId": earlier, "exchangeId": "x1", "header": "Linter settings moved to ruff.toml",
        })))
        .await
        .expect("housekeeping");
    assert!(prompt()
        .await
        .contains("Linter settings moved to ruff.toml"));

    service
        .append(params(ask("Which rules does the linter skip?")))
        .await
        .expect("append");
    assert!(prompt().await.contains(&format!("{earlier}/x2")));
}

/// A new session of a project starts where the project's last one ended:
/// its prompt holds the earlier session's newest exchanges as they were,
/// newest first, in what its own history leaves of the budget; as that
/// history grows, the oldest of them leave from the section's end, and what
/// stays of it is unchanged. `projectRecentTokens: 0` turns it off.
#[tokio::test]
async fn a_new_session_starts_where_the_projects_last_one_ended() {
    let dir = tempfile::tempdir().expect("temp dir");
    let open_service =
        |config| Service::open(dir.path().join("store.db"), config, None).expect("store");
    let service = open_service(Default::default());
    async fn open(service: &Service, title: &str) -> String {
        let opened = service.open_session(params(json!({"title": title, "workspace": "/project"})));
        opened.await.expect("open").session_id
    }
    let earlier = open(&service, "earlier").await;
    for n in 1..=3 {
        service
            .append(params(json!({"sessionId": earlier, "messages": [
                {"role": "user", "content": format!("What is limit {n}?")},
                {"role": "assistant", "content": format!(
                    "Limit {n} is {}. {}", n * 1111, "The reasons are in the notes. ".repeat(30)
                )},
            ]})))
            .await
            .expect("append");
    }
    let new = open(&service, "new").await;
    /// The ids the layer shows, in order, and the prompt as JSON.
    async fn recent(service: &Service, session: &str, budget: u32) -> (Vec<String>, String) {
        let assembled = service
            .assemble(params(json!({
                "sessionId": session,
                "input": {"role": "user", "content": "And the next one?"},
                "budget": budget,
            })))
            .await
            .expect("assemble");
        let layer = assembled
            .layers
            .iter()
            .find(|l| l.layer == ctxproxy_core::packer::Layer::ProjectRecent)
            .expect("the layer is reported");
        let ids = layer.items.iter().map(|i| i.id.clone()).collect();
        (
            ids,
            serde_json::to_string(&to_wire(&assembled)).expect("JSON"),
        )
    }
    let (ids, prompt) = recent(&service, &new, 16_000).await;
    let id = |n: u32| format!("{earlier}/x{n}");
    assert_eq!(ids, [id(3), id(2), id(1)]);
    assert!(
        prompt.contains(&format!(
            "{}\\nperson: What is limit 3?\\nassistant: Limit 3 is 3333. The",
            id(3)
        )),
        "{prompt}"
    );
    // A smaller budget: the oldest leave first.
    let (fewer, _) = recent(&service, &new, 450).await;
    assert!(fewer.len() < 3 && ids.starts_with(&fewer), "{fewer:?}");
    drop(service);

    let mut config = ctxproxy_core::config::Config::default();
    config.layers.project_recent_tokens = Some(0);
    let off = open_service(config);
    let (ids, _) = recent(&off, &new, 16_000).await;
    assert!(ids.is_empty(), "{ids:?}");
}

/// The store's writer keeps what a prompt read for the next one
/// (`store::kept`), so a session's view must be read again after any
/// write in between: this process's own append, or another process's.
#[tokio::test]
async fn a_prompt_shows_what_was_written_since_the_previous_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("store.db");
    let service = Service::open(path.clone(), Default::default(), None).expect("store");
    let session = service
        .open_session(params(json!({"title": "kept between prompts"})))
        .await
        .expect("open")
        .session_id;
    let exchange = |i: u32| {
        let answer = "The parser now reads each token once and keeps the spans. ".repeat(8);
        vec![
            json!({"role": "user", "content": format!("What does step {i} change?")}),
            json!({"role": "assistant", "content": answer}),
        ]
    };
    async fn append(service: &Service, session: &str, messages: Vec<Value>) {
        service
            .append(params(json!({"sessionId": session, "messages": messages})))
            .await
            .expect("append");
    }
    async fn prompt(service: &Service, session: &str, question: &str) -> String {
        let assembled = service
            .assemble(params(json!({
                "sessionId": session,
                "input": {"role": "user", "content": question},
                "budget": 4000,
                "format": "text",
            })))
            .await
            .expect("assemble");
        serde_json::to_string(&to_wire(&assembled)).expect("JSON")
    }
    // Long enough for a layered prompt, whose view is the same window of
    // newest exchanges from one prompt to the next.
    append(&service, &session, (1..=150).flat_map(exchange).collect()).await;
    assert!(prompt(&service, &session, "Which step was last?")
        .await
        .contains("step 150"));
    assert!(prompt(&service, &session, "Which step came first?")
        .await
        .contains("step 150"));

    let other = Service::open(path, Default::default(), None).expect("another process's store");
    append(&other, &session, exchange(151)).await;
    assert!(prompt(&service, &session, "Which step was last?")
        .await
        .contains("step 151"));

    append(&service, &session, exchange(152)).await;
    assert!(prompt(&service, &session, "Which step was last?")
        .await
        .contains("step 152"));
}

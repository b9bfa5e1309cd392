//! `ctxproxy proxy` as a process, against a scripted upstream on loopback
//! (a small axum server that records every request and answers from a
//! script): the error contract, a context-tool round the client never sees,
//! a client that leaves mid-stream, and keys that never reach the store.
//! The official SDKs drive it from the Python end-to-end tests.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

const KEY: &str = "sk-test-NEVERSTOREME-0123456789abcdef";

/// What the upstream saw, and whether a streamed reply was abandoned.
#[derive(Default)]
struct Seen {
    requests: Vec<(HeaderMap, Value)>,
    abandoned: bool,
}

type Shared = Arc<Mutex<Seen>>;

/// Notes that a streamed reply's body was dropped before its end.
struct Abandoned(Shared, bool);

impl Abandoned {
    fn finished(&mut self) {
        self.1 = true;
    }
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        if !self.1 {
            self.0.lock().unwrap().abandoned = true;
        }
    }
}

fn sse(data: &Value) -> String {
    format!("data: {data}\n\n")
}

fn chunk(delta: Value, finish: Value) -> Value {
    json!({"id": "chatcmpl-up", "object": "chat.completion.chunk", "created": 1, "model": "m",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

/// The script: the last user text says what to do.
async fn upstream(
    State(seen): State<Shared>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    seen.lock().unwrap().requests.push((headers, body.clone()));
    let text = body.to_string();
    let answered = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|m| m["role"] == "tool");
    if text.contains("PLEASE-429") {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", "7")],
            Json(json!({"error": {"message": "slow down", "type": "rate_limit_error"}})),
        )
            .into_response();
    }
    let stream = body["stream"] == true;
    if text.contains("PLEASE-SLOW") {
        // Ten chunks, 300 ms apart: the client leaves after the first.
        let guard = Abandoned(seen.clone(), false);
        let chunks = futures_util::stream::unfold((0, guard), |(i, mut guard)| async move {
            if i == 10 {
                guard.finished();
                return None;
            }
            if i > 0 {
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            let c = sse(&chunk(
                json!({"content": format!("part {i} ")}),
                Value::Null,
            ));
            Some((Ok::<_, std::io::Error>(c), (i + 1, guard)))
        });
        return Response::builder()
            .header("content-type", "text/event-stream")
            .body(Body::from_stream(chunks))
            .unwrap();
    }
    let recall = text.contains("PLEASE-RECALL") && !answered;
    if !stream {
        let message = if recall {
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_ctx", "type": "function",
                   "function": {"name": "context_search", "arguments": "{\"query\": \"tests\"}"}}]})
        } else {
            json!({"role": "assistant", "content": "done"})
        };
        return Json(json!({"id": "chatcmpl-up", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": if recall { "tool_calls" } else { "stop" }}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}}))
        .into_response();
    }
    let mut events = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    if recall {
        events.push(chunk(json!({"content": "Looking back. "}), Value::Null));
        events.push(chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_ctx", "type": "function",
            "function": {"name": "context_search", "arguments": "{\"query\": \"tests\"}"}}]}),
            Value::Null,
        ));
        events.push(chunk(json!({}), json!("tool_calls")));
    } else {
        events.push(chunk(json!({"content": "All "}), Value::Null));
        events.push(chunk(json!({"content": "good."}), Value::Null));
        events.push(chunk(json!({}), json!("stop")));
    }
    events.push(
        json!({"id": "chatcmpl-up", "object": "chat.completion.chunk", "choices": [],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}}),
    );
    let mut text: String = events.iter().map(sse).collect();
    text.push_str("data: [DONE]\n\n");
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from(text))
        .unwrap()
}

async fn start_upstream() -> (String, Shared) {
    let seen = Shared::default();
    let app = Router::new()
        .route("/v1/chat/completions", post(upstream))
        .route(
            "/v1/models",
            axum::routing::get(|headers: HeaderMap| async move {
                let project = headers
                    .get("openai-project")
                    .map(|v| v.to_str().unwrap().to_string());
                (
                    [("x-upstream", "yes")],
                    Json(json!({"object": "list", "project": project})),
                )
            }),
        )
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

struct ProxyProcess {
    child: Child,
    url: String,
    store: PathBuf,
    _dir: tempfile::TempDir,
    stderr: Arc<Mutex<String>>,
}

impl ProxyProcess {
    fn start(upstream: &str) -> ProxyProcess {
        Self::start_in(tempfile::tempdir().unwrap(), upstream, &[])
    }

    /// Starts on the store in `dir` (kept from an earlier process).
    fn start_in(dir: tempfile::TempDir, upstream: &str, extra: &[&str]) -> ProxyProcess {
        let store = dir.path().join("store.db");
        let mut child = Command::new(env!("CARGO_BIN_EXE_ctxproxy"))
            .args(["proxy", "--listen", "127.0.0.1:0", "--store"])
            .arg(&store)
            .args([
                "--openai-upstream",
                upstream,
                "--anthropic-upstream",
                upstream,
            ])
            .args(extra)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let ready = lines.next().unwrap().unwrap();
        let url = ready
            .strip_prefix("ctxproxy proxy listening on ")
            .unwrap_or_else(|| panic!("ready line: {ready}"))
            .to_string();
        let stderr = Arc::new(Mutex::new(String::new()));
        let log = stderr.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                log.lock().unwrap().push_str(&line);
            }
        });
        ProxyProcess {
            child,
            url,
            store,
            _dir: dir,
            stderr,
        }
    }

    fn sessions(&self) -> String {
        let out = Command::new(env!("CARGO_BIN_EXE_ctxproxy"))
            .args(["sessions", "--store"])
            .arg(&self.store)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    }

    fn stats(&self) -> Value {
        let out = Command::new(env!("CARGO_BIN_EXE_ctxproxy"))
            .args(["stats", "--json", "--store"])
            .arg(&self.store)
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Stops the proxy as a service manager would (SIGTERM: a clean exit).
    fn stop(&mut self) {
        Command::new("kill")
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for ProxyProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn json_of(r: reqwest::Response) -> Value {
    serde_json::from_slice(&r.bytes().await.unwrap()).unwrap()
}

fn client() -> reqwest::Client {
    // reqwest is built without a crypto provider (the proxy installs ring).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// The names of the tools an OpenAI-shaped body offers.
fn tool_names(body: &Value) -> Vec<&str> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect()
}

fn chat(messages: Value, stream: bool) -> Value {
    json!({"model": "m", "stream": stream, "messages": messages})
}

async fn post_chat(proxy: &ProxyProcess, session: &str, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{}/v1/chat/completions", proxy.url))
        .header("authorization", format!("Bearer {KEY}"))
        .header("x-ctxproxy-session", session)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_keep_the_contract() {
    let (up, _) = start_upstream().await;
    let proxy = ProxyProcess::start(&up);
    let http = client();
    // Malformed bodies: 400 in each API's shape, naming the field.
    let r = http
        .post(format!("{}/v1/chat/completions", proxy.url))
        .body("{\"messages\": 3}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let body = json_of(r).await;
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert_eq!(body["error"]["param"], "messages");
    let r = http
        .post(format!("{}/messages", proxy.url))
        .body("not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let body = json_of(r).await;
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    // An upstream 429 reaches the client as sent, streamed or not.
    for stream in [false, true] {
        let r = post_chat(
            &proxy,
            "e",
            &chat(json!([{"role": "user", "content": "PLEASE-429"}]), stream),
        )
        .await;
        assert_eq!(r.status(), 429);
        assert_eq!(r.headers()["retry-after"], "7");
        let body = json_of(r).await;
        assert_eq!(body["error"]["message"], "slow down");
    }
    // The retry continued the session the failed request opened: one, empty.
    assert_eq!(proxy.sessions().matches("name:e").count(), 1);
    assert_eq!(proxy.stats()["messages"], 0);
    // The health check.
    let r = http
        .get(format!("{}/healthz", proxy.url))
        .send()
        .await
        .unwrap();
    assert_eq!(json_of(r).await, json!({"ok": true}));

    // An upstream that is down: 502 naming it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let proxy = ProxyProcess::start(&down);
    for stream in [false, true] {
        let r = post_chat(
            &proxy,
            "d",
            &chat(json!([{"role": "user", "content": "hi"}]), stream),
        )
        .await;
        assert_eq!(r.status(), 502);
        let body = json_of(r).await;
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(&down), "{message}");
        assert!(!message.contains(KEY));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_rounds_stay_inside_the_proxy() {
    let (up, seen) = start_upstream().await;
    // Layered from the first prompt: the context tools on every request
    // (a history this short would otherwise be forwarded whole, as the
    // next test shows).
    let proxy = ProxyProcess::start_in(
        tempfile::tempdir().unwrap(),
        &up,
        &["--config", r#"{"wholeHistory": false}"#],
    );
    let history = json!([
        {"role": "system", "content": "You help."},
        {"role": "user", "content": "run the tests"},
        {"role": "assistant", "content": "All good."},
        {"role": "user", "content": "PLEASE-RECALL what ran"}
    ]);
    // Whole: the client gets the final answer only.
    let r = post_chat(&proxy, "w", &chat(history.clone(), false)).await;
    assert_eq!(r.status(), 200);
    let session = r.headers()["x-ctxproxy-session"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(session.starts_with("s-"));
    let body = json_of(r).await;
    assert_eq!(
        body["choices"][0]["message"],
        json!({"role": "assistant", "content": "done"})
    );
    assert_eq!(body["usage"]["total_tokens"], 24);
    // Streamed: text before and after the internal round, in one message.
    let r = post_chat(&proxy, "s", &chat(history, true)).await;
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    assert!(!text.contains("context_search"), "{text}");
    assert!(text.contains("Looking back. ") && text.contains("good."));
    assert_eq!(text.matches("[DONE]").count(), 1);
    assert_eq!(text.matches("finish_reason\":\"stop").count(), 1);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.requests.len(), 4);
    for (i, (headers, body)) in seen.requests.iter().enumerate() {
        // Every request carries the client's key and the context tools.
        assert_eq!(headers["authorization"], format!("Bearer {KEY}"));
        assert_eq!(tool_names(body), ["context_retrieve", "context_search"]);
        // The second of each pair is the internal round: it answers the call.
        let last = body["messages"].as_array().unwrap().last().unwrap();
        assert_eq!(last["role"] == "tool", i % 2 == 1, "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_history_is_forwarded_whole_until_it_needs_the_layers() {
    let (up, seen) = start_upstream().await;
    let proxy = ProxyProcess::start(&up);
    let short = json!([
        {"role": "system", "content": "You help."},
        {"role": "user", "content": "what is in notes.txt?"},
        {"role": "assistant", "content": "Reading it.", "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "read_file", "arguments": "{\"path\": \"notes.txt\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "buy milk"},
        {"role": "assistant", "content": "It says: buy milk."},
        {"role": "user", "content": "and now the log?"}
    ]);
    let r = post_chat(&proxy, "whole", &chat(short.clone(), false)).await;
    assert_eq!(r.status(), 200);
    // A log too long to show whole: its digest leaves the rest in a blob.
    let log: String = (0..3_000)
        .map(|i| format!("2026-11-24 step {i} finished in {} ms\n", i % 97))
        .collect();
    let mut long = short.as_array().unwrap().clone();
    long.extend([
        json!({"role": "assistant", "content": "", "tool_calls": [{"id": "c2", "type": "function",
            "function": {"name": "read_file", "arguments": "{\"path\": \"run.log\"}"}}]}),
        json!({"role": "tool", "tool_call_id": "c2", "content": log}),
        json!({"role": "assistant", "content": "3,000 steps."}),
        json!({"role": "user", "content": "the slowest?"}),
    ]);
    let r = post_chat(&proxy, "whole", &chat(json!(long), false)).await;
    assert_eq!(r.status(), 200);
    let seen = seen.lock().unwrap();
    let [first, second] = &seen.requests[..] else {
        panic!("two model calls expected, got {}", seen.requests.len());
    };
    // The whole history as the client sent it, and no tools: the client
    // sent none, and nothing is left to retrieve.
    let (_, first) = first;
    assert!(first.get("tools").is_none(), "{first}");
    let contents: Vec<&str> = first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().trim_end())
        .collect();
    let sent: Vec<&str> = short
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, sent);
    // Once a tool output lives in its blob, the layers and the context tools.
    let (_, second) = second;
    assert_eq!(tool_names(second), ["context_retrieve", "context_search"]);
    assert!(
        !second.to_string().contains("step 2999 finished"),
        "the log is digested"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_mid_stream_records_nothing() {
    let (up, seen) = start_upstream().await;
    let mut proxy = ProxyProcess::start(&up);
    let r = post_chat(
        &proxy,
        "gone",
        &chat(json!([{"role": "user", "content": "PLEASE-SLOW"}]), true),
    )
    .await;
    assert_eq!(r.status(), 200);
    let mut stream = r.bytes_stream();
    use futures_util::StreamExt;
    let first = stream.next().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("part 0"));
    drop(stream);
    // The proxy drops the upstream request when it notices.
    for _ in 0..300 {
        if seen.lock().unwrap().abandoned {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        seen.lock().unwrap().abandoned,
        "the upstream stream was not cancelled"
    );
    let stats = proxy.stats();
    assert_eq!(stats["messages"], 0, "{stats}");
    // A whole exchange is recorded; the key is nowhere.
    let r = post_chat(
        &proxy,
        "kept",
        &chat(json!([{"role": "user", "content": "hello"}]), true),
    )
    .await;
    assert!(r.text().await.unwrap().contains("good."));
    proxy.stop();
    assert_eq!(proxy.stats()["messages"], 2);
    assert_no_key(proxy.store.parent().unwrap());
    assert!(!proxy.stderr.lock().unwrap().contains(KEY));
}

fn assert_no_key(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            assert_no_key(&path);
        } else {
            let bytes = std::fs::read(&path).unwrap();
            let found = bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes());
            assert!(!found, "{} holds the key", path.display());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_continue_across_restarts_and_fork_where_history_diverges() {
    let (up, _) = start_upstream().await;
    let mut proxy = ProxyProcess::start(&up);
    let secret = "password=hunter2-Xy9$kq";
    let mut history = vec![json!({"role": "user", "content": format!("connect with {secret}")})];
    let mut ids = Vec::new();
    for turn in 0..2 {
        let r = post_chat(&proxy, "r", &chat(json!(history), false)).await;
        ids.push(
            r.headers()["x-ctxproxy-session"]
                .to_str()
                .unwrap()
                .to_string(),
        );
        let body = json_of(r).await;
        history.push(body["choices"][0]["message"].clone());
        history.push(json!({"role": "user", "content": format!("step {turn}")}));
    }
    assert_eq!(ids[0], ids[1]);
    // After a restart the stored history (its secret masked) is recognised.
    proxy.stop();
    let dir = std::mem::replace(&mut proxy._dir, tempfile::tempdir().unwrap());
    drop(proxy);
    let proxy = ProxyProcess::start_in(dir, &up, &[]);
    let r = post_chat(&proxy, "r", &chat(json!(history), false)).await;
    assert_eq!(r.headers()["x-ctxproxy-session"].to_str().unwrap(), ids[0]);
    assert_eq!(r.headers()["x-ctxproxy-prompt"], "p3");
    // An edited history forks at the last whole exchange before the edit.
    let mut edited = history.clone();
    edited[2] = json!({"role": "user", "content": "a different second question"});
    let r = post_chat(&proxy, "r", &chat(json!(edited), false)).await;
    let fork = r.headers()["x-ctxproxy-session"]
        .to_str()
        .unwrap()
        .to_string();
    assert_ne!(fork, ids[0]);
    let listing = proxy.sessions();
    assert_eq!(listing.matches("name:r").count(), 2, "{listing}");
    let stats = proxy.stats();
    // Each has x1 (the fork's a copy), x2 and x3.
    assert_eq!(stats["exchanges"], 3 + 3, "{stats}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_paths_pass_through_and_a_token_is_required_when_set() {
    let (up, _) = start_upstream().await;
    let proxy = ProxyProcess::start_in(tempfile::tempdir().unwrap(), &up, &["--token", "T0k"]);
    let http = client();
    let models = |token: Option<&str>| {
        let mut r = http
            .get(format!("{}/v1/models", proxy.url))
            .header("openai-project", "proj_1");
        if let Some(t) = token {
            r = r.header("x-ctxproxy-token", t);
        }
        r.send()
    };
    let r = models(None).await.unwrap();
    assert_eq!(r.status(), 401);
    let r = models(Some("wrong")).await.unwrap();
    assert_eq!(r.status(), 401);
    let r = models(Some("T0k")).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-upstream"], "yes");
    // Headers cross by denylist: the project header reaches the upstream.
    assert_eq!(
        json_of(r).await,
        json!({"object": "list", "project": "proj_1"})
    );
    let r = http
        .post(format!("{}/v1/chat/completions", proxy.url))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(json_of(r).await["error"]["code"], "invalid_ctxproxy_token");
}

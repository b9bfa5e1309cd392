//! `ctxproxy replay FILE --via-proxy`: measures the front door itself. A
//! client sends every model call of a recorded session as an assistant
//! would (the whole history each time, OpenAI shape) to an in-process proxy
//! whose upstream, on loopback, answers each call with the recorded
//! assistant message. Per call: the tokens the client sent against those
//! the upstream received, and the time the proxy added (the client's wait
//! less the upstream's own time), with the store's share (`server-timing`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use ctxproxy_core::tokens::{self, Encoding};
use serde_json::{json, Value};

use super::{histories::Histories, router, session::Sessions, upstream, Proxy};
use crate::service::Service;
use crate::timing::percentile;
use ctxproxy_core::message::{Message, Role};
use ctxproxy_core::recorded::RecordedExchange;

/// One model call of the replay.
pub struct Call {
    pub exchange: u32,
    pub sent_tokens: u32,
    /// The request body the client sent.
    pub sent_bytes: usize,
    pub forwarded_tokens: u32,
    /// The client's wait less the upstream's own time.
    pub added: Duration,
    /// Of `added`, the store's work: ingest, assembly, recording the reply.
    pub store: Duration,
}

impl Call {
    /// The time the proxy added less the store's work: the proxy's own.
    pub fn beyond_store(&self) -> Duration {
        self.added.saturating_sub(self.store)
    }
}

/// The scripted upstream: the recorded replies, and what it received.
#[derive(Default)]
struct Script {
    replies: VecDeque<Value>,
    received: Vec<(u32, Duration)>,
}

struct Upstream {
    script: Mutex<Script>,
    encoding: Encoding,
}

/// Tokens of a request as a model reads it: every message's text and
/// tool-call arguments, and the tool definitions.
fn request_tokens(body: &Value, encoding: Encoding) -> u32 {
    let messages: u32 = body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| message_tokens(m, encoding))
        .sum();
    let tools = match body.get("tools") {
        Some(t @ Value::Array(items)) if !items.is_empty() => {
            tokens::count(encoding, &t.to_string())
        }
        _ => 0,
    };
    messages + tools
}

fn message_tokens(m: &Value, encoding: Encoding) -> u32 {
    let content = match &m["content"] {
        Value::String(s) => tokens::count(encoding, s),
        Value::Null => 0,
        other => tokens::count(encoding, &other.to_string()),
    };
    let calls: u32 = m["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            tokens::count(
                encoding,
                c["function"]["arguments"].as_str().unwrap_or_default(),
            )
        })
        .sum();
    content + calls
}

async fn answer(State(up): State<Arc<Upstream>>, Json(body): Json<Value>) -> Json<Value> {
    let started = Instant::now();
    let tokens = request_tokens(&body, up.encoding);
    let mut script = up.script.lock().expect("script lock");
    let message = script
        .replies
        .pop_front()
        .unwrap_or_else(|| json!({"role": "assistant", "content": ""}));
    let finish = if message.get("tool_calls").is_some() {
        "tool_calls"
    } else {
        "stop"
    };
    script.received.push((tokens, started.elapsed()));
    Json(json!({
        "id": "chatcmpl-replay", "object": "chat.completion", "model": "replay",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }))
}

/// A recorded message as an OpenAI client sends it.
fn openai_message(m: &Message) -> Value {
    // Bytes that are not UTF-8 cannot be a JSON string; an OpenAI client
    // would send them decoded lossily.
    let content = match &m.raw {
        Some(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        None => m.content.clone(),
    };
    let mut v = json!({"role": m.role.as_str(), "content": content});
    if !m.tool_calls.is_empty() {
        v["tool_calls"] = m
            .tool_calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
            .collect();
    }
    if m.role == Role::Tool {
        match &m.tool_call_id {
            Some(id) => v["tool_call_id"] = json!(id),
            // A result recorded by name only: the legacy `function` role.
            None => v = json!({"role": "function", "name": m.name, "content": content}),
        }
    }
    v
}

fn store_time(headers: &axum::http::HeaderMap) -> Duration {
    let text = headers
        .get("server-timing")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    // The store's work; `match` (finding the new messages) is the proxy's own.
    let ms: f64 = text
        .split(',')
        .filter(|part| !part.trim_start().starts_with("match;"))
        .filter_map(|part| {
            part.split_once("dur=")
                .and_then(|(_, d)| d.trim().parse::<f64>().ok())
        })
        .sum();
    Duration::from_secs_f64(ms / 1000.0)
}

/// Replays `session` through an in-process proxy on `service`.
pub async fn run(session: &[RecordedExchange], service: Service) -> anyhow::Result<Vec<Call>> {
    let encoding = service.config().encoding;
    // The tokenizer's one-off start is not the proxy's time.
    tokens::warm_up();
    let up = Arc::new(Upstream {
        script: Mutex::default(),
        encoding,
    });
    let up_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let up_url = format!("http://{}", up_listener.local_addr()?);
    let up_app = Router::new()
        .route("/v1/chat/completions", post(answer))
        .with_state(up.clone());
    tokio::spawn(async move { axum::serve(up_listener, up_app).await });

    let proxy = Arc::new(Proxy {
        service,
        upstreams: upstream::Upstreams {
            openai: up_url.clone(),
            anthropic: up_url,
        },
        client: upstream::Client::new()?,
        sessions: Sessions::default(),
        histories: Histories::default(),
        token: None,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/v1/chat/completions", listener.local_addr()?);
    let app = router(proxy.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let client = reqwest::Client::new();
    let mut history: Vec<Value> = Vec::new();
    let mut history_tokens = 0;
    let mut calls = Vec::new();
    for (i, x) in session.iter().enumerate() {
        for m in &x.messages {
            let message = openai_message(m);
            if m.role == Role::Assistant && !history.is_empty() {
                up.script
                    .lock()
                    .expect("script lock")
                    .replies
                    .push_back(message.clone());
                let body = json!({"model": "replay", "messages": history}).to_string();
                let sent_bytes = body.len();
                let started = Instant::now();
                let resp = client
                    .post(&url)
                    .header("content-type", "application/json")
                    .header("x-ctxproxy-session", "replay")
                    .body(body)
                    .send()
                    .await
                    .with_context(|| format!("x{}: sending to the proxy", i + 1))?;
                let status = resp.status();
                let store = store_time(resp.headers());
                let reply = resp.bytes().await?;
                let waited = started.elapsed();
                if !status.is_success() {
                    bail!(
                        "x{}: the proxy answered {status}: {}",
                        i + 1,
                        String::from_utf8_lossy(&reply)
                    );
                }
                let (forwarded, upstream_time) = up
                    .script
                    .lock()
                    .expect("script lock")
                    .received
                    .pop()
                    .context("the upstream saw no request")?;
                calls.push(Call {
                    exchange: i as u32 + 1,
                    sent_tokens: history_tokens,
                    sent_bytes,
                    forwarded_tokens: forwarded,
                    added: waited.saturating_sub(upstream_time),
                    store,
                });
            }
            history_tokens += message_tokens(&message, encoding);
            history.push(message);
        }
    }
    proxy.service.store().checkpoint().await?;
    Ok(calls)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The per-call table and the totals, as text or JSON.
pub fn report(calls: &[Call], as_json: bool) -> String {
    let sent: u64 = calls.iter().map(|c| u64::from(c.sent_tokens)).sum();
    let forwarded: u64 = calls.iter().map(|c| u64::from(c.forwarded_tokens)).sum();
    let mut added: Vec<Duration> = calls.iter().map(|c| c.added).collect();
    let mut beyond: Vec<Duration> = calls.iter().map(Call::beyond_store).collect();
    added.sort();
    beyond.sort();
    let pct = |v: &[Duration], p| {
        if v.is_empty() {
            0.0
        } else {
            ms(percentile(v, p))
        }
    };
    let share = if sent == 0 {
        0.0
    } else {
        forwarded as f64 * 100.0 / sent as f64
    };
    if as_json {
        return serde_json::to_string_pretty(&json!({
            "calls": calls.iter().map(|c| json!({
                "exchange": c.exchange, "sentTokens": c.sent_tokens, "forwardedTokens": c.forwarded_tokens,
                "addedMs": ms(c.added), "storeMs": ms(c.store),
            })).collect::<Vec<_>>(),
            "total": {"calls": calls.len(), "sentTokens": sent, "forwardedTokens": forwarded, "forwardedPercent": share,
                      "addedMsP50": pct(&added, 0.5), "addedMsP99": pct(&added, 0.99),
                      "beyondStoreMsP50": pct(&beyond, 0.5), "beyondStoreMsP99": pct(&beyond, 0.99)},
        }))
        .expect("JSON");
    }
    let mut out =
        String::from("call  exchange   client sent  upstream got      %   added ms  store ms\n");
    for (n, c) in calls.iter().enumerate() {
        let p = if c.sent_tokens == 0 {
            0.0
        } else {
            f64::from(c.forwarded_tokens) * 100.0 / f64::from(c.sent_tokens)
        };
        out.push_str(&format!(
            "{:>4}  {:>8}  {:>12}  {:>12}  {:>5.1}  {:>9.2}  {:>8.2}\n",
            n + 1,
            format!("x{}", c.exchange),
            c.sent_tokens,
            c.forwarded_tokens,
            p,
            ms(c.added),
            ms(c.store)
        ));
    }
    out.push_str(&format!(
        "\n{} calls: the client sent {sent} tokens, the upstream got {forwarded} ({share:.1}%)\n\
         time the proxy added: p50 {:.2} ms, p99 {:.2} ms; beyond the store's work (ingest, assembly, recording): p50 {:.2} ms, p99 {:.2} ms\n",
        calls.len(),
        pct(&added, 0.5),
        pct(&added, 0.99),
        pct(&beyond, 0.5),
        pct(&beyond, 0.99),
    ));
    out
}

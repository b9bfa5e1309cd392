//! `ctxproxy replay FILE --via-proxy`: measures the front door itself. A
//! client sends every model call of a recorded session as an assistant
//! would (the whole history each time, OpenAI shape) to an in-process proxy
//! whose upstream, on loopback, answers each call with the recorded
//! assistant message; and sends the same request (the same bytes, headers
//! and HTTP client) straight to that upstream too, as a client without the
//! proxy would, direct first on even calls and through the proxy first on
//! odd ones, so both see the same load. Per call: the tokens the client
//! sent against those the upstream received, and these times:
//!
//! - *upstream's own time* (U), on either path: from the upstream's handler
//!   holding the body's bytes to its reply serialized, parsing the body and
//!   dropping it included;
//! - *added* (the figure of earlier docs): the client's wait through the
//!   proxy less U. It includes sending the whole body over loopback to the
//!   proxy, which a client without the proxy pays too (to the model);
//! - *beyond the store*: added less the store's work (ingest, assembly,
//!   recording the reply; `server-timing`);
//! - *direct*: the client's wait for the direct call less its U: sending the
//!   body to the upstream and reading the reply, the upstream collecting the
//!   body into fresh memory (axum's `Bytes`);
//! - *added over direct*: added less direct, the time the proxy added to what
//!   a direct call costs; and that less the store's work.
//!
//! Direct and the two over it are signed per call (noise can make a call
//! through the proxy the faster one) and their percentiles rank them signed:
//! a negative value ranks below zero, it is not clipped. Added and beyond
//! stay floored at zero, as before.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use ctxproxy_core::baseline;
use ctxproxy_core::tokens::{self, Encoding};
use serde_json::{json, Value};

use crate::timing::percentile;
use ctxproxy_core::message::{Message, Role};
use ctxproxy_core::packer::PromptMessage;
use ctxproxy_core::render::Block;
use ctxproxy_core::session_file::RecordedExchange;
use ctxproxy_proxy::{router, Access, ModelApi, Proxy, Timeouts, Upstreams};
use ctxproxy_service::format;
use ctxproxy_service::service::Service;

/// One request timed by the client.
#[derive(Clone, Copy, Debug)]
pub struct Timed {
    /// From sending the request to having read the whole reply.
    pub wait: Duration,
    /// Of `wait`, the upstream's own time (U).
    pub upstream: Duration,
}

impl Timed {
    /// The wait less the upstream's own time, in milliseconds; signed, as
    /// the figures that subtract it are.
    fn outside_upstream_ms(&self) -> f64 {
        ms(self.wait) - ms(self.upstream)
    }
}

/// One model call of the replay.
pub struct Call {
    pub exchange: u32,
    pub sent_tokens: u32,
    /// The request body the client sent.
    pub sent_bytes: usize,
    pub forwarded_tokens: u32,
    /// The request sent through the proxy.
    pub via_proxy: Timed,
    /// The same request sent straight to the upstream.
    pub direct: Timed,
    /// Of the wait through the proxy, the store's work: ingest, assembly,
    /// recording the reply.
    pub store: Duration,
    /// The facts the exchange's question needs (its first call only), and
    /// how many of them are in what the upstream got.
    pub facts: (u32, u32),
    /// The input tokens the reply through the proxy says the upstream
    /// counted (the scripted upstream reports its own count, as a provider
    /// does); `None` when the reply stated no usage.
    pub reported_input: Option<u64>,
}

impl Call {
    /// The client's wait through the proxy less the upstream's own time.
    pub fn added(&self) -> Duration {
        self.via_proxy.wait.saturating_sub(self.via_proxy.upstream)
    }

    /// The time the proxy added less the store's work.
    pub fn beyond_store(&self) -> Duration {
        self.added().saturating_sub(self.store)
    }

    /// The time the proxy added over a direct call, in milliseconds:
    /// (wait − U) through the proxy less (wait − U) direct. Signed.
    pub fn added_over_direct_ms(&self) -> f64 {
        self.via_proxy.outside_upstream_ms() - self.direct.outside_upstream_ms()
    }

    /// Of [`Call::added_over_direct_ms`], what is not the store's work. Signed.
    pub fn beyond_store_over_direct_ms(&self) -> f64 {
        self.added_over_direct_ms() - ms(self.store)
    }
}

/// The scripted upstream: the recorded replies, and what it received.
#[derive(Default)]
struct Script {
    /// Answered in order to the proxy's requests (reply bodies).
    replies: VecDeque<Bytes>,
    /// Per request from the proxy: its tokens, U and its text (`received`),
    /// or why it could not be read.
    received: Vec<Result<(u32, Duration, String), String>>,
    /// The reply to the current call's direct request (the recorded
    /// message, as the proxy's request gets), set before the call: the
    /// direct request consumes neither `replies` nor adds to `received`.
    direct_reply: Bytes,
    /// U of the last direct request.
    direct_received: Option<Duration>,
}

struct Upstream {
    script: Mutex<Script>,
    encoding: Encoding,
    api: ModelApi,
}

/// What the upstream got, read as the proxy reads a request of `api`: its
/// tokens (the system prompt's, every message's as full history counts it,
/// `baseline::message_tokens`, the tool definitions in one shape whatever
/// the API, so that the figures of one session are the same through every
/// API) and its
/// text (the same strings, for the facts check).
fn received(api: ModelApi, body: &[u8], encoding: Encoding) -> Result<(u32, String), String> {
    let request = api.read_request(body)?;
    let mut text = request.system;
    let mut count = tokens::count(encoding, &text);
    for m in &request.messages {
        count += baseline::message_tokens(m, encoding);
        text.push('\n');
        text.push_str(&m.content);
        for c in &m.tool_calls {
            text.push('\n');
            text.push_str(&c.arguments);
        }
    }
    if !request.tools.is_empty() {
        count += tokens::count(encoding, &Value::Array(request.tools).to_string());
    }
    Ok((count, text))
}

/// A recorded message in the prompt's API-neutral shape, which
/// `format::prompt_fields` puts in each API's.
fn prompt_message(m: &Message) -> PromptMessage {
    let text = baseline::sent_content(m);
    let blocks = match m.role {
        Role::Tool => vec![Block::ToolResult {
            call_id: m.tool_call_id.clone().unwrap_or_default(),
            name: m.name.clone().unwrap_or_default(),
            text,
        }],
        _ => (!text.is_empty())
            .then_some(Block::Text(text))
            .into_iter()
            .chain(m.tool_calls.iter().map(|c| Block::ToolUse {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            }))
            .collect(),
    };
    PromptMessage {
        role: m.role,
        blocks,
        charged: 0,
        block_tokens: Vec::new(),
    }
}

/// A request of `api` carrying `history` whole, as an assistant sends it.
fn request_body(api: ModelApi, history: &[PromptMessage]) -> Value {
    let prompt = format::prompt_fields(history, &json!([]), api.format());
    let system = prompt.system.filter(|s| !s.is_empty());
    match api {
        ModelApi::ChatCompletions => json!({"model": "replay", "messages": prompt.messages}),
        ModelApi::Responses => json!({"model": "replay", "input": prompt.messages}),
        ModelApi::Messages => {
            let mut body =
                json!({"model": "replay", "max_tokens": 4096, "messages": prompt.messages});
            if let Some(system) = system {
                body["system"] = json!(system);
            }
            body
        }
        ModelApi::Gemini => {
            let mut body = json!({"contents": prompt.messages});
            if let Some(system) = system {
                body["systemInstruction"] = json!({"parts": [{"text": system}]});
            }
            body
        }
    }
}

/// The whole reply of `api` answering with `message`, serialized.
fn reply_body(api: ModelApi, message: &PromptMessage) -> Vec<u8> {
    let prompt = format::prompt_fields(std::slice::from_ref(message), &json!([]), api.format());
    let output = Value::Array(prompt.messages.clone());
    let shaped = prompt.messages.into_iter().next().unwrap_or(Value::Null);
    let calls = message.tool_use_ids().next().is_some();
    let reply = match api {
        ModelApi::ChatCompletions => json!({
            "id": "chatcmpl-replay", "object": "chat.completion", "model": "replay",
            "choices": [{"index": 0, "message": shaped,
                         "finish_reason": if calls { "tool_calls" } else { "stop" }}],
        }),
        ModelApi::Responses => json!({
            "id": "resp_replay", "object": "response", "status": "completed", "model": "replay",
            "output": output,
            "usage": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0},
        }),
        ModelApi::Messages => json!({
            "id": "msg_replay", "type": "message", "role": "assistant", "model": "replay",
            "content": shaped["content"],
            "stop_reason": if calls { "tool_use" } else { "end_turn" },
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }),
        ModelApi::Gemini => json!({
            "candidates": [{"index": 0, "content": shaped, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 0, "candidatesTokenCount": 0, "totalTokenCount": 0},
        }),
    };
    reply.to_string().into_bytes()
}

fn json_reply(body: Bytes) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// A request body parsed as the model's server would, and dropped.
fn parsed(body: Bytes) -> Result<(), serde_json::Error> {
    serde_json::from_slice::<Value>(&body).map(drop)
}

fn not_json(e: &serde_json::Error) -> Response {
    (StatusCode::BAD_REQUEST, format!("body: not JSON: {e}")).into_response()
}

/// The proxy's requests: the next recorded reply. U runs from here having
/// the body's bytes to the reply ready, the body read, counted and dropped
/// within it; `answer_direct` times the same span.
async fn answer(State(up): State<Arc<Upstream>>, body: Bytes) -> Response {
    let started = Instant::now();
    let got = received(up.api, &body, up.encoding);
    drop(body);
    let mut script = up.script.lock().expect("script lock");
    let reply = script.replies.pop_front().unwrap_or_default();
    let reply = match &got {
        Ok((tokens, _)) => with_input_usage(up.api, &reply, *tokens),
        Err(_) => reply,
    };
    let elapsed = started.elapsed();
    script
        .received
        .push(got.map(|(tokens, text)| (tokens, elapsed, text)));
    json_reply(reply)
}

/// A recorded reply stating `input` as the input tokens the upstream
/// counted, in the API's usage fields, as a provider's reply does.
fn with_input_usage(api: ModelApi, reply: &Bytes, input: u32) -> Bytes {
    let Ok(mut value) = serde_json::from_slice::<Value>(reply) else {
        return reply.clone();
    };
    value[match api {
        ModelApi::Gemini => "usageMetadata",
        _ => "usage",
    }] = match api {
        ModelApi::ChatCompletions => {
            json!({"prompt_tokens": input, "completion_tokens": 0, "total_tokens": input})
        }
        ModelApi::Responses | ModelApi::Messages => {
            json!({"input_tokens": input, "output_tokens": 0})
        }
        ModelApi::Gemini => json!({"promptTokenCount": input, "candidatesTokenCount": 0}),
    };
    Bytes::from(value.to_string())
}

/// The client's direct requests: the current call's recorded reply, the
/// script left as it is. The body is parsed and dropped; its tokens are not counted (the client knows them, and a
/// 7 MB history would take longer to count than to send).
async fn answer_direct(State(up): State<Arc<Upstream>>, body: Bytes) -> Response {
    let started = Instant::now();
    if let Err(e) = parsed(body) {
        return not_json(&e);
    }
    let mut script = up.script.lock().expect("script lock");
    let reply = script.direct_reply.clone();
    script.direct_received = Some(started.elapsed());
    json_reply(reply)
}

/// The path the scripted upstream answers direct requests on; it answers
/// the proxy's on any other.
const DIRECT_PATH: &str = "/direct";

fn store_time(headers: &HeaderMap) -> Duration {
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

/// A request as the replay's client sends it, and the reply it read.
struct Sent {
    wait: Duration,
    /// The store's work, from the proxy's `server-timing` (none direct).
    store: Duration,
    reply: Value,
}

/// Posts `body` to `url` with the replay's headers and reads the whole
/// reply; the wait runs from sending to the reply read.
async fn send_timed(
    client: &reqwest::Client,
    url: &str,
    conversation: &Conversation<'_>,
    body: &Bytes,
) -> anyhow::Result<Sent> {
    let started = Instant::now();
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("x-ctxproxy-session", conversation.name);
    if let Some(project) = conversation.project {
        request = request.header("x-ctxproxy-project", project);
    }
    let resp = request.body(body.clone()).send().await?;
    let status = resp.status();
    let store = store_time(resp.headers());
    let reply = resp.bytes().await?;
    let wait = started.elapsed();
    if !status.is_success() {
        bail!("answered {status}: {}", String::from_utf8_lossy(&reply));
    }
    let reply = serde_json::from_slice(&reply).context("the reply is not JSON")?;
    Ok(Sent { wait, store, reply })
}

/// One conversation of a replayed file, as its client names it: its
/// session (`x-ctxproxy-session`) and project (`x-ctxproxy-project`).
pub struct Conversation<'a> {
    pub name: &'a str,
    pub project: Option<&'a str>,
}

/// Replays `session` through an in-process proxy on `service`, as a
/// client of `api` sends it.
pub async fn run(
    session: &[RecordedExchange],
    service: Service,
    api: ModelApi,
) -> anyhow::Result<Vec<Call>> {
    let conversation = Conversation {
        name: "replay",
        project: None,
    };
    let steps: Vec<(usize, &RecordedExchange)> = session.iter().map(|x| (0, x)).collect();
    run_conversations(&[conversation], &steps, service, api).await
}

/// Replays `steps` (each exchange with the conversation it belongs to, in
/// the order they happened) through an in-process proxy on `service`, each
/// conversation a client of `api` that sends its own whole history.
pub async fn run_conversations(
    conversations: &[Conversation<'_>],
    steps: &[(usize, &RecordedExchange)],
    service: Service,
    api: ModelApi,
) -> anyhow::Result<Vec<Call>> {
    let encoding = service.config().encoding;
    // The tokenizer's one-off start is not the proxy's time.
    tokens::warm_up();
    let up = Arc::new(Upstream {
        script: Mutex::default(),
        encoding,
        api,
    });
    let up_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let up_url = format!("http://{}", up_listener.local_addr()?);
    let direct_url = format!("{up_url}{DIRECT_PATH}");
    let up_app = Router::new()
        .route(DIRECT_PATH, post(answer_direct))
        .fallback(post(answer))
        // A direct request carries the whole history: no 2 MB limit.
        .layer(DefaultBodyLimit::disable())
        .with_state(up.clone());
    tokio::spawn(async move { axum::serve(up_listener, up_app).await });

    let upstreams = Upstreams {
        openai: up_url.clone(),
        anthropic: up_url.clone(),
        gemini: up_url,
    };
    let proxy = Arc::new(Proxy::new(
        service,
        upstreams,
        Timeouts::default(),
        Access::Open,
    )?);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}{}", listener.local_addr()?, api.path());
    let app = router(proxy.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let client = reqwest::Client::new();
    // Per conversation: its history as sent, its tokens, its exchanges so far.
    let mut histories: Vec<(Vec<PromptMessage>, u32, usize)> =
        conversations.iter().map(|_| (Vec::new(), 0, 0)).collect();
    let mut calls = Vec::new();
    for &(c, x) in steps {
        let conversation = &conversations[c];
        let (history, history_tokens, exchanges) = &mut histories[c];
        *exchanges += 1;
        let i = *exchanges - 1;
        // The question's facts are checked in the exchange's first call.
        let mut needs = Some(&x.needs);
        for m in &x.messages {
            let message = prompt_message(m);
            if m.role == Role::Assistant && !history.is_empty() {
                let reply = Bytes::from(reply_body(api, &message));
                let recorded = api.reply_messages(&serde_json::from_slice(&reply)?);
                {
                    let mut script = up.script.lock().expect("script lock");
                    script.replies.push_back(reply.clone());
                    script.direct_reply = reply;
                }
                let body = Bytes::from(request_body(api, history).to_string());
                let n = i + 1;
                let through_proxy = || async {
                    send_timed(&client, &url, conversation, &body)
                        .await
                        .with_context(|| format!("{} x{n}: through the proxy", conversation.name))
                };
                let direct = || async {
                    send_timed(&client, &direct_url, conversation, &body)
                        .await
                        .with_context(|| {
                            format!("{} x{n}: straight to the upstream", conversation.name)
                        })
                };
                // Each first on every other call: both see the same load.
                let (via, straight) = if calls.len() % 2 == 0 {
                    let straight = direct().await?;
                    (through_proxy().await?, straight)
                } else {
                    let via = through_proxy().await?;
                    (via, direct().await?)
                };
                let mut script = up.script.lock().expect("script lock");
                let (forwarded, upstream_time, text) = script
                    .received
                    .pop()
                    .context("the upstream saw no request")?
                    .map_err(|e| anyhow::anyhow!("x{n}: the forwarded request: {e}"))?;
                let facts = needs.take().map_or((0, 0), |needs| {
                    let reached = needs.iter().filter(|n| text.contains(&n.fact)).count();
                    (needs.len() as u32, reached as u32)
                });
                let direct_time = script
                    .direct_received
                    .take()
                    .context("the upstream saw no direct request")?;
                drop(script);
                // The store recorded the proxy's reply: it must be the script's.
                if api.reply_messages(&via.reply) != recorded
                    || api.reply_messages(&straight.reply) != recorded
                {
                    bail!("x{n}: a reply is not the recorded assistant message");
                }
                calls.push(Call {
                    exchange: n as u32,
                    sent_tokens: *history_tokens,
                    sent_bytes: body.len(),
                    forwarded_tokens: forwarded,
                    via_proxy: Timed {
                        wait: via.wait,
                        upstream: upstream_time,
                    },
                    direct: Timed {
                        wait: straight.wait,
                        upstream: direct_time,
                    },
                    store: via.store,
                    facts,
                    reported_input: api
                        .usage_shape()
                        .of_reply(&via.reply)
                        .map(|u| api.usage_shape().read(u).input),
                });
            }
            *history_tokens += baseline::message_tokens(m, encoding);
            history.push(message);
        }
    }
    proxy.service().checkpoint().await?;
    Ok(calls)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A figure's p50 and p99 over some calls, in milliseconds.
#[derive(Clone, Copy, Debug)]
pub struct Spread {
    pub p50: f64,
    pub p99: f64,
}

impl Spread {
    /// By nearest rank over the values as they are: a negative value (a
    /// signed figure) ranks below zero, not as zero; no values gives zeros.
    fn of(mut values: Vec<f64>) -> Spread {
        if values.is_empty() {
            return Spread { p50: 0.0, p99: 0.0 };
        }
        values.sort_by(f64::total_cmp);
        Spread {
            p50: percentile(&values, 0.5),
            p99: percentile(&values, 0.99),
        }
    }
}

/// Each time figure of [`Call`] over some calls.
pub struct Spreads {
    pub added: Spread,
    pub beyond_store: Spread,
    pub direct: Spread,
    pub added_over_direct: Spread,
    pub beyond_store_over_direct: Spread,
}

impl Spreads {
    pub fn of(calls: &[Call]) -> Spreads {
        let each = |f: fn(&Call) -> f64| Spread::of(calls.iter().map(f).collect());
        Spreads {
            added: each(|c| ms(c.added())),
            beyond_store: each(|c| ms(c.beyond_store())),
            direct: each(|c| c.direct.outside_upstream_ms()),
            added_over_direct: each(Call::added_over_direct_ms),
            beyond_store_over_direct: each(Call::beyond_store_over_direct_ms),
        }
    }
}

/// The per-call table and the totals, as text or JSON.
pub fn report(calls: &[Call], as_json: bool) -> String {
    let sent: u64 = calls.iter().map(|c| u64::from(c.sent_tokens)).sum();
    let forwarded: u64 = calls.iter().map(|c| u64::from(c.forwarded_tokens)).sum();
    let reported: u64 = calls.iter().filter_map(|c| c.reported_input).sum();
    let needed: u32 = calls.iter().map(|c| c.facts.0).sum();
    let reached: u32 = calls.iter().map(|c| c.facts.1).sum();
    let t = Spreads::of(calls);
    let share = if sent == 0 {
        0.0
    } else {
        forwarded as f64 * 100.0 / sent as f64
    };
    if as_json {
        return serde_json::to_string_pretty(&json!({
            "calls": calls.iter().map(|c| json!({
                "exchange": c.exchange, "sentTokens": c.sent_tokens, "forwardedTokens": c.forwarded_tokens,
                "reportedInputTokens": c.reported_input,
                "addedMs": ms(c.added()), "storeMs": ms(c.store),
                "waitMs": ms(c.via_proxy.wait), "upstreamMs": ms(c.via_proxy.upstream),
                "directWaitMs": ms(c.direct.wait), "directUpstreamMs": ms(c.direct.upstream),
                "directMs": c.direct.outside_upstream_ms(),
                "addedOverDirectMs": c.added_over_direct_ms(),
                "beyondStoreOverDirectMs": c.beyond_store_over_direct_ms(),
            })).collect::<Vec<_>>(),
            "total": {"calls": calls.len(), "sentTokens": sent, "forwardedTokens": forwarded, "forwardedPercent": share,
                      "reportedInputTokens": reported,
                      "factsNeeded": needed, "factsInUpstreamPrompt": reached,
                      "addedMsP50": t.added.p50, "addedMsP99": t.added.p99,
                      "beyondStoreMsP50": t.beyond_store.p50, "beyondStoreMsP99": t.beyond_store.p99,
                      "directMsP50": t.direct.p50, "directMsP99": t.direct.p99,
                      "addedOverDirectMsP50": t.added_over_direct.p50, "addedOverDirectMsP99": t.added_over_direct.p99,
                      "beyondStoreOverDirectMsP50": t.beyond_store_over_direct.p50,
                      "beyondStoreOverDirectMsP99": t.beyond_store_over_direct.p99},
        }))
        .expect("JSON");
    }
    let mut out = String::from(
        "call  exchange   client sent  upstream got      %   added ms  store ms  direct ms  over direct ms\n",
    );
    for (n, c) in calls.iter().enumerate() {
        let p = if c.sent_tokens == 0 {
            0.0
        } else {
            f64::from(c.forwarded_tokens) * 100.0 / f64::from(c.sent_tokens)
        };
        out.push_str(&format!(
            "{:>4}  {:>8}  {:>12}  {:>12}  {:>5.1}  {:>9.2}  {:>8.2}  {:>9.2}  {:>14.2}\n",
            n + 1,
            format!("x{}", c.exchange),
            c.sent_tokens,
            c.forwarded_tokens,
            p,
            ms(c.added()),
            ms(c.store),
            c.direct.outside_upstream_ms(),
            c.added_over_direct_ms(),
        ));
    }
    out.push_str(&format!(
        "\n{} calls: the client sent {sent} tokens, the upstream got {forwarded} ({share:.1}%) \
         and reported {reported} input tokens in its usage figures\n\
         facts the questions need in what the upstream got: {reached} of {needed}\n\
         time the proxy added (its wait less the upstream's own time): p50 {:.2} ms, p99 {:.2} ms; \
         beyond the store's work (ingest, assembly, recording): p50 {:.2} ms, p99 {:.2} ms\n\
         a direct call (the same request straight to the upstream, its wait less the upstream's own time): \
         p50 {:.2} ms, p99 {:.2} ms\n\
         added over a direct call (per call, added less direct; signed): p50 {:.2} ms, p99 {:.2} ms; \
         beyond the store's work: p50 {:.2} ms, p99 {:.2} ms\n",
        calls.len(),
        t.added.p50,
        t.added.p99,
        t.beyond_store.p50,
        t.beyond_store.p99,
        t.direct.p50,
        t.direct.p99,
        t.added_over_direct.p50,
        t.added_over_direct.p99,
        t.beyond_store_over_direct.p50,
        t.beyond_store_over_direct.p99,
    ));
    out
}

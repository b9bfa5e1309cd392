//! The rounds of one model request: forward, answer the model's
//! context-tool calls inside the proxy (at most `MAX_ROUNDS` times), and
//! give the client one reply: whole, or streamed as the upstream streams it
//! (no 200 before the upstream's status is known, keep-alives while an
//! internal round runs, nothing recorded if the client goes away).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use ctxproxy_core::usage::Usage;
use ctxproxy_model_apis::usage::RoundUsage;

use super::accounting::{self, Outcome, RequestFigures};
use super::api::{Api, ErrorKind, Splicer};
use super::errors::error;
use super::router::{channel_body, server_timing};
use super::session::Turn;
use super::upstream::Rewritten;
use super::{context_tools, sse, trim, upstream, Proxy};

/// Internal context-tool rounds answered per request.
pub const MAX_ROUNDS: usize = 4;

/// How often a client waiting on an internal round hears from us.
const KEEP_ALIVE_EVERY: Duration = Duration::from_secs(5);

/// A model request on its way: where it goes and what it carries.
pub struct ModelCall {
    pub proxy: Arc<Proxy>,
    pub url: String,
    pub headers: HeaderMap,
    /// The client's body less its messages.
    pub client_options: Value,
    pub body: Value,
    pub turn: Turn,
    /// `x-ctxproxy-session` / `x-ctxproxy-prompt`.
    pub ours: HeaderMap,
    /// The store's work so far, for `server-timing`.
    pub timing: Vec<(&'static str, Duration)>,
    /// What the request is accounted as when it ends.
    pub figures: RequestFigures,
    /// Held until the request ends (its reply recorded): memory is given
    /// back only once none is in flight.
    pub _busy: trim::Busy,
}

impl ModelCall {
    fn send(
        &self,
        body: &Value,
    ) -> impl Future<Output = Result<reqwest::Response, upstream::Unreachable>> + '_ {
        self.proxy.client.send(
            Method::POST,
            &self.url,
            self.headers.clone(),
            // Straight into bytes: `to_string` goes through `fmt::Write`.
            Bytes::from(serde_json::to_vec(body).expect("a JSON value serializes")),
        )
    }

    /// Ends the request: the reply the client got recorded (when it has
    /// one), then the request accounted (`accounting::settle`).
    async fn finish<A: Api>(mut self, outcome: Outcome, client_turn: Option<&Value>) {
        let started = Instant::now();
        let messages = client_turn.map(A::turn_messages).unwrap_or_default();
        if !messages.is_empty() {
            let session = self.turn.session.clone();
            if let Err(e) = self.turn.record(&self.proxy.service, messages).await {
                eprintln!("ctxproxy proxy: recording the reply in {session} failed: {e}");
            }
        }
        self.timing.push(("record", started.elapsed()));
        self.figures.added = self.timing.iter().map(|(_, d)| *d).sum();
        accounting::settle(&self.proxy, self.figures, outcome);
    }

    /// Adds one upstream round's usage.
    fn add_round(&mut self, usage: Option<Usage>) {
        self.figures.rounds += 1;
        if let Some(u) = usage {
            *self.figures.usage.get_or_insert_with(Usage::default) += u;
        }
    }
}

/// The upstream's response as it is: status, headers (less hop-by-hop), body streamed.
pub fn relay(resp: reqwest::Response, rewritten: Rewritten, ours: HeaderMap) -> Response {
    let status = resp.status();
    let mut headers = upstream::response_headers(resp.headers(), rewritten);
    headers.extend(ours);
    let mut response = Response::new(Body::from_stream(resp.bytes_stream()));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

fn unreachable<A: Api>(e: &upstream::Unreachable) -> Response {
    error::<A>(
        StatusCode::BAD_GATEWAY,
        ErrorKind::Upstream,
        &e.to_string(),
        None,
    )
}

/// A request without `stream`: every round read whole, one reply spliced.
pub async fn whole<A: Api>(mut x: ModelCall) -> Response {
    // Only the rounds read the body from here on: moved, not copied.
    let mut body = std::mem::take(&mut x.body);
    let mut replies = Vec::new();
    let mut answered = 0;
    let headers = loop {
        let resp = match x.send(&body).await {
            Ok(r) => r,
            Err(e) => {
                x.finish::<A>(Outcome::Unreachable, None).await;
                return unreachable::<A>(&e);
            }
        };
        if !resp.status().is_success() {
            let ours = std::mem::take(&mut x.ours);
            x.finish::<A>(Outcome::UpstreamError, None).await;
            return relay(resp, Rewritten::No, ours);
        }
        let (status, headers) = (resp.status(), resp.headers().clone());
        let bytes = match resp.bytes().await {
            Ok(b) => b,
            Err(e) => {
                // The URL without its query, which may carry a key (`?key=`).
                let message = format!(
                    "upstream {} broke off its reply: {}",
                    x.url.split('?').next().unwrap_or_default(),
                    e.without_url()
                );
                x.finish::<A>(Outcome::UpstreamError, None).await;
                return error::<A>(StatusCode::BAD_GATEWAY, ErrorKind::Upstream, &message, None);
            }
        };
        let Ok(reply) = serde_json::from_slice::<Value>(&bytes) else {
            // Not ours to judge: the client gets it as it came.
            x.finish::<A>(Outcome::UpstreamError, None).await;
            let mut response = Response::new(Body::from(bytes));
            *response.status_mut() = status;
            *response.headers_mut() = upstream::response_headers(&headers, Rewritten::No);
            return response;
        };
        x.add_round(A::USAGE.of_reply(&reply).map(|u| A::USAGE.read(u)));
        let turn = A::assistant_turn(&reply);
        let calls = A::calls(&turn);
        replies.push(reply);
        if !calls.answered_inside() || answered == MAX_ROUNDS {
            break headers;
        }
        let answers =
            context_tools::answer_all(&x.proxy.service, &x.turn.session, &calls.context).await;
        answered += 1;
        A::continue_with(&mut body, &turn, &answers);
    };
    let reply = A::splice(&replies);
    let mut out_headers = upstream::response_headers(&headers, Rewritten::Yes);
    out_headers.extend(x.ours.clone());
    let mut timing = x.timing.clone();
    let started = Instant::now();
    x.finish::<A>(Outcome::Ok, Some(&A::assistant_turn(&reply)))
        .await;
    timing.push(("record", started.elapsed()));
    if let Some(v) = server_timing(&timing) {
        out_headers.insert("server-timing", v);
    }
    let mut response = Json(reply).into_response();
    response.headers_mut().extend(out_headers);
    response
}

/// A streamed request: the response starts once the first round's status
/// is known; a pump task relays and splices every round after that.
pub async fn streamed<A: Api>(mut x: ModelCall) -> Response {
    let first = match x.send(&x.body).await {
        Ok(r) => r,
        Err(e) => {
            x.finish::<A>(Outcome::Unreachable, None).await;
            return unreachable::<A>(&e);
        }
    };
    if !first.status().is_success() {
        let ours = std::mem::take(&mut x.ours);
        x.finish::<A>(Outcome::UpstreamError, None).await;
        return relay(first, Rewritten::No, ours);
    }
    let mut headers = upstream::response_headers(first.headers(), Rewritten::Yes);
    headers.extend(std::mem::take(&mut x.ours));
    if let Some(v) = server_timing(&x.timing) {
        headers.insert("server-timing", v);
    }
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    tokio::spawn(pump::<A>(x, first, tx));
    let mut response = Response::new(channel_body(rx));
    *response.headers_mut() = headers;
    response
}

async fn pump<A: Api>(mut x: ModelCall, first: reqwest::Response, tx: mpsc::Sender<Bytes>) {
    let mut splicer = A::splicer(&x.client_options);
    let mut usage = RoundUsage::default();
    let mut body = x.body.clone();
    let mut resp = first;
    let mut answered = 0;
    loop {
        let relayed = relay_round::<A>(&mut splicer, &mut usage, resp, &tx, answered > 0).await;
        x.add_round(usage.take(A::USAGE));
        if let Err(outcome) = relayed {
            x.finish::<A>(outcome, None).await;
            return;
        }
        let turn = splicer.end_round();
        let calls = A::calls(&turn);
        if !calls.answered_inside() || answered == MAX_ROUNDS {
            break;
        }
        if tx.send(Bytes::from(splicer.keep_alive())).await.is_err() {
            x.finish::<A>(Outcome::ClientGone, None).await;
            return;
        }
        let answers =
            context_tools::answer_all(&x.proxy.service, &x.turn.session, &calls.context).await;
        answered += 1;
        A::continue_with(&mut body, &turn, &answers);
        let Some(next) = with_keep_alives(x.send(&body), &splicer.keep_alive(), &tx).await else {
            x.finish::<A>(Outcome::ClientGone, None).await;
            return;
        };
        resp = match next {
            Ok(r) if r.status().is_success() => r,
            Ok(r) => {
                // The upstream's own error, as an event: the 200 is sent.
                let bytes = r.bytes().await.unwrap_or_default();
                let body = serde_json::from_slice(&bytes).unwrap_or_else(
                    |_| json!({"error": {"message": String::from_utf8_lossy(&bytes)}}),
                );
                let _ = tx.send(Bytes::from(splicer.error_event(&body))).await;
                x.finish::<A>(Outcome::UpstreamError, None).await;
                return;
            }
            Err(e) => {
                let body = A::error_body(ErrorKind::Upstream, &e.to_string(), None);
                let _ = tx.send(Bytes::from(splicer.error_event(&body))).await;
                x.finish::<A>(Outcome::Unreachable, None).await;
                return;
            }
        };
    }
    // Stored before the client hears the end, as a whole reply is stored
    // before it is sent: an SDK returns at the closing event and drops the
    // connection, and the turn it returned must already be in the store.
    x.finish::<A>(Outcome::Ok, Some(&splicer.client_turn()))
        .await;
    let _ = tx.send(Bytes::from(splicer.finish())).await;
}

/// Relays one round's events through the splicer as they arrive, taking
/// in the usage they state. An error when the stream cannot go on: the
/// client left, the upstream broke off or stopped before its last event,
/// or it sent an error event.
async fn relay_round<A: Api>(
    splicer: &mut A::Splicer,
    usage: &mut RoundUsage,
    resp: reqwest::Response,
    tx: &mpsc::Sender<Bytes>,
    keep_alive: bool,
) -> Result<(), Outcome> {
    if upstream::is_json(resp.headers()) {
        return relay_whole_reply::<A>(splicer, usage, resp, tx).await;
    }
    let mut framer = sse::Framer::default();
    let mut stream = resp.bytes_stream();
    let mut tick = tokio::time::interval(KEEP_ALIVE_EVERY);
    tick.reset();
    loop {
        let chunk = tokio::select! {
            c = stream.next() => c,
            _ = tx.closed() => return Err(Outcome::ClientGone),
            _ = tick.tick(), if keep_alive => {
                if tx.send(Bytes::from(splicer.keep_alive())).await.is_err() {
                    return Err(Outcome::ClientGone);
                }
                continue;
            }
        };
        let events = match chunk {
            None => break,
            Some(Ok(bytes)) => framer.push(&bytes),
            Some(Err(e)) => {
                let message = format!("the upstream broke off its stream: {}", e.without_url());
                let _ = tx.send(round_failed::<A>(splicer, &message)).await;
                return Err(Outcome::UpstreamError);
            }
        };
        tick.reset();
        for event in events {
            usage.event(A::USAGE, &event.data);
            let out = splicer.event(event);
            if !out.is_empty() && tx.send(Bytes::from(out)).await.is_err() {
                return Err(Outcome::ClientGone);
            }
        }
    }
    if splicer.failed() {
        return Err(Outcome::UpstreamError);
    }
    // An event still without its blank line is dropped (the SSE rule for
    // a stream's end), so a stream cut mid-event ends here too.
    if !splicer.round_ended() {
        let message = "the upstream's stream ended before its last event";
        let _ = tx.send(round_failed::<A>(splicer, message)).await;
        return Err(Outcome::UpstreamError);
    }
    Ok(())
}

/// A whole JSON reply to a streamed request, relayed as the events the
/// API would have streamed for it.
async fn relay_whole_reply<A: Api>(
    splicer: &mut A::Splicer,
    usage: &mut RoundUsage,
    resp: reqwest::Response,
    tx: &mpsc::Sender<Bytes>,
) -> Result<(), Outcome> {
    let reply = match resp.bytes().await {
        Ok(bytes) => serde_json::from_slice::<Value>(&bytes).map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    let reply = match reply {
        Ok(reply) => reply,
        Err(e) => {
            let message =
                format!("the upstream's whole reply to a streamed request is unreadable: {e}");
            let _ = tx.send(round_failed::<A>(splicer, &message)).await;
            return Err(Outcome::UpstreamError);
        }
    };
    for event in A::stream_events(&reply) {
        usage.event(A::USAGE, &event.data);
        let out = splicer.event(event);
        if !out.is_empty() && tx.send(Bytes::from(out)).await.is_err() {
            return Err(Outcome::ClientGone);
        }
    }
    match !splicer.failed() && splicer.round_ended() {
        true => Ok(()),
        false => Err(Outcome::UpstreamError),
    }
}

/// Our error event for a round that failed: it ends the client's stream
/// so that its SDK raises, and nothing is recorded.
fn round_failed<A: Api>(splicer: &A::Splicer, message: &str) -> Bytes {
    Bytes::from(splicer.error_event(&A::error_body(ErrorKind::Upstream, message, None)))
}

/// Awaits `work`, sending `keep_alive` every few seconds meanwhile; `None`
/// when the client went away.
async fn with_keep_alives<T>(
    work: impl Future<Output = T>,
    keep_alive: &[u8],
    tx: &mpsc::Sender<Bytes>,
) -> Option<T> {
    tokio::pin!(work);
    let mut tick = tokio::time::interval(KEEP_ALIVE_EVERY);
    tick.reset();
    loop {
        tokio::select! {
            done = &mut work => return Some(done),
            _ = tick.tick() => {
                if tx.send(Bytes::copy_from_slice(keep_alive)).await.is_err() {
                    return None;
                }
            }
            _ = tx.closed() => return None,
        }
    }
}

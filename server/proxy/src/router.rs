//! The routes and their handlers: the model APIs' paths, `count_tokens`,
//! the dashboard's and metrics' (`dashboard`), and every other path
//! forwarded unchanged.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::{Json, Router};
use ctxproxy_core::packer::ShapeKind;
use serde_json::{json, Value};

use crate::api::{Api, ErrorKind};
use crate::errors::{body_too_slow, error, not_json, service_error, UNAUTHORISED};
use crate::request::read_request;
use crate::trim::LARGE_BODY;
use crate::{
    accounting, anthropic, dashboard, gemini, history, mask, openai, responses, rounds, upstream,
    Proxy,
};

pub fn router(proxy: Arc<Proxy>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { Json(json!({"ok": true})) }))
        .merge(dashboard::routes())
        .route("/v1/chat/completions", post(model::<openai::OpenAi>))
        .route("/chat/completions", post(model::<openai::OpenAi>))
        .route("/v1/messages", post(model::<anthropic::Anthropic>))
        .route("/messages", post(model::<anthropic::Anthropic>))
        .route(
            "/v1/responses",
            post(model::<responses::Responses>).get(responses_over_http),
        )
        .route(
            "/responses",
            post(model::<responses::Responses>).get(responses_over_http),
        )
        .route("/v1/messages/count_tokens", post(count_tokens))
        .route("/messages/count_tokens", post(count_tokens))
        .route("/v1beta/models/{model_method}", any(gemini_method))
        .route("/v1/models/{model_method}", any(gemini_method))
        .fallback(passthrough)
        .with_state(proxy)
}

/// `GET /v1/responses`, the Responses API's WebSocket upgrade: refused with
/// a 426, on which Codex goes over to `POST` at once. The proxy splices
/// HTTP replies; a WebSocket session forwarded would pass unrecorded.
async fn responses_over_http() -> Response {
    error::<responses::Responses>(
        StatusCode::UPGRADE_REQUIRED,
        ErrorKind::InvalidRequest,
        "ctxproxy serves the Responses API over HTTP: send POST /v1/responses",
        None,
    )
}

/// `server-timing: match;dur=0.20, ingest;dur=0.41, assemble;dur=1.20`
/// (milliseconds): where the time the proxy adds goes (finding the session
/// and its new messages, then the store's work), for `replay --via-proxy`.
pub(crate) fn server_timing(timing: &[(&str, Duration)]) -> Option<HeaderValue> {
    let text = timing
        .iter()
        .map(|(name, d)| format!("{name};dur={:.3}", d.as_secs_f64() * 1000.0))
        .collect::<Vec<_>>()
        .join(", ");
    HeaderValue::from_str(&text).ok()
}

fn our_headers(session: &str, prompt: Option<&str>) -> HeaderMap {
    let mut ours = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_str(session) {
        ours.insert("x-ctxproxy-session", v);
    }
    if let Some(v) = prompt.and_then(|p| HeaderValue::from_str(p).ok()) {
        ours.insert("x-ctxproxy-prompt", v);
    }
    ours
}

/// `POST /v1/chat/completions`, `POST /v1/messages` and Gemini's
/// `generateContent` / `streamGenerateContent`.
async fn model<A: Api>(State(proxy): State<Arc<Proxy>>, request: Request) -> Response {
    let busy = proxy.trimmer.begin();
    let mut incoming = match read_request::<A>(&proxy, request).await {
        Ok(i) => i,
        Err(refusal) => return refusal,
    };
    if incoming.read.history.body().len() >= LARGE_BODY {
        busy.large();
    }
    let service = &proxy.service;
    // Counted before the new messages may be moved out to be stored.
    let client_tokens = incoming.client_tokens(service.config().encoding);
    let started_at = std::time::SystemTime::now();
    let started = Instant::now();
    let mut turn = match proxy
        .sessions
        .begin(
            service,
            &incoming.key,
            &incoming.project,
            &incoming.read.system,
            incoming.read.history.sent(),
        )
        .await
    {
        Ok(t) => t,
        Err(e) => return service_error::<A>(e),
    };
    turn.take_new(incoming.read.history.new_messages(turn.repeated));
    let mut timing = vec![("match", started.elapsed())];
    let started = Instant::now();
    if let Err(e) = turn.store_earlier(service).await {
        return service_error::<A>(e);
    }
    timing.push(("ingest", started.elapsed()));
    // The tokens the prompt forwarded holds; `None`: the client's body as sent.
    let mut forwarded_tokens = None;
    let (upstream_body, prompt_id) = if incoming.passthrough {
        match incoming.whole_body() {
            Ok(body) => (body, None),
            Err(e) => return not_json::<A>(&e),
        }
    } else {
        let started = Instant::now();
        let request = incoming.assemble_request(&service.config(), A::FORMAT, turn.input.clone());
        let prompt = match service.assemble_request(&turn.session, request).await {
            Ok(prompt) => prompt,
            Err(e) => return service_error::<A>(e),
        };
        timing.push(("assemble", started.elapsed()));
        let prompt_id = prompt.prompt_id.clone();
        forwarded_tokens = Some(prompt.tokens.total);
        match forwarded_body::<A>(&proxy, &incoming.read, prompt, &turn.session) {
            Ok(body) => (body, Some(prompt_id)),
            Err(e) => return not_json::<A>(&e),
        }
    };
    let figures = accounting::RequestFigures {
        api: A::FORMAT.as_str(),
        model: std::mem::take(&mut incoming.model),
        session: turn.session.clone(),
        prompt: prompt_id.clone(),
        client_tokens,
        forwarded_tokens: forwarded_tokens.map_or(client_tokens, u64::from),
        started: Some(started_at),
        ..accounting::RequestFigures::default()
    };
    let stream = incoming.read.stream;
    let url = incoming.url.clone();
    let headers = upstream::request_headers(&incoming.headers, upstream::Decoded::Yes);
    // From here on only the body's other fields are needed (the stream
    // splicer's options); the history is kept for the next request.
    let client_options = incoming.keep_history::<A>(&proxy);
    let call = rounds::ModelCall {
        proxy: proxy.clone(),
        url,
        headers,
        ours: our_headers(&turn.session, prompt_id.as_deref()),
        timing,
        client_options,
        body: upstream_body,
        turn,
        figures,
        _busy: busy,
    };
    if stream {
        rounds::streamed::<A>(call).await
    } else {
        rounds::whole::<A>(call).await
    }
}

/// `/v1beta/models/{model}:{method}` (and `/v1/models/…`): the model is in
/// the path; `generateContent` and `streamGenerateContent` are read, any
/// other method (`countTokens`, a `GET` of the model) forwarded unchanged.
async fn gemini_method(state: State<Arc<Proxy>>, request: Request) -> Response {
    let path = request.uri().path();
    let read = request.method() == axum::http::Method::POST
        && gemini::METHODS.iter().any(|m| path.ends_with(m));
    match read {
        true => model::<gemini::Gemini>(state, request).await,
        false => passthrough(state, request).await,
    }
}

/// The body to forward for an assembled prompt: the client's body around
/// it (`Api::upstream_body`), the client's messages as it sent them when
/// the prompt has the whole shape, masked as the store masks what it keeps
/// (unless `redactSecrets` is off).
fn forwarded_body<A: Api>(
    proxy: &Proxy,
    read: &history::Read,
    assembled: ctxproxy_service::api::AssembleResult,
    session: &str,
) -> Result<Value, serde_json::Error> {
    let mut prompt = assembled.prompt;
    if assembled.shape == ShapeKind::Whole {
        prompt.messages = read.history.sent_messages::<A>()?;
    }
    let mut body = A::upstream_body(read.client_body(), prompt, session);
    if proxy.service.config().redact_secrets {
        mask::mask_forwarded::<A>(&mut body);
    }
    Ok(body)
}

/// `POST /v1/messages/count_tokens`: the upstream counts what would be
/// forwarded. When the session holds all of the history but its newest
/// message, that is the assembled prompt (previewed, not recorded); any
/// other history is counted as sent.
async fn count_tokens(State(proxy): State<Arc<Proxy>>, request: Request) -> Response {
    type A = anthropic::Anthropic;
    let busy = proxy.trimmer.begin();
    let incoming = match read_request::<A>(&proxy, request).await {
        Ok(i) => i,
        Err(refusal) => return refusal,
    };
    if incoming.read.history.body().len() >= LARGE_BODY {
        busy.large();
    }
    let service = &proxy.service;
    let found = if incoming.passthrough {
        None
    } else {
        match proxy
            .sessions
            .peek(service, &incoming.key, incoming.read.history.sent())
            .await
        {
            Ok(found) => found,
            Err(e) => return service_error::<A>(e),
        }
    };
    let (body, ours) = match found {
        None => match incoming.whole_body() {
            Ok(body) => (body, HeaderMap::new()),
            Err(e) => return not_json::<A>(&e),
        },
        Some((session, input)) => {
            let request = incoming.assemble_request(&service.config(), A::FORMAT, Some(input));
            let prompt = match service.preview_request(&session, request).await {
                Ok(prompt) => prompt,
                Err(e) => return service_error::<A>(e),
            };
            match forwarded_body::<A>(&proxy, &incoming.read, prompt, &session) {
                Ok(body) => (body, our_headers(&session, None)),
                Err(e) => return not_json::<A>(&e),
            }
        }
    };
    let headers = upstream::request_headers(&incoming.headers, upstream::Decoded::Yes);
    let url = incoming.url.clone();
    incoming.keep_history::<A>(&proxy);
    let bytes = Bytes::from(body.to_string());
    match proxy
        .client
        .send(axum::http::Method::POST, &url, headers, bytes)
        .await
    {
        Ok(resp) => rounds::relay(resp, upstream::Rewritten::No, ours),
        Err(e) => error::<A>(
            StatusCode::BAD_GATEWAY,
            ErrorKind::Upstream,
            &e.to_string(),
            None,
        ),
    }
}

/// Any other path: forwarded unchanged (method, headers, body, status,
/// response streamed).
async fn passthrough(State(proxy): State<Arc<Proxy>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    if proxy.admitted(&parts.headers).is_none() {
        return (
            StatusCode::UNAUTHORIZED,
            Json(json!({"error": {"message": UNAUTHORISED}})),
        )
            .into_response();
    }
    let path = parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path().to_string(), |p| p.as_str().to_string());
    let url = proxy.upstreams.url_for(&path);
    let bytes: Bytes = match tokio::time::timeout(
        proxy.body_timeout,
        axum::body::to_bytes(body, usize::MAX),
    )
    .await
    {
        Ok(Ok(b)) => b,
        Ok(Err(e)) => return (StatusCode::BAD_REQUEST, format!("body: {e}")).into_response(),
        Err(_) => return body_too_slow::<openai::OpenAi>(proxy.body_timeout),
    };
    let headers = upstream::request_headers(&parts.headers, upstream::Decoded::No);
    match proxy.client.send(parts.method, &url, headers, bytes).await {
        Ok(resp) => rounds::relay(resp, upstream::Rewritten::No, HeaderMap::new()),
        Err(e) => (
            StatusCode::BAD_GATEWAY,
            Json(json!({"error": {"message": e.to_string(), "type": "upstream_error"}})),
        )
            .into_response(),
    }
}

/// A body that streams from a channel the pump writes.
pub(crate) fn channel_body(rx: tokio::sync::mpsc::Receiver<Bytes>) -> Body {
    Body::from_stream(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<Bytes, std::io::Error>(b), rx))
    }))
}

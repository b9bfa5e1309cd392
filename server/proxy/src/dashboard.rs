//! What a person looks at while the proxy runs: `GET /metrics` (the
//! `metrics` text for Prometheus) and `GET /dashboard`, one self-contained
//! page (`dashboard/page.html`: no external fetch) that reads the JSON
//! below every few seconds: the totals since start, every session that
//! made a request with what the client sent, what was forwarded and what
//! the provider reported, each session's requests, and each prompt layer by
//! layer as `ctx/explain` records it.
//!
//! With `--token`, every one of these needs it too: the
//! `x-ctxproxy-token` header, or `?token=` for a browser (the page passes
//! it on to its own requests).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use ctxproxy_core::usage::Usage;
use ctxproxy_service::api::ExplainParams;
use ctxproxy_service::requests::{LoggedRequest, SessionRequests};
use ctxproxy_service::service::ServiceError;
use serde_json::{json, Value};

use crate::Proxy;

/// The requests the overview's charts show, newest last.
const RECENT: u32 = 500;

const PAGE: &str = include_str!("dashboard/page.html");

pub fn routes() -> Router<Arc<Proxy>> {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/dashboard", get(page))
        .route("/dashboard/api/overview", get(overview))
        .route("/dashboard/api/sessions/{session}", get(session))
        .route(
            "/dashboard/api/sessions/{session}/prompts/{prompt}",
            get(prompt),
        )
}

type Params = Query<HashMap<String, String>>;

/// Who may see the dashboard, from the token in the header or the query,
/// and whose sessions they see (a person on a `--tokens` list: their own;
/// `None`: everyone's).
fn admitted(proxy: &Proxy, headers: &HeaderMap, query: &Params) -> Result<Option<String>, Refused> {
    let given = query.get("token").map(String::as_bytes);
    match proxy
        .admitted(headers)
        .or_else(|| proxy.access.admit(given))
    {
        Some(who) => Ok(who.tenant()),
        None => Err(Refused),
    }
}

/// A request without the token the proxy requires.
struct Refused;

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        (
            StatusCode::UNAUTHORIZED,
            "ctxproxy: this proxy requires its token: the x-ctxproxy-token header, or ?token= in the address\n",
        )
            .into_response()
    }
}

/// A session the dashboard may show to one who sees `tenant`'s sessions
/// (every session: `None`); another tenant's is as unknown as one that
/// does not exist.
async fn shown(proxy: &Proxy, tenant: Option<&str>, session: &str) -> Result<(), Response> {
    let Some(tenant) = tenant else {
        return Ok(());
    };
    match proxy.service.tenant_of_session(session).await {
        Ok(t) if t == tenant => Ok(()),
        Ok(_) => Err(failed(&ServiceError::UnknownSession(session.to_string()))),
        Err(e) => Err(failed(&e)),
    }
}

async fn metrics(State(proxy): State<Arc<Proxy>>, headers: HeaderMap, query: Params) -> Response {
    if let Err(refused) = admitted(&proxy, &headers, &query) {
        return refused.into_response();
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        proxy.metrics.render(),
    )
        .into_response()
}

async fn page(State(proxy): State<Arc<Proxy>>, headers: HeaderMap, query: Params) -> Response {
    if let Err(refused) = admitted(&proxy, &headers, &query) {
        return refused.into_response();
    }
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        PAGE,
    )
        .into_response()
}

async fn overview(State(proxy): State<Arc<Proxy>>, headers: HeaderMap, query: Params) -> Response {
    let tenant = match admitted(&proxy, &headers, &query) {
        Ok(tenant) => tenant,
        Err(refused) => return refused.into_response(),
    };
    let service = &proxy.service;
    let (sessions, recent) = match (
        service.sessions_with_requests(tenant.as_deref()).await,
        service.recent_requests(RECENT, tenant.as_deref()).await,
    ) {
        (Ok(s), Ok(r)) => (s, r),
        (Err(e), _) | (_, Err(e)) => return failed(&e),
    };
    Json(json!({
        "totals": proxy.metrics.totals(),
        "sessions": sessions.iter().map(session_json).collect::<Vec<_>>(),
        "recent": recent.iter().map(request_json).collect::<Vec<_>>(),
    }))
    .into_response()
}

async fn session(
    State(proxy): State<Arc<Proxy>>,
    Path(session): Path<String>,
    headers: HeaderMap,
    query: Params,
) -> Response {
    let tenant = match admitted(&proxy, &headers, &query) {
        Ok(tenant) => tenant,
        Err(refused) => return refused.into_response(),
    };
    if let Err(hidden) = shown(&proxy, tenant.as_deref(), &session).await {
        return hidden;
    }
    match proxy.service.requests(&session).await {
        Ok(requests) => Json(json!({
            "session": session,
            "requests": requests.iter().map(request_json).collect::<Vec<_>>(),
        }))
        .into_response(),
        Err(e) => failed(&e),
    }
}

async fn prompt(
    State(proxy): State<Arc<Proxy>>,
    Path((session, prompt)): Path<(String, String)>,
    headers: HeaderMap,
    query: Params,
) -> Response {
    let tenant = match admitted(&proxy, &headers, &query) {
        Ok(tenant) => tenant,
        Err(refused) => return refused.into_response(),
    };
    if let Err(hidden) = shown(&proxy, tenant.as_deref(), &session).await {
        return hidden;
    }
    let service = &proxy.service;
    let explained = service
        .explain(ExplainParams {
            session_id: session.clone(),
            prompt_id: prompt.clone(),
        })
        .await;
    let explained = match explained {
        Ok(e) => e,
        Err(e) => return failed(&e),
    };
    let request = match service.request_of_prompt(&session, &prompt).await {
        Ok(r) => r,
        Err(e) => return failed(&e),
    };
    Json(json!({
        "prompt": explained,
        "request": request.as_ref().map(request_json),
    }))
    .into_response()
}

fn failed(e: &ServiceError) -> Response {
    let status = match e {
        ServiceError::InvalidParams(_) => StatusCode::BAD_REQUEST,
        ServiceError::UnknownSession(_) | ServiceError::UnknownId(_) => StatusCode::NOT_FOUND,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    (status, Json(json!({"error": {"message": e.to_string()}}))).into_response()
}

fn usage_json(u: &Usage) -> Value {
    json!({
        "input": u.input,
        "cachedInput": u.cached_input,
        "cacheWrite": u.cache_write,
        "output": u.output,
    })
}

fn session_json(s: &SessionRequests) -> Value {
    json!({
        "session": s.session,
        "title": s.title,
        "project": s.workspace,
        "requests": s.requests,
        "clientTokens": s.client_tokens,
        "forwardedTokens": s.forwarded_tokens,
        "reported": s.reported,
        "usage": usage_json(&s.usage),
        "lastAt": s.last_at,
    })
}

fn request_json(r: &LoggedRequest) -> Value {
    let q = &r.request;
    json!({
        "at": r.at,
        "session": q.session,
        "prompt": q.prompt.map(|p| p.to_string()),
        "api": q.api,
        "model": q.model,
        "outcome": q.outcome,
        "clientTokens": q.client_tokens,
        "forwardedTokens": q.forwarded_tokens,
        "rounds": q.rounds,
        "usage": q.usage.as_ref().map(usage_json),
        "addedMs": q.added_ms,
    })
}

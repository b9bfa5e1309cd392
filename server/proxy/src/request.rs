//! A model request read and checked: the token, the body in the API's
//! shape (against the body its conversation sent last), ctxproxy's own
//! headers, the session key; and what the assembled prompt and the
//! accounting need of it.

use axum::extract::Request;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use ctxproxy_core::message::Role;
use ctxproxy_service::assemble;
use serde_json::Value;

use crate::api::{Api, ErrorKind};
use crate::errors::{body_too_slow, error, service_error, UNAUTHORISED};
use crate::{history, mask, project, session, Proxy};

pub(crate) fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// A model request, read and checked.
pub(crate) struct Incoming {
    pub(crate) url: String,
    /// The model the client asked for.
    pub(crate) model: String,
    pub(crate) headers: HeaderMap,
    pub(crate) read: history::Read,
    pub(crate) budget: Option<u32>,
    pub(crate) passthrough: bool,
    /// The conversation: the client's tenant and the key it is named by.
    pub(crate) key: session::Key,
    /// The project a session it opens is stored under (`project`).
    pub(crate) project: String,
    /// The session headers its history is kept under.
    pub(crate) history_key: Option<String>,
}

/// The headers that name a conversation: a kept history is resumed only
/// by a request with the same.
const SESSION_HEADERS: [&str; 5] = [
    "x-ctxproxy-session",
    "x-claude-code-session-id",
    "session-id",
    "session_id",
    "x-session-id",
];

fn history_key(headers: &HeaderMap, tenant: &str) -> Option<String> {
    let named: Vec<String> = SESSION_HEADERS
        .iter()
        .filter_map(|name| header_str(headers, name).map(|v| format!("{name}={v}")))
        .collect();
    // Another tenant's conversation of the same name is another one.
    (!named.is_empty()).then(|| format!("{tenant}\n{}", named.join("\n")))
}

/// The credential a request carries for the model API: a bearer token, an
/// `x-api-key` or `x-goog-api-key`, or Gemini's `?key=`; what its tenant is
/// derived from.
fn credential<'a>(headers: &'a HeaderMap, query: Option<&'a str>) -> Option<&'a str> {
    let bearer = header_str(headers, "authorization").map(|v| {
        let v = v.trim();
        match v.get(..7) {
            Some(scheme) if scheme.eq_ignore_ascii_case("bearer ") => v[7..].trim(),
            _ => v,
        }
    });
    bearer
        .or_else(|| header_str(headers, "x-api-key"))
        .or_else(|| header_str(headers, "x-goog-api-key"))
        .or_else(|| query?.split('&').find_map(|pair| pair.strip_prefix("key=")))
        .filter(|c| !c.trim().is_empty())
}

/// Reads a model request: the token, the body in the API's shape, and
/// ctxproxy's own headers; a refusal is the response to send.
pub(crate) async fn read_request<A: Api>(
    proxy: &Proxy,
    request: Request,
) -> Result<Incoming, Response> {
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    let Some(admitted) = proxy.admitted(&headers) else {
        return Err(error::<A>(
            StatusCode::UNAUTHORIZED,
            ErrorKind::Unauthorized,
            UNAUTHORISED,
            None,
        ));
    };
    let bad = |message: &str, param: &str| {
        error::<A>(
            StatusCode::BAD_REQUEST,
            ErrorKind::InvalidRequest,
            message,
            Some(param),
        )
    };
    let path = parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path().to_string(), |p| p.as_str().to_string());
    let tenant = match admitted.tenant() {
        Some(person) => person,
        None => proxy
            .service
            .tenant_of(credential(&headers, parts.uri.query()))
            .await
            .map_err(service_error::<A>)?,
    };
    let history_key = history_key(&headers, &tenant);
    let expected = header_str(&headers, "content-length")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let receiving = history::receive::receive(
        body,
        &proxy.history_cache,
        A::FORMAT,
        history_key.as_deref(),
        expected,
    );
    let received = tokio::time::timeout(proxy.body_timeout, receiving)
        .await
        .map_err(|_| body_too_slow::<A>(proxy.body_timeout))?
        .map_err(|e| bad(&format!("body: {e}"), "body"))?;
    let (read, _resumed) = received.read::<A>();
    let mut read = read.map_err(|b| bad(&b.message, &b.param))?;
    read.stream |= A::streams_by_path(parts.uri.path());
    let budget = match header_str(&headers, "x-ctxproxy-budget").map(str::parse::<u32>) {
        None => None,
        Some(Ok(b)) if b > 0 => Some(b),
        Some(_) => {
            return Err(bad(
                "x-ctxproxy-budget: expected a positive number of tokens",
                "x-ctxproxy-budget",
            ))
        }
    };
    let passthrough = match header_str(&headers, "x-ctxproxy-mode") {
        None | Some("assemble") => false,
        Some("passthrough") => true,
        Some(other) => {
            return Err(bad(
                &format!("x-ctxproxy-mode: expected passthrough or assemble, got {other:?}"),
                "x-ctxproxy-mode",
            ))
        }
    };
    let server_side = A::server_side_history(&read.envelope);
    if server_side {
        eprintln!(
            "ctxproxy proxy: {}: previous_response_id names history the upstream keeps: forwarded as sent (passthrough)",
            parts.uri.path()
        );
    }
    let passthrough = passthrough || server_side;
    let first_user = read
        .history
        .messages()
        .iter()
        .find(|m| m.role == Role::User)
        .map_or("", |m| m.content.as_str());
    let key = session::Key {
        name: session::session_key(&headers, &read.envelope, &read.system, first_user),
        tenant,
    };
    let project = project::request_project(
        &headers,
        proxy.project.as_deref(),
        &read.system,
        read.history.messages(),
    )
    .map_err(|e| bad(&e.to_string(), project::HEADER))?;
    Ok(Incoming {
        model: A::model(&read.envelope, parts.uri.path()),
        url: proxy.upstreams.url_for(&path),
        headers,
        read,
        budget,
        passthrough,
        key,
        project,
        history_key,
    })
}

impl Incoming {
    pub(crate) fn assemble_request(
        &self,
        config: &ctxproxy_core::config::Config,
        format: ctxproxy_service::format::Format,
        input: Option<ctxproxy_core::message::Message>,
    ) -> assemble::Request {
        // Recorded as they are forwarded: masked (`mask`).
        let redact = config.redact_secrets;
        assemble::Request {
            budget: self.budget.unwrap_or(config.budget),
            encoding: config.encoding,
            order: config.order,
            format,
            system: Some(&self.read.system)
                .filter(|s| !s.is_empty())
                .map(|s| match redact {
                    true => mask::system_text(s),
                    false => s.clone(),
                }),
            input: input.map(|m| match redact {
                true => ctxproxy_core::secrets::mask_message(m),
                false => m,
            }),
            calls: config.calls.clone(),
            whole_history: config.whole_history,
            client_tools_tokens: self.client_tools_tokens(config.encoding),
        }
    }

    /// The tokens of what the client sent, counted as the replay report
    /// counts full history: its messages (those a kept history counted
    /// before are not counted again), the system prompt, its tools and the
    /// reply primer.
    pub(crate) fn client_tokens(&mut self, encoding: ctxproxy_core::tokens::Encoding) -> u64 {
        use ctxproxy_core::render::{MESSAGE_OVERHEAD, REPLY_PRIMER};
        let system = match self.read.system.as_str() {
            "" => 0,
            s => ctxproxy_core::tokens::count(encoding, s) + MESSAGE_OVERHEAD,
        };
        self.read.history.message_tokens(encoding)
            + u64::from(system + self.client_tools_tokens(encoding) + REPLY_PRIMER)
    }

    /// The tokens of the client's tool definitions as they are forwarded
    /// (compact JSON, keys sorted, as `rounds` serialises the body).
    pub(crate) fn client_tools_tokens(&self, encoding: ctxproxy_core::tokens::Encoding) -> u32 {
        match self.read.envelope.get("tools") {
            Some(tools @ Value::Array(list)) if !list.is_empty() => {
                ctxproxy_core::tokens::count(encoding, &tools.to_string())
            }
            _ => 0,
        }
    }

    /// The client's body as sent, for a request forwarded as it is: read
    /// whole again (a passthrough or an unknown history's `count_tokens`,
    /// not the path a long session's requests take).
    pub(crate) fn whole_body(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_slice(self.read.history.body())
    }

    /// Keeps the request's history for its conversation's next request.
    pub(crate) fn keep_history<A: Api>(self, proxy: &Proxy) -> Value {
        let evicted = proxy
            .history_cache
            .put(A::FORMAT, self.history_key, self.read.history);
        if !evicted.is_empty() {
            // Thousands of allocations: freed off the request's path.
            tokio::task::spawn_blocking(move || drop(evicted));
        }
        self.read.envelope
    }
}

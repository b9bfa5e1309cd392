//! `ctxproxy proxy`: the OpenAI / Anthropic / Gemini front door, the one edge that
//! knows HTTP. Each model request is handled in order: find the session,
//! store what is new, assemble under the budget, forward, answer context
//! tools, reply (streamed as the upstream streams), record the reply: all
//! through the same `Service` the LSP server drives. Any other path is
//! forwarded unchanged.

mod accounting;
mod anthropic;
mod api;
mod context_tools;
mod dashboard;
mod gemini;
mod history;
mod history_cache;
mod listen;
mod mask;
mod metrics;
pub mod model_api;
mod openai;
mod receive;
mod responses;
#[cfg(test)]
mod resumed_tests;
mod rounds;
mod session;
mod sse;
pub mod tally;
mod traces;
mod upstream;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::{Json, Router};
use ctxproxy_core::message::Role;
use serde_json::{json, Value};

use api::{Api, ErrorKind};
use ctxproxy_core::packer::ShapeKind;
use ctxproxy_service::assemble;
use ctxproxy_service::service::{Service, ServiceError};
pub use model_api::ModelApi;
pub use upstream::Upstreams;

#[derive(clap::Args)]
pub struct Args {
    /// Address to listen on; port 0 lets the OS choose (the ready line says which).
    #[arg(long, default_value = "127.0.0.1:8787")]
    listen: SocketAddr,
    /// Require `x-ctxproxy-token: T` on every request; needed to listen beyond loopback.
    #[arg(long, value_name = "T")]
    token: Option<String>,
    #[command(flatten)]
    options: Options,
}

/// What a proxy is run with besides where it listens: the store, the
/// settings, the upstreams and the timeouts (`ctxproxy proxy` and `ctxproxy run`).
#[derive(clap::Args)]
pub struct Options {
    /// The store database (default: $CTXPROXY_STORE, else <data dir>/ctxproxy/store.db).
    #[arg(long)]
    store: Option<PathBuf>,
    /// Settings as the JSON editors send in initializationOptions, e.g. '{"budget": 24000}'.
    #[arg(long, value_name = "JSON")]
    config: Option<String>,
    /// Base URL of the OpenAI-compatible API.
    #[arg(long, default_value = "https://api.openai.com")]
    openai_upstream: String,
    /// Base URL of the Anthropic API.
    #[arg(long, default_value = "https://api.anthropic.com")]
    anthropic_upstream: String,
    /// Base URL of the Gemini API.
    #[arg(long, default_value = "https://generativelanguage.googleapis.com")]
    gemini_upstream: String,
    #[command(flatten)]
    timeouts: Timeouts,
}

/// How long the proxy waits on its clients and its upstream, in seconds
/// (fractions allowed); docs/PROXY.md lists them.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct Timeouts {
    /// Seconds a client has to send a request's headers (the connection is closed after).
    #[arg(long = "header-timeout", value_name = "SECS", default_value = "10", value_parser = seconds)]
    pub header: Duration,
    /// Seconds a client has to send a request's body, once its headers are read (a 408 after).
    #[arg(long = "body-timeout", value_name = "SECS", default_value = "60", value_parser = seconds)]
    pub body: Duration,
    /// Seconds the upstream may go without sending a byte before the request fails.
    #[arg(long = "upstream-idle-timeout", value_name = "SECS", default_value = "300", value_parser = seconds)]
    pub upstream_idle: Duration,
    /// Seconds a shutdown (SIGTERM, Ctrl-C) lets the requests in flight finish before it cancels them.
    #[arg(long = "shutdown-timeout", value_name = "SECS", default_value = "10", value_parser = seconds)]
    pub shutdown: Duration,
}

impl Default for Timeouts {
    /// The command line's defaults, stated once, in the attributes above.
    fn default() -> Timeouts {
        #[derive(clap::Parser)]
        struct Only {
            #[command(flatten)]
            timeouts: Timeouts,
        }
        <Only as clap::Parser>::parse_from(["ctxproxy"]).timeouts
    }
}

fn seconds(text: &str) -> Result<Duration, String> {
    text.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("expected a positive number of seconds, got {text:?}"))
}

/// Everything a handler needs; one per proxy.
pub struct Proxy {
    service: Service,
    upstreams: Upstreams,
    client: upstream::Client,
    sessions: session::Sessions,
    history_cache: history_cache::HistoryCache,
    token: Option<String>,
    /// `Timeouts::body`.
    body_timeout: Duration,
    /// What each session was sent and forwarded, when kept (`ctxproxy run`).
    tally: Option<tally::Tally>,
    /// What `GET /metrics` and the dashboard's totals show.
    metrics: metrics::Metrics,
    /// A span per request, when `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
    traces: Option<traces::Traces>,
}

impl Proxy {
    /// A proxy over `service` forwarding to `upstreams`; `token`, when
    /// given, is required on every request.
    pub fn new(
        service: Service,
        upstreams: Upstreams,
        timeouts: Timeouts,
        token: Option<String>,
    ) -> anyhow::Result<Proxy> {
        Ok(Proxy {
            service,
            upstreams,
            client: upstream::Client::new(timeouts.upstream_idle)
                .context("building the HTTP client")?,
            sessions: session::Sessions::default(),
            history_cache: history_cache::HistoryCache::default(),
            token,
            body_timeout: timeouts.body,
            tally: None,
            metrics: metrics::Metrics::default(),
            traces: traces::Traces::from_env().context("OTEL_EXPORTER_OTLP_ENDPOINT")?,
        })
    }

    pub fn service(&self) -> &Service {
        &self.service
    }
}

/// `ctxproxy proxy`: serves until SIGTERM or Ctrl-C.
pub async fn serve(args: Args) -> anyhow::Result<()> {
    if !args.listen.ip().is_loopback() && args.token.is_none() {
        anyhow::bail!(
            "--listen {}: not a loopback address; give --token T to accept requests from other hosts",
            args.listen
        );
    }
    let opened = open(args.options, args.listen, args.token, false).await?;
    eprintln!("ctxproxy proxy listening on http://{}", opened.addr);
    opened.serve_until(shutdown_signal()).await?;
    Ok(())
}

/// A proxy bound to its address, not yet serving.
pub struct Opened {
    pub addr: SocketAddr,
    proxy: Arc<Proxy>,
    listener: tokio::net::TcpListener,
    deadlines: listen::Deadlines,
}

/// Opens the store and binds `listen`; with `tally`, the proxy keeps what
/// each session was sent and forwarded (`Opened::serve_until` returns it).
pub async fn open(
    args: Options,
    listen: SocketAddr,
    token: Option<String>,
    tally: bool,
) -> anyhow::Result<Opened> {
    let mut config = ctxproxy_core::config::Config::default();
    let mut store_path = None;
    if let Some(text) = &args.config {
        let value: Value = serde_json::from_str(text).context("--config is not JSON")?;
        let (c, path) = ctxproxy_service::config::apply(&config, value)
            .map_err(|e| anyhow::anyhow!("--config: {e}"))?;
        config = c;
        store_path = path;
    }
    let store_path = args
        .store
        .or(store_path)
        .unwrap_or_else(ctxproxy_service::config::default_store_path);
    if let Some(dir) = store_path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::thread::spawn(ctxproxy_core::tokens::warm_up);
    let upstreams = Upstreams {
        openai: args.openai_upstream,
        anthropic: args.anthropic_upstream,
        gemini: args.gemini_upstream,
    };
    let service = Service::open(store_path, config, None)?;
    let mut proxy = Proxy::new(service, upstreams, args.timeouts, token)?;
    proxy.tally = tally.then(tally::Tally::default);
    let proxy = Arc::new(proxy);
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("listening on {listen}"))?;
    Ok(Opened {
        addr: listener.local_addr()?,
        proxy,
        listener,
        deadlines: listen::Deadlines {
            headers: args.timeouts.header,
            shutdown: args.timeouts.shutdown,
        },
    })
}

impl Opened {
    /// Serves until `shutdown` completes and the requests in flight finish
    /// (or `--shutdown-timeout` passes), then checkpoints the store. Returns
    /// the tally, when kept.
    pub async fn serve_until(
        self,
        shutdown: impl std::future::Future<Output = ()>,
    ) -> anyhow::Result<Vec<tally::SessionTally>> {
        let Opened {
            proxy,
            listener,
            deadlines,
            ..
        } = self;
        let cancelled = listen::serve(listener, router(proxy.clone()), deadlines, shutdown).await;
        if cancelled > 0 {
            eprintln!(
                "ctxproxy proxy: {cancelled} connection(s) still busy after {:?}: cancelled, nothing recorded for their turns",
                deadlines.shutdown
            );
        }
        let exporting = proxy.clone();
        let _ = tokio::task::spawn_blocking(move || {
            if let Some(t) = &exporting.traces {
                t.shutdown();
            }
        })
        .await;
        proxy.service.checkpoint().await?;
        Ok(proxy
            .tally
            .as_ref()
            .map(tally::Tally::sessions)
            .unwrap_or_default())
    }
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

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

/// Our own error, in the API's shape.
fn error<A: Api>(
    status: StatusCode,
    kind: ErrorKind,
    message: &str,
    param: Option<&str>,
) -> Response {
    (status, Json(A::error_body(kind, message, param))).into_response()
}

/// A body read once that does not read again: cannot happen (it is the
/// same bytes), answered as a body that is not JSON.
fn not_json<A: Api>(e: &serde_json::Error) -> Response {
    error::<A>(
        StatusCode::BAD_REQUEST,
        ErrorKind::InvalidRequest,
        &format!("body: not JSON: {e}"),
        Some("body"),
    )
}

/// A 408: the body did not arrive within `--body-timeout`.
fn body_too_slow<A: Api>(timeout: Duration) -> Response {
    error::<A>(
        StatusCode::REQUEST_TIMEOUT,
        ErrorKind::InvalidRequest,
        &format!("body: not received within {timeout:?} (--body-timeout)"),
        Some("body"),
    )
}

fn service_error<A: Api>(e: ServiceError) -> Response {
    match e {
        ServiceError::BudgetTooSmall(_) => error::<A>(
            StatusCode::BAD_REQUEST,
            ErrorKind::InvalidRequest,
            &format!(
                "x-ctxproxy-budget: {e}; raise it with the x-ctxproxy-budget header or --config '{{\"budget\": N}}'"
            ),
            Some("x-ctxproxy-budget"),
        ),
        ServiceError::InvalidParams(_) | ServiceError::PayloadTooLarge(_) => error::<A>(
            StatusCode::BAD_REQUEST,
            ErrorKind::InvalidRequest,
            &e.to_string(),
            None,
        ),
        _ => error::<A>(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorKind::Internal,
            &format!("ctxproxy: {e}"),
            None,
        ),
    }
}

impl Proxy {
    /// Whether a request may be served: no `--token`, or its
    /// `x-ctxproxy-token` header gives it.
    fn authorised(&self, headers: &HeaderMap) -> bool {
        self.token_is(headers.get("x-ctxproxy-token").map(HeaderValue::as_bytes))
    }

    /// Whether `given` is the token (anything is, without `--token`).
    fn token_is(&self, given: Option<&[u8]>) -> bool {
        match &self.token {
            None => true,
            Some(t) => given.is_some_and(|g| g == t.as_bytes()),
        }
    }
}

const UNAUTHORISED: &str = "ctxproxy: this proxy requires the x-ctxproxy-token header";

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// A model request, read and checked.
struct Incoming {
    url: String,
    /// The model the client asked for.
    model: String,
    headers: HeaderMap,
    read: history::Read,
    budget: Option<u32>,
    passthrough: bool,
    key: String,
    /// The session headers its history is kept under.
    history_key: Option<String>,
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

fn history_key(headers: &HeaderMap) -> Option<String> {
    let named: Vec<String> = SESSION_HEADERS
        .iter()
        .filter_map(|name| header_str(headers, name).map(|v| format!("{name}={v}")))
        .collect();
    (!named.is_empty()).then(|| named.join("\n"))
}

/// Reads a model request: the token, the body in the API's shape, and
/// ctxproxy's own headers; a refusal is the response to send.
async fn read_request<A: Api>(proxy: &Proxy, request: Request) -> Result<Incoming, Response> {
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    if !proxy.authorised(&headers) {
        return Err(error::<A>(
            StatusCode::UNAUTHORIZED,
            ErrorKind::Unauthorized,
            UNAUTHORISED,
            None,
        ));
    }
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
    let history_key = history_key(&headers);
    let expected = header_str(&headers, "content-length")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let receiving = receive::receive(
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
    let key = session::session_key(&headers, &read.envelope, &read.system, first_user);
    Ok(Incoming {
        model: A::model(&read.envelope, parts.uri.path()),
        url: proxy.upstreams.url_for(&path),
        headers,
        read,
        budget,
        passthrough,
        key,
        history_key,
    })
}

impl Incoming {
    fn assemble_request(
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
    fn client_tokens(&mut self, encoding: ctxproxy_core::tokens::Encoding) -> u64 {
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
    fn client_tools_tokens(&self, encoding: ctxproxy_core::tokens::Encoding) -> u32 {
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
    fn whole_body(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_slice(self.read.history.body())
    }

    /// Keeps the request's history for its conversation's next request.
    fn keep_history<A: Api>(self, proxy: &Proxy) -> Value {
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

/// A body from this size on is large: once it is read, its new messages
/// stored and its prompt assembled, the memory that took is given back.
const LARGE_BODY: usize = 1 << 20;

/// Hands the allocator's free memory back to the system. glibc's malloc
/// keeps what a large request freed (the parsed body, the store's batches,
/// spread over the arenas of the threads that made them) for the process's
/// lifetime; `malloc_trim` releases the free pages of every arena.
fn give_memory_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    tokio::task::spawn_blocking(|| {
        // SAFETY: malloc_trim only walks the allocator's own free lists.
        unsafe { libc::malloc_trim(0) };
    });
}

/// `server-timing: match;dur=0.20, ingest;dur=0.41, assemble;dur=1.20`
/// (milliseconds): where the time the proxy adds goes (finding the session
/// and its new messages, then the store's work), for `replay --via-proxy`.
fn server_timing(timing: &[(&str, Duration)]) -> Option<HeaderValue> {
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
    let mut incoming = match read_request::<A>(&proxy, request).await {
        Ok(i) => i,
        Err(refusal) => return refusal,
    };
    let service = &proxy.service;
    let started_at = std::time::SystemTime::now();
    let started = Instant::now();
    let mut turn = match proxy
        .sessions
        .begin(
            service,
            &incoming.key,
            &incoming.read.system,
            incoming.read.history.sent(),
        )
        .await
    {
        Ok(t) => t,
        Err(e) => return service_error::<A>(e),
    };
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
    let client_tokens = incoming.client_tokens(service.config().encoding);
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
    let headers = upstream::request_headers(&incoming.headers, true);
    // From here on only the body's other fields are needed (the stream
    // splicer's options); the history is kept for the next request.
    let large = incoming.read.history.body().len() >= LARGE_BODY;
    let client_options = incoming.keep_history::<A>(&proxy);
    if large {
        // What reading, storing and assembling it took is freed by now.
        give_memory_back();
    }
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
    let incoming = match read_request::<A>(&proxy, request).await {
        Ok(i) => i,
        Err(refusal) => return refusal,
    };
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
    let headers = upstream::request_headers(&incoming.headers, true);
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
    if !proxy.authorised(&parts.headers) {
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
    let headers = upstream::request_headers(&parts.headers, false);
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
fn channel_body(rx: tokio::sync::mpsc::Receiver<Bytes>) -> Body {
    Body::from_stream(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<Bytes, std::io::Error>(b), rx))
    }))
}

//! `ctxproxy proxy`: the OpenAI / Anthropic / Gemini front door, the one edge that
//! knows HTTP. Each model request is handled in order: find the session,
//! store what is new, assemble under the budget, forward, answer context
//! tools, reply (streamed as the upstream streams), record the reply: all
//! through the same `Service` the LSP server drives. Any other path is
//! forwarded unchanged.
//!
//! By job: `serve` (opening the store, listening, shutting down), `router`
//! (the routes and their handlers), `request` (a model request read and
//! checked), `errors` (our own error bodies), `history` (a body read
//! against the one its conversation sent last), `session` (which session
//! and which messages are new), `rounds` (forwarding, context-tool rounds,
//! replies), `project` (which project a request belongs to), `accounting`
//! with `metrics`, `traces`, `tally` and `dashboard` (what is counted of a
//! request and where it shows), `trim` (memory given back once idle after
//! a large request).

mod access;
mod accounting;
mod anthropic;
mod api;
mod context_tools;
mod dashboard;
mod errors;
mod gemini;
mod history;
mod listen;
mod mask;
mod metrics;
pub mod model_api;
mod openai;
pub mod project;
mod request;
mod responses;
#[cfg(test)]
mod resumed_tests;
mod rounds;
mod router;
mod serve;
mod session;
mod sse;
pub mod tally;
mod traces;
mod trim;
mod upstream;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::http::{HeaderMap, HeaderValue};
use ctxproxy_service::service::Service;

pub use access::{Access, TokensError};
pub use model_api::ModelApi;
pub use router::router;
pub use serve::{open, serve, Opened};
pub use upstream::Upstreams;

/// What a proxy is run with besides where it listens: the store, the
/// settings, the upstreams and the timeouts (`ctxproxy proxy` and
/// `ctxproxy run`; the command line's arguments become this).
pub struct Options {
    /// The store database; `None`: the settings' `storePath`, else the default.
    pub store: Option<PathBuf>,
    /// Settings as the JSON editors send in initializationOptions.
    pub config: Option<String>,
    pub upstreams: Upstreams,
    pub timeouts: Timeouts,
    /// The project of every request that names none in `x-ctxproxy-project`
    /// (`--project`, `ctxproxy run`'s directory); `None`: the directory
    /// each assistant states, if any.
    pub project: Option<PathBuf>,
}

/// How long the proxy waits on its clients and its upstream; docs/PROXY.md
/// lists them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timeouts {
    /// A client's time to send a request's headers (the connection is closed after).
    pub header: Duration,
    /// A client's time to send a request's body, once its headers are read (a 408 after).
    pub body: Duration,
    /// How long the upstream may go without sending a byte before the request fails.
    pub upstream_idle: Duration,
    /// How long a shutdown (SIGTERM, Ctrl-C) lets the requests in flight finish.
    pub shutdown: Duration,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            header: Duration::from_secs(10),
            body: Duration::from_secs(60),
            upstream_idle: Duration::from_secs(300),
            shutdown: Duration::from_secs(10),
        }
    }
}

/// Everything a handler needs; one per proxy.
pub struct Proxy {
    service: Service,
    upstreams: Upstreams,
    client: upstream::Client,
    sessions: session::Sessions,
    history_cache: Arc<history::cache::HistoryCache>,
    access: Access,
    /// `Timeouts::body`.
    body_timeout: Duration,
    /// What each session was sent and forwarded, when kept (`ctxproxy run`).
    tally: Option<tally::Tally>,
    /// `Options::project`, normalised.
    project: Option<String>,
    /// What `GET /metrics` and the dashboard's totals show.
    metrics: metrics::Metrics,
    /// A span per request, when `OTEL_EXPORTER_OTLP_ENDPOINT` is set.
    traces: Option<traces::Traces>,
    /// The requests in flight, for memory given back once they end.
    trimmer: Arc<trim::Trimmer>,
}

impl Proxy {
    /// A proxy over `service` forwarding to `upstreams`, serving whom
    /// `access` admits.
    pub fn new(
        service: Service,
        upstreams: Upstreams,
        timeouts: Timeouts,
        access: Access,
    ) -> anyhow::Result<Proxy> {
        Ok(Proxy {
            service,
            upstreams,
            client: upstream::Client::new(timeouts.upstream_idle)
                .context("building the HTTP client")?,
            sessions: session::Sessions::default(),
            history_cache: Arc::default(),
            access,
            body_timeout: timeouts.body,
            tally: None,
            project: None,
            metrics: metrics::Metrics::default(),
            traces: traces::Traces::from_env().context("OTEL_EXPORTER_OTLP_ENDPOINT")?,
            trimmer: Arc::default(),
        })
    }

    pub fn service(&self) -> &Service {
        &self.service
    }
}

impl Proxy {
    /// Whether a request may be served, and as whom: its
    /// `x-ctxproxy-token` header read against `--token` / `--tokens`.
    fn admitted(&self, headers: &HeaderMap) -> Option<access::Admitted<'_>> {
        self.access
            .admit(headers.get(access::TOKEN_HEADER).map(HeaderValue::as_bytes))
    }
}

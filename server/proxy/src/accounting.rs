//! What a forwarded model request is accounted as when it ends: what the
//! client sent and what was forwarded (ctxproxy's counts), what the
//! provider reported it counted over every round, and the time ctxproxy
//! added. One place hands it to those that keep it: the metrics, the
//! store's request log (the dashboard, `show-prompt`), `ctxproxy run`'s
//! tally and, when exported, the traces.

use std::time::{Duration, SystemTime};

use ctxproxy_core::usage::Usage;
use ctxproxy_service::requests::RequestLog;
use ctxproxy_service::service::prompt_id_of;

use crate::Proxy;

/// How a forwarded request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The client got the whole reply, and it was recorded.
    Ok,
    /// The upstream answered with an error, broke off, or sent what the
    /// proxy could not read.
    UpstreamError,
    /// The upstream could not be reached.
    Unreachable,
    /// The client went away before the reply ended.
    ClientGone,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::UpstreamError => "upstream_error",
            Outcome::Unreachable => "unreachable",
            Outcome::ClientGone => "client_gone",
        }
    }
}

/// One request's figures, filled in as it goes.
#[derive(Clone, Debug, Default)]
pub struct RequestFigures {
    /// `Format::as_str` of its API.
    pub api: &'static str,
    pub model: String,
    pub session: String,
    /// The prompt assembled for it (`p<N>`); `None`: forwarded as sent.
    pub prompt: Option<String>,
    pub client_tokens: u64,
    pub forwarded_tokens: u64,
    /// Upstream calls made: 1, plus one per context-tool round.
    pub rounds: u32,
    /// Summed over the rounds; `None` while no reply stated one.
    pub usage: Option<Usage>,
    /// Finding the session, storing, assembling and recording.
    pub added: Duration,
    /// When the request arrived (its span's start).
    pub started: Option<SystemTime>,
}

/// A request that ended, as the metrics count it.
pub struct Finished<'a> {
    pub figures: &'a RequestFigures,
    pub outcome: Outcome,
}

/// Hands an ended request to the metrics, the tally and the request log.
pub fn settle(proxy: &Proxy, figures: RequestFigures, outcome: Outcome) {
    let finished = Finished {
        figures: &figures,
        outcome,
    };
    proxy.metrics.observe(&finished);
    if let Some(tally) = &proxy.tally {
        tally.record(&finished);
    }
    if let (Some(traces), Some(started)) = (&proxy.traces, figures.started) {
        traces.record(&figures, outcome, started);
    }
    let log = RequestLog {
        prompt: figures.prompt.as_deref().and_then(|p| prompt_id_of(p).ok()),
        api: figures.api.to_string(),
        outcome: outcome.as_str().to_string(),
        client_tokens: figures.client_tokens,
        forwarded_tokens: figures.forwarded_tokens,
        rounds: figures.rounds,
        usage: figures.usage,
        added_ms: figures.added.as_secs_f64() * 1000.0,
        session: figures.session,
        model: figures.model,
    };
    // Queued now, behind the reply's record; the client need not wait on it.
    let logged = proxy.service.log_request(log);
    tokio::spawn(async move {
        if let Err(e) = logged.await {
            eprintln!("ctxproxy proxy: logging a request failed: {e}");
        }
    });
}

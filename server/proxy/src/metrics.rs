//! `GET /metrics`: what the proxy has done since it started, in
//! Prometheus' text format (`metrics-exporter-prometheus`'s recorder, kept
//! by the proxy rather than installed process-wide, so that two proxies in
//! one process keep their own). Labels are the API, the model and the
//! outcome; models past `MAX_MODELS` are counted as `other`, so no label
//! grows without bound. No key, session or content is ever a label.

use std::collections::BTreeSet;
use std::sync::Mutex;

use ctxproxy_core::usage::Usage;
use metrics::{Key, KeyName, Label, Level, Metadata, Recorder, SharedString, Unit};
use metrics_exporter_prometheus::{
    Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder,
};

use crate::accounting::{Finished, Outcome};

/// Distinct model names labelled as themselves.
const MAX_MODELS: usize = 64;

/// The bounds of `ctxproxy_added_seconds`' buckets: the proxy adds a few
/// milliseconds to a short session's request, tens to a long one's.
const ADDED_BUCKETS: [f64; 12] = [
    0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0,
];

const METADATA: Metadata<'static> = Metadata::new(module_path!(), Level::INFO, None);

/// Every metric: its name, its unit and its help text (`# HELP`).
const COUNTERS: [(&str, Unit, &str); 6] = [
    (
        "ctxproxy_requests_total",
        Unit::Count,
        "Model requests the proxy forwarded, by API, model and outcome.",
    ),
    (
        "ctxproxy_client_tokens_total",
        Unit::Count,
        "Tokens the clients sent (their whole history each request), by ctxproxy's count.",
    ),
    (
        "ctxproxy_forwarded_tokens_total",
        Unit::Count,
        "Tokens ctxproxy forwarded upstream for those requests, by its count.",
    ),
    (
        "ctxproxy_upstream_input_tokens_total",
        Unit::Count,
        "Input tokens the provider reported, cached and cache-written included, internal rounds included.",
    ),
    (
        "ctxproxy_upstream_cached_input_tokens_total",
        Unit::Count,
        "Of the input tokens, those the provider reported read from its cache.",
    ),
    (
        "ctxproxy_upstream_output_tokens_total",
        Unit::Count,
        "Output tokens the provider reported, internal rounds included.",
    ),
];

const ADDED: &str = "ctxproxy_added_seconds";

/// The totals since start, as the dashboard shows them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    pub requests: u64,
    pub failed: u64,
    pub client_tokens: u64,
    pub forwarded_tokens: u64,
    pub upstream_input_tokens: u64,
    pub upstream_cached_input_tokens: u64,
    pub upstream_output_tokens: u64,
}

pub struct Metrics {
    recorder: PrometheusRecorder,
    handle: PrometheusHandle,
    models: Mutex<BTreeSet<String>>,
    totals: Mutex<Totals>,
}

impl Default for Metrics {
    fn default() -> Metrics {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Full(ADDED.to_string()), &ADDED_BUCKETS)
            .expect("the buckets are not empty")
            .build_recorder();
        for (name, unit, help) in COUNTERS {
            recorder.describe_counter(KeyName::from(name), Some(unit), SharedString::from(help));
        }
        recorder.describe_histogram(
            KeyName::from(ADDED),
            Some(Unit::Seconds),
            SharedString::from(
                "Time ctxproxy itself added to a model request: finding the session, storing, assembling, recording.",
            ),
        );
        Metrics {
            handle: recorder.handle(),
            recorder,
            models: Mutex::new(BTreeSet::new()),
            totals: Mutex::new(Totals::default()),
        }
    }
}

impl Metrics {
    /// Counts a model request that has ended.
    pub fn observe(&self, finished: &Finished) {
        let f = finished.figures;
        let model = self.model_label(&f.model);
        let labels = vec![Label::new("api", f.api), Label::new("model", model.clone())];
        let mut with_outcome = labels.clone();
        with_outcome.push(Label::new("outcome", finished.outcome.as_str()));
        self.count("ctxproxy_requests_total", with_outcome, 1);
        self.count(
            "ctxproxy_client_tokens_total",
            labels.clone(),
            f.client_tokens,
        );
        self.count(
            "ctxproxy_forwarded_tokens_total",
            labels.clone(),
            f.forwarded_tokens,
        );
        let usage = f.usage.unwrap_or_default();
        self.count(
            "ctxproxy_upstream_input_tokens_total",
            labels.clone(),
            usage.input,
        );
        self.count(
            "ctxproxy_upstream_cached_input_tokens_total",
            labels.clone(),
            usage.cached_input,
        );
        self.count(
            "ctxproxy_upstream_output_tokens_total",
            labels.clone(),
            usage.output,
        );
        self.recorder
            .register_histogram(&Key::from_parts(ADDED, labels), &METADATA)
            .record(f.added.as_secs_f64());
        self.add_to_totals(finished.outcome, f.client_tokens, f.forwarded_tokens, usage);
    }

    fn count(&self, name: &'static str, labels: Vec<Label>, n: u64) {
        self.recorder
            .register_counter(&Key::from_parts(name, labels), &METADATA)
            .increment(n);
    }

    fn add_to_totals(&self, outcome: Outcome, client: u64, forwarded: u64, usage: Usage) {
        let mut t = self.totals.lock().expect("totals lock");
        t.requests += 1;
        t.failed += u64::from(outcome != Outcome::Ok);
        t.client_tokens += client;
        t.forwarded_tokens += forwarded;
        t.upstream_input_tokens += usage.input;
        t.upstream_cached_input_tokens += usage.cached_input;
        t.upstream_output_tokens += usage.output;
    }

    /// The model's own name while fewer than `MAX_MODELS` were seen, else
    /// `other`.
    fn model_label(&self, model: &str) -> String {
        let mut models = self.models.lock().expect("models lock");
        if models.contains(model) || models.len() < MAX_MODELS && models.insert(model.to_string()) {
            return model.to_string();
        }
        "other".to_string()
    }

    /// The text `GET /metrics` answers.
    pub fn render(&self) -> String {
        self.handle.run_upkeep();
        self.handle.render()
    }

    pub fn totals(&self) -> Totals {
        *self.totals.lock().expect("totals lock")
    }
}

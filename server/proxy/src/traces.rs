//! Optional traces: when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, one span per forwarded
//! model request, with the GenAI semantic conventions' attributes (the
//! operation, the provider, the model, the provider's token counts) and
//! ctxproxy's own counts, exported over OTLP/HTTP (protobuf, or JSON with
//! `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`) in batches off the request's
//! path. Never any content: no message, prompt or key is an attribute.

use std::time::SystemTime;

use opentelemetry::trace::{Span, SpanKind, Status, Tracer, TracerProvider as _};
use opentelemetry::KeyValue;
use opentelemetry_otlp::{SpanExporter, WithHttpConfig};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use opentelemetry_sdk::Resource;

use crate::accounting::{Outcome, RequestFigures};

const ENDPOINTS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

pub struct Traces {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
}

impl Traces {
    /// The exporter the environment asks for; `None` when no endpoint is set.
    pub fn from_env() -> anyhow::Result<Option<Traces>> {
        if !ENDPOINTS
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|e| !e.is_empty()))
        {
            return Ok(None);
        }
        // The blocking client runs a runtime of its own: made (and later
        // dropped) off the proxy's runtime.
        let exporter = std::thread::spawn(|| {
            let client = reqwest::blocking::Client::builder().build()?;
            anyhow::Ok(
                SpanExporter::builder()
                    .with_http()
                    .with_http_client(client)
                    .build()?,
            )
        })
        .join()
        .map_err(|_| anyhow::anyhow!("building the OTLP exporter panicked"))??;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(Resource::builder().with_service_name("ctxproxy").build())
            .build();
        let tracer = provider.tracer("ctxproxy");
        Ok(Some(Traces { provider, tracer }))
    }

    /// One span for a request that ended, from `started` to now.
    pub fn record(&self, f: &RequestFigures, outcome: Outcome, started: SystemTime) {
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.provider.name", provider_name(f.api)),
            KeyValue::new("gen_ai.request.model", f.model.clone()),
            KeyValue::new("gen_ai.conversation.id", f.session.clone()),
            KeyValue::new("ctxproxy.outcome", outcome.as_str()),
            KeyValue::new("ctxproxy.rounds", i64::from(f.rounds)),
            KeyValue::new("ctxproxy.client_tokens", count(f.client_tokens)),
            KeyValue::new("ctxproxy.forwarded_tokens", count(f.forwarded_tokens)),
            KeyValue::new("ctxproxy.added_seconds", f.added.as_secs_f64()),
        ];
        if let Some(u) = f.usage {
            attributes.extend([
                KeyValue::new("gen_ai.usage.input_tokens", count(u.input)),
                KeyValue::new("gen_ai.usage.output_tokens", count(u.output)),
                KeyValue::new(
                    "gen_ai.usage.cache_read.input_tokens",
                    count(u.cached_input),
                ),
                KeyValue::new(
                    "gen_ai.usage.cache_creation.input_tokens",
                    count(u.cache_write),
                ),
            ]);
        }
        let mut span = self
            .tracer
            .span_builder(format!("chat {}", f.model))
            .with_kind(SpanKind::Client)
            .with_start_time(started)
            .with_attributes(attributes)
            .start(&self.tracer);
        if outcome != Outcome::Ok {
            span.set_status(Status::error(outcome.as_str()));
        }
        span.end();
    }

    /// Exports what is still batched; blocks (call it off the runtime).
    pub fn shutdown(&self) {
        if let Err(e) = self.provider.shutdown() {
            eprintln!("ctxproxy proxy: exporting the last traces failed: {e}");
        }
    }
}

/// `gen_ai.provider.name`'s word for an API.
fn provider_name(api: &str) -> &'static str {
    match api {
        "anthropic" => "anthropic",
        "gemini" => "gcp.gemini",
        _ => "openai",
    }
}

fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

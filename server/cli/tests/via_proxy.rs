//! `replay --via-proxy` on a recorded fixture, through each model API the
//! proxy serves: the same figures whatever the API. Each call is also sent
//! straight to the scripted upstream, and that must change nothing the
//! upstream received through the proxy (the tokens, snapshotted, are the
//! figures the replay gave before direct calls were added; the replay itself
//! fails when a reply is not the recorded message, as it would be had a
//! direct call taken the proxy's reply from the script). The JSON report's
//! time figures are checked against each other, never against a clock.

use std::path::Path;

use ctxproxy::via_proxy;
use ctxproxy_core::session_file::{self, RecordedExchange};
use ctxproxy_proxy::ModelApi;
use ctxproxy_service::service::Service;
use serde_json::Value;

/// Milliseconds as the report gives them.
fn ms(call: &Value, key: &str) -> f64 {
    call[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing in {call}"))
}

fn assert_near(got: f64, want: f64, what: &str) {
    assert!((got - want).abs() < 1e-6, "{what}: {got} != {want}");
}

/// Nearest rank over the signed values, as the report's totals rank them.
fn nearest_rank(mut values: Vec<f64>, p: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    values[((values.len() - 1) as f64 * p).round() as usize]
}

/// pytest-ledger-agents replayed through the proxy by a client of `api`:
/// the JSON report.
async fn replay(api: ModelApi) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/sessions/pytest-ledger-agents.jsonl");
    let text = std::fs::read_to_string(&path).expect("fixture");
    let file = session_file::parse_file(&text).expect("recorded session");
    let session: Vec<RecordedExchange> = file.history(0).into_iter().cloned().collect();
    let dir = tempfile::tempdir().expect("temp dir");
    let service =
        Service::open(dir.path().join("store.db"), Default::default(), None).expect("store");
    let calls = via_proxy::run(&session, service, api)
        .await
        .unwrap_or_else(|e| panic!("replay through {api:?}: {e:#}"));
    serde_json::from_str(&via_proxy::report(&calls, true)).expect("JSON report")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_api_carries_a_session_to_the_same_figures() {
    let figures = |report: &Value, key: &str| -> Vec<i64> {
        let calls = report["calls"].as_array().expect("calls");
        calls.iter().map(|c| c[key].as_i64().expect(key)).collect()
    };
    let chat = replay(ModelApi::ChatCompletions).await;
    for api in ModelApi::ALL {
        let other = replay(api).await;
        for key in ["exchange", "sentTokens"] {
            assert_eq!(
                figures(&other, key),
                figures(&chat, key),
                "{key} through {api:?}"
            );
        }
        for key in [
            "calls",
            "sentTokens",
            "factsNeeded",
            "factsInUpstreamPrompt",
        ] {
            assert_eq!(
                other["total"][key], chat["total"][key],
                "{key} through {api:?}"
            );
        }
        // The upstream reports what it counted; the usage the proxy reads
        // back from every reply is that count, call by call.
        assert_eq!(
            figures(&other, "reportedInputTokens"),
            figures(&other, "forwardedTokens"),
            "the usage read through {api:?}"
        );
        let forwarded = figures(&chat, "forwardedTokens");
        let got = figures(&other, "forwardedTokens");
        // Messages and Gemini join a tool result and the text after it into
        // one user turn (at most two in a call of this session): a
        // message's overhead fewer each, and a token apart at most besides.
        let joined = 2 * i64::from(ctxproxy_core::render::MESSAGE_OVERHEAD) + 1;
        for (x, (got, want)) in got.iter().zip(&forwarded).enumerate() {
            assert!(
                (got - want).abs() <= joined,
                "call {x} through {api:?}: {got} != {want}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_calls_leave_the_tokens_and_the_script_as_they_were() {
    let report = replay(ModelApi::ChatCompletions).await;

    let per_call = report["calls"].as_array().expect("calls");
    let tokens: String = per_call
        .iter()
        .map(|c| {
            format!(
                "x{} sent {} forwarded {}\n",
                c["exchange"], c["sentTokens"], c["forwardedTokens"]
            )
        })
        .collect();
    let total = &report["total"];
    insta::assert_snapshot!(format!(
        "{tokens}total: {} calls, sent {}, forwarded {}",
        total["calls"], total["sentTokens"], total["forwardedTokens"]
    ));

    for c in per_call {
        let (wait, upstream) = (ms(c, "waitMs"), ms(c, "upstreamMs"));
        let (direct_wait, direct_upstream) = (ms(c, "directWaitMs"), ms(c, "directUpstreamMs"));
        // The upstream's own time is a span within the client's wait.
        assert!(upstream <= wait, "{c}");
        assert!(direct_upstream <= direct_wait, "{c}");
        assert_near(ms(c, "addedMs"), wait - upstream, "addedMs");
        assert_near(ms(c, "directMs"), direct_wait - direct_upstream, "directMs");
        let over = (wait - upstream) - (direct_wait - direct_upstream);
        assert_near(ms(c, "addedOverDirectMs"), over, "addedOverDirectMs");
        assert_near(
            ms(c, "beyondStoreOverDirectMs"),
            over - ms(c, "storeMs"),
            "beyondStoreOverDirectMs",
        );
    }
    for key in ["directMs", "addedOverDirectMs", "beyondStoreOverDirectMs"] {
        let values: Vec<f64> = per_call.iter().map(|c| ms(c, key)).collect();
        for (p, suffix) in [(0.5, "P50"), (0.99, "P99")] {
            let name = format!("{key}{suffix}");
            assert_near(ms(total, &name), nearest_rank(values.clone(), p), &name);
        }
    }
}

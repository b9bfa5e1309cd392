//! What each session's client sent, what the proxy forwarded for it and
//! what the provider reported it counted: the figures `ctxproxy run`
//! prints when its assistant exits. Kept only when asked for (`open`'s
//! `tally`).

use std::collections::BTreeMap;
use std::sync::Mutex;

use ctxproxy_core::usage::Usage;

use super::accounting::Finished;

/// One session's requests and their tokens.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionTally {
    pub session: String,
    pub requests: u32,
    /// What the client sent, counted as the replay report counts full
    /// history: each message's text and calls, the system prompt, the
    /// client's tools and the reply primer.
    pub sent: u64,
    /// What the proxy forwarded for those requests (the assembled prompt's
    /// `tokens.total`; a passthrough forwards what was sent). Internal
    /// context-tool rounds add their answers on top of it.
    pub forwarded: u64,
    /// What the provider reported, every round included; `None` when no
    /// reply stated it.
    pub usage: Option<Usage>,
}

#[derive(Default)]
pub struct Tally {
    sessions: Mutex<BTreeMap<String, SessionTally>>,
}

impl Tally {
    /// Adds a request that ended.
    pub(super) fn record(&self, finished: &Finished) {
        let f = finished.figures;
        let mut sessions = self.sessions.lock().expect("tally lock");
        let entry = sessions
            .entry(f.session.clone())
            .or_insert_with(|| SessionTally {
                session: f.session.clone(),
                ..SessionTally::default()
            });
        entry.requests += 1;
        entry.sent += f.client_tokens;
        entry.forwarded += f.forwarded_tokens;
        if let Some(u) = f.usage {
            *entry.usage.get_or_insert_with(Usage::default) += u;
        }
    }

    /// Every session's tally, by session id.
    pub fn sessions(&self) -> Vec<SessionTally> {
        let sessions = self.sessions.lock().expect("tally lock");
        sessions.values().cloned().collect()
    }
}

/// The lines `ctxproxy run` prints: one per session, then the total.
pub fn report(tallies: &[SessionTally]) -> String {
    let share = |forwarded: u64, sent: u64| match sent {
        0 => "-".to_string(),
        s => format!("{:.1}%", forwarded as f64 * 100.0 / s as f64),
    };
    let mut out = String::new();
    if tallies.is_empty() {
        out.push_str("ctxproxy: no model request went through the proxy\n");
        return out;
    }
    let provider = |usage: &Option<Usage>| match usage {
        None => String::new(),
        Some(u) => format!(
            "; the provider counted {} input ({} cached), {} output",
            u.input, u.cached_input, u.output
        ),
    };
    for t in tallies {
        out.push_str(&format!(
            "ctxproxy: session {}: {} request(s), the client sent {} tokens, ctxproxy forwarded {} ({}){}\n",
            t.session,
            t.requests,
            t.sent,
            t.forwarded,
            share(t.forwarded, t.sent),
            provider(&t.usage)
        ));
    }
    let (sent, forwarded) = tallies
        .iter()
        .fold((0, 0), |(s, f), t| (s + t.sent, f + t.forwarded));
    let usage = tallies.iter().filter_map(|t| t.usage).fold(None, |sum, u| {
        let mut sum: Usage = sum.unwrap_or_default();
        sum += u;
        Some(sum)
    });
    out.push_str(&format!(
        "ctxproxy: {} session(s): sent {sent} tokens, forwarded {forwarded} ({}){}; see `ctxproxy show-prompt SESSION pN`\n",
        tallies.len(),
        share(forwarded, sent),
        provider(&usage)
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_gives_each_session_and_the_total() {
        let tallies = [
            SessionTally {
                session: "s-a".into(),
                requests: 2,
                sent: 1000,
                forwarded: 250,
                usage: Some(Usage {
                    input: 260,
                    cached_input: 200,
                    cache_write: 0,
                    output: 30,
                }),
            },
            SessionTally {
                session: "s-b".into(),
                requests: 1,
                sent: 0,
                forwarded: 0,
                usage: None,
            },
        ];
        insta::assert_snapshot!(report(&tallies), @r"
        ctxproxy: session s-a: 2 request(s), the client sent 1000 tokens, ctxproxy forwarded 250 (25.0%); the provider counted 260 input (200 cached), 30 output
        ctxproxy: session s-b: 1 request(s), the client sent 0 tokens, ctxproxy forwarded 0 (-)
        ctxproxy: 2 session(s): sent 1000 tokens, forwarded 250 (25.0%); the provider counted 260 input (200 cached), 30 output; see `ctxproxy show-prompt SESSION pN`
        ");
        assert_eq!(
            report(&[]),
            "ctxproxy: no model request went through the proxy\n"
        );
    }
}

//! What each session's client sent and what the proxy forwarded for it:
//! the figures `ctxproxy run` prints when its assistant exits. Kept only
//! when asked for (`open`'s `tally`): the client's side costs a tokenizer
//! pass over each request's whole history.

use std::collections::BTreeMap;
use std::sync::Mutex;

use ctxproxy_core::baseline;
use ctxproxy_core::render::{MESSAGE_OVERHEAD, REPLY_PRIMER};
use ctxproxy_core::tokens::{self, Encoding};

use super::Incoming;

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
}

pub struct Tally {
    encoding: Encoding,
    sessions: Mutex<BTreeMap<String, SessionTally>>,
}

impl Tally {
    pub fn new(encoding: Encoding) -> Tally {
        Tally {
            encoding,
            sessions: Mutex::new(BTreeMap::new()),
        }
    }

    /// Adds a request of `session`: `forwarded`, the tokens of the prompt
    /// forwarded for it (`None`: forwarded as the client sent it).
    pub(super) fn record(&self, session: &str, incoming: &Incoming, forwarded: Option<u32>) {
        let sent = self.sent_tokens(incoming);
        let mut sessions = self.sessions.lock().expect("tally lock");
        let entry = sessions
            .entry(session.to_string())
            .or_insert_with(|| SessionTally {
                session: session.to_string(),
                ..SessionTally::default()
            });
        entry.requests += 1;
        entry.sent += u64::from(sent);
        entry.forwarded += u64::from(forwarded.unwrap_or(sent));
    }

    /// Every session's tally, by session id.
    pub fn sessions(&self) -> Vec<SessionTally> {
        let sessions = self.sessions.lock().expect("tally lock");
        sessions.values().cloned().collect()
    }

    fn sent_tokens(&self, incoming: &Incoming) -> u32 {
        let enc = self.encoding;
        let messages: u32 = incoming
            .read
            .history
            .messages()
            .iter()
            .map(|m| baseline::message_tokens(m, enc))
            .sum();
        let system = match incoming.read.system.as_str() {
            "" => 0,
            s => tokens::count(enc, s) + MESSAGE_OVERHEAD,
        };
        messages + system + incoming.client_tools_tokens(enc) + REPLY_PRIMER
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
    for t in tallies {
        out.push_str(&format!(
            "ctxproxy: session {}: {} request(s), the client sent {} tokens, ctxproxy forwarded {} ({})\n",
            t.session,
            t.requests,
            t.sent,
            t.forwarded,
            share(t.forwarded, t.sent)
        ));
    }
    let (sent, forwarded) = tallies
        .iter()
        .fold((0, 0), |(s, f), t| (s + t.sent, f + t.forwarded));
    out.push_str(&format!(
        "ctxproxy: {} session(s): sent {sent} tokens, forwarded {forwarded} ({}); see `ctxproxy show-prompt SESSION pN`\n",
        tallies.len(),
        share(forwarded, sent)
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
            },
            SessionTally {
                session: "s-b".into(),
                requests: 1,
                sent: 0,
                forwarded: 0,
            },
        ];
        insta::assert_snapshot!(report(&tallies), @r"
        ctxproxy: session s-a: 2 request(s), the client sent 1000 tokens, ctxproxy forwarded 250 (25.0%)
        ctxproxy: session s-b: 1 request(s), the client sent 0 tokens, ctxproxy forwarded 0 (-)
        ctxproxy: 2 session(s): sent 1000 tokens, forwarded 250 (25.0%); see `ctxproxy show-prompt SESSION pN`
        ");
        assert_eq!(
            report(&[]),
            "ctxproxy: no model request went through the proxy\n"
        );
    }
}

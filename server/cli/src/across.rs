//! The replay report's needs across sessions: facts a session of a project
//! asks about that an earlier session of the project found (a need with
//! `session`), judged in the asking turn's prompt as the within-session
//! needs are (`evaluation::fact_status`), the source named by its
//! session-qualified id.

use std::collections::BTreeMap;

use ctxproxy_core::evaluation::{self, FactStatus};
use ctxproxy_core::ids::{self, ExchangeId};
use ctxproxy_core::session_file::{RecordedFile, Step};
use serde_json::{json, Value};

use crate::report::TurnSeen;

/// How the needs across sessions of one asking session fared.
#[derive(Debug, Default)]
pub struct AcrossSessions {
    pub needs: usize,
    /// Count per `FactStatus::as_str`.
    pub statuses: BTreeMap<&'static str, usize>,
    /// Each need: the asking exchange, the source's id as the prompt names
    /// it, the fact and its status.
    pub facts: Vec<(u32, String, String, &'static str)>,
}

impl AcrossSessions {
    /// For each session of `file` (replayed as `ids`, with its own `turns`),
    /// its needs across sessions.
    pub fn of_file(file: &RecordedFile, ids: &[String], turns: &[Vec<TurnSeen>]) -> Vec<Self> {
        let mut out: Vec<AcrossSessions> = file.sessions.iter().map(|_| Self::default()).collect();
        for step in &file.steps {
            let Step::Exchange {
                session,
                id,
                exchange,
            } = step
            else {
                continue;
            };
            let own_from = file.sessions[*session].shared();
            let Some(turn) = turns[*session].get((id.0 - own_from - 1) as usize) else {
                continue;
            };
            let text = turn.prompt.prompt.text.as_deref().unwrap_or_default();
            let question = exchange.messages.first().map_or("", |m| m.content.as_str());
            for need in &exchange.needs {
                let Some(source) = need.session else { continue };
                let from = ExchangeId(need.from);
                let source_own = file.sessions[source].shared();
                // A fork's shared exchanges are its parent's turns.
                let blobs = need
                    .from
                    .checked_sub(source_own + 1)
                    .and_then(|k| turns[source].get(k as usize))
                    .map(|t| t.blobs.clone())
                    .unwrap_or_default();
                let source_id = ids::qualified(Some(&ids[source]), from);
                let status = evaluation::fact_status(
                    &need.fact, question, &need.cues, &source_id, &blobs, text,
                );
                let tally = &mut out[*session];
                tally.needs += 1;
                *tally.statuses.entry(status.as_str()).or_default() += 1;
                tally
                    .facts
                    .push((id.0, source_id, need.fact.clone(), status.as_str()));
            }
        }
        out
    }

    pub fn count(&self, status: FactStatus) -> usize {
        self.statuses.get(status.as_str()).copied().unwrap_or(0)
    }

    pub fn to_json(&self) -> Value {
        let facts: Vec<Value> = self
            .facts
            .iter()
            .map(|(turn, from, fact, status)| {
                json!({"turn": turn, "from": from, "fact": fact, "status": status})
            })
            .collect();
        json!({"needs": self.needs, "statuses": self.statuses, "facts": facts})
    }

    /// One line of the text report; empty when the session asks nothing
    /// of an earlier one.
    pub fn to_text(&self) -> String {
        if self.needs == 0 {
            return String::new();
        }
        format!(
            "needs from earlier sessions of the project: {}; in the prompt {}, one retrieve away {}, lost {}\n",
            self.needs,
            self.count(FactStatus::InPrompt),
            self.count(FactStatus::OneRetrieveAway),
            self.needs
                - self.count(FactStatus::InPrompt)
                - self.count(FactStatus::OneRetrieveAway)
        )
    }
}

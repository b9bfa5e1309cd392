//! The replay report: per turn, ctxproxy's tokens per layer, total and prefix
//! reused; with `--report`, the same turn under full history, Cline-style
//! truncation and a sliding window (computed in the same run on the same
//! session), whether each annotated fact is reachable, and one summary line
//! per strategy.

use std::fmt::Write;

use ctxproxy_core::baseline::{self, RawPrompt, Strategy};
use ctxproxy_core::config::Config;
use ctxproxy_core::evaluation::{self, FactStatus, RunCost};
use ctxproxy_core::ids::ExchangeId;
use ctxproxy_core::message::Message;
use serde_json::{json, Value};

use ctxproxy_core::session_file::RecordedExchange;
use ctxproxy_service::api::StatsResult;

/// What replay saw at one turn.
#[derive(Clone)]
pub struct TurnSeen {
    pub seq: u32,
    pub prompt: ctxproxy_service::api::AssembleResult,
    /// The blob ids the store reported for the exchange's tool results.
    pub blobs: Vec<String>,
    /// For each of the exchange's needs, where `ctx/search` with the
    /// question's words ranks the exchange the fact came from (1 = first),
    /// searching before the question is stored; `None` past the depth replay searches.
    pub search_ranks: Vec<Option<usize>>,
}

/// The prompt layers, in prompt order: the JSON key and the text table's column.
pub(crate) const LAYERS: [(&str, &str); 12] = [
    ("system", "sys"),
    ("memory", "memory"),
    ("projectRecent", "latest"),
    ("currentContext", "L0"),
    ("recent", "recent"),
    ("headers", "headers"),
    ("summaries", "summ"),
    ("asks", "asks"),
    ("references", "refs"),
    ("recall", "recall"),
    ("projectRecall", "project"),
    ("input", "input"),
];

struct TurnRow {
    seq: u32,
    layers: Vec<u64>,
    total: u32,
    prefix: u32,
    trimmed: usize,
    /// Tokens and prefix of each baseline at this turn.
    baselines: Vec<(u32, u32)>,
}

struct FactRow {
    turn: u32,
    fact: String,
    from: u32,
    /// ctxproxy first, then each baseline.
    status: Vec<FactStatus>,
    /// Whether the prompt holds the message the fact is in verbatim, whole
    /// (its evidence turn), in the same order as `status`.
    evidence: Vec<bool>,
    /// Where `ctx/search` with the question ranks the fact's exchange.
    search_rank: Option<usize>,
}

/// One strategy's figures over a session.
struct StrategySummary {
    name: &'static str,
    cost: RunCost,
    /// Facts in the prompt or one retrieve away.
    reachable: usize,
    in_prompt: usize,
    /// Facts whose message the prompt holds whole, verbatim.
    evidence_in_prompt: usize,
}

/// A search finds a fact's exchange when it ranks it this high or higher.
const SEARCH_TOP: usize = 3;

/// Tokens of the recall block over the session's turns.
#[derive(Default)]
struct RecallTally {
    tokens: u64,
    /// Of `tokens`, those of hits that hold a fact their turn needs.
    with_fact: u64,
}

pub struct Report {
    budget: u32,
    recall: RecallTally,
    strategies: Vec<&'static str>,
    turns: Vec<TurnRow>,
    facts: Vec<FactRow>,
}

impl Report {
    /// `opening` is what the session's history opens with (a child's call),
    /// `session` its whole history and `turns` what replay saw
    /// before each of its exchanges; the rows and facts are those from
    /// exchange `own_from + 1` on (a fork's own: the shared ones are its
    /// parent's), the baselines replay the whole history.
    pub fn build(
        opening: &[Message],
        session: &[RecordedExchange],
        turns: &[TurnSeen],
        own_from: usize,
        config: &Config,
        window: u32,
        with_baselines: bool,
    ) -> Report {
        let exchanges: Vec<Vec<Message>> = session.iter().map(|x| x.messages.clone()).collect();
        let strategies: Vec<Strategy> = if with_baselines {
            vec![
                Strategy::FullHistory,
                Strategy::Cline { window },
                Strategy::SlidingWindow {
                    budget: config.budget,
                },
            ]
        } else {
            Vec::new()
        };
        let baseline_prompts: Vec<Vec<RawPrompt>> = strategies
            .iter()
            .map(|s| baseline::replay(*s, opening, &exchanges, config.encoding))
            .collect();
        let mut rows = Vec::new();
        let mut facts = Vec::new();
        let mut recall = RecallTally::default();
        for (i, turn) in turns.iter().enumerate().skip(own_from) {
            let p = &turn.prompt;
            for hit in &p.recall {
                recall.tokens += u64::from(hit.tokens);
                if session[i].needs.iter().any(|n| hit.text.contains(&n.fact)) {
                    recall.with_fact += u64::from(hit.tokens);
                }
            }
            let baselines = baseline_prompts
                .iter()
                .map(|prompts| {
                    // A session's first prompt reuses nothing, under every
                    // strategy: a fork's, like ctxproxy's `prefixReused`, is
                    // not compared with its parent's prompts.
                    let prefix = if i == own_from {
                        0
                    } else {
                        prompts[i].shared_prefix(&prompts[i - 1])
                    };
                    (prompts[i].total(), prefix)
                })
                .collect();
            rows.push(TurnRow {
                seq: turn.seq,
                // A layer the prompt does not have (no input, no headers yet) holds 0.
                layers: LAYERS
                    .iter()
                    .map(|(k, _)| p.tokens.layers.get(*k).copied().map_or(0, u64::from))
                    .collect(),
                total: p.tokens.total,
                prefix: p.prefix_reused,
                trimmed: p.trimmed.len(),
                baselines,
            });
            if !with_baselines {
                continue;
            }
            let text = p.prompt.text.as_deref().unwrap_or_default();
            let question = exchanges[i].first().map_or("", |m| m.content.as_str());
            // A need of an earlier session is project memory's
            // (`across::AcrossSessions`).
            let own = session[i]
                .needs
                .iter()
                .enumerate()
                .filter(|(_, n)| n.session.is_none());
            for (k, need) in own {
                let from = &ExchangeId(need.from).to_string();
                let blobs = turns
                    .get(need.from as usize - 1)
                    .map(|t| t.blobs.clone())
                    .unwrap_or_default();
                let mut status = vec![evaluation::fact_status(
                    &need.fact, question, &need.cues, from, &blobs, text,
                )];
                let evidence_turn = exchanges
                    .get(need.from as usize - 1)
                    .and_then(|x| x.iter().find(|m| m.content.contains(&need.fact)))
                    .map(|m| m.content.trim());
                let holds_evidence =
                    |prompt: &str| evidence_turn.is_some_and(|turn| prompt.contains(turn));
                let mut evidence = vec![holds_evidence(text)];
                for prompts in &baseline_prompts {
                    let baseline = prompts[i].text();
                    status.push(evaluation::fact_status(
                        &need.fact,
                        question,
                        &need.cues,
                        from,
                        &[],
                        &baseline,
                    ));
                    evidence.push(holds_evidence(&baseline));
                }
                facts.push(FactRow {
                    turn: turn.seq,
                    fact: need.fact.clone(),
                    from: need.from,
                    status,
                    evidence,
                    search_rank: turn.search_ranks.get(k).copied().flatten(),
                });
            }
        }
        Report {
            budget: config.budget,
            recall,
            strategies: strategies.iter().map(|s| s.name()).collect(),
            turns: rows,
            facts,
        }
    }

    /// `(tokens, cached prefix)` of each turn under strategy `k` (0 is ctxproxy).
    fn prompts(&self, k: usize) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.turns.iter().map(move |t| {
            if k == 0 {
                (t.total, t.prefix)
            } else {
                t.baselines[k - 1]
            }
        })
    }

    /// The effective cost of turns 1..=n under strategy `k`, for every n.
    fn cumulative_costs(&self, k: usize) -> Vec<f64> {
        let mut run = RunCost::default();
        self.prompts(k)
            .map(|prompt| {
                let turn = RunCost::of([prompt]);
                run.prompt_tokens += turn.prompt_tokens;
                run.cached_tokens += turn.cached_tokens;
                run.effective()
            })
            .collect()
    }

    /// (name, run cost, facts reachable, facts in prompt) per strategy, ctxproxy first.
    fn summaries(&self) -> Vec<StrategySummary> {
        let names = std::iter::once("ctxproxy").chain(self.strategies.iter().copied());
        names
            .enumerate()
            .map(|(k, name)| {
                let count =
                    |keep: &dyn Fn(&FactRow) -> bool| self.facts.iter().filter(|f| keep(f)).count();
                StrategySummary {
                    name,
                    cost: RunCost::of(self.prompts(k)),
                    reachable: count(&|f| {
                        matches!(
                            f.status[k],
                            FactStatus::InPrompt | FactStatus::OneRetrieveAway
                        )
                    }),
                    in_prompt: count(&|f| f.status[k] == FactStatus::InPrompt),
                    evidence_in_prompt: count(&|f| f.evidence[k]),
                }
            })
            .collect()
    }

    pub fn to_text(&self, session: &str, stats: &StatsResult) -> String {
        let mut out = String::new();
        let _ = write!(out, "{:>4}", "turn");
        for (_, short) in LAYERS {
            let _ = write!(out, " {short:>7}");
        }
        let _ = write!(out, " {:>7} {:>7} {:>4}", "total", "prefix", "trim");
        for s in &self.strategies {
            let _ = write!(out, " {:>14}", s);
        }
        out.push('\n');
        for t in &self.turns {
            let _ = write!(out, "{:>4}", format!("x{}", t.seq));
            for v in &t.layers {
                let _ = write!(out, " {v:>7}");
            }
            let _ = write!(out, " {:>7} {:>7} {:>4}", t.total, t.prefix, t.trimmed);
            for (n, _) in &t.baselines {
                let _ = write!(out, " {n:>14}");
            }
            out.push('\n');
        }
        if !self.facts.is_empty() {
            out.push_str("\nfacts (status under ctxproxy");
            for s in &self.strategies {
                let _ = write!(out, ", {s}");
            }
            out.push_str("):\n");
            for f in &self.facts {
                let statuses: Vec<&str> = f.status.iter().map(|s| s.as_str()).collect();
                let rank = f
                    .search_rank
                    .map_or("not in the top 10".to_string(), |r| format!("#{r}"));
                let _ = writeln!(
                    out,
                    "  x{:<3} needs {:?} from x{}: {}; search {rank}",
                    f.turn,
                    short(&f.fact),
                    f.from,
                    statuses.join(", ")
                );
            }
        }
        out.push('\n');
        let _ = writeln!(
            out,
            "{:<15} {:>13} {:>9} {:>15} {:>10} {:>16}",
            "strategy", "prompt tokens", "vs full", "effective cost", "vs full", "facts reachable"
        );
        let summaries = self.summaries();
        let full = summaries
            .iter()
            .find(|s| s.name == "full-history")
            .map(|s| s.cost);
        for StrategySummary {
            name,
            cost,
            reachable,
            in_prompt,
            ..
        } in &summaries
        {
            let vs = |a: f64, b: Option<f64>| {
                b.map_or("-".to_string(), |b| {
                    format!("{:.1}%", 100.0 * a / b.max(1.0))
                })
            };
            let _ = writeln!(
                out,
                "{:<15} {:>13} {:>9} {:>15.0} {:>10} {:>9}/{} ({} in prompt)",
                name,
                cost.prompt_tokens,
                vs(
                    cost.prompt_tokens as f64,
                    full.map(|f| f.prompt_tokens as f64)
                ),
                cost.effective(),
                vs(cost.effective(), full.map(|f| f.effective())),
                reachable,
                self.facts.len(),
                in_prompt
            );
        }
        if !self.facts.is_empty() {
            let _ = writeln!(
                out,
                "\nctxproxy facts: {} in the prompt, {} one retrieve away by the question's words, \
                 {} next to the answer's words only, {} lost; search with the question ranks the \
                 source in its top {SEARCH_TOP} for {}/{} ({}/{} of those not in the prompt)",
                self.count_status(FactStatus::InPrompt),
                self.count_status(FactStatus::OneRetrieveAway),
                self.count_status(FactStatus::AnswerWordsOnly),
                self.count_status(FactStatus::Lost),
                found_by_search(&self.facts),
                self.facts.len(),
                found_by_search(self.outside_prompt()),
                self.outside_prompt().count(),
            );
        }
        if self.recall.tokens > 0 {
            let _ = writeln!(
                out,
                "ctxproxy recall: {} tokens over the session, {} of them in hits that hold a fact their turn needs, {} in hits that hold none",
                self.recall.tokens,
                self.recall.with_fact,
                self.recall.tokens - self.recall.with_fact
            );
        }
        let reuse = self.average_prefix_reuse();
        let _ = writeln!(
            out,
            "\nctxproxy average prefix reuse: {:.1}% (turns 2..)",
            reuse * 100.0
        );
        let _ = writeln!(
            out,
            "session {session}: {} exchanges, {} blobs ({} duplicate hits), {} raw bytes stored in {} bytes",
            stats.exchanges, stats.blobs, stats.duplicate_hits, stats.raw_bytes, stats.stored_bytes
        );
        out
    }

    /// How many facts have `status` under ctxproxy.
    fn count_status(&self, status: FactStatus) -> usize {
        self.facts.iter().filter(|f| f.status[0] == status).count()
    }

    /// The facts whose text the prompt does not hold: where search is the
    /// second path, when the model does not retrieve by an id it sees.
    fn outside_prompt(&self) -> impl Iterator<Item = &FactRow> {
        self.facts
            .iter()
            .filter(|f| f.status[0] != FactStatus::InPrompt)
    }

    fn average_prefix_reuse(&self) -> f64 {
        let later = self.turns.iter().skip(1);
        let (prefix, total) = later.fold((0u64, 0u64), |(p, t), row| {
            (p + row.prefix as u64, t + row.total as u64)
        });
        if total == 0 {
            0.0
        } else {
            prefix as f64 / total as f64
        }
    }

    pub fn to_json(&self, session: &str, stats: &StatsResult) -> Value {
        let cumulative: Vec<Vec<f64>> = (0..=self.strategies.len())
            .map(|k| self.cumulative_costs(k))
            .collect();
        json!({
            "sessionId": session,
            "budget": self.budget,
            "turns": self.turns.iter().enumerate().map(|(i, t)| {
                let mut layers = serde_json::Map::new();
                for ((k, _), v) in LAYERS.iter().zip(&t.layers) {
                    layers.insert(k.to_string(), json!(v));
                }
                json!({
                    "exchange": format!("x{}", t.seq), "layers": layers, "total": t.total,
                    "prefixReused": t.prefix, "trimmed": t.trimmed,
                    // The tool definitions and the reply primer: charged, in no layer.
                    "outsideLayers": u64::from(t.total).saturating_sub(t.layers.iter().sum()),
                    "cumulativeEffectiveCost": cumulative[0][i],
                    "baselines": self.strategies.iter().zip(&t.baselines).enumerate()
                        .map(|(k, (s, (n, p)))| (s.to_string(), json!({
                            "total": n, "prefixReused": p,
                            "cumulativeEffectiveCost": cumulative[k + 1][i],
                        })))
                        .collect::<serde_json::Map<_, _>>(),
                })
            }).collect::<Vec<_>>(),
            "facts": self.facts.iter().map(|f| json!({
                "turn": format!("x{}", f.turn), "fact": f.fact, "from": format!("x{}", f.from),
                "status": std::iter::once("ctxproxy").chain(self.strategies.iter().copied()).zip(&f.status)
                    .map(|(s, st)| (s.to_string(), json!(st.as_str()))).collect::<serde_json::Map<_, _>>(),
                "evidenceInPrompt": std::iter::once("ctxproxy").chain(self.strategies.iter().copied()).zip(&f.evidence)
                    .map(|(s, e)| (s.to_string(), json!(e))).collect::<serde_json::Map<_, _>>(),
                "searchRank": f.search_rank,
            })).collect::<Vec<_>>(),
            "factsFoundBySearch": found_by_search(&self.facts),
            "factsOutsidePrompt": self.outside_prompt().count(),
            "factsOutsidePromptFoundBySearch": found_by_search(self.outside_prompt()),
            "recallTokens": self.recall.tokens,
            "recallTokensWithFact": self.recall.with_fact,
            "summary": self.summaries().iter().map(|s| json!({
                "strategy": s.name, "promptTokens": s.cost.prompt_tokens, "cachedTokens": s.cost.cached_tokens,
                "effectiveCost": s.cost.effective(), "factsReachable": s.reachable, "factsInPrompt": s.in_prompt,
                "evidenceInPrompt": s.evidence_in_prompt, "facts": self.facts.len(),
            })).collect::<Vec<_>>(),
            "averagePrefixReuse": self.average_prefix_reuse(),
            "sessionStats": stats,
        })
    }
}

/// How many of `facts` have their exchange ranked in the top `SEARCH_TOP`
/// by a search with the question.
fn found_by_search<'a>(facts: impl IntoIterator<Item = &'a FactRow>) -> usize {
    facts
        .into_iter()
        .filter(|f| f.search_rank.is_some_and(|r| r <= SEARCH_TOP))
        .count()
}

fn short(fact: &str) -> String {
    let one: String = fact.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > 48 {
        format!("{}…", one.chars().take(47).collect::<String>())
    } else {
        one
    }
}

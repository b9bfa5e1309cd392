//! Replays the recorded sessions in `fixtures/sessions/` through the packer
//! and the baselines: at each exchange, is every fact it needs in the
//! prompt, one `context_retrieve` away, or lost? And what does each
//! strategy cost, prefix caching counted?
//!
//! Run with `--nocapture` to see the table.

use std::collections::HashMap;
use std::path::Path;

use ctxproxy_core::baseline::{self, Strategy};
use ctxproxy_core::config::{LayerCaps, LayerOrder};
use ctxproxy_core::evaluation::{fact_status, FactStatus, RunCost};
use ctxproxy_core::exchange::Level;
use ctxproxy_core::ids::ExchangeId;
use ctxproxy_core::message::Message;
use ctxproxy_core::packer::{pack, shared_prefix_tokens, whole_allowed, PackRequest, PackedPrompt};
use ctxproxy_core::render;
use ctxproxy_core::session_file::{self, RecordedExchange};
use ctxproxy_core::tokens::Encoding;
use ctxproxy_testkit::MemorySession;

const ENC: Encoding = Encoding::O200kBase;
const BUDGET: u32 = 16_000;

/// A recorded file (fixtures/README.md), as `core::session_file` reads it:
/// each session's whole history (a fork's shared exchanges included) and
/// the index of its first own exchange.
fn load(path: &Path) -> Vec<(String, Vec<Message>, Vec<RecordedExchange>, usize)> {
    let text = std::fs::read_to_string(path).unwrap();
    let file =
        session_file::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    file.sessions
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let own_from = s.shared() as usize;
            let history = file.history(i).into_iter().cloned().collect();
            (s.name.clone(), s.opening(), history, own_from)
        })
        .collect()
}

#[derive(Default)]
struct Tally {
    cost: Vec<(u32, u32)>,
    statuses: HashMap<&'static str, u32>,
    lost: Vec<String>,
    /// Facts from an exchange superseded by then: out of the prompt by
    /// design (the reasoning replaced them), retrievable and searchable.
    superseded: Vec<String>,
}

impl Tally {
    fn row(&self, name: &str) -> String {
        let cost = RunCost::of(self.cost.iter().copied());
        let n = |s: FactStatus| self.statuses.get(s.as_str()).copied().unwrap_or(0);
        format!(
            "{name:<15} {:>9} {:>9} {:>11.0} {:>4} {:>4} {:>6} {:>4}",
            cost.prompt_tokens,
            cost.cached_tokens,
            cost.effective(),
            n(FactStatus::InPrompt),
            n(FactStatus::OneRetrieveAway),
            n(FactStatus::AnswerWordsOnly),
            n(FactStatus::Lost)
        )
    }
}

/// Replays one session's history into memory, supersessions applied as
/// they come; tallies its own exchanges (from `own_from`).
fn replay(
    opening: &[Message],
    session: &[RecordedExchange],
    own_from: usize,
    tallies: &mut HashMap<&'static str, Tally>,
) {
    let caps = LayerCaps::default();
    let mut memory = MemorySession::new(caps.clone(), ENC);
    let mut blobs: HashMap<u32, Vec<String>> = HashMap::new();
    let exchanges: Vec<Vec<Message>> = session.iter().map(|x| x.messages.clone()).collect();
    let strategies = [
        Strategy::FullHistory,
        Strategy::Cline {
            window: Strategy::CLINE_DEFAULT_WINDOW,
        },
        Strategy::SlidingWindow { budget: BUDGET },
    ];
    let baselines: Vec<(&'static str, Vec<baseline::RawPrompt>)> = strategies
        .iter()
        .map(|s| (s.name(), baseline::replay(*s, opening, &exchanges, ENC)))
        .collect();
    let mut prev: Option<PackedPrompt> = None;
    for (t, x) in session.iter().enumerate() {
        let (messages, needs) = (&x.messages, &x.needs);
        let id = t as u32 + 1;
        // Kept as the store keeps them: masked, digested against earlier reads.
        let kept = memory.keep(messages.clone());
        let input = kept[0].clone();
        let req = PackRequest {
            budget: BUDGET,
            encoding: ENC,
            order: LayerOrder::CacheStable,
            system: Some(render::counted_piece("You are a helpful assistant.", ENC)),
            input_tokens: render::message_tokens(&input, Level::Full, ENC),
            input: Some(input),
            tools_tokens: render::tools_tokens(ENC),
            iteration: id,
            calls: Default::default(),
            whole_allowed: whole_allowed(prev.as_ref(), t == 0),
        };
        let view = memory.view();
        let packed = pack(&view, &req, &caps).expect("16k fits");
        let cached = prev
            .as_ref()
            .map_or(0, |p| shared_prefix_tokens(p, &packed));
        let text: String = packed.messages.iter().map(|m| m.text()).collect();
        let mut prompts = vec![("ctxproxy", text, packed.total, cached)];
        for (name, runs) in &baselines {
            let p = &runs[t];
            let cached = if t == 0 {
                0
            } else {
                p.shared_prefix(&runs[t - 1])
            };
            prompts.push((name, p.text(), p.total(), cached));
        }
        for (name, text, total, cached) in prompts.into_iter().filter(|_| t >= own_from) {
            let tally = tallies.entry(name).or_default();
            tally.cost.push((total, cached));
            let question = messages[0].content.as_str();
            for need in needs {
                let from_blobs = blobs.get(&need.from).cloned().unwrap_or_default();
                let status = fact_status(
                    &need.fact,
                    question,
                    &need.cues,
                    &ExchangeId(need.from).to_string(),
                    &from_blobs,
                    &text,
                );
                *tally.statuses.entry(status.as_str()).or_default() += 1;
                let line = format!("x{id} needs {:?} from x{}", need.fact, need.from);
                match view.superseded.get(&ExchangeId(need.from)) {
                    Some(by) if status == FactStatus::Lost => tally
                        .superseded
                        .push(format!("{line} (superseded by {by})")),
                    None if status == FactStatus::Lost => tally.lost.push(line),
                    _ => {}
                }
            }
        }
        prev = Some(packed);
        blobs.insert(
            id,
            kept.iter()
                .filter_map(|m| m.result.as_ref())
                .map(|r| r.blob.short_id())
                .collect(),
        );
        let id = memory.push(messages.iter().find_map(|m| m.at.clone()), kept);
        memory.supersede(id, &x.supersedes);
    }
}

#[test]
fn recorded_sessions_lose_almost_no_fact() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/sessions");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    for path in paths
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
    {
        for (name, opening, history, own_from) in load(path) {
            // A conversation's facts are in its turns' text, which only the
            // store's recall finds again (no full-text index in memory): the
            // conversational targets are checked through the binary
            // (tests/test_assembly_targets.py).
            let conversation = history
                .iter()
                .all(|x| x.messages.iter().all(|m| m.tool_calls.is_empty()));
            if conversation {
                continue;
            }
            let mut tallies = HashMap::new();
            replay(&opening, &history, own_from, &mut tallies);
            report(path, &name, &tallies);
        }
    }
}

/// Prints a session's table and checks that it lost at most one fact.
fn report(path: &Path, session: &str, tallies: &HashMap<&'static str, Tally>) {
    println!(
        "\n{} ({session})\n{:<15} {:>9} {:>9} {:>11} {:>4} {:>4} {:>6} {:>4}",
        path.display(),
        "strategy",
        "tokens",
        "cached",
        "effective",
        "in",
        "away",
        "answer",
        "lost"
    );
    for name in ["ctxproxy", "full-history", "cline", "sliding-window"] {
        println!("{}", tallies[name].row(name));
    }
    let ours = &tallies["ctxproxy"];
    for l in &ours.lost {
        println!("  lost: {l}");
    }
    for l in &ours.superseded {
        println!("  out of the prompt, superseded: {l}");
    }
    // One known miss: strsim's x38 asks about let-else, which only the
    // MSRV in x2 answers; x2's 12-token header names MSRV but not 1.56.
    assert!(ours.lost.len() <= 1, "{}: {:?}", path.display(), ours.lost);
}

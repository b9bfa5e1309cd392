//! Extractive header and summary of one exchange: deterministic, no model.
//!
//! `ExchangeFacts` reads what an exchange says (the ask, the tool calls and
//! what they did, errors, conclusions, open points, entities); the header and
//! summary are assembled from those facts and fitted to their caps by
//! dropping the least important points first, cutting text only as a last
//! resort. `facts` reads the exchange, `entities` and `sentences` read its
//! texts; this module assembles the header and the summary.

use std::collections::HashMap;

use crate::config::LayerCaps;
use crate::exchange::{Counted, Outcome};
use crate::fit::{fit_points, fit_text, Point};
use crate::text::{clip_chars, one_line};
use crate::tokens::{self, Encoding};

mod entities;
mod facts;
mod sentences;

use entities::short_entity;
use sentences::trim_word;

pub use entities::entities_of;
pub(crate) use entities::looks_like_path;
pub use facts::{Action, ExchangeFacts, ToolClass};
pub use sentences::{is_stopword, sentences};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trio {
    pub header: Counted,
    pub summary: Counted,
    pub outcome: Outcome,
    pub entities: Vec<String>,
}

/// Summarises one exchange. The id is not part of the texts: it travels
/// beside them, and every layer prints it its own way. `seen` tells which
/// of its words the exchanges before it already use (`SeenTerms::of`).
pub fn summarise(
    facts: &ExchangeFacts,
    seen: &SeenTerms,
    caps: &LayerCaps,
    encoding: Encoding,
) -> Trio {
    Trio {
        header: header(facts, seen, caps.header_max, encoding),
        summary: summary(facts, caps.summary_max, encoding),
        outcome: facts.outcome,
        entities: facts.entities.clone(),
    }
}

/// How many of the exchanges before one (the newest `TERM_WINDOW` of its
/// session) use each word: distinctiveness is relative to the session, and
/// a word most exchanges use points at none of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SeenTerms {
    /// How many exchanges were counted (at most `TERM_WINDOW`).
    pub exchanges: u32,
    /// Lower-case term -> how many of them use it.
    pub counts: HashMap<String, u32>,
}

/// How many earlier exchanges a header's words are compared with.
pub const TERM_WINDOW: u32 = 64;

/// How many exchanges a header's words are compared with at least: one with
/// fewer before it is compared with the ones after it too, as they come
/// (`SeenTerms::around`), so that the first headers of a session learn
/// which words every exchange of it repeats (a reasoner's problem
/// statement, a project's name) once there are exchanges to tell.
pub const HEADER_PEERS: u32 = 8;

impl SeenTerms {
    /// Counts the terms (`ExchangeFacts::terms`) of earlier exchanges,
    /// newest last; only the newest `TERM_WINDOW` that have any count.
    pub fn of<'a>(earlier: impl DoubleEndedIterator<Item = &'a [String]>) -> SeenTerms {
        let mut seen = SeenTerms::default();
        for terms in earlier
            .rev()
            .filter(|t| !t.is_empty())
            .take(TERM_WINDOW as usize)
        {
            seen.exchanges += 1;
            for t in terms {
                *seen.counts.entry(t.clone()).or_default() += 1;
            }
        }
        seen
    }

    /// The terms the header of `session[at]` is compared with (`session`:
    /// each exchange's terms, oldest first): those before it, and while
    /// they are fewer than `HEADER_PEERS`, the ones after it up to that.
    pub fn around(session: &[Vec<String>], at: usize) -> SeenTerms {
        let told = |t: &&Vec<String>| !t.is_empty();
        let before: Vec<&Vec<String>> = session[..at].iter().filter(told).collect();
        let wanted = (HEADER_PEERS as usize).saturating_sub(before.len());
        let after = session[at + 1..].iter().filter(told).take(wanted);
        let peers: Vec<&Vec<String>> = before.into_iter().chain(after).collect();
        SeenTerms::of(peers.into_iter().map(Vec::as_slice))
    }

    /// How many of the counted exchanges use `word`, in any case.
    pub fn count(&self, word: &str) -> u32 {
        self.counts.get(&word.to_lowercase()).copied().unwrap_or(0)
    }

    /// Used by two or more, and a quarter or more, of at least three
    /// compared exchanges.
    fn is_common(&self, word: &str) -> bool {
        let count = self.count(word);
        self.exchanges >= 3 && count >= 2 && count * 4 >= self.exchanges
    }
}

/// The header alone, as `summarise` makes it: what a header revised against
/// more exchanges (`SeenTerms::around`) is made with.
pub fn header(facts: &ExchangeFacts, seen: &SeenTerms, cap: u32, encoding: Encoding) -> Counted {
    // Words of the ask without filler, each marked salient when it names
    // something: a capitalised word inside a sentence, a number, an id.
    // Words that many earlier exchanges use point at none of them.
    let mut topic: Vec<(String, bool)> = Vec::new();
    let mut sentence_start = true;
    for raw in facts.ask.split_whitespace() {
        let w = trim_word(raw);
        let starts = std::mem::replace(&mut sentence_start, raw.ends_with(['.', '!', '?']));
        if !w.chars().any(char::is_alphanumeric)
            || is_stopword(w)
            || seen.is_common(short_entity(w))
        {
            continue;
        }
        let named = w
            .chars()
            .any(|c| c.is_ascii_digit() || c == '_' || c == '/')
            || w.chars().skip(1).any(char::is_uppercase)
            || (!starts && w.starts_with(char::is_uppercase));
        let w = short_entity(w);
        if !topic.iter().any(|(t, _)| t.eq_ignore_ascii_case(w)) {
            topic.push((w.to_string(), named));
        }
    }
    if topic.len() < 2 {
        // Feedback such as "yes, go on" says little: the answer says more.
        let answer = facts.conclusions.first().map_or("", String::as_str);
        let words = answer
            .split_whitespace()
            .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
            .filter(|w| !w.is_empty() && !is_stopword(w) && !seen.is_common(short_entity(w)));
        topic.extend(words.take(5).map(|w| (w.to_string(), false)));
    }
    // Domain actions (book_flight, place_order) say what happened; file
    // and shell tools say little, their paths are among the entities.
    let mut tools: Vec<&str> = Vec::new();
    let domain = facts
        .actions
        .iter()
        .filter(|a| a.target.is_none() && a.class != ToolClass::Run);
    let (acts, looks): (Vec<&Action>, Vec<&Action>) =
        domain.partition(|a| a.class != ToolClass::Read);
    for a in acts.into_iter().chain(looks) {
        if !tools.contains(&a.tool.as_str()) {
            tools.push(&a.tool);
        }
    }
    let in_topic = |e: &str| {
        topic
            .iter()
            .any(|(t, _)| t.contains(e) || e.contains(t.as_str()))
    };
    // The rarest entities first: a file every exchange reads says nothing.
    let mut entities: Vec<&str> = facts
        .entities
        .iter()
        .map(|e| short_entity(e))
        .filter(|e| !in_topic(e) && !seen.is_common(e))
        .collect();
    entities.sort_by_key(|e| seen.count(e));
    entities.truncate(2);
    // A question's header also says what the answer found: its values
    // (versions, numbers, ids) are what a later question points back at.
    let mut answer_values: Vec<String> = Vec::new();
    if facts.ask.contains('?') {
        let words = facts
            .conclusions
            .iter()
            .flat_map(|c| c.split_whitespace())
            .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
            // Not a bare small number ("line 5"): too common to point.
            .filter(|w| w.chars().any(|c| c.is_ascii_digit()) && (3..=24).contains(&w.len()))
            .filter(|w| !in_topic(w));
        for w in words {
            if answer_values.len() == 2 {
                break;
            }
            if !answer_values.iter().any(|v| v == w) {
                answer_values.push(w.to_string());
            }
        }
    }
    // An id a result printed (a commit's hash) is what a later question
    // ("the commit hashes") points back at, asked or not.
    for id in facts.printed_ids.iter().filter(|id| !in_topic(id)) {
        if answer_values.len() == 2 {
            break;
        }
        if !answer_values.contains(id) {
            answer_values.push(id.clone());
        }
    }
    // Fill in priority order, keep the display order (tools, ask, answer,
    // entities).
    let numbered = || {
        topic
            .iter()
            .enumerate()
            .map(|(i, (t, named))| (10 + i, t.clone(), *named))
    };
    // The subject: two words of the ask, those the exchange's own calls,
    // results and answer take up before the others (a flourish such as
    // "Fantastic" is as rare in a session as the subject); then those the
    // fewest compared exchanges use (their inverse document frequency in
    // the session); of equally rare words, names first, then the ask's
    // order. Measured against YAKE's single-document scores, alone and
    // times this rarity (docs/ASSEMBLY.md, "Choosing a header's words").
    let echoed = facts.echoed_words();
    let mut subject: Vec<(usize, String, bool)> = numbered().collect();
    subject.sort_by_cached_key(|(i, t, named)| {
        let asked = t.to_lowercase();
        let echo = echoed.iter().any(|e| echoes(e, &asked));
        (!echo, seen.count(short_entity(t)), !named, *i)
    });
    subject.truncate(2);
    let candidates = subject
        .into_iter()
        .map(|(i, t, _)| (i, t))
        .chain(tools.iter().take(1).map(|t| (0, t.to_string())))
        .chain(
            numbered()
                .skip(1)
                .filter(|(.., named)| *named)
                .map(|(i, t, _)| (i, t)),
        )
        .chain(
            answer_values
                .iter()
                .enumerate()
                .map(|(i, v)| (90 + i, v.clone())),
        )
        .chain(tools.iter().skip(1).take(1).map(|t| (1, t.to_string())))
        .chain(
            entities
                .iter()
                .enumerate()
                .map(|(i, e)| (100 + i, e.to_string())),
        )
        .chain(
            numbered()
                .skip(1)
                .filter(|(.., named)| !named)
                .map(|(i, t, _)| (i, t)),
        );
    let mut chosen: Vec<(usize, String)> = Vec::new();
    let suffix = format!(" — {}", facts.outcome.as_str());
    let render = |chosen: &[(usize, String)]| {
        let mut sorted: Vec<&(usize, String)> = chosen.iter().collect();
        sorted.sort_by_key(|(i, _)| *i);
        let body = sorted
            .iter()
            .map(|(_, w)| clip_chars(w, 40))
            .collect::<Vec<_>>()
            .join(" ");
        format!("{body}{suffix}")
    };
    for c in candidates {
        if chosen.iter().any(|(_, w)| w.eq_ignore_ascii_case(&c.1)) {
            continue;
        }
        chosen.push(c);
        if tokens::count(encoding, &render(&chosen)) > cap {
            chosen.pop();
        }
    }
    fit_text(render(&chosen).trim(), cap, encoding)
}

/// Whether a word of the exchange's own text (`said`, lowercase) takes up
/// the ask's word `asked` (lowercase): equal, or one the start of the other
/// when both have four letters or more ("cover" and "coverage").
fn echoes(said: &str, asked: &str) -> bool {
    let prefix = |a: &str, b: &str| a.chars().count() >= 4 && b.starts_with(a);
    said == asked || prefix(said, asked) || prefix(asked, said)
}

fn summary(facts: &ExchangeFacts, cap: u32, encoding: Encoding) -> Counted {
    const LABELS: [&str; 6] = ["Ask", "Did", "Errors", "Result", "Open", "Refs"];
    let mut points = Vec::new();
    let mut add = |section: usize, text: String, weight: u32| {
        points.push(Point {
            section,
            text,
            weight,
        })
    };
    if !facts.ask.is_empty() {
        let label = if facts.feedback { "(feedback) " } else { "" };
        add(0, format!("{label}{}", facts.ask), 100);
    }
    let edited = facts.edited_files();
    if !edited.is_empty() {
        add(1, format!("edited {}", edited.join(", ")), 85);
    }
    let mut weight = 80;
    let mut reads = Vec::new();
    for a in &facts.actions {
        let failed = a.failed == Some(true);
        let status = if failed { " (failed)" } else { "" };
        let text = match (a.class, &a.target) {
            (ToolClass::Edit, Some(_)) if !failed => continue,
            (ToolClass::Read, _) if !failed => {
                reads.push(a.target.clone().unwrap_or_else(|| a.tool.clone()));
                continue;
            }
            (ToolClass::Run, Some(cmd)) => format!("ran `{cmd}`{status}"),
            _ => format!("{}({}){status}", a.tool, clip_chars(&a.brief, 100)),
        };
        add(1, text, weight);
        weight = weight.saturating_sub(3);
    }
    reads.dedup();
    if !reads.is_empty() {
        add(
            1,
            format!("looked at {}", clip_chars(&reads.join(", "), 120)),
            30,
        );
    }
    for (i, e) in facts.errors.iter().enumerate() {
        add(2, e.clone(), 88u32.saturating_sub(6 * i as u32));
    }
    for (i, c) in facts.conclusions.iter().enumerate() {
        add(3, c.clone(), if i == 0 { 95 } else { 60 - 5 * i as u32 });
    }
    for (i, o) in facts.open.iter().enumerate() {
        add(4, o.clone(), 70u32.saturating_sub(10 * i as u32));
    }
    let cited: Vec<String> = facts
        .actions
        .iter()
        .filter(|a| a.class != ToolClass::Run && a.failed == Some(false))
        .filter_map(|a| {
            Some(format!(
                "{} {}",
                a.blob.as_ref()?,
                a.target.as_deref().unwrap_or(&a.tool)
            ))
        })
        .collect();
    for (i, r) in cited.into_iter().enumerate().take(4) {
        add(5, r, 20u32.saturating_sub(i as u32));
    }
    fit_points(&LABELS, points, cap, encoding)
}

/// A model-written header, fitted like the built-in one: one line, within cap.
pub fn fit_header(text: &str, caps: &LayerCaps, encoding: Encoding) -> Counted {
    fit_text(&one_line(text), caps.header_max, encoding)
}

/// A model-written summary, fitted like the built-in one: trailing sentences
/// dropped until it fits, cut as a last resort.
pub fn fit_summary(text: &str, caps: &LayerCaps, encoding: Encoding) -> Counted {
    let mut kept = String::new();
    for s in sentences(text) {
        let longer = if kept.is_empty() {
            s
        } else {
            format!("{kept} {s}")
        };
        if !kept.is_empty() && tokens::count(encoding, &longer) > caps.summary_max {
            break;
        }
        kept = longer;
    }
    fit_text(&kept, caps.summary_max, encoding)
}

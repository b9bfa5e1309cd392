//! The second phase: the budget left upgrades, most useful first, recent
//! exchanges newest first (full, digests, summary), then summaries newest
//! first, then the recall block's hits best first, then what the person
//! said (newest first), then project memory's standing section, then
//! references, then the project's recent exchanges; every demotion is a
//! `Trim` saying why. A superseded exchange gets no upgrade
//! and its references are not listed.

use std::collections::HashSet;

use super::asks::Ask;
use super::prompt::{ItemForm, Trim};
use super::regions::{Placed, Placement};
use super::titles::{
    title_tokens, ASKS_TITLE, MEMORY_TITLE, PROJECT_RECALL_TITLE, PROJECT_RECENT_TITLE,
    RECALL_TITLE, REFERENCES_TITLE,
};
use crate::config::LayerCaps;
use crate::exchange::Level;
use crate::ids::ExchangeId;
use crate::recall::RecallHit;
use crate::render::MESSAGE_OVERHEAD;
use crate::supersede;
use crate::tokens::Encoding;
use crate::view::{BlobRef, MemoryNote, SessionView};

/// Project memory's latest exchanges give the budget back in steps of
/// this share of their cap: a step leaves up to its size unused, and saves
/// resending, uncached, all that follows the section on each call while
/// the session grows within it (docs/ASSEMBLY.md, "Project memory").
const PROJECT_RECENT_STEPS: u32 = 16;

/// What the upgrades chose besides the exchanges' levels.
pub(super) struct Upgraded<'a> {
    /// The references listed, oldest first.
    pub(super) references: Vec<&'a BlobRef>,
    /// The recall block's hits shown, best first.
    pub(super) recall: Vec<&'a RecallHit>,
    /// Project memory's recall hits shown, best first.
    pub(super) project_recall: Vec<&'a RecallHit>,
    /// Project memory's standing section, as shown.
    pub(super) notes: Vec<&'a MemoryNote>,
    /// The project's recent exchanges, as shown, newest first.
    pub(super) project_recent: Vec<&'a MemoryNote>,
    pub(super) trimmed: Vec<Trim>,
    /// The budget still unused.
    pub(super) left: i64,
}

pub(super) fn upgrade<'a>(
    view: &'a SessionView,
    caps: &LayerCaps,
    enc: Encoding,
    placement: &mut Placement,
    left: i64,
) -> Upgraded<'a> {
    let title = |t: &'static str| title_tokens(t, enc);
    let mut left = left;
    let mut trimmed = Vec::new();
    let Placement {
        summarised,
        recent,
        asked,
        ..
    } = placement;
    // Upgrades, most useful first: recent exchanges newest first, then
    // summaries newest first, then recall, then what the person said, then
    // references.
    for p in recent.iter_mut().rev() {
        if let Some(by) = p.superseded_by {
            trimmed.push(superseded(p, Level::Full, by));
            continue;
        }
        let extra = |p: &Placed, level| {
            i64::from(p.cost(level, true)) - i64::from(p.cost(Level::Header, true))
        };
        let candidates = [Level::Full, Level::Digests, Level::Summary];
        let fits = candidates
            .into_iter()
            .find(|&l| extra(p, l) <= left && (l != Level::Summary || p.has_summary()));
        p.level = fits.unwrap_or(Level::Header);
        if p.level != Level::Full {
            trimmed.push(Trim {
                id: p.exchange.id.to_string(),
                from: ItemForm::Level(Level::Full),
                to: ItemForm::Level(p.level),
                reason: over_budget("full", extra(p, Level::Full), left),
            });
        }
        left -= extra(p, p.level);
    }
    let shown_whole: HashSet<ExchangeId> = recent
        .iter()
        .filter(|p| matches!(p.level, Level::Full | Level::Digests))
        .map(|p| p.exchange.id)
        .collect();
    for p in summarised.iter_mut().rev() {
        if let Some(by) = p.superseded_by {
            trimmed.push(superseded(p, Level::Summary, by));
            continue;
        }
        // A summary that saves less than a third of its exchange is not
        // worth its tokens on every turn: the header points at the
        // exchange, one retrieve away. Small exchanges (a call and a short
        // answer) end so. One that saves a third or more stays: its values
        // are in the prompt, and it sits in the cached prefix.
        // A superseding exchange is the state the reasoning carries
        // forward: its summary is worth its tokens whatever it saves.
        let summary = p.cost(Level::Summary, false);
        if 3 * summary > 2 * p.exchange.tokens.full && !p.supersedes {
            trimmed.push(Trim {
                id: p.exchange.id.to_string(),
                from: ItemForm::Level(Level::Summary),
                to: ItemForm::Level(Level::Header),
                reason: format!(
                    "summary saves too little: {summary} tokens of {} in full",
                    p.exchange.tokens.full
                ),
            });
            continue;
        }
        let extra = i64::from(summary - p.cost(Level::Header, false));
        if extra <= left {
            left -= extra;
            p.level = Level::Summary;
        } else {
            trimmed.push(Trim {
                id: p.exchange.id.to_string(),
                from: ItemForm::Level(Level::Summary),
                to: ItemForm::Level(Level::Header),
                reason: over_budget("summary", extra, left),
            });
        }
    }
    // A summary is lossy (the values its exchange printed rarely fit), so
    // only an exchange shown whole is left out of the recall block.
    let own = view.recall.hits.iter().filter(|h| {
        // A superseded exchange's state was replaced on purpose.
        !shown_whole.contains(&h.exchange) && !view.superseded.contains_key(&h.exchange)
    });
    let recall = fit_hits(
        own,
        (RECALL_TITLE, "layers.recallMax", caps.recall_max),
        enc,
        &mut left,
        &mut trimmed,
    );
    // The project's other sessions after the session's own: a line of this
    // session says what holds now.
    let project_recall = fit_hits(
        view.memory.recall.iter(),
        (
            PROJECT_RECALL_TITLE,
            "layers.projectRecallMax",
            caps.project_recall_max,
        ),
        enc,
        &mut left,
        &mut trimmed,
    );
    // What the person said comes after recall: at a small budget the two
    // compete, and a recalled line answers this question.
    fit_asks(asked, enc, &mut left, &mut trimmed);
    let notes = fit_entries(
        (MEMORY_TITLE, "memory"),
        &view.memory.notes,
        enc,
        &mut left,
        &mut trimmed,
    );
    let mut references = Vec::new();
    let references_title = title(REFERENCES_TITLE) + MESSAGE_OVERHEAD;
    for r in view
        .references
        .iter()
        .filter(|r| !shown_whole.contains(&r.exchange))
    {
        if let Some(&by) = view.superseded.get(&r.exchange) {
            trimmed.push(Trim {
                id: r.blob.short_id(),
                from: ItemForm::Reference,
                to: ItemForm::Dropped,
                reason: supersede::reason(by),
            });
            continue;
        }
        let cost = i64::from(
            r.line.tokens
                + if references.is_empty() {
                    references_title
                } else {
                    0
                },
        );
        if references.len() < caps.max_references as usize && cost <= left {
            left -= cost;
            references.push(r);
        } else {
            trimmed.push(Trim {
                id: r.blob.short_id(),
                from: ItemForm::Reference,
                to: ItemForm::Dropped,
                reason: over_budget("reference", cost, left),
            });
        }
    }
    // Listed oldest first, so that new references append.
    references.sort_by_key(|r| r.exchange);
    // Last, in what all the rest leaves: the session's own history takes
    // the budget back from the project's oldest recent exchanges, in steps
    // of a sixteenth of the layer's cap, so that while the session grows
    // within a step the section, and the cached prefix through it, stay
    // the same from one model call to the next.
    let step = i64::from(caps.project_recent_tokens / PROJECT_RECENT_STEPS).max(1);
    let mut room = left.max(0) / step * step;
    let offered = room;
    let project_recent = fit_entries(
        (PROJECT_RECENT_TITLE, "project's recent exchange"),
        &view.memory.recent,
        enc,
        &mut room,
        &mut trimmed,
    );
    left -= offered - room;
    Upgraded {
        references,
        recall,
        project_recall,
        notes,
        project_recent,
        trimmed,
        left,
    }
}

/// The hits of a recall block (the session's own, or project memory's)
/// that fit its cap (`title`, the setting's name and its value) and the
/// budget left, best first.
fn fit_hits<'a>(
    hits: impl Iterator<Item = &'a RecallHit>,
    (title, setting, cap): (&'static str, &str, u32),
    enc: Encoding,
    left: &mut i64,
    trimmed: &mut Vec<Trim>,
) -> Vec<&'a RecallHit> {
    let title = i64::from(title_tokens(title, enc) + MESSAGE_OVERHEAD);
    let mut room = i64::from(cap);
    let mut chosen = Vec::new();
    for hit in hits {
        let cost = i64::from(hit.passage.tokens) + if chosen.is_empty() { title } else { 0 };
        if cost <= room && cost <= *left {
            room -= cost;
            *left -= cost;
            chosen.push(hit);
        } else {
            trimmed.push(Trim {
                id: hit.id(),
                from: ItemForm::Text,
                to: ItemForm::Dropped,
                reason: match cost <= room {
                    true => over_budget("recall", cost, *left),
                    false => {
                        format!("over {setting}: recall needs {cost} more tokens, {room} left")
                    }
                },
            });
        }
    }
    chosen
}

/// A layer of project memory's entries (`title`, and `what` an entry is
/// in a trim's reason) as far as the budget left allows: its entries in
/// order (the store cut them to the layer's cap), the rest dropped, each a
/// `Trim`.
fn fit_entries<'a>(
    (title, what): (&'static str, &str),
    notes: &'a [MemoryNote],
    enc: Encoding,
    left: &mut i64,
    trimmed: &mut Vec<Trim>,
) -> Vec<&'a MemoryNote> {
    let title = i64::from(title_tokens(title, enc) + MESSAGE_OVERHEAD);
    let mut chosen = Vec::new();
    // The first line that does not fit ends the section: a shorter line
    // after it would make the section differ from one prompt to the next.
    let mut full = false;
    for note in notes {
        let cost = i64::from(note.line.tokens) + if chosen.is_empty() { title } else { 0 };
        full = full || cost > *left;
        if !full {
            *left -= cost;
            chosen.push(note);
        } else {
            trimmed.push(Trim {
                id: note.id.clone(),
                from: ItemForm::Text,
                to: ItemForm::Dropped,
                reason: over_budget(what, cost, *left),
            });
        }
    }
    chosen
}

/// Keeps the newest asks that fit the budget left (the layer's title with
/// the first), dropping the older ones.
fn fit_asks(asked: &mut Vec<Ask>, enc: Encoding, left: &mut i64, trimmed: &mut Vec<Trim>) {
    let title = i64::from(title_tokens(ASKS_TITLE, enc) + MESSAGE_OVERHEAD);
    let cost = |asks: &[Ask]| match asks {
        [] => 0,
        _ => title + asks.iter().map(|a| i64::from(a.line.tokens)).sum::<i64>(),
    };
    let mut dropped = 0;
    while cost(&asked[dropped..]) > *left {
        let ask = &asked[dropped];
        trimmed.push(Trim {
            id: ask.exchange.id.to_string(),
            from: ItemForm::Text,
            to: ItemForm::Dropped,
            reason: over_budget("ask", i64::from(ask.line.tokens), *left),
        });
        dropped += 1;
    }
    asked.drain(..dropped);
    *left -= cost(asked);
}

/// A superseded exchange stays at its header (the guaranteed part): the
/// demotion from the level its region would have shown.
fn superseded(p: &Placed, from: Level, by: ExchangeId) -> Trim {
    Trim {
        id: p.exchange.id.to_string(),
        from: ItemForm::Level(from),
        to: ItemForm::Level(Level::Header),
        reason: supersede::reason(by),
    }
}

pub(super) fn over_budget(what: &str, needs: i64, left: i64) -> String {
    format!("over budget: {what} needs {needs} more tokens, {left} left")
}

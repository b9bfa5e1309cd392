//! Where the regions start (headers, summaries, recent) and how each
//! exchange of the window is placed in them, at least as its header line.

use std::collections::{HashMap, HashSet};

use super::asks::{self, Ask};
use super::titles::{title_tokens, ASKS_TITLE};
use crate::config::LayerCaps;
use crate::exchange::{Counted, Level};
use crate::ids::ExchangeId;
use crate::render::{self, MESSAGE_OVERHEAD};
use crate::tokens::{self, Encoding};
use crate::view::{ExchangeView, HeaderItem, SessionView};

/// The store loads `SessionView::references` from exchanges up to this
/// one: newer exchanges are summarised or recent, and show their blob ids
/// themselves (a summary's `Refs:`, a digest's id).
/// `window` is the exchanges the store loaded for the view (oldest first).
pub fn references_horizon(
    exchange_count: u32,
    window: &[ExchangeView],
    caps: &LayerCaps,
) -> ExchangeId {
    ExchangeId(Regions::of(exchange_count, window, caps).summaries_from)
}

/// Exchanges per block: the tail is compacted at least once a block, at
/// the block's first exchange, so the boundary is a function of the
/// newest exchanges alone (no history before the block is needed).
fn block_len(caps: &LayerCaps) -> u32 {
    (6 * caps.recent_full).max(1)
}

/// At most this many exchanges stay recent at a compaction: two blocks,
/// about the dialogue's share at 16,000 in exchanges of 200 tokens (a short
/// question and answer), and a bound on the exchanges the view loads.
fn kept_len(caps: &LayerCaps) -> u32 {
    2 * block_len(caps)
}

/// How far back from the tail boundary the asks layer reaches, in
/// exchanges: as far as a compaction keeps (`kept_len`).
fn asks_reach(caps: &LayerCaps) -> u32 {
    kept_len(caps)
}

/// How many of the newest exchanges the store loads with their messages
/// into `SessionView::window`: a block, the exchanges a compaction at its
/// start keeps, and the summaries or the asks before them, whichever
/// reach further.
pub fn window_len(caps: &LayerCaps) -> u32 {
    match caps.recent_full {
        0 => caps.summaries,
        _ => block_len(caps) + kept_len(caps) + caps.summaries.max(asks_reach(caps)),
    }
}

/// How many of the newest exchanges of a session of `count` the view
/// loads for a prompt of `budget`: `window_len`, or all of them while the
/// whole history may fit the budget, since the whole shape shows every
/// exchange (a sliding window of the budget would hold them all).
/// `older_full` sums the full tokens of the `n` oldest exchanges; it is
/// asked only when at most `budget` tokens could hold them (each exchange
/// is at least one message).
pub fn view_len<E>(
    caps: &LayerCaps,
    budget: u32,
    count: u32,
    older_full: impl FnOnce(u32) -> Result<u64, E>,
) -> Result<u32, E> {
    let window = window_len(caps);
    let older = count.saturating_sub(window);
    if older == 0 || u64::from(older) * u64::from(MESSAGE_OVERHEAD + 1) > u64::from(budget) {
        return Ok(window);
    }
    Ok(match older_full(older)? <= u64::from(budget) {
        true => count,
        false => window,
    })
}

/// Where the regions start, from the number of exchanges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Regions {
    /// Exchanges after this are recent.
    pub(super) boundary: u32,
    /// Exchanges after this (and up to `boundary`) are summarised.
    pub(super) summaries_from: u32,
    /// Headers after this are listed.
    pub(super) headers_from: u32,
}

impl Regions {
    /// The boundary moves only when the recent tail grows past its caps
    /// (`Tail::over`), or at the first exchange of a block: then it jumps
    /// so that only the newest exchanges stay recent (`Tail::kept_by`). In
    /// between, new exchanges append to the tail and everything before them
    /// is the same prompt text, turn after turn.
    pub(super) fn of(count: u32, window: &[ExchangeView], caps: &LayerCaps) -> Regions {
        let boundary = match caps.recent_full {
            0 => count,
            _ => {
                let tail_of = |id: u32| -> Tail {
                    window
                        .iter()
                        .find(|e| e.id.0 == id)
                        .map_or(Tail::default(), Tail::of)
                };
                let oldest_loaded = window.first().map_or(count + 1, |e| e.id.0);
                // Compaction at `n`: keep `n` and the newest before it.
                let compact = |n: u32| -> (u32, Tail) {
                    let mut b = n - 1;
                    let mut kept = tail_of(n);
                    while b >= 1 && b >= oldest_loaded && n - b < kept_len(caps) {
                        let more = kept.plus(tail_of(b));
                        if !more.kept_by(caps) {
                            break;
                        }
                        kept = more;
                        b -= 1;
                    }
                    (b, kept)
                };
                let block = block_len(caps);
                let start = match count {
                    0 => 0,
                    c => (c - 1) / block * block + 1,
                };
                let mut b = 0;
                if start >= 1 {
                    let mut tail;
                    (b, tail) = compact(start);
                    for n in start + 1..=count {
                        tail = tail.plus(tail_of(n));
                        if tail.over(caps) {
                            (b, tail) = compact(n);
                        }
                    }
                }
                b
            }
        };
        // Summaries are frozen: the exchanges that leave the tail append to
        // them, and they are demoted to headers in a batch when they would
        // pass `summaries` (the region restarts at a multiple of it).
        let summaries_from = match caps.summaries {
            0 => boundary,
            s => boundary.saturating_sub(1) / s * s,
        };
        let step = (caps.max_headers / 4).max(1);
        let oldest = count.saturating_sub(caps.max_headers);
        let headers_from = oldest.div_ceil(step) * step;
        Regions {
            boundary,
            summaries_from,
            headers_from,
        }
    }
}

/// What the recent tail holds in full: every exchange's tokens, and the
/// tokens and count of those that ran tools. Tool output is most of a
/// coding session's tokens and is shown as digests and references once it
/// leaves the tail, so it gets a small share (`tail_tokens`); the dialogue
/// is what a person asks about, and the tail holds it up to what the other
/// layers leave of the budget (`dialogue_tokens`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Tail {
    all: u32,
    tools: u32,
    tool_exchanges: u32,
}

impl Tail {
    fn of(e: &ExchangeView) -> Tail {
        let ran_tools = e.ran_tools();
        Tail {
            all: e.tokens.full,
            tools: if ran_tools { e.tokens.full } else { 0 },
            tool_exchanges: u32::from(ran_tools),
        }
    }

    fn plus(self, other: Tail) -> Tail {
        Tail {
            all: self.all + other.all,
            tools: self.tools + other.tools,
            tool_exchanges: self.tool_exchanges + other.tool_exchanges,
        }
    }

    /// The tail has outgrown its caps: it is compacted at once.
    fn over(self, caps: &LayerCaps) -> bool {
        self.tools > caps.tail_tokens || self.all > caps.dialogue_tokens
    }

    /// A compaction keeps this much: at most `recent_full` exchanges that
    /// ran tools and an eighth of `tail_tokens` of them, at most two thirds
    /// of `dialogue_tokens` in all. A conversation's tail so moves in steps
    /// of a third of its share: its prefix changes once per third of a tail
    /// of new dialogue, and it never falls below two thirds of its share.
    fn kept_by(self, caps: &LayerCaps) -> bool {
        self.tool_exchanges <= caps.recent_full
            && self.tools <= caps.tail_tokens / 8
            && 3 * self.all <= 2 * caps.dialogue_tokens
    }
}

/// How an exchange of the summaries or recent region is shown.
pub(super) struct Placed<'a> {
    pub(super) exchange: &'a ExchangeView,
    pub(super) line: Counted,
    pub(super) level: Level,
    /// The exchange that replaced this one's state: it is shown as its
    /// header at most.
    pub(super) superseded_by: Option<ExchangeId>,
    /// This exchange replaced earlier ones' state: what the reasoning
    /// carries forward.
    pub(super) supersedes: bool,
}

impl Placed<'_> {
    /// What the exchange costs at `level`: as part of the summaries
    /// message (`own_message == false`) or as messages of its own.
    pub(super) fn cost(&self, level: Level, own_message: bool) -> u32 {
        let overhead = if own_message { MESSAGE_OVERHEAD } else { 0 };
        match level {
            Level::Full => self.exchange.tokens.full,
            Level::Digests => self.exchange.tokens.digests,
            Level::Summary if self.has_summary() => {
                self.line.tokens + self.exchange.summary.tokens + 1 + overhead
            }
            Level::Summary | Level::Header => self.line.tokens + overhead,
        }
    }

    pub(super) fn has_summary(&self) -> bool {
        !self.exchange.summary.text.trim().is_empty()
    }

    /// Pieces of the summary or header form, with their tokens.
    pub(super) fn pieces(&self) -> Vec<(String, u32)> {
        let mut out = vec![(self.line.text.clone(), self.line.tokens)];
        if self.level == Level::Summary && self.has_summary() {
            out.push((
                format!("{}\n", self.exchange.summary.text),
                self.exchange.summary.tokens + 1,
            ));
        }
        out
    }
}

/// The window's exchanges in their regions, and the headers listed.
pub(super) struct Placement<'a> {
    pub(super) summarised: Vec<Placed<'a>>,
    pub(super) recent: Vec<Placed<'a>>,
    pub(super) listed: Vec<&'a HeaderItem>,
    /// What the person said before the recent tail, oldest first.
    pub(super) asked: Vec<Ask<'a>>,
}

/// Places the window's exchanges, each as its header to begin with, and
/// lists the headers of the exchanges before them.
pub(super) fn place<'a>(view: &'a SessionView, caps: &LayerCaps, enc: Encoding) -> Placement<'a> {
    let regions = Regions::of(view.exchange_count, &view.window, caps);
    let headers: HashMap<ExchangeId, &HeaderItem> =
        view.headers.iter().map(|h| (h.id, h)).collect();
    let superseders: HashSet<ExchangeId> = view.superseded.values().copied().collect();
    let mut summarised: Vec<Placed> = Vec::new();
    let mut recent: Vec<Placed> = Vec::new();
    for e in &view.window {
        let p = Placed {
            exchange: e,
            line: header_line_of(e, &headers, enc),
            level: Level::Header,
            superseded_by: view.superseded.get(&e.id).copied(),
            supersedes: superseders.contains(&e.id),
        };
        if e.id.0 > regions.boundary {
            recent.push(p);
        } else if e.id.0 > regions.summaries_from {
            summarised.push(p);
        }
    }
    let in_window: HashSet<ExchangeId> = summarised
        .iter()
        .chain(&recent)
        .map(|p| p.exchange.id)
        .collect();
    let listed: Vec<&HeaderItem> = view
        .headers
        .iter()
        .filter(|h| h.id.0 > regions.headers_from && !in_window.contains(&h.id))
        .collect();
    let asked = asks::choose(
        &view.window,
        regions.boundary,
        asks_reach(caps),
        caps.asks_tokens,
        title_tokens(ASKS_TITLE, enc),
        &view.superseded,
        enc,
    );
    Placement {
        summarised,
        recent,
        listed,
        asked,
    }
}

pub(super) fn header_line_of(
    exchange: &ExchangeView,
    headers: &HashMap<ExchangeId, &HeaderItem>,
    enc: Encoding,
) -> Counted {
    match headers.get(&exchange.id) {
        Some(item) => item.line.clone(),
        None => {
            let text = render::header_line(exchange.id, &exchange.header.text);
            Counted {
                tokens: tokens::count(enc, &text),
                text,
            }
        }
    }
}

//! Where the regions start (headers, summaries, recent) and how each
//! exchange of the window is placed in them, at least as its header line.

use std::collections::{HashMap, HashSet};

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

/// How many of the newest exchanges the store loads with their messages
/// into `SessionView::window`: a block, the exchanges kept in full at its
/// start, and the summaries before them.
pub fn window_len(caps: &LayerCaps) -> u32 {
    match caps.recent_full {
        0 => caps.summaries,
        r => block_len(caps) + r + caps.summaries,
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
    /// The boundary moves only when the recent tail grows past
    /// `caps.tail_tokens` (or at the first exchange of a block): then it
    /// jumps so that only the newest exchanges (at most `recent_full`, at
    /// most an eighth of `tail_tokens` unless one is larger) stay recent.
    /// In between, new exchanges append to the tail and everything before
    /// them is the same prompt text, turn after turn.
    pub(super) fn of(count: u32, window: &[ExchangeView], caps: &LayerCaps) -> Regions {
        let r = caps.recent_full;
        let boundary = match r {
            0 => count,
            _ => {
                let full = |id: u32| -> u32 {
                    window
                        .iter()
                        .find(|e| e.id.0 == id)
                        .map_or(0, |e| e.tokens.full)
                };
                let oldest_loaded = window.first().map_or(count + 1, |e| e.id.0);
                // Compaction at `n`: keep `n` and the newest before it.
                let compact = |n: u32| -> u32 {
                    let mut b = n - 1;
                    let mut kept = full(n);
                    while b >= 1
                        && b >= oldest_loaded
                        && n - b < r
                        && kept + full(b) <= caps.tail_tokens / 8
                    {
                        kept += full(b);
                        b -= 1;
                    }
                    b
                };
                let block = block_len(caps);
                let start = match count {
                    0 => 0,
                    c => (c - 1) / block * block + 1,
                };
                let mut b = 0;
                if start >= 1 {
                    b = compact(start);
                    let mut tail: u32 = (b + 1..=start).map(full).sum();
                    for n in start + 1..=count {
                        tail += full(n);
                        if tail > caps.tail_tokens {
                            b = compact(n);
                            tail = (b + 1..=n).map(full).sum();
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
    Placement {
        summarised,
        recent,
        listed,
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

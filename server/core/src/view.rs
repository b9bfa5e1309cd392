//! What the store hands the packer for one `ctx/assemble`: plain data, every
//! text already counted at ingest, so assembling never re-counts or re-reads.

use std::sync::Arc;

use crate::call::CallLineage;
use crate::context::CurrentContext;
use crate::exchange::{Counted, KeptMessage, LevelTokens};
use crate::ids::{BlobHash, ExchangeId};
use crate::message::Role;
use crate::recall::RecallHit;
use crate::supersede::SupersededBy;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderItem {
    pub id: ExchangeId,
    pub at: Option<String>,
    /// The header line as listed in L2, id included, and its tokens.
    pub line: Counted,
}

/// An exchange with everything the packer may show of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExchangeView {
    pub id: ExchangeId,
    pub at: Option<String>,
    pub header: Counted,
    pub summary: Counted,
    pub messages: Vec<KeptMessage>,
    pub tokens: LevelTokens,
}

impl ExchangeView {
    /// The exchange holds a tool's output: its tokens count against the
    /// tail's `tail_tokens` as well as `dialogue_tokens`.
    pub fn ran_tools(&self) -> bool {
        self.messages.iter().any(|m| m.message.role == Role::Tool)
    }
}

/// A blob listed in L4: one line naming it and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlobRef {
    pub blob: BlobHash,
    pub exchange: ExchangeId,
    pub line: Counted,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionView {
    pub session_id: String,
    /// How many exchanges the session has (x1 ..= x<count>).
    pub exchange_count: u32,
    /// Headers of the newest exchanges, oldest first, at most `max_headers`.
    pub headers: Vec<HeaderItem>,
    /// The newest exchanges with their messages, oldest first: as many as
    /// `packer::window_len` asks for.
    pub window: Vec<ExchangeView>,
    /// Blob references, newest first, at most `max_references`.
    pub references: Vec<BlobRef>,
    /// The current context (L0); the packer renders it, leaving out what
    /// the prompt shows in full.
    pub current_context: CurrentContext,
    /// Superseded exchanges and their first superseders: at least every
    /// exchange the prompt can show (headers, window, references' exchanges)
    /// that is superseded, and so every superseder in the window.
    pub superseded: SupersededBy,
    /// The session's depth in its call tree: 0 for a root; a child is one
    /// deeper than its parent, a fork as deep as its parent.
    pub depth: u32,
    /// What a child session was called with; `None` for roots and forks.
    pub call: Option<CallLineage>,
    /// The recall block's candidates for the exchange the prompt serves,
    /// best first (`recall`); empty when its question has no distinctive
    /// word or nothing earlier matches.
    pub recall: Recall,
    /// What the project's earlier sessions give the prompt; empty for a
    /// session without a project, or with memory off.
    pub memory: ProjectMemory,
}

/// Project memory: what the other sessions of the session's project (same
/// tenant, same project) did, read from their stored exchanges. Only
/// exchanges stored before the session's first one are read, so both parts
/// stay the same for every prompt of one question, and the standing
/// section for the whole session. The standing section and the recent
/// exchanges are shared with the store's copy, which keeps them from one
/// prompt to the next: a prompt takes them without copying.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProjectMemory {
    /// The standing section's lines, newest session first.
    pub notes: Arc<[MemoryNote]>,
    /// The lines of other sessions that match the prompt's question, best
    /// first (`recall::choose`), each hit's ids naming its session.
    pub recall: Vec<RecallHit>,
    /// The project's newest exchanges before the session, newest first,
    /// each as `memory::transcript` writes it.
    pub recent: Arc<[MemoryNote]>,
}

/// An entry of project memory under its exchange's id (`s-k3v9qa/x12`): a
/// line of the standing section (what the exchange did or what the person
/// said there) or a recent exchange's messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryNote {
    pub id: String,
    pub line: Counted,
}

/// The hits of the recall block and the exchange whose question they
/// answer: the one the prompt's input opens, or the newest one while it is
/// open (an agent's tool loop).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recall {
    pub for_exchange: ExchangeId,
    pub hits: Vec<RecallHit>,
}

/// The references L4 lists, from candidates newest first: one per blob (a
/// file read twice is listed once, at its newest read), at most `max`.
pub fn newest_references(candidates: impl IntoIterator<Item = BlobRef>, max: u32) -> Vec<BlobRef> {
    let mut references: Vec<BlobRef> = Vec::new();
    for c in candidates {
        if references.len() as u32 >= max {
            break;
        }
        if !references.iter().any(|r| r.blob == c.blob) {
            references.push(c);
        }
    }
    references
}

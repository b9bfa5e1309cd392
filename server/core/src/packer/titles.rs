//! The packer's own layer titles, counted once per encoding per process,
//! and a titled layer as one message.

use std::sync::OnceLock;

use super::prompt::{LayerItem, PromptMessage};
use crate::message::Role;
use crate::tokens::{self, Encoding};

pub(super) const HEADERS_TITLE: &str =
    "## Earlier exchanges, oldest first (context_retrieve an id for more)\n";
pub(super) const SUMMARIES_TITLE: &str = "## Summaries of the exchanges before the recent ones\n";
pub(super) const REFERENCES_TITLE: &str =
    "## Stored tool outputs (context_retrieve a b3: id for lines or grep)\n";
pub(super) const ASKS_TITLE: &str =
    "## What the person said before the recent exchanges, oldest first (context_retrieve an id for the reply)\n";
pub(super) const RECALL_TITLE: &str =
    "## Recalled for this question: earlier lines that match its words (context_retrieve an id for more)\n";

pub(super) const MEMORY_TITLE: &str =
    "## What this project's earlier sessions did and said, newest first (context_retrieve an id for more)\n";
pub(super) const PROJECT_RECENT_TITLE: &str =
    "## The latest exchanges of this project's earlier sessions, newest first (context_retrieve an id for more)\n";
pub(super) const PROJECT_RECALL_TITLE: &str =
    "## Recalled from this project's earlier sessions: lines that match the question (context_retrieve an id for more)\n";

/// Tokens of a layer title: the titles never change, so each is counted
/// once per encoding, not on every assemble (and only in an encoding a
/// prompt asks for: counting loads its tables).
pub(super) fn title_tokens(title: &'static str, encoding: Encoding) -> u32 {
    const TITLES: [&str; 8] = [
        HEADERS_TITLE,
        SUMMARIES_TITLE,
        REFERENCES_TITLE,
        ASKS_TITLE,
        RECALL_TITLE,
        MEMORY_TITLE,
        PROJECT_RECENT_TITLE,
        PROJECT_RECALL_TITLE,
    ];
    static COUNTS: [OnceLock<[u32; 8]>; 2] = [const { OnceLock::new() }; 2];
    let e = Encoding::ALL
        .iter()
        .position(|e| *e == encoding)
        .expect("known encoding");
    let counts = COUNTS[e].get_or_init(|| TITLES.map(|t| tokens::count(encoding, t)));
    let t = TITLES
        .iter()
        .position(|t| *t == title)
        .expect("a layer title");
    counts[t]
}

/// A layer shown as one user message: its title, then each entry's pieces.
pub(super) fn titled_layer(
    title: &'static str,
    encoding: Encoding,
    entries: impl IntoIterator<Item = (Vec<(String, u32)>, LayerItem)>,
) -> (Vec<PromptMessage>, Vec<LayerItem>) {
    let mut pieces = vec![(title.to_string(), title_tokens(title, encoding))];
    let mut items = Vec::new();
    for (entry, item) in entries {
        pieces.extend(entry);
        items.push(item);
    }
    (vec![PromptMessage::of_pieces(Role::User, pieces)], items)
}

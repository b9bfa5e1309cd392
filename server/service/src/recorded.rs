//! What replay saw at each turn of a recorded session (the session itself
//! is `core::recorded`'s, the one parser of the format): the data the
//! replay report is built from.

use crate::api::AssembleResult;

/// What replay saw at one turn.
#[derive(Clone)]
pub struct Turn {
    pub seq: u32,
    pub prompt: AssembleResult,
    /// The blob ids the store reported for the exchange's tool results.
    pub blobs: Vec<String>,
    /// For each of the exchange's needs, where `ctx/search` with the
    /// question's words ranks the exchange the fact came from (1 = first),
    /// searching before the question is stored; `None` past the depth replay searches.
    pub search_ranks: Vec<Option<usize>>,
}

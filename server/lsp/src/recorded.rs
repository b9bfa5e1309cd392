//! A recorded session as replay reads it (one exchange per line, with the
//! facts later turns need) and what replay saw at each turn: the data the
//! replay report is built from.

use crate::protocol::{AssembleResult, WireMessage};
use serde::Deserialize;

/// One line of a recorded session.
#[derive(Debug, Deserialize)]
pub struct RecordedExchange {
    pub messages: Vec<WireMessage>,
    #[serde(default)]
    pub needs: Vec<Need>,
}

#[derive(Debug, Deserialize, Clone)]
pub struct Need {
    pub fact: String,
    pub from: u32,
    #[serde(default)]
    pub cues: Vec<String>,
}

/// What replay saw at one turn.
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

//! A recorded session as replay reads it (one exchange per line, with the
//! facts later turns need) and what replay saw at each turn: the data the
//! replay report is built from.

use crate::protocol::{AssembleResult, WireMessage};
use ctxproxy_core::recorded::{needs_of, Need};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// One line of a recorded session: its messages in the wire shapes (base64
/// tool output, content parts), its needs parsed by `core::recorded`.
#[derive(Debug, Deserialize)]
pub struct RecordedExchange {
    pub messages: Vec<WireMessage>,
    #[serde(default, deserialize_with = "needs")]
    pub needs: Vec<Need>,
}

fn needs<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Need>, D::Error> {
    let v = Option::<Value>::deserialize(d)?;
    needs_of(v.as_ref()).map_err(serde::de::Error::custom)
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

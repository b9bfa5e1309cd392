//! Supersession: an exchange that replaces the state earlier ones built (a
//! reasoning step that decomposes, synthesises or refines, as an
//! MCTS reasoner does) makes their text obsolete. Here: the ranges a client
//! names (`x3-x9`, `x12`), the map the store keeps (superseded exchange →
//! its first superseder), and its grouping into ranges for reports.

use std::collections::BTreeMap;
use std::fmt;

use crate::ids::{ExchangeId, ItemId};

/// Which exchange superseded each superseded one (its first superseder).
pub type SupersededBy = BTreeMap<ExchangeId, ExchangeId>;

/// `x3` or the inclusive range `x3-x9`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExchangeRange {
    pub first: ExchangeId,
    pub last: ExchangeId,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("expected x<K> or x<K>-x<M>, got {0:?}")]
pub struct RangeError(pub String);

impl ExchangeRange {
    /// `x<K>` or `x<K>-x<M>` with `1 <= K <= M`.
    pub fn parse(raw: &str) -> Result<ExchangeRange, RangeError> {
        let exchange = |s: &str| match ItemId::parse(s) {
            Ok(ItemId::Exchange(x)) if s == s.trim() => Ok(x),
            _ => Err(RangeError(raw.to_string())),
        };
        let (first, last) = match raw.split_once('-') {
            Some((a, b)) => (exchange(a)?, exchange(b)?),
            None => (exchange(raw)?, exchange(raw)?),
        };
        if last < first {
            return Err(RangeError(raw.to_string()));
        }
        Ok(ExchangeRange { first, last })
    }

    pub fn ids(self) -> impl Iterator<Item = ExchangeId> {
        (self.first.0..=self.last.0).map(ExchangeId)
    }
}

impl fmt::Display for ExchangeRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.first == self.last {
            write!(f, "{}", self.first)
        } else {
            write!(f, "{}-{}", self.first, self.last)
        }
    }
}

/// Superseded exchanges and what superseded them, as reports show them:
/// `x3-x9` superseded by `x10`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Supersession {
    pub ids: ExchangeRange,
    pub by: ExchangeId,
}

/// Groups (superseded, superseder) pairs, in order of the superseded id,
/// into ranges of consecutive ids with the same superseder.
pub fn grouped(pairs: impl IntoIterator<Item = (ExchangeId, ExchangeId)>) -> Vec<Supersession> {
    let mut sorted: Vec<(ExchangeId, ExchangeId)> = pairs.into_iter().collect();
    sorted.sort();
    sorted.dedup();
    let mut out: Vec<Supersession> = Vec::new();
    for (id, by) in sorted {
        match out.last_mut() {
            Some(s) if s.by == by && s.ids.last.0 + 1 == id.0 => s.ids.last = id,
            _ => out.push(Supersession {
                ids: ExchangeRange {
                    first: id,
                    last: id,
                },
                by,
            }),
        }
    }
    out
}

/// The reason a demotion of a superseded exchange (or of its reference)
/// gives in `trimmed`.
pub fn reason(by: ExchangeId) -> String {
    format!("superseded by {by}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_and_print() {
        let cases = [
            "x3", "x3-x9", "x12-x12", "x9-x3", "x0", "3-9", "x3-", "x3-x4-x5", " x3", "x3.1",
        ];
        let got: Vec<String> = cases
            .iter()
            .map(|c| match ExchangeRange::parse(c) {
                Ok(r) => format!("{c:?} -> {r}"),
                Err(e) => format!("{c:?} -> error: {e}"),
            })
            .collect();
        insta::assert_snapshot!(got.join("\n"));
    }

    #[test]
    fn consecutive_ids_with_one_superseder_group_into_a_range() {
        let x = ExchangeId;
        let pairs = [
            (x(4), x(10)),
            (x(3), x(10)),
            (x(5), x(10)),
            (x(7), x(10)),
            (x(8), x(12)),
            (x(9), x(12)),
            (x(1), x(2)),
        ];
        let got: Vec<String> = grouped(pairs)
            .iter()
            .map(|s| format!("{} by {}", s.ids, s.by))
            .collect();
        assert_eq!(
            got,
            ["x1 by x2", "x3-x5 by x10", "x7 by x10", "x8-x9 by x12"]
        );
    }
}

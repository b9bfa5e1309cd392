//! `path`: the chain from a root session through each fork point (or child
//! call) to one exchange, for `ctx/path` and `ctxproxy path`. Each session
//! on the chain lists the exchanges of the path that are its own; shared
//! ones are listed under the ancestor that made them.

use ctxproxy_core::ids::ExchangeId;
use rusqlite::{params, OptionalExtension};

use crate::error::StoreError;
use crate::read::{ExchangeListing, Reader};
use crate::Result;

/// How a session was reached from its parent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lineage {
    Root,
    /// A branch sharing `parent`'s exchanges up to `at`; its own start after.
    Fork {
        parent: String,
        at: u32,
    },
    /// A recursive call `parent` made after its exchange `at`: a fresh
    /// session whose own exchanges start at x1.
    Child {
        parent: String,
        at: u32,
    },
}

impl Lineage {
    /// The first exchange a session on the path calls its own.
    fn first_own(&self) -> u32 {
        match self {
            Lineage::Fork { at, .. } => at + 1,
            Lineage::Root | Lineage::Child { .. } => 1,
        }
    }

    /// The parent and its last exchange on a path that ends at `end` here:
    /// a fork's path up to a shared exchange ends in the parent there.
    fn parent(&self, end: u32) -> Option<(&str, u32)> {
        match self {
            Lineage::Root => None,
            Lineage::Fork { parent, at } => Some((parent, end.min(*at))),
            Lineage::Child { parent, at } => Some((parent, *at)),
        }
    }
}

/// One session of a path, root first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathSegment {
    pub session: String,
    pub title: String,
    pub depth: u32,
    pub lineage: Lineage,
    /// The exchanges of the path this session made, oldest first; each
    /// `superseded_by` only when its superseder is on the path too.
    pub exchanges: Vec<ExchangeListing>,
}

/// A session on the chain and the last exchange of the path in it.
struct Link {
    session: String,
    title: String,
    depth: u32,
    lineage: Lineage,
    end: u32,
}

impl Reader<'_> {
    /// The path from the root to `node` (default: the session's newest
    /// exchange), root first.
    pub fn path(&self, session: &str, node: Option<ExchangeId>) -> Result<Vec<PathSegment>> {
        let count = self.session(session)?.exchanges;
        let end = match node {
            None => count,
            Some(x) if x.0 <= count => x.0,
            Some(x) => {
                return Err(StoreError::UnknownId(format!(
                    "{x}: session {session} has {count} exchanges"
                )))
            }
        };
        let mut chain = Vec::new();
        let mut next = Some((session.to_string(), end));
        while let Some((id, end)) = next {
            let link = self.link(&id, end)?;
            next = link.lineage.parent(end).map(|(p, at)| (p.to_string(), at));
            chain.push(link);
        }
        chain.reverse();
        (0..chain.len())
            .map(|i| {
                // A fork holds copies of the exchanges it shares, with the
                // supersessions of its own line: the path's exchanges are
                // read from the newest session reached through forks alone.
                let holder = (i + 1..chain.len())
                    .take_while(|&j| matches!(chain[j].lineage, Lineage::Fork { .. }))
                    .last()
                    .unwrap_or(i);
                let link = &chain[i];
                let first = link.lineage.first_own();
                let mut exchanges = match link.end.checked_sub(first) {
                    Some(n) => self.exchanges(&chain[holder].session, first, n + 1)?,
                    None => Vec::new(),
                };
                for e in &mut exchanges {
                    e.superseded_by = e.superseded_by.filter(|by| by.0 <= chain[holder].end);
                }
                Ok(PathSegment {
                    session: link.session.clone(),
                    title: link.title.clone(),
                    depth: link.depth,
                    lineage: link.lineage.clone(),
                    exchanges,
                })
            })
            .collect()
    }

    fn link(&self, session: &str, end: u32) -> Result<Link> {
        let (title, depth, parent, at): (String, u32, Option<String>, Option<u32>) = self
            .conn
            .query_row(
                "SELECT title, depth, parent_id, fork_at FROM sessions WHERE id = ?1",
                params![session],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .optional()?
            .ok_or_else(|| StoreError::UnknownSession(session.to_string()))?;
        // Every session with a parent is a fork until sessions record how
        // they were opened (`parent_kind`): then 'child' gives `Child`.
        let lineage = match parent {
            None => Lineage::Root,
            Some(parent) => Lineage::Fork {
                parent,
                at: at.unwrap_or(0),
            },
        };
        Ok(Link {
            session: session.to_string(),
            title,
            depth,
            lineage,
            end,
        })
    }
}

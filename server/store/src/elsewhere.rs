//! Whether another process has committed to the store since a mark: a
//! process that keeps what it wrote itself up to date in memory (the
//! proxy's branches of a conversation, project memory's standing section)
//! reads the store again only when someone else may have changed it.

use std::future::Future;

use rusqlite::Connection;

use crate::{Result, Store};

/// What other processes had committed to the store when it was taken, on
/// the writer's connection: two equal marks mean no other process
/// committed in between. The writer's own commits never move it. (SQLite:
/// the connection's `PRAGMA data_version`, so marks of one store handle
/// compare; another handle's do not.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutsideCommits(i64);

pub(crate) fn outside_commits(conn: &Connection) -> Result<OutsideCommits> {
    Ok(OutsideCommits(conn.query_row(
        "PRAGMA data_version",
        [],
        |r| r.get(0),
    )?))
}

impl Store {
    /// Queues a read, ordered like `read`, that runs `f` only when another
    /// process has committed to the store since `seen` (always when
    /// `None`). Returns the mark to pass next time, taken before `f` reads
    /// (a commit in between makes the next call read again), and what `f`
    /// read, `None` when it did not run.
    pub fn read_if_changed_elsewhere<T, F>(
        &self,
        seen: Option<OutsideCommits>,
        f: F,
    ) -> impl Future<Output = Result<(OutsideCommits, Option<T>)>> + Send + 'static
    where
        T: Send + 'static,
        F: FnOnce(&crate::Reader) -> Result<T> + Send + 'static,
    {
        self.read(move |r| {
            let now = outside_commits(r.conn)?;
            let read = match seen {
                Some(seen) if seen == now => None,
                _ => Some(f(r)?),
            };
            Ok((now, read))
        })
    }
}

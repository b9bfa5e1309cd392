//! Checkpoints off the writer's path. SQLite checkpoints inside the commit
//! that takes its write-ahead log past 1,000 pages: that commit copies
//! every page of the log into the database file and syncs it, and the
//! writer, with every job queued behind it, waits. Here the writer's
//! connection counts the log's pages after each commit instead
//! (`sqlite3_wal_hook`, which also turns SQLite's own checkpoints off) and,
//! past that size, wakes this thread, which checkpoints on a connection of
//! its own while the writer goes on. A passive checkpoint never blocks the
//! writer; the log restarts from its start once a checkpoint has copied all
//! of it. Should checkpoints fall behind (readers holding old pages), the
//! writer checkpoints inline past `INLINE_PAGES`, as SQLite would have, so
//! the log stays bounded whatever happens here.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread;

use rusqlite::Connection;

/// The log size at which the checkpointer is woken: SQLite's default
/// automatic checkpoint size.
const WAKE_PAGES: i32 = 1_000;
/// The log size at which the writer checkpoints itself.
const INLINE_PAGES: i32 = 16 * WAKE_PAGES;

thread_local! {
    /// The pages in the log after the writer's last commit (set by the hook,
    /// on the committing thread).
    static LOG_PAGES: Cell<i32> = const { Cell::new(0) };
}

fn count_log_pages(_: &rusqlite::hooks::Wal, pages: std::ffi::c_int) -> rusqlite::Result<()> {
    LOG_PAGES.set(pages);
    Ok(())
}

/// What the writer does about its log after a commit.
pub(crate) enum AfterCommit {
    Nothing,
    /// Wake the checkpointer.
    Wake,
    /// Checkpoint now, on the writer's connection.
    Inline,
}

/// Installs the page count on the writer's connection.
pub(crate) fn watch(conn: &Connection) {
    conn.wal_hook(Some(count_log_pages));
}

/// What the log's size after the last commit on this thread asks for.
pub(crate) fn after_commit() -> AfterCommit {
    match LOG_PAGES.get() {
        n if n >= INLINE_PAGES => AfterCommit::Inline,
        n if n >= WAKE_PAGES => AfterCommit::Wake,
        _ => AfterCommit::Nothing,
    }
}

/// The handle the writer keeps: wakes the checkpointer; dropping it stops
/// the thread once its checkpoint, if one is under way, is done.
pub(crate) struct Checkpointer {
    wake: Option<mpsc::SyncSender<()>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Checkpointer {
    /// A checkpointer of the store at `db_path`; its connection is opened
    /// at the first wake, so a store that is never written opens none.
    pub(crate) fn start(db_path: &Path) -> std::io::Result<Checkpointer> {
        // One pending wake is enough: a checkpoint copies the whole log.
        let (tx, rx) = mpsc::sync_channel::<()>(1);
        let path: PathBuf = db_path.to_path_buf();
        let thread = thread::Builder::new()
            .name("ctxproxy-store-checkpointer".into())
            .spawn(move || {
                let mut conn: Option<Connection> = None;
                for () in rx {
                    if conn.is_none() {
                        conn = super::open_connection(&path, super::Access::ReadWrite).ok();
                    }
                    // Best effort: the writer checkpoints inline should
                    // this fail (another process holds the checkpoint lock).
                    if let Some(c) = &conn {
                        let _ = c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
                    }
                }
            })?;
        Ok(Checkpointer {
            wake: Some(tx),
            thread: Some(thread),
        })
    }

    pub(crate) fn wake(&self) {
        if let Some(tx) = &self.wake {
            // Full: a wake is pending already.
            let _ = tx.try_send(());
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.wake = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Commits of about 1 MB each on a connection that counts its log, as
    /// the writer's does, waking the checkpointer as `after_commit` says.
    fn write_megabytes(conn: &Connection, checkpointer: &Checkpointer, megabytes: usize) {
        for i in 0..megabytes {
            conn.execute("INSERT INTO t (data) VALUES (?1)", [vec![i as u8; 1 << 20]])
                .unwrap();
            match after_commit() {
                AfterCommit::Wake => checkpointer.wake(),
                AfterCommit::Inline => panic!("the log passed {INLINE_PAGES} pages"),
                AfterCommit::Nothing => {}
            }
        }
    }

    /// The checkpointer copies the log into the database file while the
    /// writer goes on; the writer's connection never checkpoints itself
    /// below `INLINE_PAGES` (SQLite's own checkpoints are off), so the
    /// database file grows only by the checkpointer's work.
    #[test]
    fn the_log_reaches_the_database_file_through_the_checkpointer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.db");
        let conn = crate::open_connection(&path, crate::Access::ReadWrite).unwrap();
        conn.execute_batch("CREATE TABLE t (data BLOB)").unwrap();
        watch(&conn);
        let db_bytes = || std::fs::metadata(&path).unwrap().len();

        // Under the wake size: nothing is checkpointed.
        let checkpointer = Checkpointer::start(&path).unwrap();
        write_megabytes(&conn, &checkpointer, 2);
        drop(checkpointer);
        assert!(db_bytes() < 1 << 20, "checkpointed early: {}", db_bytes());

        // Past it: the checkpointer has copied the log by the time it stops.
        let checkpointer = Checkpointer::start(&path).unwrap();
        write_megabytes(&conn, &checkpointer, 6);
        drop(checkpointer);
        assert!(db_bytes() >= 4 << 20, "not checkpointed: {}", db_bytes());
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 8);
    }

    #[test]
    fn the_writer_checkpoints_itself_only_when_the_log_runs_far_ahead() {
        for (pages, wanted) in [
            (0, "nothing"),
            (WAKE_PAGES - 1, "nothing"),
            (WAKE_PAGES, "wake"),
            (INLINE_PAGES - 1, "wake"),
            (INLINE_PAGES, "inline"),
        ] {
            LOG_PAGES.set(pages);
            let got = match after_commit() {
                AfterCommit::Nothing => "nothing",
                AfterCommit::Wake => "wake",
                AfterCommit::Inline => "inline",
            };
            assert_eq!(got, wanted, "{pages} pages");
        }
    }
}

//! The writer: the one connection that changes the store. Every job runs
//! in submission order, each write inside one transaction so a failed
//! request leaves nothing half-written; a store found damaged or opened
//! read-only refuses writes.

use std::path::PathBuf;

use ctxproxy_core::config::{DigestLimits, LayerCaps, LayerSettings};
use ctxproxy_core::tokens::Encoding;
use rusqlite::Connection;

use crate::checkpointer::{self, AfterCommit, Checkpointer};
use crate::error::StoreError;
use crate::kept::Kept;
use crate::memory::StandingSection;
use crate::read::Reader;
use crate::Result;

/// How ingest digests, summarises and counts; changed by configuration.
#[derive(Clone, Debug)]
pub struct IngestSettings {
    /// The encoding raw tool outputs are counted in and caps are fitted in.
    pub encoding: Encoding,
    /// The caps ingest fits headers, summaries and L0 in: `layers` at the
    /// configured budget.
    pub caps: LayerCaps,
    /// The layer settings a prompt's caps are resolved from, for its budget.
    pub layers: LayerSettings,
    pub digest: DigestLimits,
    pub redact_secrets: bool,
    /// Whether a prompt reads the project's other sessions
    /// (`Config::memory`).
    pub memory: bool,
}

impl Default for IngestSettings {
    fn default() -> Self {
        let c = ctxproxy_core::config::Config::default();
        IngestSettings {
            encoding: c.encoding,
            caps: c.layers.caps(c.budget),
            layers: c.layers,
            digest: c.digest,
            redact_secrets: c.redact_secrets,
            memory: c.memory,
        }
    }
}

/// How long a transaction waits for other processes' writers before the
/// store answers "unavailable".
const BUSY_DEADLINE: std::time::Duration = std::time::Duration::from_secs(120);

pub struct Writer {
    pub(crate) conn: Connection,
    pub(crate) db_path: PathBuf,
    pub(crate) blob_dir: PathBuf,
    pub(crate) settings: IngestSettings,
    /// Why writes are refused: the store is read-only, or was found damaged
    /// (writing into a malformed database spreads the damage).
    refusal: Option<StoreError>,
    /// Whether SQLite's page check ran: before the first write, so that
    /// reads (and the CLI, which only reads) never pay for it.
    pages_checked: bool,
    /// Checkpoints the log while the writer goes on (none when writes are
    /// refused from the start).
    checkpointer: Option<Checkpointer>,
    /// Project memory's standing section, kept from one prompt to the next
    /// (`forget` it whenever a stored exchange's header or superseder
    /// changes).
    pub(crate) standing: StandingSection,
    /// What the last prompt read that the next may take as it is, kept
    /// while the store does not change.
    pub(crate) kept: Kept,
}

impl Writer {
    pub(crate) fn new(
        conn: Connection,
        db_path: PathBuf,
        blob_dir: PathBuf,
        settings: IngestSettings,
    ) -> Writer {
        Writer {
            conn,
            db_path,
            blob_dir,
            settings,
            refusal: None,
            pages_checked: false,
            checkpointer: None,
            standing: StandingSection::default(),
            kept: Kept::default(),
        }
    }

    /// Refuses every later write with `why` (the store is read-only).
    pub(crate) fn refuse_writes(&mut self, why: Option<String>) {
        self.refusal = why.map(|why| StoreError::WritesRefused {
            damaged: false,
            why,
        });
    }

    /// Moves checkpoints off the writer's path (`checkpointer`).
    pub(crate) fn checkpoint_aside(&mut self, checkpointer: Checkpointer) {
        checkpointer::watch(&self.conn);
        self.checkpointer = Some(checkpointer);
    }

    /// A clean close: once the checkpointer has stopped, moves the whole
    /// log into the database file, so that the file alone holds the store.
    pub(crate) fn close(mut self) {
        self.checkpointer = None;
        self.checkpoint();
    }

    /// Names the store in an error that says it is damaged, and refuses
    /// writes from then on.
    pub(crate) fn noticed(&mut self, e: StoreError) -> StoreError {
        let e = e.at_store(&self.db_path);
        if let StoreError::Damaged { .. } = &e {
            self.refusal
                .get_or_insert_with(|| StoreError::WritesRefused {
                    damaged: true,
                    why: e.to_string(),
                });
        }
        e
    }

    /// `PRAGMA quick_check`: SQLite's structural check of every page. A
    /// store it finds damaged refuses writes (they would spread the damage).
    fn quick_check(&mut self) {
        self.pages_checked = true;
        let found = self
            .conn
            .prepare("PRAGMA quick_check")
            .and_then(|mut stmt| {
                stmt.query_map([], |r| r.get::<_, String>(0))?
                    .collect::<rusqlite::Result<Vec<_>>>()
            });
        let damage = match found {
            Ok(lines) if lines.iter().all(|l| l == "ok") => return,
            Ok(lines) => lines.join("; "),
            Err(e) => e.to_string(),
        };
        self.noticed(StoreError::Unreadable(format!("quick_check: {damage}")));
    }

    /// `PRAGMA wal_checkpoint(TRUNCATE)`; best effort: another process
    /// reading the store may keep part of the WAL until it is done.
    pub(crate) fn checkpoint(&mut self) {
        if self.refusal.is_none() {
            let _ = self
                .conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
        }
    }

    /// Runs `f` in one immediate transaction, committed only if it succeeds.
    pub(crate) fn transaction<T>(&mut self, f: impl FnOnce(&mut Writer) -> Result<T>) -> Result<T> {
        if !self.pages_checked {
            self.quick_check();
        }
        if let Some(StoreError::WritesRefused { damaged, why }) = &self.refusal {
            return Err(StoreError::WritesRefused {
                damaged: *damaged,
                why: why.clone(),
            });
        }
        self.begin("BEGIN IMMEDIATE")?;
        match f(self) {
            Ok(v) => {
                self.conn.execute_batch("COMMIT")?;
                self.after_commit();
                Ok(v)
            }
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// Checkpoints as the log's size asks (`checkpointer::after_commit`).
    fn after_commit(&mut self) {
        let Some(checkpointer) = &self.checkpointer else {
            return;
        };
        match checkpointer::after_commit() {
            AfterCommit::Nothing => {}
            AfterCommit::Wake => checkpointer.wake(),
            AfterCommit::Inline => {
                let _ = self
                    .conn
                    .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
            }
        }
    }

    /// Starts a transaction, waiting for other processes' writers as long
    /// as it takes (up to `BUSY_DEADLINE`): `busy_timeout` alone gives up
    /// after 5 s, and a client must never see a busy store it could wait for.
    fn begin(&self, sql: &str) -> Result<()> {
        let deadline = std::time::Instant::now() + BUSY_DEADLINE;
        let mut pause = std::time::Duration::from_millis(2);
        loop {
            match self.conn.execute_batch(sql) {
                Err(e)
                    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(std::time::Duration::from_millis(100));
                }
                other => return Ok(other?),
            }
        }
    }

    /// Runs a read on the writer's connection, in one deferred transaction
    /// so that it sees one state even if another process writes meanwhile.
    pub(crate) fn read<T>(&mut self, f: impl FnOnce(&Reader) -> Result<T>) -> Result<T> {
        self.begin("BEGIN DEFERRED")?;
        let out = f(&Reader::new(&self.conn, &self.blob_dir));
        let _ = self.conn.execute_batch("COMMIT");
        out
    }

    pub fn configure(&mut self, settings: IngestSettings) -> Result<()> {
        self.settings = settings;
        Ok(())
    }
}

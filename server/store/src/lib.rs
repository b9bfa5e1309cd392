//! ctxproxy's persistence: the only code that touches SQLite and blob files.
//!
//! One writer thread owns the connection and runs jobs strictly in the order
//! they were submitted, reads included: a read sees every write submitted
//! before it and none submitted after it, so a pipelining client observes the
//! store exactly in the order of its requests. Other processes (the CLI, a
//! second editor window) read through connections of their own (WAL).

mod append;
mod assemble;
mod blobs;
mod cached;
mod checkpointer;
mod elsewhere;
mod error;
mod exchange_row;
mod fulltext;
mod housekeeping;
mod kept;
pub mod maintenance;
mod memory;
mod open;
mod path;
pub mod prompt_record;
mod read;
mod recall;
mod requests;
mod schema;
mod session_view;
mod sessions;
mod supersede;
mod time;
mod tip;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;

use rusqlite::Connection;
use tokio::sync::oneshot;

use open::{blob_dir_of, open_connection, open_for_writing, Access};

pub use append::{AppendOutcome, BlobOutcome, Event};
pub use assemble::{AssembledPrompt, Keep};
pub use elsewhere::OutsideCommits;
pub use error::StoreError;
pub use exchange_row::TextSource;
pub use path::{Lineage, PathSegment};
pub use read::{
    BlobText, Edge, ExchangeListing, MessageItem, ParentKind, ParentLink, PromptRecord, Reader,
    SearchHit, SearchReach, SessionListing, Stats,
};
pub use requests::{LoggedRequest, RequestLog, SessionRequests};
pub use sessions::{ChildCall, NewSession};
pub use tip::{AppendedAt, Tip};
pub use writer::{IngestSettings, Writer};

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

type Job = Box<dyn FnOnce(&mut Writer) + Send>;

/// A handle to an open store; cheap to clone.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    db_path: PathBuf,
    blob_dir: PathBuf,
    queue: Mutex<mpsc::Sender<Job>>,
    /// Read-only connections for `read_now`.
    readers: Mutex<Vec<Connection>>,
}

/// A write or read that is under way.
pub type Pending<T> = oneshot::Receiver<Result<T>>;

impl Store {
    /// Opens (creating if needed) the store at `db_path`; blob files go in
    /// `blobs/` beside it. A store that cannot be opened for writing (a
    /// read-only file or directory) is opened for reading: reads work and
    /// every write is refused with the reason.
    pub fn open(db_path: &Path, settings: IngestSettings) -> Result<Store> {
        let blob_dir = blob_dir_of(db_path);
        let (conn, refusal) = match open_for_writing(db_path, &blob_dir) {
            Ok(conn) => (conn, None),
            Err(e) if db_path.exists() && !e.is_damage() => {
                let conn = open_connection(db_path, Access::ReadOnly).map_err(|source| {
                    StoreError::Open {
                        path: db_path.to_path_buf(),
                        mode: "reading",
                        source,
                    }
                })?;
                (conn, Some(e.to_string()))
            }
            Err(e) => return Err(e.at_store(db_path)),
        };
        let (tx, rx) = mpsc::channel::<Job>();
        let mut writer = Writer::new(conn, db_path.to_path_buf(), blob_dir.clone(), settings);
        if refusal.is_none() {
            let checkpointer = checkpointer::Checkpointer::start(db_path)
                .map_err(StoreError::io("start the checkpoint thread for", db_path))?;
            writer.checkpoint_aside(checkpointer);
        }
        writer.refuse_writes(refusal);
        thread::Builder::new()
            .name("ctxproxy-store-writer".into())
            .spawn(move || {
                for job in rx {
                    job(&mut writer);
                }
                // Every handle is gone: a clean close.
                writer.close();
            })
            .map_err(StoreError::io("start the writer thread for", db_path))?;
        Ok(Store {
            inner: Arc::new(Inner {
                db_path: db_path.to_path_buf(),
                blob_dir,
                queue: Mutex::new(tx),
                readers: Mutex::new(Vec::new()),
            }),
        })
    }

    /// Removes a session (see `Writer::remove_session`) and then, once that
    /// has committed, the blob files only it showed.
    pub async fn remove_session(&self, session: &str) -> Result<()> {
        let id = session.to_string();
        let files = settle(self.write(move |w| w.remove_session(&id))).await?;
        for f in files {
            let _ = std::fs::remove_file(f);
        }
        Ok(())
    }

    /// Moves everything in the WAL into the database file now (a clean
    /// exit: LSP `shutdown`, the end of a replay), so that a copy of
    /// `store.db` alone is the whole store.
    pub async fn checkpoint(&self) -> Result<()> {
        settle(self.submit(|w| {
            w.checkpoint();
            Ok(())
        }))
        .await
    }

    pub fn db_path(&self) -> &Path {
        &self.inner.db_path
    }

    /// Queues a state change, run in one transaction. It is ordered at this
    /// call, before any `.await`: callers must submit in arrival order.
    pub fn write<T, F>(&self, f: F) -> Pending<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Writer) -> Result<T> + Send + 'static,
    {
        self.submit(move |w| w.transaction(f))
    }

    /// Like `write`, and `committed` sees the result on the writer thread
    /// once it is committed, before the next job runs: what must keep the
    /// writes' order (the events of pipelined appends) goes there, not
    /// after the `.await`, where replies resume in any order.
    pub fn write_then<T, F, C>(&self, f: F, committed: C) -> Pending<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Writer) -> Result<T> + Send + 'static,
        C: FnOnce(&T) + Send + 'static,
    {
        self.submit(move |w| {
            let done = w.transaction(f)?;
            committed(&done);
            Ok(done)
        })
    }

    /// Queues a read, ordered with the writes around it, like `write`.
    pub fn read<T, F>(&self, f: F) -> impl std::future::Future<Output = Result<T>> + Send + 'static
    where
        T: Send + 'static,
        F: FnOnce(&Reader) -> Result<T> + Send + 'static,
    {
        settle(self.submit(move |w| w.read(f)))
    }

    fn submit<T: Send + 'static>(
        &self,
        run: impl FnOnce(&mut Writer) -> Result<T> + Send + 'static,
    ) -> Pending<T> {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |w: &mut Writer| {
            let _ = tx.send(run(w).map_err(|e| w.noticed(e)));
        });
        // A send error means the writer is gone; the dropped reply says so.
        let _ = self.inner.queue.lock().expect("queue lock").send(job);
        rx
    }

    /// Runs a read now on a read-only connection of the calling thread (the
    /// CLI); it sees what is committed.
    pub fn read_now<T>(&self, f: impl FnOnce(&Reader) -> Result<T>) -> Result<T> {
        let pooled = self.inner.readers.lock().expect("readers lock").pop();
        let conn = match pooled {
            Some(c) => c,
            None => open_connection(&self.inner.db_path, Access::ReadOnly).map_err(|source| {
                StoreError::Open {
                    path: self.inner.db_path.clone(),
                    mode: "reading",
                    source,
                }
            })?,
        };
        let out = f(&Reader::new(&conn, &self.inner.blob_dir))
            .map_err(|e| e.at_store(&self.inner.db_path));
        self.inner.readers.lock().expect("readers lock").push(conn);
        out
    }
}

/// Awaits a pending write or read reply.
pub async fn settle<T>(pending: Pending<T>) -> Result<T> {
    pending.await.map_err(|_| StoreError::Closed)?
}

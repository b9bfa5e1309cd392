//! ctxproxy's persistence: the only code that touches SQLite and blob files.
//!
//! One writer thread owns the connection and runs jobs strictly in the order
//! they were submitted, reads included: a read sees every write submitted
//! before it and none submitted after it, so a pipelining client observes the
//! store exactly in the order of its requests. Other processes (the CLI, a
//! second editor window) read through connections of their own (WAL).

mod blobs;
mod error;
mod ingest;
mod read;
mod schema;
mod time;

use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;

use rusqlite::{Connection, OpenFlags};
use tokio::sync::oneshot;

pub use error::StoreError;
pub use ingest::{
    AppendOutcome, AssembledPrompt, BlobOutcome, Event, IngestSettings, NewSession, Writer,
};
pub use read::{
    BlobText, ExchangeListing, MessageItem, PromptRecord, Reader, SearchHit, SessionListing, Stats,
};

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
    /// `blobs/` beside it.
    pub fn open(db_path: &Path, settings: IngestSettings) -> Result<Store> {
        if let Some(dir) = db_path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let blob_dir = db_path.with_file_name("blobs");
        std::fs::create_dir_all(&blob_dir)?;
        let mut conn = open_connection(db_path, false)?;
        schema::migrate(&mut conn)?;
        let (tx, rx) = mpsc::channel::<Job>();
        let mut writer = Writer::new(conn, blob_dir.clone(), settings);
        thread::Builder::new()
            .name("ctxproxy-store-writer".into())
            .spawn(move || {
                for job in rx {
                    job(&mut writer);
                }
            })?;
        Ok(Store {
            inner: Arc::new(Inner {
                db_path: db_path.to_path_buf(),
                blob_dir,
                queue: Mutex::new(tx),
                readers: Mutex::new(Vec::new()),
            }),
        })
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
            let _ = tx.send(run(w));
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
            None => open_connection(&self.inner.db_path, true)?,
        };
        let out = f(&Reader::new(&conn, &self.inner.blob_dir));
        self.inner.readers.lock().expect("readers lock").push(conn);
        out
    }
}

/// Awaits a pending write or read reply.
pub async fn settle<T>(pending: Pending<T>) -> Result<T> {
    pending.await.map_err(|_| StoreError::Closed)?
}

fn open_connection(path: &Path, read_only: bool) -> Result<Connection> {
    let flags = if read_only {
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX
    } else {
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
    };
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    if !read_only {
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
    }
    Ok(conn)
}

//! ctxproxy's persistence: the only code that touches SQLite and blob files.
//!
//! One writer thread owns the write connection and applies jobs strictly in
//! the order they were submitted. A read is ticketed at submission: it waits
//! until every write submitted before it has been applied, then runs on a
//! connection of its own, so reads see their writes and still run in parallel.

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
use tokio::sync::{oneshot, watch};

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
    /// The number of the last submitted write, and the queue it went to;
    /// locked together so numbers and queue order agree.
    queue: Mutex<(u64, mpsc::Sender<(u64, Job)>)>,
    applied: watch::Receiver<u64>,
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
        let (tx, rx) = mpsc::channel::<(u64, Job)>();
        let (applied_tx, applied_rx) = watch::channel(0u64);
        let mut writer = Writer::new(conn, blob_dir.clone(), settings);
        thread::Builder::new()
            .name("ctxproxy-store-writer".into())
            .spawn(move || {
                for (seq, job) in rx {
                    job(&mut writer);
                    let _ = applied_tx.send(seq);
                }
            })?;
        Ok(Store {
            inner: Arc::new(Inner {
                db_path: db_path.to_path_buf(),
                blob_dir,
                queue: Mutex::new((0, tx)),
                applied: applied_rx,
                readers: Mutex::new(Vec::new()),
            }),
        })
    }

    pub fn db_path(&self) -> &Path {
        &self.inner.db_path
    }

    /// Queues a state change. It is ordered at this call, before any
    /// `.await`: callers must submit synchronously in arrival order.
    pub fn write<T, F>(&self, f: F) -> Pending<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Writer) -> Result<T> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |w: &mut Writer| {
            let _ = tx.send(w.transaction(f));
        });
        let mut queue = self.inner.queue.lock().expect("queue lock");
        queue.0 += 1;
        let seq = queue.0;
        // A send error means the writer is gone; the dropped reply says so.
        let _ = queue.1.send((seq, job));
        rx
    }

    /// Runs a read once every write submitted before this call is applied.
    pub fn read<T, F>(&self, f: F) -> impl std::future::Future<Output = Result<T>> + Send + 'static
    where
        T: Send + 'static,
        F: FnOnce(&Reader) -> Result<T> + Send + 'static,
    {
        let ticket = self.inner.queue.lock().expect("queue lock").0;
        let inner = self.inner.clone();
        async move {
            let mut applied = inner.applied.clone();
            applied
                .wait_for(|a| *a >= ticket)
                .await
                .map_err(|_| StoreError::Closed)?;
            tokio::task::spawn_blocking(move || inner.with_reader(f))
                .await
                .map_err(|e| StoreError::Unavailable(format!("read task failed: {e}")))?
        }
    }

    /// Runs a read now, on the calling thread (for the CLI).
    pub fn read_now<T>(&self, f: impl FnOnce(&Reader) -> Result<T>) -> Result<T> {
        self.inner.with_reader(f)
    }
}

impl Inner {
    fn with_reader<T>(&self, f: impl FnOnce(&Reader) -> Result<T>) -> Result<T> {
        let conn = self.readers.lock().expect("readers lock").pop();
        let conn = match conn {
            Some(c) => c,
            None => open_connection(&self.db_path, true)?,
        };
        let reader = Reader::new(conn, &self.blob_dir);
        let out = f(&reader);
        self.readers
            .lock()
            .expect("readers lock")
            .push(reader.into_connection());
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

//! The store's one error type: what went wrong, with its source, and whether
//! it says the store is damaged.

use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("unknown session `{0}`")]
    UnknownSession(String),
    #[error("unknown id `{0}`")]
    UnknownId(String),
    #[error("ambiguous id `{id}`: matches {matches}")]
    AmbiguousId { id: String, matches: String },
    #[error("blob {id} is corrupt: {why}")]
    BlobCorrupt { id: String, why: String },
    /// `ctx/append`'s `exchange` is not the exchange the append would go to.
    #[error(
        "exchange: {given} is not the exchange this append goes to ({target}; the session's open \
         exchange is {open}): another writer appended in between"
    )]
    ExchangeNotOpen {
        given: String,
        open: String,
        target: String,
    },
    /// What the store holds does not read back: a damaged page or file.
    /// Once seen, the store refuses writes (`Writer::transaction`).
    /// `source` is the error that showed the damage (a corrupt blob, a
    /// value that does not decode, SQLite's "malformed").
    #[error(
        "the store {path} is damaged ({source}); writes are refused. Run `ctxproxy doctor --store {path}` \
         to see what is damaged and `ctxproxy doctor --store {path} --salvage NEW.db` to copy what is readable"
    )]
    Damaged {
        path: PathBuf,
        #[source]
        source: Box<StoreError>,
    },
    /// A request the store cannot carry out as asked (not damage).
    #[error("invalid request: {0}")]
    Invalid(String),
    #[error("cannot {op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open store {path} for {mode}: {source}")]
    Open {
        path: PathBuf,
        mode: &'static str,
        #[source]
        source: rusqlite::Error,
    },
    /// A write to a store that is read-only or damaged.
    #[error("{why}")]
    WritesRefused { damaged: bool, why: String },
    /// A stored value that does not decode; `at` names the store.
    #[error("{0}")]
    Unreadable(String),
    #[error("SQLite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("migration failed: {0}")]
    Migration(#[from] rusqlite_migration::Error),
    #[error("store is closed")]
    Closed,
}

impl StoreError {
    /// Whether this error says the store's content is damaged, as opposed to
    /// a bad request or a store that cannot be reached (locked, read-only).
    pub fn is_damage(&self) -> bool {
        use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
        match self {
            StoreError::BlobCorrupt { .. }
            | StoreError::Damaged { .. }
            | StoreError::Unreadable(_)
            | StoreError::WritesRefused { damaged: true, .. } => true,
            StoreError::Sqlite(e) => {
                matches!(e.sqlite_error_code(), Some(DatabaseCorrupt | NotADatabase))
                    || matches!(
                        e,
                        rusqlite::Error::FromSqlConversionFailure(..)
                            | rusqlite::Error::InvalidColumnType(..)
                    )
            }
            _ => false,
        }
    }

    /// The same error, naming the store when it is damage.
    pub fn at_store(self, path: &std::path::Path) -> StoreError {
        match self {
            StoreError::Damaged { .. } | StoreError::WritesRefused { .. } => self,
            e if e.is_damage() => StoreError::Damaged {
                path: path.to_path_buf(),
                source: Box::new(e),
            },
            e => e,
        }
    }

    pub(crate) fn io(
        op: &'static str,
        path: &std::path::Path,
    ) -> impl FnOnce(std::io::Error) -> StoreError {
        let path = path.to_path_buf();
        move |source| StoreError::Io { op, path, source }
    }
}

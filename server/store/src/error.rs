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
    #[error("invalid request: {0}")]
    Invalid(String),
    #[error("store unavailable: {0}")]
    Unavailable(String),
    #[error("store is closed")]
    Closed,
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Unavailable(e.to_string())
    }
}

impl From<std::io::Error> for StoreError {
    fn from(e: std::io::Error) -> Self {
        StoreError::Unavailable(e.to_string())
    }
}

impl From<rusqlite_migration::Error> for StoreError {
    fn from(e: rusqlite_migration::Error) -> Self {
        StoreError::Unavailable(format!("migration failed: {e}"))
    }
}

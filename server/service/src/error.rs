//! `ServiceError`: why a `ctx/` request failed, with the JSON-RPC code
//! protocol.md assigns. At the bottom of the crate: every other module may
//! use it, it uses none of them.

use ctxproxy_store::StoreError;

/// The store's error is boxed: it is large, and every `Result` of the
/// crate carries this type.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("{0}")]
    InvalidParams(String),
    #[error("unknown session `{0}`")]
    UnknownSession(String),
    #[error("{0}")]
    UnknownId(String),
    #[error("{0}")]
    BudgetTooSmall(String),
    /// The store cannot be reached (not open, locked, read-only); `source`
    /// is the store's own error when there is one.
    #[error("store unavailable: {why}")]
    StoreUnavailable {
        why: String,
        #[source]
        source: Option<Box<StoreError>>,
    },
    #[error("{0}")]
    PayloadTooLarge(String),
    /// The store's content does not read back; writes are refused.
    #[error("{0}")]
    StoreDamaged(#[source] Box<StoreError>),
    #[error("{0}")]
    ExchangeNotOpen(#[source] Box<StoreError>),
}

impl ServiceError {
    /// The JSON-RPC error code protocol.md assigns.
    pub fn code(&self) -> i64 {
        match self {
            ServiceError::InvalidParams(_) => -32602,
            ServiceError::UnknownSession(_) => -32001,
            ServiceError::UnknownId(_) => -32002,
            ServiceError::BudgetTooSmall(_) => -32003,
            ServiceError::StoreUnavailable { .. } => -32004,
            ServiceError::PayloadTooLarge(_) => -32005,
            ServiceError::StoreDamaged(_) => -32006,
            ServiceError::ExchangeNotOpen(_) => -32007,
        }
    }
}

impl From<StoreError> for ServiceError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::UnknownSession(s) => ServiceError::UnknownSession(s),
            StoreError::UnknownId(_) | StoreError::AmbiguousId { .. } => {
                ServiceError::UnknownId(e.to_string())
            }
            StoreError::Invalid(m) => ServiceError::InvalidParams(m),
            e @ StoreError::ExchangeNotOpen { .. } => ServiceError::ExchangeNotOpen(Box::new(e)),
            e if e.is_damage() => ServiceError::StoreDamaged(Box::new(e)),
            other => ServiceError::StoreUnavailable {
                why: other.to_string(),
                source: Some(Box::new(other)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error;

    use super::*;

    /// The store's error stays reachable as the source, so a caller (or a
    /// log line) can tell a damaged page from a locked file.
    #[test]
    fn store_errors_keep_their_source() {
        let damaged = ServiceError::from(StoreError::Unreadable("page 3".into()));
        assert_eq!(damaged.code(), -32006);
        assert_eq!(
            damaged.source().map(|s| s.to_string()),
            Some("page 3".into())
        );
        let closed = ServiceError::from(StoreError::Closed);
        assert_eq!(closed.code(), -32004);
        assert_eq!(closed.to_string(), "store unavailable: store is closed");
        assert!(closed.source().is_some());
    }
}

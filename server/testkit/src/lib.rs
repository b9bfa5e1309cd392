//! Test support, for tests and benches only (no crate depends on it
//! outside `[dev-dependencies]`; a tidy test checks it): a session kept in
//! memory through core's own recording pipeline, and exchanges written as
//! text. Recorded sessions are read by `ctxproxy_core::session_file`, the one
//! parser of their format, which `ctxproxy replay` uses too.

pub mod exchanges;
pub mod kept;
pub mod memory;

pub use exchanges::parse_exchange;
pub use kept::{kept, Output};
pub use memory::MemorySession;

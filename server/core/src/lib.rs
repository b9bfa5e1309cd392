//! The pure core of ctxproxy: plain data and functions over it.
//!
//! Invariant: nothing here does I/O, spawns threads or knows SQLite or LSP.
//! The store persists what these functions return; the packer is the only
//! code that trims, demotes or orders.

pub mod arguments;
pub mod baseline;
pub mod call;
pub mod config;
pub mod context;
pub mod context_tool;
pub mod digest;
pub mod evaluation;
pub mod exchange;
pub mod exchange_record;
pub mod fit;
pub mod ids;
pub mod memory;
pub mod message;
pub mod message_json;
pub mod packer;
pub mod recall;
pub mod render;
pub mod secrets;
pub mod session_file;
pub mod slice;
pub mod summary;
pub mod supersede;
pub mod text;
pub mod tokens;
pub mod usage;
pub mod view;
pub mod wire_name;

// For `wire_name!`: a crate that names its enums by a word needs no serde
// of its own.
#[doc(hidden)]
pub use serde;

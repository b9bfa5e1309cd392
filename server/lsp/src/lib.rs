//! The `ctxproxy` sidecar as a library: the wire types, the transport-free
//! `Service` behind every `ctx/` method, the LSP and HTTP front ends, and the
//! command-line tools. `main.rs` only parses the command line; tests drive
//! `Service` directly.
//!
//! Layers, bottom first (no module uses one above it): `error`; `protocol`,
//! `config`, `format`, `frames`, `recorded`, `state`; `assemble`; `service`; `server`,
//! `proxy`, `run`, `report`, `report_html`, `replay`, `bench`, `inspect`, `doctor`.

pub mod assemble;
pub mod bench;
pub mod config;
pub mod doctor;
pub mod error;
pub mod format;
pub mod frames;
pub mod inspect;
pub mod protocol;
pub mod proxy;
pub mod recorded;
pub mod replay;
pub mod report;
pub mod report_html;
pub mod run;
pub mod server;
pub mod service;
pub mod state;
pub mod timing;

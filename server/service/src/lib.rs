//! ctxproxy's service: every `ctx/` method behind one `Service`, independent
//! of the transport. The LSP server, the HTTP proxy and `ctxproxy replay` all
//! drive it, so each computation has one place.
//!
//! Layers, bottom first (no module uses one above it): `error`, `from_json`; `api`,
//! `config`, `format`, `retrieve`, `state`; `assemble`; `service`; `requests` (the proxy's request log) and
//! `context_tool` (the context tools run and their answers rendered), over `service`.

pub mod api;
pub mod assemble;
pub mod config;
pub mod context_tool;
pub mod error;
pub mod format;
pub mod from_json;
pub mod proxied;
pub mod requests;
mod retrieve;
pub mod service;
pub mod state;

//! ctxproxy's LSP server over stdio: tower-lsp-server wiring of every `ctx/`
//! method onto the `Service`, `ctx/event` notifications, and the frame guard
//! in front of it. The only crate that knows JSON-RPC.

pub mod frames;
pub mod server;

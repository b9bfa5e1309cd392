//! The `ctxproxy` command line as a library: replay and its report, the
//! benches, the store tools. `main.rs` only parses the command line; tests
//! drive `via_proxy` directly.
//!
//! Layers, bottom first (no module uses one above it): `timing`, `report`;
//! `report_html`, `via_proxy`; `proxy_args`; `replay`, `bench`, `inspect`, `doctor`, `run`.

pub mod across;
pub mod bench;
pub mod doctor;
pub mod inspect;
pub mod proxy_args;
pub mod replay;
pub mod report;
pub mod report_html;
pub mod run;
pub mod timing;
pub mod via_proxy;

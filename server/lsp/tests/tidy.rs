//! Tidy checks, as rust-analyzer keeps them: the invariants that
//! docs/ARCHITECTURE.md states about dependencies, module docs and the
//! protocol document, checked on the source tree instead of only written.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

const CRATES: [&str; 3] = ["server/core", "server/store", "server/lsp"];

/// The names in one `[section]` of a Cargo.toml.
fn dependencies(manifest: &str, section: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut inside = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == section;
        } else if inside && !line.is_empty() && !line.starts_with('#') {
            if let Some((name, _)) = line.split_once(['=', '.']) {
                names.push(name.trim().to_string());
            }
        }
    }
    names
}

fn sources_of(krate: &Path, dirs: &[&str]) -> String {
    let mut files = Vec::new();
    for d in dirs {
        rust_files(&krate.join(d), &mut files);
    }
    files.iter().map(|f| read(f)).collect::<Vec<_>>().join("\n")
}

#[test]
fn core_does_no_io() {
    let core = root().join("server/core");
    let deps = dependencies(&read(&core.join("Cargo.toml")), "[dependencies]");
    for io in [
        "rusqlite",
        "tokio",
        "tower-lsp-server",
        "reqwest",
        "axum",
        "hyper",
        "libc",
        "tempfile",
    ] {
        assert!(!deps.iter().any(|d| d == io), "server/core depends on {io}");
    }
    let mut files = Vec::new();
    rust_files(&core.join("src"), &mut files);
    for f in files {
        let text = read(&f);
        for io in [
            "std::fs",
            "std::net",
            "std::thread",
            "std::process",
            "SystemTime",
            "Instant::now",
            "std::env",
        ] {
            assert!(
                !text.contains(io),
                "{} uses {io}: core does no I/O",
                f.display()
            );
        }
    }
}

/// The HTTP front door is one edge beside LSP: only `server/lsp/src/proxy/`
/// names an HTTP crate; everything else reaches the store through `Service`.
#[test]
fn only_the_proxy_module_knows_http() {
    let proxy_dir = root().join("server/lsp/src/proxy");
    for krate in CRATES {
        let mut files = Vec::new();
        rust_files(&root().join(krate).join("src"), &mut files);
        for f in files.iter().filter(|f| !f.starts_with(&proxy_dir)) {
            let text = read(f);
            for http in ["axum::", "reqwest::", "hyper::", "use axum", "use reqwest"] {
                assert!(
                    !text.contains(http),
                    "{} uses {http}: only server/lsp/src/proxy/ knows HTTP",
                    f.display()
                );
            }
        }
    }
}

#[test]
fn every_dependency_is_used() {
    for krate in CRATES {
        let dir = root().join(krate);
        let manifest = read(&dir.join("Cargo.toml"));
        let checks = [
            ("[dependencies]", sources_of(&dir, &["src"])),
            (
                "[dev-dependencies]",
                sources_of(&dir, &["src", "tests", "benches"]),
            ),
        ];
        for (section, sources) in checks {
            for dep in dependencies(&manifest, section) {
                let name = dep.replace('-', "_");
                let used = sources.contains(&format!("{name}::"))
                    || sources.contains(&format!("use {name}"))
                    || sources.contains(&format!("{name}!"));
                assert!(used, "{krate}: {section} {dep} is not used");
            }
        }
    }
}

#[test]
fn every_module_says_what_it_holds() {
    for krate in CRATES {
        let mut files = Vec::new();
        rust_files(&root().join(krate).join("src"), &mut files);
        for f in files {
            assert!(
                read(&f).starts_with("//!"),
                "{} has no module doc comment (`//! …`)",
                f.display()
            );
        }
    }
}

#[test]
fn protocol_md_documents_every_method() {
    let server = read(&root().join("server/lsp/src/server.rs"));
    let protocol = read(&root().join("docs/PROTOCOL.md"));
    let methods: Vec<&str> = server
        .split(".custom_method(\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect();
    assert!(methods.len() >= 10, "found only {methods:?}");
    for m in methods {
        assert!(
            protocol.contains(&format!("## `{m}`")),
            "docs/PROTOCOL.md has no section for {m}"
        );
    }
}

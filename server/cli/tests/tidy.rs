//! Tidy checks, as rust-analyzer keeps them: the invariants that
//! docs/ARCHITECTURE.md states about dependencies, module docs, the
//! documents and what the repository tracks, checked on the source tree
//! instead of only written.

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

/// The workspace's crates, as the root Cargo.toml lists them: a new crate
/// is checked without being named here.
fn crates() -> Vec<String> {
    let manifest = read(&root().join("Cargo.toml"));
    let members: Vec<String> = between(&manifest, "members = [", "]")
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| !m.is_empty())
        .collect();
    assert!(members.len() >= 7, "read the members {members:?}");
    members
}

/// A crate's package name.
fn package_name(krate: &str) -> String {
    let manifest = read(&root().join(krate).join("Cargo.toml"));
    let line = between(&manifest, "[package]", "\n[")
        .lines()
        .find_map(|l| l.trim().strip_prefix("name = "))
        .unwrap_or_else(|| panic!("{krate}: no package name"));
    line.trim_matches('"').to_string()
}

/// Every dependency of a crate, dev-dependencies included.
fn all_dependencies(krate: &str) -> Vec<String> {
    let manifest = read(&root().join(krate).join("Cargo.toml"));
    let mut deps = dependencies(&manifest, "[dependencies]");
    deps.extend(dependencies(&manifest, "[dev-dependencies]"));
    deps
}

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

/// The code of every Rust file under `dirs`, comments left out: a crate
/// named only in a comment is not used.
fn sources_of(krate: &Path, dirs: &[&str]) -> String {
    let mut files = Vec::new();
    for d in dirs {
        rust_files(&krate.join(d), &mut files);
    }
    files.iter().map(|f| without_comments(&read(f))).collect()
}

/// Rust code with its `//` comments (whole-line and trailing) left out.
fn without_comments(code: &str) -> String {
    code.lines()
        .map(|l| match l.find("// ") {
            Some(at) => format!("{}\n", &l[..at]),
            None if l.trim_start().starts_with("//") => "\n".to_string(),
            None => format!("{l}\n"),
        })
        .collect()
}

/// Whether `code` uses crate `name` as a path (`name::`, `use name`,
/// `name!`), not as the tail of a longer name (`my_name::`).
fn uses_crate(code: &str, name: &str) -> bool {
    let starts_word = |at: usize| {
        code[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
    };
    code.match_indices(name).any(|(at, _)| {
        let rest = &code[at + name.len()..];
        starts_word(at) && (rest.starts_with("::") || rest.starts_with('!'))
            || code[..at].ends_with("use ")
                && !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_')
    })
}

/// Core and the model APIs' shapes are pure functions over plain data.
#[test]
fn core_does_no_io() {
    for krate in ["server/core", "server/model_apis"] {
        pure(&root().join(krate));
    }
}

fn pure(core: &Path) {
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
        assert!(
            !deps.iter().any(|d| d == io),
            "{} depends on {io}",
            core.display()
        );
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
                "{} uses {io}: it does no I/O",
                f.display()
            );
        }
    }
}

/// The crates each crate may depend on among the workspace's own, bottom
/// first: core ← model APIs ← store ← service ← lsp and proxy (the two
/// edges, neither knowing the other or the store) ← the binary; the
/// testkit beside core.
const LAYERS: [(&str, &[&str]); 8] = [
    ("ctxproxy-core", &[]),
    ("ctxproxy-testkit", &["ctxproxy-core"]),
    ("ctxproxy-model-apis", &["ctxproxy-core"]),
    ("ctxproxy-store", &["ctxproxy-core"]),
    (
        "ctxproxy-service",
        &["ctxproxy-core", "ctxproxy-model-apis", "ctxproxy-store"],
    ),
    ("ctxproxy-lsp", &["ctxproxy-core", "ctxproxy-service"]),
    (
        "ctxproxy-proxy",
        &["ctxproxy-core", "ctxproxy-model-apis", "ctxproxy-service"],
    ),
    (
        "ctxproxy",
        &[
            "ctxproxy-core",
            "ctxproxy-model-apis",
            "ctxproxy-store",
            "ctxproxy-service",
            "ctxproxy-lsp",
            "ctxproxy-proxy",
        ],
    ),
];

/// Cargo holds the layering: a crate can name only what its manifest
/// lists, and Cargo refuses a cycle between crates. This checks that the
/// manifests list what the layers allow (the testkit, a dev-dependency of
/// core's tests, aside).
#[test]
fn crates_depend_only_on_the_layers_below() {
    for krate in crates() {
        let name = package_name(&krate);
        let allowed = LAYERS
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("{krate} ({name}) has no place in LAYERS"))
            .1;
        let manifest = read(&root().join(&krate).join("Cargo.toml"));
        for dep in dependencies(&manifest, "[dependencies]") {
            assert!(
                !dep.starts_with("ctxproxy") || allowed.contains(&dep.as_str()),
                "{name} depends on {dep}, which is not below it"
            );
        }
    }
}

/// The HTTP libraries: only the proxy, and the binary's `via_proxy` that
/// measures it from outside, may depend on one.
const HTTP: [&str; 4] = ["axum", "reqwest", "hyper", "hyper-util"];

/// One crate speaks LSP and one speaks HTTP; none does both, and only the
/// store names SQLite.
#[test]
fn each_edge_library_has_one_crate() {
    for krate in crates() {
        let name = package_name(&krate);
        let deps = all_dependencies(&krate);
        let lsp = deps.iter().any(|d| d == "tower-lsp-server");
        let http: Vec<&String> = deps.iter().filter(|d| HTTP.contains(&d.as_str())).collect();
        assert!(
            !lsp || http.is_empty(),
            "{name} depends on tower-lsp-server and on {http:?}"
        );
        assert!(
            !lsp || name == "ctxproxy-lsp",
            "{name} depends on tower-lsp-server: only ctxproxy-lsp knows LSP"
        );
        assert!(
            http.is_empty() || name == "ctxproxy-proxy" || name == "ctxproxy",
            "{name} depends on {http:?}: only ctxproxy-proxy knows HTTP"
        );
        assert!(
            !deps.iter().any(|d| d.starts_with("rusqlite")) || name == "ctxproxy-store",
            "{name} names rusqlite: only ctxproxy-store touches SQLite"
        );
    }
}

/// Test support stays out of what ships: the testkit is only ever a
/// dev-dependency.
#[test]
fn the_testkit_is_for_tests_only() {
    for krate in crates() {
        let manifest = read(&root().join(&krate).join("Cargo.toml"));
        assert!(
            !dependencies(&manifest, "[dependencies]")
                .iter()
                .any(|d| d == "ctxproxy-testkit"),
            "{krate} depends on ctxproxy-testkit outside [dev-dependencies]"
        );
    }
}

#[test]
fn every_dependency_is_used() {
    for krate in crates() {
        let dir = root().join(&krate);
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
                assert!(
                    uses_crate(&sources, &name),
                    "{krate}: {section} {dep} is not used"
                );
            }
        }
    }
}

/// The check reads paths, not mentions: a comment, or a crate whose name
/// ends another name, does not make a dependency used.
#[test]
fn a_dependency_named_only_in_passing_is_unused() {
    assert!(uses_crate("use insta::assert_snapshot;", "insta"));
    assert!(uses_crate("insta::assert_snapshot!(x);", "insta"));
    assert!(uses_crate("use bytes;", "bytes"));
    assert!(!uses_crate(
        &without_comments("let n = text.as_bytes().len(); // bytes::Bytes\n/// bytes::Bytes"),
        "bytes"
    ));
    assert!(!uses_crate("my_bytes::read()", "bytes"));
    assert!(!uses_crate("use bytesize::ByteSize;", "bytes"));
}

#[test]
fn every_module_says_what_it_holds() {
    for krate in crates() {
        let mut files = Vec::new();
        for dir in ["src", "tests", "benches", "examples"] {
            rust_files(&root().join(&krate).join(dir), &mut files);
        }
        for f in files {
            assert!(
                read(&f).starts_with("//!"),
                "{} has no module doc comment (`//! …`)",
                f.display()
            );
        }
    }
}

/// The text from `start` to `end`, both left out; panics when `start` is
/// missing, naming it.
fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let (_, rest) = text
        .split_once(start)
        .unwrap_or_else(|| panic!("{start:?} not found"));
    rest.split(end).next().unwrap_or(rest)
}

/// The `ctx/` methods server.rs registers.
fn server_methods() -> Vec<String> {
    let server = read(&root().join("server/lsp/src/server.rs"));
    let methods: Vec<String> = server
        .split(".custom_method(\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_string)
        .collect();
    assert!(methods.len() >= 10, "found only {methods:?}");
    methods
}

#[test]
fn protocol_md_documents_every_method() {
    let protocol = read(&root().join("docs/PROTOCOL.md"));
    let methods = server_methods();
    for m in &methods {
        assert!(
            protocol.contains(&format!("## `{m}`")),
            "docs/PROTOCOL.md has no section for {m}"
        );
    }
    // And no section for a method the server does not have.
    for section in protocol.split("\n## `").skip(1) {
        let method = section.split('`').next().unwrap_or_default();
        assert!(
            method == "ctx/event" || methods.iter().any(|m| m == method),
            "docs/PROTOCOL.md documents {method}, which server.rs does not register"
        );
    }
}

/// Every `ctx/event` kind the server sends (a `CtxEvent` variant) is in
/// PROTOCOL.md's `ctx/event` section.
#[test]
fn protocol_md_documents_every_event_kind() {
    let protocol = read(&root().join("docs/PROTOCOL.md"));
    let events = between(&protocol, "## `ctx/event`", "\n## ");
    let source = read(&root().join("server/service/src/api.rs"));
    let variants = between(&source, "pub enum CtxEvent {", "\n}");
    let kinds: Vec<String> = variants
        .lines()
        .filter_map(|l| l.strip_prefix("    ")?.strip_suffix(" {"))
        .map(|v| v[..1].to_lowercase() + &v[1..])
        .collect();
    assert!(kinds.len() >= 5, "read the kinds {kinds:?}");
    for kind in kinds {
        assert!(
            events.contains(&format!("`{kind} ")) || events.contains(&format!("`{kind}\n")),
            "docs/PROTOCOL.md's ctx/event section does not name {kind}"
        );
    }
}

/// The VS Code client can call every method the server registers
/// (`vscode-client/src/protocol.ts`, `METHODS`).
#[test]
fn the_client_knows_every_method() {
    let ts = read(&root().join("vscode-client/src/protocol.ts"));
    let known = between(&ts, "export const METHODS = {", "}");
    let missing: Vec<String> = server_methods()
        .into_iter()
        .filter(|m| !known.contains(&format!("\"{m}\"")))
        .collect();
    assert!(missing.is_empty(), "protocol.ts METHODS lacks {missing:?}");
}

/// The top-level modules of a crate's `src/` (a file `x.rs` or a folder
/// `x/`), each with the source of its files before their tests.
fn modules(src: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(src).unwrap().flatten() {
        let p = e.path();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        if name == "lib" || name == "main" || name == "mod" {
            continue;
        }
        let mut files = Vec::new();
        match p.is_dir() {
            true => rust_files(&p, &mut files),
            false if p.extension().is_some_and(|x| x == "rs") => files.push(p.clone()),
            false => continue,
        }
        // A test module may use what its module is used by (a fixture):
        // code after `#[cfg(test)]` and files declared under it do not count.
        let sources: Vec<(PathBuf, String)> = files.iter().map(|f| (f.clone(), read(f))).collect();
        let test_only: Vec<String> = sources
            .iter()
            .flat_map(|(_, t)| t.split("#[cfg(test)]").skip(1))
            .filter_map(|after| {
                let decl = after.trim_start().lines().next()?;
                let name = decl.strip_prefix("pub(crate) ").unwrap_or(decl);
                Some(name.strip_prefix("mod ")?.strip_suffix(';')?.to_string())
            })
            .collect();
        let text = sources
            .iter()
            .filter(|(f, _)| {
                let stem = f.file_stem().unwrap().to_string_lossy();
                !test_only.iter().any(|t| *t == stem)
            })
            .map(|(_, t)| t.split("#[cfg(test)]").next().unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n");
        out.push((name, text));
    }
    out.sort();
    out
}

/// The modules named after `prefix` (`crate::`, `super::`) in `text`:
/// `crate::a::b` and each first name of `crate::{a, b::c}`.
fn references(text: &str, prefix: &str) -> Vec<String> {
    let ident = |s: &str| {
        s.trim()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect::<String>()
    };
    let mut out = Vec::new();
    for (i, _) in text.match_indices(prefix) {
        let rest = &text[i + prefix.len()..];
        match rest.strip_prefix('{') {
            Some(group) => {
                let (mut depth, mut start) = (0, 0);
                for (j, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => {
                            out.push(ident(&group[start..j]));
                            break;
                        }
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            out.push(ident(&group[start..j]));
                            start = j + 1;
                        }
                        _ => {}
                    }
                }
            }
            None => out.push(ident(rest)),
        }
    }
    out
}

/// A cycle reachable from `from`, as `a -> b -> a`, if any; `done` marks
/// the modules already searched.
fn cycle(
    graph: &[(String, Vec<String>)],
    from: usize,
    path: &mut Vec<usize>,
    done: &mut [bool],
) -> Option<String> {
    if let Some(start) = path.iter().position(|&m| m == from) {
        let names: Vec<&str> = path[start..]
            .iter()
            .chain([&from])
            .map(|&m| graph[m].0.as_str())
            .collect();
        return Some(names.join(" -> "));
    }
    if done[from] {
        return None;
    }
    path.push(from);
    for dep in &graph[from].1 {
        let to = graph.iter().position(|(n, _)| n == dep).unwrap();
        if let Some(c) = cycle(graph, to, path, done) {
            return Some(c);
        }
    }
    path.pop();
    done[from] = true;
    None
}

/// The first cycle among `modules`, whose references to each other are
/// what `refs` finds in their text.
fn first_cycle(modules: &[(String, String)], refs: impl Fn(&str) -> Vec<String>) -> Option<String> {
    let names: Vec<&String> = modules.iter().map(|(n, _)| n).collect();
    let graph: Vec<(String, Vec<String>)> = modules
        .iter()
        .map(|(name, text)| {
            let mut deps: Vec<String> = refs(text)
                .into_iter()
                .filter(|d| d != name && names.contains(&d))
                .collect();
            deps.sort();
            deps.dedup();
            (name.clone(), deps)
        })
        .collect();
    let mut done = vec![false; graph.len()];
    (0..graph.len()).find_map(|m| cycle(&graph, m, &mut Vec::new(), &mut done))
}

/// No two modules import each other, at the top of each crate and among
/// the files of each folder module (`summary/facts.rs` and
/// `summary/entities.rs`, reached as `super::` or `crate::summary::`).
#[test]
fn module_graph_is_acyclic() {
    for krate in crates() {
        let src = root().join(&krate).join("src");
        let top = modules(&src);
        if let Some(c) = first_cycle(&top, |t| references(t, "crate::")) {
            panic!("{krate}: modules import each other in a cycle: {c}");
        }
        for folder in std::fs::read_dir(&src).unwrap().flatten() {
            let dir = folder.path();
            if !dir.is_dir() {
                continue;
            }
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            let within = format!("crate::{name}::");
            let refs = |t: &str| {
                let mut r = references(t, "super::");
                r.extend(references(t, &within));
                r
            };
            if let Some(c) = first_cycle(&modules(&dir), refs) {
                panic!("{krate}/{name}: modules import each other in a cycle: {c}");
            }
        }
    }
}

/// The largest file the repository tracks outside `fixtures/`: a clone
/// carries every version of every file for good, so an output left behind
/// by mistake (a 41 MB profile once sat at the root) is caught before it is
/// committed, not after.
const LARGEST_TRACKED: u64 = 5 * 1024 * 1024;

#[test]
fn no_large_file_is_tracked_outside_fixtures() {
    let out = std::process::Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root())
        .output()
        .expect("run git ls-files");
    assert!(out.status.success(), "git ls-files failed: {out:?}");
    let large: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .split('\0')
        .filter(|f| !f.is_empty() && !f.starts_with("fixtures/"))
        // A file deleted but not yet staged has no size: it is on its way out.
        .filter_map(|f| Some((f, std::fs::metadata(root().join(f)).ok()?.len())))
        .filter(|(_, len)| *len > LARGEST_TRACKED)
        .map(|(f, len)| format!("{f} ({len} bytes)"))
        .collect();
    assert!(
        large.is_empty(),
        "tracked files over {LARGEST_TRACKED} bytes outside fixtures/: {}",
        large.join(", ")
    );
}

/// A place a document names in backticks, and where it may be: it exists
/// when any of `candidates` does.
#[derive(Debug, PartialEq)]
struct NamedPath {
    span: String,
    candidates: Vec<PathBuf>,
}

/// A document's prose as blocks: a paragraph or a list item, its
/// continuation lines joined, a heading or a table row, one line each;
/// fenced code left out (its backticks are not spans).
fn blocks(doc: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let (mut fenced, mut open) = (false, false);
    for line in doc.lines() {
        if line.starts_with("```") {
            (fenced, open) = (!fenced, false);
            continue;
        }
        let numbered = line
            .split_once(". ")
            .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        let starts = line.starts_with("- ") || line.starts_with(['|', '#']) || numbered;
        match (fenced, line.trim().is_empty()) {
            (true, _) => {}
            (false, true) => open = false,
            (false, false) if open && !starts => {
                let last = out.last_mut().expect("an open block");
                last.push(' ');
                last.push_str(line.trim());
            }
            (false, false) => {
                out.push(line.to_string());
                open = !line.starts_with(['|', '#']);
            }
        }
    }
    out
}

/// The backticked spans of a block, and whether each comes before the
/// block's first colon outside backticks (the names a list item leads
/// with: `- `a`, `b`: what they hold`). A block with an odd number of
/// backticks has no spans: they could not be paired.
fn spans(block: &str) -> Vec<(&str, bool)> {
    let parts: Vec<&str> = block.split('`').collect();
    // `is_multiple_of` would be the plain test, but it is newer than the
    // Rust 1.85 that README asks for.
    if parts.len() % 2 != 1 {
        return Vec::new();
    }
    let mut leading = true;
    let mut out = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        match i % 2 {
            0 => leading &= !part.contains(':'),
            _ => out.push((*part, leading)),
        }
    }
    out
}

fn path_like(span: &str, allowed: impl Fn(char) -> bool) -> bool {
    !span.is_empty() && span.chars().all(|c| allowed(c) || c == '/' || c == '.')
}

/// The files and modules `doc` names, by three rules, each for a form that
/// only ever names a path (what else is backticked, a method `ctx/append`
/// or a field, is not read):
///
/// 1. anywhere, a span that starts with `server/` and holds nothing but a
///    path's characters is a path from the repository's root;
/// 2. in a table whose first header cell is ``module (`DIR`)``, every span
///    of a row's first cell is a path in DIR;
/// 3. under a code-map heading ``### `crate` (server/x)``, up to the next
///    `## `: the lowercase spans a list item leads with (before its first
///    colon: ``- `openai`, `anthropic`: …``) and every lowercase span with a
///    `/` whose first part `is_module` of that crate (`openai/stream`,
///    `summary/`) are a module, a folder or a file of the crate:
///    `src/NAME.rs`, `src/NAME` or `NAME` in the crate's folder.
fn named_paths(doc: &str, is_module: impl Fn(&str, &str) -> bool) -> Vec<NamedPath> {
    let lowercase = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_';
    let mut out = Vec::new();
    let mut table: Option<String> = None;
    let mut krate: Option<String> = None;
    for block in blocks(doc) {
        if block.starts_with("## ") {
            krate = None;
        }
        if let Some(heading) = block.strip_prefix("### ") {
            krate = heading
                .split_once(" (server/")
                .and_then(|(_, rest)| rest.strip_suffix(')'))
                .filter(|name| path_like(name, lowercase))
                .map(|name| format!("server/{name}"));
        }
        let header = block.strip_prefix("| module (`");
        if let Some(dir) = header {
            table = dir.split_once('`').map(|(dir, _)| dir.to_string());
        } else if !block.starts_with('|') {
            table = None;
        }
        for (span, _) in spans(&block) {
            let file_name = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
            if span.starts_with("server/") && path_like(span, file_name) {
                out.push(NamedPath {
                    span: span.to_string(),
                    candidates: vec![PathBuf::from(span)],
                });
            }
        }
        if let (Some(dir), None) = (&table, header) {
            let first_cell = block.split('|').nth(1).unwrap_or_default();
            if !first_cell.starts_with("---") {
                for (span, _) in spans(first_cell) {
                    out.push(NamedPath {
                        span: span.to_string(),
                        candidates: vec![Path::new(dir).join(span)],
                    });
                }
            }
        }
        let Some(krate) = &krate else {
            continue;
        };
        for (span, leading) in spans(&block) {
            let first = span.split('/').next().unwrap_or_default();
            let module_path = span.contains('/') && is_module(krate, first);
            if path_like(span, lowercase) && (leading && block.starts_with("- ") || module_path) {
                let name = span.trim_end_matches('/');
                let at = Path::new(krate);
                out.push(NamedPath {
                    span: span.to_string(),
                    candidates: vec![
                        at.join("src").join(format!("{name}.rs")),
                        at.join("src").join(name),
                        at.join(name),
                    ],
                });
            }
        }
    }
    out
}

/// The documents that name the code: README.md and docs/*.md.
fn code_docs() -> Vec<PathBuf> {
    let mut docs = vec![root().join("README.md")];
    for e in std::fs::read_dir(root().join("docs")).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "md") {
            docs.push(e.path());
        }
    }
    docs.sort();
    docs
}

/// Every file, folder and module the documents name exists
/// (`named_paths` says which spans name one).
#[test]
fn docs_name_only_modules_that_exist() {
    let root = root();
    let is_module = |krate: &str, name: &str| {
        let src = root.join(krate).join("src");
        src.join(format!("{name}.rs")).is_file() || src.join(name).is_dir()
    };
    let mut missing = Vec::new();
    let mut checked = 0;
    for doc in code_docs() {
        for named in named_paths(&read(&doc), is_module) {
            checked += 1;
            if !named.candidates.iter().any(|c| root.join(c).exists()) {
                let name = doc.strip_prefix(&root).unwrap_or(&doc).display();
                missing.push(format!("{name}: `{}`", named.span));
            }
        }
    }
    assert!(checked >= 100, "read only {checked} names");
    assert!(
        missing.is_empty(),
        "named in the docs but not in the tree:\n{}",
        missing.join("\n")
    );
}

/// What the rules read, and what they leave alone.
#[test]
fn docs_name_paths_by_three_rules() {
    let doc = "\
Start at `server/store/src/lib.rs`; `ctx/append` is a method.

| module (`server/proxy/src/`) | job |
|---|---|
| `openai.rs`, `openai/stream.rs` | Chat Completions, not `api.rs` |

### `ctxproxy-core` (server/core)
From the bottom up:
- `ids`, `text` (plain): what `x12` means; `tokens/split`, `ctx/append`
  and `summary/`.
- `Store`: a type. Some prose: `fit`.

```
`server/in/a/fence.rs`
```
## Next
- `outside`: no crate.
";
    let is_module =
        |krate: &str, name: &str| krate == "server/core" && ["tokens", "summary"].contains(&name);
    let spans: Vec<String> = named_paths(doc, is_module)
        .into_iter()
        .map(|n| n.span)
        .collect();
    assert_eq!(
        spans,
        [
            "server/store/src/lib.rs",
            "server/proxy/src/",
            "openai.rs",
            "openai/stream.rs",
            "ids",
            "text",
            "tokens/split",
            "summary/",
        ]
    );
    let candidates = |span: &str| {
        named_paths(doc, is_module)
            .into_iter()
            .find(|n| n.span == span)
            .unwrap()
            .candidates
    };
    assert_eq!(
        candidates("openai/stream.rs"),
        [PathBuf::from("server/proxy/src/openai/stream.rs")]
    );
    assert_eq!(
        candidates("tokens/split"),
        [
            PathBuf::from("server/core/src/tokens/split.rs"),
            PathBuf::from("server/core/src/tokens/split"),
            PathBuf::from("server/core/tokens/split"),
        ]
    );
}

/// Regexes match word boundaries the ASCII way, `(?-u:\b)`. With a Unicode
/// `\b`, the regex crate's fast automaton gives up on a text with any
/// non-ASCII byte and the search falls back to its slowest engine: one such
/// pattern masked real source files at 5 MB/s instead of 130.
#[test]
fn regexes_use_ascii_word_boundaries() {
    let mut files = Vec::new();
    for krate in crates() {
        rust_files(&root().join(&krate).join("src"), &mut files);
    }
    let mut unicode = Vec::new();
    for f in files {
        for (n, line) in without_comments(&read(&f)).lines().enumerate() {
            // Raw string literals only: in `"…"` a `\b` is a backspace.
            let Some(at) = line.find("r\"").or_else(|| line.find("r#\"")) else {
                continue;
            };
            let raw = &line[at..];
            let bare = raw
                .match_indices(r"\b")
                .filter(|(i, _)| !raw[..*i].ends_with("(?-u:"));
            if bare.count() > 0 {
                unicode.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        unicode.is_empty(),
        "Unicode \\b in:\n{}",
        unicode.join("\n")
    );
}

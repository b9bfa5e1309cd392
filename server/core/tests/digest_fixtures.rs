//! Every fixture of `fixtures/tool-outputs/KIND/NAME.out` is digested with the
//! tool and arguments of its `NAME.cmd` and snapshotted; build and test
//! digests must name every error and failing test with its location.

use ctxproxy_core::config::DigestLimits;
use ctxproxy_core::digest;
use ctxproxy_core::tokens::{self, Encoding};
use regex::Regex;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

struct Fixture {
    kind: String,
    name: String,
    raw: String,
    digest: digest::Digest,
}

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/tool-outputs")
}

fn fixtures() -> Vec<Fixture> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(fixtures_dir())
        .unwrap()
        .map(|kind| kind.unwrap().path())
        .filter(|kind| kind.is_dir())
        .flat_map(|kind| std::fs::read_dir(kind).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "out"))
        .collect();
    paths.sort();
    paths.iter().map(|p| load(p)).collect()
}

fn load(path: &Path) -> Fixture {
    let kind = path
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let name = path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .trim_end_matches(".out")
        .to_string();
    let raw = std::fs::read_to_string(path).unwrap();
    let cmd =
        std::fs::read_to_string(path.with_file_name(format!("{name}.cmd"))).unwrap_or_default();
    let prior = digest::fixture_prior(&cmd)
        .map(|file| std::fs::read_to_string(path.with_file_name(file)).unwrap());
    // The store masks before it digests; secrets fixtures show that path.
    let (raw, digest) = digest::digest_fixture(
        &raw,
        &cmd,
        prior.as_deref(),
        &DigestLimits::default(),
        Encoding::O200kBase,
    );
    Fixture {
        kind,
        name,
        raw,
        digest,
    }
}

#[test]
fn digests_match_snapshots() {
    for f in fixtures() {
        let snapshot = format!("{}__{}", f.kind, f.name);
        insta::assert_snapshot!(
            snapshot,
            format!("kind: {}\n---\n{}", f.digest.kind.as_str(), f.digest.text)
        );
    }
}

#[test]
fn digests_fit_the_cap_and_start_with_the_headline() {
    let cap = DigestLimits::default().inline_max_tokens;
    for f in fixtures() {
        let used = tokens::count(Encoding::O200kBase, &f.digest.text);
        assert!(used <= cap, "{}/{}: {used} tokens", f.kind, f.name);
        // A whole output is shown as itself: no headline, no footer.
        assert_eq!(
            f.digest.text.starts_with(&f.digest.headline),
            !f.digest.whole,
            "{}/{}",
            f.kind,
            f.name
        );
        assert!(!f.digest.headline.contains('\n'));
    }
}

/// What the raw output says failed: locations `file:line` and test names.
#[derive(Default)]
struct Expected {
    locations: BTreeSet<(String, u32)>,
    names: BTreeSet<String>,
}

fn re(p: &str) -> Regex {
    Regex::new(p).unwrap()
}

/// Read independently of the digesters, with the simplest pattern per tool.
fn expected(kind: &str, raw: &str) -> Expected {
    let mut e = Expected::default();
    let mut add = |file: &str, line: &str| {
        e.locations
            .insert((file.to_string(), line.parse().unwrap()));
    };
    let lines: Vec<&str> = raw.lines().collect();
    match kind {
        "cargo-build" | "cargo-clippy" => {
            let arrow = re(r"^\s*--> (\S+):(\d+):\d+");
            let short = re(r"^(\S+):(\d+):\d+: error");
            for (i, l) in lines.iter().enumerate() {
                if l.starts_with("error")
                    && !l.contains("could not compile")
                    && !l.contains("aborting")
                {
                    if let Some(c) = lines[i + 1..]
                        .iter()
                        .take(3)
                        .find_map(|n| arrow.captures(n))
                    {
                        add(&c[1], &c[2]);
                    }
                }
                if let Some(c) = short.captures(l) {
                    add(&c[1], &c[2]);
                }
                if l.starts_with('{') {
                    let v: serde_json::Value = serde_json::from_str(l).unwrap();
                    let m = &v["message"];
                    if m["level"] == "error" {
                        for s in m["spans"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .filter(|s| s["is_primary"] == true)
                        {
                            add(
                                s["file_name"].as_str().unwrap(),
                                &s["line_start"].to_string(),
                            );
                        }
                    }
                }
            }
        }
        "cargo-test" => {
            let panic = re(r"panicked at (\S+):(\d+):\d+");
            let name = re(r"^---- (\S+) stdout ----|^\s+FAIL \[.*\] \S+ (\S+)$");
            for l in &lines {
                if let Some(c) = panic.captures(l) {
                    add(&c[1], &c[2]);
                }
                if let Some(c) = name.captures(l) {
                    e.names
                        .insert(c.get(1).or(c.get(2)).unwrap().as_str().to_string());
                }
            }
        }
        "pytest" => {
            let frame = re(r"^(\S+\.py):(\d+): ");
            let failed = re(r"^FAILED (\S+)");
            for l in &lines {
                if let Some(c) = frame.captures(l) {
                    add(&c[1], &c[2]);
                }
                if let Some(c) = failed.captures(l) {
                    e.names.insert(c[1].to_string());
                }
            }
        }
        "tsc" => {
            let plain = re(r"^(\S+)\((\d+),\d+\): error");
            let pretty = re(r"^(\S+):(\d+):\d+ - error");
            for l in &lines {
                if let Some(c) = plain.captures(l).or_else(|| pretty.captures(l)) {
                    add(&c[1], &c[2]);
                }
            }
        }
        "eslint" => {
            let row = re(r"^\s+(\d+):\d+\s+error");
            let mut file = "";
            for l in &lines {
                if l.starts_with('/') {
                    file = l.trim();
                } else if let Some(c) = row.captures(l) {
                    add(file, &c[1]);
                }
            }
        }
        "go-test" => {
            let fail = re(r"--- FAIL: (\S+)");
            let log = re(r"^\s+(\S+\.go):(\d+): ");
            for l in &lines {
                if let Some(c) = fail.captures(l) {
                    e.names.insert(c[1].to_string());
                }
                if let Some(c) = log.captures(l) {
                    add(&c[1], &c[2]);
                }
            }
        }
        "jest" | "vitest" => {
            let header = re(r"^  ● (.+)$|^ ?FAIL  \S+ > (.+)$");
            let at = re(r"\((\S+?):(\d+):\d+\)$|^\s*❯ (\S+?):(\d+):\d+$");
            let mut want_location = false;
            for l in &lines {
                if let Some(c) = header.captures(l) {
                    let name = c.get(1).or(c.get(2)).unwrap().as_str();
                    e.names
                        .insert(name.rsplit(['›', '>']).next().unwrap().trim().to_string());
                    want_location = true;
                } else if let Some(c) = at.captures(l).filter(|_| want_location) {
                    add(
                        c.get(1).or(c.get(3)).unwrap().as_str(),
                        c.get(2).or(c.get(4)).unwrap().as_str(),
                    );
                    want_location = false;
                }
            }
        }
        _ => {}
    }
    e
}

/// Locations a digest names, reading `file:10, :22` as two lines of `file`.
fn named_locations(digest: &str) -> BTreeSet<(String, u32)> {
    let location = re(r"([\w./\-]+\.[A-Za-z]+)?:(\d+)");
    let mut out = BTreeSet::new();
    for line in digest.lines() {
        let mut file = String::new();
        for c in location.captures_iter(line) {
            if let Some(f) = c.get(1) {
                file = f.as_str().to_string();
            }
            if !file.is_empty() {
                out.insert((file.clone(), c[2].parse().unwrap()));
            }
        }
    }
    out
}

#[test]
fn every_error_and_failing_test_is_named() {
    let mut checked = 0;
    for f in fixtures() {
        if f.digest.whole {
            // Shown as itself, in the tool's own layout: nothing left out.
            continue;
        }
        let want = expected(&f.kind, &f.raw);
        let named = named_locations(&f.digest.text);
        for loc in &want.locations {
            assert!(
                named.contains(loc),
                "{}/{}: {}:{} missing from\n{}",
                f.kind,
                f.name,
                loc.0,
                loc.1,
                f.digest.text
            );
            checked += 1;
        }
        for name in &want.names {
            // Grouped names share a prefix: the last segment is what must show.
            let last = name
                .rsplit("::")
                .next()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap();
            assert!(
                f.digest.text.contains(last),
                "{}/{}: test {name} missing from\n{}",
                f.kind,
                f.name,
                f.digest.text
            );
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} errors and tests checked");
}

#[test]
fn print_ratio_table() {
    let rows: Vec<(String, u32, u32)> = fixtures()
        .iter()
        .map(|f| {
            let raw = tokens::count(Encoding::O200kBase, &f.raw);
            let digest = tokens::count(Encoding::O200kBase, &f.digest.text);
            (format!("{}/{}", f.kind, f.name), raw, digest)
        })
        .collect();
    let table = digest::ratio_table(&rows);
    assert!(table.contains("Median ratio"));
    println!("{table}");
}

/// The output as a terminal shows it: colours removed and, of a line
/// redrawn with `\r`, the last drawing (read here without the digesters).
fn terminal_text(raw: &str) -> String {
    let ansi = re(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]");
    let text = ansi.replace_all(raw, "");
    text.split('\n')
        .map(|line| {
            line.split('\r')
                .rev()
                .find(|part| !part.trim().is_empty())
                .unwrap_or("")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a digest of `kind` must show of `text`, each item as a string the
/// digest contains, and the word its "… N more WORD" markers count them by
/// (`None`: none may be left out).
fn must_show(kind: digest::OutputKind, text: &str) -> (Vec<String>, Option<&'static str>) {
    use digest::OutputKind as K;
    let lines: Vec<&str> = text.lines().collect();
    let captures = |pattern: &str, pick: &dyn Fn(&regex::Captures) -> String| -> Vec<String> {
        let r = re(pattern);
        lines
            .iter()
            .filter_map(|l| r.captures(l).map(|c| pick(&c)))
            .collect()
    };
    let last_segment = |name: &str| {
        let name = name.split(" - ").next().unwrap();
        name.rsplit("::").next().unwrap().to_string()
    };
    match kind {
        K::RustBuild | K::CargoTest => {
            let mut items = captures(r"^error(?:\[(E\d+)\])?: (.+)$", &|c| match c.get(1) {
                Some(code) => format!("error {}", code.as_str()),
                None => c[0].chars().take(28).collect(),
            });
            items.extend(captures(r"^(?:\S+):\d+:\d+: error\[(E\d+)\]", &|c| {
                format!("error {}", &c[1])
            }));
            items.extend(captures(r"^test (\S+) \.\.\. FAILED$", &|c| {
                last_segment(&c[1])
            }));
            items.extend(captures(r"^\s+FAIL \[.*\] \S+ (\S+)$", &|c| last_segment(&c[1])));
            (items, None)
        }
        K::Pytest => (
            captures(r"^(?:FAILED|ERROR) (\S+)", &|c| last_segment(&c[1])),
            None,
        ),
        K::GoTest => {
            let mut items = captures(r"--- FAIL: (\S+)", &|c| c[1].to_string());
            items.extend(captures(r"^FAIL\s+(\S+)\s+[\d.]+s$", &|c| c[1].to_string()));
            (items, None)
        }
        K::JsTest => (
            captures(r"^\s+● (.+)$", &|c| {
                c[1].rsplit(" › ").next().unwrap().trim().to_string()
            }),
            None,
        ),
        K::Tsc => (captures(r"error (TS\d+):", &|c| c[1].to_string()), None),
        K::Eslint => (
            captures(r"^\s+\d+:\d+\s+error\s+.*\s([\w@/-]+)$", &|c| c[1].to_string()),
            None,
        ),
        K::Listing => (listed_directories(&lines), Some("directories")),
        K::Generic => (
            captures(r"^error\b|^ERROR\b|^fatal\b|\w+Error:|^\*\*\* ", &|c| {
                let line = lines.iter().find(|l| l.contains(&c[0])).unwrap();
                line.trim().chars().take(30).collect()
            }),
            Some("error lines"),
        ),
        K::FileRead => (
            captures(
                r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+|const\s+|unsafe\s+)*fn\s+(\w+)|^\s*(?:async\s+)?def\s+(\w+)|^func\s+(?:\([^)]*\)\s*)?(\w+)|^\s+(?:static\s+)?(?:async\s+)?(?:get\s+|set\s+)?([A-Za-z_$][\w$]*)\s*\([^)]*\)\s*\{\s*$",
                &|c| {
                    (1..=4)
                        .find_map(|i| c.get(i))
                        .unwrap()
                        .as_str()
                        .to_string()
                },
            )
            .into_iter()
            .filter(|name| !["if", "for", "while", "switch", "catch", "function"].contains(&name.as_str()))
            .collect(),
            Some(""),
        ),
        _ => (Vec::new(), None),
    }
}

/// Directories of a listing: `d` rows of `ls -l`, `tree` lines with
/// children, and every parent below the common root of listed paths; each
/// as `name/`, as the digest writes it.
fn listed_directories(lines: &[&str]) -> Vec<String> {
    let mut dirs = BTreeSet::new();
    let long = re(r"^d[rwxsStT-]{9}\S*\s+.*\d\d:?\d\d (.+)$");
    let tree = re(r"^([│ ]*)[├└]── (.+)$");
    let paths: Vec<&str> = lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| l.contains('/') && !l.contains(' '))
        .collect();
    for (i, l) in lines.iter().enumerate() {
        if let Some(c) = long.captures(l).filter(|c| !matches!(&c[1], "." | "..")) {
            dirs.insert(c[1].to_string());
        }
        if let (Some(c), Some(next)) = (tree.captures(l), lines.get(i + 1)) {
            let depth = c[1].chars().count();
            if tree
                .captures(next)
                .is_some_and(|n| n[1].chars().count() > depth)
            {
                dirs.insert(c[2].to_string());
            }
        }
    }
    if !paths.is_empty() {
        let first: Vec<&str> = paths[0].split('/').collect();
        let common = (0..first.len())
            .take_while(|&i| paths.iter().all(|p| p.split('/').nth(i) == Some(first[i])))
            .count()
            .min(first.len() - 1);
        for p in &paths {
            let parts: Vec<&str> = p.split('/').collect();
            for depth in common.max(1)..parts.len() {
                dirs.insert(parts[depth - 1].to_string());
            }
        }
    }
    dirs.into_iter().map(|d| format!("{d}/")).collect()
}

/// The numbers of the digest's `… N more WORD` markers, summed.
fn counted(digest: &str, word: &str) -> usize {
    let marker = re(&format!(r"… (\d+) more {}", regex::escape(word)));
    marker
        .captures_iter(digest)
        .map(|c| c[1].parse::<usize>().unwrap())
        .sum()
}

/// DIGESTS.md's rule: every error, failure, listed directory and (file
/// reads) definition of an output is in its digest, or the digest counts
/// those it leaves out; the blob id in its footer is where to grep them.
#[test]
fn every_error_failure_and_directory_is_shown_or_counted() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for f in fixtures() {
        if f.digest.whole || f.digest.headline.contains("unchanged since") {
            continue;
        }
        let (items, counted_as) = must_show(f.digest.kind, &terminal_text(&f.raw));
        let missing: BTreeSet<&String> = items
            .iter()
            .filter(|item| !f.digest.text.contains(item.as_str()))
            .collect();
        checked += items.len();
        let counted = counted_as.map_or(0, |word| counted(&f.digest.text, word));
        if missing.len() > counted || !f.digest.text.contains("[b3:") {
            failures.push(format!(
                "{}/{}: {} left out, {counted} counted: {missing:?}\n{}",
                f.kind,
                f.name,
                missing.len(),
                f.digest.text
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(checked > 300, "only {checked} items checked");
}

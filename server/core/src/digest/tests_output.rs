//! Test runners of Rust, Python and Go: cargo test (libtest), cargo nextest,
//! pytest and go test, read into `Failure`s and `Counts`.

use super::diagnostics::plural;
use super::draft::Draft;
use super::test_run::{self, Counts, Failure};
use regex::Regex;
use std::sync::LazyLock;

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap()
}

static PANIC: LazyLock<Regex> =
    LazyLock::new(|| re(r"^\s*thread '([^']+)'(?: \(\d+\))? panicked at (\S+?:\d+:\d+):?\s*$"));
static STDOUT_BLOCK: LazyLock<Regex> = LazyLock::new(|| re(r"^---- (.+) stdout ----$"));
static TEST_FAILED: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*test (.+) \.\.\. FAILED$"));
static NEXTEST_FAIL: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^\s*(?:FAIL|SIGSEGV|SIGABRT|TIMEOUT|LEAK-FAIL) \[\s*[\d.]+s\]\s+(?:\(\s*\d+/\s*\d+\)\s+)?\S+\s+(\S+)\s*$",
    )
});
static LIBTEST_RESULT: LazyLock<Regex> =
    LazyLock::new(|| re(r"^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored"));
static NEXTEST_SUMMARY: LazyLock<Regex> =
    LazyLock::new(|| re(r"^\s*Summary \[.*\] (\d+) tests? run: (\d+) passed"));
static NEXTEST_FAILED: LazyLock<Regex> = LazyLock::new(|| re(r"(\d+) failed"));
static NEXTEST_SKIPPED: LazyLock<Regex> = LazyLock::new(|| re(r"(\d+) skipped"));

/// cargo test and cargo nextest; a run that did not compile is a build.
pub(crate) fn cargo(label: &str, text: &str, draft: &mut Draft) {
    let has_results = text
        .lines()
        .any(|l| LIBTEST_RESULT.is_match(l) || NEXTEST_SUMMARY.is_match(l));
    if !has_results && text.contains("error[E") {
        return super::cargo::digest(label, text, draft);
    }
    let (failures, counts) = parse_cargo(text);
    draft.headline(format!("{label}: {}", counts.outcome(&failures)));
    test_run::render(&failures, draft);
    super::cargo::closing_errors(text, draft);
}

fn parse_cargo(text: &str) -> (Vec<Failure>, Counts) {
    let mut failures: Vec<Failure> = Vec::new();
    let mut libtest = Counts::default();
    let mut nextest: Option<Counts> = None;
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if let Some(c) = STDOUT_BLOCK
            .captures(line)
            .or_else(|| TEST_FAILED.captures(line))
        {
            test_run::entry(&mut failures, &c[1]);
        } else if let Some(c) = NEXTEST_FAIL.captures(line) {
            test_run::entry(&mut failures, &c[1]);
        } else if let Some(c) = PANIC.captures(line) {
            let message = lines[i + 1..]
                .iter()
                .take_while(|l| !l.trim().is_empty() && !l.starts_with("note:"));
            let message: Vec<&str> = message.map(|l| l.trim()).take(3).collect();
            let failure = test_run::entry(&mut failures, &c[1]);
            failure.location.get_or_insert_with(|| c[2].to_string());
            failure.message.get_or_insert_with(|| message.join(" "));
        } else if let Some(c) = LIBTEST_RESULT.captures(line) {
            libtest.passed += c[1].parse::<usize>().unwrap_or(0);
            libtest.failed += c[2].parse::<usize>().unwrap_or(0);
            libtest.skipped += c[3].parse::<usize>().unwrap_or(0);
        } else if let Some(c) = NEXTEST_SUMMARY.captures(line) {
            let number = |r: &Regex| {
                r.captures(line)
                    .and_then(|c| c[1].parse().ok())
                    .unwrap_or(0)
            };
            nextest = Some(Counts {
                passed: c[2].parse().unwrap_or(0),
                failed: number(&NEXTEST_FAILED),
                skipped: number(&NEXTEST_SKIPPED),
            });
        }
    }
    // libtest's `failures:` list repeats names under a `failures:` heading.
    let mut in_list = false;
    for line in &lines {
        if *line == "failures:" {
            in_list = true;
        } else if in_list && line.starts_with("    ") && !line.trim().is_empty() {
            test_run::entry(&mut failures, line.trim());
        } else if !line.trim().is_empty() {
            in_list = false;
        }
    }
    (failures, nextest.unwrap_or(libtest))
}

static PYTEST_FAILED: LazyLock<Regex> =
    LazyLock::new(|| re(r"^(?:FAILED|ERROR) (\S+?)(?: - (.*))?$"));
static PYTEST_VERBOSE: LazyLock<Regex> =
    LazyLock::new(|| re(r"^(\S+::\S+) (?:FAILED|ERROR)(?-u:\b)"));
static PYTEST_SECTION: LazyLock<Regex> =
    LazyLock::new(|| re(r"^_{3,} (?:ERROR (?:at \w+ of )?)?(.+?) _{3,}$"));
/// `==== FAILURES ====`, `==== warnings summary ====`: the blocks of a
/// report. Only the FAILURES and ERRORS blocks hold failing tests' sections;
/// plugins draw sections of their own elsewhere (pytest-cov's
/// `____ coverage: platform linux … ____`).
static PYTEST_BLOCK: LazyLock<Regex> = LazyLock::new(|| re(r"^={3,} (.+?) ={3,}$"));
/// `path:line: in function` for a frame on the way, `path:line: Name` for
/// the one that raised (pytest's own words for where the error came from).
static PYTEST_FRAME: LazyLock<Regex> =
    LazyLock::new(|| re(r"^(\S+\.py):(\d+):(?: (?:in .*|([A-Za-z_][\w.]*))?)?$"));
static PYTEST_SUMMARY: LazyLock<Regex> =
    LazyLock::new(|| re(r"^=*\s*(\d+ (?:passed|failed|error).*) in [\d.]+s"));

pub(crate) fn pytest(label: &str, text: &str, draft: &mut Draft) {
    let mut failures: Vec<Failure> = Vec::new();
    let mut counts = Counts::default();
    // Sections are keyed by the test's short name; the node id comes later.
    let mut sections: Vec<(String, Vec<String>, Option<String>)> = Vec::new();
    let mut in_failures = false;
    for line in text.lines() {
        if let Some(c) = PYTEST_BLOCK.captures(line) {
            in_failures = matches!(&c[1], "FAILURES" | "ERRORS");
        }
        if let Some(c) = PYTEST_SECTION.captures(line).filter(|_| in_failures) {
            sections.push((c[1].to_string(), Vec::new(), None));
        } else if let (Some(c), Some(section)) = (PYTEST_FRAME.captures(line), sections.last_mut())
        {
            section.1.push(match c.get(3) {
                Some(raised) => format!("{}:{}: {}", &c[1], &c[2], raised.as_str()),
                None => format!("{}:{}", &c[1], &c[2]),
            });
        } else if let (Some(e), Some(section)) = (line.strip_prefix("E   "), sections.last_mut()) {
            section.2.get_or_insert_with(|| e.trim().to_string());
        } else if let Some(c) = PYTEST_FAILED
            .captures(line)
            .or_else(|| PYTEST_VERBOSE.captures(line))
        {
            test_run::entry(&mut failures, &c[1]);
        } else if let Some(c) = PYTEST_SUMMARY.captures(line) {
            counts = Counts::from_summary(&c[1]);
        }
    }
    for (short, frames, message) in sections {
        let node = failures
            .iter()
            .position(|f| f.name.ends_with(&format!("::{short}")) || f.name == short);
        let failure = match node {
            Some(i) => &mut failures[i],
            None => test_run::entry(&mut failures, &short),
        };
        failure.message = message.and_then(|m| without_raised_name(frames.last(), m));
        failure.location = Some(frames.join(" → ")).filter(|l| !l.is_empty());
    }
    draft.headline(format!("{label}: {}", counts.outcome(&failures)));
    test_run::render(&failures, draft);
}

/// The `E` line's message less the exception's name when the raising frame
/// already says it (`ledger/money.py:8: InvalidOperation` and
/// `decimal.InvalidOperation: [...]` give `...: InvalidOperation: [...]`):
/// the frame is quoted as pytest wrote it, the name said once.
fn without_raised_name(frame: Option<&String>, message: String) -> Option<String> {
    let Some(name) = frame.and_then(|f| f.rsplit_once(": ")).map(|(_, n)| n) else {
        return Some(message);
    };
    let Some((head, rest)) = message.split_once(':') else {
        return (message != name && !message.ends_with(&format!(".{name}"))).then_some(message);
    };
    if head == name || head.ends_with(&format!(".{name}")) {
        Some(rest.trim().to_string()).filter(|r| !r.is_empty())
    } else {
        Some(message)
    }
}

static GO_FAIL: LazyLock<Regex> = LazyLock::new(|| re(r"^(\s*)--- FAIL: (\S+)"));
static GO_PASS: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*--- PASS: "));
static GO_SKIP: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*--- SKIP: "));
static GO_LOG: LazyLock<Regex> = LazyLock::new(|| re(r"^\s+(\S+\.go:\d+): (.*)$"));
static GO_PACKAGE: LazyLock<Regex> =
    LazyLock::new(|| re(r"^(ok|FAIL)\s+(\S+)\s+(?:[\d.]+s|\(cached\)|\[build failed\])"));

static GO_RUN: LazyLock<Regex> = LazyLock::new(|| re(r"^=== (?:RUN|CONT|PAUSE)\s+(\S+)"));

/// go test; with `-v` a test's log lines come before its `--- FAIL`, without
/// it after, so lines are kept per test that was running and joined at the end.
pub(crate) fn go(label: &str, text: &str, draft: &mut Draft) {
    let mut failures: Vec<Failure> = Vec::new();
    let mut logs: Vec<(String, String, String)> = Vec::new();
    let mut counts = Counts::default();
    let mut current: Option<&str> = None;
    let mut packages_ok = 0;
    let mut packages_failed: Vec<&str> = Vec::new();
    for line in text.lines() {
        if let Some(c) = GO_FAIL.captures(line) {
            test_run::entry(&mut failures, &c[2]);
            current = c.get(2).map(|m| m.as_str());
        } else if let Some(c) = GO_RUN.captures(line) {
            current = c.get(1).map(|m| m.as_str());
        } else if GO_PASS.is_match(line) {
            counts.passed += 1;
        } else if GO_SKIP.is_match(line) {
            counts.skipped += 1;
        } else if let (Some(c), Some(test)) = (GO_LOG.captures(line), current) {
            logs.push((test.to_string(), c[1].to_string(), c[2].to_string()));
        } else if let Some(c) = GO_PACKAGE.captures(line) {
            if &c[1] == "ok" {
                packages_ok += 1
            } else {
                packages_failed.push(c.get(2).map_or("", |m| m.as_str()));
            }
        }
    }
    for f in &mut failures {
        if let Some((_, location, message)) = logs.iter().find(|(test, _, _)| *test == f.name) {
            f.location = Some(location.clone());
            f.message = Some(message.clone());
        }
    }
    let outcome = counts.outcome(&failures);
    let packages = match packages_failed.len() {
        0 => format!("{} ok", plural(packages_ok, "package")),
        failed => format!("{} failed, {packages_ok} ok", plural(failed, "package")),
    };
    draft.headline(format!("{label}: {outcome} ({packages})"));
    test_run::render(&failures, draft);
    if !packages_failed.is_empty() {
        draft.require(format!("FAIL packages: {}", packages_failed.join(", ")));
    }
}

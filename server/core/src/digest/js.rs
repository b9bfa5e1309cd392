//! TypeScript and JavaScript tools: tsc, eslint (stylish), jest and vitest.

use super::diagnostics::{self, Diagnostic, Location, Severity};
use super::draft::Draft;
use super::test_run::{self, Counts, Failure};
use regex::Regex;
use std::sync::LazyLock;

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).unwrap()
}

/// `file(line,col): error TS2322: msg` (plain) or `file:line:col - error TS2322: msg` (pretty).
static TSC: LazyLock<Regex> = LazyLock::new(|| {
    re(r"^(\S.*?)(?:\((\d+),(\d+)\):|:(\d+):(\d+) -) (error|warning) (TS\d+): (.*)$")
});

pub(crate) fn tsc(label: &str, text: &str, draft: &mut Draft) {
    let found: Vec<Diagnostic> = text
        .lines()
        .filter_map(|line| TSC.captures(line))
        .map(|c| {
            let line = c.get(2).or(c.get(4)).unwrap().as_str();
            let col = c.get(3).or(c.get(5)).unwrap().as_str();
            Diagnostic {
                severity: if &c[6] == "error" {
                    Severity::Error
                } else {
                    Severity::Warning
                },
                code: Some(c[7].to_string()),
                message: c[8].to_string(),
                location: Some(Location {
                    file: c[1].to_string(),
                    line: line.parse().unwrap_or(0),
                    col: col.parse().ok(),
                }),
            }
        })
        .collect();
    diagnostics::headline_and_render(label, &found, draft);
}

static ESLINT_FINDING: LazyLock<Regex> =
    LazyLock::new(|| re(r"^\s+(\d+):(\d+)\s+(error|warning)\s+(.+?)(?:\s{2,}(\S+))?\s*$"));

pub(crate) fn eslint(label: &str, text: &str, draft: &mut Draft) {
    let mut file = String::new();
    let mut found = Vec::new();
    for line in text.lines() {
        if let Some(c) = ESLINT_FINDING.captures(line) {
            found.push(Diagnostic {
                severity: if &c[3] == "error" {
                    Severity::Error
                } else {
                    Severity::Warning
                },
                code: c.get(5).map(|m| m.as_str().to_string()),
                message: c[4].to_string(),
                location: Some(Location {
                    file: file.clone(),
                    line: c[1].parse().unwrap_or(0),
                    col: c[2].parse().ok(),
                }),
            });
        } else if !line.starts_with(' ') && !line.trim().is_empty() && !line.starts_with('✖') {
            file = line.trim().to_string();
        }
    }
    diagnostics::headline_and_render(label, &found, draft);
}

static JEST_HEADER: LazyLock<Regex> = LazyLock::new(|| re(r"^  ● (.+)$"));
static VITEST_HEADER: LazyLock<Regex> = LazyLock::new(|| re(r"^ ?FAIL  (\S+ > .+)$"));
static JEST_AT: LazyLock<Regex> = LazyLock::new(|| re(r"\(([^()\s]+:\d+:\d+)\)\s*$"));
static VITEST_AT: LazyLock<Regex> = LazyLock::new(|| re(r"^\s*❯ (\S+:\d+:\d+)\s*$"));
static JEST_TESTS: LazyLock<Regex> = LazyLock::new(|| re(r"^Tests:\s+(.*)$"));
static VITEST_TESTS: LazyLock<Regex> = LazyLock::new(|| re(r"^\s+Tests\s+(.*)$"));

/// jest and vitest: `●` or `FAIL  file > suite > test` sections.
pub(crate) fn tests(label: &str, text: &str, draft: &mut Draft) {
    let mut failures: Vec<Failure> = Vec::new();
    let mut counts = Counts::default();
    for line in text.lines() {
        if let Some(c) = JEST_HEADER
            .captures(line)
            .or_else(|| VITEST_HEADER.captures(line))
        {
            test_run::entry(&mut failures, c[1].trim());
        } else if let Some(c) = JEST_TESTS
            .captures(line)
            .or_else(|| VITEST_TESTS.captures(line))
        {
            counts = Counts::from_summary(&c[1]);
        } else if let Some(f) = failures.last_mut() {
            let at = JEST_AT.captures(line).or_else(|| VITEST_AT.captures(line));
            match at {
                Some(c) if f.location.is_none() && !c[1].contains("node_modules") => {
                    f.location = Some(c[1].to_string())
                }
                Some(_) => {}
                None if f.message.is_none() && !line.trim().is_empty() => {
                    f.message = Some(line.trim().to_string())
                }
                None => {}
            }
        }
    }
    draft.headline(format!("{label}: {}", counts.outcome(&failures)));
    test_run::render(&failures, draft);
}

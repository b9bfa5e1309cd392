//! cargo build / check / clippy and rustc: human, `--message-format=short`
//! and `--message-format=json` output, read into `Diagnostic`s.

use super::diagnostics::{self, Diagnostic, Location, Severity};
use super::draft::Draft;
use regex::Regex;
use std::sync::LazyLock;

static HEADER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(error|warning)(?:\[(\w+)\])?: (.+)$").unwrap());
static ARROW: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*--> (.+?):(\d+):(\d+)\s*$").unwrap());
static SHORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(.+?):(\d+):(\d+): (error|warning)(?:\[(\w+)\])?: (.+)$").unwrap()
});

pub(crate) fn digest(label: &str, text: &str, draft: &mut Draft) {
    let diagnostics = parse(text);
    let finished = text
        .lines()
        .find(|l| l.trim_start().starts_with("Finished "));
    let failed = diagnostics.iter().any(|d| d.severity == Severity::Error);
    let outcome = match (failed, finished) {
        (false, Some(_)) if diagnostics.is_empty() => "ok".to_string(),
        (false, Some(_)) => format!("ok, {}", diagnostics::plural(diagnostics.len(), "warning")),
        _ => diagnostics::counts(&diagnostics),
    };
    draft.headline(format!("{label}: {outcome}"));
    diagnostics::render(&diagnostics, draft);
    closing_errors(text, draft);
    if let Some(line) = finished {
        draft.push(line.trim());
    }
}

/// cargo's and rustc's closing errors: which crate did not compile, why
/// rustc stopped, which test target failed and how to rerun it. Not
/// findings (`is_summary`), but the outcome.
static CLOSING_ERROR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^error: (?:could not compile |aborting due to |test (?:run )?failed|\d+ targets? failed)",
    )
    .unwrap()
});

/// Shows cargo's closing errors (`error: could not compile `fetchy``), once
/// each: only they say which crate or test target failed.
pub(crate) fn closing_errors(text: &str, draft: &mut Draft) {
    let mut closing: Vec<&str> = Vec::new();
    for line in text.lines().map(str::trim) {
        if CLOSING_ERROR.is_match(line) && !closing.contains(&line) {
            closing.push(line);
        }
    }
    for line in closing {
        draft.require(line);
    }
}

/// Every finding of the output, whichever of the three formats it is in.
pub(crate) fn parse(text: &str) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.starts_with('{') {
            out.extend(json_message(line));
        } else if let Some(c) = SHORT.captures(line) {
            out.push(Diagnostic {
                severity: severity(&c[4]),
                code: c.get(5).map(|m| m.as_str().to_string()),
                message: c[6].to_string(),
                location: Some(location(&c[1], &c[2], &c[3])),
            });
        } else if let Some(c) = HEADER.captures(line) {
            if is_summary(&c[3]) {
                continue;
            }
            // The primary location is the first `-->` before the next header.
            let mut location_found = None;
            while let Some(next) = lines.peek() {
                if HEADER.is_match(next) || next.starts_with('{') {
                    break;
                }
                let next = lines.next().unwrap();
                if let (None, Some(a)) = (&location_found, ARROW.captures(next)) {
                    location_found = Some(location(&a[1], &a[2], &a[3]));
                }
            }
            out.push(Diagnostic {
                severity: severity(&c[1]),
                code: c.get(2).map(|m| m.as_str().to_string()),
                message: c[3].to_string(),
                location: location_found,
            });
        }
    }
    out
}

/// Cargo's and rustc's closing lines, which repeat what the findings say.
fn is_summary(message: &str) -> bool {
    message.starts_with("could not compile")
        || message.starts_with("aborting due to")
        || message.starts_with("build failed")
        || (message.starts_with('`') && message.contains(" generated "))
        || message.contains("warnings emitted")
        || message.contains("warning emitted")
}

fn json_message(line: &str) -> Option<Diagnostic> {
    let value: serde_json::Value = serde_json::from_str(line).ok()?;
    let message = if value.get("reason")?.as_str()? == "compiler-message" {
        value.get("message")?
    } else {
        return None;
    };
    let severity = match message.get("level")?.as_str()? {
        "error" | "error: internal compiler error" => Severity::Error,
        "warning" => Severity::Warning,
        _ => return None,
    };
    let text = message.get("message")?.as_str()?;
    if is_summary(text) {
        return None;
    }
    let span = message
        .get("spans")?
        .as_array()?
        .iter()
        .find(|s| s.get("is_primary").and_then(|p| p.as_bool()) == Some(true));
    let location = span.and_then(|s| {
        Some(Location {
            file: s.get("file_name")?.as_str()?.to_string(),
            line: s.get("line_start")?.as_u64()? as u32,
            col: s
                .get("column_start")
                .and_then(|c| c.as_u64())
                .map(|c| c as u32),
        })
    });
    let code = message
        .get("code")
        .and_then(|c| c.get("code"))
        .and_then(|c| c.as_str());
    Some(Diagnostic {
        severity,
        code: code.map(str::to_string),
        message: text.to_string(),
        location,
    })
}

fn severity(word: &str) -> Severity {
    if word == "error" {
        Severity::Error
    } else {
        Severity::Warning
    }
}

fn location(file: &str, line: &str, col: &str) -> Location {
    Location {
        file: file.to_string(),
        line: line.parse().unwrap_or(0),
        col: col.parse().ok(),
    }
}

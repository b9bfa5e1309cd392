//! Compiler and linter findings (rustc, tsc, eslint) and how every distinct
//! error is shown once with all of its locations.
//!
//! Findings with the same severity, code and message form one group. Groups
//! are written in the longest form that fits: full `file:line:col` locations,
//! then `file:line, :line` (a file named once), then shorter messages. Errors
//! are required lines; warnings fill the room that is left.

use super::draft::Draft;
use crate::tokens;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Severity {
    Error,
    Warning,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Location {
    pub file: String,
    pub line: u32,
    pub col: Option<u32>,
}

#[derive(Clone, Debug)]
pub(crate) struct Diagnostic {
    pub severity: Severity,
    pub code: Option<String>,
    pub message: String,
    pub location: Option<Location>,
}

struct Group<'a> {
    severity: Severity,
    code: Option<&'a str>,
    message: &'a str,
    locations: Vec<&'a Location>,
}

/// The counts for a headline: `41 errors, 10 warnings`.
pub(crate) fn counts(diagnostics: &[Diagnostic]) -> String {
    let errors = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    let warnings = diagnostics.len() - errors;
    format!(
        "{}, {}",
        plural(errors, "error"),
        plural(warnings, "warning")
    )
}

pub(crate) fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// A checker's digest: `label: ok` or `label: N errors, M warnings`, then
/// the groups (`render`).
pub(crate) fn headline_and_render(label: &str, diagnostics: &[Diagnostic], draft: &mut Draft) {
    let outcome = if diagnostics.is_empty() {
        "ok".to_string()
    } else {
        counts(diagnostics)
    };
    draft.headline(format!("{label}: {outcome}"));
    render(diagnostics, draft);
}

/// Writes every error group as a required line and warnings while room lasts.
pub(crate) fn render(diagnostics: &[Diagnostic], draft: &mut Draft) {
    let groups = group(diagnostics);
    let (errors, warnings): (Vec<&Group>, Vec<&Group>) =
        groups.iter().partition(|g| g.severity == Severity::Error);
    for line in fitting_lines(&errors, draft.room(), draft) {
        draft.require(line);
    }
    let room = draft.room();
    let lines = fitting_lines(&warnings, room, draft);
    draft.push_while_room(lines, |n| format!("… {n} more warning groups"));
}

fn group(diagnostics: &[Diagnostic]) -> Vec<Group<'_>> {
    let mut groups: Vec<Group> = Vec::new();
    for d in diagnostics {
        let found = groups.iter_mut().find(|g| {
            g.severity == d.severity && g.code == d.code.as_deref() && g.message == d.message
        });
        let g = match found {
            Some(g) => g,
            None => {
                groups.push(Group {
                    severity: d.severity,
                    code: d.code.as_deref(),
                    message: &d.message,
                    locations: Vec::new(),
                });
                groups.last_mut().unwrap()
            }
        };
        if let Some(loc) = &d.location {
            if !g.locations.contains(&loc) {
                g.locations.push(loc);
            }
        }
    }
    groups
}

/// The groups' lines in the longest form whose total fits `room`, or the
/// shortest form when none does.
fn fitting_lines(groups: &[&Group], room: u32, draft: &Draft) -> Vec<String> {
    const FORMS: [(bool, u32); 4] = [(true, 40), (false, 40), (false, 16), (false, 6)];
    let fits = |lines: &[String]| lines.iter().map(|l| draft.cost(l)).sum::<u32>() <= room;
    for (full, message_tokens) in FORMS {
        let lines: Vec<String> = groups
            .iter()
            .map(|g| line(g, full, message_tokens, draft))
            .collect();
        if fits(&lines) {
            return lines;
        }
    }
    // The shortest form: one line per code, every location kept.
    let by_code = merge_by_code(groups);
    let by_code: Vec<&Group> = by_code.iter().collect();
    by_code.iter().map(|g| line(g, false, 0, draft)).collect()
}

/// Groups of the same severity and code as one group without its message
/// (findings without a code keep theirs).
fn merge_by_code<'a>(groups: &[&Group<'a>]) -> Vec<Group<'a>> {
    let mut merged: Vec<Group> = Vec::new();
    for g in groups {
        let same =
            |m: &&mut Group| m.severity == g.severity && m.code.is_some() && m.code == g.code;
        match merged.iter_mut().find(same) {
            Some(m) => m.locations.extend(g.locations.iter().copied()),
            None => merged.push(Group {
                severity: g.severity,
                code: g.code,
                message: if g.code.is_some() { "" } else { g.message },
                locations: g.locations.clone(),
            }),
        }
    }
    merged
}

fn line(g: &Group, full: bool, message_tokens: u32, draft: &Draft) -> String {
    let severity = match g.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    let message = tokens::truncate(draft.encoding(), g.message, message_tokens);
    let ellipsis = if message.len() < g.message.len() && message_tokens > 0 {
        "…"
    } else {
        ""
    };
    let code = g.code.map(|c| format!(" {c}")).unwrap_or_default();
    let count = if g.locations.len() > 1 {
        format!(" (×{})", g.locations.len())
    } else {
        String::new()
    };
    let locations = if full {
        full_locations(&g.locations)
    } else {
        compact_locations(&g.locations)
    };
    let at = if locations.is_empty() {
        String::new()
    } else {
        format!(": {locations}")
    };
    let message = if message.is_empty() {
        String::new()
    } else {
        format!(" {message}{ellipsis}")
    };
    format!("{severity}{code}{message}{count}{at}")
}

fn full_locations(locations: &[&Location]) -> String {
    let all: Vec<String> = locations
        .iter()
        .map(|l| match l.col {
            Some(col) => format!("{}:{}:{col}", l.file, l.line),
            None => format!("{}:{}", l.file, l.line),
        })
        .collect();
    all.join(", ")
}

/// `src/a.rs:10, :22, src/b.rs:5`: each file named once, in order of first use.
pub(crate) fn compact_locations(locations: &[&Location]) -> String {
    let mut files: Vec<(&str, Vec<u32>)> = Vec::new();
    for l in locations {
        match files.iter_mut().find(|(f, _)| *f == l.file) {
            Some((_, lines)) => lines.push(l.line),
            None => files.push((&l.file, vec![l.line])),
        }
    }
    let parts: Vec<String> = files
        .iter()
        .map(|(file, lines)| {
            let rest: Vec<String> = lines.iter().map(|n| format!(":{n}")).collect();
            format!("{file}{}", rest.join(", "))
        })
        .collect();
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(file: &str, line: u32) -> Location {
        Location {
            file: file.into(),
            line,
            col: Some(1),
        }
    }

    #[test]
    fn compact_locations_name_each_file_once() {
        let locs = [loc("src/a.rs", 10), loc("src/b.rs", 5), loc("src/a.rs", 22)];
        let refs: Vec<&Location> = locs.iter().collect();
        assert_eq!(compact_locations(&refs), "src/a.rs:10, :22, src/b.rs:5");
    }
}

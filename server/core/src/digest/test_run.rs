//! Test runs (cargo test, nextest, pytest, go test, jest, vitest) and how
//! every failing test is named with where it failed.
//!
//! Failures with the same location and message form one group, whose names
//! share their common prefix: `tests::search::{default, dfa_default}`. Names
//! and locations are required; messages shorten to fit, details fill the
//! room that is left.

use super::draft::Draft;
use crate::tokens;

#[derive(Clone, Debug, Default)]
pub(crate) struct Failure {
    pub name: String,
    /// `file:line[:col]`, or a chain of them from test to cause.
    pub location: Option<String>,
    pub message: Option<String>,
}

/// Pass and fail counts as the runner printed them.
#[derive(Clone, Debug, Default)]
pub(crate) struct Counts {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
}

impl Counts {
    /// Counts from a summary such as `3 failed, 3 passed, 6 total` (jest,
    /// pytest) or `4 failed | 2 passed (6)` (vitest); errors count as failed.
    pub(crate) fn from_summary(summary: &str) -> Counts {
        let number = |word: &str| {
            let pattern = regex::Regex::new(&format!(r"(\d+) {word}")).unwrap();
            pattern
                .captures(summary)
                .and_then(|c| c[1].parse().ok())
                .unwrap_or(0)
        };
        Counts {
            passed: number("passed"),
            failed: number("failed") + number("error"),
            skipped: number("skipped"),
        }
    }

    /// `19 failed, 144 passed`, or `ok, 163 passed` when nothing failed.
    pub(crate) fn outcome(&self, failures: &[Failure]) -> String {
        let failed = self.failed.max(failures.len());
        let mut parts = Vec::new();
        if failed == 0 {
            parts.push("ok".to_string());
        } else {
            parts.push(format!("{failed} failed"));
        }
        parts.push(format!("{} passed", self.passed));
        if self.skipped > 0 {
            parts.push(format!("{} skipped", self.skipped));
        }
        parts.join(", ")
    }
}

/// Adds `name` unless a failure of that name is already listed; returns it.
pub(crate) fn entry<'a>(failures: &'a mut Vec<Failure>, name: &str) -> &'a mut Failure {
    match failures.iter().position(|f| f.name == name) {
        Some(i) => &mut failures[i],
        None => {
            failures.push(Failure {
                name: name.to_string(),
                ..Failure::default()
            });
            failures.last_mut().unwrap()
        }
    }
}

struct Group<'a> {
    location: Option<&'a str>,
    message: Option<&'a str>,
    names: Vec<&'a str>,
}

pub(crate) fn render(failures: &[Failure], draft: &mut Draft) {
    let mut groups: Vec<Group> = Vec::new();
    for f in failures {
        let (location, message) = (f.location.as_deref(), f.message.as_deref());
        match groups
            .iter_mut()
            .find(|g| g.location == location && g.message == message)
        {
            Some(g) => g.names.push(&f.name),
            None => groups.push(Group {
                location,
                message,
                names: vec![&f.name],
            }),
        }
    }
    let mut lines = Vec::new();
    for message_tokens in [40, 14, 0] {
        lines = groups
            .iter()
            .map(|g| line(g, message_tokens, draft))
            .collect::<Vec<_>>();
        if lines.iter().map(|l| draft.cost(l)).sum::<u32>() <= draft.room() {
            break;
        }
    }
    for line in lines {
        draft.require(line);
    }
}

fn line(g: &Group, message_tokens: u32, draft: &Draft) -> String {
    let mut out = format!("FAIL {}", names(&g.names));
    if let Some(location) = g.location {
        out.push_str(&format!(" at {location}"));
    }
    if let Some(message) = g.message.filter(|_| message_tokens > 0) {
        let cut = tokens::truncate(draft.encoding(), message, message_tokens);
        let ellipsis = if cut.len() < message.len() { "…" } else { "" };
        out.push_str(&format!(": {cut}{ellipsis}"));
    }
    out
}

/// Names sharing a prefix up to a separator as `prefix{a, b}`.
fn names(names: &[&str]) -> String {
    if names.len() == 1 {
        return names[0].to_string();
    }
    let first = names[0];
    let mut prefix = names.iter().fold(first.len(), |n, name| {
        first
            .bytes()
            .zip(name.bytes())
            .take(n)
            .take_while(|(a, b)| a == b)
            .count()
    });
    // Cut back to the last separator so that names stay whole words.
    while prefix > 0 && !first[..prefix].ends_with(['/', ':', '.', '>', ' ']) {
        prefix -= 1;
    }
    if !first.is_char_boundary(prefix) {
        prefix = 0;
    }
    let rests: Vec<&str> = names.iter().map(|n| &n[prefix..]).collect();
    format!("{}{{{}}}", &first[..prefix], rests.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_share_their_common_path() {
        let cases: [(&[&str], &str); 3] = [
            (&["a::b::c"], "a::b::c"),
            (&["t::s::default", "t::s::dfa"], "t::s::{default, dfa}"),
            (&["x", "y"], "{x, y}"),
        ];
        for (input, want) in cases {
            assert_eq!(names(input), want);
        }
    }
}

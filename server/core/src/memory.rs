//! Project memory's standing section: what one line says of an exchange of
//! an earlier session. The store reads the exchanges, newest first, and
//! keeps the lines that fit (`view::ProjectMemory`).

use std::sync::LazyLock;

use regex::Regex;

use crate::text;

/// A person's message up to this many characters is a note of its own; a
/// longer one is left to its exchange's header.
const STATED_CHARS: usize = 240;
/// A failure's location line is cut to this many characters.
const LOCATION_CHARS: usize = 200;

/// A place in a file: `stats_test.go:32`, `src/lib.rs:88:14`.
static LOCATION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[\w./-]+\.[A-Za-z0-9]+:\d+").expect("a valid pattern"));

/// An exchange as the standing section reads it.
pub struct NoteSource<'a> {
    /// `s-k3v9qa/x12`.
    pub id: &'a str,
    pub header: &'a str,
    /// The message that opened it.
    pub opening: &'a str,
    pub ran_tools: bool,
    pub failed: bool,
    /// Its tool results' digests (what the prompt shows of each output).
    pub digests: &'a [String],
}

/// The exchange's line: what the person stated, when it ran no tools and
/// they said something short that is not a question (a decision, a fact,
/// a name); where it failed, when it failed and a digest names a place in
/// a file; else its header.
pub fn note_line(x: &NoteSource) -> String {
    let said = text::without_client_notes(x.opening);
    let said = said.trim();
    if !x.ran_tools
        && !said.is_empty()
        && !said.ends_with('?')
        && said.chars().count() <= STATED_CHARS
    {
        return format!("{} the person said: {}\n", x.id, text::one_line(said));
    }
    let place = x
        .failed
        .then(|| {
            x.digests
                .iter()
                .flat_map(|d| d.lines())
                .find(|l| LOCATION.is_match(l))
        })
        .flatten();
    match place {
        Some(line) => format!(
            "{} {} — failed at: {}\n",
            x.id,
            x.header,
            text::clip_chars(line.trim(), LOCATION_CHARS)
        ),
        None => format!("{} {}\n", x.id, x.header),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(opening: &str, ran_tools: bool, failed: bool, digests: &[&str]) -> String {
        let digests: Vec<String> = digests.iter().map(|d| d.to_string()).collect();
        note_line(&NoteSource {
            id: "s-a/x3",
            header: "Run tests stats — error",
            opening,
            ran_tools,
            failed,
            digests: &digests,
        })
    }

    #[test]
    fn a_statement_a_failure_and_the_rest() {
        assert_eq!(
            line("We keep size_t in the API.", false, false, &[]),
            "s-a/x3 the person said: We keep size_t in the API.\n"
        );
        // A question is not a fact: its exchange's header carries the answer.
        assert_eq!(
            line("Which Go version?", false, false, &[]),
            "s-a/x3 Run tests stats — error\n"
        );
        let digest = "go test ./...: 3 failed\nFAIL TestMedian\nFAIL TestMedian/even at stats_test.go:32: Median([4 1 3 2]) = 3; want 2.5";
        assert_eq!(
            line("Run the tests.", true, true, &[digest]),
            "s-a/x3 Run tests stats — error — failed at: FAIL TestMedian/even at stats_test.go:32: Median([4 1 3 2]) = 3; want 2.5\n"
        );
        assert_eq!(
            line("Run the tests.", true, false, &[digest]),
            "s-a/x3 Run tests stats — error\n"
        );
    }
}

//! Project memory's entries: what one line of the standing section says of
//! an exchange of an earlier session, and how a recent exchange of the
//! project reads in full. The store reads the exchanges, newest first, and
//! keeps the entries that fit (`view::ProjectMemory`).

use std::sync::LazyLock;

use regex::Regex;

use crate::exchange::KeptMessage;
use crate::message::Role;
use crate::text;

/// A person's message up to this many characters is a note of its own; a
/// longer one is left to its exchange's header.
const STATED_CHARS: usize = 240;
/// A failure's location line is cut to this many characters.
const LOCATION_CHARS: usize = 200;

/// A tool call's arguments are cut to this many characters: the call says
/// what was done, its output's digest what came of it.
const ARGUMENTS_CHARS: usize = 200;

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

/// A recent exchange of an earlier session as project memory shows it:
/// its id, then each message under its role as the session's own tail shows
/// it when compacted (a person's words without the assistant's notes, a
/// tool's output as its digest, a call with its arguments cut short).
pub fn transcript(id: &str, messages: &[KeptMessage]) -> String {
    let mut out = format!("{id}\n");
    for kept in messages {
        let m = &kept.message;
        let said = match m.role {
            Role::User => text::without_client_notes(&m.content),
            _ => std::borrow::Cow::Borrowed(m.content.as_str()),
        };
        let said = said.trim();
        let who = match m.role {
            Role::User => "person".to_string(),
            Role::Tool => format!("output of {}", m.name.as_deref().unwrap_or("a tool")),
            role => role.as_str().to_string(),
        };
        if !said.is_empty() {
            out.push_str(&format!("{who}: {said}\n"));
        }
        for call in &m.tool_calls {
            out.push_str(&format!(
                "{who} called {} {}\n",
                call.name,
                text::clip_chars(&text::one_line(&call.arguments), ARGUMENTS_CHARS)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{ExchangeId, MessageId};
    use crate::message::{Message, ToolCall};

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

    #[test]
    fn a_transcript_reads_each_message_under_its_role() {
        let kept = |index: u32, message: Message| KeptMessage {
            id: MessageId {
                exchange: ExchangeId(4),
                index,
            },
            message,
            result: None,
        };
        let mut call = Message::new(Role::Assistant, "");
        call.tool_calls.push(ToolCall {
            id: "c1".into(),
            name: "run".into(),
            arguments: format!(
                "{{\"cmd\": \"go test\", \"note\": \"{}\"}}",
                "x".repeat(300)
            ),
        });
        let mut output = Message::new(Role::Tool, "go test: ok, 12 passed");
        output.name = Some("run".into());
        let messages = [
            kept(
                0,
                Message::new(
                    Role::User,
                    "<system-reminder>cwd /p</system-reminder>\nRun the tests.",
                ),
            ),
            kept(1, call),
            kept(2, output),
            kept(3, Message::new(Role::Assistant, "All 12 pass.")),
        ];
        let text = transcript("s-a/x4", &messages);
        let cut = format!("{{\"cmd\": \"go test\", \"note\": \"{}…", "x".repeat(172));
        assert_eq!(
            text,
            format!(
                "s-a/x4\nperson: Run the tests.\nassistant called run {cut}\n\
                 output of run: go test: ok, 12 passed\nassistant: All 12 pass.\n"
            )
        );
    }
}

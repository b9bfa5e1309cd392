//! The project a conversation belongs to, as the assistant states it: the
//! working directory its system prompt or opening user message names.
//! Each assistant words it its own way (docs/PROXY.md, "A proxied
//! session's project", lists them); `STATEMENTS` holds the wordings.
//!
//! Only a statement in the form an assistant writes it counts: a line that
//! starts with the words (after its indent and a `- ` bullet), inside the
//! block the assistant puts it in when the words alone are common. A path
//! a person mentions in a sentence, or one a tool printed, is not a
//! working directory.

/// The most bytes a project may have.
pub const PROJECT_MAX: usize = 512;

/// Where a statement's path is, after its words.
#[derive(Clone, Copy)]
enum Place {
    /// The rest of the line.
    RestOfLine,
    /// On the line, before this closing text.
    Before(&'static str),
    /// The line ends with the words; the path is the first `- PATH` item
    /// of the list below it (the first of several directories).
    FirstItemBelow,
}

/// One assistant's way of stating its working directory.
struct Statement {
    /// What the line starts with.
    words: &'static str,
    place: Place,
    /// Only inside `<TAG>…</TAG>`: words a person may well write too.
    within: Option<&'static str>,
}

const STATEMENTS: &[Statement] = &[
    // Claude Code: ` - Primary working directory: PATH` in its "# Environment"
    // notes (the opening user message, or a system message among them).
    Statement {
        words: "Primary working directory:",
        place: Place::RestOfLine,
        within: None,
    },
    // opencode, Continue's CLI and earlier Claude Code:
    // `<env>\nWorking directory: PATH\n…</env>` in the system prompt.
    Statement {
        words: "Working directory:",
        place: Place::RestOfLine,
        within: Some("env"),
    },
    // Codex: `<environment_context>\n  <cwd>PATH</cwd>\n…` in a user message.
    Statement {
        words: "<cwd>",
        place: Place::Before("</cwd>"),
        within: Some("environment_context"),
    },
    // Qwen Code (and Gemini CLI before its workspace list): the opening
    // message's `I'm currently working in the directory: PATH`, or, with
    // several directories, a list of them.
    Statement {
        words: "I'm currently working in the directory:",
        place: Place::RestOfLine,
        within: None,
    },
    Statement {
        words: "I'm currently working in the following directories:",
        place: Place::FirstItemBelow,
        within: None,
    },
    // Gemini CLI: `- **Workspace Directories:**\n  - PATH` in its
    // `<session_context>`.
    Statement {
        words: "**Workspace Directories:**",
        place: Place::FirstItemBelow,
        within: Some("session_context"),
    },
];

/// The working directory an assistant states in its system prompt, else
/// in its first user message, normalised (`normalise`); `None` when it
/// states none.
pub fn stated_working_directory(system: &str, first_user: &str) -> Option<String> {
    [system, first_user].into_iter().find_map(|text| {
        STATEMENTS
            .iter()
            .find_map(|s| blocks(text, s.within).find_map(|block| s.path_in(block)))
    })
}

/// A project as it is stored: an absolute path (Unix, a Windows drive or a
/// UNC share) without its trailing separators, at most `PROJECT_MAX`
/// bytes; `None` for anything else.
pub fn normalise(path: &str) -> Option<String> {
    let path = path.trim();
    let bytes = path.as_bytes();
    let drive = bytes.len() >= 3
        && bytes[0].is_ascii_alphabetic()
        && bytes[1] == b':'
        && matches!(bytes[2], b'\\' | b'/');
    let absolute = path.starts_with('/') || path.starts_with("\\\\") || drive;
    if !absolute || path.len() > PROJECT_MAX || path.chars().any(char::is_control) {
        return None;
    }
    let trimmed = path.trim_end_matches(['/', '\\']);
    // A root keeps its one separator: `/`, `C:\`.
    let kept = match trimmed.is_empty() || trimmed.ends_with(':') {
        true => &path[..trimmed.len() + 1],
        false => trimmed,
    };
    Some(kept.to_string())
}

impl Statement {
    fn path_in(&self, block: &str) -> Option<String> {
        let mut lines = block.lines();
        while let Some(line) = lines.next() {
            let Some(rest) = bare(line).strip_prefix(self.words) else {
                continue;
            };
            let path = match self.place {
                Place::RestOfLine => Some(rest),
                Place::Before(end) => rest.split_once(end).map(|(path, _)| path),
                Place::FirstItemBelow if rest.trim().is_empty() => lines
                    .next()
                    .and_then(|item| item.trim_start().strip_prefix("- ")),
                Place::FirstItemBelow => None,
            };
            if let Some(path) = path.and_then(normalise) {
                return Some(path);
            }
        }
        None
    }
}

/// A line without its indent and its `- ` bullet.
fn bare(line: &str) -> &str {
    let line = line.trim_start();
    line.strip_prefix("- ").unwrap_or(line)
}

/// The parts of `text` inside `<tag>…</tag>` (to the end of the text when
/// the last is not closed), or all of it without a tag.
fn blocks<'a>(text: &'a str, tag: Option<&str>) -> impl Iterator<Item = &'a str> {
    let (open, close) = match tag {
        Some(tag) => (format!("<{tag}>"), format!("</{tag}>")),
        None => (String::new(), String::new()),
    };
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let text = rest.take()?;
        if open.is_empty() {
            return Some(text);
        }
        let (_, inside) = text.split_once(open.as_str())?;
        match inside.split_once(close.as_str()) {
            Some((block, after)) => {
                rest = Some(after);
                Some(block)
            }
            None => Some(inside),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_is_an_absolute_path_without_trailing_separators() {
        let long = format!("/{}", "a".repeat(PROJECT_MAX));
        let cases: &[(&str, Option<&str>)] = &[
            ("/home/me/app", Some("/home/me/app")),
            ("  /home/me/app/ ", Some("/home/me/app")),
            ("/home/me/app//", Some("/home/me/app")),
            ("/", Some("/")),
            ("C:\\Users\\me\\app\\", Some("C:\\Users\\me\\app")),
            ("C:\\", Some("C:\\")),
            ("\\\\server\\share\\app", Some("\\\\server\\share\\app")),
            ("app", None),
            ("./app", None),
            ("~/app", None),
            ("", None),
            ("/home/me\n/app", None),
            (long.as_str(), None),
        ];
        for (path, expected) in cases {
            assert_eq!(normalise(path).as_deref(), *expected, "{path:?}");
        }
    }

    #[test]
    fn the_system_prompt_s_statement_comes_before_the_first_message_s() {
        let system = "<env>\nWorking directory: /home/me/app/\n</env>";
        let user = "<environment_context>\n  <cwd>/home/me/other</cwd>\n</environment_context>";
        assert_eq!(
            stated_working_directory(system, user).as_deref(),
            Some("/home/me/app")
        );
        assert_eq!(
            stated_working_directory("", user).as_deref(),
            Some("/home/me/other")
        );
    }
}

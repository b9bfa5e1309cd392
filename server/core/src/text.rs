//! Plain text helpers every rendering shares: one line, a character cap.

/// `text` on one line, whitespace runs collapsed.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// At most `max` characters of `text`, with `…` when cut.
pub fn clip_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", text[..end].trim_end()),
        None => text.to_string(),
    }
}

/// The wrappers assistants put their own notes in, inside a person's
/// message (Claude Code's reminders, Codex's environment, opencode's and
/// Continue's `<env>`, Gemini CLI's session context): not the person's
/// words.
const CLIENT_NOTES: [&str; 5] = [
    "system-reminder",
    "environment_context",
    "env",
    "session_context",
    "environment_details",
];

/// `text` without the blocks an assistant wraps its own notes in
/// (`CLIENT_NOTES`, from `<tag>` to `</tag>`): what the person wrote. An
/// unclosed block is kept.
pub fn without_client_notes(text: &str) -> std::borrow::Cow<'_, str> {
    if !CLIENT_NOTES
        .iter()
        .any(|t| text.contains(&format!("<{t}>")))
    {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = text.to_string();
    for tag in CLIENT_NOTES {
        let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
        while let Some(start) = out.find(&open) {
            let Some(end) = out[start..].find(&close) else {
                break;
            };
            out.replace_range(start..start + end + close.len(), "");
        }
    }
    std::borrow::Cow::Owned(out.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_notes_are_not_the_persons_words() {
        let claude = "<system-reminder>\n# Environment\n - Primary working directory: /w\n</system-reminder>\nHow do totals round?";
        assert_eq!(without_client_notes(claude), "How do totals round?");
        let codex = "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>";
        assert_eq!(without_client_notes(codex), "");
        assert_eq!(
            without_client_notes("a <env> never closed"),
            "a <env> never closed"
        );
        assert_eq!(
            without_client_notes("<b>bold</b> stays"),
            "<b>bold</b> stays"
        );
    }
}

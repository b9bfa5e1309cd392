//! Terminal noise removal shared by all digesters: ANSI escapes, carriage
//! return redraws (progress bars, spinners) and CRLF line ends.

use regex::Regex;
use std::borrow::Cow;
use std::sync::LazyLock;

static ANSI: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]").unwrap()
});

/// The text as a terminal would finally show it: escapes removed and, on a
/// line redrawn with `\r`, only the last drawing kept.
pub(crate) fn strip_terminal_noise(text: &str) -> Cow<'_, str> {
    let text = ANSI.replace_all(text, "");
    if !text.contains('\r') {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    for line in text.split('\n') {
        let last = line
            .split('\r')
            .rev()
            .find(|part| !part.trim().is_empty())
            .unwrap_or("");
        out.push_str(last);
        out.push('\n');
    }
    out.pop();
    Cow::Owned(out)
}

/// Consecutive equal lines as one line and how many times it occurred.
pub(crate) fn collapse_repeats<'a>(
    lines: impl IntoIterator<Item = &'a str>,
) -> Vec<(&'a str, usize)> {
    let mut out: Vec<(&str, usize)> = Vec::new();
    for line in lines {
        match out.last_mut() {
            Some((last, n)) if *last == line => *n += 1,
            _ => out.push((line, 1)),
        }
    }
    out
}

/// A collapsed line as shown: `line (×3)` when it repeated.
pub(crate) fn with_count(line: &str, count: usize) -> String {
    if count > 1 {
        format!("{line} (×{count})")
    } else {
        line.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_escapes_and_redraws() {
        let cases = [
            ("\x1b[1m\x1b[92mCompiling\x1b[0m x", "Compiling x"),
            ("10%\r50%\r100%\nnext", "100%\nnext"),
            ("a\r\nb\r\n", "a\nb\n"),
            ("plain", "plain"),
        ];
        for (input, want) in cases {
            assert_eq!(strip_terminal_noise(input), want, "{input:?}");
        }
    }

    #[test]
    fn collapses_consecutive_repeats_only() {
        let got = collapse_repeats(["a", "a", "b", "a"]);
        assert_eq!(got, vec![("a", 2), ("b", 1), ("a", 1)]);
    }
}

//! Taking part of a retrieved text: a line range, the lines matching a
//! pattern, or a token cap. Used by `ctx/retrieve` and `inspect`.

use regex::RegexBuilder;

use crate::tokens::{self, Encoding};

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SliceError {
    #[error("lines: expected [first, last] with 1 <= first <= last, got [{0}, {1}]")]
    BadRange(u32, u32),
    #[error("grep: invalid pattern: {0}")]
    BadPattern(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slice {
    pub text: String,
    pub truncated: bool,
}

/// Lines `first..=last` (1-based) of `text`, each prefixed with its number.
pub fn lines(text: &str, first: u32, last: u32) -> Result<String, SliceError> {
    if first == 0 || last < first {
        return Err(SliceError::BadRange(first, last));
    }
    Ok(text
        .lines()
        .enumerate()
        .skip(first as usize - 1)
        .take((last - first + 1) as usize)
        .map(|(i, l)| format!("{}: {l}\n", i + 1))
        .collect())
}

/// The lines of `text` that match `pattern` (a regex, case-insensitive when
/// it has no upper-case letter), each prefixed with its number.
pub fn grep(text: &str, pattern: &str) -> Result<String, SliceError> {
    let smart_case = !pattern.chars().any(char::is_uppercase);
    let re = RegexBuilder::new(pattern)
        .case_insensitive(smart_case)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| SliceError::BadPattern(e.to_string()))?;
    Ok(text
        .lines()
        .enumerate()
        .filter(|(_, l)| re.is_match(l))
        .map(|(i, l)| format!("{}: {l}\n", i + 1))
        .collect())
}

/// `text` cut to at most `max_tokens`, with a note of what was cut.
pub fn cap(text: String, max_tokens: Option<u32>, encoding: Encoding) -> Slice {
    let Some(max) = max_tokens else {
        return Slice {
            text,
            truncated: false,
        };
    };
    if tokens::count(encoding, &text) <= max {
        return Slice {
            text,
            truncated: false,
        };
    }
    let kept = tokens::truncate(encoding, &text, max);
    Slice {
        text: kept.to_string(),
        truncated: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "alpha\nBeta\ngamma\ndelta beta\n";

    #[test]
    fn line_ranges() {
        assert_eq!(lines(TEXT, 2, 3).unwrap(), "2: Beta\n3: gamma\n");
        assert_eq!(lines(TEXT, 4, 99).unwrap(), "4: delta beta\n");
        assert_eq!(lines(TEXT, 9, 9).unwrap(), "");
        assert_eq!(lines(TEXT, 0, 1), Err(SliceError::BadRange(0, 1)));
        assert_eq!(lines(TEXT, 3, 2), Err(SliceError::BadRange(3, 2)));
    }

    #[test]
    fn grep_is_smart_case() {
        assert_eq!(grep(TEXT, "beta").unwrap(), "2: Beta\n4: delta beta\n");
        assert_eq!(grep(TEXT, "Beta").unwrap(), "2: Beta\n");
        assert!(matches!(grep(TEXT, "("), Err(SliceError::BadPattern(_))));
    }

    #[test]
    fn cap_marks_truncation() {
        let s = cap(
            "one two three four five".into(),
            Some(2),
            Encoding::O200kBase,
        );
        assert!(s.truncated);
        assert_eq!(s.text, "one two");
        assert!(!cap("one".into(), Some(5), Encoding::O200kBase).truncated);
    }
}

//! Pre-tokenization without the regex where the text is ASCII: the pieces
//! bpe-openai's patterns (tiktoken's, for o200k and cl100k) cut, found by
//! scanning bytes. Finding a piece with the regex costs as much as counting
//! its tokens; a scan of the same bytes costs a fraction of that. A piece
//! whose bounds depend on a character outside ASCII (a letter, a mark or a
//! space the patterns' Unicode classes know) is left to the regex
//! (`tokens/pattern`), so the pieces are the regex's everywhere (a proptest
//! compares them with bpe-openai's, whose patterns they are).
//!
//! The patterns (leftmost alternative first) and what each means for ASCII,
//! `P` being one character that is not `\r`, `\n`, a letter or a digit:
//!
//! o200k: `P? [A-Z]* [a-z]+ 's…` | `P? [A-Z]+ [a-z]* 's…` (together: an
//! optional `P`, upper case then lower case letters, an optional
//! contraction) | 1-3 digits | ` ?` punctuation, then `[\r\n/]*` |
//! whitespace up to its last line break | whitespace to the end of the text
//! | a run of whitespace less its last character | one whitespace.
//!
//! cl100k: a contraction | `P?` letters | 1-3 digits | ` ?` punctuation,
//! then `[\r\n]*` | the same whitespace rules.

use super::{pattern, Encoding};

/// The pieces of `text` in order, as the pre-tokenizer's patterns cut them.
pub(super) fn split(encoding: Encoding, text: &str) -> impl Iterator<Item = &str> {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= text.len() {
            return None;
        }
        let end = match scan(encoding, text.as_bytes(), at) {
            Some(end) => end,
            None => pattern::piece_end(encoding, text, at)?,
        };
        let piece = &text[at..end];
        at = end;
        Some(piece)
    })
}

/// The end of the piece that starts at `at` (`at < text.len()`), or
/// `None` when it depends on a byte outside ASCII.
fn scan(encoding: Encoding, text: &[u8], at: usize) -> Option<usize> {
    let s = Scanner { text };
    let c = s.ascii(at)?;
    let o200k = encoding == Encoding::O200kBase;
    if !o200k && c == b'\'' {
        if let Some(end) = s.contraction(at)? {
            return Some(end);
        }
    }
    let letters_from = if c.is_ascii_alphabetic() {
        Some(at)
    } else if is_p(c) && at + 1 < text.len() && s.ascii(at + 1)?.is_ascii_alphabetic() {
        Some(at + 1)
    } else {
        None
    };
    if let Some(from) = letters_from {
        return match o200k {
            true => {
                let end = s.run(s.run(from, |b| b.is_ascii_uppercase())?, |b| {
                    b.is_ascii_lowercase()
                })?;
                Some(s.contraction(end)?.unwrap_or(end))
            }
            false => s.run(from, |b| b.is_ascii_alphabetic()),
        };
    }
    if c.is_ascii_digit() {
        let digits = text[at..]
            .iter()
            .take(3)
            .take_while(|b| b.is_ascii_digit())
            .count();
        // A digit outside ASCII (`٣`) may continue the run.
        return match digits < 3 && at + digits < text.len() {
            true => s.ascii(at + digits).map(|_| at + digits),
            false => Some(at + digits),
        };
    }
    let punctuation_from = if c == b' ' { at + 1 } else { at };
    if punctuation_from < text.len() && is_punctuation(s.ascii(punctuation_from)?) {
        let end = s.run(punctuation_from, is_punctuation)?;
        let breaks = |b: u8| b == b'\r' || b == b'\n' || (o200k && b == b'/');
        let tail = text[end..].iter().take_while(|b| breaks(**b)).count();
        return Some(end + tail);
    }
    // Whitespace: `c` is neither a letter, a digit nor punctuation.
    let end = s.run(at, is_space)?;
    if let Some(last_break) = text[at..end]
        .iter()
        .rposition(|b| *b == b'\r' || *b == b'\n')
    {
        return Some(at + last_break + 1);
    }
    Some(match (end == text.len(), end - at) {
        (true, _) | (false, 1) => end,
        (false, _) => end - 1,
    })
}

struct Scanner<'t> {
    text: &'t [u8],
}

impl Scanner<'_> {
    /// The byte at `i` when it is ASCII.
    fn ascii(&self, i: usize) -> Option<u8> {
        let b = self.text[i];
        b.is_ascii().then_some(b)
    }

    /// The end of the run of bytes from `from` that are `in_run`; `None`
    /// when the byte after it is not ASCII (it might belong to the run).
    fn run(&self, from: usize, in_run: impl Fn(u8) -> bool) -> Option<usize> {
        let end = from + self.text[from..].iter().take_while(|b| in_run(**b)).count();
        match end < self.text.len() {
            true => self.ascii(end).map(|_| end),
            false => Some(end),
        }
    }

    /// The end of a contraction (`'s`, `'t`, `'re`, `'ve`, `'m`, `'ll`,
    /// `'d`, any case) at `at`, `Some(None)` when there is none; `None`
    /// when a byte outside ASCII decides it (`'ſ` is `'s` ignoring case).
    fn contraction(&self, at: usize) -> Option<Option<usize>> {
        let byte = |i: usize| self.text.get(i).map(u8::to_ascii_lowercase);
        if byte(at) != Some(b'\'') {
            return Some(None);
        }
        let Some(first) = byte(at + 1) else {
            return Some(None);
        };
        if !first.is_ascii() {
            return None;
        }
        Some(match (first, byte(at + 2)) {
            (b's' | b't' | b'm' | b'd', _) => Some(at + 2),
            (b'r' | b'v', Some(b'e')) | (b'l', Some(b'l')) => Some(at + 3),
            _ => None,
        })
    }
}

/// `[^\r\n\p{L}\p{N}]` for an ASCII byte.
fn is_p(b: u8) -> bool {
    !(b == b'\r' || b == b'\n' || b.is_ascii_alphanumeric())
}

/// `\s` (Unicode White_Space) for an ASCII byte: tab to carriage return, space.
fn is_space(b: u8) -> bool {
    b == b' ' || (b'\t'..=b'\r').contains(&b)
}

/// `[^\s\p{L}\p{N}]` for an ASCII byte.
fn is_punctuation(b: u8) -> bool {
    b.is_ascii() && !is_space(b) && !b.is_ascii_alphanumeric()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// bpe-openai's pre-tokenizer of `encoding`.
    fn theirs(encoding: Encoding) -> &'static bpe_openai::Tokenizer {
        match encoding {
            Encoding::O200kBase => bpe_openai::o200k_base(),
            Encoding::Cl100kBase => bpe_openai::cl100k_base(),
        }
    }

    fn both(text: &str) {
        for encoding in Encoding::ALL {
            let ours: Vec<&str> = split(encoding, text).collect();
            let regex: Vec<&str> = theirs(encoding).split(text).collect();
            assert_eq!(ours, regex, "{encoding:?} on {text:?}");
        }
    }

    #[test]
    fn cuts_as_the_regex_does() {
        for text in [
            "",
            "hello world",
            "  indented\n\n    fn main() {\n}\n",
            "don't WE'LL they're I'M x'S 'S",
            "FOObar fooBAR Foo's 12345 3.14 a/b//c\r\n",
            "x = \"a\";  // c\n\t\t\n  \n",
            "trailing   ",
            " !?/\n/x",
            "\u{a0}nbsp é ſ 'ſ x'ſ 漢字 🦀 \u{301}e e\u{301}",
            "tab\tthen\u{85}next",
        ] {
            both(text);
        }
    }

    /// Text from the classes the patterns tell apart, around and beside
    /// characters outside ASCII that fall in or out of those classes.
    fn text_strategy() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                "[a-zA-Z]{1,6}",
                "[0-9]{1,5}",
                "[ \t\n\r\u{b}\u{c}]{1,4}",
                "[!-/:-@\\[-`{-~\u{0}\u{7f}]{1,3}",
                "('s|'T|'re|'VE|'m|'Ll|'d|'x|')",
                "[é漢ſ\u{212a}\u{a0}\u{85}\u{301}\u{2028}\u{3000}🦀٣Ⅻ]{1,2}",
            ],
            0..20,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn pieces_equal_the_regex_pieces(text in text_strategy()) {
            for encoding in Encoding::ALL {
                let ours: Vec<&str> = split(encoding, &text).collect();
                let regex: Vec<&str> = theirs(encoding).split(&text).collect();
                prop_assert_eq!(ours, regex, "{:?}", encoding);
            }
        }
    }
}

//! The pre-tokenizer's regex, for the pieces whose bounds a character
//! outside ASCII decides (`tokens/split` scans the others). The patterns
//! are tiktoken's as bpe-openai writes them: the regex crate has no
//! look-around, so tiktoken's `\s+(?!\S)` becomes a pattern of its own,
//! `\s+\s`, whose last character goes back to the next piece. A regex is
//! built at its encoding's first piece outside ASCII (a few milliseconds:
//! docs/PERFORMANCE.md).

use std::sync::LazyLock;

use regex_automata::meta::Regex;
use regex_automata::{Anchored, Input};

use super::Encoding;

const CL100K_BASE: &str = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+$";
const O200K_BASE: &str = concat!(
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|\\p{N}{1,3}",
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*",
    "|\\s*[\\r\\n]+",
    "|\\s+$",
);

/// The look-ahead pattern's index among a regex's patterns.
const LOOK_AHEAD: usize = 1;

fn regex(encoding: Encoding) -> &'static Regex {
    fn build(pattern: &str) -> Regex {
        Regex::new_many(&[pattern, "\\s+\\s", "\\s+"]).expect("valid patterns")
    }
    static O200K: LazyLock<Regex> = LazyLock::new(|| build(O200K_BASE));
    static CL100K: LazyLock<Regex> = LazyLock::new(|| build(CL100K_BASE));
    match encoding {
        Encoding::O200kBase => &O200K,
        Encoding::Cl100kBase => &CL100K,
    }
}

/// The end of the piece of `text` that starts at `at`, as the patterns cut
/// it (the first of them that matches there, the longest it matches).
pub(super) fn piece_end(encoding: Encoding, text: &str, at: usize) -> Option<usize> {
    let found = regex(encoding).find(Input::new(&text[at..]).anchored(Anchored::Yes))?;
    let end = at + found.end();
    Some(match found.pattern().as_usize() {
        LOOK_AHEAD => {
            let ahead = text[at..end].chars().next_back().expect("\\s+\\s matched");
            end - ahead.len_utf8()
        }
        _ => end,
    })
}

/// Builds `encoding`'s regex now, so that its first piece outside ASCII
/// does not wait for it.
pub(super) fn warm_up(encoding: Encoding) {
    regex(encoding);
}

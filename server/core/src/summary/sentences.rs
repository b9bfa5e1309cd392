//! Sentences of prose: conclusions, open points, explained terms, the
//! filler words that point at nothing.

use std::sync::LazyLock;

use regex::Regex;

use super::entities::TICKED;
use crate::text::clip_chars;

pub(super) static BOLD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\*\*([^*\n]{2,60})\*\*").unwrap());
// Kept compact: rustfmt puts an array one element a line once any element
// is longer than 10 characters ("shouldn't").
#[rustfmt::skip]
pub(super) const STOPWORDS: &[&str] = &[
    "a", "an", "the", "please", "can", "could", "would", "will", "should", "shall", "may", "might",
    "must", "you", "i", "i'd", "i'm", "i've", "i'll", "we", "we're", "we've", "let's", "lets", "me",
    "my", "our", "us", "your", "their", "his", "her", "its", "it's", "to", "want", "need", "like",
    "hey", "hi", "hello", "ok", "okay", "so", "now", "just", "also", "kindly", "is", "are", "was",
    "were", "be", "been", "being", "am", "it", "this", "that", "these", "those", "there", "here",
    "of", "for", "and", "or", "but", "then", "do", "does", "did", "done", "help", "in", "on", "at",
    "with", "by", "as", "into", "about", "have", "has", "had", "get", "got", "some", "any", "very",
    "really", "quite", "bit", "what", "what's", "which", "who", "why", "how", "if", "when", "where",
    "go", "going", "make", "sure", "thanks", "thank", "yes", "process", "up", "out", "all", "you'd",
    "you're", "you've", "you'll", "they're", "they've", "they'll", "we'll", "he's", "she's",
    "it'll", "that's", "there's", "here's", "don't", "doesn't", "didn't", "isn't", "aren't",
    "wasn't", "weren't", "can't", "won't", "wouldn't", "couldn't", "shouldn't", "haven't", "hasn't",
    "hadn't",
];

/// Whether `word` (any case, with a straight or a typographic apostrophe)
/// is a filler word that points at nothing: not a header word, a fact
/// pointer or a search term.
pub fn is_stopword(word: &str) -> bool {
    STOPWORDS.contains(&word.to_lowercase().replace('\u{2019}', "'").as_str())
}

/// Assistant text without code blocks: prose is where conclusions live.
pub(super) fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if !in_code {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Sentences of `text`: split after `.`, `!`, `?` and at line ends; list
/// markers and headings stripped.
pub fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line
            .trim()
            .trim_start_matches(['#', '-', '*', '>', '•'])
            .trim();
        let line = strip_numbering(line);
        let mut start = 0;
        let chars: Vec<(usize, char)> = line.char_indices().collect();
        for (k, &(i, c)) in chars.iter().enumerate() {
            let next_is_space = chars.get(k + 1).is_some_and(|(_, n)| n.is_whitespace());
            if matches!(c, '.' | '!' | '?') && next_is_space {
                out.push(line[start..=i].trim().to_string());
                start = i + 1;
            }
        }
        out.push(line[start..].trim().to_string());
    }
    out.retain(|s| s.chars().any(char::is_alphanumeric));
    out
}

pub(super) fn strip_numbering(line: &str) -> &str {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    match line[digits..].strip_prefix(['.', ')']) {
        Some(rest) if digits > 0 => rest.trim_start(),
        _ => line,
    }
}

pub(super) fn first_sentences(text: &str, n: usize) -> String {
    clip_chars(
        &sentences(text)
            .into_iter()
            .take(n)
            .collect::<Vec<_>>()
            .join(" "),
        240,
    )
}

pub(super) fn is_open_point(s: &str) -> bool {
    let lower = s.to_lowercase();
    s.ends_with('?')
        || ["next", "todo", "then ", "remaining", "follow-up"]
            .iter()
            .any(|w| lower.starts_with(w))
        || [
            "still need",
            "not yet",
            "left to do",
            "we should",
            "you may want",
        ]
        .iter()
        .any(|w| lower.contains(w))
}

pub(super) fn is_conclusion(s: &str) -> bool {
    let lower = s.to_lowercase();
    [
        "fixed",
        "done",
        "now ",
        "because",
        "caused",
        "cause",
        "decided",
        "instead",
        "the issue",
        "the problem",
        "resolved",
        "added",
        "changed",
        "updated",
        "created",
        "booked",
        "placed",
        "found",
        "all ",
        "succe",
        "complete",
        "result",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// Terms an answer explains: bold text, headings and code names in its prose.
pub(super) fn explained_terms(text: &str) -> Vec<String> {
    let prose = prose(text);
    let mut terms: Vec<String> = Vec::new();
    let headings = prose
        .lines()
        .filter_map(|l| l.trim().strip_prefix('#'))
        .map(|h| h.trim_start_matches('#').trim());
    let bold = BOLD
        .captures_iter(&prose)
        .map(|c| c.get(1).unwrap().as_str().trim());
    let ticked = TICKED
        .captures_iter(&prose)
        .map(|c| c.get(1).unwrap().as_str().trim());
    for t in headings.chain(bold).chain(ticked) {
        let t = clip_chars(t.trim_end_matches(':'), 50);
        if !t.is_empty() && !terms.iter().any(|e| e.eq_ignore_ascii_case(&t)) {
            terms.push(t);
        }
    }
    terms.truncate(8);
    terms
}

/// A word of prose without the punctuation around it.
pub(super) fn trim_word(raw: &str) -> &str {
    raw.trim_matches(|c: char| {
        matches!(
            c,
            ',' | '.' | '!' | '?' | ';' | ':' | '"' | '\'' | '`' | '(' | ')'
        )
    })
}

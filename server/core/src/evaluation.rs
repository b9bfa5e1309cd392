//! How the replay report judges a run of prompts: its cost with prefix
//! caching (`RunCost`), and whether a fact a later question needs is in a
//! prompt or one `context_retrieve` away (`fact_status`).

use std::sync::LazyLock;

use regex::Regex;

use crate::summary;
use crate::text;

/// Totals of a run of prompts, with prefix caching priced at a tenth.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RunCost {
    pub prompt_tokens: u64,
    /// Tokens identical to the previous prompt's start.
    pub cached_tokens: u64,
}

impl RunCost {
    pub const CACHED_PRICE: f64 = 0.1;

    /// `(tokens, cached prefix)` of each prompt.
    pub fn of(turns: impl IntoIterator<Item = (u32, u32)>) -> RunCost {
        turns
            .into_iter()
            .fold(RunCost::default(), |acc, (n, cached)| RunCost {
                prompt_tokens: acc.prompt_tokens + u64::from(n),
                cached_tokens: acc.cached_tokens + u64::from(cached.min(n)),
            })
    }

    /// Uncached tokens plus cached ones at `CACHED_PRICE`.
    pub fn effective(&self) -> f64 {
        (self.prompt_tokens - self.cached_tokens) as f64
            + Self::CACHED_PRICE * self.cached_tokens as f64
    }
}

/// Whether a prompt lets the model answer with a fact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FactStatus {
    /// The fact's exact text is in the prompt.
    InPrompt,
    /// An id of the exchange the fact came from (`x<from>`, one of its
    /// messages or blobs) is in the prompt, next to a word of the question.
    OneRetrieveAway,
    /// Such an id is in the prompt next to words of the fact only, none of
    /// the question's.
    AnswerWordsOnly,
    Lost,
}

impl FactStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            FactStatus::InPrompt => "in-prompt",
            FactStatus::OneRetrieveAway => "one-retrieve-away",
            FactStatus::AnswerWordsOnly => "answer-words-only",
            FactStatus::Lost => "lost",
        }
    }
}

static RECORD_START: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:x\d+(?-u:\b)|b3:[0-9a-f]{8}|#)").unwrap());

/// Lower-case words of `text` as the pointer check compares them; joined
/// words (`set_budget_limit`, `first-class`) and paths (`src/parser.rs`)
/// also stand for their parts, so `parser` points at `src/parser.rs`.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | '/' | ':' | '-')))
        .map(|w| {
            w.trim_matches(|c: char| matches!(c, '.' | ':' | '-'))
                .to_lowercase()
        })
        .flat_map(|w| {
            let parts: Vec<String> = match w.contains(['_', '-', '/', '.']) {
                true => w
                    .split(['_', '-', '/', '.'])
                    .map(str::to_string)
                    .chain(w.rsplit_once('/').map(|(_, name)| name.to_string()))
                    .collect(),
                false => Vec::new(),
            };
            std::iter::once(w).chain(parts)
        })
        .filter(|w| w.chars().count() >= 3)
}

/// The words of `text` in order, without the punctuation and quoting that
/// differ between forms of one fact (`"key": "v"` in JSON, `key "v"` in a
/// reply), padded with spaces so that a match is whole words.
fn spelled(text: &str) -> String {
    let kept: String = text
        .chars()
        .map(
            |c| match c.is_alphanumeric() || matches!(c, '_' | '.' | '/') {
                true => c,
                false => ' ',
            },
        )
        .collect();
    format!(" {} ", text::one_line(&kept))
}

/// `fact` from exchange `from` (its id as the prompt names it: `x12`, or
/// `s-k3v9qa/x12` for another session's; its tool outputs are stored as `blobs`,
/// `b3:…` ids) against the text of a prompt, for the question that needs
/// it. A fact that is not in the prompt is one retrieve away when a line
/// naming its exchange (or a line continuing it) carries a word of the
/// question or of its `cues` (words a person would ask with): the model
/// finds it by what it asks. When only words of the fact itself (its
/// names, numbers, paths) are on such a line, a model that does not know
/// the answer yet has to guess its way there: `AnswerWordsOnly`.
pub fn fact_status(
    fact: &str,
    question: &str,
    cues: &[String],
    from: &str,
    blobs: &[String],
    prompt_text: &str,
) -> FactStatus {
    if prompt_text.contains(fact) || spelled(prompt_text).contains(&spelled(fact)) {
        return FactStatus::InPrompt;
    }
    let asked: Vec<String> = std::iter::once(question)
        .chain(cues.iter().map(String::as_str))
        .flat_map(|c| words(c).collect::<Vec<_>>())
        .filter(|w| !summary::is_stopword(w))
        .collect();
    // Identifier-like words of the fact: entities, ids, numbers, names in
    // capitals.
    let identifier = |w: &&str| {
        w.chars().any(|c| c.is_ascii_digit() || c == '_')
            || w.chars().skip(1).any(char::is_uppercase)
    };
    let answered: Vec<String> = summary::entities_of(fact)
        .iter()
        .flat_map(|e| words(e).collect::<Vec<_>>())
        .chain(fact.split_whitespace().filter(identifier).flat_map(words))
        .collect();
    // A bare id is this session's: not the same id after another
    // session's `s-…/`.
    let id = Regex::new(&format!(
        r"(?:^|[^/\w]){}(?:\.\d+)?(?-u:\b)",
        regex::escape(from)
    ))
    .unwrap();
    let blob_hexes: Vec<String> = blobs
        .iter()
        .filter_map(|b| b.strip_prefix("b3:"))
        .map(|h| h[..h.len().min(8)].to_lowercase())
        .collect();
    let names_source = |line: &str| {
        id.is_match(line) || blob_hexes.iter().any(|h| line.contains(&format!("b3:{h}")))
    };
    let lines: Vec<&str> = prompt_text.lines().collect();
    let mut status = FactStatus::Lost;
    for (i, line) in lines.iter().enumerate() {
        if !names_source(line) {
            continue;
        }
        // The record the id heads: its line and the lines that continue it.
        let end = (i + 1..lines.len())
            .find(|&j| lines[j].trim().is_empty() || RECORD_START.is_match(lines[j]))
            .unwrap_or(lines.len());
        let record: Vec<String> = lines[i..end]
            .iter()
            .flat_map(|l| words(l).collect::<Vec<_>>())
            .collect();
        if asked.iter().any(|p| record.contains(p)) {
            return FactStatus::OneRetrieveAway;
        }
        if answered.iter().any(|p| record.contains(p)) {
            status = FactStatus::AnswerWordsOnly;
        }
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_prefix_is_priced_at_a_tenth() {
        let cost = RunCost::of([(1000, 0), (1200, 1000), (1500, 2000)]);
        assert_eq!(
            cost,
            RunCost {
                prompt_tokens: 3700,
                cached_tokens: 2500
            }
        );
        assert!((cost.effective() - 1450.0).abs() < 1e-9);
    }

    /// `question` is the question's text; its words are the only pointers.
    fn check(fact: &str, question: &str, from: u32, prompt: &str, expect: FactStatus) {
        let blobs = ["b3:1a2b3c4d5e6f".to_string()];
        assert_eq!(
            fact_status(fact, question, &[], &format!("x{from}"), &blobs, prompt),
            expect,
            "{fact} for {question:?} in\n{prompt}"
        );
    }

    #[test]
    fn facts_in_prompt_one_retrieve_away_or_lost() {
        use FactStatus::*;
        let headers = "## Earlier exchanges\nx3 10:02 fix E0308 in parser.rs — completed\nx4 10:05 book flight SFO JFK — completed\n";
        let ask = "what was the booking number of the flight?";
        check(
            "booking BK-3392",
            ask,
            4,
            "Your booking BK-3392 is confirmed",
            InPrompt,
        );
        check(
            "booking  BK-3392\n",
            ask,
            4,
            "Your booking BK-3392 is confirmed",
            InPrompt,
        );
        check("booking BK-3392", ask, 4, headers, OneRetrieveAway);
        // The question's words point; the answer's words do not (the model
        // does not know them yet).
        check(
            "mismatched types at src/parser.rs:42",
            "which line was it?",
            3,
            headers,
            AnswerWordsOnly,
        );
        check(
            "mismatched types at src/parser.rs:42",
            "which line of the parser failed?",
            3,
            headers,
            OneRetrieveAway,
        );
        check("booking BK-3392", "and the hotel?", 4, headers, Lost);
        check("booking BK-3392", ask, 5, headers, Lost);
        check(
            "booking BK-3392",
            ask,
            4,
            "x41 10:05 book flight SFO JFK\n",
            Lost,
        );
        let summary = "x4 10:05 book flight — completed\nAsk: book SFO to JFK\nResult: booked as BK-3392 for $412\n";
        check(
            "total was $412.50",
            "what was the price to JFK?",
            4,
            summary,
            OneRetrieveAway,
        );
        // A path's file name and stem point at it.
        let reference = "b3:1a2b3c4d5e6f src/parser.rs, file, 2.0 kB, 600 tok, from x9\n";
        check(
            "fn parse_let() in src/parser.rs",
            "what does the parser do with let?",
            9,
            reference,
            OneRetrieveAway,
        );
        check(
            "fn parse_let() in src/parser.rs",
            "what does the parser do with let?",
            2,
            reference,
            OneRetrieveAway,
        );
        check("fn parse_let()", "and the lexer?", 2, reference, Lost);
    }
}

//! The recall block: the lines of earlier exchanges that match the words
//! of the question a prompt answers, so the facts a question needs arrive
//! with it instead of waiting on the model to call a tool.
//!
//! The store ranks the session's exchanges with its full-text index (the
//! question's distinctive words, `distinctive`) and hands each hit's texts
//! here; `passage` cuts the lines around the best match, `relevant` is the
//! bar a hit must pass. Everything is a function of the question and of
//! exchanges older than the one it opens, which never change: every model
//! call of one exchange gets the same block, byte for byte.

use crate::exchange::Counted;
use crate::ids::{self, BlobHash, ExchangeId, MessageId};
use crate::summary::is_stopword;
use crate::text;
use crate::tokens::{self, Encoding};

/// A question word and in how many of the session's earlier exchanges it
/// occurs (its document frequency in the full-text index).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecallWord {
    pub word: String,
    pub exchanges: u32,
    /// Rare enough to search for (`weigh`); the others only help to pick
    /// and judge a line.
    pub distinctive: bool,
}

/// One text of a hit exchange, where it can be fetched from: a tool's
/// output (its blob) or a message's content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecallText {
    pub message: MessageId,
    pub blob: Option<BlobHash>,
    pub text: String,
}

/// A hit as the prompt shows it: the lines around the match, labelled with
/// the ids and line numbers to fetch more.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecallHit {
    /// The session of the exchange when it is another of the project's
    /// (project memory); `None` in the prompt's own session.
    pub session: Option<String>,
    pub exchange: ExchangeId,
    /// The question words the passage matched, rarest first.
    pub words: Vec<String>,
    pub passage: Counted,
    /// How well its best line matched: distinctive words, then words.
    pub strength: (usize, usize),
}

impl RecallHit {
    /// The exchange's id as the prompt names it (`x12`, `s-k3v9qa/x12`).
    pub fn id(&self) -> String {
        ids::qualified(self.session.as_deref(), self.exchange)
    }
}

/// The hits worth showing, best first: those whose best line matched as
/// many of the question's words as the best hit's, or one fewer (a weaker
/// match is a word in common, not the thing asked about); among equals the
/// newest first, since a later exchange says what still holds (hits of
/// other sessions, equal in both, keep the order they came in: the
/// search's).
pub fn choose(mut hits: Vec<RecallHit>, reach: Reach) -> Vec<RecallHit> {
    hits.sort_by(|a, b| {
        b.strength
            .cmp(&a.strength)
            .then(b.exchange.cmp(&a.exchange))
    });
    let Some(best) = hits.first().map(|h| h.strength) else {
        return hits;
    };
    hits.retain(|h| h.strength.0 + reach.fewer_distinctive >= best.0 && h.strength.1 + 1 >= best.1);
    hits.truncate(reach.hits);
    hits
}

/// Lines of context kept before and after a matching line of a tool
/// output (a message's line is a paragraph: it is shown alone).
const CONTEXT_BEFORE: usize = 1;
const CONTEXT_AFTER: usize = 2;
/// A line longer than this is cut around its first match (a long prose
/// paragraph, minified code, a pip line listing every package).
const LINE_CHARS: usize = 320;
/// A word this short is a search term only with a digit in it (`v2`).
const MIN_WORD_CHARS: usize = 3;
/// A passage cut shorter than this shows the ids and not the line.
const MIN_PASSAGE_TOKENS: u32 = 48;
/// How much of a hit exchange a passage quotes: how many of its texts,
/// and how many matching lines of each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reach {
    pub texts: usize,
    pub lines_per_text: usize,
    /// At most this many hits are shown: past the first few, a match is a
    /// word in common more often than the thing asked about.
    pub hits: usize,
    /// A hit may match this many fewer distinctive words than the best.
    pub fewer_distinctive: usize,
    /// When no word of the question is distinctive, its rarest words are
    /// searched for if at most this share of the exchanges use them
    /// (`Some(2)`: half); `None`: nothing is.
    pub rarest_within: Option<u32>,
}

impl Reach {
    /// The session's own recall: the answer that says what happened and
    /// the output that shows it, each at its best line; the rest of the
    /// session is in the prompt's other layers.
    pub const OWN: Reach = Reach {
        texts: 2,
        lines_per_text: 1,
        hits: 3,
        fewer_distinctive: 0,
        rarest_within: None,
    };
    /// Project memory's: an earlier session has nothing else in the
    /// prompt, so its hit shows the lines of the exchange that match, and
    /// a few more hits are shown (a new session's question has less of
    /// its own context to narrow the words). A small project's earlier
    /// sessions may use every word of a question in more than a quarter of
    /// their exchanges (a project about cron files says `cron` often): the
    /// rarest of them still narrow the search, as long as at most half the
    /// exchanges use them.
    pub const PROJECT: Reach = Reach {
        texts: 3,
        lines_per_text: 3,
        hits: 5,
        fewer_distinctive: 1,
        rarest_within: Some(2),
    };
}

/// Words of a question that ask rather than point: how a person refers
/// back or asks for something, never what the thing was. Beside the filler
/// words headers leave out (`summary::is_stopword`).
#[rustfmt::skip]
const ASKING_WORDS: &[&str] = &[
    "again", "ago", "before", "after", "earlier", "later", "last", "first", "next", "previous",
    "one", "ones", "two", "more", "most", "other", "another", "same", "each", "every", "both",
    "asks", "ask", "asked", "tell", "told", "say", "said", "says", "show", "showed", "find",
    "found", "remind", "remember", "recall", "check", "look", "see", "saw", "seen", "know",
    "think", "thing", "things", "way", "time", "times", "exactly", "still", "yet", "back",
    "open", "change", "changed", "use", "used", "using", "work", "worked", "take", "took",
    "give", "gave", "put", "keep", "kept", "set", "try", "tried", "run", "ran", "new", "old",
    "good", "right", "wrong", "whole", "total", "anything", "something", "everything", "from",
    "should", "would", "than", "then", "them", "they", "over", "under", "only", "not", "no",
    "haha", "perfect", "agreed", "lovely", "great", "nice", "cool", "fine", "sense", "makes",
    "else", "everyone", "everybody", "lots", "bit", "name", "called", "mean", "meant", "said",
    "week", "today", "tomorrow", "yesterday", "thing", "stuff", "happen", "happened", "went",
];

/// The question's words a search can use: each distinct word (letters,
/// digits, `_`, inner `.` `-` `:`), lower-cased, not a filler word, in the
/// order they come. Empty when the question has none (`"Run it."`).
pub fn question_words(question: &str) -> Vec<String> {
    // An assistant's own notes in the message are not what is asked.
    let question = text::without_client_notes(question);
    let question = question.as_ref();
    let mut out: Vec<String> = Vec::new();
    // Apostrophes stay inside a word until the filler check (`didn't`).
    let apostrophe = |c: char| c == '\'' || c == '\u{2019}';
    for raw in question.split(|c: char| !(c.is_alphanumeric() || c == '_' || apostrophe(c))) {
        let raw = raw.trim_matches(apostrophe);
        if is_stopword(raw) {
            continue;
        }
        // A possessive points at its word (`Hamish's`); other contractions
        // are fillers.
        let raw = raw
            .strip_suffix("'s")
            .or(raw.strip_suffix("\u{2019}s"))
            .unwrap_or(raw);
        if raw.contains(apostrophe) {
            continue;
        }
        let word = raw.to_lowercase();
        let long_enough =
            word.chars().count() >= MIN_WORD_CHARS || word.chars().any(|c| c.is_ascii_digit());
        let asking = ASKING_WORDS.contains(&word.as_str());
        if word.is_empty() || !long_enough || asking || is_stopword(&word) || out.contains(&word) {
            continue;
        }
        out.push(word);
    }
    out
}

/// The most earlier exchanges a distinctive word may occur in, of
/// `exchanges`: a quarter of them, or two in a short session.
pub fn common_count(exchanges: u32) -> u32 {
    (exchanges / 4).max(2)
}

/// The question's words that occur in at least one of `exchanges` earlier
/// exchanges, rarest first; those in at most a quarter of them (or two, in
/// a short session) are `distinctive`, the words to search for. A word
/// every other exchange uses points at nothing by itself. When none is,
/// the rarest are, within `reach.rarest_within`.
pub fn weigh(words: Vec<RecallWord>, exchanges: u32, reach: Reach) -> Vec<RecallWord> {
    let common = common_count(exchanges);
    let mut out: Vec<RecallWord> = words
        .into_iter()
        .filter(|w| w.exchanges >= 1)
        .map(|w| RecallWord {
            distinctive: w.exchanges <= common,
            ..w
        })
        .collect();
    out.sort_by_key(|w| w.exchanges);
    let rarest = out.first().map(|w| w.exchanges);
    if let (false, Some(share), Some(rarest)) = (
        out.iter().any(|w| w.distinctive),
        reach.rarest_within,
        rarest,
    ) {
        if rarest <= exchanges / share {
            for w in out.iter_mut().take_while(|w| w.exchanges == rarest) {
                w.distinctive = true;
            }
        }
    }
    out
}

/// Whether a line that matched `matched` of the question's words is worth
/// its tokens: a distinctive word and another word of the question, or a
/// distinctive word that at most two earlier exchanges use (a name, an
/// error code, a hash).
pub fn relevant(matched: &[&RecallWord]) -> bool {
    matched.iter().any(|w| w.distinctive)
        && (matched.len() >= 2 || matched.iter().any(|w| w.exchanges <= 1))
}

/// The passage of one hit exchange: in each of its texts the line that
/// matches the most of the question's words (rarest first on ties,
/// earliest after that), and of those the best `reach.texts` that pass
/// `relevant`, each with the lines around it, at most `max_tokens` in all.
/// `None` when no line passes, or `max_tokens` is too few for a line. The
/// ids are `session`'s when the exchange is another session's.
pub fn passage(
    session: Option<&str>,
    exchange: ExchangeId,
    texts: &[RecallText],
    words: &[RecallWord],
    reach: Reach,
    enc: Encoding,
    max_tokens: u32,
) -> Option<RecallHit> {
    if max_tokens < MIN_PASSAGE_TOKENS {
        return None;
    }
    // Per text, its relevant lines best first.
    let mut best: Vec<(usize, Vec<MatchedLine>)> = Vec::new();
    for (t, text) in texts.iter().enumerate() {
        let mut lines: Vec<MatchedLine> = Vec::new();
        for (l, line) in text.text.lines().enumerate() {
            let lower = line.to_lowercase();
            let hits: Vec<usize> = (0..words.len())
                .filter(|&w| matches_word(&lower, &words[w].word))
                .collect();
            let matched: Vec<&RecallWord> = hits.iter().map(|&w| &words[w]).collect();
            if relevant(&matched) {
                lines.push((rank(&hits, words), l, hits));
            }
        }
        // Stable: lines of equal rank stay in order.
        lines.sort_by_key(|b| std::cmp::Reverse(b.0));
        lines.truncate(reach.lines_per_text);
        if !lines.is_empty() {
            best.push((t, lines));
        }
    }
    // Stable: texts of equal rank stay in message order.
    best.sort_by_key(|(_, lines)| std::cmp::Reverse(lines[0].0));
    best.truncate(reach.texts);
    let mut names: Vec<String> = Vec::new();
    let mut whole = String::new();
    for (t, lines) in &mut best {
        // A text's lines in its own order: read as the output runs.
        let mut shown: Vec<&MatchedLine> = lines.iter().collect();
        shown.sort_by_key(|(_, l, _)| *l);
        for (_, l, hits) in shown {
            for &w in hits {
                if !names.contains(&words[w].word) {
                    names.push(words[w].word.clone());
                }
            }
            whole.push_str(&quote(session, exchange, &texts[*t], *l, hits, words));
        }
    }
    let (strength, _, first) = best.first().map(|(_, lines)| &lines[0])?;
    let strength = (strength.0, strength.1);
    let first: Vec<&str> = first.iter().map(|&w| words[w].word.as_str()).collect();
    let head = format!(
        "{} ({}):\n",
        ids::qualified(session, exchange),
        first.join(", ")
    );
    let text = format!("{head}{whole}");
    let cut = tokens::truncate(enc, &text, max_tokens);
    Some(RecallHit {
        session: session.map(str::to_string),
        exchange,
        words: names,
        passage: Counted {
            tokens: tokens::count(enc, cut),
            text: cut.to_string(),
        },
        strength,
    })
}

/// One text's matching line with the lines around it (a tool output's) or
/// alone (a message's), under where to fetch more: the blob and its line
/// numbers, or the message id.
fn quote(
    session: Option<&str>,
    exchange: ExchangeId,
    text: &RecallText,
    l: usize,
    hits: &[usize],
    words: &[RecallWord],
) -> String {
    let lines: Vec<&str> = text.text.lines().collect();
    let (from, to) = match text.blob {
        Some(_) => (
            l.saturating_sub(CONTEXT_BEFORE),
            (l + CONTEXT_AFTER).min(lines.len() - 1),
        ),
        None => (l, l),
    };
    let mut out = match &text.blob {
        Some(blob) => format!(
            "{} {} lines {}-{}:\n",
            ids::qualified(session, exchange),
            ids::qualified(session, blob.short_id()),
            from + 1,
            to + 1
        ),
        None => format!("{}:\n", ids::qualified(session, text.message)),
    };
    let first_word = hits
        .iter()
        .map(|&w| words[w].word.as_str())
        .collect::<Vec<_>>();
    for (i, line) in lines[from..=to].iter().enumerate() {
        let shown = around_match(line, &first_word, LINE_CHARS);
        match text.blob {
            Some(_) => out.push_str(&format!("{:>5} | {shown}\n", from + i + 1)),
            None => out.push_str(&format!("{shown}\n")),
        }
    }
    out
}

/// `line` cut to `max` characters around the first place one of `words`
/// matches (from its start when none does), with `…` where it was cut.
fn around_match(line: &str, words: &[&str], max: usize) -> String {
    if line.chars().count() <= max {
        return line.to_string();
    }
    let lower = line.to_lowercase();
    let at = words
        .iter()
        .filter_map(|w| lower.find(&stem(w)))
        .min()
        .unwrap_or(0);
    // Byte offsets of the lower-cased line match the line's for ASCII; a
    // line with other characters is cut from its start.
    let at = if lower.len() == line.len() { at } else { 0 };
    let start_char = line[..at].chars().count().saturating_sub(max / 3);
    let kept: String = line.chars().skip(start_char).take(max).collect();
    let lead = if start_char > 0 { "…" } else { "" };
    let tail = if start_char + max < line.chars().count() {
        "…"
    } else {
        ""
    };
    format!("{lead}{kept}{tail}")
}

/// What stands in for a word's stem in `matches_word`.
fn stem(word: &str) -> String {
    let chars: Vec<char> = word.chars().collect();
    let keep = match chars.len() {
        0..=4 => chars.len(),
        n => (n - 2).max(4),
    };
    chars[..keep].iter().collect()
}

/// How good a line's matches are: more distinctive words first, then more
/// words, then rarer ones.
type Rank = (usize, usize, std::cmp::Reverse<u32>);

/// A line that passed the bar: its rank, its index and the words it matched.
type MatchedLine = (Rank, usize, Vec<usize>);

fn rank(hits: &[usize], words: &[RecallWord]) -> Rank {
    let distinctive = hits.iter().filter(|&&w| words[w].distinctive).count();
    let rarity = hits.iter().map(|&w| words[w].exchanges).sum::<u32>();
    (distinctive, hits.len(), std::cmp::Reverse(rarity))
}

/// Whether a lower-cased line holds `word` or a form of it: the search
/// stems words (Porter), so `warnings` finds `warning` and `failed` finds
/// `fails`; the word without its last two characters (at least four, or
/// the whole word when shorter) stands in for its stem.
fn matches_word(line: &str, word: &str) -> bool {
    line.match_indices(&stem(word)).any(|(at, _)| {
        // `_` separates words for the index too (`_LAST_NUMBER`).
        let before = line[..at].chars().next_back();
        before.is_none_or(|c| !c.is_alphanumeric())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(word: &str, exchanges: u32) -> RecallWord {
        RecallWord {
            word: word.into(),
            exchanges,
            distinctive: exchanges <= 4,
        }
    }

    #[test]
    fn question_words_leave_out_fillers_and_short_words() {
        assert_eq!(
            question_words("What was the vet warning about again, in v2 of main.go?"),
            ["vet", "warning", "v2", "main"]
        );
        assert_eq!(
            question_words("Which one did we open before the change?"),
            Vec::<String>::new()
        );
        assert!(question_words("Run it.").is_empty());
        assert_eq!(
            question_words("The one we didn't pick, for Hamish's film?"),
            ["pick", "hamish", "film"]
        );
    }

    #[test]
    fn words_are_weighed_by_how_few_earlier_exchanges_use_them() {
        let words = vec![w("test", 30), w("vet", 2), w("nowhere", 0), w("parser", 5)];
        let got: Vec<(String, bool)> = weigh(words, 40, Reach::OWN)
            .into_iter()
            .map(|w| (w.word, w.distinctive))
            .collect();
        assert_eq!(
            got,
            [
                ("vet".to_string(), true),
                ("parser".to_string(), true),
                ("test".to_string(), false)
            ]
        );
    }

    #[test]
    fn project_recall_searches_for_the_rarest_words_when_none_is_distinctive() {
        let weighed = |words: &[(&str, u32)], reach| -> Vec<(String, bool)> {
            let words = words.iter().map(|&(word, n)| w(word, n)).collect();
            weigh(words, 21, reach)
                .into_iter()
                .map(|w| (w.word, w.distinctive))
                .collect()
        };
        // Every word in more than a quarter of 21 exchanges.
        let common = [("file", 18), ("cron", 7), ("host", 7), ("naming", 11)];
        assert_eq!(
            weighed(&common, Reach::PROJECT),
            [
                ("cron".to_string(), true),
                ("host".to_string(), true),
                ("naming".to_string(), false),
                ("file".to_string(), false)
            ]
        );
        assert!(weighed(&common, Reach::OWN).iter().all(|(_, d)| !d));
        // The rarest in more than half: nothing to search for.
        assert!(weighed(&[("file", 18), ("test", 11)], Reach::PROJECT)
            .iter()
            .all(|(_, d)| !d));
        // A distinctive word: the others stay as they are.
        assert_eq!(
            weighed(&[("cron", 7), ("crontab", 2)], Reach::PROJECT),
            [("crontab".to_string(), true), ("cron".to_string(), false)]
        );
    }

    #[test]
    fn a_passage_is_the_lines_around_the_best_match_with_ids_to_fetch_more() {
        let output = (1..=20)
            .map(|i| match i {
                12 => "./parse.go:12:2: fmt.Printf format %d has arg name of wrong type string"
                    .to_string(),
                _ => format!("ok line {i}"),
            })
            .collect::<Vec<_>>()
            .join("\n");
        let id = |index| MessageId {
            exchange: ExchangeId(7),
            index,
        };
        let texts = [
            RecallText {
                message: id(2),
                blob: None,
                text: "Running go vet.".into(),
            },
            RecallText {
                message: id(3),
                blob: Some(BlobHash([0xab; 32])),
                text: output,
            },
            RecallText {
                message: id(4),
                blob: None,
                text: "vet flags the Printf format in parse.go.".into(),
            },
        ];
        let words = [w("printf", 1), w("vet", 2), w("format", 6)];
        let hit = passage(
            None,
            ExchangeId(7),
            &texts,
            &words,
            Reach::OWN,
            Encoding::O200kBase,
            400,
        )
        .unwrap();
        assert_eq!(
            hit.passage.text,
            "x7 (printf, vet, format):\nx7.4:\nvet flags the Printf format in parse.go.\n\
             x7 b3:abababababab lines 11-14:\n   11 | ok line 11\n   12 | ./parse.go:12:2: fmt.Printf format %d has arg name of wrong type string\n   13 | ok line 13\n   14 | ok line 14\n"
        );
        assert_eq!(hit.words, ["printf", "vet", "format"]);
    }

    #[test]
    fn a_long_line_is_cut_around_its_match() {
        let line = format!(
            "Successfully installed {} pytest-cov-7.1.0 zipp-3.0",
            "pkg-1.0 ".repeat(80)
        );
        let cut = around_match(&line, &["cov"], 60);
        assert!(cut.contains("pytest-cov-7.1.0"), "{cut}");
        assert!(cut.starts_with('…'));
    }

    #[test]
    fn a_single_common_word_is_below_the_bar() {
        let texts = [RecallText {
            message: MessageId {
                exchange: ExchangeId(2),
                index: 1,
            },
            blob: None,
            text: "the parser test".into(),
        }];
        let words = [w("parser", 4)];
        assert!(passage(
            None,
            ExchangeId(2),
            &texts,
            &words,
            Reach::OWN,
            Encoding::O200kBase,
            400
        )
        .is_none());
        let rare = [w("parser", 1)];
        assert!(passage(
            None,
            ExchangeId(2),
            &texts,
            &rare,
            Reach::OWN,
            Encoding::O200kBase,
            400
        )
        .is_some());
        let common = [w("the", 30), w("test", 20)];
        assert!(passage(
            None,
            ExchangeId(2),
            &texts,
            &common,
            Reach::OWN,
            Encoding::O200kBase,
            400
        )
        .is_none());
        let both = [w("parser", 4), w("test", 20)];
        assert!(passage(
            None,
            ExchangeId(2),
            &texts,
            &both,
            Reach::OWN,
            Encoding::O200kBase,
            400
        )
        .is_some());
    }

    #[test]
    fn a_word_matches_its_forms_but_not_inside_another_word() {
        assert!(matches_word("2 warnings emitted", "warning"));
        assert!(matches_word("test fails here", "failed"));
        assert!(!matches_word("prevent this", "vet"));
        assert!(matches_word("_last_number: classvar", "number"));
    }
}

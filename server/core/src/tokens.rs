//! The token counting facade: one place that knows the tokenizer.
//!
//! Counts are OpenAI's tiktoken counts exactly (special tokens counted as
//! ordinary text), by tiktoken's own algorithm: the text is cut into pieces
//! by its pre-tokenizer's patterns (`tokens/split`, `tokens/pattern`), and
//! each piece's bytes merge pair by pair in the order of the encoding's
//! ranks (`tokens/merge`). A long piece costs n log n, not n squared: a
//! 4 MB line without whitespace is counted, never sliced or estimated. The
//! ranks are tables in the binary (`tokens/ranks`), read in place, so a
//! process's first count costs what any count does (docs/PERFORMANCE.md has
//! the figures). Two per-thread caches make repeated work cheap without
//! changing a count: the counts of short pieces, and the last few counts of
//! large texts.

mod merge;
mod pattern;
mod ranks;
mod split;

use ranks::Ranks;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Encoding {
    #[default]
    O200kBase,
    Cl100kBase,
}

impl Encoding {
    pub const ALL: [Encoding; 2] = [Encoding::O200kBase, Encoding::Cl100kBase];

    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
        }
    }
}

crate::wire_name!(Encoding: O200kBase, Cl100kBase);

/// Builds what o200k's first count of text outside ASCII would wait for
/// (its pre-tokenizer's regex, a few milliseconds), as servers do on a
/// background thread at start: every ingest counts in o200k
/// (`exchange_record::counted_at_ingest`). Another encoding's regex is
/// built at its first use.
pub fn warm_up() {
    pattern::warm_up(Encoding::O200kBase);
}

/// The number of tokens of `text` in `encoding` (special tokens as ordinary text).
pub fn count(encoding: Encoding, text: &str) -> u32 {
    if text.len() < RECALL_MIN_BYTES {
        return count_pieces(encoding, text);
    }
    let key = (encoding, *blake3::hash(text.as_bytes()).as_bytes());
    let recalled = RECENT.with_borrow(|r| r.iter().flatten().find(|(k, _)| *k == key).map(|e| e.1));
    if let Some(n) = recalled {
        return n;
    }
    let n = count_pieces(encoding, text);
    RECENT.with_borrow_mut(|r| {
        r.rotate_right(1);
        r[0] = Some((key, n));
    });
    n
}

/// The sum of the counts of `text`'s pre-tokenized pieces, short pieces
/// recalled from this thread's cache.
fn count_pieces(encoding: Encoding, text: &str) -> u32 {
    let ranks = Ranks::of(encoding);
    PIECES.with_borrow_mut(|caches| {
        let slots = caches[encoding as usize]
            .get_or_insert_with(|| vec![([0; PIECE_KEY_BYTES], 0); PIECE_SLOTS].into_boxed_slice());
        split::split(encoding, text)
            .map(|piece| {
                let bytes = piece.as_bytes();
                // Every byte is a token of its own in both encodings.
                if bytes.len() == 1 {
                    return 1;
                }
                if bytes.len() >= PIECE_KEY_BYTES {
                    return merge::count(ranks, bytes) as u32;
                }
                let mut key = [0u8; PIECE_KEY_BYTES];
                key[0] = bytes.len() as u8;
                key[1..=bytes.len()].copy_from_slice(bytes);
                let slot = &mut slots[slot_of(&key)];
                if slot.0 != key {
                    *slot = (key, merge::count(ranks, bytes) as u32);
                }
                slot.1
            })
            .sum()
    })
}

/// Pieces (words, punctuation runs, indentation) repeat all through code,
/// logs and prose, and looking one up costs a fraction of encoding it, so
/// each thread keeps the counts of the short pieces it met last, as Hugging
/// Face's tokenizers keep a word cache. The cache is direct-mapped: a piece
/// of up to 16 bytes (keyed by its length and bytes) has one slot, and a
/// piece that is not there takes it; nothing grows or is rehashed, so text
/// whose pieces never repeat (base64) costs little more than without it.
const PIECE_KEY_BYTES: usize = 17;
const PIECE_SLOTS: usize = 1 << 14;

type PieceSlots = Box<[([u8; PIECE_KEY_BYTES], u32)]>;

thread_local! {
    static PIECES: std::cell::RefCell<[Option<PieceSlots>; 2]> =
        const { std::cell::RefCell::new([None, None]) };
}

/// A piece key's slot: its bytes folded into a word, spread by a
/// multiplication (Fibonacci hashing), the top bits kept.
fn slot_of(key: &[u8; PIECE_KEY_BYTES]) -> usize {
    let word = |i: usize| u64::from_le_bytes(key[i..i + 8].try_into().expect("8 bytes"));
    let folded = word(0) ^ word(8).rotate_left(29) ^ u64::from(key[16]).rotate_left(53);
    (folded.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - PIECE_SLOTS.trailing_zeros())) as usize
}

/// Texts are often counted twice in a row: ingest counts a tool output for
/// its blob, then its digester asks whether the output fits whole; a digest
/// is counted as it is finished, then again for the reply. Hashing is a
/// hundred times cheaper than counting, so the last few counts of texts of
/// 512 bytes or more are recalled by the text's BLAKE3 hash.
const RECALL_MIN_BYTES: usize = 512;

type Recalled = ((Encoding, [u8; 32]), u32);

thread_local! {
    static RECENT: std::cell::RefCell<[Option<Recalled>; 4]> =
        const { std::cell::RefCell::new([None; 4]) };
}

/// A prefix of `text` with at most `max` tokens, cut on a char boundary:
/// the whole text when it fits, otherwise the first tokens of its encoding
/// up to `max`, less the few that would end inside a character.
pub fn truncate(encoding: Encoding, text: &str, max: u32) -> &str {
    let ranks = Ranks::of(encoding);
    let max = max as usize;
    let mut used = 0;
    let mut start = 0;
    for piece in split::split(encoding, text) {
        let n = merge::count(ranks, piece.as_bytes());
        if used + n <= max {
            used += n;
            start += piece.len();
            continue;
        }
        // The cut falls in this piece: after as many of its tokens as fit.
        // Candidate ends, longest first; each is checked by counting the
        // prefix itself, so the cap holds whatever the pre-tokenizer makes
        // of the shortened text.
        let ends = merge::token_ends(ranks, piece.as_bytes());
        let ends = std::iter::once(start).chain(ends.iter().take(max - used).map(|e| start + e));
        let fits = |&end: &usize| {
            text.is_char_boundary(end) && count_pieces(encoding, &text[..end]) as usize <= max
        };
        return match ends.rev().find(fits) {
            Some(end) => &text[..end],
            // Even the pieces before the cut recount over `max` (a
            // pre-tokenizer look-ahead changed at the new end): back off
            // char by char; this terminates at the empty prefix.
            None => {
                let end = text[..start]
                    .char_indices()
                    .map(|(i, _)| i)
                    .rev()
                    .find(|&i| count_pieces(encoding, &text[..i]) as usize <= max)
                    .unwrap_or(0);
                &text[..end]
            }
        };
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn counts_ordinary_text() {
        assert_eq!(count(Encoding::O200kBase, "hello world"), 2);
        assert_eq!(count(Encoding::Cl100kBase, "hello world"), 2);
        assert_eq!(count(Encoding::O200kBase, ""), 0);
    }

    #[test]
    fn truncate_respects_cap_and_boundaries() {
        let text = "alpha beta gamma delta epsilon zeta eta theta";
        let total = count(Encoding::O200kBase, text);
        for max in 0..12 {
            let cut = truncate(Encoding::O200kBase, text, max);
            assert!(text.starts_with(cut));
            assert_eq!(count(Encoding::O200kBase, cut), max.min(total));
        }
        assert_eq!(truncate(Encoding::O200kBase, text, 100), text);
    }

    #[test]
    fn truncate_cuts_inside_a_long_run() {
        let run = "x".repeat(100_000);
        for encoding in Encoding::ALL {
            let cut = truncate(encoding, &run, 50);
            assert_eq!(count(encoding, cut), 50, "{encoding:?}");
        }
    }

    /// Text that exercises the pre-tokenizer: words, contractions, digits,
    /// runs of spaces and newlines, punctuation, and multi-byte characters
    /// that byte-level tokens split.
    fn text_strategy() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                "[a-zA-Z]{1,12}",
                "[0-9]{1,7}",
                "[ \t\n\r]{1,5}",
                "[.,;:(){}<>'\"/\\\\+=-]{1,4}",
                "('s|'LL|'ve|n't)",
                "[é漢字🦀ü\u{0301}\u{3000}]{1,4}",
                "[A-Za-z0-9+/]{20,400}",
            ],
            0..24,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// The cut is a prefix within the cap; the whole text when it fits;
        /// otherwise it loses at most the tokens of one split character.
        #[test]
        fn truncate_is_a_prefix_within_the_cap(text in text_strategy(), max in 0u32..60, cl100k in any::<bool>()) {
            let encoding = if cl100k { Encoding::Cl100kBase } else { Encoding::O200kBase };
            let cut = truncate(encoding, &text, max);
            prop_assert!(text.starts_with(cut));
            let n = count(encoding, cut);
            prop_assert!(n <= max, "{n} > {max} for {cut:?}");
            let total = count(encoding, &text);
            if total <= max {
                prop_assert_eq!(cut, text.as_str());
            } else {
                prop_assert!(n + 3 >= max, "{n} tokens of {max} kept from {text:?}");
            }
        }
    }
}

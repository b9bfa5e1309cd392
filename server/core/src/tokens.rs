//! The token counting facade: one place that knows the tokenizer.
//!
//! Counts use tiktoken's shared singletons. BPE cost grows faster than linearly
//! with the length of one pre-token, so a long run without whitespace (minified
//! code, base64, a 4 MB line) is counted in fixed slices: the count of such a
//! run may differ from the reference tokenizer by a token per slice, and the
//! time stays linear in the input.

use tiktoken_rs::CoreBPE;

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

    pub fn parse(s: &str) -> Option<Encoding> {
        match s {
            "o200k_base" => Some(Encoding::O200kBase),
            "cl100k_base" => Some(Encoding::Cl100kBase),
            _ => None,
        }
    }

    fn bpe(self) -> &'static CoreBPE {
        match self {
            Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
            Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
        }
    }
}

/// Runs of non-whitespace longer than this many bytes are counted in slices.
const LONG_RUN_BYTES: usize = 256;

/// Splits `text` into pieces whose token counts add up: ordinary text stays
/// whole, long runs without whitespace are cut into `LONG_RUN_BYTES` slices.
fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut pos = 0;
    let mut plain_start = 0;
    std::iter::from_fn(move || {
        while pos < bytes.len() {
            if bytes[pos].is_ascii_whitespace() {
                pos += 1;
                continue;
            }
            let run_start = pos;
            while pos < bytes.len() && !bytes[pos].is_ascii_whitespace() {
                pos += 1;
            }
            if pos - run_start > LONG_RUN_BYTES {
                // Emit the plain text before the run, then the run in slices.
                if plain_start < run_start {
                    let piece = &text[plain_start..run_start];
                    plain_start = run_start;
                    pos = run_start;
                    return Some(piece);
                }
                let mut end = (run_start + LONG_RUN_BYTES).min(bytes.len());
                while !text.is_char_boundary(end) {
                    end += 1;
                }
                plain_start = end;
                pos = end;
                return Some(&text[run_start..end]);
            }
        }
        if plain_start < bytes.len() {
            let piece = &text[plain_start..];
            plain_start = bytes.len();
            return Some(piece);
        }
        None
    })
}

/// Loads both tokenizers' tables (a few hundred ms) so the first count
/// does not pay for it; servers call this on a background thread at start.
pub fn warm_up() {
    for e in Encoding::ALL {
        e.bpe();
    }
}

/// The number of tokens of `text` in `encoding` (special tokens as ordinary text).
pub fn count(encoding: Encoding, text: &str) -> u32 {
    let bpe = encoding.bpe();
    pieces(text).map(|p| bpe.count_ordinary(p) as u32).sum()
}

/// The longest prefix of `text` that has at most `max` tokens, cut on a token
/// boundary that is also a char boundary.
pub fn truncate(encoding: Encoding, text: &str, max: u32) -> &str {
    let bpe = encoding.bpe();
    let mut used = 0u32;
    let mut end = 0usize;
    for piece in pieces(text) {
        let n = bpe.count_ordinary(piece) as u32;
        if used + n <= max {
            used += n;
            end += piece.len();
            continue;
        }
        // Take tokens one by one from this piece until the cap.
        let tokens = bpe.encode_ordinary(piece);
        let room = (max - used) as usize;
        let mut best = 0;
        for k in (1..=room.min(tokens.len())).rev() {
            if let Ok(prefix) = bpe.decode(&tokens[..k]) {
                if piece.starts_with(&prefix) {
                    best = prefix.len();
                    break;
                }
            }
        }
        end += best;
        break;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_match_reference_on_ordinary_text() {
        // Reference counts from js-tiktoken for the same strings.
        assert_eq!(count(Encoding::O200kBase, "hello world"), 2);
        assert_eq!(count(Encoding::Cl100kBase, "hello world"), 2);
        assert_eq!(count(Encoding::O200kBase, ""), 0);
    }

    #[test]
    fn long_runs_are_sliced_but_whitespace_text_is_whole() {
        let run = "a".repeat(1000);
        let text = format!("fn main() {{ {run} }}");
        let joined: String = pieces(&text).collect();
        assert_eq!(joined, text);
        assert!(pieces(&text).all(|p| p.len() <= LONG_RUN_BYTES || p.contains(' ')));
        let plain = "one two three\nfour five";
        assert_eq!(pieces(plain).collect::<Vec<_>>(), vec![plain]);
    }

    #[test]
    fn multibyte_runs_slice_on_char_boundaries() {
        let text = "é".repeat(400);
        assert_eq!(pieces(&text).collect::<String>(), text);
        assert!(count(Encoding::O200kBase, &text) > 0);
    }

    #[test]
    fn truncate_respects_cap_and_boundaries() {
        let text = "alpha beta gamma delta epsilon zeta eta theta";
        for max in 0..12 {
            let cut = truncate(Encoding::O200kBase, text, max);
            assert!(text.starts_with(cut));
            assert!(count(Encoding::O200kBase, cut) <= max);
        }
        assert_eq!(truncate(Encoding::O200kBase, text, 100), text);
    }
}

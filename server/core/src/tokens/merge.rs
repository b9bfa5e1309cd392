//! Tiktoken's byte-pair merge of one piece: the piece starts as its bytes,
//! and, while two adjacent parts together are a token, the pair whose token
//! has the lowest rank (the leftmost of equals) becomes one part. A piece
//! that is a token whole is that token, as tiktoken looks it up before
//! merging. The same rule on the same ranks gives tiktoken's tokens.
//!
//! Short pieces rescan their parts for each merge, as tiktoken does: that
//! is quadratic in the piece but cheapest while it is short. Longer pieces
//! (a run of letters, spaces or punctuation) keep their candidate merges in
//! a binary heap ordered by rank then position, which picks the same merge
//! at each step in logarithmic time, so a run of 100,000 letters costs
//! what 100,000 bytes of prose cost, within a small factor.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::ranks::Ranks;

/// The longest piece merged by rescanning (a proptest checks both ways
/// agree on pieces up to it).
const RESCAN_MAX: usize = 64;

/// No token: a pair that does not merge.
const NONE: u32 = u32::MAX;

/// The number of tokens of `piece`.
pub(super) fn count(ranks: &Ranks, piece: &[u8]) -> usize {
    let mut n = 0;
    merge(ranks, piece, |_| n += 1);
    n
}

/// Where each token of `piece` ends, in order.
pub(super) fn token_ends(ranks: &Ranks, piece: &[u8]) -> Vec<usize> {
    let mut ends = Vec::new();
    merge(ranks, piece, |end| ends.push(end));
    ends
}

/// Calls `end` with the end of each token of `piece`, in order.
fn merge(ranks: &Ranks, piece: &[u8], mut end: impl FnMut(usize)) {
    match piece.len() {
        0 => {}
        1 => end(1),
        n if ranks.rank(piece).is_some() => end(n),
        n if n <= RESCAN_MAX => rescanning(ranks, piece, end),
        _ => queued(ranks, piece, end),
    }
}

/// Tiktoken's own loop: each merge scans every pair for the lowest rank.
fn rescanning(ranks: &Ranks, piece: &[u8], mut end: impl FnMut(usize)) {
    // Each part's start and the rank of it merged with the next part; the
    // piece's end closes the list as a part of its own.
    let mut parts = [(0u32, NONE); RESCAN_MAX + 1];
    let mut len = piece.len() + 1;
    for (i, part) in parts[..len].iter_mut().enumerate() {
        part.0 = i as u32;
    }
    let pair = |parts: &[(u32, u32)], i: usize| match parts.get(i + 2) {
        Some(after) => ranks
            .rank(&piece[parts[i].0 as usize..after.0 as usize])
            .unwrap_or(NONE),
        None => NONE,
    };
    for i in 0..len - 2 {
        parts[i].1 = pair(&parts[..len], i);
    }
    loop {
        let (i, rank) = parts[..len - 1]
            .iter()
            .enumerate()
            .min_by_key(|(_, part)| part.1)
            .map(|(i, part)| (i, part.1))
            .expect("a part");
        if rank == NONE {
            break;
        }
        parts.copy_within(i + 2..len, i + 1);
        len -= 1;
        parts[i].1 = pair(&parts[..len], i);
        if i > 0 {
            parts[i - 1].1 = pair(&parts[..len], i - 1);
        }
    }
    for part in &parts[1..len] {
        end(part.0 as usize);
    }
}

/// The same merges, the lowest-ranked pair taken from a heap: parts are
/// linked by their starts, and a heap entry whose pair has changed since it
/// was pushed (a part merged into its neighbour) is skipped when it comes
/// up. A pair's bytes only grow, so its rank never comes back to an old
/// value, and an entry is current exactly when its rank is the pair's.
fn queued(ranks: &Ranks, piece: &[u8], mut end: impl FnMut(usize)) {
    let n = piece.len();
    // The part that starts at byte s is parts[s], its links and its pair's
    // rank side by side: a merge reads and writes a few neighbouring parts.
    let mut parts: Vec<Part> = (0..n as u32)
        .map(|s| Part {
            next: s + 1,
            prev: s.saturating_sub(1),
            rank: NONE,
        })
        .collect();
    let pair = |parts: &[Part], s: usize| match parts[s].next as usize {
        after if after < n => {
            let end = parts.get(after).map_or(n, |p| p.next as usize);
            ranks.rank(&piece[s..end]).unwrap_or(NONE)
        }
        _ => NONE,
    };
    // Entries are rank then start in one integer, the smallest first.
    let entry = |rank: u32, s: usize| Reverse(u64::from(rank) << 32 | s as u64);
    for s in 0..n - 1 {
        parts[s].rank = pair(&parts, s);
    }
    let mut heap: BinaryHeap<_> = (parts.iter().enumerate())
        .filter(|(_, part)| part.rank != NONE)
        .map(|(s, part)| entry(part.rank, s))
        .collect();
    while let Some(Reverse(top)) = heap.pop() {
        let (rank, s) = ((top >> 32) as u32, top as u32 as usize);
        if parts[s].rank != rank {
            continue;
        }
        let merged = parts[s].next as usize;
        parts[merged].rank = NONE;
        parts[s].next = parts[merged].next;
        let after = parts[s].next as usize;
        if let Some(after) = parts.get_mut(after) {
            after.prev = s as u32;
        }
        let before = parts[s].prev as usize;
        for s in [s].into_iter().chain((s > 0).then_some(before)) {
            parts[s].rank = pair(&parts, s);
            if parts[s].rank != NONE {
                heap.push(entry(parts[s].rank, s));
            }
        }
    }
    let mut s = 0;
    while s < n {
        s = parts[s].next as usize;
        end(s);
    }
}

/// A part of a piece being merged, by where it starts: where the next part
/// starts (the piece's length after the last), where the part before
/// starts, and the rank of it merged with the next (NONE when they do not
/// merge, or when it no longer starts a part).
struct Part {
    next: u32,
    prev: u32,
    rank: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Encoding;
    use proptest::prelude::*;

    fn ends_by(piece: &[u8], f: fn(&Ranks, &[u8], &mut dyn FnMut(usize))) -> Vec<usize> {
        let mut ends = Vec::new();
        f(Ranks::of(Encoding::O200kBase), piece, &mut |end| {
            ends.push(end)
        });
        ends
    }

    /// bpe-openai's tokens of `piece` in `encoding`, as their ends.
    fn theirs(encoding: Encoding, piece: &[u8]) -> Vec<usize> {
        let bpe = match encoding {
            Encoding::O200kBase => &bpe_openai::o200k_base().bpe,
            Encoding::Cl100kBase => &bpe_openai::cl100k_base().bpe,
        };
        let mut end = 0;
        bpe.encode_via_backtracking(piece)
            .into_iter()
            .map(|t| {
                end += bpe.token_len(t);
                end
            })
            .collect()
    }

    fn check(encoding: Encoding, piece: &[u8]) {
        let ours = token_ends(Ranks::of(encoding), piece);
        assert_eq!(ours, theirs(encoding, piece), "{encoding:?} {piece:?}");
        assert_eq!(count(Ranks::of(encoding), piece), ours.len());
    }

    #[test]
    fn merges_as_bpe_openai() {
        let long_run = "ab".repeat(5_000);
        for piece in [
            "x",
            " hello",
            "strawberry",
            "    ",
            "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!",
            "漢字仮名",
            "e\u{301}e\u{301}",
            "aGVsbG8gd29ybGQgaGVsbG8gd29ybGQgaGVsbG8gd29ybGQgaGVsbG8gd29ybGQgaGVsbG8gd29ybGQ",
            &long_run,
        ] {
            for encoding in Encoding::ALL {
                check(encoding, piece.as_bytes());
            }
        }
    }

    /// Pieces that merge a lot: runs from a few letters, spaces, marks and
    /// bytes of characters outside ASCII.
    fn piece_strategy(max: usize) -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(
            prop_oneof![
                "[ab]{1,3}",
                "[a-z]{1,8}",
                "[ ]{1,4}",
                "[=*#-]{1,4}",
                "[é漢🦀]",
                "[A-Za-z0-9+/]{1,6}",
            ],
            1..max,
        )
        .prop_map(|parts| parts.concat().into_bytes())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// The heap picks the merges tiktoken's rescanning loop picks.
        #[test]
        fn queued_merges_as_rescanning(piece in piece_strategy(24)) {
            let piece = &piece[..piece.len().min(RESCAN_MAX)];
            prop_assume!(piece.len() >= 2);
            prop_assert_eq!(ends_by(piece, |r, p, e| queued(r, p, e)), ends_by(piece, |r, p, e| rescanning(r, p, e)));
        }

        /// Both ways give bpe-openai's tokens, on pieces short and long.
        #[test]
        fn tokens_are_bpe_openais(piece in piece_strategy(200), cl100k in any::<bool>()) {
            let encoding = if cl100k { Encoding::Cl100kBase } else { Encoding::O200kBase };
            check(encoding, &piece);
        }
    }
}

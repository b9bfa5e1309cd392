//! An encoding's mergeable ranks, tiktoken's token -> rank map (a token's
//! rank is its id), as `build.rs` lays them out in the binary: the tokens'
//! bytes end to end, where each one starts, an open-addressing hash table
//! of slots (`ranks/layout`), and the rank of every two-byte string, which
//! every merge looks up first for each pair of bytes (256 KB, where the
//! hash table and the tokens it points to are megabytes: a byte pair's
//! rank is one read, mostly from cache). Nothing is built or unpacked at
//! run time: a lookup reads the few pages of the binary it needs, so a
//! process's first count costs what any count costs.

mod layout;

use super::Encoding;

pub(super) use layout::LONGEST_TOKEN;

pub(super) struct Ranks {
    /// Every token's bytes, in rank order, end to end.
    tokens: &'static [u8],
    /// Where each token starts in `tokens`, and where the last ends: a
    /// little-endian `u32` each.
    starts: &'static [u8],
    /// `2^slot_bits` little-endian `u32` slots.
    slots: &'static [u8],
    slot_bits: u32,
    /// The rank of each two-byte string `[a, b]` at `a * 256 + b`, or
    /// `u32::MAX`: a little-endian `u32` each.
    pairs: &'static [u8],
}

macro_rules! table {
    ($name:literal) => {
        Ranks::new(
            include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".tokens")),
            include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".starts")),
            include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".slots")),
            include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".pairs")),
        )
    };
}

static O200K_BASE: Ranks = table!("o200k_base");
static CL100K_BASE: Ranks = table!("cl100k_base");

impl Ranks {
    pub(super) fn of(encoding: Encoding) -> &'static Ranks {
        match encoding {
            Encoding::O200kBase => &O200K_BASE,
            Encoding::Cl100kBase => &CL100K_BASE,
        }
    }

    const fn new(
        tokens: &'static [u8],
        starts: &'static [u8],
        slots: &'static [u8],
        pairs: &'static [u8],
    ) -> Ranks {
        let slot_count = slots.len() / 4;
        assert!(slot_count.is_power_of_two(), "a power of two of slots");
        assert!(pairs.len() == 4 << 16, "a rank for each two-byte string");
        Ranks {
            tokens,
            starts,
            slots,
            slot_bits: slot_count.trailing_zeros(),
            pairs,
        }
    }

    /// The rank of the token whose bytes are `bytes`, if one is.
    pub(super) fn rank(&self, bytes: &[u8]) -> Option<u32> {
        match bytes.len() {
            2 => Some(word(
                self.pairs,
                usize::from(bytes[0]) << 8 | usize::from(bytes[1]),
            ))
            .filter(|&rank| rank != u32::MAX),
            n if n > LONGEST_TOKEN => None,
            _ => self.hashed_rank(bytes),
        }
    }

    /// `rank`, through the hash table.
    fn hashed_rank(&self, bytes: &[u8]) -> Option<u32> {
        let hash = layout::hash(bytes);
        let mask = (1 << self.slot_bits) - 1;
        let mut at = layout::home(hash, self.slot_bits);
        loop {
            let slot = word(self.slots, at);
            if layout::is_empty(slot) {
                return None;
            }
            match layout::rank_if_tagged(slot, hash) {
                Some(rank) if self.token(rank) == bytes => return Some(rank),
                _ => at = (at + 1) & mask,
            }
        }
    }

    /// The bytes of the token of rank `rank`.
    pub(super) fn token(&self, rank: u32) -> &'static [u8] {
        let rank = rank as usize;
        &self.tokens[word(self.starts, rank) as usize..word(self.starts, rank + 1) as usize]
    }

    /// How many tokens the encoding has.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.starts.len() / 4 - 1
    }
}

/// The `i`th little-endian `u32` of `bytes` (`include_bytes!` promises no
/// alignment, so the table is read as bytes).
fn word(bytes: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().expect("4 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every token of bpe-openai's tables (tiktoken's, its ids the ranks)
    /// is found at its rank, and byte strings that are no token are not.
    #[test]
    fn ranks_are_bpe_openais_token_ids() {
        for (encoding, theirs) in [
            (Encoding::O200kBase, bpe_openai::o200k_base()),
            (Encoding::Cl100kBase, bpe_openai::cl100k_base()),
        ] {
            let ours = Ranks::of(encoding);
            assert_eq!(ours.len(), theirs.bpe.num_tokens(), "{encoding:?}");
            for id in 0..theirs.bpe.num_tokens() as u32 {
                let bytes = theirs.bpe.token_bytes(id);
                assert_eq!(ours.token(id), bytes, "{encoding:?} {id}");
                assert_eq!(ours.rank(bytes), Some(id), "{encoding:?} {bytes:?}");
            }
            for no_token in [
                &b"xq7Zk\x00\xff"[..],
                &b"\xff\xfe"[..],
                "漢字仮名한국어éü".as_bytes(),
                &[b'a'; LONGEST_TOKEN + 1],
            ] {
                assert_eq!(ours.rank(no_token), None, "{encoding:?} {no_token:?}");
            }
        }
    }
}

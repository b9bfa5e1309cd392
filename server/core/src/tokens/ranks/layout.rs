//! How a rank table's slots are laid out: `build.rs` writes the tables with
//! these functions and `tokens/ranks` reads them, so both sides hash and
//! place a token the same way.
//!
//! A slot is a `u32`: the token's rank plus one in the low `RANK_BITS` (0:
//! an empty slot), and bits of its hash above them, so that most probes of
//! a byte string that is no token end without reading any token's bytes.

/// The longest token of o200k_base and cl100k_base, in bytes (`build.rs`
/// checks every token against it): a longer byte string is no token, and is
/// not hashed.
pub const LONGEST_TOKEN: usize = 128;

/// Ranks below 2^18 (o200k_base has 199,998 tokens).
const RANK_BITS: u32 = 18;
const RANK_MASK: u32 = (1 << RANK_BITS) - 1;

/// A byte string's hash: eight bytes at a time, multiplied and rotated
/// (FxHash's step), then mixed so that the high bits, which pick the home
/// slot, depend on every byte.
pub fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0xf135_7aea_2e62_a9c5;
    let step = |h: u64, word: u64| (h.rotate_left(26) ^ word).wrapping_mul(K);
    let mut h = (bytes.len() as u64).wrapping_mul(K);
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        h = step(h, u64::from_le_bytes(word.try_into().expect("8 bytes")));
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        h = step(h, u64::from_le_bytes(word));
    }
    (h ^ (h >> 29)).wrapping_mul(K)
}

/// The slot a hash probes first, in a table of `2^bits` slots.
pub fn home(hash: u64, bits: u32) -> usize {
    (hash >> (64 - bits)) as usize
}

/// The slot that holds `rank`, a token of hash `hash`.
#[allow(
    dead_code,
    reason = "build.rs writes the slots; the library reads them"
)]
pub fn slot(rank: u32, hash: u64) -> u32 {
    assert!(
        rank < RANK_MASK,
        "rank {rank} needs more than {RANK_BITS} bits"
    );
    tag(hash) | (rank + 1)
}

/// The rank a slot holds, if its hash bits are `hash`'s (`None` for an
/// empty slot too).
pub fn rank_if_tagged(slot: u32, hash: u64) -> Option<u32> {
    let rank = slot & RANK_MASK;
    (rank != 0 && slot & !RANK_MASK == tag(hash)).then(|| rank - 1)
}

/// Whether a slot is empty: a probe ends there.
pub fn is_empty(slot: u32) -> bool {
    slot == 0
}

/// The hash's low bits, in the slot's high bits (the home slot comes from
/// its high bits, so these tell apart tokens that probe the same slots).
fn tag(hash: u64) -> u32 {
    (hash as u32) & !RANK_MASK
}

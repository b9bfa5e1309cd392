//! Lays out the mergeable ranks of o200k_base and cl100k_base as
//! `$OUT_DIR/{name}.{tokens,starts,slots}`, which `src/tokens/ranks.rs`
//! embeds and reads in place (the layout of a slot is
//! `src/tokens/ranks/layout.rs`, shared with it).
//!
//! The tokens are bpe-openai's (tiktoken's, a token's id its rank), read
//! from the crate. Per encoding:
//!   tokens: every token's bytes, in rank order, end to end
//!   starts: where each token starts in `tokens`, and where the last ends
//!     (u32, little-endian)
//!   slots: an open-addressing hash table of 2^k slots (u32, little-endian),
//!     at most 40% full, probed linearly from a token's home slot
//!   pairs: the rank of each two-byte string [a, b] at a * 256 + b, or
//!     u32::MAX (u32, little-endian)

use std::path::PathBuf;

#[allow(dead_code)]
#[path = "src/tokens/ranks/layout.rs"]
mod layout;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=src/tokens/ranks/layout.rs");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR is set during build"));
    for (name, tokenizer) in [
        ("o200k_base", bpe_openai::o200k_base()),
        ("cl100k_base", bpe_openai::cl100k_base()),
    ] {
        let tokens: Vec<&[u8]> = (0..tokenizer.bpe.num_tokens() as u32)
            .map(|id| tokenizer.bpe.token_bytes(id))
            .collect();
        let write = |ext: &str, bytes: &[u8]| {
            std::fs::write(out.join(format!("{name}.{ext}")), bytes).expect("OUT_DIR is writable")
        };
        write("tokens", &tokens.concat());
        let mut starts = vec![0u32];
        for token in &tokens {
            assert!(token.len() <= layout::LONGEST_TOKEN, "{name}: {token:?}");
            starts.push(starts.last().expect("a start") + token.len() as u32);
        }
        write("starts", &le_bytes(&starts));
        write("slots", &le_bytes(&slots(&tokens)));
        let mut pairs = vec![u32::MAX; 1 << 16];
        for (rank, token) in tokens.iter().enumerate() {
            if let &[a, b] = *token {
                pairs[usize::from(a) << 8 | usize::from(b)] = rank as u32;
            }
        }
        write("pairs", &le_bytes(&pairs));
    }
}

/// The hash table: each token in the first empty slot from its home.
fn slots(tokens: &[&[u8]]) -> Vec<u32> {
    let bits = (tokens.len() * 5 / 2).next_power_of_two().trailing_zeros();
    let mut slots = vec![0u32; 1 << bits];
    let mask = slots.len() - 1;
    for (rank, token) in tokens.iter().enumerate() {
        let hash = layout::hash(token);
        let mut at = layout::home(hash, bits);
        while !layout::is_empty(slots[at]) {
            at = (at + 1) & mask;
        }
        slots[at] = layout::slot(rank as u32, hash);
    }
    slots
}

fn le_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

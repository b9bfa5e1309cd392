//! Packs the byte-pair encodings of o200k_base and cl100k_base into
//! `$OUT_DIR/{name}.bpe.zst`, which `src/tokens/tables.rs` embeds and
//! unpacks at an encoding's first use.
//!
//! The tables are bpe-openai's own (its `BytePairEncoding`, read here from
//! the crate), so the counts are the same by construction. bpe-openai embeds
//! them as 47 MB of MessagePack, which made a 65 MB stripped binary; this
//! keeps what is expensive to rebuild (the three Aho-Corasick automata, 3 s
//! to build for o200k, and the merge table) with the tokens, and compresses
//! them with zstd: 13.4 MB. The token hash map, the pair map and the
//! next-prefix table are recomputed at first use from the tokens.
//!
//! The packed layout (little-endian), compressed as one zstd frame:
//!   u64 hash factor
//!   u32 token count n, then n bytes: each token's length
//!   u32 length, the tokens' bytes concatenated
//!   u32 length, the longest-match automaton (daachorse's serialization)
//!   u32 length, the overlapping automaton XOR the longest-match one (same length)
//!   u32 length, the reversed overlapping automaton
//!   u32 length, the merge table: for each token the pair it merges from
//!     (u32, u32), or itself twice

use std::path::PathBuf;

use serde::de::{Deserializer, IgnoredAny, Visitor};
use serde::Deserialize;

/// Level 19 keeps the packed tables at 13.4 MB, which takes a minute of
/// this script; levels up to 15 are much faster and about 3 MB larger, so
/// debug builds (tests, CI) use 3: the tables are the same once unpacked.
fn zstd_level() -> i32 {
    match std::env::var("PROFILE").as_deref() {
        Ok("release") => 19,
        _ => 3,
    }
}

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR is set during build"));
    for (name, tokenizer) in [
        ("o200k_base", bpe_openai::o200k_base()),
        ("cl100k_base", bpe_openai::cl100k_base()),
    ] {
        let serialized = rmp_serde::to_vec(&tokenizer.bpe).expect("the tables serialize");
        let parts: Parts = rmp_serde::from_slice(&serialized).expect("the tables read back");
        let packed = pack(&parts);
        let compressed = zstd::bulk::compress(&packed, zstd_level()).expect("zstd compresses");
        std::fs::write(out.join(format!("{name}.bpe.zst")), compressed)
            .expect("OUT_DIR is writable");
    }
}

fn pack(parts: &Parts) -> Vec<u8> {
    let mut packed = Vec::new();
    packed.extend_from_slice(&parts.hash_factor.to_le_bytes());
    let n = parts.token_starts.len() - 1;
    packed.extend_from_slice(&(n as u32).to_le_bytes());
    for w in parts.token_starts.windows(2) {
        let len = w[1] - w[0];
        assert!((1..256).contains(&len), "a token of {len} bytes");
        packed.push(len as u8);
    }
    let section = |packed: &mut Vec<u8>, bytes: &[u8]| {
        packed.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        packed.extend_from_slice(bytes);
    };
    section(&mut packed, &parts.all_tokens);
    section(&mut packed, &parts.longest_searcher.0);
    assert_eq!(
        parts.overlapping_searcher.0.len(),
        parts.longest_searcher.0.len()
    );
    let xor: Vec<u8> = parts
        .overlapping_searcher
        .0
        .iter()
        .zip(&parts.longest_searcher.0)
        .map(|(a, b)| a ^ b)
        .collect();
    section(&mut packed, &xor);
    section(&mut packed, &parts.overlapping_searcher_rev.0);
    let split: Vec<u8> = parts
        .split_table
        .iter()
        .flat_map(|&(a, b)| [a.to_le_bytes(), b.to_le_bytes()])
        .flatten()
        .collect();
    section(&mut packed, &split);
    packed
}

/// `bpe::byte_pair_encoding::BytePairEncoding`'s fields, in its order, as
/// its `Serialize` writes them; the ones recomputed at first use are skipped.
#[derive(Deserialize)]
struct Parts {
    all_tokens: Vec<u8>,
    token_starts: Vec<u32>,
    _bytes_hash_to_token: IgnoredAny,
    split_table: Vec<(u32, u32)>,
    _pair_lookup: IgnoredAny,
    longest_searcher: Bytes,
    overlapping_searcher: Bytes,
    overlapping_searcher_rev: Bytes,
    _next_prefix_match: IgnoredAny,
    hash_factor: u64,
}

struct Bytes(Vec<u8>);

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Bytes;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("bytes")
            }
            fn visit_bytes<E>(self, v: &[u8]) -> Result<Bytes, E> {
                Ok(Bytes(v.to_vec()))
            }
        }
        d.deserialize_bytes(V)
    }
}

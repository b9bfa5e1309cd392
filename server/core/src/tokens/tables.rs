//! The tokenizers, built at an encoding's first use from the tables
//! `build.rs` packed: the tokens, the three Aho-Corasick automata and the
//! merge table of bpe-openai's `BytePairEncoding`, zstd-compressed in the
//! binary (13.4 MB for both encodings, where bpe-openai embeds 47 MB of
//! MessagePack). The parts that are cheap to rebuild (the token hash map, the
//! next-prefix table, the pair map) are recomputed here as
//! `BytePairEncoding::from_dictionary` computes them, and the whole is handed
//! to its `Deserialize`, so the encoder is bpe-openai's, field for field (a
//! test compares the two). The pre-tokenizer patterns are bpe-openai's too.
//!
//! First use costs about 0.4 s for o200k and 0.15 s for cl100k (bpe-openai's
//! own tables: 0.1 s and 0.04 s; `examples/token_tables.rs`); servers load
//! o200k on a background thread at start (`tokens::warm_up`).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use bpe_openai::byte_pair_encoding::BytePairEncoding;
use bpe_openai::Tokenizer;
use serde::{Serialize, Serializer};

use super::Encoding;

static O200K_BASE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.bpe.zst"));
static CL100K_BASE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.bpe.zst"));

/// bpe-openai's patterns: tiktoken's, with the negative look-ahead
/// `\s+(?!\S)` rewritten as a one-character look-ahead pattern.
const CL100K_PATTERN: &str = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+$";
const O200K_PATTERN: &str = concat!(
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    "|\\p{N}{1,3}",
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*",
    "|\\s*[\\r\\n]+",
    "|\\s+$",
);

/// The tokenizer of `encoding`, unpacked and built (once per process: the
/// caller keeps it).
pub(super) fn tokenizer(encoding: Encoding) -> Tokenizer {
    let (packed, pattern) = match encoding {
        Encoding::O200kBase => (O200K_BASE, O200K_PATTERN),
        Encoding::Cl100kBase => (CL100K_BASE, CL100K_PATTERN),
    };
    let bpe = byte_pair_encoding(packed);
    Tokenizer::new_lookahead(
        bpe,
        &[(pattern, false), ("\\s+\\s", true), ("\\s+", false)],
        false,
    )
    .expect("valid regex")
}

/// The packed tables (layout in `build.rs`) as bpe-openai's encoder.
pub(super) fn byte_pair_encoding(compressed: &[u8]) -> BytePairEncoding {
    let size = zstd::zstd_safe::get_frame_content_size(compressed)
        .ok()
        .flatten()
        .expect("the embedded tables say their size");
    let packed =
        zstd::bulk::decompress(compressed, size as usize).expect("the embedded tables decompress");
    let mut r = Reader(&packed);
    let hash_factor = u64::from_le_bytes(r.take(8).try_into().expect("8 bytes"));
    let n = r.u32() as usize;
    let lens = r.take(n);
    let all_tokens = r.section();
    let longest = r.section();
    let overlapping: Vec<u8> = r
        .section()
        .iter()
        .zip(longest)
        .map(|(x, l)| x ^ l)
        .collect();
    let overlapping_rev = r.section();
    let split = r.section();
    assert!(r.0.is_empty(), "the embedded tables end where they should");

    let mut token_starts = Vec::with_capacity(n + 1);
    token_starts.push(0u32);
    for &len in lens {
        token_starts.push(token_starts.last().expect("one start") + u32::from(len));
    }
    let token = |id: u32| {
        &all_tokens[token_starts[id as usize] as usize..token_starts[id as usize + 1] as usize]
    };

    let mut bytes_hash_to_token = FnvMap::<u32, u32>::default();
    bytes_hash_to_token.reserve(n);
    for id in 0..n as u32 {
        bytes_hash_to_token.insert(hash_bytes(token(id), hash_factor), id);
    }
    let find = |bytes: &[u8]| {
        bytes_hash_to_token
            .get(&hash_bytes(bytes, hash_factor))
            .copied()
            .filter(|&id| token(id) == bytes)
    };
    // The leftmost-longest match in a token less its last byte: the
    // longest token that is a prefix of it (every single byte is a token).
    let next_prefix_match: Vec<u32> = (0..n as u32)
        .map(|id| {
            let t = token(id);
            (1..t.len())
                .rev()
                .find_map(|len| find(&t[..len]))
                .unwrap_or(u32::MAX)
        })
        .collect();

    // The merge table as packed, and the pair map from it: a token merged
    // from a pair is that pair's merge.
    let split_table: Vec<(u32, u32)> = split
        .chunks_exact(8)
        .map(|p| {
            let a = u32::from_le_bytes(p[..4].try_into().expect("4 bytes"));
            let b = u32::from_le_bytes(p[4..].try_into().expect("4 bytes"));
            (a, b)
        })
        .collect();
    assert_eq!(split_table.len(), n, "one merge per token");
    let mut pair_lookup = FnvMap::<(u32, u32), u32>::default();
    pair_lookup.reserve(n);
    for (id, &(a, b)) in split_table.iter().enumerate() {
        if (a, b) != (id as u32, id as u32) {
            pair_lookup.insert((a, b), id as u32);
        }
    }

    let whole = Whole {
        all_tokens,
        token_starts: &token_starts,
        bytes_hash_to_token: &bytes_hash_to_token,
        split_table: &split_table,
        pair_lookup: &pair_lookup,
        longest_searcher: Bin(longest),
        overlapping_searcher: Bin(&overlapping),
        overlapping_searcher_rev: Bin(overlapping_rev),
        next_prefix_match: &next_prefix_match,
        hash_factor,
    };
    let serialized = rmp_serde::to_vec(&whole).expect("the tables serialize");
    rmp_serde::from_slice(&serialized).expect("the tables are a BytePairEncoding")
}

/// `BytePairEncoding`'s fields in its order, as its `Deserialize` reads them.
#[derive(Serialize)]
struct Whole<'a> {
    all_tokens: &'a [u8],
    token_starts: &'a [u32],
    bytes_hash_to_token: &'a FnvMap<u32, u32>,
    split_table: &'a [(u32, u32)],
    pair_lookup: &'a FnvMap<(u32, u32), u32>,
    longest_searcher: Bin<'a>,
    overlapping_searcher: Bin<'a>,
    overlapping_searcher_rev: Bin<'a>,
    next_prefix_match: &'a [u32],
    hash_factor: u64,
}

/// An automaton, written as MessagePack bytes as `BytePairEncoding` writes it.
struct Bin<'a>(&'a [u8]);

impl Serialize for Bin<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        head
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take(4).try_into().expect("4 bytes"))
    }
    fn section(&mut self) -> &'a [u8] {
        let n = self.u32() as usize;
        self.take(n)
    }
}

type FnvMap<K, V> = HashMap<K, V, BuildHasherDefault<Fnv>>;

/// FNV-1a, 64 bits: the `fnv` crate's hasher, which `BytePairEncoding` keys its maps with.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// `bpe::byte_pair_encoding::hash_bytes`: the token's length and bytes,
/// FNV-hashed, times the hash factor, the high 32 bits.
fn hash_bytes(bytes: &[u8], factor: u64) -> u32 {
    let mut hasher = Fnv::default();
    hasher.write(&(bytes.len() as u64).to_le_bytes());
    hasher.write(bytes);
    ((hasher.finish().wrapping_mul(factor)) >> 32) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::{Deserializer, Visitor};
    use serde::Deserialize;

    /// `BytePairEncoding`'s fields, read back from its serialization.
    #[derive(Deserialize)]
    struct Fields {
        all_tokens: Vec<u8>,
        token_starts: Vec<u32>,
        bytes_hash_to_token: HashMap<u32, u32>,
        split_table: Vec<(u32, u32)>,
        pair_lookup: HashMap<(u32, u32), u32>,
        longest_searcher: Bytes,
        overlapping_searcher: Bytes,
        overlapping_searcher_rev: Bytes,
        next_prefix_match: Vec<u32>,
        hash_factor: u64,
    }

    #[derive(PartialEq)]
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

    fn fields(bpe: &BytePairEncoding) -> Fields {
        rmp_serde::from_slice(&rmp_serde::to_vec(bpe).expect("serializes")).expect("reads back")
    }

    /// The unpacked encoder is bpe-openai's, every field equal (the maps as
    /// maps: their serialized order follows their insertion history).
    #[test]
    fn unpacked_tables_are_bpe_openais() {
        for (encoding, theirs) in [
            (Encoding::O200kBase, bpe_openai::o200k_base()),
            (Encoding::Cl100kBase, bpe_openai::cl100k_base()),
        ] {
            let ours = fields(&tokenizer(encoding).bpe);
            let theirs = fields(&theirs.bpe);
            let name = encoding.as_str();
            // `assert!` rather than `assert_eq!`: a table's debug print is megabytes.
            macro_rules! same {
                ($($field:ident),*) => {$(
                    assert!(ours.$field == theirs.$field, "{name}: {}", stringify!($field));
                )*};
            }
            same!(
                all_tokens,
                token_starts,
                bytes_hash_to_token,
                split_table,
                pair_lookup,
                longest_searcher,
                overlapping_searcher,
                overlapping_searcher_rev,
                next_prefix_match,
                hash_factor
            );
        }
    }

    /// The pre-tokenizer cuts the pieces bpe-openai's cuts, and the counts agree.
    #[test]
    fn pieces_and_counts_are_bpe_openais() {
        let texts = [
            "hello world",
            "  fn main() {\n    println!(\"{}\", x);\n}\n\n",
            "I'm sure they'LL say it's 12345 o'clock\r\n\r\n  \t",
            "漢字 ü e\u{301} 🦀🦀 \u{3000}x",
            "aGVsbG8gd29ybGQ=/+9xYz",
            "",
            "   ",
        ];
        for (encoding, theirs) in [
            (Encoding::O200kBase, bpe_openai::o200k_base()),
            (Encoding::Cl100kBase, bpe_openai::cl100k_base()),
        ] {
            let ours = encoding.tokenizer();
            for text in texts {
                assert_eq!(
                    ours.split(text).collect::<Vec<_>>(),
                    theirs.split(text).collect::<Vec<_>>(),
                    "{text:?}"
                );
                assert_eq!(ours.encode(text), theirs.encode(text), "{text:?}");
            }
        }
    }
}

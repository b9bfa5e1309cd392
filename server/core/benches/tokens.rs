//! `tokens::count` on one line without whitespace of 1 MiB and 4 MiB (the
//! time should grow linearly: 4 MiB about 4x 1 MiB), and on ordinary code.
//! Each iteration counts the next of `VARIANTS` texts, more than `count`
//! recalls by hash, so every count is a real one; `bpe-openai` is the same
//! count straight through the crate, without `tokens`' caches.

use std::cell::Cell;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

use ctxproxy_core::tokens::{self, Encoding};

const VARIANTS: u64 = 8;

/// Base64-like text from an LCG: no whitespace, no repetition.
fn one_line(bytes: usize, seed: u64) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut x: u64 = seed;
    (0..bytes)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ALPHABET[(x >> 58) as usize] as char
        })
        .collect()
}

/// Rust source like a file read: `bytes` of this crate's own code, from
/// the `seed`th line on.
fn code(bytes: usize, seed: u64) -> String {
    let source = concat!(
        include_str!("../src/packer/mod.rs"),
        include_str!("../src/packer/regions.rs"),
        include_str!("../src/packer/guaranteed.rs"),
        include_str!("../src/packer/upgrades.rs"),
        include_str!("../src/packer/emit.rs"),
        include_str!("../tests/packer.rs"),
    );
    let lines = source.lines().skip(seed as usize * 40);
    lines
        .flat_map(|l| l.chars().chain(['\n']))
        .cycle()
        .take(bytes)
        .collect()
}

/// Counts the next of `texts` on every call, through `tokens::count` (its
/// caches included) or straight with bpe-openai, for comparison.
fn cycle_count<'t>(
    encoding: Encoding,
    texts: &'t [String],
    next: &'t Cell<usize>,
    direct: bool,
) -> impl FnMut() -> u32 + 't {
    move || {
        next.set((next.get() + 1) % texts.len());
        let text = &texts[next.get()];
        if direct {
            let tokenizer = match encoding {
                Encoding::O200kBase => bpe_openai::o200k_base(),
                Encoding::Cl100kBase => bpe_openai::cl100k_base(),
            };
            tokenizer.count(text.as_str()) as u32
        } else {
            tokens::count(encoding, text)
        }
    }
}

fn bench_count(c: &mut Criterion) {
    let mut group = c.benchmark_group("tokens");
    group.sample_size(10);
    let next = Cell::new(0);
    for mib in [1usize, 4] {
        let texts: Vec<String> = (1..=VARIANTS).map(|s| one_line(mib << 20, s)).collect();
        group.throughput(Throughput::Bytes(texts[0].len() as u64));
        for (name, direct) in [("count", false), ("bpe-openai", true)] {
            group.bench_function(BenchmarkId::new(name, format!("one-line-{mib}MiB")), |b| {
                b.iter(cycle_count(Encoding::O200kBase, &texts, &next, direct))
            });
        }
    }
    let texts: Vec<String> = (0..VARIANTS).map(|s| code(6 << 10, s)).collect();
    group.throughput(Throughput::Bytes(texts[0].len() as u64));
    for encoding in Encoding::ALL {
        for (name, direct) in [("count", false), ("bpe-openai", true)] {
            group.bench_function(
                BenchmarkId::new(name, format!("code-6KiB-{}", encoding.as_str())),
                |b| b.iter(cycle_count(encoding, &texts, &next, direct)),
            );
        }
    }
    group.finish();
}

criterion_group!(benches, bench_count);
criterion_main!(benches);

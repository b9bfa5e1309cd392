//! `tokens::count` on one line without whitespace of 256 KiB to 4 MiB (the
//! time should grow linearly: 4 MiB about 4x 1 MiB), and on ordinary code.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

use ctxproxy_core::tokens::{self, Encoding};

/// Base64-like text from a fixed LCG: no whitespace, no repetition.
fn one_line(bytes: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut x: u64 = 1;
    (0..bytes)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ALPHABET[(x >> 58) as usize] as char
        })
        .collect()
}

/// Rust source like a file read: `bytes` of this crate's own code.
fn code(bytes: usize) -> String {
    let source = include_str!("../src/packer.rs");
    source.chars().cycle().take(bytes).collect()
}

fn bench_count(c: &mut Criterion) {
    let mut group = c.benchmark_group("count");
    group.sample_size(10);
    for mib in [1usize, 4] {
        let text = one_line(mib << 20);
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(
            BenchmarkId::new("one-line", format!("{mib}MiB")),
            &text,
            |b, t| b.iter(|| tokens::count(Encoding::O200kBase, t)),
        );
    }
    let text = code(6 << 10);
    group.throughput(Throughput::Bytes(text.len() as u64));
    for encoding in Encoding::ALL {
        group.bench_with_input(
            BenchmarkId::new("code-6KiB", encoding.as_str()),
            &text,
            |b, t| b.iter(|| tokens::count(encoding, t)),
        );
    }
    group.finish();
}

criterion_group!(benches, bench_count);
criterion_main!(benches);

//! The first count's cost per encoding (a line of ASCII, then a line with
//! characters outside ASCII, which builds the pre-tokenizer's regex), and
//! counting speed after it: code, and single pieces of 64 KiB and 1 MiB (a
//! run of letters, a run of spaces), which merge through the heap:
//!
//!   cargo run --release -p ctxproxy-core --example token_tables            # tokens::count
//!   cargo run --release -p ctxproxy-core --example token_tables bpe-openai # bpe-openai's, for comparison
//!
//! Run it a few times: each run counts in each encoding for the first time
//! once, as a process does.

use std::time::Instant;

use ctxproxy_core::tokens::{self, Encoding};

fn main() {
    let bpe_openai = std::env::args().nth(1).as_deref() == Some("bpe-openai");
    let count = |encoding: Encoding, text: &str| match (bpe_openai, encoding) {
        (false, _) => tokens::count(encoding, text) as usize,
        (true, Encoding::O200kBase) => bpe_openai::o200k_base().count(text),
        (true, Encoding::Cl100kBase) => bpe_openai::cl100k_base().count(text),
    };
    let source = concat!(
        include_str!("../src/packer/mod.rs"),
        include_str!("../src/tokens.rs"),
        include_str!("../src/tokens/split.rs"),
        include_str!("../tests/packer.rs"),
    );
    // 8 different texts of 1 MB (each line numbered), so no count is recalled.
    let texts: Vec<String> = (0..8)
        .map(|v| {
            let mut text = String::new();
            for (i, line) in source.lines().cycle().enumerate() {
                if text.len() >= 1 << 20 {
                    break;
                }
                text.push_str(&format!("{v}.{i} {line}\n"));
            }
            text
        })
        .collect();
    // Lower-case letters from an LCG (no repetition), and spaces: one
    // piece each.
    let mut x: u64 = 1;
    let letters: String = (0..1 << 20)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (b'a' + ((x >> 33) % 26) as u8) as char
        })
        .collect();
    let spaces = " ".repeat(1 << 20);
    for encoding in Encoding::ALL {
        let first = |text: &str| {
            let start = Instant::now();
            std::hint::black_box(count(encoding, text));
            start.elapsed().as_secs_f64() * 1e3
        };
        let ascii = first("Why does handler_7 fail on empty input? Check the parser.");
        let unicode = first("Pourquoi handler_7 échoue-t-il sur une entrée vide ?");
        let start = Instant::now();
        let total: usize = texts.iter().map(|text| count(encoding, text)).sum();
        let secs = start.elapsed().as_secs_f64();
        let mb = texts.iter().map(String::len).sum::<usize>() as f64 / 1e6;
        // The run's first `bytes`, then an `x` (whitespace at the end of a
        // text is a piece of another kind).
        let run_ms = |run: &str, bytes: usize| {
            let run = format!("{}x", &run[..bytes]);
            let start = Instant::now();
            std::hint::black_box(count(encoding, &run));
            start.elapsed().as_secs_f64() * 1e3
        };
        println!(
            "{} {}: first count {ascii:.2} ms, then outside ASCII {unicode:.2} ms; \
             counted {mb:.1} MB of code ({total} tokens) at {:.2} MB/s; \
             runs of 64 KiB / 1 MiB: letters {:.1} / {:.0} ms, spaces {:.1} / {:.0} ms",
            if bpe_openai { "bpe-openai" } else { "ctxproxy" },
            encoding.as_str(),
            mb / secs,
            run_ms(&letters, 64 << 10),
            run_ms(&letters, 1 << 20),
            run_ms(&spaces, 64 << 10),
            run_ms(&spaces, 1 << 20),
        );
    }
}

//! The token tables' first-use cost per encoding, and counting speed:
//!
//!   cargo run --release -p ctxproxy-core --example token_tables            # ctxproxy's packed tables
//!   cargo run --release -p ctxproxy-core --example token_tables bpe-openai # bpe-openai's own
//!
//! Run it a few times: each run loads each encoding once, as a process does.

use std::time::Instant;

use ctxproxy_core::tokens::{self, Encoding};

fn main() {
    let bpe_openai = std::env::args().nth(1).as_deref() == Some("bpe-openai");
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
    for encoding in Encoding::ALL {
        let start = Instant::now();
        let tokenizer = match (bpe_openai, encoding) {
            (false, _) => tokens::tokenizer(encoding),
            (true, Encoding::O200kBase) => bpe_openai::o200k_base(),
            (true, Encoding::Cl100kBase) => bpe_openai::cl100k_base(),
        };
        let loaded = start.elapsed();
        // Counted straight through the tokenizer (tokens::count's caches aside).
        let start = Instant::now();
        let total: usize = texts
            .iter()
            .map(|text| tokenizer.count(text.as_str()))
            .sum();
        let secs = start.elapsed().as_secs_f64();
        let mb = texts.iter().map(String::len).sum::<usize>() as f64 / 1e6;
        println!(
            "{} {}: first use {:.1} ms; counted {mb:.1} MB ({total} tokens) at {:.2} MB/s",
            if bpe_openai { "bpe-openai" } else { "ctxproxy" },
            encoding.as_str(),
            loaded.as_secs_f64() * 1e3,
            mb / secs,
        );
    }
}

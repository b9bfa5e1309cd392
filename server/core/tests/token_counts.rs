//! `tokens::count` equals OpenAI's tiktoken on every case of
//! `fixtures/tokens/counts.jsonl` (written by `reference.py` there): slices
//! of real code, prose and tool output, pre-tokenizer edge cases, and long
//! runs without whitespace. `truncate` keeps within its cap on the same cases.

use ctxproxy_core::tokens::{self, Encoding};
use serde_json::Value;
use std::path::Path;

/// One case: its text and tiktoken's counts per encoding.
struct Case {
    label: String,
    text: String,
    counts: Vec<(Encoding, u32)>,
}

/// The generator `reference.py` uses for long runs: a 64-bit LCG, the unit
/// picked by the high bits.
fn lcg_run(units: &[String], count: usize, seed: u64) -> String {
    let mut x = seed;
    let mut out = String::new();
    for _ in 0..count {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        out.push_str(&units[((x >> 33) % units.len() as u64) as usize]);
    }
    out
}

fn cases() -> Vec<Case> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/tokens/counts.jsonl");
    let file = std::fs::read_to_string(&path).unwrap();
    file.lines()
        .enumerate()
        .map(|(i, line)| {
            let v: Value = serde_json::from_str(line).unwrap();
            let (label, text) = match (&v["text"], &v["run"]) {
                (Value::String(t), _) => (format!("line {}", i + 1), t.clone()),
                (_, Value::Object(run)) => {
                    let units: Vec<String> = serde_json::from_value(run["units"].clone()).unwrap();
                    let count = run["count"].as_u64().unwrap() as usize;
                    let seed = run["seed"].as_u64().unwrap();
                    let label = format!("line {} (run of {count} x {units:?})", i + 1);
                    (label, lcg_run(&units, count, seed))
                }
                _ => panic!("line {}: neither text nor run", i + 1),
            };
            let counts = Encoding::ALL
                .iter()
                .map(|&e| (e, v[e.as_str()].as_u64().unwrap() as u32))
                .collect();
            Case {
                label,
                text,
                counts,
            }
        })
        .collect()
}

#[test]
fn counts_equal_tiktoken() {
    let cases = cases();
    assert!(cases.len() > 300, "fixture has {} cases", cases.len());
    let wrong: Vec<String> = cases
        .iter()
        .flat_map(|c| {
            c.counts.iter().filter_map(|&(e, want)| {
                let got = tokens::count(e, &c.text);
                (got != want).then(|| format!("{} {}: {got}, tiktoken {want}", c.label, e.as_str()))
            })
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn truncate_keeps_within_the_cap_on_every_case() {
    for c in cases() {
        for &(e, total) in &c.counts {
            // Caps as digests and retrieval use them (a debug build counts
            // a long run's prefixes slowly).
            for max in [0, 1, 7, 100, total / 2, total]
                .into_iter()
                .filter(|&m| m <= 5_000)
            {
                let cut = tokens::truncate(e, &c.text, max);
                assert!(c.text.starts_with(cut), "{}", c.label);
                let n = tokens::count(e, cut);
                assert!(
                    n <= max,
                    "{} {}: {n} tokens over {max}",
                    c.label,
                    e.as_str()
                );
                assert!(
                    n + 3 >= max.min(total),
                    "{} {}: {n} of {max}",
                    c.label,
                    e.as_str()
                );
            }
        }
    }
}

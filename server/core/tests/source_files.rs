//! Masking leaves real source code alone: each file of a committed sample of
//! Python's standard library and cargo-registry crates
//! (`fixtures/secrets/source-files/README.md`, drawn by
//! `fixtures/tools/source_files_sample.py`) is masked as tool output, as a
//! `read_file` result would be. At most 0.5% of the files may come back
//! altered; every alteration is printed (`-- --nocapture`) and, on failure,
//! named.
//!
//! `source-files-held-out/` is a second sample, drawn with another seed
//! before the rules were tuned on the first and kept out of that tuning: its
//! figure is printed apart and may not grow.

use ctxproxy_core::secrets::{self, Source};
use std::path::Path;

/// Files of the held-out sample altered when the rules were last changed.
const HELD_OUT_ALTERED: usize = 1;

/// The files of a sample that masking alters, each with its changed lines,
/// and how many files the sample holds.
fn altered(corpus: &str) -> (Vec<String>, usize) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/secrets")
        .join(corpus);
    let list = std::fs::read_to_string(dir.join("files.tsv")).unwrap();
    let mut altered = Vec::new();
    let mut files = 0;
    for row in list.lines().skip(1) {
        let mut fields = row.split('\t');
        let (Some(name), Some(path)) = (fields.next(), fields.next()) else {
            panic!("{corpus}/files.tsv: bad row {row:?}");
        };
        let file = dir.join(name).join(format!("{path}.txt"));
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        files += 1;
        let masked = secrets::mask(&text, Source::ToolOutput).text;
        if masked != text {
            let diffs: Vec<String> = text
                .lines()
                .zip(masked.lines())
                .filter(|(a, b)| a != b)
                .map(|(a, b)| format!("    - {a}\n    + {b}"))
                .collect();
            altered.push(format!("{name}/{path}:\n{}", diffs.join("\n")));
        }
    }
    println!(
        "{corpus}: masking altered {} of {files} files ({:.2}%)\n{}",
        altered.len(),
        100.0 * altered.len() as f64 / files as f64,
        altered.join("\n")
    );
    (altered, files)
}

#[test]
fn masking_alters_at_most_half_a_percent_of_source_files() {
    let (altered, files) = altered("source-files");
    assert!(files >= 400, "the sample lost files: {files}");
    assert!(
        altered.len() as f64 <= 0.005 * files as f64,
        "{} of {files} files altered:\n{}",
        altered.len(),
        altered.join("\n")
    );
}

#[test]
fn held_out_source_files_altered_do_not_grow() {
    let (altered, _) = altered("source-files-held-out");
    assert!(
        altered.len() <= HELD_OUT_ALTERED,
        "{} held-out files altered, were {HELD_OUT_ALTERED}:\n{}",
        altered.len(),
        altered.join("\n")
    );
}

//! Passwords in the forms config files write them (`DB_PASS`, `POSTGRES_PWD`,
//! `REDIS_AUTH`, a passphrase; values with `!`, spaces in quotes, a leading
//! `@ & $ *`), in an env file, YAML, JSON, a shell script and a compose file.
//!
//! `fixtures/secrets/password-forms/`: the same passwords in each format; no
//! value in `secrets.expected` survives masking, and each masked file is
//! snapshotted: references and settings beside the passwords stay.
//!
//! `fixtures/secrets/password-held-out/`: about a hundred passwords written by
//! hand the way real projects write them, before the rules were tuned on
//! generated cases and kept out of that tuning. The share masked is printed
//! (`-- --nocapture`) and may not fall; every line of `kept.expected`
//! (references, file paths, limits) stays.

use ctxproxy_core::secrets::{self, Source};
use std::path::Path;

const FILES: [&str; 5] = [
    "app.env",
    "config.yaml",
    "config.json",
    "setup.sh",
    "docker-compose.yml",
];

const HELD_OUT_FILES: [&str; 5] = [
    "app.env",
    "config.yaml",
    "config.json",
    "deploy.sh",
    "docker-compose.yml",
];

/// The held-out passwords masked when the rules were last changed.
const HELD_OUT_MASKED: usize = 96;

fn read(corpus: &str, name: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/secrets")
        .join(corpus);
    std::fs::read_to_string(dir.join(name)).unwrap()
}

fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|l| !l.is_empty())
}

#[test]
fn every_password_form_is_masked_in_every_format() {
    let expected = read("password-forms", "secrets.expected");
    for name in FILES {
        let raw = read("password-forms", name);
        let masked = secrets::mask(&raw, Source::ToolOutput).text.into_owned();
        for secret in lines(&expected) {
            assert!(
                !masked.contains(secret),
                "{name}: {secret} survived:\n{masked}"
            );
        }
        insta::assert_snapshot!(name, masked);
    }
}

#[test]
fn held_out_passwords_are_masked_and_references_kept() {
    let expected = read("password-held-out", "secrets.expected");
    let kept = read("password-held-out", "kept.expected");
    let files: Vec<(&str, String, String)> = HELD_OUT_FILES
        .iter()
        .map(|&name| {
            let raw = read("password-held-out", name);
            let masked = secrets::mask(&raw, Source::ToolOutput).text.into_owned();
            (name, raw, masked)
        })
        .collect();
    let mut survived = Vec::new();
    let mut total = 0;
    for secret in lines(&expected) {
        let Some((name, _, masked)) = files.iter().find(|(_, raw, _)| raw.contains(secret)) else {
            panic!("no held-out file holds {secret}");
        };
        total += 1;
        if masked.contains(secret) {
            survived.push(format!("{name}: {secret}"));
        }
    }
    let masked = total - survived.len();
    println!(
        "held-out passwords masked {masked}/{total} ({:.1}%); survived:\n  {}",
        100.0 * masked as f64 / total as f64,
        survived.join("\n  ")
    );
    for line in lines(&kept) {
        let (name, _, masked) = files
            .iter()
            .find(|(_, raw, _)| raw.contains(line))
            .unwrap_or_else(|| panic!("no held-out file holds {line}"));
        assert!(masked.contains(line), "{name}: {line} was altered");
    }
    assert!(
        masked >= HELD_OUT_MASKED,
        "held-out passwords masked: {masked}, was {HELD_OUT_MASKED}"
    );
}

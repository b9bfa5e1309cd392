//! No secret listed in `fixtures/tool-outputs/secrets/secrets.expected`
//! survives `secrets::mask`, and nothing in `must-not-mask.expected` is touched.

use ctxproxy_core::secrets;
use std::path::Path;

fn read(name: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/tool-outputs/secrets");
    std::fs::read_to_string(dir.join(name)).unwrap()
}

fn outputs() -> Vec<(String, String)> {
    [
        "env-dump.out",
        "config-production.yaml.out",
        "gcp-service-account.json.out",
        "ssh-key-cat.out",
    ]
    .iter()
    .map(|name| (name.to_string(), read(name)))
    .collect()
}

#[test]
fn no_fixture_secret_survives_masking() {
    let expected = read("secrets.expected");
    let masked: Vec<(String, String)> = outputs()
        .into_iter()
        .map(|(name, text)| {
            (
                name,
                secrets::mask(&text, secrets::Source::ToolOutput)
                    .text
                    .into_owned(),
            )
        })
        .collect();
    let all_raw: String = outputs().into_iter().map(|(_, t)| t).collect();
    for secret in expected.lines().filter(|l| !l.is_empty()) {
        assert!(all_raw.contains(secret), "fixture lost secret {secret}");
        for (name, text) in &masked {
            assert!(!text.contains(secret), "{name}: {secret} survived:\n{text}");
        }
    }
}

#[test]
fn hashes_and_ids_in_fixtures_stay() {
    let keep = read("must-not-mask.expected");
    let (_, env) = outputs()
        .into_iter()
        .find(|(n, _)| n == "env-dump.out")
        .unwrap();
    let masked = secrets::mask(&env, secrets::Source::ToolOutput)
        .text
        .into_owned();
    for value in keep.lines().filter(|l| !l.is_empty()) {
        assert!(masked.contains(value), "{value} was masked");
    }
}

#[test]
fn near_misses_on_a_large_input_are_left_alone() {
    // 4 MB of near-misses: long runs that start like secrets but are not.
    // (Time is linear by construction, every pattern runs on the regex
    // crate's automata; no timing is asserted here: a loaded CI machine
    // is no clock.)
    let unit = "sk- AKIA ghp_ eyJ x://a:b postgres://u PASSWORD= -----BEGIN ";
    let big = unit.repeat(4 * 1024 * 1024 / unit.len());
    let masked = secrets::mask(&big, secrets::Source::ToolOutput);
    assert_eq!(masked.text, big);
}

//! Passwords in the forms config files write them (`DB_PASS`, `POSTGRES_PWD`,
//! `REDIS_AUTH`, a passphrase; values with `!`, spaces in quotes, a leading
//! `@ & $ *`), in an env file, YAML, JSON, a shell script and a compose file
//! (`fixtures/secrets/password-forms/`). No value in `secrets.expected`
//! survives masking, and each masked file is snapshotted: references and
//! settings beside the passwords stay as they are.

use ctxproxy_core::secrets::{self, Source};
use std::path::Path;

const FILES: [&str; 5] = [
    "app.env",
    "config.yaml",
    "config.json",
    "setup.sh",
    "docker-compose.yml",
];

fn read(name: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/secrets/password-forms");
    std::fs::read_to_string(dir.join(name)).unwrap()
}

#[test]
fn every_password_form_is_masked_in_every_format() {
    let expected = read("secrets.expected");
    for name in FILES {
        let raw = read(name);
        let masked = secrets::mask(&raw, Source::ToolOutput).text.into_owned();
        for secret in expected.lines().filter(|l| !l.is_empty()) {
            assert!(
                !masked.contains(secret),
                "{name}: {secret} survived:\n{masked}"
            );
        }
        insta::assert_snapshot!(name, masked);
    }
}

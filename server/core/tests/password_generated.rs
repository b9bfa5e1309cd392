//! Passwords generated in the forms config files write them: an env file,
//! YAML, JSON, a shell script and a compose file (its environment as a map
//! and as a list). Names end in a password word (`PASSWORD`, `PASS`, `PWD`,
//! `PASSWD`, `SECRET`, `PASSPHRASE`) after a service's name or none, in
//! upper or lower snake case, camel or Pascal case, kebab case or dotted;
//! values are 6 to 40 characters, random, built from words, spaced (quoted)
//! or with letters beyond ASCII, holding `! # @ $ %` and other symbols
//! anywhere, quoted or not as the format allows.
//!
//! The cases come from a seeded splitmix64, so every run masks the same
//! ones. A password counts as masked when what masking changed covers all of
//! it and holds a mask, and nothing changed off its line. At least 99% must
//! be; the figure, by format and by kind of value, and every miss are
//! printed (`-- --nocapture`).

use ctxproxy_core::secrets::{self, Source};
use std::collections::BTreeMap;

const SEED: u64 = 0x7a55_c0de_2026;
const CASES: usize = 3000;

/// A small PRNG (splitmix64): the cases must not depend on a crate's version
/// of randomness.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn percent(&mut self, p: usize) -> bool {
        self.below(100) < p
    }
}

/// The words a password's name ends with.
const WORDS: &[&str] = &["password", "pass", "pwd", "passwd", "secret", "passphrase"];

/// What comes before the word: a service, a role, or nothing.
const PREFIXES: &[&[&str]] = &[
    &[],
    &["db"],
    &["postgres"],
    &["mysql", "root"],
    &["mysql"],
    &["redis"],
    &["smtp"],
    &["admin"],
    &["root"],
    &["ldap", "bind"],
    &["ftp"],
    &["mail"],
    &["rabbitmq", "default"],
    &["mongo", "initdb", "root"],
    &["keystore"],
    &["app"],
    &["user"],
    &["jwt"],
    &["session"],
    &["client"],
    &["elastic"],
    &["vault"],
    &["grafana", "admin"],
    &["minio", "root"],
    &["sftp"],
    &["proxy"],
    &["registry"],
    &["wifi"],
];

#[derive(Clone, Copy)]
enum Case {
    UpperSnake,
    LowerSnake,
    /// `Db_Password`.
    TitleSnake,
    Camel,
    Pascal,
    Kebab,
    Dotted,
}

fn capitalised(w: &str) -> String {
    let mut c = w.chars();
    c.next()
        .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
        .unwrap_or_default()
}

fn name(words: &[&str], case: Case) -> String {
    match case {
        Case::UpperSnake => words.join("_").to_ascii_uppercase(),
        Case::LowerSnake => words.join("_"),
        Case::TitleSnake => words
            .iter()
            .map(|w| capitalised(w))
            .collect::<Vec<_>>()
            .join("_"),
        Case::Camel => words
            .iter()
            .enumerate()
            .map(|(i, w)| {
                if i == 0 {
                    w.to_string()
                } else {
                    capitalised(w)
                }
            })
            .collect(),
        Case::Pascal => words.iter().map(|w| capitalised(w)).collect(),
        Case::Kebab => words.join("-"),
        Case::Dotted => words.join("."),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Format {
    Env,
    Yaml,
    Json,
    Shell,
    ComposeMap,
    ComposeList,
}

const FORMATS: [Format; 6] = [
    Format::Env,
    Format::Yaml,
    Format::Json,
    Format::Shell,
    Format::ComposeMap,
    Format::ComposeList,
];

/// The ways each format spells its names.
fn cases(format: Format) -> &'static [Case] {
    match format {
        Format::Env | Format::Shell => &[
            Case::UpperSnake,
            Case::UpperSnake,
            Case::UpperSnake,
            Case::LowerSnake,
            Case::TitleSnake,
            Case::Camel,
        ],
        Format::ComposeMap | Format::ComposeList => &[
            Case::UpperSnake,
            Case::UpperSnake,
            Case::UpperSnake,
            Case::LowerSnake,
            Case::TitleSnake,
        ],
        Format::Yaml | Format::Json => &[
            Case::LowerSnake,
            Case::LowerSnake,
            Case::UpperSnake,
            Case::TitleSnake,
            Case::Camel,
            Case::Camel,
            Case::Pascal,
            Case::Kebab,
            Case::Dotted,
        ],
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// Letters, digits and symbols at random.
    Random,
    /// Words with digits and a symbol: `Summer-Falcon2024!`.
    Words,
    /// A passphrase with spaces, always quoted.
    Spaced,
    /// Letters beyond ASCII among the rest.
    Unicode,
}

const KINDS: [Kind; 4] = [Kind::Random, Kind::Words, Kind::Spaced, Kind::Unicode];

const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
/// The symbols a password holds; quotes, backslashes and brackets are left
/// to the formats' escaping, which these forms do not exercise.
const MARKED: &[char] = &['!', '#', '@', '$', '%'];
const OTHER_SYMBOLS: &[char] = &[
    '-', '_', '.', '+', '=', '*', '&', '^', '~', '?', ',', ':', '/',
];
const DICTIONARY: &[&str] = &[
    "summer", "falcon", "harbor", "winter", "purple", "monkey", "dragon", "coffee", "river",
    "silver", "tiger", "ocean", "rocket", "maple", "shadow", "garden", "copper", "orbit", "pepper",
    "violet", "thunder", "castle", "lemon", "bridge",
];
const NON_ASCII: &[char] = &[
    'ä', 'ö', 'ü', 'ß', 'é', 'è', 'ñ', 'ç', 'ø', 'å', 'π', 'Ω', 'ж', 'д', '中', '文', '한', '글',
    'ł', 'ş',
];

fn random_char(rng: &mut SplitMix) -> char {
    match rng.below(10) {
        0 => *rng.pick(MARKED),
        1 => *rng.pick(OTHER_SYMBOLS),
        _ => *rng.pick(ALNUM) as char,
    }
}

/// A password of the kind, 6 to 40 characters.
fn password(kind: Kind, rng: &mut SplitMix) -> String {
    let len = 6 + rng.below(35);
    let mut chars: Vec<char> = match kind {
        Kind::Random => (0..len).map(|_| random_char(rng)).collect(),
        Kind::Words => {
            let mut s = String::new();
            while s.chars().count() < len.saturating_sub(4).max(4) {
                let w = rng.pick(DICTIONARY);
                if !s.is_empty() && rng.percent(50) {
                    s.push(*rng.pick(&['-', '_', '.', '@', '#']));
                }
                s += &if rng.percent(50) {
                    capitalised(w)
                } else {
                    w.to_string()
                };
            }
            s += &rng.below(10_000).to_string();
            if rng.percent(60) {
                s.push(*rng.pick(MARKED));
            }
            s.chars().collect()
        }
        Kind::Spaced => {
            let words = 2 + rng.below(4);
            let mut parts: Vec<String> = (0..words)
                .map(|_| rng.pick(DICTIONARY).to_string())
                .collect();
            if rng.percent(50) {
                parts.push(rng.below(100).to_string());
            }
            let mut s = parts.join(" ");
            if rng.percent(40) {
                s.push(*rng.pick(MARKED));
            }
            s.chars().collect()
        }
        Kind::Unicode => (0..len)
            .map(|_| {
                if rng.percent(30) {
                    *rng.pick(NON_ASCII)
                } else {
                    random_char(rng)
                }
            })
            .collect(),
    };
    // One of the symbols the forms are known to trip on, anywhere, first
    // and last included.
    if kind != Kind::Spaced && rng.percent(70) {
        let at = rng.below(chars.len() + 1);
        chars.insert(at, *rng.pick(MARKED));
    }
    chars.into_iter().collect()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Quote {
    None,
    Single,
    Double,
}

impl Quote {
    fn wrap(self, v: &str) -> String {
        match self {
            Quote::None => v.to_string(),
            Quote::Single => format!("'{v}'"),
            Quote::Double => format!("\"{v}\""),
        }
    }
}

/// How a value is quoted: JSON always in double quotes; a value with spaces
/// always quoted; YAML leaves unquoted no value a `#` would start a comment
/// of; a shell script quotes what the shell would read, mostly.
fn quote(format: Format, v: &str, rng: &mut SplitMix) -> Quote {
    let spaced = v.contains(' ');
    let quoted = match format {
        Format::Json => return Quote::Double,
        _ if spaced => true,
        Format::Yaml | Format::ComposeMap if v.starts_with('#') => true,
        Format::Shell if v.contains(['$', '&', '*', '!', '?', '~', '^']) => rng.percent(80),
        _ => rng.percent(50),
    };
    match (quoted, rng.percent(50)) {
        (false, _) => Quote::None,
        (true, true) => Quote::Single,
        (true, false) => Quote::Double,
    }
}

/// A document of the format with the password's line among ordinary ones,
/// and the password's byte range in it.
fn document(
    format: Format,
    key: &str,
    value: &str,
    rng: &mut SplitMix,
) -> (String, std::ops::Range<usize>) {
    let q = quote(format, value, rng);
    let quoted = q.wrap(value);
    let service = rng.pick(&["db", "cache", "api", "worker", "mail"]);
    let upper = service.to_ascii_uppercase();
    let (before, line) = match format {
        Format::Env => (
            format!("# {service}\n{upper}_HOST={service}.internal\n{upper}_USER=app\n"),
            format!("{key}={quoted}"),
        ),
        Format::Shell => {
            let export = if rng.percent(70) { "export " } else { "" };
            (
                format!("#!/bin/sh\nset -e\nexport {upper}_HOST={service}.internal\n"),
                format!("{export}{key}={quoted}"),
            )
        }
        Format::Yaml => match rng.below(3) {
            0 => (String::new(), format!("{key}: {quoted}")),
            1 => (
                format!("{service}:\n  host: {service}.internal\n  port: 5432\n"),
                format!("  {key}: {quoted}"),
            ),
            _ => (
                format!("users:\n  - name: {service}\n"),
                format!("    {key}: {quoted}"),
            ),
        },
        Format::Json => match rng.below(3) {
            0 => (
                format!("{{\n  \"{service}\": {{\n    \"host\": \"{service}.internal\",\n"),
                format!("    \"{key}\": {quoted},"),
            ),
            1 => (
                format!("{{\"{service}\": {{\"host\": \"{service}.internal\", "),
                format!("\"{key}\": {quoted}"),
            ),
            _ => (
                format!("{{\"{service}\":{{\"user\":\"app\","),
                format!("\"{key}\":{quoted}"),
            ),
        },
        Format::ComposeMap => (
            format!(
                "services:\n  {service}:\n    image: {service}:latest\n    environment:\n      {upper}_USER: app\n"
            ),
            format!("      {key}: {quoted}"),
        ),
        Format::ComposeList => {
            let item = format!("{key}={value}");
            let item = if q == Quote::None { item } else { q.wrap(&item) };
            (
                format!(
                    "services:\n  {service}:\n    image: {service}:latest\n    environment:\n      - {upper}_USER=app\n"
                ),
                format!("      - {item}"),
            )
        }
    };
    let after = match format {
        Format::Json if line.starts_with("    ") => "\n    \"port\": 5432\n  }\n}\n",
        Format::Json => "}}\n",
        Format::Shell => "\nexec /usr/local/bin/server\n",
        Format::Env => "\nLOG_LEVEL=info\n",
        Format::Yaml | Format::ComposeMap | Format::ComposeList => "\n    restart: always\n",
    };
    let start = before.len() + line.find(value).expect("the value is on its line");
    (format!("{before}{line}{after}"), start..start + value.len())
}

/// Whether masking covered all of the password with a mask and changed
/// nothing off its line.
fn masked(raw: &str, masked: &str, value: std::ops::Range<usize>) -> bool {
    let prefix = raw
        .bytes()
        .zip(masked.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    let max_suffix = raw.len().min(masked.len()) - prefix;
    let suffix = raw
        .bytes()
        .rev()
        .zip(masked.bytes().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    let changed = prefix..raw.len() - suffix;
    let replacement = &masked[prefix..masked.len() - suffix];
    let line_start = raw[..value.start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = raw[value.end..]
        .find('\n')
        .map_or(raw.len(), |i| value.end + i);
    changed.start <= value.start
        && changed.end >= value.end
        && changed.start >= line_start
        && changed.end <= line_end
        && replacement.contains("[secret:")
}

/// Masked cases out of all, by some property of theirs.
#[derive(Default)]
struct Tally(BTreeMap<String, (usize, usize)>);

impl Tally {
    fn add(&mut self, group: String, hit: bool) {
        let e = self.0.entry(group).or_default();
        e.0 += usize::from(hit);
        e.1 += 1;
    }

    fn report(&self) -> String {
        self.0
            .iter()
            .map(|(g, (hit, all))| format!("{g} {hit}/{all}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[test]
fn generated_passwords_are_masked_in_every_format() {
    let mut rng = SplitMix(SEED);
    let (mut by_format, mut by_kind) = (Tally::default(), Tally::default());
    let mut misses = Vec::new();
    for i in 0..CASES {
        let format = FORMATS[i % FORMATS.len()];
        let kind = *rng.pick(&KINDS);
        let word = *rng.pick(WORDS);
        let mut words = rng.pick(PREFIXES).to_vec();
        // A bare `pwd` is the shell's working directory, not a password.
        if word == "pwd" && words.is_empty() {
            words.push("admin");
        }
        words.push(word);
        let case = *rng.pick(cases(format));
        let key = name(&words, case);
        let value = password(kind, &mut rng);
        let (raw, span) = document(format, &key, &value, &mut rng);
        let out = secrets::mask(&raw, Source::ToolOutput).text;
        let hit = masked(&raw, &out, span.clone());
        by_format.add(format!("{format:?}"), hit);
        by_kind.add(format!("{kind:?}"), hit);
        if !hit {
            let line = |t: &str| {
                let start = t[..span.start.min(t.len())]
                    .rfind('\n')
                    .map_or(0, |i| i + 1);
                t[start..].lines().next().unwrap_or("").to_string()
            };
            misses.push(format!("{format:?}: {}\n    -> {}", line(&raw), line(&out)));
        }
    }
    let hits = CASES - misses.len();
    println!(
        "generated passwords masked {hits}/{CASES} ({:.2}%)\nby format: {}\nby kind: {}\nmissed:\n  {}",
        100.0 * hits as f64 / CASES as f64,
        by_format.report(),
        by_kind.report(),
        misses.join("\n  ")
    );
    assert!(
        hits as f64 >= 0.99 * CASES as f64,
        "{hits} of {CASES} generated passwords masked"
    );
}

//! gitleaks' default rules, run the way gitleaks runs them.
//!
//! `gitleaks-rules.json` is gitleaks' `config/gitleaks.toml` (MIT) as data,
//! exported by `fixtures/tools/gitleaks_rule_tests.py` at the commit named in
//! `fixtures/README.md`, less `generic-api-key` (values named like secrets
//! are `named`'s to judge). Its regexes are gitleaks' own: RE2, which the
//! `regex` crate reads once its classes and word boundaries are made ASCII,
//! as RE2's are. A rule runs only on a text that holds one of its keywords (one
//! Aho-Corasick pass finds them all); a match's secret is the rule's secret
//! group (what it masks), dropped when its entropy is at or under the rule's threshold or an
//! allowlist or stop word takes it (gitleaks' `detect.go`).

use aho_corasick::{AhoCorasick, AhoCorasickKind};
use regex::{Captures, Regex, RegexBuilder};
use serde_json::Value;
use std::ops::Range;
use std::sync::LazyLock;

use super::shannon_entropy;

pub(super) struct Rule {
    pub id: String,
    pub regex: Regex,
    secret: SecretPart,
    /// A secret at or under this Shannon entropy is no secret (0: no check).
    entropy: f64,
    allowlists: Vec<Allowlist>,
}

/// Which part of a match is the secret.
#[derive(Clone, Copy)]
enum SecretPart {
    /// The rule's `secretGroup`.
    Group(usize),
    /// The first capture group that matched something (gitleaks' default).
    FirstGroup,
    /// The whole match: a rule without unnamed groups. Named groups mark
    /// parts of a secret (`jwt-base64`'s header fields), not the secret.
    Whole,
}

/// What an allowlist's regexes look at.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    Secret,
    Match,
    Line,
}

/// Text a rule matched that is no secret.
struct Allowlist {
    target: Target,
    regex: Option<Regex>,
    stopwords: Option<AhoCorasick>,
    /// Both the regexes and the stop words must agree (gitleaks' `AND`).
    all: bool,
}

pub(super) struct Rules {
    pub rules: Vec<Rule>,
    keywords: AhoCorasick,
    /// The rule each keyword of `keywords` belongs to, by pattern index.
    keyword_rule: Vec<usize>,
    global: Allowlist,
}

pub(super) static GITLEAKS: LazyLock<Rules> =
    LazyLock::new(|| Rules::parse(include_str!("gitleaks-rules.json")));

impl Rules {
    fn parse(json: &str) -> Rules {
        let data: Value = serde_json::from_str(json).expect("gitleaks-rules.json");
        let mut rules = Vec::new();
        let mut keywords = Vec::new();
        let mut keyword_rule = Vec::new();
        for r in data["rules"].as_array().expect("rules") {
            for k in strings(&r["keywords"]) {
                keywords.push(k);
                keyword_rule.push(rules.len());
            }
            let regex = compile(r["regex"].as_str().expect("regex"));
            let unnamed_groups = regex.capture_names().skip(1).any(|n| n.is_none());
            let secret = match r["secret_group"].as_u64().unwrap_or(0) as usize {
                0 if unnamed_groups => SecretPart::FirstGroup,
                0 => SecretPart::Whole,
                g => SecretPart::Group(g),
            };
            rules.push(Rule {
                id: r["id"].as_str().expect("id").to_string(),
                regex,
                secret,
                entropy: r["entropy"].as_f64().unwrap_or(0.0),
                allowlists: r["allowlists"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(Allowlist::parse)
                    .collect(),
            });
        }
        Rules {
            rules,
            keywords: AhoCorasick::builder()
                .ascii_case_insensitive(true)
                // A DFA: three times the scan speed of the default NFA on
                // source files, where short keywords (`ey`, `sk`) hit often.
                .kind(Some(AhoCorasickKind::DFA))
                .build(&keywords)
                .expect("keywords"),
            keyword_rule,
            global: Allowlist {
                target: Target::Secret,
                regex: any_of(&strings(&data["allow_regexes"])),
                stopwords: stopwords(&strings(&data["stopwords"])),
                all: false,
            },
        }
    }

    /// The rules a text holds a keyword of, in rule order (every rule has one).
    pub fn candidates(&self, text: &str) -> Vec<&Rule> {
        let mut hit = vec![false; self.rules.len()];
        for m in self.keywords.find_overlapping_iter(text) {
            hit[self.keyword_rule[m.pattern().as_usize()]] = true;
        }
        self.rules
            .iter()
            .zip(hit)
            .filter(|(_, hit)| *hit)
            .map(|(r, _)| r)
            .collect()
    }

    /// Where in `text` the secret of a match of `rule` is, or `None` when it
    /// is none: too little entropy, or an allowlist or stop word takes it.
    pub fn secret(&self, rule: &Rule, text: &str, c: &Captures) -> Option<Range<usize>> {
        let whole = c.get(0)?;
        let group = match rule.secret {
            SecretPart::Group(g) => c.get(g),
            SecretPart::FirstGroup => c.iter().skip(1).flatten().find(|m| !m.is_empty()),
            SecretPart::Whole => None,
        };
        let secret = group.unwrap_or(whole);
        let value = secret.as_str().trim_matches('\n');
        if rule.entropy > 0.0 && shannon_entropy(value) <= rule.entropy {
            return None;
        }
        let line_start = text[..whole.start()].rfind('\n').map_or(0, |i| i + 1);
        let line_end = text[whole.end()..]
            .find('\n')
            .map_or(text.len(), |i| whole.end() + i);
        let target = |t: Target| match t {
            Target::Secret => value,
            Target::Match => whole.as_str(),
            Target::Line => &text[line_start..line_end],
        };
        let allowed = std::iter::once(&self.global)
            .chain(&rule.allowlists)
            .any(|a| a.allows(target(a.target), value));
        (!allowed).then(|| secret.range())
    }
}

impl Rules {
    /// Whether rule `id`'s allowlists take `secret` by itself, as gitleaks'
    /// `gcp-api-key` takes Google's published sample keys.
    pub fn allowlisted(&self, id: &str, secret: &str) -> bool {
        self.rules
            .iter()
            .filter(|r| r.id == id)
            .flat_map(|r| &r.allowlists)
            .any(|a| a.target == Target::Secret && a.allows(secret, secret))
    }
}

impl Allowlist {
    fn parse(a: &Value) -> Allowlist {
        Allowlist {
            target: match a["target"].as_str() {
                Some("match") => Target::Match,
                Some("line") => Target::Line,
                _ => Target::Secret,
            },
            regex: any_of(&strings(&a["regexes"])),
            stopwords: stopwords(&strings(&a["stopwords"])),
            all: a["all"].as_bool().unwrap_or(false),
        }
    }

    fn allows(&self, target: &str, secret: &str) -> bool {
        let by_regex = self.regex.as_ref().map(|r| r.is_match(target));
        let by_word = self.stopwords.as_ref().map(|w| w.is_match(secret));
        if self.all {
            by_regex.unwrap_or(true) && by_word.unwrap_or(true)
        } else {
            by_regex.unwrap_or(false) || by_word.unwrap_or(false)
        }
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_string))
        .collect()
}

/// One regex for a list of them: gitleaks checks whether any matches.
fn any_of(patterns: &[String]) -> Option<Regex> {
    (!patterns.is_empty()).then(|| {
        let alternatives: Vec<String> = patterns.iter().map(|p| format!("(?:{p})")).collect();
        compile(&alternatives.join("|"))
    })
}

/// Stop words are matched case-insensitively anywhere in the secret.
fn stopwords(words: &[String]) -> Option<AhoCorasick> {
    (!words.is_empty()).then(|| {
        AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(words)
            .expect("stop words")
    })
}

fn compile(pattern: &str) -> Regex {
    RegexBuilder::new(&from_re2(pattern))
        // A few rules count repetitions in the hundreds.
        .size_limit(64 << 20)
        .build()
        .unwrap_or_else(|e| panic!("gitleaks regex {pattern}: {e}"))
}

/// An RE2 pattern as the `regex` crate reads it. RE2's `\w`, `\d`, `\s` and
/// `\b` are ASCII, the crate's Unicode unless told otherwise: each becomes
/// its ASCII class, inside a bracket class too (`[\w.-]` is `[[:word:].-]`).
/// RE2 reads a `{` that starts no repetition (`{{`) as itself; the crate
/// wants it escaped.
fn from_re2(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 32);
    let mut chars = pattern.chars();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(e) = chars.next() else {
                    out.push(c);
                    break;
                };
                let class = match e {
                    'w' => Some("[:word:]"),
                    'W' => Some("[:^word:]"),
                    'd' => Some("[:digit:]"),
                    'D' => Some("[:^digit:]"),
                    's' => Some("[:space:]"),
                    'S' => Some("[:^space:]"),
                    _ => None,
                };
                match (class, in_class) {
                    (Some(cls), true) => out.push_str(cls),
                    (Some(cls), false) => {
                        out.push('[');
                        out.push_str(cls);
                        out.push(']');
                    }
                    (None, false) if e == 'b' => out.push_str(r"(?-u:\b)"),
                    (None, _) => {
                        out.push(c);
                        out.push(e);
                    }
                }
            }
            '[' if !in_class => {
                in_class = true;
                out.push(c);
                // A `]` first in a class (after an optional `^`) is a literal.
                let rest = chars.as_str();
                let skip = usize::from(rest.starts_with('^'));
                if rest[skip..].starts_with(']') {
                    out.push_str(&rest[..=skip]);
                    chars = rest[skip + 1..].chars();
                }
            }
            '[' if chars.as_str().starts_with(':') => {
                // A POSIX class inside a bracket class: copied whole.
                let rest = chars.as_str();
                let end = rest.find(":]").map_or(rest.len(), |i| i + 2);
                out.push(c);
                out.push_str(&rest[..end]);
                chars = rest[end..].chars();
            }
            '{' if !in_class && !repetition(chars.as_str()) => out.push_str(r"\{"),
            ']' if in_class => {
                in_class = false;
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// Whether what follows a `{` closes a repetition: `n}`, `n,}` or `n,m}`.
fn repetition(rest: &str) -> bool {
    let Some(end) = rest.find('}') else {
        return false;
    };
    let (min, max) = rest[..end].split_once(',').unwrap_or((&rest[..end], "0"));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    !min.is_empty() && digits(min) && digits(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_and_boundaries_become_ascii() {
        // Not raw strings: tidy reads every raw string's `\b` as a regex's.
        assert_eq!(
            from_re2("\\b[\\w.-]{0,50}\\s[^\\d\\]x]\\\\w\\B"),
            "(?-u:\\b)[[:word:].-]{0,50}[[:space:]][^[:digit:]\\]x]\\\\w\\B"
        );
        assert_eq!(from_re2(r"[]a][[:alnum:]\w]"), r"[]a][[:alnum:][:word:]]");
        assert_eq!(
            from_re2(r"a{2}b{1,}c{1,3}\${{x}}"),
            r"a{2}b{1,}c{1,3}\$\{\{x}}"
        );
        let w = compile(r"\w+");
        assert_eq!(w.find("é_ab9").map(|m| m.as_str()), Some("_ab9"));
    }

    #[test]
    fn every_rule_compiles_and_has_a_keyword() {
        let rules = &GITLEAKS.rules;
        assert!(rules.len() > 200, "{} rules", rules.len());
        let mut with_keyword = vec![false; rules.len()];
        for &r in &GITLEAKS.keyword_rule {
            with_keyword[r] = true;
        }
        let without: Vec<&str> = rules
            .iter()
            .zip(with_keyword)
            .filter(|(_, k)| !k)
            .map(|(r, _)| r.id.as_str())
            .collect();
        assert!(without.is_empty(), "no keyword: {without:?}");
    }

    #[test]
    fn entropy_stop_words_and_allowlists_drop_matches() {
        let secret = |id: &str, text: &str| {
            let r = GITLEAKS.rules.iter().find(|r| r.id == id).unwrap();
            let c = r.regex.captures(text)?;
            GITLEAKS.secret(r, text, &c).map(|s| text[s].to_string())
        };
        let key = "ghp_8ZxKq2Lm7Vn4Rt6Yw1Pb3Jd5Hf9Sc0Ga2Ek7";
        assert_eq!(secret("github-pat", key).as_deref(), Some(key));
        // Too little entropy; a global stop word.
        assert_eq!(
            secret("github-pat", "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
            None
        );
        assert_eq!(
            secret("github-pat", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
            None
        );
        // The rule's allowlist: AWS's documented example key.
        assert_eq!(secret("aws-access-token", "AKIAIOSFODNN7EXAMPLE"), None);
        assert_eq!(
            secret("aws-access-token", "key AKIAZ7QW3ERT5YUI2OPA").as_deref(),
            Some("AKIAZ7QW3ERT5YUI2OPA")
        );
    }
}

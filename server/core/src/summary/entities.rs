//! Entities of a text (paths, locations, symbols, error codes, ticked
//! names), ranked: what a header or a fact pointer names.

use std::sync::LazyLock;

use regex::Regex;

use crate::arguments::PATTERN_KEYS;

pub(super) static PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:\.{0,2}/)?(?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,5}(?-u:\b)").unwrap()
});
pub(super) static LOCATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:[\w.-]+/)*[\w.-]+\.[A-Za-z][A-Za-z0-9]{0,5}:\d+(?::\d+)?").unwrap()
});
pub(super) static SYMBOL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?-u:\b)[A-Za-z_]\w*(?:::[A-Za-z_]\w*)+(?:\(\))?", // Foo::bar, a::b::c
        r"|(?-u:\b)[A-Za-z_][A-Za-z0-9]*_\w*\(",             // snake_case(
        r"|(?-u:\b)[a-z]+[A-Z]\w*\(",                        // camelCase(
        r"|(?-u:\b)[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+(?-u:\b)", // CamelCase
        r"|(?-u:\b)test_\w+"                                 // test names
    ))
    .unwrap()
});
/// Error codes (`E0308`, `TS2345`, `HTTP404`). ASCII word boundaries:
/// codes are ASCII, and a Unicode `\b` makes the regex engine fall back to
/// its slowest search on a line with any non-ASCII byte.
pub(super) static CODE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?-u:\b)(?:E[0-9]{4}|TS[0-9]{4,5}|[A-Z]{1,4}[0-9]{3,5})(?-u:\b)").unwrap()
});
pub(super) static TICKED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"`([^`\n]{2,60})`").unwrap());
/// Abbreviations that look like file names.
pub(super) const NOT_PATHS: &[&str] = &["e.g", "i.e", "etc.", "vs.", "a.m", "p.m"];
/// Entities in the order they matter: codes, paths, symbols, other terms;
/// within a kind, by how often they occur, then by first sight.
#[derive(Default)]
pub(super) struct EntityList {
    seen: Vec<(String, u32, u8)>,
}

impl EntityList {
    fn add(&mut self, e: &str, rank: u8) {
        let call = e.strip_suffix("()");
        let e = call
            .unwrap_or(e)
            .trim_matches(|c: char| matches!(c, '.' | ',' | ':' | ';' | '"' | '\'' | ')' | '('));
        let e = if call.is_some() {
            format!("{e}()")
        } else {
            e.to_string()
        };
        // A mask names no entity: every masked secret reads the same.
        if e.chars().count() < 2 || e.chars().count() > 80 || crate::secrets::is_masked(&e) {
            return;
        }
        match self.seen.iter_mut().find(|(s, ..)| *s == e) {
            Some(entry) => {
                entry.1 += 1;
                entry.2 = entry.2.min(rank);
            }
            None => self.seen.push((e, 1, rank)),
        }
    }

    pub(super) fn push(&mut self, e: &str) {
        self.add(e, if looks_like_path(e) { 1 } else { 3 });
    }

    pub(super) fn scan_codes(&mut self, text: &str) {
        for m in CODE.find_iter(text).take(8) {
            self.add(m.as_str(), 0);
        }
    }

    pub(super) fn scan(&mut self, text: &str) {
        self.scan_codes(text);
        for m in PATH.find_iter(text) {
            let p = m.as_str();
            // `a_elems.len()` is a call, not a file.
            let call = text[m.end()..].starts_with('(');
            if looks_like_path(p) && !p.starts_with("//") && !call {
                self.add(p, 1);
            }
        }
        for m in SYMBOL.find_iter(text) {
            let s = m.as_str();
            let s = if s.ends_with('(') {
                format!("{s})")
            } else {
                s.to_string()
            };
            self.add(&s, 2);
        }
        for c in TICKED.captures_iter(text) {
            self.push(c[1].trim());
        }
    }

    /// Short string values of tool arguments: ids, names, places, symbols.
    /// A search pattern is none of these: `\.len\(` names no file.
    pub(super) fn scan_arguments(&mut self, arguments: &str) {
        let Ok(serde_json::Value::Object(map)) =
            serde_json::from_str::<serde_json::Value>(arguments)
        else {
            return;
        };
        for (k, v) in &map {
            if PATTERN_KEYS.contains(&k.as_str()) {
                continue;
            }
            // A short one-line value names something; a value of several
            // lines is code (an edit's old and new text), and an entity is
            // one line of a header.
            if let Some(s) = v.as_str().filter(|s| !s.contains(['\n', '\r'])) {
                let s = s.trim();
                if !s.is_empty() && s.len() <= 40 && s.split_whitespace().count() <= 3 {
                    self.push(s);
                }
            }
        }
    }

    pub(super) fn ranked(mut self) -> Vec<String> {
        let order: Vec<String> = self.seen.iter().map(|(s, ..)| s.clone()).collect();
        let first = |s: &String| order.iter().position(|o| o == s).unwrap_or(0);
        self.seen
            .sort_by_key(|(s, n, rank)| (*rank, std::cmp::Reverse(*n), first(s)));
        self.seen.into_iter().take(16).map(|(s, ..)| s).collect()
    }
}

/// The entities a text names: error codes, paths, symbols, code names.
pub fn entities_of(text: &str) -> Vec<String> {
    let mut list = EntityList::default();
    list.scan(text);
    list.ranked()
}

pub(crate) fn looks_like_path(s: &str) -> bool {
    if NOT_PATHS.iter().any(|n| s.eq_ignore_ascii_case(n)) || s.contains("://") || s.contains(' ') {
        return false;
    }
    // A regex (`\.len\(`, `foo.*rs`) or a glob (`src/**/*.rs`) is no file.
    let escaped_punctuation = s
        .as_bytes()
        .windows(2)
        .any(|w| w[0] == b'\\' && w[1].is_ascii_punctuation());
    if escaped_punctuation || s.contains(['*', '?', '|', '^', '$']) {
        return false;
    }
    let name = s.rsplit('/').next().unwrap_or(s);
    let has_ext = name.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && ext.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
    });
    has_ext && !name.chars().all(|c| c.is_ascii_digit() || c == '.')
}

/// The file name of a path: headers have no room for directories.
pub(super) fn short_entity(e: &str) -> &str {
    if looks_like_path(e) {
        e.rsplit('/').next().unwrap_or(e)
    } else {
        e
    }
}

//! Extractive header and summary of one exchange: deterministic, no model.
//!
//! `ExchangeFacts` reads what an exchange says (the ask, the tool calls and
//! what they did, errors, conclusions, open points, entities); the header and
//! summary are assembled from those facts and fitted to their caps by
//! dropping the least important points first, cutting text only as a last
//! resort.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use crate::config::LayerCaps;
use crate::digest::OutputKind;
use crate::exchange::{Counted, KeptMessage, Outcome};
use crate::fit::{fit_points, fit_text, Point};
use crate::message::{Role, UserKind};
use crate::text::{clip_chars, one_line};
use crate::tokens::{self, Encoding};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trio {
    pub header: Counted,
    pub summary: Counted,
    pub outcome: Outcome,
    pub entities: Vec<String>,
}

/// Summarises one exchange. The id is not part of the texts: it travels
/// beside them, and every layer prints it its own way. `seen` tells which
/// of its words the exchanges before it already use (`SeenTerms::of`).
pub fn summarise(
    facts: &ExchangeFacts,
    seen: &SeenTerms,
    caps: &LayerCaps,
    encoding: Encoding,
) -> Trio {
    Trio {
        header: header(facts, seen, caps.header_max, encoding),
        summary: summary(facts, caps.summary_max, encoding),
        outcome: facts.outcome,
        entities: facts.entities.clone(),
    }
}

/// How many of the exchanges before one (the newest `TERM_WINDOW` of its
/// session) use each word: distinctiveness is relative to the session, and
/// a word most exchanges use points at none of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SeenTerms {
    /// How many exchanges were counted (at most `TERM_WINDOW`).
    pub exchanges: u32,
    /// Lower-case term -> how many of them use it.
    pub counts: HashMap<String, u32>,
}

/// How many earlier exchanges a header's words are compared with.
pub const TERM_WINDOW: u32 = 64;

impl SeenTerms {
    /// Counts the terms (`ExchangeFacts::terms`) of earlier exchanges,
    /// newest last; only the newest `TERM_WINDOW` that have any count.
    pub fn of<'a>(earlier: impl DoubleEndedIterator<Item = &'a [String]>) -> SeenTerms {
        let mut seen = SeenTerms::default();
        for terms in earlier
            .rev()
            .filter(|t| !t.is_empty())
            .take(TERM_WINDOW as usize)
        {
            seen.exchanges += 1;
            for t in terms {
                *seen.counts.entry(t.clone()).or_default() += 1;
            }
        }
        seen
    }

    fn count(&self, word: &str) -> u32 {
        self.counts.get(&word.to_lowercase()).copied().unwrap_or(0)
    }

    /// Used by a quarter or more of at least four earlier exchanges.
    fn is_common(&self, word: &str) -> bool {
        self.exchanges >= 4 && self.count(word) * 4 >= self.exchanges
    }
}

/// What a tool call does to the world, judged from its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolClass {
    /// Looks without changing anything: read, list, search, get.
    Read,
    /// Changes files: write, edit, patch, move, delete.
    Edit,
    /// Runs a command line.
    Run,
    /// Any other action (book, order, send, start...).
    Act,
}

/// One tool call of an exchange and how its result went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Action {
    pub tool: String,
    pub class: ToolClass,
    /// The file or command the call is about, when its arguments name one.
    pub target: Option<String>,
    /// Short `key=value` arguments, for calls that are not reads or edits.
    pub brief: String,
    /// `None` while the call has no result.
    pub failed: Option<bool>,
    /// The result's headline and blob id.
    pub headline: Option<String>,
    pub blob: Option<String>,
}

/// What an exchange says, extracted once; summaries and the current
/// context are built from it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExchangeFacts {
    pub ask: String,
    pub feedback: bool,
    pub actions: Vec<Action>,
    /// Each failure once: what failed, where (file:line), codes, blob.
    pub errors: Vec<String>,
    /// Sentences of the assistant's final answer, most telling first.
    pub conclusions: Vec<String>,
    /// Questions and next steps the assistant left open.
    pub open: Vec<String>,
    /// Terms the assistant explained at length (bold, headings, code names).
    pub explained: Vec<String>,
    pub entities: Vec<String>,
    pub outcome: Outcome,
}

static PATH: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:\.{0,2}/)?(?:[\w.-]+/)*[\w-][\w.-]*\.[A-Za-z][A-Za-z0-9]{0,5}\b").unwrap()
});
static LOCATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:[\w.-]+/)*[\w.-]+\.[A-Za-z][A-Za-z0-9]{0,5}:\d+(?::\d+)?").unwrap()
});
static SYMBOL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"\b[A-Za-z_]\w*(?:::[A-Za-z_]\w*)+(?:\(\))?", // Foo::bar, a::b::c
        r"|\b[A-Za-z_][A-Za-z0-9]*_\w*\(",             // snake_case(
        r"|\b[a-z]+[A-Z]\w*\(",                        // camelCase(
        r"|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b",     // CamelCase
        r"|\btest_\w+"                                 // test names
    ))
    .unwrap()
});
static CODE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(?:E\d{4}|TS\d{4,5}|[A-Z]{1,4}\d{3,5})\b").unwrap());
static TICKED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"`([^`\n]{2,60})`").unwrap());
/// An error key with a value: a non-empty string, an object, a non-empty
/// list, `true` or a code (not `null`, `false`, `""` or `[]`).
static JSON_ERROR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)"(error|errors|exception)"\s*:\s*("[^"]|\{|\[\s*[^\]\s]|true|\d)"#).unwrap()
});
static BOLD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\*\*([^*\n]{2,60})\*\*").unwrap());
static FAILURE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\b(error|errors|failed|failure|failing|panicked|exception|traceback|denied|not found|no such|invalid|cannot|unable)\b|"error"\s*:"#)
        .unwrap()
});
static NO_FAILURE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b0 (errors|failed)\b|\bno errors\b|\bsuccess").unwrap());

/// Abbreviations that look like file names.
const NOT_PATHS: &[&str] = &["e.g", "i.e", "etc.", "vs.", "a.m", "p.m"];
const STOPWORDS: &[&str] = &[
    "a", "an", "the", "please", "can", "could", "would", "will", "should", "shall", "may", "might",
    "must", "you", "i", "i'd", "i'm", "i've", "i'll", "we", "we're", "we've", "let's", "lets",
    "me", "my", "our", "us", "your", "their", "his", "her", "its", "it's", "to", "want", "need",
    "like", "hey", "hi", "hello", "ok", "okay", "so", "now", "just", "also", "kindly", "is", "are",
    "was", "were", "be", "been", "being", "am", "it", "this", "that", "these", "those", "there",
    "here", "of", "for", "and", "or", "but", "then", "do", "does", "did", "done", "help", "in",
    "on", "at", "with", "by", "as", "into", "about", "have", "has", "had", "get", "got", "some",
    "any", "very", "really", "quite", "bit", "what", "what's", "which", "who", "how", "if", "when",
    "where", "go", "going", "make", "sure", "thanks", "thank", "yes", "process", "up", "out",
    "all",
];

/// Whether `word` (any case) is a filler word that points at nothing: not
/// a header word, a fact pointer or a search term.
pub fn is_stopword(word: &str) -> bool {
    STOPWORDS.contains(&word.to_lowercase().as_str())
}

impl ExchangeFacts {
    pub fn of(messages: &[KeptMessage]) -> ExchangeFacts {
        let mut facts = ExchangeFacts::default();
        let mut by_call: HashMap<&str, usize> = HashMap::new();
        let mut entities = EntityList::default();
        for m in messages {
            let msg = &m.message;
            match msg.role {
                Role::User if facts.ask.is_empty() => {
                    facts.ask = first_sentences(&msg.content, 2);
                    facts.feedback = msg.kind == Some(UserKind::Feedback);
                    entities.scan(&msg.content);
                }
                Role::User | Role::System => entities.scan(&msg.content),
                Role::Assistant => {
                    entities.scan(&prose(&msg.content));
                    for call in &msg.tool_calls {
                        let action = action_of(&call.name, &call.arguments);
                        if action.class != ToolClass::Run {
                            action
                                .target
                                .iter()
                                .flat_map(|t| t.split(" → "))
                                .for_each(|t| entities.push(t));
                        }
                        entities.scan_arguments(&call.arguments);
                        by_call.insert(call.id.as_str(), facts.actions.len());
                        facts.actions.push(action);
                    }
                }
                Role::Tool => {
                    let idx = msg
                        .tool_call_id
                        .as_deref()
                        .and_then(|id| by_call.get(id).copied())
                        .or_else(|| facts.actions.iter().position(|a| a.failed.is_none()));
                    let text = m
                        .result
                        .as_ref()
                        .map_or(msg.content.as_str(), |r| r.headline.as_str());
                    // JSON says it failed with an error key; its values are
                    // data ("Error encountered…" in a ticket's description).
                    let failed = match m.result.as_ref().map(|r| r.kind) {
                        Some(OutputKind::Json) => JSON_ERROR.is_match(&msg.content),
                        _ => {
                            FAILURE.is_match(&clip_chars(&msg.content, 400))
                                && !NO_FAILURE.is_match(text)
                        }
                    };
                    // A whole output has no id worth citing: it is all there.
                    let blob = m
                        .result
                        .as_ref()
                        .filter(|r| !r.whole)
                        .map(|r| r.blob.short_id());
                    let headline = clip_chars(&one_line(text.lines().next().unwrap_or("")), 100);
                    if failed {
                        facts
                            .errors
                            .push(error_line(&headline, &msg.content, blob.as_deref()));
                        entities.scan_codes(&msg.content);
                    }
                    if let Some(action) = idx.map(|i| &mut facts.actions[i]) {
                        action.failed = Some(failed);
                        action.headline = Some(headline);
                        action.blob = blob;
                    }
                }
            }
        }
        let last_answer = messages
            .iter()
            .rev()
            .find(|m| m.message.role == Role::Assistant && !m.message.content.trim().is_empty());
        if let Some(answer) = last_answer {
            let text = prose(&answer.message.content);
            let sentences = sentences(&text);
            facts.open = sentences
                .iter()
                .filter(|s| is_open_point(s))
                .map(|s| clip_chars(s, 160))
                .collect();
            let mut ranked: Vec<(usize, &String)> = Vec::new();
            for s in sentences.iter().filter(|s| !is_open_point(s)) {
                if !ranked.iter().any(|(_, r)| *r == s) {
                    ranked.push((ranked.len(), s));
                }
            }
            ranked.sort_by_key(|(i, s)| (!is_conclusion(s), *i));
            facts.conclusions = ranked
                .into_iter()
                .take(4)
                .map(|(_, s)| clip_chars(s, 200))
                .collect();
            if text.split_whitespace().count() >= 60 {
                facts.explained = explained_terms(&answer.message.content);
            }
        }
        facts.outcome = outcome(messages, &facts.actions);
        facts.entities = entities.ranked();
        facts
    }

    /// The words a header may carry, lower-case, each once, sorted: those of
    /// the ask and the answer, tool names, targets and entities. What
    /// `SeenTerms` counts for the exchanges after this one.
    pub fn terms(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .conclusions
            .iter()
            .map(String::as_str)
            .chain(std::iter::once(self.ask.as_str()))
            .flat_map(|t| t.split_whitespace())
            .map(trim_word)
            .filter(|w| w.chars().any(char::is_alphanumeric) && !is_stopword(w))
            .map(short_entity)
            .chain(self.actions.iter().map(|a| a.tool.as_str()))
            .chain(
                self.actions
                    .iter()
                    .filter_map(|a| a.target.as_deref())
                    .map(short_entity),
            )
            .chain(self.entities.iter().map(|e| short_entity(e)))
            .map(str::to_lowercase)
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Files the exchange changed, in call order, each once.
    pub fn edited_files(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for a in self
            .actions
            .iter()
            .filter(|a| a.class == ToolClass::Edit && a.failed != Some(true))
        {
            if let Some(t) = a.target.as_deref() {
                if !out.contains(&t) {
                    out.push(t);
                }
            }
        }
        out
    }
}

fn outcome(messages: &[KeptMessage], actions: &[Action]) -> Outcome {
    let last_result = actions.iter().rev().find_map(|a| a.failed);
    if last_result == Some(true) {
        return Outcome::Error;
    }
    match messages.last() {
        Some(m) if m.message.role == Role::Assistant && m.message.tool_calls.is_empty() => {
            Outcome::Completed
        }
        _ => Outcome::Ongoing,
    }
}

fn error_line(headline: &str, content: &str, blob: Option<&str>) -> String {
    let mut parts = vec![clip_chars(headline, 80)];
    let mut seen: Vec<&str> = Vec::new();
    for m in LOCATION.find_iter(content).chain(CODE.find_iter(content)) {
        if seen.len() < 4 && !seen.contains(&m.as_str()) && !headline.contains(m.as_str()) {
            seen.push(m.as_str());
        }
    }
    if !seen.is_empty() {
        parts.push(format!("at {}", seen.join(", ")));
    }
    if let Some(b) = blob {
        parts.push(format!("[{b}]"));
    }
    parts.join(" ")
}

fn tool_class(tool: &str) -> ToolClass {
    let lower = tool.to_ascii_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let first = split_camel(tool).into_iter().next().unwrap_or_default();
    let has =
        |list: &[&str]| words.iter().any(|w| list.contains(w)) || list.contains(&first.as_str());
    if has(&[
        "bash", "shell", "run", "exec", "execute", "terminal", "command", "sh",
    ]) && !has(&["test"])
    {
        return ToolClass::Run;
    }
    if has(&[
        "write", "edit", "patch", "apply", "replace", "insert", "append", "create", "delete",
        "remove", "rm", "mv", "move", "rename", "cp", "copy", "touch", "mkdir", "rmdir", "save",
        "str",
    ]) {
        return ToolClass::Edit;
    }
    if has(&[
        "read", "get", "list", "ls", "cat", "view", "open", "search", "grep", "find", "glob",
        "fetch", "query", "show", "describe", "display", "check", "stat", "head", "tail", "diff",
        "status", "pwd", "du", "wc", "lookup", "inspect", "estimate", "retrieve", "tree", "cd",
    ]) {
        return ToolClass::Read;
    }
    ToolClass::Act
}

fn split_camel(name: &str) -> Vec<String> {
    let mut words = vec![String::new()];
    for c in name.chars() {
        if c.is_ascii_uppercase() && !words.last().unwrap().is_empty() {
            words.push(String::new());
        }
        words.last_mut().unwrap().push(c.to_ascii_lowercase());
    }
    words
}

const PATH_KEYS: &[&str] = &[
    "path",
    "file_path",
    "filePath",
    "target_file",
    "absolute_path",
    "file",
    "filename",
    "file_name",
    "dir",
    "directory",
    "source",
    "old_path",
    "destination",
    "new_path",
];
const COMMAND_KEYS: &[&str] = &["command", "cmd", "script"];
/// Arguments that hold what a search looks for: a regex or a query, which
/// may look like a file name (`\.len\(`, `*.rs`) and name none.
const PATTERN_KEYS: &[&str] = &[
    "pattern",
    "regex",
    "query",
    "search",
    "search_term",
    "searchTerm",
    "q",
    "glob",
    "include",
    "exclude",
];

fn action_of(tool: &str, arguments: &str) -> Action {
    let class = tool_class(tool);
    let args: serde_json::Value =
        serde_json::from_str(arguments).unwrap_or(serde_json::Value::Null);
    let field = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| args.get(*k).and_then(|v| v.as_str()))
            .map(str::to_string)
    };
    let target = match class {
        ToolClass::Run => field(COMMAND_KEYS).map(|c| clip_chars(&one_line(&c), 60)),
        _ => {
            // A move names two paths: `from → to`.
            let paths: Vec<&str> = PATH_KEYS
                .iter()
                .filter_map(|k| args.get(*k)?.as_str())
                .collect();
            (!paths.is_empty()).then(|| paths.join(" → "))
        }
    };
    let brief = match &args {
        serde_json::Value::Object(map) => map
            .iter()
            .filter_map(|(k, v)| {
                let v = match v {
                    serde_json::Value::String(s) => clip_chars(&one_line(s), 30),
                    serde_json::Value::Number(_) | serde_json::Value::Bool(_) => v.to_string(),
                    _ => return None,
                };
                Some(format!("{k}={v}"))
            })
            .collect::<Vec<_>>()
            .join(", "),
        _ => String::new(),
    };
    Action {
        tool: tool.to_string(),
        class,
        target,
        brief,
        failed: None,
        headline: None,
        blob: None,
    }
}

/// Entities in the order they matter: codes, paths, symbols, other terms;
/// within a kind, by how often they occur, then by first sight.
#[derive(Default)]
struct EntityList {
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

    fn push(&mut self, e: &str) {
        self.add(e, if looks_like_path(e) { 1 } else { 3 });
    }

    fn scan_codes(&mut self, text: &str) {
        for m in CODE.find_iter(text).take(8) {
            self.add(m.as_str(), 0);
        }
    }

    fn scan(&mut self, text: &str) {
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
    fn scan_arguments(&mut self, arguments: &str) {
        let Ok(serde_json::Value::Object(map)) =
            serde_json::from_str::<serde_json::Value>(arguments)
        else {
            return;
        };
        for (k, v) in &map {
            if PATTERN_KEYS.contains(&k.as_str()) {
                continue;
            }
            if let Some(s) = v.as_str() {
                if !s.is_empty() && s.len() <= 40 && s.split_whitespace().count() <= 3 {
                    self.push(s);
                }
            }
        }
    }

    fn ranked(mut self) -> Vec<String> {
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

/// Assistant text without code blocks: prose is where conclusions live.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if !in_code {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Sentences of `text`: split after `.`, `!`, `?` and at line ends; list
/// markers and headings stripped.
pub fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line
            .trim()
            .trim_start_matches(['#', '-', '*', '>', '•'])
            .trim();
        let line = strip_numbering(line);
        let mut start = 0;
        let chars: Vec<(usize, char)> = line.char_indices().collect();
        for (k, &(i, c)) in chars.iter().enumerate() {
            let next_is_space = chars.get(k + 1).is_some_and(|(_, n)| n.is_whitespace());
            if matches!(c, '.' | '!' | '?') && next_is_space {
                out.push(line[start..=i].trim().to_string());
                start = i + 1;
            }
        }
        out.push(line[start..].trim().to_string());
    }
    out.retain(|s| s.chars().any(char::is_alphanumeric));
    out
}

fn strip_numbering(line: &str) -> &str {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    match line[digits..].strip_prefix(['.', ')']) {
        Some(rest) if digits > 0 => rest.trim_start(),
        _ => line,
    }
}

fn first_sentences(text: &str, n: usize) -> String {
    clip_chars(
        &sentences(text)
            .into_iter()
            .take(n)
            .collect::<Vec<_>>()
            .join(" "),
        240,
    )
}

fn is_open_point(s: &str) -> bool {
    let lower = s.to_lowercase();
    s.ends_with('?')
        || ["next", "todo", "then ", "remaining", "follow-up"]
            .iter()
            .any(|w| lower.starts_with(w))
        || [
            "still need",
            "not yet",
            "left to do",
            "we should",
            "you may want",
        ]
        .iter()
        .any(|w| lower.contains(w))
}

fn is_conclusion(s: &str) -> bool {
    let lower = s.to_lowercase();
    [
        "fixed",
        "done",
        "now ",
        "because",
        "caused",
        "cause",
        "decided",
        "instead",
        "the issue",
        "the problem",
        "resolved",
        "added",
        "changed",
        "updated",
        "created",
        "booked",
        "placed",
        "found",
        "all ",
        "succe",
        "complete",
        "result",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// Terms an answer explains: bold text, headings and code names in its prose.
fn explained_terms(text: &str) -> Vec<String> {
    let prose = prose(text);
    let mut terms: Vec<String> = Vec::new();
    let headings = prose
        .lines()
        .filter_map(|l| l.trim().strip_prefix('#'))
        .map(|h| h.trim_start_matches('#').trim());
    let bold = BOLD
        .captures_iter(&prose)
        .map(|c| c.get(1).unwrap().as_str().trim());
    let ticked = TICKED
        .captures_iter(&prose)
        .map(|c| c.get(1).unwrap().as_str().trim());
    for t in headings.chain(bold).chain(ticked) {
        let t = clip_chars(t.trim_end_matches(':'), 50);
        if !t.is_empty() && !terms.iter().any(|e| e.eq_ignore_ascii_case(&t)) {
            terms.push(t);
        }
    }
    terms.truncate(8);
    terms
}

/// The file name of a path: headers have no room for directories.
fn short_entity(e: &str) -> &str {
    if looks_like_path(e) {
        e.rsplit('/').next().unwrap_or(e)
    } else {
        e
    }
}

/// A word of prose without the punctuation around it.
fn trim_word(raw: &str) -> &str {
    raw.trim_matches(|c: char| {
        matches!(
            c,
            ',' | '.' | '!' | '?' | ';' | ':' | '"' | '\'' | '`' | '(' | ')'
        )
    })
}

fn header(facts: &ExchangeFacts, seen: &SeenTerms, cap: u32, encoding: Encoding) -> Counted {
    // Words of the ask without filler, each marked salient when it names
    // something: a capitalised word inside a sentence, a number, an id.
    // Words that many earlier exchanges use point at none of them.
    let mut topic: Vec<(String, bool)> = Vec::new();
    let mut sentence_start = true;
    for raw in facts.ask.split_whitespace() {
        let w = trim_word(raw);
        let starts = std::mem::replace(&mut sentence_start, raw.ends_with(['.', '!', '?']));
        if !w.chars().any(char::is_alphanumeric)
            || is_stopword(w)
            || seen.is_common(short_entity(w))
        {
            continue;
        }
        let named = w
            .chars()
            .any(|c| c.is_ascii_digit() || c == '_' || c == '/')
            || w.chars().skip(1).any(char::is_uppercase)
            || (!starts && w.starts_with(char::is_uppercase));
        let w = short_entity(w);
        if !topic.iter().any(|(t, _)| t.eq_ignore_ascii_case(w)) {
            topic.push((w.to_string(), named));
        }
    }
    if topic.len() < 2 {
        // Feedback such as "yes, go on" says little: the answer says more.
        let answer = facts.conclusions.first().map_or("", String::as_str);
        let words = answer
            .split_whitespace()
            .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
            .filter(|w| !w.is_empty() && !is_stopword(w) && !seen.is_common(short_entity(w)));
        topic.extend(words.take(5).map(|w| (w.to_string(), false)));
    }
    // Domain actions (book_flight, place_order) say what happened; file
    // and shell tools say little, their paths are among the entities.
    let mut tools: Vec<&str> = Vec::new();
    let domain = facts
        .actions
        .iter()
        .filter(|a| a.target.is_none() && a.class != ToolClass::Run);
    let (acts, looks): (Vec<&Action>, Vec<&Action>) =
        domain.partition(|a| a.class != ToolClass::Read);
    for a in acts.into_iter().chain(looks) {
        if !tools.contains(&a.tool.as_str()) {
            tools.push(&a.tool);
        }
    }
    let in_topic = |e: &str| {
        topic
            .iter()
            .any(|(t, _)| t.contains(e) || e.contains(t.as_str()))
    };
    // The rarest entities first: a file every exchange reads says nothing.
    let mut entities: Vec<&str> = facts
        .entities
        .iter()
        .map(|e| short_entity(e))
        .filter(|e| !in_topic(e) && !seen.is_common(e))
        .collect();
    entities.sort_by_key(|e| seen.count(e));
    entities.truncate(2);
    // A question's header also says what the answer found: its values
    // (versions, numbers, ids) are what a later question points back at.
    let mut answer_values: Vec<String> = Vec::new();
    if facts.ask.contains('?') {
        let words = facts
            .conclusions
            .iter()
            .flat_map(|c| c.split_whitespace())
            .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
            // Not a bare small number ("line 5"): too common to point.
            .filter(|w| w.chars().any(|c| c.is_ascii_digit()) && (3..=24).contains(&w.len()))
            .filter(|w| !in_topic(w));
        for w in words {
            if answer_values.len() == 2 {
                break;
            }
            if !answer_values.iter().any(|v| v == w) {
                answer_values.push(w.to_string());
            }
        }
    }
    // Fill in priority order, keep the display order (tools, ask, answer,
    // entities).
    let numbered = || {
        topic
            .iter()
            .enumerate()
            .map(|(i, (t, named))| (10 + i, t.clone(), *named))
    };
    let candidates = numbered()
        .take(1)
        .map(|(i, t, _)| (i, t))
        .chain(tools.iter().take(1).map(|t| (0, t.to_string())))
        .chain(
            numbered()
                .skip(1)
                .filter(|(.., named)| *named)
                .map(|(i, t, _)| (i, t)),
        )
        .chain(
            answer_values
                .iter()
                .enumerate()
                .map(|(i, v)| (90 + i, v.clone())),
        )
        .chain(tools.iter().skip(1).take(1).map(|t| (1, t.to_string())))
        .chain(
            entities
                .iter()
                .enumerate()
                .map(|(i, e)| (100 + i, e.to_string())),
        )
        .chain(
            numbered()
                .skip(1)
                .filter(|(.., named)| !named)
                .map(|(i, t, _)| (i, t)),
        );
    let mut chosen: Vec<(usize, String)> = Vec::new();
    let suffix = format!(" — {}", facts.outcome.as_str());
    let render = |chosen: &[(usize, String)]| {
        let mut sorted: Vec<&(usize, String)> = chosen.iter().collect();
        sorted.sort_by_key(|(i, _)| *i);
        let body = sorted
            .iter()
            .map(|(_, w)| clip_chars(w, 40))
            .collect::<Vec<_>>()
            .join(" ");
        format!("{body}{suffix}")
    };
    for c in candidates {
        if chosen.iter().any(|(_, w)| w.eq_ignore_ascii_case(&c.1)) {
            continue;
        }
        chosen.push(c);
        if tokens::count(encoding, &render(&chosen)) > cap {
            chosen.pop();
        }
    }
    fit_text(render(&chosen).trim(), cap, encoding)
}

fn summary(facts: &ExchangeFacts, cap: u32, encoding: Encoding) -> Counted {
    const LABELS: [&str; 6] = ["Ask", "Did", "Errors", "Result", "Open", "Refs"];
    let mut points = Vec::new();
    let mut add = |section: usize, text: String, weight: u32| {
        points.push(Point {
            section,
            text,
            weight,
        })
    };
    if !facts.ask.is_empty() {
        let label = if facts.feedback { "(feedback) " } else { "" };
        add(0, format!("{label}{}", facts.ask), 100);
    }
    let edited = facts.edited_files();
    if !edited.is_empty() {
        add(1, format!("edited {}", edited.join(", ")), 85);
    }
    let mut weight = 80;
    let mut reads = Vec::new();
    for a in &facts.actions {
        let failed = a.failed == Some(true);
        let status = if failed { " (failed)" } else { "" };
        let text = match (a.class, &a.target) {
            (ToolClass::Edit, Some(_)) if !failed => continue,
            (ToolClass::Read, _) if !failed => {
                reads.push(a.target.clone().unwrap_or_else(|| a.tool.clone()));
                continue;
            }
            (ToolClass::Run, Some(cmd)) => format!("ran `{cmd}`{status}"),
            _ => format!("{}({}){status}", a.tool, clip_chars(&a.brief, 100)),
        };
        add(1, text, weight);
        weight = weight.saturating_sub(3);
    }
    reads.dedup();
    if !reads.is_empty() {
        add(
            1,
            format!("looked at {}", clip_chars(&reads.join(", "), 120)),
            30,
        );
    }
    for (i, e) in facts.errors.iter().enumerate() {
        add(2, e.clone(), 88u32.saturating_sub(6 * i as u32));
    }
    for (i, c) in facts.conclusions.iter().enumerate() {
        add(3, c.clone(), if i == 0 { 95 } else { 60 - 5 * i as u32 });
    }
    for (i, o) in facts.open.iter().enumerate() {
        add(4, o.clone(), 70u32.saturating_sub(10 * i as u32));
    }
    let cited: Vec<String> = facts
        .actions
        .iter()
        .filter(|a| a.class != ToolClass::Run && a.failed == Some(false))
        .filter_map(|a| {
            Some(format!(
                "{} {}",
                a.blob.as_ref()?,
                a.target.as_deref().unwrap_or(&a.tool)
            ))
        })
        .collect();
    for (i, r) in cited.into_iter().enumerate().take(4) {
        add(5, r, 20u32.saturating_sub(i as u32));
    }
    fit_points(&LABELS, points, cap, encoding)
}

/// A model-written header, fitted like the built-in one: one line, within cap.
pub fn fit_header(text: &str, caps: &LayerCaps, encoding: Encoding) -> Counted {
    fit_text(&one_line(text), caps.header_max, encoding)
}

/// A model-written summary, fitted like the built-in one: trailing sentences
/// dropped until it fits, cut as a last resort.
pub fn fit_summary(text: &str, caps: &LayerCaps, encoding: Encoding) -> Counted {
    let mut kept = String::new();
    for s in sentences(text) {
        let longer = if kept.is_empty() {
            s
        } else {
            format!("{kept} {s}")
        };
        if !kept.is_empty() && tokens::count(encoding, &longer) > caps.summary_max {
            break;
        }
        kept = longer;
    }
    fit_text(&kept, caps.summary_max, encoding)
}

/// Exchanges written as text for tests, one message per line:
/// `user: …`, `feedback: …`, `assistant: … -> tool {json}`, `tool: …`
/// (`\n` in a tool line stands for a line break).
#[cfg(test)]
pub(crate) fn parse_exchange(id: u32, fixture: &str) -> Vec<KeptMessage> {
    use crate::exchange::ToolResult;
    use crate::ids::{BlobHash, MessageId};
    use crate::message::{Message, ToolCall};

    let mut out: Vec<KeptMessage> = Vec::new();
    let mut pending: Vec<(String, String)> = Vec::new();
    let mut calls = 0;
    for line in fixture.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (tag, rest) = line.split_once(':').expect("role: text");
        let rest = rest.trim();
        let mut m = match tag {
            "user" => Message::new(Role::User, rest),
            "feedback" => Message {
                kind: Some(UserKind::Feedback),
                ..Message::new(Role::User, rest)
            },
            "assistant" => {
                let spaced = format!(" {rest}");
                let mut parts = spaced.split(" -> ");
                let mut m = Message::new(Role::Assistant, parts.next().unwrap().trim());
                for call in parts {
                    calls += 1;
                    let (name, args) = call.split_once(' ').unwrap_or((call, "{}"));
                    let id = format!("c{id}_{calls}");
                    pending.push((id.clone(), name.to_string()));
                    m.tool_calls.push(ToolCall {
                        id,
                        name: name.into(),
                        arguments: args.into(),
                    });
                }
                m
            }
            "tool" => {
                let (call, name) = pending.remove(0);
                let mut m = Message::new(Role::Tool, rest.replace("\\n", "\n"));
                m.tool_call_id = Some(call);
                m.name = Some(name);
                m
            }
            other => panic!("unknown role {other}"),
        };
        m.at = None;
        let index = out.len() as u32 + 1;
        let result = (m.role == Role::Tool).then(|| ToolResult {
            blob: BlobHash::of(m.content.as_bytes()),
            kind: crate::digest::classify(&crate::digest::ToolOutput {
                tool: m.name.as_deref(),
                arguments: None,
                content: &m.content,
            }),
            path: None,
            bytes: m.content.len() as u64,
            tokens: m.content.len() as u32 / 4,
            headline: m.content.lines().next().unwrap_or("").to_string(),
            digest: m.content.clone(),
            whole: false,
        });
        out.push(KeptMessage {
            id: MessageId {
                exchange: crate::ids::ExchangeId(id),
                index,
            },
            message: m,
            result,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trio_of(fixture: &str) -> Trio {
        let messages = parse_exchange(1, fixture);
        summarise(
            &ExchangeFacts::of(&messages),
            &SeenTerms::default(),
            &LayerCaps::default(),
            Encoding::O200kBase,
        )
    }

    fn check(fixture: &str, expect: &str) {
        let caps = LayerCaps::default();
        let trio = trio_of(fixture);
        assert!(trio.header.tokens <= caps.header_max, "{trio:?}");
        assert!(trio.summary.tokens <= caps.summary_max, "{trio:?}");
        assert_eq!(
            tokens::count(Encoding::O200kBase, &trio.summary.text),
            trio.summary.tokens
        );
        let got = format!(
            "{}\n{}\nentities: {}",
            trio.header.text,
            trio.summary.text,
            trio.entities.join(" | ")
        );
        assert_eq!(got.trim(), expect.trim(), "\n--- got ---\n{got}\n");
    }

    fn header_of(fixture: &str) -> String {
        trio_of(fixture).header.text
    }

    #[test]
    fn a_question_header_keeps_the_values_its_answer_found() {
        let header = header_of(
            r#"
            user: What MSRV does the crate pin — and which edition?
            assistant: -> read_file {"path":"Cargo.toml"}
            tool: [package]\nname = "strsim"\nrust-version = "1.56"
            assistant: It pins rust-version 1.56 and sets no edition, so 2015. See line 3.
            "#,
        );
        assert!(
            header.contains("1.56") && header.contains("2015"),
            "{header}"
        );
        let words = header.trim_end().trim_end_matches(" — completed");
        assert!(!words.contains(" 3 ") && !words.contains('—'), "{header}");
    }

    #[test]
    fn a_header_leaves_out_words_that_many_earlier_exchanges_use() {
        let exchange = r#"
            user: Why does the parser reject let-else in src/lib.rs?
            assistant: -> read_file {"path":"src/lib.rs"}
            tool: fn parse_let() {}
            assistant: The parser predates let-else: its MSRV is 1.56.
            "#;
        let facts = ExchangeFacts::of(&parse_exchange(1, exchange));
        let caps = LayerCaps::default();
        let alone = summarise(&facts, &SeenTerms::default(), &caps, Encoding::O200kBase);
        assert!(alone.header.text.contains("lib.rs"), "{:?}", alone.header);
        assert!(
            !alone.header.text.contains("let-else"),
            "{:?}",
            alone.header
        );
        // Ten earlier exchanges that all name the parser and lib.rs, and
        // one that names let-else.
        let common = vec!["parser".to_string(), "lib.rs".to_string()];
        let mut earlier = vec![common; 10];
        earlier.push(vec!["let-else".to_string()]);
        let seen = SeenTerms::of(earlier.iter().map(Vec::as_slice));
        assert_eq!(
            (seen.exchanges, seen.count("parser"), seen.count("LET-ELSE")),
            (11, 10, 1)
        );
        let later = summarise(&facts, &seen, &caps, Encoding::O200kBase);
        let words: Vec<&str> = later.header.text.split_whitespace().collect();
        assert!(
            !words.contains(&"parser") && !words.contains(&"lib.rs"),
            "{:?}",
            later.header
        );
        assert!(words.contains(&"let-else"), "{:?}", later.header);
        assert!(later.header.tokens <= alone.header.tokens);
        // The terms it hands on: lower-case, each once, sorted.
        let terms = facts.terms();
        assert!(terms.windows(2).all(|w| w[0] < w[1]), "{terms:?}");
        assert!(
            terms.contains(&"let-else".to_string()) && terms.contains(&"lib.rs".to_string()),
            "{terms:?}"
        );
    }

    #[test]
    fn only_the_newest_exchanges_are_counted() {
        let lists: Vec<Vec<String>> = (0..TERM_WINDOW + 10)
            .map(|i| vec![if i < 10 { "old" } else { "new" }.to_string()])
            .collect();
        let seen = SeenTerms::of(lists.iter().map(Vec::as_slice));
        assert_eq!(
            (seen.exchanges, seen.count("old"), seen.count("new")),
            (TERM_WINDOW, 0, TERM_WINDOW)
        );
    }

    #[test]
    fn json_fails_on_an_error_key_not_on_a_value() {
        let ticket = header_of(
            r#"
            user: Open a ticket saying the cancellation failed.
            assistant: -> create_ticket {"title":"Cancellation"}
            tool: {"id": 2, "description": "Error encountered during cancellation."}
            assistant: Ticket 2 is open.
            "#,
        );
        assert!(ticket.ends_with("— completed"), "{ticket}");
        let failed = header_of(
            r#"
            user: Cancel booking 7.
            assistant: -> cancel_booking {"booking_id":"7"}
            tool: {"error": "No booking with id 7", "cancel_status": false}
            assistant: There is no booking 7.
            "#,
        );
        assert!(failed.ends_with("— error"), "{failed}");
    }

    #[test]
    fn coding_exchange_with_a_fix() {
        check(
            r#"
            user: Please fix the type error E0308 in src/parser.rs, the build is broken.
            assistant: Let me build it. -> bash {"command":"cargo build"}
            tool: error[E0308]: mismatched types\n --> src/parser.rs:42:9\nerror: could not compile
            assistant: -> edit_file {"path":"src/parser.rs","old":"x","new":"y"}
            tool: edited src/parser.rs
            assistant: Fixed: `parse_expr()` returned `Option<Expr>` instead of `Expr`. The build now passes. Should I add a test for `Parser::peek`?
            "#,
            r#"
fix type E0308 parser.rs parse_expr() — completed
Ask: Please fix the type error E0308 in src/parser.rs, the build is broken.
Did: edited src/parser.rs; ran `cargo build` (failed)
Errors: error[E0308]: mismatched types at src/parser.rs:42:9 [b3:f829114ef37f]
Result: Fixed: `parse_expr()` returned `Option<Expr>` instead of `Expr`. The build now passes.
Open: Should I add a test for `Parser::peek`?
Refs: b3:ccab65bd688e src/parser.rs
entities: E0308 | src/parser.rs | parse_expr() | Parser::peek | cargo build | Option<Expr> | Expr
"#,
        );
    }

    #[test]
    fn function_calling_exchange() {
        check(
            r#"
            user: Book me a flight from SFO to JFK on 2024-12-01 in economy, then tell me the total.
            assistant: -> get_flight_cost {"from":"SFO","to":"JFK","date":"2024-12-01","class":"economy"}
            tool: {"cost": 412.5}
            assistant: -> book_flight {"from":"SFO","to":"JFK","date":"2024-12-01","class":"economy","card":"card_7"}
            tool: {"booking_id": "BK-3392", "status": "confirmed"}
            assistant: Your flight is booked: booking BK-3392, total $412.50.
            "#,
            r#"
book_flight Book SFO JFK card_7 — completed
Ask: Book me a flight from SFO to JFK on 2024-12-01 in economy, then tell me the total.
Did: book_flight(card=card_7, class=economy, date=2024-12-01, from=SFO, to=JFK); looked at get_flight_cost
Result: Your flight is booked: booking BK-3392, total $412.50.
Refs: b3:c88e695574a0 get_flight_cost; b3:69937a4a434b book_flight
entities: economy | 2024-12-01 | SFO | JFK | card_7
"#,
        );
    }

    #[test]
    fn failing_tool_and_feedback() {
        check(
            r#"
            feedback: no, use the other directory
            assistant: -> mv {"source":"report.txt","destination":"archive"}
            tool: {"error": "mv: no such directory: archive"}
            "#,
            r#"
no use other directory report.txt archive — error
Ask: (feedback) no, use the other directory
Did: mv(destination=archive, source=report.txt) (failed)
Errors: {"error": "mv: no such directory: archive"} [b3:f072a1714534]
entities: report.txt | archive
"#,
        );
        check(
            "user: what does the borrow checker do?",
            "borrow checker — ongoing\nAsk: what does the borrow checker do?\nentities: ",
        );
    }

    #[test]
    fn caps_hold_on_long_exchanges() {
        let long =
            "The quick brown fox jumps over the lazy dog near src/very/long/path/module.rs. "
                .repeat(40);
        check(
            &format!("user: {long}\nassistant: {long}"),
            r#"
quick brown fox jumps over lazy dog near module.rs — completed
Ask: The quick brown fox jumps over the lazy dog near src/very/long/path/module.rs. The quick brown fox jumps over the lazy dog near src/very/long/path/module.rs.
Result: The quick brown fox jumps over the lazy dog near src/very/long/path/module.rs.
entities: src/very/long/path/module.rs
"#,
        );
    }

    #[test]
    fn model_written_texts_fit_caps() {
        let caps = LayerCaps::default();
        let h = fit_header("  Fixed the\nparser bug in src/parser.rs after a long hunt through the code base today  ", &caps, Encoding::O200kBase);
        assert_eq!(
            h.text,
            "Fixed the parser bug in src/parser.rs after a long hunt"
        );
        let s = fit_summary(
            &"One sentence here. ".repeat(60),
            &caps,
            Encoding::O200kBase,
        );
        assert!(s.tokens <= 120 && s.text.ends_with('.'), "{s:?}");
    }
}

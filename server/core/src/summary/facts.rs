//! What an exchange says, read from its messages: the ask, the tool calls
//! and how each went, errors, conclusions, open points, entities, outcome.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use regex::Regex;

use super::entities::{short_entity, EntityList, CODE, LOCATION};
use super::sentences::{
    explained_terms, first_sentences, is_conclusion, is_open_point, is_stopword, prose, sentences,
    trim_word,
};
use crate::arguments::{self, PATH_KEYS};
use crate::digest::OutputKind;
use crate::exchange::{KeptMessage, Outcome};
use crate::message::{Role, UserKind};
use crate::text::{clip_chars, one_line, without_client_notes};

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
    /// Ids the results printed on their first line (a commit's hash from
    /// `git commit` or `git log --oneline`), each once.
    pub printed_ids: Vec<String>,
    pub outcome: Outcome,
}

/// An error key with a value: a non-empty string, an object, a non-empty
/// list, `true` or a code (not `null`, `false`, `""` or `[]`).
pub(super) static JSON_ERROR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)"(error|errors|exception)"\s*:\s*("[^"]|\{|\[\s*[^\]\s]|true|\d)"#).unwrap()
});
pub(super) static FAILURE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)(?-u:\b)(error|errors|failed|failure|failing|panicked|exception|traceback|denied|not found|no such|invalid|cannot|unable)(?-u:\b)|"error"\s*:"#)
        .unwrap()
});
pub(super) static NO_FAILURE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?-u:\b)0 (errors|failed)(?-u:\b)|(?-u:\b)no errors(?-u:\b)|(?-u:\b)success")
        .unwrap()
});

impl ExchangeFacts {
    /// The words, lowercase, of what the exchange did and found: its
    /// calls' tools and targets, results' headlines, errors, answer and
    /// entities. An ask's word among them is what the exchange was about;
    /// one only the ask has ("Fantastic!", "Right,") is how it was asked.
    pub fn echoed_words(&self) -> HashSet<String> {
        let actions = self.actions.iter().flat_map(|a| {
            [Some(&a.tool), a.target.as_ref(), a.headline.as_ref()]
                .into_iter()
                .flatten()
                .chain(std::iter::once(&a.brief))
        });
        actions
            .chain(&self.errors)
            .chain(&self.conclusions)
            .chain(&self.explained)
            .chain(&self.entities)
            .flat_map(|text| text.split_whitespace())
            .map(|w| {
                w.trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase()
            })
            .flat_map(|w| {
                // "let-else" and "src/lib.rs" whole, and each of their parts.
                let parts: Vec<String> = w
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .filter(|p| !p.is_empty() && p.len() < w.len())
                    .map(str::to_string)
                    .collect();
                std::iter::once(w).chain(parts)
            })
            .filter(|w| !w.is_empty())
            .collect()
    }

    pub fn of(messages: &[KeptMessage]) -> ExchangeFacts {
        let mut facts = ExchangeFacts::default();
        let mut by_call: HashMap<&str, usize> = HashMap::new();
        let mut entities = EntityList::default();
        for m in messages {
            let msg = &m.message;
            match msg.role {
                // An assistant's own notes (`<system-reminder>`, …) are
                // not what the person asked: a message of notes alone
                // leaves the ask to the next one.
                Role::User if facts.ask.is_empty() => {
                    facts.ask = first_sentences(&without_client_notes(&msg.content), 2);
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
                    let edit = idx.is_some_and(|i| facts.actions[i].class == ToolClass::Edit);
                    let failed = match m.result.as_ref().map(|r| r.kind) {
                        Some(OutputKind::Json) => JSON_ERROR.is_match(&msg.content),
                        // What a read, a search or git printed is data: a Go
                        // file's `error` type, a grep match for "failed". A read
                        // that failed is not a file's content.
                        Some(
                            OutputKind::FileRead
                            | OutputKind::Search
                            | OutputKind::Listing
                            | OutputKind::GitDiff
                            | OutputKind::GitLog
                            | OutputKind::GitStatus,
                        ) => false,
                        // An edit's result echoes the text it wrote; only its
                        // first line says how the edit went.
                        _ if edit => FAILURE.is_match(msg.content.lines().next().unwrap_or("")),
                        // "test result: ok. 2 passed; 0 failed" names a
                        // failure word only to say there was none.
                        _ => {
                            let head = clip_chars(&msg.content, 400);
                            FAILURE.is_match(&NO_FAILURE.replace_all(&head, ""))
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
                    let first_line = msg.content.lines().next().unwrap_or("");
                    for id in first_line
                        .split_whitespace()
                        .map(trim_id)
                        .filter(|w| is_hex_id(w))
                    {
                        if !facts.printed_ids.iter().any(|p| p == id) {
                            facts.printed_ids.push(id.to_string());
                        }
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

/// A printed word without the brackets and punctuation around it
/// (`[main 5afa47c]`).
fn trim_id(w: &str) -> &str {
    w.trim_matches(|c: char| !c.is_ascii_alphanumeric())
}

/// A commit hash or a similar id as printed: 7 to 40 lowercase hex digits,
/// with both a digit and a letter (neither a number nor a word).
fn is_hex_id(w: &str) -> bool {
    (7..=40).contains(&w.len())
        && w.chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
        && w.chars().any(|c| c.is_ascii_digit())
        && w.chars().any(|c| c.is_ascii_alphabetic())
}

pub(super) fn outcome(messages: &[KeptMessage], actions: &[Action]) -> Outcome {
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

pub(super) fn error_line(headline: &str, content: &str, blob: Option<&str>) -> String {
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

pub(super) fn tool_class(tool: &str) -> ToolClass {
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

pub(super) fn split_camel(name: &str) -> Vec<String> {
    let mut words = vec![String::new()];
    for c in name.chars() {
        if c.is_ascii_uppercase() && !words.last().unwrap().is_empty() {
            words.push(String::new());
        }
        words.last_mut().unwrap().push(c.to_ascii_lowercase());
    }
    words
}

pub(super) fn action_of(tool: &str, arguments: &str) -> Action {
    let class = tool_class(tool);
    let args: serde_json::Value =
        serde_json::from_str(arguments).unwrap_or(serde_json::Value::Null);
    let target = match class {
        ToolClass::Run => arguments::command(&args).map(|c| clip_chars(&one_line(&c), 60)),
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

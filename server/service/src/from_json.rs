//! JSON to a typed value, an error naming the field (`messages[2].role: …`)
//! and, for an unknown key, the known one it most likely meant: how the LSP
//! crate reads every method's params and `config` reads settings (from
//! initializationOptions, `--config`, `workspace/didChangeConfiguration`).

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ServiceError;

/// Parses params, naming the offending field on error (`messages[2].role`).
/// Absent params and an empty list (what some clients send for `{}`) count
/// as an empty object.
pub fn parse<P: DeserializeOwned>(params: Value) -> Result<P, ServiceError> {
    let params = match params {
        Value::Null => Value::Object(Default::default()),
        Value::Array(a) if a.is_empty() => Value::Object(Default::default()),
        v => v,
    };
    serde_path_to_error::deserialize(params).map_err(|e| {
        let mut path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let inner = inner.split(" at line ").next().unwrap_or(&inner);
        if inner.starts_with("unknown field") {
            // The path ends with the unknown key itself, which the message names.
            path = path
                .rsplit_once('.')
                .map_or(".".into(), |(p, _)| p.to_string());
        }
        let inner = with_suggestion(inner);
        if path == "." {
            ServiceError::InvalidParams(inner)
        } else {
            ServiceError::InvalidParams(format!("{path}: {inner}"))
        }
    })
}

/// Every params type refuses unknown keys (a misspelt `session_id` would
/// otherwise widen a search to every session); when serde's "unknown field"
/// error lists a key that differs only in case, `_`/`-`, or by two edits, the
/// message names it.
fn with_suggestion(message: &str) -> String {
    let Some(rest) = message.strip_prefix("unknown field `") else {
        return message.to_string();
    };
    let Some((unknown, expected)) = rest.split_once('`') else {
        return message.to_string();
    };
    let candidates = expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect::<Vec<_>>();
    match closest(unknown, &candidates) {
        Some(right) => format!("unknown field `{unknown}`, did you mean `{right}`?"),
        None => message.to_string(),
    }
}

/// The candidate a misspelling most likely meant, if any is close.
fn closest<'a>(unknown: &str, candidates: &'a [String]) -> Option<&'a str> {
    let fold = |s: &str| {
        s.chars()
            .filter(|c| *c != '_' && *c != '-')
            .flat_map(char::to_lowercase)
            .collect::<String>()
    };
    let folded = fold(unknown);
    candidates
        .iter()
        .map(|c| (edit_distance(&folded, &fold(c)), c))
        .filter(|(d, _)| *d <= 2 && *d < folded.chars().count())
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c.as_str())
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

//! JSON payloads: the shape (keys, types, array lengths), not the values.

use super::draft::Draft;
use serde_json::Value;

pub(crate) fn digest(label: &str, text: &str, draft: &mut Draft) {
    match serde_json::from_str::<Value>(text) {
        Ok(value) => {
            draft.headline(format!("{label}: JSON {}", describe(&value)));
            shape(text, draft);
        }
        Err(_) => super::log::digest(label, text, draft),
    }
}

/// One line per key path, breadth first so the top level is always shown.
pub(crate) fn shape(text: &str, draft: &mut Draft) {
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return;
    };
    let mut lines = Vec::new();
    let mut queue: std::collections::VecDeque<(String, &Value)> = [(String::new(), &value)].into();
    while let Some((path, v)) = queue.pop_front() {
        match v {
            Value::Object(map) => {
                for (k, child) in map {
                    let child_path = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    lines.push(format!("{child_path}: {}", describe(child)));
                    queue.push_back((child_path, child));
                }
            }
            // An array's shape is its first element's.
            Value::Array(items) => {
                if let Some(first) = items.first().filter(|f| f.is_object() || f.is_array()) {
                    queue.push_back((format!("{path}[]"), first));
                }
            }
            _ => {}
        }
    }
    draft.push_while_room(lines, |n| format!("… {n} more keys"));
}

fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) if s.chars().count() <= 40 => format!("{s:?}"),
        Value::String(s) => format!("string ({} chars)", s.chars().count()),
        Value::Array(items) => format!("array ({})", items.len()),
        Value::Object(map) => format!("object ({} keys)", map.len()),
    }
}

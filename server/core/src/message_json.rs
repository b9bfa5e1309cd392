//! A message's JSON forms, in one place for the two readers of messages as
//! JSON: `ctx/append` (the `ctxproxy` crate's typed `WireMessage`) and
//! recorded sessions (`recorded`). Both document the same shapes
//! (docs/PROTOCOL.md, fixtures/README.md): a content as a string, null, a
//! list of `{type: "text", text}` parts, or a tool output's exact bytes as
//! `{"base64": "…"}`; tool-call arguments as a JSON object or its text.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use serde_json::{json, Map, Value};

use crate::message::{Message, Role};

/// Why a field of one message is refused: `field` is relative to the
/// message (`content`, `content[2]`, `kind`).
#[derive(Debug, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub why: String,
}

fn refuse(field: impl Into<String>, why: impl Into<String>) -> FieldError {
    FieldError {
        field: field.into(),
        why: why.into(),
    }
}

/// A message's text and, for a tool output whose bytes are not UTF-8, the
/// bytes (the text is then empty until the store puts the digest there).
pub fn content_from_json(role: Role, v: &Value) -> Result<(String, Option<Vec<u8>>), FieldError> {
    match v {
        Value::Null => Ok((String::new(), None)),
        Value::String(s) => Ok((s.clone(), None)),
        // A tool output's bytes, exactly: JSON strings cannot carry bytes
        // that are not UTF-8.
        Value::Object(form) if role == Role::Tool => {
            let bytes = base64_bytes(form).map_err(|why| refuse("content", why))?;
            Ok(match String::from_utf8(bytes) {
                Ok(text) => (text, None),
                Err(e) => (String::new(), Some(e.into_bytes())),
            })
        }
        Value::Array(parts) => {
            let mut text = String::new();
            for (i, p) in parts.iter().enumerate() {
                let part = p.get("text").and_then(Value::as_str).ok_or_else(|| {
                    refuse(
                        format!("content[{i}]"),
                        "expected a {type: \"text\", text} part",
                    )
                })?;
                text.push_str(part);
            }
            Ok((text, None))
        }
        Value::Object(_) => Err(refuse(
            "content",
            "only a tool message's content may be {\"base64\": …}",
        )),
        other => Err(refuse("content", format!("expected a string, got {other}"))),
    }
}

/// The JSON form of a message's content: `{"base64": …}` when it holds
/// bytes that are not UTF-8, else its text.
pub fn content_to_json(m: &Message) -> Value {
    match &m.raw {
        Some(bytes) => json!({ "base64": BASE64.encode(bytes) }),
        None => Value::String(m.content.clone()),
    }
}

/// Tool-call arguments as text: an object is kept as its compact JSON
/// text, a string as it is, a missing value is `{}`.
pub fn arguments_from_json(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "{}".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// The JSON form of arguments kept as text: the object when the text is
/// JSON, else the text.
pub fn arguments_to_json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

/// The rules a message obeys whichever reader built it.
pub fn check(m: &Message) -> Result<(), FieldError> {
    if m.kind.is_some() && m.role != Role::User {
        return Err(refuse("kind", "only user messages have a kind"));
    }
    if m.role == Role::Tool && m.tool_call_id.is_none() && m.name.is_none() {
        return Err(refuse(
            "toolCallId",
            "a tool message needs toolCallId or name",
        ));
    }
    Ok(())
}

/// The bytes of a `{"base64": "…"}` content (standard alphabet, padded).
fn base64_bytes(form: &Map<String, Value>) -> Result<Vec<u8>, String> {
    if let Some(key) = form.keys().find(|k| *k != "base64") {
        return Err(format!(
            "unknown field `{key}`: a tool output's bytes are given as {{\"base64\": \"…\"}}"
        ));
    }
    let Some(encoded) = form.get("base64") else {
        return Err("expected a string, a list of text parts or {\"base64\": \"…\"}".into());
    };
    let Some(encoded) = encoded.as_str() else {
        return Err(format!("base64: expected a string, got {encoded}"));
    };
    BASE64
        .decode(encoded)
        .map_err(|e| format!("base64: not standard padded base64 ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_forms_round_trip() {
        let bytes = vec![0u8, 159, 146, 150, b'a'];
        let (text, raw) =
            content_from_json(Role::Tool, &json!({"base64": BASE64.encode(&bytes)})).unwrap();
        assert_eq!((text.as_str(), raw.as_deref()), ("", Some(&bytes[..])));
        let mut m = Message::new(Role::Tool, text);
        m.raw = raw;
        assert_eq!(
            content_from_json(Role::Tool, &content_to_json(&m))
                .unwrap()
                .1,
            Some(bytes)
        );
        let parts = json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]);
        assert_eq!(
            content_from_json(Role::User, &parts).unwrap(),
            ("ab".to_string(), None)
        );
        // UTF-8 bytes sent as base64 are text.
        assert_eq!(
            content_from_json(Role::Tool, &json!({"base64": "aGk="})).unwrap(),
            ("hi".to_string(), None)
        );
    }

    #[test]
    fn refusals_name_the_field() {
        let cases = [
            (
                Role::User,
                json!({"base64": "aGk="}),
                "content",
                "only a tool message's content may be {\"base64\": …}",
            ),
            (
                Role::Tool,
                json!({"base64": "%%"}),
                "content",
                "base64: not standard padded base64 (Invalid symbol 37, offset 0.)",
            ),
            (
                Role::Tool,
                json!({"b64": "aGk="}),
                "content",
                "unknown field `b64`: a tool output's bytes are given as {\"base64\": \"…\"}",
            ),
            (
                Role::User,
                json!([{"type": "image"}]),
                "content[0]",
                "expected a {type: \"text\", text} part",
            ),
            (Role::User, json!(3), "content", "expected a string, got 3"),
        ];
        for (role, v, field, why) in cases {
            assert_eq!(
                content_from_json(role, &v).unwrap_err(),
                refuse(field, why),
                "{v}"
            );
        }
    }

    #[test]
    fn arguments_keep_their_text() {
        assert_eq!(arguments_from_json(None), "{}");
        assert_eq!(arguments_from_json(Some(&json!({"a": 1}))), r#"{"a":1}"#);
        assert_eq!(arguments_from_json(Some(&json!("not json"))), "not json");
        assert_eq!(arguments_to_json(r#"{"a":1}"#), json!({"a": 1}));
        assert_eq!(arguments_to_json("not json"), json!("not json"));
    }
}

//! Recorded sessions (`fixtures/README.md`, "The replay format", is their
//! format document): JSON Lines text to plain data, one exchange a line.
//! Every error names the line and the field.

use serde_json::{Map, Value};

use crate::message::{Message, Role, ToolCall, UserKind};
use crate::message_json;

/// One line of a recorded session: exchange `x<line>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedExchange {
    pub messages: Vec<Message>,
    pub needs: Vec<Need>,
}

/// A fact that answering an exchange needs from an earlier one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Need {
    /// Exact text of exchange `from`'s messages.
    pub fact: String,
    pub from: u32,
    /// Words of the question that point at the fact.
    pub cues: Vec<String>,
}

/// Why a recorded session does not parse: `line` is 1-based, `field` a
/// path such as `messages[2].toolCalls[0].id`.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {field}: {why}")]
pub struct RecordedError {
    pub line: usize,
    pub field: String,
    pub why: String,
}

/// Parses a whole recorded session; blank lines are skipped, a byte order
/// mark is ignored.
pub fn parse(text: &str) -> Result<Vec<RecordedExchange>, RecordedError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            exchange(l).map_err(|(field, why)| RecordedError {
                line: i + 1,
                field,
                why,
            })
        })
        .collect()
}

/// A field's path and what is wrong with it.
type Bad = (String, String);

fn bad(field: impl Into<String>, why: impl Into<String>) -> Bad {
    (field.into(), why.into())
}

fn exchange(line: &str) -> Result<RecordedExchange, Bad> {
    let v: Value = serde_json::from_str(line).map_err(|e| bad("(line)", e.to_string()))?;
    let v = v
        .as_object()
        .ok_or_else(|| bad("(line)", "expected an object"))?;
    let messages = array(v, "messages", "messages")?
        .ok_or_else(|| bad("messages", "missing"))?
        .iter()
        .enumerate()
        .map(|(i, m)| message(m, &format!("messages[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    if messages.first().map(|m| m.role) != Some(Role::User) {
        return Err(bad(
            "messages[0].role",
            "an exchange opens with a user message",
        ));
    }
    let needs = needs_of(v.get("needs"))?;
    Ok(RecordedExchange { messages, needs })
}

/// A line's `needs` (absent or null: none).
fn needs_of(v: Option<&Value>) -> Result<Vec<Need>, Bad> {
    let list = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(a)) => a,
        Some(_) => return Err(bad("needs", "expected an array")),
    };
    list.iter()
        .enumerate()
        .map(|(i, n)| need(n, &format!("needs[{i}]")))
        .collect()
}

fn object<'a>(v: &'a Value, field: &str) -> Result<&'a Map<String, Value>, Bad> {
    v.as_object()
        .ok_or_else(|| bad(field, "expected an object"))
}

fn array<'a>(
    v: &'a Map<String, Value>,
    key: &str,
    field: &str,
) -> Result<Option<&'a Vec<Value>>, Bad> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) => Ok(Some(a)),
        Some(_) => Err(bad(field, "expected an array")),
    }
}

fn string(v: &Map<String, Value>, key: &str, field: &str) -> Result<Option<String>, Bad> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(bad(format!("{field}.{key}"), "expected a string")),
    }
}

fn required(v: &Map<String, Value>, key: &str, field: &str) -> Result<String, Bad> {
    string(v, key, field)?.ok_or_else(|| bad(format!("{field}.{key}"), "missing"))
}

/// The fields a message line may have; any other is refused, as
/// `ctx/append` refuses it (an OpenAI spelling such as `tool_calls` would
/// otherwise be dropped silently).
const MESSAGE_FIELDS: [&str; 8] = [
    "role",
    "content",
    "kind",
    "toolCalls",
    "toolCallId",
    "name",
    "agent",
    "at",
];
const TOOL_CALL_FIELDS: [&str; 3] = ["id", "name", "arguments"];

fn known_fields(v: &Map<String, Value>, known: &[&str], field: &str) -> Result<(), Bad> {
    match v.keys().find(|k| !known.contains(&k.as_str())) {
        None => Ok(()),
        Some(k) => Err(bad(
            format!("{field}.{k}"),
            format!("unknown field, expected one of {}", known.join(", ")),
        )),
    }
}

fn message(v: &Value, field: &str) -> Result<Message, Bad> {
    let v = object(v, field)?;
    known_fields(v, &MESSAGE_FIELDS, field)?;
    let in_message = |e: message_json::FieldError| bad(format!("{field}.{}", e.field), e.why);
    let role = required(v, "role", field)?;
    let role = Role::parse(&role).ok_or_else(|| {
        bad(
            format!("{field}.role"),
            format!("expected user, assistant, tool or system, got {role:?}"),
        )
    })?;
    let kind = match string(v, "kind", field)? {
        None => None,
        Some(k) => Some(UserKind::parse(&k).ok_or_else(|| {
            bad(
                format!("{field}.kind"),
                format!("expected query or feedback, got {k:?}"),
            )
        })?),
    };
    let tool_calls = array(v, "toolCalls", &format!("{field}.toolCalls"))?
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, c)| tool_call(c, &format!("{field}.toolCalls[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    let (content, raw) =
        message_json::content_from_json(role, v.get("content").unwrap_or(&Value::Null))
            .map_err(in_message)?;
    let mut m = Message::new(role, content);
    m.raw = raw;
    m.kind = kind;
    m.tool_calls = tool_calls;
    m.tool_call_id = string(v, "toolCallId", field)?;
    m.name = string(v, "name", field)?;
    m.agent = string(v, "agent", field)?;
    m.at = string(v, "at", field)?;
    message_json::check(&m).map_err(in_message)?;
    Ok(m)
}

/// A tool call; its `arguments` are a JSON object (kept as its JSON text)
/// or already text.
fn tool_call(v: &Value, field: &str) -> Result<ToolCall, Bad> {
    let v = object(v, field)?;
    known_fields(v, &TOOL_CALL_FIELDS, field)?;
    Ok(ToolCall {
        id: required(v, "id", field)?,
        name: required(v, "name", field)?,
        arguments: message_json::arguments_from_json(v.get("arguments")),
    })
}

fn need(v: &Value, field: &str) -> Result<Need, Bad> {
    let v = object(v, field)?;
    let from = v
        .get("from")
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| bad(format!("{field}.from"), "expected an exchange number"))?;
    let cues = array(v, "cues", &format!("{field}.cues"))?
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, c)| {
            c.as_str()
                .map(str::to_string)
                .ok_or_else(|| bad(format!("{field}.cues[{i}]"), "expected a string"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Need {
        fact: required(v, "fact", field)?,
        from,
        cues,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_messages_calls_and_needs() {
        let text = concat!(
            "\u{feff}{\"messages\": [{\"role\": \"user\", \"content\": \"read a.rs\", \"kind\": \"query\", \"at\": \"2026-11-21T10:00:00Z\"},",
            " {\"role\": \"assistant\", \"content\": \"\", \"toolCalls\": [{\"id\": \"c1\", \"name\": \"read_file\", \"arguments\": {\"path\": \"a.rs\"}}]},",
            " {\"role\": \"tool\", \"toolCallId\": \"c1\", \"name\": \"read_file\", \"content\": \"fn a() {}\"}]}\n",
            "\n",
            "{\"messages\": [{\"role\": \"user\", \"content\": \"what is in a.rs?\"}], \"needs\": [{\"fact\": \"fn a()\", \"from\": 1, \"cues\": [\"a.rs\"]}]}\n",
            "{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"a\"}, {\"type\": \"text\", \"text\": \"b\"}]},",
            " {\"role\": \"tool\", \"name\": \"cat\", \"content\": {\"base64\": \"//4=\"}}]}\n",
        );
        let session = parse(text).unwrap();
        assert_eq!(session.len(), 3);
        let first = &session[0].messages;
        assert_eq!(first[0].kind, Some(UserKind::Query));
        assert_eq!(first[0].at.as_deref(), Some("2026-11-21T10:00:00Z"));
        assert_eq!(first[1].tool_calls[0].arguments, r#"{"path":"a.rs"}"#);
        assert_eq!(first[2].tool_call_id.as_deref(), Some("c1"));
        assert_eq!(
            session[2].messages[1].raw.as_deref(),
            Some(&[0xff, 0xfe][..])
        );
        assert_eq!(session[2].messages[0].content, "ab");
        assert_eq!(
            session[1].needs,
            [Need {
                fact: "fn a()".into(),
                from: 1,
                cues: vec!["a.rs".into()]
            }]
        );
    }

    #[test]
    fn errors_name_the_line_and_the_field() {
        let cases = [
            ("{\"messages\": []}", "line 1: messages[0].role: an exchange opens with a user message"),
            ("\n{\"messages\": [{\"role\": \"bot\"}]}", "line 2: messages[0].role: expected user, assistant, tool or system, got \"bot\""),
            ("{\"messages\": [{\"role\": \"user\", \"content\": \"q\", \"toolCalls\": [{\"name\": \"x\"}]}]}", "line 1: messages[0].toolCalls[0].id: missing"),
            ("{\"messages\": [{\"role\": \"user\", \"content\": \"q\"}], \"needs\": [{\"fact\": \"f\"}]}", "line 1: needs[0].from: expected an exchange number"),
            ("{\"needs\": []}", "line 1: messages: missing"),
            ("{\"messages\": [{\"role\": \"user\", \"content\": \"q\", \"tool_calls\": []}]}", "line 1: messages[0].tool_calls: unknown field, expected one of role, content, kind, toolCalls, toolCallId, name, agent, at"),
            ("{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image\"}]}]}", "line 1: messages[0].content[0]: expected a {type: \"text\", text} part"),
            ("{\"messages\": [{\"role\": \"user\", \"content\": \"q\"}, {\"role\": \"tool\", \"content\": {\"base64\": \"aGk=\"}}]}", "line 1: messages[1].toolCallId: a tool message needs toolCallId or name"),
            ("{\"messages\": [{\"role\": \"user\", \"content\": \"q\"}, {\"role\": \"assistant\", \"content\": \"a\", \"kind\": \"query\"}]}", "line 1: messages[1].kind: only user messages have a kind"),
        ];
        for (text, expected) in cases {
            assert_eq!(parse(text).unwrap_err().to_string(), expected, "{text}");
        }
    }
}

//! The wire: request params and results of every `ctx/` method, and their
//! conversion to and from the core's plain data. Only this crate knows JSON-RPC.

use ctxproxy_core::message::{Message, Role, ToolCall, UserKind};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::service::ServiceError;

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
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let inner = inner
            .split(" at line ")
            .next()
            .unwrap_or(&inner)
            .to_string();
        if path == "." {
            ServiceError::InvalidParams(inner)
        } else {
            ServiceError::InvalidParams(format!("{path}: {inner}"))
        }
    })
}

/// Unknown fields are refused, not dropped: a client that spells a field
/// the OpenAI way (`tool_calls`, `function`) would otherwise lose it silently.
#[derive(Debug, Deserialize, Serialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WireToolCall {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub arguments: Value,
}

/// A chat message as clients send it. `content` may be a string, null, or a
/// list of `{type: "text", text}` parts. Unknown fields are refused, as in
/// `WireToolCall`.
#[derive(Debug, Deserialize, Serialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WireMessage {
    pub role: String,
    #[serde(default)]
    pub content: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<WireToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

impl WireMessage {
    /// Converts to the core message; `field` names it in errors (`messages[3]`).
    pub fn to_core(&self, field: &str) -> Result<Message, ServiceError> {
        let bad =
            |sub: &str, why: String| ServiceError::InvalidParams(format!("{field}.{sub}: {why}"));
        let role = Role::parse(&self.role).ok_or_else(|| {
            bad(
                "role",
                format!(
                    "expected user, assistant, tool or system, got {:?}",
                    self.role
                ),
            )
        })?;
        let content = match &self.content {
            Value::Null => String::new(),
            Value::String(s) => s.clone(),
            Value::Array(parts) => {
                let mut text = String::new();
                for (i, p) in parts.iter().enumerate() {
                    match p.get("text").and_then(Value::as_str) {
                        Some(t) => text.push_str(t),
                        None => {
                            return Err(bad(
                                &format!("content[{i}]"),
                                "expected a {type: \"text\", text} part".into(),
                            ))
                        }
                    }
                }
                text
            }
            other => return Err(bad("content", format!("expected a string, got {other}"))),
        };
        let kind = match &self.kind {
            None => None,
            Some(k) => Some(
                UserKind::parse(k)
                    .ok_or_else(|| bad("kind", format!("expected query or feedback, got {k:?}")))?,
            ),
        };
        if kind.is_some() && role != Role::User {
            return Err(bad("kind", "only user messages have a kind".into()));
        }
        if role == Role::Tool && self.tool_call_id.is_none() && self.name.is_none() {
            return Err(bad(
                "toolCallId",
                "a tool message needs toolCallId or name".into(),
            ));
        }
        let tool_calls = self
            .tool_calls
            .iter()
            .map(|c| ToolCall {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: match &c.arguments {
                    Value::String(s) => s.clone(),
                    Value::Null => "{}".to_string(),
                    v => v.to_string(),
                },
            })
            .collect();
        Ok(Message {
            role,
            content,
            kind,
            tool_calls,
            tool_call_id: self.tool_call_id.clone(),
            name: self.name.clone(),
            agent: self.agent.clone(),
            at: self.at.clone(),
        })
    }

    pub fn from_core(m: &Message) -> WireMessage {
        WireMessage {
            role: m.role.as_str().to_string(),
            content: Value::String(m.content.clone()),
            kind: m.kind.map(|k| k.as_str().to_string()),
            tool_calls: m
                .tool_calls
                .iter()
                .map(|c| WireToolCall {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    arguments: serde_json::from_str(&c.arguments)
                        .unwrap_or_else(|_| Value::String(c.arguments.clone())),
                })
                .collect(),
            tool_call_id: m.tool_call_id.clone(),
            name: m.name.clone(),
            agent: m.agent.clone(),
            at: m.at.clone(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentRef {
    pub session_id: String,
    pub at_exchange: Option<Value>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct OpenSessionParams {
    pub workspace: Option<String>,
    pub title: Option<String>,
    pub parent: Option<ParentRef>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AppendParams {
    pub session_id: String,
    pub messages: Vec<WireMessage>,
}

#[derive(Debug, Deserialize, Default, Clone)]
#[serde(rename_all = "camelCase")]
pub struct AssembleParams {
    pub session_id: String,
    pub input: Option<WireMessage>,
    pub system: Option<String>,
    pub budget: Option<u32>,
    pub encoding: Option<String>,
    pub format: Option<String>,
    /// `cache-stable` (default) or `seed003`.
    pub order: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetrieveParams {
    pub session_id: String,
    pub ids: Vec<String>,
    pub format: Option<String>,
    pub lines: Option<[u32; 2]>,
    pub grep: Option<String>,
    pub max_tokens: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchParams {
    pub session_id: Option<String>,
    pub workspace: Option<String>,
    pub query: String,
    pub limit: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExplainParams {
    pub session_id: String,
    pub prompt_id: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HousekeepingParams {
    pub session_id: String,
    pub exchange_id: String,
    pub header: Option<String>,
    pub summary: Option<String>,
    #[serde(default)]
    pub key_decisions: Vec<String>,
    #[serde(default)]
    pub code_changes: Vec<String>,
    #[serde(default)]
    pub open_questions: Vec<String>,
    pub current_context: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ListSessionsParams {
    pub workspace: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListExchangesParams {
    pub session_id: String,
    pub from: Option<u32>,
    pub limit: Option<u32>,
}

//! The Gemini API (`generateContent`, `streamGenerateContent`): requests to
//! ctxproxy messages, the assembled prompt back into a request (the
//! client's system instruction, thought signatures on the calls they came
//! with, media parts), replies and stream chunks spliced over the internal
//! context-tool rounds.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use ctxproxy_core::message::ToolCall;
use serde_json::{json, Value};

use super::api::{
    function_tool, is_context_tool, put_summed_usage, Api, BadRequest, ClientBody, ErrorKind,
};
use super::sse;
pub use ctxproxy_model_apis::gemini::Gemini;
use ctxproxy_model_apis::gemini::{call_id, part_text, parts_of, to_messages, Ordinals};
use ctxproxy_service::api::FormattedPrompt;
use ctxproxy_service::format::Format;

mod stream;

pub use stream::GeminiChunkSplicer;

/// The methods the proxy reads; any other (`countTokens`, …) is forwarded.
pub const METHODS: [&str; 2] = [":generateContent", ":streamGenerateContent"];

fn is_media(p: &Value) -> bool {
    p.get("inlineData").is_some() || p.get("fileData").is_some()
}

/// A user content whose parts carry media (images, files).
fn has_media(m: &Value) -> bool {
    m["role"] != "model"
        && m["parts"]
            .as_array()
            .is_some_and(|parts| parts.iter().any(is_media))
}

/// A model content that carries a thought signature.
fn has_signature(m: &Value) -> bool {
    m["role"] == "model"
        && m["parts"]
            .as_array()
            .is_some_and(|parts| parts.iter().any(|p| p.get("thoughtSignature").is_some()))
}

/// What the client's thought signatures went with: a call (by its id) or a
/// model content's text (trimmed: the prompt ends a text with a newline).
/// The API wants them back on the same parts.
#[derive(Default)]
struct Signatures {
    by_call: HashMap<String, Value>,
    by_text: HashMap<String, Value>,
}

impl Signatures {
    fn of(kept: &[(usize, Value)]) -> Signatures {
        let mut out = Signatures::default();
        for (index, m) in kept.iter().filter(|(_, m)| has_signature(m)) {
            let parts = m["parts"].as_array().into_iter().flatten();
            let text: String = parts
                .clone()
                .filter(|p| p["thought"] != true)
                .filter_map(|p| p["text"].as_str())
                .collect();
            let mut ordinals = Ordinals::default();
            for p in parts {
                let signature = p.get("thoughtSignature").cloned();
                if let Some(name) = p["functionCall"]["name"].as_str() {
                    let id = call_id(&p["functionCall"]["id"], name, *index, ordinals.next(name));
                    out.by_call.extend(signature.map(|s| (id, s)));
                } else if let Some(s) = signature.filter(|_| p["thought"] != true) {
                    out.by_text.insert(text.trim().to_string(), s);
                }
            }
        }
        out
    }

    /// Puts each signature back on the part of a model content it came with.
    fn restore(&self, content: &mut Value) {
        let Some(parts) = content["parts"].as_array_mut() else {
            return;
        };
        for p in parts {
            let found = match (p["functionCall"]["id"].as_str(), p["text"].as_str()) {
                (Some(id), _) => self.by_call.get(id),
                (None, Some(text)) => self.by_text.get(text.trim()),
                (None, None) => None,
            };
            if let Some(s) = found.filter(|_| p.get("thoughtSignature").is_none()) {
                p["thoughtSignature"] = s.clone();
            }
        }
    }
}

/// The client's user contents with media, by the text ctxproxy keeps of
/// them (`[inlineData]` in its place): where the assembled prompt shows
/// that text, the model gets the original parts back.
fn media_by_text(kept: &[(usize, Value)]) -> HashMap<String, Value> {
    let mut out = HashMap::new();
    for (i, m) in kept.iter().filter(|(_, m)| has_media(m)) {
        if let Ok([read]) = to_messages(m, &format!("contents[{i}]")).as_deref() {
            out.insert(read.content.trim().to_string(), m["parts"].clone());
        }
    }
    out
}

/// The client's tools with the context tools' declarations added to its
/// last tool of function declarations (one more tool if it has none), so
/// the list a client keeps sending stays a stable prefix.
fn put_declarations(body: &mut Value, client: &Value, ours: Value) {
    let mut tools = client["tools"].as_array().cloned().unwrap_or_default();
    let ours: Vec<Value> = ours["functionDeclarations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if ours.is_empty() && tools.is_empty() {
        return;
    }
    let declared = tools.iter_mut().rev().find_map(|t| {
        t.get_mut("functionDeclarations")
            .and_then(Value::as_array_mut)
    });
    match declared {
        Some(declarations) => declarations.extend(ours),
        None if !ours.is_empty() => tools.push(json!({"functionDeclarations": ours})),
        None => {}
    }
    body["tools"] = Value::Array(tools);
}

/// Whether a body asks for JSON output (`responseMimeType`
/// `application/json`, a response schema): the API refuses function calling
/// beside it, so such a request (Gemini CLI's model router, its
/// next-speaker check) gets no context tools.
fn asks_for_json(body: &Value) -> bool {
    let config = &body["generationConfig"];
    config["responseMimeType"] == "application/json"
        || config.get("responseSchema").is_some()
        || config.get("responseJsonSchema").is_some()
}

/// Where a reply's parts are: `candidates[0].content.parts`.
fn reply_parts(reply: &Value) -> &[Value] {
    reply["candidates"][0]["content"]["parts"]
        .as_array()
        .map_or(&[], Vec::as_slice)
}

fn is_context_call(p: &Value) -> bool {
    p["functionCall"]["name"]
        .as_str()
        .is_some_and(is_context_tool)
}

/// Names a call the upstream left without an id, so that the client
/// answers it by the id the recorded turn holds (a client names unnamed
/// calls its own way, and the next request would not repeat the record).
/// The ids are `{name}_ctxproxy{start}_{n}`: the process's start time in
/// milliseconds keeps them unique across restarts.
pub fn name_call(part: &mut Value) {
    static START: OnceLock<u128> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let Some(call) = part.get_mut("functionCall").filter(|c| c.is_object()) else {
        return;
    };
    if call["id"].as_str().is_none_or(str::is_empty) {
        let start = START.get_or_init(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_millis()
        });
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = call["name"].as_str().unwrap_or("call").to_string();
        call["id"] = json!(format!("{name}_ctxproxy{start}_{n}"));
    }
}

impl Api for Gemini {
    const FORMAT: Format = Format::Gemini;
    const HISTORY: &'static str = "contents";
    const SYSTEM: Option<&'static str> = Some("systemInstruction");

    /// `/v1beta/models/{model}:generateContent`.
    fn model(_envelope: &Value, path: &str) -> String {
        let last = path.rsplit('/').next().unwrap_or_default();
        last.split(':').next().unwrap_or_default().to_string()
    }

    fn is_tool_output(m: &Value) -> bool {
        m["parts"]
            .as_array()
            .is_some_and(|parts| parts.iter().any(|p| p.get("functionResponse").is_some()))
    }

    fn streams_by_path(path: &str) -> bool {
        path.ends_with(":streamGenerateContent")
    }

    fn envelope_system(body: &Value) -> Result<Option<String>, BadRequest> {
        let field = "systemInstruction";
        match body.get(field).unwrap_or(&Value::Null) {
            Value::Null => Ok(Some(String::new())),
            Value::String(s) => Ok(Some(s.clone())),
            instruction => {
                let mut texts = Vec::new();
                for (i, p) in parts_of(instruction, field)?.iter().enumerate() {
                    texts.extend(part_text(p, &format!("{field}.parts[{i}]"))?);
                }
                Ok(Some(texts.join("\n")))
            }
        }
    }

    fn keeps(m: &Value) -> bool {
        has_signature(m) || has_media(m)
    }

    fn upstream_body(client: ClientBody, prompt: FormattedPrompt, _session: &str) -> Value {
        let mut body = client.envelope.clone();
        let signatures = Signatures::of(client.kept);
        let media = media_by_text(client.kept);
        let mut contents = prompt.messages;
        for c in &mut contents {
            if c["role"] == "model" {
                signatures.restore(c);
                continue;
            }
            let Some(parts) = c["parts"].as_array_mut().filter(|_| !media.is_empty()) else {
                continue;
            };
            *parts = std::mem::take(parts)
                .into_iter()
                .flat_map(|p| {
                    let original = p["text"].as_str().and_then(|t| media.get(t.trim()));
                    match original.and_then(Value::as_array) {
                        Some(original) => original.clone(),
                        None => vec![p],
                    }
                })
                .collect();
        }
        body["contents"] = Value::Array(contents);
        let ours = match asks_for_json(client.envelope) {
            true => Value::Null,
            false => prompt.tools,
        };
        put_declarations(&mut body, client.envelope, ours);
        body
    }

    fn error_body(kind: ErrorKind, message: &str, _param: Option<&str>) -> Value {
        let (code, status) = match kind {
            ErrorKind::InvalidRequest => (400, "INVALID_ARGUMENT"),
            ErrorKind::Unauthorized => (401, "UNAUTHENTICATED"),
            ErrorKind::Upstream => (502, "UNAVAILABLE"),
            ErrorKind::Internal => (500, "INTERNAL"),
        };
        json!({"error": {"code": code, "message": message, "status": status}})
    }

    /// A tool entry declares functions (`functionDeclarations`, each with
    /// `parameters` or `parametersJsonSchema`) or is a built-in (search,
    /// code execution) with none.
    fn function_tools(tool: &Value) -> Vec<Value> {
        let declared = tool["functionDeclarations"]
            .as_array()
            .into_iter()
            .flatten();
        declared
            .map(|f| {
                let parameters = f.get("parametersJsonSchema").unwrap_or(&f["parameters"]);
                function_tool(&f["name"], &f["description"], parameters)
            })
            .collect()
    }

    fn assistant_turn(reply: &Value) -> Value {
        json!({"role": "model", "parts": reply_parts(reply)})
    }

    fn continue_with(body: &mut Value, turn: &Value, answers: &[(ToolCall, String)]) {
        let contents = body["contents"]
            .as_array_mut()
            .expect("a forwarded body has contents");
        contents.push(turn.clone());
        // A call the upstream left without an id was read with one of
        // ctxproxy's (`call_id`): its answer names none either.
        let stated: Vec<&str> = turn["parts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["functionCall"]["id"].as_str())
            .collect();
        let parts: Vec<Value> = answers
            .iter()
            .map(|(call, text)| {
                let mut response = json!({"name": call.name, "response": {"output": text}});
                if stated.contains(&call.id.as_str()) {
                    response["id"] = json!(call.id);
                }
                json!({"functionResponse": response})
            })
            .collect();
        contents.push(json!({"role": "user", "parts": parts}));
    }

    fn splice(rounds: &[Value]) -> Value {
        let mut out = rounds.last().cloned().unwrap_or(Value::Null);
        let parts: Vec<Value> = rounds
            .iter()
            .flat_map(|r| reply_parts(r).iter().cloned())
            .filter(|p| !is_context_call(p))
            .map(|mut p| {
                name_call(&mut p);
                p
            })
            .collect();
        put_summed_usage::<Self>(&mut out, rounds);
        if out["candidates"][0].is_object() {
            out["candidates"][0]["content"] = json!({"role": "model", "parts": parts});
        }
        out
    }

    fn stream_events(reply: &Value) -> Vec<sse::Event> {
        vec![sse::Event {
            event: String::new(),
            data: reply.to_string(),
        }]
    }

    type Splicer = GeminiChunkSplicer;
    fn splicer(_client: &Value) -> GeminiChunkSplicer {
        GeminiChunkSplicer::default()
    }
}

#[cfg(test)]
mod tests;

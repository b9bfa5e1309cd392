//! Gemini's stream chunks spliced over the context-tool rounds: each
//! `data:` line is a whole `GenerateContentResponse`; the client sees one
//! stream, whatever rounds the proxy ran.

use serde_json::{json, Value};

use super::{is_context_call, name_call};
use crate::api::{add_usage, Splicer};
use crate::sse;

/// Splices the chunks of every round into one stream: context calls
/// withheld, unnamed calls named (`name_call`), each chunk's
/// `finishReason` and `usageMetadata` held back for one closing chunk
/// with the last reason and the usage summed over the rounds.
#[derive(Default)]
pub struct GeminiChunkSplicer {
    /// The first chunk: its model version and response id go on the closing one.
    first: Option<Value>,
    /// This round's parts, context calls included, thoughts left out.
    round_parts: Vec<Value>,
    /// This round's usage: each chunk states the round's so far.
    round_usage: Value,
    /// The parts the client saw, thoughts left out.
    client_parts: Vec<Value>,
    finish_reason: Option<Value>,
    usage: Value,
    failed: bool,
    /// This round's stream sent a `finishReason`.
    round_done: bool,
}

fn chunk_bytes(chunk: &Value) -> Vec<u8> {
    sse::Event {
        event: String::new(),
        data: chunk.to_string(),
    }
    .encode()
}

fn content_of(parts: Vec<Value>) -> Value {
    json!({"role": "model", "parts": parts})
}

impl Splicer for GeminiChunkSplicer {
    fn event(&mut self, event: sse::Event) -> Vec<u8> {
        let Ok(mut chunk) = serde_json::from_str::<Value>(&event.data) else {
            return Vec::new();
        };
        if chunk.get("error").is_some() {
            self.failed = true;
            return event.encode();
        }
        if self.first.is_none() {
            self.first = Some(chunk.clone());
        }
        if let Some(usage) = chunk
            .as_object_mut()
            .and_then(|c| c.remove("usageMetadata"))
        {
            self.round_usage = usage;
        }
        let Some(candidate) = chunk["candidates"].get_mut(0) else {
            // A prompt the API blocked: no candidate, its reason in
            // `promptFeedback`; the stream ends there.
            if chunk["promptFeedback"]["blockReason"].is_string() {
                self.round_done = true;
                return chunk_bytes(&chunk);
            }
            return Vec::new();
        };
        if let Some(reason) = candidate
            .as_object_mut()
            .and_then(|c| c.remove("finishReason"))
            .filter(|r| !r.is_null())
        {
            self.finish_reason = Some(reason);
            self.round_done = true;
        }
        let parts = candidate["content"]["parts"]
            .as_array_mut()
            .map(std::mem::take)
            .unwrap_or_default();
        let mut forwarded = Vec::with_capacity(parts.len());
        for mut p in parts {
            let thought = p["thought"] == true;
            if !thought {
                name_call(&mut p);
                self.round_parts.push(p.clone());
            }
            if is_context_call(&p) {
                continue;
            }
            if !thought {
                self.client_parts.push(p.clone());
            }
            forwarded.push(p);
        }
        if forwarded.is_empty() {
            return Vec::new();
        }
        candidate["content"]["parts"] = Value::Array(forwarded);
        chunk_bytes(&chunk)
    }

    fn end_round(&mut self) -> Value {
        self.round_done = false;
        add_usage(&mut self.usage, &std::mem::take(&mut self.round_usage));
        content_of(std::mem::take(&mut self.round_parts))
    }

    fn finish(&mut self) -> Vec<u8> {
        let reason = self.finish_reason.take().unwrap_or_else(|| json!("STOP"));
        let mut chunk = json!({"candidates": [{
            "content": {"role": "model", "parts": [{"text": ""}]},
            "finishReason": reason,
            "index": 0,
        }]});
        for key in ["modelVersion", "responseId"] {
            if let Some(v) = self.first.as_ref().and_then(|f| f.get(key)) {
                chunk[key] = v.clone();
            }
        }
        if !self.usage.is_null() {
            chunk["usageMetadata"] = self.usage.clone();
        }
        chunk_bytes(&chunk)
    }

    fn client_turn(&self) -> Value {
        content_of(self.client_parts.clone())
    }

    /// A blank line: the google-genai SDKs read a stream by matching
    /// `^\s*data: ` at the start of what they have not read yet, so an SSE
    /// comment would stop them there for the rest of the stream; whitespace
    /// they skip, and to SSE it is no event.
    fn keep_alive(&self) -> Vec<u8> {
        b"\n".to_vec()
    }

    fn failed(&self) -> bool {
        self.failed
    }

    fn round_ended(&self) -> bool {
        self.round_done
    }

    fn error_event(&self, body: &Value) -> Vec<u8> {
        chunk_bytes(body)
    }
}

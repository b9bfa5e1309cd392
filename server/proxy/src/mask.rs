//! Secrets in what the proxy forwards: the body sent upstream is masked
//! as the store masks what it keeps (`ctxproxy_core::secrets`), so that a
//! secret the store would not keep does not leave the machine either: the
//! system prompt, the client's messages where the body carries them as
//! sent (the whole shape, media messages), and the assembled prompt.

use std::borrow::Cow;

use ctxproxy_core::secrets::{self, Source};
use serde_json::Value;

use super::api::Api;

/// Fields whose strings are not text anyone wrote: ids, names, kinds, a
/// thinking block's signature or encrypted reasoning, media bytes and URLs.
/// Masking them would break the request (a signature that no longer
/// verifies) and find nothing.
const NOT_TEXT: [&str; 16] = [
    "id",
    "tool_use_id",
    "tool_call_id",
    "call_id",
    "type",
    "role",
    "name",
    "signature",
    "thoughtSignature",
    "encrypted_content",
    "data",
    "url",
    "media_type",
    "mimeType",
    "cache_control",
    "file_id",
];

/// What a system prompt is masked as: text the client wrote, whose
/// credentials are masked by their shape, as the conversation's are.
const SYSTEM: Source = Source::Conversation;

/// A system prompt's text masked: what the prompt record keeps.
pub fn system_text(text: &str) -> String {
    secrets::mask(text, SYSTEM).text.into_owned()
}

/// Masks the system prompt (`Api::SYSTEM`) and every history item of a
/// body to forward: a tool's output (`Api::is_tool_output`, an Anthropic
/// `tool_result` block) as tool output, everything else as conversation.
pub fn mask_forwarded<A: Api>(body: &mut Value) {
    if let Some(system) = A::SYSTEM.and_then(|field| body.get_mut(field)) {
        mask_strings(system, SYSTEM);
    }
    for m in body
        .get_mut(A::HISTORY)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        let source = match A::is_tool_output(m) {
            true => Source::ToolOutput,
            false => Source::Conversation,
        };
        mask_strings(m, source);
    }
}

fn mask_strings(v: &mut Value, source: Source) {
    match v {
        Value::String(text) => {
            let masked = match secrets::mask(text, source).text {
                Cow::Owned(masked) => Some(masked),
                Cow::Borrowed(_) => None,
            };
            if let Some(masked) = masked {
                *text = masked;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| mask_strings(i, source)),
        Value::Object(map) => {
            let source = match map.get("type").and_then(Value::as_str) {
                Some("tool_result") => Source::ToolOutput,
                _ => source,
            };
            for (key, value) in map.iter_mut() {
                if !NOT_TEXT.contains(&key.as_str()) {
                    mask_strings(value, source);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_is_masked_and_ids_and_signatures_are_not() {
        let key = concat!("AKIA", "Q3EGRZ7TYXNV4K2M");
        let mut body = json!({
            "system": [{"type": "text", "text": format!("key {key}")}],
            "messages": [
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "plan", "signature": key},
                    {"type": "tool_use", "id": key, "name": "run", "input": {"cmd": format!("export K={key}")}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": key, "content": format!("K={key}")}]},
            ],
        });
        mask_forwarded::<crate::anthropic::Anthropic>(&mut body);
        let text = body.to_string();
        assert_eq!(text.matches(key).count(), 3, "{text}");
        assert_eq!(text.matches("[secret:aws-access-key]").count(), 3, "{text}");
    }
}

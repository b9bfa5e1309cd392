//! Where each API's reply states what the provider counted, read into
//! core's `Usage` (Anthropic reports input, cache reads and cache writes
//! apart: they are added up into the input).

pub use ctxproxy_core::usage::Usage;
use serde_json::{Map, Value};

/// Which API's usage object a `Value` is, and where a reply or a streamed
/// event holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageShape {
    /// Chat Completions: `usage.prompt_tokens`,
    /// `usage.prompt_tokens_details.cached_tokens`, `usage.completion_tokens`.
    ChatCompletions,
    /// Messages: `input_tokens`, `cache_read_input_tokens`,
    /// `cache_creation_input_tokens`, `output_tokens`.
    Anthropic,
    /// Responses: `input_tokens`, `input_tokens_details.cached_tokens`,
    /// `output_tokens`.
    Responses,
    /// Gemini's `usageMetadata`: `promptTokenCount`,
    /// `cachedContentTokenCount`, `candidatesTokenCount`, `thoughtsTokenCount`.
    Gemini,
}

impl UsageShape {
    /// The field of a whole reply that holds its usage.
    pub fn reply_field(self) -> &'static str {
        match self {
            UsageShape::Gemini => "usageMetadata",
            _ => "usage",
        }
    }

    /// The usage object of a whole reply, if it has one.
    pub fn of_reply(self, reply: &Value) -> Option<&Map<String, Value>> {
        reply.get(self.reply_field()).and_then(Value::as_object)
    }

    /// The usage object a streamed event's data states, if any. Within one
    /// round each states the round's usage so far, field by field
    /// (`RoundUsage` keeps the latest of each).
    pub fn of_event(self, data: &Value) -> Option<&Map<String, Value>> {
        match self {
            UsageShape::ChatCompletions | UsageShape::Gemini => self.of_reply(data),
            // `message_start` holds the input's, `message_delta` the output's so far.
            UsageShape::Anthropic => match data["type"].as_str() {
                Some("message_start") => data["message"].get("usage"),
                Some("message_delta") => data.get("usage"),
                _ => None,
            }
            .and_then(Value::as_object),
            UsageShape::Responses => match data["type"].as_str() {
                Some("response.completed" | "response.incomplete" | "response.failed") => {
                    data["response"].get("usage").and_then(Value::as_object)
                }
                _ => None,
            },
        }
    }

    /// A usage object read in this API's fields; a field it lacks is 0.
    pub fn read(self, usage: &Map<String, Value>) -> Usage {
        let n = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
        let nested = |outer: &str, key: &str| {
            usage
                .get(outer)
                .and_then(|o| o.get(key))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        match self {
            UsageShape::ChatCompletions => Usage {
                input: n("prompt_tokens"),
                cached_input: nested("prompt_tokens_details", "cached_tokens"),
                cache_write: 0,
                output: n("completion_tokens"),
            },
            UsageShape::Anthropic => {
                let (read, write) = (
                    n("cache_read_input_tokens"),
                    n("cache_creation_input_tokens"),
                );
                Usage {
                    input: n("input_tokens") + read + write,
                    cached_input: read,
                    cache_write: write,
                    output: n("output_tokens"),
                }
            }
            UsageShape::Responses => Usage {
                input: n("input_tokens"),
                cached_input: nested("input_tokens_details", "cached_tokens"),
                cache_write: 0,
                output: n("output_tokens"),
            },
            UsageShape::Gemini => Usage {
                input: n("promptTokenCount"),
                cached_input: n("cachedContentTokenCount"),
                cache_write: 0,
                output: n("candidatesTokenCount") + n("thoughtsTokenCount"),
            },
        }
    }
}

/// One streamed round's usage: each event that states usage replaces the
/// fields it names (Anthropic's input at `message_start`, its output at
/// `message_delta`; Gemini restating the whole so far on every chunk).
#[derive(Debug, Default)]
pub struct RoundUsage {
    fields: Map<String, Value>,
}

impl RoundUsage {
    /// Takes in one event's data (JSON text); cheap for an event that
    /// states no usage.
    pub fn event(&mut self, shape: UsageShape, data: &str) {
        if !data.contains("sage") {
            return;
        }
        let Ok(value) = serde_json::from_str::<Value>(data) else {
            return;
        };
        if let Some(usage) = shape.of_event(&value) {
            for (k, v) in usage {
                self.fields.insert(k.clone(), v.clone());
            }
        }
    }

    /// The round's usage, if any event stated one; ready for the next round.
    pub fn take(&mut self, shape: UsageShape) -> Option<Usage> {
        let fields = std::mem::take(&mut self.fields);
        (!fields.is_empty()).then(|| shape.read(&fields))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(shape: UsageShape, reply: Value) -> Usage {
        shape.read(shape.of_reply(&reply).expect("a usage object"))
    }

    #[test]
    fn each_api_reads_into_input_cached_and_output() {
        let chat = json!({"usage": {"prompt_tokens": 120, "completion_tokens": 7,
            "prompt_tokens_details": {"cached_tokens": 100}}});
        let anthropic = json!({"usage": {"input_tokens": 20, "cache_read_input_tokens": 100,
            "cache_creation_input_tokens": 30, "output_tokens": 7}});
        let responses = json!({"usage": {"input_tokens": 120, "output_tokens": 7,
            "input_tokens_details": {"cached_tokens": 100}}});
        let gemini = json!({"usageMetadata": {"promptTokenCount": 120, "candidatesTokenCount": 5,
            "thoughtsTokenCount": 2, "cachedContentTokenCount": 100}});
        let expected = Usage {
            input: 120,
            cached_input: 100,
            cache_write: 0,
            output: 7,
        };
        assert_eq!(read(UsageShape::ChatCompletions, chat), expected);
        assert_eq!(read(UsageShape::Responses, responses), expected);
        assert_eq!(read(UsageShape::Gemini, gemini), expected);
        assert_eq!(
            read(UsageShape::Anthropic, anthropic),
            Usage {
                input: 150,
                cache_write: 30,
                ..expected
            }
        );
    }

    #[test]
    fn a_streamed_round_keeps_the_latest_of_each_field() {
        let events = [
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 40,
                "cache_read_input_tokens": 60, "cache_creation_input_tokens": 0, "output_tokens": 1}}}),
            json!({"type": "content_block_delta", "delta": {"text": "usage"}}),
            json!({"type": "message_delta", "usage": {"output_tokens": 12}}),
        ];
        let mut round = RoundUsage::default();
        for e in &events {
            round.event(UsageShape::Anthropic, &e.to_string());
        }
        assert_eq!(
            round.take(UsageShape::Anthropic),
            Some(Usage {
                input: 100,
                cached_input: 60,
                cache_write: 0,
                output: 12
            })
        );
        assert_eq!(round.take(UsageShape::Anthropic), None, "taken");
        // OpenAI states `usage: null` on every chunk before the last.
        round.event(
            UsageShape::ChatCompletions,
            r#"{"choices": [], "usage": null}"#,
        );
        assert_eq!(round.take(UsageShape::ChatCompletions), None);
    }
}

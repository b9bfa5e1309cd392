//! The model APIs the proxy serves, by name, for what drives a proxy from
//! outside (`replay --via-proxy`): where a request goes, the shape its
//! prompt takes, and a history and a reply read as the proxy reads them.

use ctxproxy_core::message::Message;
use ctxproxy_model_apis::usage::UsageShape;
use ctxproxy_model_apis::Shape;
use ctxproxy_service::format::Format;
use serde_json::Value;

use super::anthropic::Anthropic;
use super::api::Api;
use super::gemini::Gemini;
use super::history::read_whole;
use super::openai::OpenAi;
use super::responses::Responses;

/// The model APIs by the names `--api` takes (`ModelApi::name`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelApi {
    ChatCompletions,
    Responses,
    Messages,
    Gemini,
}

impl ModelApi {
    pub const ALL: [ModelApi; 4] = [
        ModelApi::ChatCompletions,
        ModelApi::Responses,
        ModelApi::Messages,
        ModelApi::Gemini,
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ModelApi::ChatCompletions => "chat-completions",
            ModelApi::Responses => "responses",
            ModelApi::Messages => "messages",
            ModelApi::Gemini => "gemini",
        }
    }

    /// The path a request of this API is posted to.
    pub fn path(self) -> &'static str {
        match self {
            ModelApi::ChatCompletions => "/v1/chat/completions",
            ModelApi::Responses => "/v1/responses",
            ModelApi::Messages => "/v1/messages",
            ModelApi::Gemini => "/v1beta/models/replay:generateContent",
        }
    }

    /// The shape a prompt takes in this API (`format::prompt_fields`).
    pub fn format(self) -> Format {
        match self {
            ModelApi::ChatCompletions => OpenAi::FORMAT,
            ModelApi::Responses => Responses::FORMAT,
            ModelApi::Messages => Anthropic::FORMAT,
            ModelApi::Gemini => Gemini::FORMAT,
        }
    }

    /// A request body read as the proxy reads it; the error names the field.
    pub fn read_request(self, body: &[u8]) -> Result<ReadRequest, String> {
        match self {
            ModelApi::ChatCompletions => read::<OpenAi>(body),
            ModelApi::Responses => read::<Responses>(body),
            ModelApi::Messages => read::<Anthropic>(body),
            ModelApi::Gemini => read::<Gemini>(body),
        }
    }

    /// Where this API's replies state the provider's usage.
    pub fn usage_shape(self) -> UsageShape {
        match self {
            ModelApi::ChatCompletions => OpenAi::USAGE,
            ModelApi::Responses => Responses::USAGE,
            ModelApi::Messages => Anthropic::USAGE,
            ModelApi::Gemini => Gemini::USAGE,
        }
    }

    /// The assistant's messages in a whole (not streamed) reply, as the
    /// proxy records them.
    pub fn reply_messages(self, reply: &Value) -> Vec<Message> {
        match self {
            ModelApi::ChatCompletions => replied::<OpenAi>(reply),
            ModelApi::Responses => replied::<Responses>(reply),
            ModelApi::Messages => replied::<Anthropic>(reply),
            ModelApi::Gemini => replied::<Gemini>(reply),
        }
    }
}

/// A request as the proxy reads it, whatever its API.
pub struct ReadRequest {
    pub system: String,
    pub messages: Vec<Message>,
    /// Each tool's name, description and parameters, in Chat Completions'
    /// shape: the same tools count the same in every API.
    pub tools: Vec<Value>,
}

fn read<A: Api>(body: &[u8]) -> Result<ReadRequest, String> {
    let read = read_whole::<A>(body.to_vec()).map_err(|b| b.message)?;
    let tools = match read.envelope.get("tools") {
        Some(Value::Array(tools)) => tools.iter().flat_map(A::function_tools).collect(),
        _ => Vec::new(),
    };
    Ok(ReadRequest {
        system: read.system,
        messages: read.history.messages().to_vec(),
        tools,
    })
}

fn replied<A: Api>(reply: &Value) -> Vec<Message> {
    A::turn_messages(&A::assistant_turn(reply))
}

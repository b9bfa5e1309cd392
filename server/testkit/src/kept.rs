//! Messages as the store keeps them, built by hand for tests and benches:
//! ids `x<id>.<n>`, and each tool message's output standing in as its own
//! digest.

use ctxproxy_core::digest::OutputKind;
use ctxproxy_core::exchange::{KeptMessage, ToolResult};
use ctxproxy_core::ids::{BlobHash, ExchangeId, MessageId};
use ctxproxy_core::message::{Message, Role};

/// What a test says about a tool output; the rest of its `ToolResult`
/// (headline, digest) follows from the message.
pub struct Output {
    pub blob: BlobHash,
    pub kind: OutputKind,
    pub path: Option<String>,
    pub bytes: u64,
    pub tokens: u32,
}

/// Exchange `x<id>`'s messages, kept; `output` describes each tool message's
/// output.
pub fn kept(
    id: u32,
    messages: Vec<Message>,
    output: impl Fn(MessageId, &Message) -> Output,
) -> Vec<KeptMessage> {
    messages
        .into_iter()
        .enumerate()
        .map(|(i, message)| {
            let id = MessageId {
                exchange: ExchangeId(id),
                index: i as u32 + 1,
            };
            let result = (message.role == Role::Tool).then(|| {
                let o = output(id, &message);
                ToolResult {
                    blob: o.blob,
                    kind: o.kind,
                    path: o.path,
                    bytes: o.bytes,
                    tokens: o.tokens,
                    headline: message.content.lines().next().unwrap_or("").to_string(),
                    digest: message.content.clone(),
                    whole: false,
                }
            });
            KeptMessage {
                id,
                message,
                result,
            }
        })
        .collect()
}

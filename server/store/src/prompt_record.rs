//! What the store records of an assembled prompt for `ctx/explain`: the
//! packed prompt as plain data (its layers and items, trims, superseded
//! ranges, recall hits, shape, the messages in the packer's API-neutral
//! shape, the tools offered) with the request it answered and the caller's
//! state envelope, under an explicit version. Formatting it for an API is
//! the reader's job, after the commit. Records from before the version
//! was kept are handed back as their text (`Recorded::Unversioned`).

use ctxproxy_core::config::LayerOrder;
use ctxproxy_core::message::Role;
use ctxproxy_core::packer::{self, ItemForm, Layer, PackedPrompt, PromptMessage, ShapeKind};
use ctxproxy_core::render::Block;
use ctxproxy_core::tokens::Encoding;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The version this code writes; a record without one is unversioned.
pub const VERSION: u32 = 1;

/// A packed prompt as recorded. `S` is the caller's state envelope, kept
/// as the caller's own data; `F` the format it was asked for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackedRecord<F, S> {
    pub version: u32,
    /// The request it answered; its fields sit beside the others in the
    /// stored JSON.
    #[serde(flatten)]
    pub request: RecordRequest<F, S>,
    /// Everything the packer charged (`PackedPrompt::total`).
    pub total: u32,
    pub layers: Vec<RecordedLayer>,
    pub trimmed: Vec<RecordedTrim>,
    pub superseded: Vec<RecordedSupersession>,
    pub recall: Vec<RecordedHit>,
    pub shape: ShapeKind,
    pub reason: Option<String>,
    /// The context tools offered (`packer::offered_tools`).
    pub tools: Vec<String>,
    pub messages: Vec<RecordedMessage>,
}

/// What the packer's caller adds to its prompt in the record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordRequest<F, S> {
    pub prompt_id: String,
    pub session_id: String,
    pub budget: u32,
    pub encoding: Encoding,
    pub format: F,
    pub order: LayerOrder,
    pub prefix_reused: u32,
    pub client_tools_tokens: u32,
    pub state: S,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordedLayer {
    pub layer: Layer,
    pub tokens: u32,
    pub items: Vec<RecordedItem>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordedItem {
    pub id: String,
    pub format: ItemForm,
    pub tokens: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordedTrim {
    pub id: String,
    pub from: ItemForm,
    pub to: ItemForm,
    pub reason: String,
}

/// `ids` (`x3-x9`) superseded by `by` (`x10`), as the prompt named them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordedSupersession {
    pub ids: String,
    pub by: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordedHit {
    pub exchange: String,
    pub words: Vec<String>,
    pub tokens: u32,
    pub text: String,
}

/// A message of the prompt in the packer's API-neutral shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordedMessage {
    pub role: Role,
    pub blocks: Vec<RecordedBlock>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum RecordedBlock {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        arguments: String,
    },
    ToolResult {
        call_id: String,
        name: String,
        text: String,
    },
}

impl<F, S> PackedRecord<F, S> {
    /// The record of `prompt`, packed for `request`.
    pub fn new(prompt: &PackedPrompt, request: RecordRequest<F, S>) -> PackedRecord<F, S> {
        PackedRecord {
            version: VERSION,
            request,
            total: prompt.total,
            layers: prompt
                .layers
                .iter()
                .map(|l| RecordedLayer {
                    layer: l.layer,
                    tokens: l.tokens,
                    items: l
                        .items
                        .iter()
                        .map(|i| RecordedItem {
                            id: i.id.clone(),
                            format: i.format,
                            tokens: i.tokens,
                        })
                        .collect(),
                })
                .collect(),
            trimmed: prompt
                .trimmed
                .iter()
                .map(|t| RecordedTrim {
                    id: t.id.clone(),
                    from: t.from,
                    to: t.to,
                    reason: t.reason.clone(),
                })
                .collect(),
            superseded: prompt
                .superseded
                .iter()
                .map(|s| RecordedSupersession {
                    ids: s.ids.to_string(),
                    by: s.by.to_string(),
                })
                .collect(),
            recall: prompt
                .recall
                .iter()
                .map(|hit| RecordedHit {
                    exchange: hit.id(),
                    words: hit.words.clone(),
                    tokens: hit.passage.tokens,
                    text: hit.passage.text.clone(),
                })
                .collect(),
            shape: prompt.shape.kind(),
            reason: prompt.shape.reason(prompt.total),
            tools: packer::offered_tools(prompt.tools_tokens)
                .iter()
                .map(|t| t.to_string())
                .collect(),
            messages: prompt
                .messages
                .iter()
                .map(|m| RecordedMessage {
                    role: m.role,
                    blocks: m.blocks.iter().map(RecordedBlock::of).collect(),
                })
                .collect(),
        }
    }

    /// The messages as the packer made them, for formatting; what each was
    /// charged is in the layers, not here.
    pub fn prompt_messages(&self) -> Vec<PromptMessage> {
        self.messages
            .iter()
            .map(|m| PromptMessage {
                role: m.role,
                blocks: m.blocks.iter().map(RecordedBlock::block).collect(),
                charged: 0,
                block_tokens: Vec::new(),
            })
            .collect()
    }
}

impl RecordedBlock {
    fn of(block: &Block) -> RecordedBlock {
        match block.clone() {
            Block::Text(text) => RecordedBlock::Text { text },
            Block::ToolUse {
                id,
                name,
                arguments,
            } => RecordedBlock::ToolUse {
                id,
                name,
                arguments,
            },
            Block::ToolResult {
                call_id,
                name,
                text,
            } => RecordedBlock::ToolResult {
                call_id,
                name,
                text,
            },
        }
    }

    fn block(&self) -> Block {
        match self.clone() {
            RecordedBlock::Text { text } => Block::Text(text),
            RecordedBlock::ToolUse {
                id,
                name,
                arguments,
            } => Block::ToolUse {
                id,
                name,
                arguments,
            },
            RecordedBlock::ToolResult {
                call_id,
                name,
                text,
            } => Block::ToolResult {
                call_id,
                name,
                text,
            },
        }
    }
}

/// A prompt record as read back.
#[derive(Debug)]
pub enum Recorded<F, S> {
    Packed(Box<PackedRecord<F, S>>),
    /// Written before records had a version: the caller's own result as
    /// JSON, for the caller's reader of that format.
    Unversioned(String),
}

/// Why a record does not read.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("version {0}, this build reads version {VERSION}")]
    Version(u32),
}

impl<F: DeserializeOwned, S: DeserializeOwned> Recorded<F, S> {
    pub fn parse(text: &str) -> Result<Recorded<F, S>, RecordError> {
        let value: serde_json::Value = serde_json::from_str(text)?;
        match value.get("version").map(|v| v.as_u64()) {
            None => Ok(Recorded::Unversioned(text.to_string())),
            Some(Some(v)) if v == u64::from(VERSION) => {
                Ok(Recorded::Packed(Box::new(serde_json::from_value(value)?)))
            }
            Some(v) => Err(RecordError::Version(v.unwrap_or(0) as u32)),
        }
    }
}

impl<F: Serialize, S: Serialize> PackedRecord<F, S> {
    /// The record as the store keeps it: JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a prompt record serialises")
    }
}

//! What the packer is asked for and what it answers: the request, the
//! prompt's messages, its layers and their items, and what was trimmed.

use crate::call::ContextCut;
use crate::config::{CallLimits, LayerOrder};
use crate::exchange::{Counted, KeptMessage, Level};
use crate::ids::{ExchangeId, ItemId};
use crate::message::Role;
use crate::recall::RecallHit;
use crate::render::{self, Block, MESSAGE_OVERHEAD, REPLY_PRIMER};
use crate::supersede::Supersession;
use crate::tokens::Encoding;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackRequest {
    /// Ceiling in tokens for the history the packer chooses: L0, headers,
    /// summaries, references, recall and the recent tail. What the request
    /// brings of its own (system prompt, tools, input, the reply primer) is
    /// sent as is and counted apart (`fixed_tokens`): a client's large
    /// system prompt or tool list never makes its history smaller or its
    /// request fail.
    pub budget: u32,
    pub encoding: Encoding,
    pub order: LayerOrder,
    /// The system prompt as a piece: `render::counted_piece`.
    pub system: Option<Counted>,
    /// The message the prompt ends with.
    pub input: Option<KeptMessage>,
    /// `render::message_tokens(input, Level::Full, encoding)`.
    pub input_tokens: u32,
    /// `render::tools_tokens(encoding)` when the tools are sent, else 0.
    pub tools_tokens: u32,
    /// The prompt's number in its session (`p<N>`), for L0's call line.
    pub iteration: u32,
    pub calls: CallLimits,
    /// The whole shape may be chosen: the session's previous prompt had
    /// it, or this is its first. Once a session's prompt is layered it
    /// stays layered, so the context tools, once offered, stay offered
    /// (a tool list that changes back breaks a provider's prompt cache).
    pub whole_allowed: bool,
}

impl PackRequest {
    /// What the prompt sends whatever the history: the reply primer, the
    /// tools, the system prompt and the input. Counted apart from `budget`.
    pub fn fixed_tokens(&self) -> u32 {
        let system = self
            .system
            .as_ref()
            .map_or(0, |s| s.tokens + MESSAGE_OVERHEAD);
        let input = self.input.as_ref().map_or(0, |_| self.input_tokens);
        REPLY_PRIMER + self.tools_tokens + system + input
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layer {
    System,
    Memory,
    ProjectRecent,
    CurrentContext,
    Recent,
    Headers,
    Summaries,
    Asks,
    References,
    Recall,
    ProjectRecall,
    Input,
}

impl Layer {
    /// The name `ctx/assemble` and `ctx/explain` use.
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::System => "system",
            Layer::Memory => "memory",
            Layer::ProjectRecent => "projectRecent",
            Layer::CurrentContext => "currentContext",
            Layer::Recent => "recent",
            Layer::Headers => "headers",
            Layer::Summaries => "summaries",
            Layer::Asks => "asks",
            Layer::References => "references",
            Layer::Recall => "recall",
            Layer::ProjectRecall => "projectRecall",
            Layer::Input => "input",
        }
    }
}

crate::wire_name!(
    Layer: System,
    Memory,
    ProjectRecent,
    CurrentContext,
    Recent,
    Headers,
    Summaries,
    Asks,
    References,
    Recall,
    ProjectRecall,
    Input
);

/// How an item is shown: an exchange level, or one of the other forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ItemForm {
    Level(Level),
    Reference,
    Text,
    Dropped,
}

impl ItemForm {
    pub fn as_str(self) -> &'static str {
        match self {
            ItemForm::Level(level) => level.as_str(),
            ItemForm::Reference => "reference",
            ItemForm::Text => "text",
            ItemForm::Dropped => "dropped",
        }
    }
}

crate::wire_name!(
    ItemForm: Level(Level::Full),
    Level(Level::Digests),
    Level(Level::Summary),
    Level(Level::Header),
    Reference,
    Text,
    Dropped
);

/// One thing a layer holds: `x12`, `b3:…`, or the layer's own name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerItem {
    pub id: String,
    pub format: ItemForm,
    pub tokens: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerReport {
    pub layer: Layer,
    /// Content and message overhead of what the layer holds.
    pub tokens: u32,
    pub items: Vec<LayerItem>,
}

/// A demotion: `id` would have been shown as `from`, is shown as `to`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trim {
    pub id: String,
    pub from: ItemForm,
    pub to: ItemForm,
    pub reason: String,
}

/// A message of the prompt in API-neutral shape. Adjacent `Text` blocks are
/// one content string in APIs that take a string (`PromptMessage::text`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptMessage {
    pub role: Role,
    pub blocks: Vec<Block>,
    /// Tokens charged for this message, overhead included. The messages of
    /// an exchange are charged together, on its last message.
    pub charged: u32,
    /// Tokens of each block when known (layer messages), else empty.
    pub block_tokens: Vec<u32>,
}

impl PromptMessage {
    /// A layer's message made of counted pieces, charged their sum and a
    /// message's overhead.
    pub fn of_pieces(role: Role, pieces: Vec<(String, u32)>) -> PromptMessage {
        let charged = pieces.iter().map(|(_, n)| n).sum::<u32>() + MESSAGE_OVERHEAD;
        let (blocks, block_tokens) = pieces.into_iter().map(|(t, n)| (Block::Text(t), n)).unzip();
        PromptMessage {
            role,
            blocks,
            charged,
            block_tokens,
        }
    }

    /// The input message as sent, charged what the request counted for it.
    pub fn of_input(input: &KeptMessage, charged: u32) -> PromptMessage {
        PromptMessage {
            role: input.message.role,
            blocks: render::message_blocks(input, Level::Full),
            charged,
            block_tokens: Vec::new(),
        }
    }

    /// The content as one string: what the tokenizer sees.
    pub fn text(&self) -> String {
        self.blocks.iter().map(Block::text).collect()
    }

    /// The ids of the tool calls this message makes.
    pub fn tool_use_ids(&self) -> impl Iterator<Item = &str> {
        self.blocks.iter().filter_map(|b| match b {
            Block::ToolUse { id, .. } => Some(id.as_str()),
            _ => None,
        })
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedPrompt {
    pub messages: Vec<PromptMessage>,
    pub tools_tokens: u32,
    /// Everything charged: messages, `REPLY_PRIMER` and tools; what is not
    /// `PackRequest::fixed_tokens` is at most the budget.
    pub total: u32,
    /// Every layer, in `Layer::VARIANTS` order.
    pub layers: Vec<LayerReport>,
    pub trimmed: Vec<Trim>,
    /// The superseded exchanges the prompt covers, as ranges, and what
    /// superseded them (`ctx/explain`'s `superseded`).
    pub superseded: Vec<Supersession>,
    /// The recall block's hits the prompt shows, best first, then project
    /// memory's (their ids name their sessions).
    pub recall: Vec<RecallHit>,
    pub shape: Shape,
}

/// Which shape a prompt has: the word `ctx/assemble` and the prompt
/// record name it by. A record made before the shape was kept is layered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ShapeKind {
    #[default]
    Layered,
    Whole,
    OneShot,
}

impl ShapeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ShapeKind::Layered => "layered",
            ShapeKind::Whole => "whole",
            ShapeKind::OneShot => "oneShot",
        }
    }
}

crate::wire_name!(ShapeKind: Layered, Whole, OneShot);

/// What a prompt is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// The layers: L0, headers, summaries, references, the recent tail.
    Layered,
    /// The session's whole history as it was sent, nothing left out, no L0
    /// and no context tools: chosen while the history fits the budget.
    Whole {
        /// Tokens the layered prompt would have cost.
        layered: u32,
    },
    /// A call at the maximum depth: how much of its context it kept.
    OneShot(ContextCut),
}

impl Shape {
    /// Which shape this is, without what it holds.
    pub fn kind(&self) -> ShapeKind {
        match self {
            Shape::Layered => ShapeKind::Layered,
            Shape::Whole { .. } => ShapeKind::Whole,
            Shape::OneShot(_) => ShapeKind::OneShot,
        }
    }

    /// Why the prompt has its shape; `None` for the layered one.
    pub fn reason(&self, total: u32) -> Option<String> {
        match self {
            Shape::Layered => None,
            Shape::Whole { layered } => Some(format!(
                "the whole history: {total} tokens, the layered prompt {layered}; nothing to retrieve, no context tools"
            )),
            Shape::OneShot(cut) => Some(cut.reason()),
        }
    }
}

impl PackedPrompt {
    /// The exchanges whose header line the prompt shows, in any layer: at
    /// header level, and at summary level, whose text opens with it. A
    /// header changed after it was shown would change the next prompt's
    /// cached prefix from that line on.
    pub fn header_lines_shown(&self) -> Vec<ExchangeId> {
        let headers = self.layers.iter().flat_map(|l| &l.items);
        headers
            .filter(|item| matches!(item.format, ItemForm::Level(Level::Header | Level::Summary)))
            .filter_map(|item| match ItemId::parse(&item.id) {
                Ok(ItemId::Exchange(id)) => Some(id),
                _ => None,
            })
            .collect()
    }

    pub fn layer(&self, layer: Layer) -> &LayerReport {
        &self.layers[Layer::VARIANTS.iter().position(|l| *l == layer).unwrap()]
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PackError {
    #[error("budget of {budget} tokens is smaller than the {needed} the current context and headers need (the system prompt, tools and input are counted apart)")]
    BudgetTooSmall { needed: u32, budget: u32 },
}

impl Layer {
    pub(super) const ALL_SEED003: [Layer; 12] = [
        Layer::System,
        Layer::Memory,
        Layer::ProjectRecent,
        Layer::CurrentContext,
        Layer::Headers,
        Layer::Summaries,
        Layer::Asks,
        Layer::References,
        Layer::Recent,
        Layer::Recall,
        Layer::ProjectRecall,
        Layer::Input,
    ];
    /// The input comes before L0: the next prompt shows it again as the
    /// start of the newest exchange, so in this place it stays in the
    /// cached prefix; and a tool result as input stays right after its call.
    /// The recall block comes after an input that opens a new exchange
    /// (the next prompt shows that input at the same place), and right
    /// before an open exchange's first message when there is none, so
    /// every later model call of that exchange shares the prefix through it.
    ///
    /// Project memory's standing section comes right after the system
    /// prompt: it is the same on every prompt of a session. The project's
    /// recent exchanges follow it: they only lose their oldest entries, at
    /// their end, as the session's own history takes the budget back. Its
    /// recall follows the session's own.
    pub(super) const ALL_CACHE_STABLE: [Layer; 12] = [
        Layer::System,
        Layer::Memory,
        Layer::ProjectRecent,
        Layer::Headers,
        Layer::References,
        Layer::Summaries,
        Layer::Asks,
        Layer::Recent,
        Layer::Input,
        Layer::Recall,
        Layer::ProjectRecall,
        Layer::CurrentContext,
    ];
}

/// Tokens at the start of `next` that are identical in `prev`: tools, then
/// whole equal messages, then equal leading pieces of the first message
/// that differs. What a provider's prompt cache can reuse, at most.
///
/// Equal messages may be charged differently: the input is charged alone,
/// and the next prompt shows it again as the first message of an exchange,
/// whose messages are charged together on its last. Everything before
/// matched, so either charge covers only matched messages.
pub fn shared_prefix_tokens(prev: &PackedPrompt, next: &PackedPrompt) -> u32 {
    let mut shared = if prev.tools_tokens == next.tools_tokens {
        next.tools_tokens
    } else {
        return 0;
    };
    for (a, b) in prev.messages.iter().zip(&next.messages) {
        if a.role == b.role && a.blocks == b.blocks {
            shared += if b.charged > 0 { b.charged } else { a.charged };
            continue;
        }
        if a.role == b.role && !b.block_tokens.is_empty() {
            shared += a
                .blocks
                .iter()
                .zip(&b.blocks)
                .zip(&b.block_tokens)
                .take_while(|((x, y), _)| x == y)
                .map(|(_, n)| n)
                .sum::<u32>();
        }
        break;
    }
    shared
}

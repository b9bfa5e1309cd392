//! The service's API: params and results of every `ctx/` method as plain
//! data, and their conversion to and from the core's. The same types are
//! what the LSP carries as JSON, hence serde (prompt records made before
//! records had a version are `AssembleResult`'s JSON too); reading params
//! from JSON is `from_json`'s, JSON-RPC around them the LSP crate's.

use ctxproxy_core::config::LayerOrder;
use ctxproxy_core::context::Phase;
use ctxproxy_core::exchange::Outcome;
use ctxproxy_core::message::{Message, Role, ToolCall, UserKind};
use ctxproxy_core::message_json;
use ctxproxy_core::packer::{ItemForm, Layer, ShapeKind};
use ctxproxy_core::supersede::ExchangeRange;
use ctxproxy_core::tokens::Encoding;
use ctxproxy_store::{ParentKind, TextSource};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ServiceError;

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
    pub role: Role,
    #[serde(default)]
    pub content: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<UserKind>,
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
        let in_message = |e: message_json::FieldError| {
            ServiceError::InvalidParams(format!("{field}.{}: {}", e.field, e.why))
        };
        let (content, raw) =
            message_json::content_from_json(self.role, &self.content).map_err(in_message)?;
        let tool_calls = self
            .tool_calls
            .iter()
            .map(|c| ToolCall {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: message_json::arguments_from_json(Some(&c.arguments)),
            })
            .collect();
        let message = Message {
            role: self.role,
            content,
            raw,
            kind: self.kind,
            tool_calls,
            tool_call_id: self.tool_call_id.clone(),
            name: self.name.clone(),
            agent: self.agent.clone(),
            at: self.at.clone(),
        };
        message_json::check(&message).map_err(in_message)?;
        Ok(message)
    }

    /// The wire form of a message; `content` is `{"base64": …}` when the
    /// message holds bytes that are not UTF-8.
    pub fn from_core(m: &Message) -> WireMessage {
        WireMessage {
            role: m.role,
            content: message_json::content_to_json(m),
            kind: m.kind,
            tool_calls: m
                .tool_calls
                .iter()
                .map(|c| WireToolCall {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    arguments: message_json::arguments_to_json(&c.arguments),
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
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ParentRef {
    pub session_id: String,
    pub at_exchange: Option<Value>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OpenSessionParams {
    pub workspace: Option<String>,
    pub title: Option<String>,
    pub parent: Option<ParentRef>,
    /// With `parent`: a recursive call made by it, not a fork.
    pub child: Option<ChildParams>,
}

/// `ctx/openSession`'s `child`: what a recursive call is called with.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChildParams {
    pub query: String,
    pub context: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AppendParams {
    pub session_id: String,
    pub messages: Vec<WireMessage>,
    /// The exchange these messages open or continue (`x<N>`); refused with
    /// -32007 when it is not the one they would go to.
    pub exchange: Option<String>,
    /// Earlier exchanges (`x3`, `x3-x9`) the exchange these messages open
    /// or continue replaces: `parse_supersedes`.
    #[serde(default)]
    pub supersedes: Vec<String>,
}

#[derive(Debug, Deserialize, Default, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AssembleParams {
    pub session_id: String,
    pub input: Option<WireMessage>,
    pub system: Option<String>,
    pub budget: Option<u32>,
    pub encoding: Option<Encoding>,
    pub format: Option<Format>,
    /// `cache-stable` (default) or `seed003`.
    pub order: Option<LayerOrder>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetrieveParams {
    pub session_id: String,
    pub ids: Vec<String>,
    pub format: Option<RetrieveFormat>,
    pub lines: Option<[u32; 2]>,
    pub grep: Option<String>,
    pub max_tokens: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchParams {
    pub session_id: Option<String>,
    /// With `sessionId`: the other sessions of its project too (their hits'
    /// ids name their session).
    pub project: Option<bool>,
    pub workspace: Option<String>,
    pub query: String,
    pub limit: Option<u32>,
}

/// `ctx/callContextTool`: a context-tool call an editor's model made, by
/// the tool's name, with its arguments as the model wrote them (an object).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CallContextToolParams {
    pub session_id: String,
    pub name: String,
    pub arguments: Value,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExplainParams {
    pub session_id: String,
    pub prompt_id: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
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
    /// Earlier exchanges `exchangeId` replaces, as in `ctx/append`.
    #[serde(default)]
    pub supersedes: Vec<String>,
}

/// `ctx/path`: the chain from the root session to one exchange.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PathParams {
    pub session_id: String,
    /// The node (`x<N>`); default: the session's newest exchange.
    pub exchange_id: Option<String>,
}

/// A `supersedes` list, each entry `x<K>` or `x<K>-x<M>`; an error names
/// the entry (`supersedes[1]: expected x<K> or x<K>-x<M>, got "x9-x3"`).
pub fn parse_supersedes(raw: &[String]) -> Result<Vec<ExchangeRange>, ServiceError> {
    raw.iter()
        .enumerate()
        .map(|(i, r)| {
            ExchangeRange::parse(r)
                .map_err(|e| ServiceError::InvalidParams(format!("supersedes[{i}]: {e}")))
        })
        .collect()
}

/// `ctx/stats`: store-wide figures, or one session's.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatsParams {
    pub session_id: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListSessionsParams {
    pub workspace: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListExchangesParams {
    pub session_id: String,
    pub from: Option<u32>,
    pub limit: Option<u32>,
}

/// A reply or event as JSON, as the wire carries it (an object's keys
/// sorted): for the transports, and for readers that take JSON.
pub fn to_wire<T: Serialize>(reply: &T) -> Value {
    serde_json::to_value(reply).expect("a reply serialises to JSON")
}

// Results and events. Every reply is one of these types, serialised by
// serde: a renamed field is a compile error here and a failing drift check
// against vscode-client/src/protocol.ts (tests/protocol_ts.rs), never a
// silent 0 in a reader.

/// The result of methods that answer only "done" (`ctx/housekeeping`,
/// `workspace/didChangeConfiguration`): `{}`.
#[derive(Debug, Serialize, Deserialize, Clone, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Done {}

#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OpenSessionResult {
    pub session_id: String,
}

#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AppendResult {
    pub exchanges: Vec<ExchangeRef>,
    pub blobs: Vec<BlobRef>,
}

/// An exchange an append wrote to: `x<N>` and N.
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ExchangeRef {
    pub id: String,
    pub seq: u32,
}

/// A tool result an append stored as a blob.
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BlobRef {
    pub id: String,
    pub message_id: String,
    pub bytes: u64,
    pub tokens: u32,
    pub digest_tokens: u32,
    /// The message that first stored the same bytes; absent when none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate_of: Option<String>,
}

/// `ctx/assemble`'s result, and what `ctx/explain` shows: both made from
/// the prompt's record by `assemble::to_wire`. A record made before
/// records had a version is this type's JSON, read with its defaults.
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AssembleResult {
    pub prompt_id: String,
    pub session_id: String,
    pub budget: u32,
    pub encoding: Encoding,
    pub format: Format,
    pub order: LayerOrder,
    pub tokens: PromptTokens,
    pub prefix_reused: u32,
    /// Tokens of the client's own tool definitions (the proxy's requests),
    /// sent as they came: counted apart from the layers the budget governs,
    /// and part of `tokens.total`, which is everything sent. 0 without them
    /// and in records made before it was kept.
    #[serde(default)]
    pub client_tools_tokens: u32,
    pub trimmed: Vec<Trim>,
    /// The superseded exchanges this prompt covers (shown as headers at
    /// most), consecutive ids grouped; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub superseded: Vec<SupersededRange>,
    /// The recall block's hits: lines of earlier exchanges that match the
    /// question's words, best first; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recall: Vec<RecallShown>,
    pub layers: Vec<LayerReport>,
    /// Absent from records made before the shape was kept: layered.
    #[serde(default)]
    pub shape: ShapeKind,
    /// Why the prompt has the shape it has, when it is not `layered`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Where the prompt stands and what it knows, bounded; absent from
    /// records made before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<StateEnvelope>,
    /// The prompt itself, in the requested API's shape.
    #[serde(flatten)]
    pub prompt: FormattedPrompt,
}

/// The shape a prompt is formatted in: a model API's, or plain text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    OpenAi,
    Anthropic,
    /// OpenAI Responses: `input` items and flat function tools.
    Responses,
    Gemini,
    Text,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::OpenAi => "openai",
            Format::Anthropic => "anthropic",
            Format::Responses => "responses",
            Format::Gemini => "gemini",
            Format::Text => "text",
        }
    }
}

ctxproxy_core::wire_name!(Format: OpenAi, Anthropic, Responses, Gemini, Text);

/// The state envelope (recursive calls): the call a prompt serves and the current
/// context (L0) as fields, within `layers.currentContextMax` tokens.
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StateEnvelope {
    pub call: CallState,
    pub context: ContextFields,
    /// List items left out of `context` to fit the cap (0: none).
    pub dropped: u32,
}

#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CallState {
    pub session_id: String,
    pub depth: u32,
    pub max_depth: u32,
    /// The prompt's number in its session (`p<N>`).
    pub iteration: u32,
    /// The session that called this one, for a child call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    /// The tools the prompt offers.
    pub tools: Vec<String>,
    pub budget: CallBudget,
}

#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CallBudget {
    pub total: u32,
    pub used: u32,
}

/// The current context (L0) as fields; lists newest first.
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ContextFields {
    pub turn: u32,
    pub phase: Phase,
    pub objective: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_note: Option<String>,
    pub story: Vec<String>,
    pub done: Vec<String>,
    pub files: Vec<String>,
    pub symbols: Vec<String>,
    pub concepts: Vec<String>,
    pub explained: Vec<String>,
    pub next: Vec<String>,
}

/// The prompt as the chosen format lays it out: `messages` and `tools`
/// always, `system` for anthropic, `text` for text.
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FormattedPrompt {
    pub messages: Vec<Value>,
    pub tools: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PromptTokens {
    pub total: u32,
    /// Tokens per layer present in the prompt, by layer name.
    pub layers: std::collections::BTreeMap<String, u32>,
}

/// An item the packer moved to a cheaper level (or dropped) to fit.
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Trim {
    pub id: String,
    pub from: ItemForm,
    pub to: ItemForm,
    pub reason: String,
}

/// `ids` (`x3-x9` or `x12`) were superseded by `by` (`x10`).
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SupersededRange {
    pub ids: String,
    pub by: String,
}

/// A hit of the recall block: the exchange, the question words its lines
/// matched (rarest first), its tokens and the passage as shown.
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RecallShown {
    pub id: String,
    pub words: Vec<String>,
    pub tokens: u32,
    pub text: String,
}

/// One layer of a prompt, in prompt order, with the items it holds.
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LayerReport {
    pub layer: Layer,
    pub tokens: u32,
    pub items: Vec<LayerItem>,
}

#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LayerItem {
    pub id: String,
    pub format: ItemForm,
    pub tokens: u32,
}

/// `ctx/explain`: the recorded assemble result and when it was made.
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ExplainResult {
    #[serde(flatten)]
    pub prompt: AssembleResult,
    pub created_at: String,
}

#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RetrieveResult {
    pub items: Vec<RetrievedItem>,
}

/// One requested id: what it holds, or why it could not be retrieved (the
/// other ids are still answered).
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(untagged)]
pub enum RetrievedItem {
    Found(Box<Retrieved>),
    Failed(RetrieveFailure),
}

#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Retrieved {
    pub id: String,
    pub kind: ItemKind,
    /// The level asked for of an exchange; `full` for a message or a blob.
    pub format: RetrieveFormat,
    pub tokens: u32,
    pub truncated: bool,
    pub text: String,
    /// `base64` when `text` holds bytes that are not UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<TextEncoding>,
    #[serde(flatten)]
    pub details: ItemDetails,
}

/// How much of an exchange `ctx/retrieve` returns: its header, its
/// summary, or every message (tool results as their original output).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetrieveFormat {
    Header,
    Summary,
    Full,
}

impl RetrieveFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            RetrieveFormat::Header => "header",
            RetrieveFormat::Summary => "summary",
            RetrieveFormat::Full => "full",
        }
    }
}

ctxproxy_core::wire_name!(RetrieveFormat: Header, Summary, Full);

/// What a retrieved id names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ItemKind {
    Exchange,
    Message,
    Blob,
}

impl ItemKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::Exchange => "exchange",
            ItemKind::Message => "message",
            ItemKind::Blob => "blob",
        }
    }
}

ctxproxy_core::wire_name!(ItemKind: Exchange, Message, Blob);

/// How a retrieved item's `text` holds bytes that are not UTF-8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextEncoding {
    Base64,
}

impl TextEncoding {
    pub fn as_str(self) -> &'static str {
        match self {
            TextEncoding::Base64 => "base64",
        }
    }
}

ctxproxy_core::wire_name!(TextEncoding: Base64);

/// What is known about a retrieved item besides its text, by kind.
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(untagged)]
pub enum ItemDetails {
    Blob(BlobDetails),
    Exchange(ExchangeDetails),
    Message(MessageDetails),
}

#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BlobDetails {
    pub blob_id: String,
    pub bytes: u64,
    pub raw_tokens: u32,
}

#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ExchangeDetails {
    pub at: Option<String>,
    pub outcome: Outcome,
    /// The exchange that superseded this one (its first); absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
}

/// A message's fields but its content (the item's `text`); a user message's
/// own kind (query or feedback) travels as `messageKind`, since the item's
/// `kind` says what the item is.
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MessageDetails {
    pub role: Role,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_kind: Option<UserKind>,
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
    /// The blob holding a tool result's output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob_id: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RetrieveFailure {
    pub id: String,
    pub error: ItemError,
}

#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ItemError {
    pub code: i64,
    pub message: String,
}

#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SearchResult {
    pub hits: Vec<SearchHit>,
}

#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    pub id: String,
    pub session_id: String,
    pub header: String,
    pub snippet: String,
    pub score: f64,
}

/// The answer to a context-tool call, as the text the model reads.
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CallContextToolResult {
    pub text: String,
}

#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ListSessionsResult {
    pub sessions: Vec<SessionInfo>,
}

#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub session_id: String,
    pub title: String,
    pub workspace: String,
    pub exchanges: u32,
    pub prompts: u32,
    pub created_at: String,
    pub updated_at: String,
    /// The session this one was forked from or called by; absent for a
    /// session of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<ParentInfo>,
    /// 0 for a root; a child is one deeper than its parent, a fork as deep.
    pub depth: u32,
}

#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ParentInfo {
    pub session_id: String,
    /// A fork's last shared exchange; a child's call point.
    pub at_exchange: u32,
    pub kind: ParentKind,
}

#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ListExchangesResult {
    pub exchanges: Vec<ExchangeInfo>,
}

#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ExchangeInfo {
    pub id: String,
    pub header: String,
    pub at: Option<String>,
    /// Tokens as appended, tool outputs raw.
    pub tokens: u32,
    /// Tokens in full, tool results as digests.
    pub full_tokens: u32,
    pub outcome: Outcome,
    /// The exchange that superseded this one (its first); absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
}

/// `ctx/path`: the sessions from the root to the node, root first.
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PathResult {
    pub sessions: Vec<PathSession>,
}

/// A session on a path and the exchanges of the path it made.
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PathSession {
    pub session_id: String,
    pub title: String,
    pub depth: u32,
    /// How it was reached from the session before it; absent for the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<PathParent>,
    pub exchanges: Vec<PathExchange>,
}

#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PathParent {
    pub session_id: String,
    pub at_exchange: u32,
    /// `fork` (shares the parent's exchanges up to `atExchange`) or `child`
    /// (a fresh session the parent called after `atExchange`).
    pub kind: ParentKind,
}

#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PathExchange {
    pub id: String,
    pub header: String,
    /// Its superseder when that is on the path too; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
}

/// `ctx/stats`: store-wide figures, or one session's.
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StatsResult {
    pub sessions: u64,
    pub exchanges: u64,
    pub messages: u64,
    pub prompts: u64,
    pub blobs: u64,
    pub blob_files: u64,
    pub raw_bytes: u64,
    pub stored_bytes: u64,
    pub appended_bytes: u64,
    pub duplicate_hits: u64,
    pub database_bytes: u64,
}

/// A `ctx/event` notification's params: a state change pushed to the
/// client, `kind` naming which.
#[derive(Debug, Serialize, Deserialize, Clone, PartialEq)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum CtxEvent {
    ExchangeStored {
        session_id: String,
        exchange_id: String,
        messages: u32,
    },
    BlobStored {
        session_id: String,
        blob_id: String,
        bytes: u64,
        duplicate: bool,
    },
    SummaryUpdated {
        session_id: String,
        exchange_id: String,
        source: TextSource,
    },
    ContextAssembled {
        session_id: String,
        prompt_id: String,
        tokens: u32,
        budget: u32,
        prefix_reused: u32,
        layers: std::collections::BTreeMap<String, u32>,
    },
    LayerTrimmed {
        session_id: String,
        prompt_id: String,
        trimmed: Vec<Trim>,
    },
    /// The prompt's state envelope differs from the session's previous
    /// prompt's (`state::differs`).
    StateChanged {
        session_id: String,
        prompt_id: String,
        state: Box<StateEnvelope>,
    },
}

#[cfg(test)]
mod tests {
    use super::{Format, RetrieveParams};

    #[test]
    fn every_format_reads_back_from_its_word() {
        for f in Format::VARIANTS {
            let word = serde_json::to_string(f).unwrap();
            assert_eq!(serde_json::from_str::<Format>(&word).unwrap(), *f, "{word}");
            assert_eq!(Format::parse(f.as_str()), Some(*f));
        }
    }
    /// A word a client sends that the field does not know is refused,
    /// naming the field and the words it takes.
    #[test]
    fn an_unknown_word_names_the_field_and_the_words() {
        let e = crate::from_json::parse::<RetrieveParams>(
            serde_json::json!({"sessionId": "s", "ids": ["x1"], "format": "digest"}),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains(r#"format: expected header, summary or full, got "digest""#),
            "{e}"
        );
    }
}

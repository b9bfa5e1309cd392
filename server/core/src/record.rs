//! What is recorded for an exchange, computed in one place: how a message
//! is kept (a tool result becomes its blob and digest), and every text and
//! count the store persists for a closed or growing exchange (trio, terms,
//! header line, per-encoding counts). The store writes what these return;
//! `MemorySession` (ctxproxy-testkit) keeps it in memory. Neither computes
//! any of it on its own, so tests and benches measure the store's pipeline.

use crate::config::{DigestLimits, LayerCaps};
use crate::digest::{self, BlobFacts, PriorRead, ToolOutput};
use crate::exchange::{Counted, KeptMessage, LevelTokens, ToolResult};
use crate::ids::{BlobHash, ExchangeId, MessageId};
use crate::message::{Message, ToolCall};
use crate::render;
use crate::summary::{self, ExchangeFacts, SeenTerms, Trio};
use crate::tokens::{self, Encoding};

/// One value for each encoding the store counts in (`Encoding::ALL`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PerEncoding<T> {
    pub o200k: T,
    pub cl100k: T,
}

impl<T> PerEncoding<T> {
    pub fn of(f: impl Fn(Encoding) -> T) -> PerEncoding<T> {
        PerEncoding {
            o200k: f(Encoding::O200kBase),
            cl100k: f(Encoding::Cl100kBase),
        }
    }

    pub fn get(&self, encoding: Encoding) -> &T {
        match encoding {
            Encoding::O200kBase => &self.o200k,
            Encoding::Cl100kBase => &self.cl100k,
        }
    }
}

/// A text and its tokens in every encoding.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CountedText {
    pub text: String,
    pub tokens: PerEncoding<u32>,
}

impl CountedText {
    pub fn new(text: String) -> CountedText {
        CountedText {
            tokens: PerEncoding::of(|e| tokens::count(e, &text)),
            text,
        }
    }

    /// The text with its count in `encoding`.
    pub fn counted(&self, encoding: Encoding) -> Counted {
        Counted {
            text: self.text.clone(),
            tokens: *self.tokens.get(encoding),
        }
    }
}

/// The tool call a tool result answers, among its exchange's earlier messages.
pub fn answered_call<'a>(result: &Message, earlier: &'a [KeptMessage]) -> Option<&'a ToolCall> {
    let id = result.tool_call_id.as_deref()?;
    earlier
        .iter()
        .flat_map(|k| k.message.tool_calls.iter())
        .find(|c| c.id == id)
}

/// What the digesters see of a tool result: its tool (named by the message
/// or by the call it answers), the call's arguments, its text.
pub fn tool_output<'a>(result: &'a Message, call: Option<&'a ToolCall>) -> ToolOutput<'a> {
    ToolOutput {
        tool: result.name.as_deref().or(call.map(|c| c.name.as_str())),
        arguments: call.map(|c| c.arguments.as_str()),
        content: &result.content,
    }
}

/// The bytes a tool result was stored as, and their tokens (counted once,
/// when the blob was first stored).
pub struct StoredBlob<'a> {
    pub hash: BlobHash,
    pub bytes: &'a [u8],
    pub tokens: u32,
}

/// The bytes of a tool result as sent: `raw` when they are not UTF-8.
pub fn result_bytes(m: &Message) -> &[u8] {
    m.raw.as_deref().unwrap_or(m.content.as_bytes())
}

/// A tool result as kept: its blob's facts and its digest in place of the
/// output. `prior` is the session's last read of the same path.
pub fn keep_tool_result(
    id: MessageId,
    m: Message,
    call: Option<&ToolCall>,
    blob: StoredBlob,
    prior: Option<&PriorRead>,
    limits: &DigestLimits,
    encoding: Encoding,
) -> KeptMessage {
    let output = tool_output(&m, call);
    let facts = BlobFacts {
        id: blob.hash.short_id(),
        bytes: blob.bytes.len() as u64,
        tokens: blob.tokens,
    };
    let d = match &m.raw {
        Some(raw) => digest::digest_binary(&output, raw, &facts, limits, encoding),
        None => digest::digest(&output, &facts, prior, limits, encoding),
    };
    let result = ToolResult {
        blob: blob.hash,
        kind: d.kind,
        path: digest::read_path(&output),
        bytes: facts.bytes,
        tokens: facts.tokens,
        headline: d.headline,
        digest: d.text.clone(),
        whole: d.whole,
    };
    KeptMessage {
        id,
        message: Message {
            content: d.text,
            raw: None,
            ..m
        },
        result: Some(result),
    }
}

/// The L4 line of a kept tool result, counted; none for a whole output
/// (nothing more to retrieve) or a message that is not a tool result.
pub fn reference(kept: &KeptMessage) -> Option<CountedText> {
    let result = kept.result.as_ref().filter(|r| !r.whole)?;
    Some(CountedText::new(render::reference_line(
        result,
        kept.id.exchange,
    )))
}

/// Texts a model wrote for an exchange (`ctx/housekeeping`): they outlive
/// later extractive updates of the same exchange.
#[derive(Clone, Debug, Default)]
pub struct ModelTexts {
    pub header: Option<String>,
    pub summary: Option<String>,
}

/// Everything the store persists about an exchange besides its messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExchangeRecord {
    /// Header and summary counted in the ingest encoding, outcome, entities.
    pub trio: Trio,
    /// The words its header may carry, for the next headers' distinctiveness.
    pub terms: Vec<String>,
    pub header: PerEncoding<u32>,
    pub summary: PerEncoding<u32>,
    /// The L2 line, id included.
    pub line: CountedText,
    pub levels: PerEncoding<LevelTokens>,
}

/// Records exchange `id` from its kept messages; `seen` holds the terms of
/// the exchanges before it.
pub fn record_exchange(
    id: ExchangeId,
    kept: &[KeptMessage],
    seen: &SeenTerms,
    model: &ModelTexts,
    caps: &LayerCaps,
    encoding: Encoding,
) -> ExchangeRecord {
    let facts = ExchangeFacts::of(kept);
    let mut trio = summary::summarise(&facts, seen, caps, encoding);
    let counted = |text: &String| Counted {
        tokens: tokens::count(encoding, text),
        text: text.clone(),
    };
    if let Some(h) = &model.header {
        trio.header = counted(h);
    }
    if let Some(s) = &model.summary {
        trio.summary = counted(s);
    }
    ExchangeRecord {
        terms: facts.terms(),
        header: PerEncoding::of(|e| tokens::count(e, &trio.header.text)),
        summary: PerEncoding::of(|e| tokens::count(e, &trio.summary.text)),
        line: CountedText::new(render::header_line(id, &trio.header.text)),
        levels: PerEncoding::of(|e| render::exchange_tokens(kept, e)),
        trio,
    }
}

//! What is recorded for an exchange, computed in one place: how a message
//! is kept (a tool result becomes its blob and digest), and every text and
//! count the store persists for a closed or growing exchange (trio, terms,
//! header line, per-encoding counts). The store writes what these return;
//! `MemorySession` (the `ctxproxy-testkit` dev crate) keeps it in memory. Neither computes
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

/// Whether ingest in `ingest` counts in `encoding` too: o200k (what the
/// listings show) and the ingest encoding. Another encoding's counts are
/// left out (`None`) until a prompt asks for that encoding; the store fills
/// them then. Loading an encoding's tables costs tens of MB and counting in
/// it as long again as the ingest encoding's count.
pub fn counted_at_ingest(encoding: Encoding, ingest: Encoding) -> bool {
    encoding == ingest || encoding == Encoding::O200kBase
}

impl<T> PerEncoding<Option<T>> {
    /// `f` for the encodings ingest counts in (`counted_at_ingest`).
    pub fn at_ingest(ingest: Encoding, f: impl Fn(Encoding) -> T) -> PerEncoding<Option<T>> {
        PerEncoding::of(|e| counted_at_ingest(e, ingest).then(|| f(e)))
    }
}

/// A text and its tokens in each encoding counted so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CountedText {
    pub text: String,
    pub tokens: PerEncoding<Option<u32>>,
}

impl CountedText {
    /// The text counted in every encoding.
    pub fn new(text: String) -> CountedText {
        CountedText {
            tokens: PerEncoding::of(|e| Some(tokens::count(e, &text))),
            text,
        }
    }

    /// The text counted in the encodings ingest in `ingest` counts in.
    pub fn at_ingest(text: String, ingest: Encoding) -> CountedText {
        CountedText {
            tokens: PerEncoding::at_ingest(ingest, |e| tokens::count(e, &text)),
            text,
        }
    }

    /// The text with its count in `encoding`, counted now if it was not.
    pub fn counted(&self, encoding: Encoding) -> Counted {
        Counted {
            text: self.text.clone(),
            tokens: self
                .tokens
                .get(encoding)
                .unwrap_or_else(|| tokens::count(encoding, &self.text)),
        }
    }
}

/// The tool call a tool result answers, among its exchange's earlier messages.
pub fn answered_call<'a>(
    result: &Message,
    earlier: impl IntoIterator<Item = &'a Message>,
) -> Option<&'a ToolCall> {
    let id = result.tool_call_id.as_deref()?;
    earlier
        .into_iter()
        .flat_map(|m| m.tool_calls.iter())
        .find(|c| c.id == id)
}

/// What the keeper of a session knows of a tool result's bytes once it has
/// stored them.
pub struct Stored {
    /// Their tokens, counted when the same bytes were first stored.
    pub tokens: u32,
    /// The session's last earlier read of the same path.
    pub prior: Option<PriorRead>,
}

/// The tokens a blob's bytes count for (`Stored::tokens`): in `encoding`,
/// bytes that are not UTF-8 replaced as text.
pub fn blob_tokens(encoding: Encoding, bytes: &[u8]) -> u32 {
    tokens::count(encoding, &String::from_utf8_lossy(bytes))
}

/// A tool result on its way to being kept: the call it answers, its
/// bytes' hash and the path the call read, all it takes to look up what
/// its keeper knows (`Stored`); `keep` digests it. Nothing here depends on
/// what is stored, so a keeper may prepare many at once and keep them in
/// their order.
pub struct PendingResult {
    id: MessageId,
    message: Message,
    tool: Option<String>,
    arguments: Option<String>,
    pub hash: BlobHash,
    pub path: Option<String>,
}

impl PendingResult {
    /// Tool result `m`, stored as message `id`, answering `call`.
    pub fn new(id: MessageId, m: Message, call: Option<&ToolCall>) -> PendingResult {
        let tool = m.name.clone().or(call.map(|c| c.name.clone()));
        let arguments = call.map(|c| c.arguments.clone());
        let hash = BlobHash::of(m.raw.as_deref().unwrap_or(m.content.as_bytes()));
        let mut pending = PendingResult {
            id,
            message: m,
            tool,
            arguments,
            hash,
            path: None,
        };
        pending.path = digest::read_path(&pending.output());
        pending
    }

    pub fn id(&self) -> MessageId {
        self.id
    }

    /// The bytes as sent: stored under `hash` (`raw` when they are not UTF-8).
    pub fn bytes(&self) -> &[u8] {
        let m = &self.message;
        m.raw.as_deref().unwrap_or(m.content.as_bytes())
    }

    fn output(&self) -> ToolOutput<'_> {
        ToolOutput {
            tool: self.tool.as_deref(),
            arguments: self.arguments.as_deref(),
            content: &self.message.content,
        }
    }

    /// The tool result as kept: its blob's facts and its digest in place of
    /// the output.
    pub fn keep(self, stored: &Stored, limits: &DigestLimits, encoding: Encoding) -> KeptMessage {
        let bytes = self.bytes();
        let facts = BlobFacts {
            id: self.hash.short_id(),
            bytes: bytes.len() as u64,
            tokens: stored.tokens,
        };
        let output = self.output();
        let d = match &self.message.raw {
            Some(raw) => digest::digest_binary(&output, raw, &facts, limits, encoding),
            None => digest::digest(&output, &facts, stored.prior.as_ref(), limits, encoding),
        };
        let result = ToolResult {
            blob: self.hash,
            kind: d.kind,
            path: self.path,
            bytes: facts.bytes,
            tokens: facts.tokens,
            headline: d.headline,
            digest: d.text.clone(),
            whole: d.whole,
        };
        KeptMessage {
            id: self.id,
            message: Message {
                content: d.text,
                raw: None,
                ..self.message
            },
            result: Some(result),
        }
    }
}

/// The L4 line of a kept tool result, counted as ingest in `ingest`
/// counts; none for a whole output (nothing more to retrieve) or a message
/// that is not a tool result.
pub fn reference(kept: &KeptMessage, ingest: Encoding) -> Option<CountedText> {
    let result = kept.result.as_ref().filter(|r| !r.whole)?;
    Some(CountedText::at_ingest(
        render::reference_line(result, kept.id.exchange),
        ingest,
    ))
}

/// Texts a model wrote for an exchange (`ctx/housekeeping`): they outlive
/// later extractive updates of the same exchange.
#[derive(Clone, Debug, Default)]
pub struct ModelTexts {
    pub header: Option<String>,
    pub summary: Option<String>,
}

/// Everything the store persists about an exchange besides its messages
/// and its terms (`ExchangeFacts::terms`), which the caller has before the
/// record: they are the next exchanges' seen terms. Counts are in the
/// encodings ingest counts in (`counted_at_ingest`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExchangeRecord {
    /// Header and summary counted in the ingest encoding, outcome, entities.
    pub trio: Trio,
    pub header: PerEncoding<Option<u32>>,
    pub summary: PerEncoding<Option<u32>>,
    /// The L2 line, id included.
    pub line: CountedText,
    pub levels: PerEncoding<Option<LevelTokens>>,
}

/// Records exchange `id` from its kept messages and what they say
/// (`ExchangeFacts::of(kept)`, which `context::advance` takes too), counted
/// in `encoding` and the other encodings ingest counts in; `seen` holds the
/// terms of the exchanges before it.
pub fn record_exchange(
    id: ExchangeId,
    kept: &[KeptMessage],
    facts: &ExchangeFacts,
    seen: &SeenTerms,
    model: &ModelTexts,
    caps: &LayerCaps,
    encoding: Encoding,
) -> ExchangeRecord {
    let mut trio = summary::summarise(facts, seen, caps, encoding);
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
    // The trio is already counted in the ingest encoding; count only another.
    let per_encoding = |c: &Counted| {
        PerEncoding::at_ingest(encoding, |e| match e == encoding {
            true => c.tokens,
            false => tokens::count(e, &c.text),
        })
    };
    ExchangeRecord {
        header: per_encoding(&trio.header),
        summary: per_encoding(&trio.summary),
        line: CountedText::at_ingest(render::header_line(id, &trio.header.text), encoding),
        levels: PerEncoding::at_ingest(encoding, |e| render::exchange_tokens(kept, e)),
        trio,
    }
}

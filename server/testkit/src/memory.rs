//! `MemorySession`: a session kept in memory through the store's own
//! pipeline (`secrets` masking, `record` for every message and exchange,
//! `view::newest_references`), so tests and benches pack the prompts the
//! store would give without SQLite.

use std::collections::HashMap;

use ctxproxy_core::config::{DigestLimits, LayerCaps};
use ctxproxy_core::context::{self, CurrentContext};
use ctxproxy_core::digest::PriorRead;
use ctxproxy_core::exchange::KeptMessage;
use ctxproxy_core::exchange_record::{self, ModelTexts, Stored};
use ctxproxy_core::ids::{BlobHash, ExchangeId, MessageId};
use ctxproxy_core::message::{Message, Role};
use ctxproxy_core::packer;
use ctxproxy_core::secrets;
use ctxproxy_core::summary::{ExchangeFacts, SeenTerms};
use ctxproxy_core::supersede::{ExchangeRange, SupersededBy};
use ctxproxy_core::tokens::{self, Encoding};
use ctxproxy_core::view::{self, BlobRef, ExchangeView, HeaderItem, SessionView};

/// A file read earlier in the session: where, and its bytes.
struct FileRead {
    exchange: ExchangeId,
    hash: BlobHash,
    text: String,
}

/// A session kept in memory the way the store keeps it.
pub struct MemorySession {
    caps: LayerCaps,
    encoding: Encoding,
    digest: DigestLimits,
    redact_secrets: bool,
    exchanges: Vec<ExchangeView>,
    headers: Vec<HeaderItem>,
    /// Every reference line, oldest first.
    references: Vec<BlobRef>,
    context: CurrentContext,
    /// Each exchange's terms, for the headers of the ones after it.
    terms: Vec<Vec<String>>,
    /// The newest read of each path, for the next read's digest.
    file_reads: HashMap<String, FileRead>,
    /// Each superseded exchange's first superseder, as the store keeps it.
    superseded: SupersededBy,
}

impl MemorySession {
    /// A session with the store's default digest limits and masking.
    pub fn new(caps: LayerCaps, encoding: Encoding) -> MemorySession {
        let defaults = ctxproxy_core::config::Config::default();
        MemorySession {
            caps,
            encoding,
            digest: defaults.digest,
            redact_secrets: defaults.redact_secrets,
            exchanges: Vec::new(),
            headers: Vec::new(),
            references: Vec::new(),
            context: CurrentContext::default(),
            terms: Vec::new(),
            file_reads: HashMap::new(),
            superseded: SupersededBy::new(),
        }
    }

    pub fn len(&self) -> u32 {
        self.exchanges.len() as u32
    }

    pub fn is_empty(&self) -> bool {
        self.exchanges.is_empty()
    }

    /// The messages of the next exchange as the store keeps them: masked,
    /// tool results digested (against the session's earlier reads of the
    /// same path) and replaced by their blob. Registers their file reads.
    pub fn keep(&mut self, messages: Vec<Message>) -> Vec<KeptMessage> {
        let exchange = ExchangeId(self.len() + 1);
        let mut kept: Vec<KeptMessage> = Vec::with_capacity(messages.len());
        for m in messages {
            let m = match self.redact_secrets {
                true => secrets::mask_message(m),
                false => m,
            };
            let id = MessageId {
                exchange,
                index: kept.len() as u32 + 1,
            };
            let k = match m.role {
                Role::Tool => self.keep_tool_result(id, m, &kept),
                _ => KeptMessage {
                    id,
                    message: m,
                    result: None,
                },
            };
            kept.push(k);
        }
        kept
    }

    fn keep_tool_result(
        &mut self,
        id: MessageId,
        m: Message,
        earlier: &[KeptMessage],
    ) -> KeptMessage {
        // As the store's append does, one output at a time: the call it
        // answers, the prior read of the path it read, then the digest.
        let call = exchange_record::answered_call(&m, earlier.iter().map(|k| &k.message));
        let pending = exchange_record::PendingResult::new(id, m, call);
        let text = String::from_utf8_lossy(pending.bytes()).into_owned();
        let prior = pending
            .path
            .as_deref()
            .and_then(|p| self.file_reads.get(p))
            .map(|r| PriorRead {
                exchange: r.exchange,
                changed_from: (r.hash != pending.hash).then(|| r.text.clone()),
            });
        let stored = Stored {
            tokens: tokens::count(self.encoding, &text),
            prior,
        };
        let kept = pending.keep(&stored, &self.digest, self.encoding);
        if let Some(r) = &kept.result {
            if let Some(p) = &r.path {
                let read = FileRead {
                    exchange: id.exchange,
                    hash: r.blob,
                    text,
                };
                self.file_reads.insert(p.clone(), read);
            }
        }
        kept
    }

    /// Stores a closed exchange (messages from `keep`): its record,
    /// header line and references, and the context after it. Returns its id.
    pub fn push(&mut self, at: Option<String>, messages: Vec<KeptMessage>) -> ExchangeId {
        let id = ExchangeId(self.len() + 1);
        let enc = self.encoding;
        let seen = SeenTerms::of(self.terms.iter().map(Vec::as_slice));
        let facts = ExchangeFacts::of(&messages);
        let recorded = exchange_record::record_exchange(
            id,
            &messages,
            &facts,
            &seen,
            &ModelTexts::default(),
            &self.caps,
            enc,
        );
        self.terms.push(facts.terms());
        self.context = context::advance(&self.context, id, &facts, &recorded.trio);
        self.headers.push(HeaderItem {
            id,
            at: at.clone(),
            line: recorded.line.counted(enc),
        });
        for m in &messages {
            if let Some(line) = exchange_record::reference(m, enc) {
                let blob = m
                    .result
                    .as_ref()
                    .map(|r| r.blob)
                    .expect("a reference has a blob");
                self.references.push(BlobRef {
                    blob,
                    exchange: id,
                    line: line.counted(enc),
                });
            }
        }
        self.exchanges.push(ExchangeView {
            id,
            at,
            header: recorded.trio.header,
            summary: recorded.trio.summary,
            messages,
            tokens: recorded
                .levels
                .get(enc)
                .expect("ingest counts in its own encoding"),
        });
        id
    }

    /// Marks the exchanges of `ranges` superseded by `by`, as `ctx/append`'s
    /// `supersedes` does; an exchange already superseded keeps its first
    /// superseder. The caller checks that each range is earlier than `by`.
    pub fn supersede(&mut self, by: ExchangeId, ranges: &[ExchangeRange]) {
        for id in ranges.iter().flat_map(|r| r.ids()) {
            self.superseded.entry(id).or_insert(by);
        }
    }

    /// What the store hands the packer.
    pub fn view(&self) -> SessionView {
        let newest = |n: u32, len: usize| len.saturating_sub(n as usize);
        let window = newest(packer::window_len(&self.caps), self.exchanges.len());
        let horizon = packer::references_horizon(self.len(), &self.exchanges[window..], &self.caps);
        let candidates = self
            .references
            .iter()
            .rev()
            .filter(|r| r.exchange <= horizon)
            .cloned();
        SessionView {
            session_id: "memory".to_string(),
            exchange_count: self.len(),
            headers: self.headers[newest(self.caps.max_headers, self.headers.len())..].to_vec(),
            window: self.exchanges[window..].to_vec(),
            references: view::newest_references(candidates, self.caps.max_references),
            current_context: self.context.clone(),
            superseded: self.superseded.clone(),
            depth: 0,
            call: None,
            // Recall searches the store's full-text index, which a session
            // in memory does not have: its prompts are packed without it.
            recall: Default::default(),
            // A session in memory has no project.
            memory: Default::default(),
        }
    }
}

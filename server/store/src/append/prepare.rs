//! An append's tool results prepared before its ordered part. What a tool
//! result's blob and digest need from the store (the blob's count when the
//! same bytes were stored before, the prior read of the same path) is
//! looked up first, in order, against the store and the append's earlier
//! outputs; then the work that needs nothing more runs on rayon's pool, one
//! thread per core, an exchange at a time, oldest first: each message kept
//! and counted (a tool result digested, its blob compressed), and what the
//! exchange says (`ExchangeFacts`). The writer stores each exchange as soon
//! as it and those before it are prepared, as if kept one by one, while the
//! pool prepares the next: SQLite's work overlaps the digesting instead of
//! following it.

use std::collections::{BTreeMap, HashMap};
use std::sync::mpsc;

use ctxproxy_core::config::DigestLimits;
use ctxproxy_core::digest::PriorRead;
use ctxproxy_core::exchange::KeptMessage;
use ctxproxy_core::ids::{BlobHash, ExchangeId, MessageId};
use ctxproxy_core::message::{Message, Role, ToolCall};
use ctxproxy_core::record::{self, CountedText, PendingResult, Stored};
use ctxproxy_core::summary::ExchangeFacts;
use ctxproxy_core::tokens::{self, Encoding};
use rusqlite::OptionalExtension;

use super::indexed_output;
use crate::blobs;
use crate::cached::query_row_cached;
use crate::read;
use crate::writer::Writer;
use crate::Result;

/// One exchange's share of an append, prepared.
pub(super) struct Batch {
    pub seq: u32,
    /// When its messages say they were sent (the first that does).
    pub at: Option<String>,
    /// Its messages, kept: those stored before this append, then `new`'s.
    pub kept: Vec<KeptMessage>,
    /// What storing each of this append's messages takes, in order.
    pub new: Vec<NewMessage>,
    pub facts: ExchangeFacts,
}

pub(super) struct NewMessage {
    /// Its tokens as sent in the ingest encoding (a tool result: its blob's).
    pub tokens: u32,
    /// A tool result's blob and output.
    pub blob: Option<PreparedBlob>,
}

pub(super) struct PreparedBlob {
    /// The bytes as `blobs::encode` stores them.
    pub encoded: Vec<u8>,
    /// The output as the full-text row takes it.
    pub output: String,
    /// The digest's tokens in the ingest encoding.
    pub digest_tokens: u32,
    /// Its L4 line (`record::reference`).
    pub reference: Option<CountedText>,
}

/// A message of a batch; a tool result by its place among the planned
/// (`T = usize`) until the lookups are done, then `Planned`.
enum Slot<T> {
    Message(Message),
    ToolResult(T),
}

/// A tool result whose lookups are done.
struct Planned {
    pending: PendingResult,
    /// The blob's count when its bytes were stored before this append.
    stored_tokens: Option<u32>,
    prior: Option<PriorRead>,
}

/// A batch whose lookups are done: what `prepare_batch` needs.
struct Shape {
    seq: u32,
    at: Option<String>,
    stored: Vec<KeptMessage>,
    slots: Vec<Slot<Planned>>,
}

impl Writer {
    /// Prepares `batches` (exchange number, new messages) and hands each to
    /// `store`, in order; `stored_before` is the session's exchange count
    /// before this append. The first error `store` returns ends the append.
    pub(super) fn prepare_each(
        &mut self,
        session: &str,
        batches: Vec<(u32, Vec<Message>)>,
        stored_before: u32,
        mut store: impl FnMut(&mut Writer, Batch) -> Result<()>,
    ) -> Result<()> {
        // The reads of this append so far, by path: the exchange, the hash
        // and where the output is, for a later read of the same path.
        let mut reads: HashMap<String, (ExchangeId, BlobHash, usize)> = HashMap::new();
        let mut planned: Vec<Planned> = Vec::new();
        let mut shapes = Vec::with_capacity(batches.len());
        for (seq, messages) in batches {
            let stored = match seq <= stored_before {
                true => read::load_messages(&self.conn, session, seq)?,
                false => Vec::new(),
            };
            let at = messages.iter().find_map(|m| m.at.clone());
            let calls: Vec<Option<ToolCall>> = (0..messages.len())
                .map(|i| {
                    let earlier = stored.iter().map(|k| &k.message).chain(&messages[..i]);
                    record::answered_call(&messages[i], earlier).cloned()
                })
                .collect();
            let mut slots = Vec::with_capacity(messages.len());
            for (i, (m, call)) in messages.into_iter().zip(calls).enumerate() {
                if m.role != Role::Tool {
                    slots.push(Slot::Message(m));
                    continue;
                }
                let id = MessageId {
                    exchange: ExchangeId(seq),
                    index: (stored.len() + i + 1) as u32,
                };
                let pending = PendingResult::new(id, m, call.as_ref());
                let stored_tokens = self.blob_tokens(&pending.hash)?;
                let prior = match &pending.path {
                    None => None,
                    Some(path) => match reads.get(path) {
                        Some(&(exchange, hash, at)) => Some(PriorRead {
                            exchange,
                            changed_from: (hash != pending.hash).then(|| {
                                String::from_utf8_lossy(planned[at].pending.bytes()).into_owned()
                            }),
                        }),
                        None => self.prior_read(session, path, &pending.hash)?,
                    },
                };
                if let Some(path) = &pending.path {
                    reads.insert(path.clone(), (id.exchange, pending.hash, planned.len()));
                }
                slots.push(Slot::ToolResult(planned.len()));
                planned.push(Planned {
                    pending,
                    stored_tokens,
                    prior,
                });
            }
            shapes.push((seq, at, stored, slots));
        }
        // Each batch takes its planned results, in the order they were planned.
        let mut planned = planned.into_iter();
        let shapes: Vec<Shape> = shapes
            .into_iter()
            .map(|(seq, at, stored, slots)| Shape {
                seq,
                at,
                stored,
                slots: slots
                    .into_iter()
                    .map(|slot| match slot {
                        Slot::Message(m) => Slot::Message(m),
                        Slot::ToolResult(_) => {
                            Slot::ToolResult(planned.next().expect("planned in order"))
                        }
                    })
                    .collect(),
            })
            .collect();
        let limits = self.settings.digest.clone();
        let encoding = self.settings.encoding;
        if shapes.len() == 1 {
            // One exchange (an editor's usual append): prepared here, with
            // no hand-off to the pool and back.
            for shape in shapes {
                store(self, prepare_batch(shape, &limits, encoding))?;
            }
            return Ok(());
        }
        // The pool prepares the batches, oldest first, while this thread
        // stores each as soon as it and those before it are ready.
        rayon::in_place_scope_fifo(|scope| {
            let (tx, rx) = mpsc::channel();
            for (i, shape) in shapes.into_iter().enumerate() {
                let tx = tx.clone();
                let limits = &limits;
                scope.spawn_fifo(move |_| {
                    // A closed channel: storing failed, the append is over.
                    let _ = tx.send((i, prepare_batch(shape, limits, encoding)));
                });
            }
            drop(tx);
            // Batches that came ready before an earlier one, by place.
            let mut early = BTreeMap::new();
            let mut next = 0;
            for (i, batch) in rx {
                early.insert(i, batch);
                while let Some(batch) = early.remove(&next) {
                    store(self, batch)?;
                    next += 1;
                }
            }
            Ok(())
        })
    }

    /// The count of a blob stored before, if it was.
    fn blob_tokens(&self, hash: &BlobHash) -> Result<Option<u32>> {
        Ok(query_row_cached(
            &self.conn,
            "SELECT tokens FROM blobs WHERE hash = ?1",
            [&hash.0[..]],
            |r| r.get(0),
        )
        .optional()?)
    }
}

/// A batch prepared: each message kept and counted (a tool result
/// digested, its blob compressed), and what the exchange says.
fn prepare_batch(shape: Shape, limits: &DigestLimits, encoding: Encoding) -> Batch {
    let Shape {
        seq,
        at,
        stored,
        slots,
    } = shape;
    let mut kept = stored;
    let mut new = Vec::with_capacity(slots.len());
    for slot in slots {
        let id = MessageId {
            exchange: ExchangeId(seq),
            index: kept.len() as u32 + 1,
        };
        let (k, n) = match slot {
            Slot::Message(m) => prepare_message(id, m, encoding),
            Slot::ToolResult(p) => prepare_tool_result(p, limits, encoding),
        };
        kept.push(k);
        new.push(n);
    }
    Batch {
        seq,
        at,
        facts: ExchangeFacts::of(&kept),
        kept,
        new,
    }
}

/// A message that is not a tool result, kept as sent.
fn prepare_message(id: MessageId, m: Message, encoding: Encoding) -> (KeptMessage, NewMessage) {
    let new = NewMessage {
        tokens: tokens::count(encoding, &m.content),
        blob: None,
    };
    let kept = KeptMessage {
        id,
        message: m,
        result: None,
    };
    (kept, new)
}

/// A tool result kept (`PendingResult::keep`), its blob prepared.
fn prepare_tool_result(
    p: Planned,
    limits: &DigestLimits,
    encoding: Encoding,
) -> (KeptMessage, NewMessage) {
    let bytes = p.pending.bytes();
    let tokens = p
        .stored_tokens
        .unwrap_or_else(|| record::blob_tokens(encoding, bytes));
    let encoded = blobs::encode(bytes);
    let output = indexed_output(bytes);
    let stored = Stored {
        tokens,
        prior: p.prior,
    };
    let kept = p.pending.keep(&stored, limits, encoding);
    let blob = PreparedBlob {
        encoded,
        output,
        digest_tokens: tokens::count(encoding, &kept.message.content),
        reference: record::reference(&kept, encoding),
    };
    let new = NewMessage {
        tokens,
        blob: Some(blob),
    };
    (kept, new)
}

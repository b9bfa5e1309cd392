//! An append's exchanges in a pipeline. Each exchange's messages are
//! masked on rayon's pool; the writer looks up what its tool results need
//! from the store (the blob's count when the same bytes were stored
//! before, the prior read of the same path, from the store or from this
//! append's earlier outputs) and hands it back to the pool to be kept and
//! counted (a tool result digested, its blob compressed) with what the
//! exchange says (`ExchangeFacts`); once the terms of the exchanges before
//! it are known, the pool makes its record (header, summary, counts). The
//! writer stores each exchange as soon as it and those before it are
//! recorded, as if kept one by one, and plans the next ones in between:
//! SQLite's work overlaps the masking, digesting and summarising instead
//! of following them.

use std::collections::{BTreeMap, HashMap};
use std::sync::mpsc;

use ctxproxy_core::config::{DigestLimits, LayerCaps};
use ctxproxy_core::digest::PriorRead;
use ctxproxy_core::exchange::KeptMessage;
use ctxproxy_core::exchange_record::{
    self, CountedText, ExchangeRecord, ModelTexts, PendingResult, Stored,
};
use ctxproxy_core::ids::{BlobHash, ExchangeId, MessageId};
use ctxproxy_core::message::{Message, Role, ToolCall};
use ctxproxy_core::secrets;
use ctxproxy_core::summary::{ExchangeFacts, SeenTerms};
use ctxproxy_core::tokens::{self, Encoding};
use rusqlite::{params, OptionalExtension};

use super::{indexed_output, RecentTerms};
use crate::blobs;
use crate::cached::query_row_cached;
use crate::error::StoreError;
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
    /// `facts.terms()`, counted in the seen terms of the exchanges after it.
    pub terms: Vec<String>,
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
    /// Its L4 line (`exchange_record::reference`).
    pub reference: Option<CountedText>,
}

/// A message of a batch, a tool result with its lookups done.
enum Slot {
    Message(Message),
    ToolResult(Planned),
}

/// A tool result whose lookups are done.
struct Planned {
    pending: PendingResult,
    /// The blob's count when its bytes were stored before.
    stored_tokens: Option<u32>,
    prior: Option<Prior>,
}

/// The last earlier read of a tool result's path, as planned: in hand (the
/// same bytes, or an earlier output of this append), or the blob of a read
/// stored before, decoded on the pool.
enum Prior {
    InHand(PriorRead),
    Stored(ExchangeId, blobs::StoredBlob),
}

impl Prior {
    fn read(self) -> Result<PriorRead> {
        Ok(match self {
            Prior::InHand(read) => read,
            Prior::Stored(exchange, blob) => PriorRead {
                exchange,
                changed_from: Some(String::from_utf8_lossy(&blob.decode()?).into_owned()),
            },
        })
    }
}

/// A batch whose lookups are done: what `prepare_batch` needs.
struct Shape {
    seq: u32,
    at: Option<String>,
    stored: Vec<KeptMessage>,
    slots: Vec<Slot>,
}

/// The reads of an append so far, by path: the exchange, the hash and the
/// output, for a later read of the same path in the same append.
type Reads = HashMap<String, (ExchangeId, BlobHash, Vec<u8>)>;

/// How many batches of an append are prepared ahead of the one stored
/// next: enough to keep the pool busy, few enough that an append of
/// thousands of exchanges does not hold them all in memory at once.
const IN_FLIGHT: usize = 64;

/// What the pool hands back to the writer during an append.
enum Ready {
    Masked(usize, Vec<Message>),
    Prepared(usize, Result<Box<Batch>>),
    Recorded(usize, Box<(Batch, ExchangeRecord)>),
}

/// What the record of an exchange needs besides the exchange: the terms
/// of the exchanges before it, and what a model wrote for it.
struct RecordInputs {
    seen: SeenTerms,
    model: ModelTexts,
}

impl Writer {
    /// Prepares `batches` (exchange number, new messages as sent), records
    /// each exchange (`exchange_record::record_exchange`) and hands both to
    /// `store`, in order; `stored_before` is the session's exchange count
    /// before this append. The first error `store` returns ends the append.
    pub(super) fn prepare_each(
        &mut self,
        session: &str,
        batches: Vec<(u32, Vec<Message>)>,
        stored_before: u32,
        mut store: impl FnMut(&mut Writer, Batch, ExchangeRecord) -> Result<()>,
    ) -> Result<()> {
        let redact = self.settings.redact_secrets;
        let limits = self.settings.digest.clone();
        let caps = self.settings.caps.clone();
        let encoding = self.settings.encoding;
        let mut reads = Reads::new();
        // The terms of the exchanges before the next one to record: read
        // once, then each recorded exchange's own join them.
        let first = batches.first().map_or(0, |b| b.0);
        let mut recent = self.recent_terms(session, first)?;
        if let [(seq, _)] = batches[..] {
            // One exchange (an editor's usual append): prepared here, with
            // no hand-off to the pool and back.
            let messages = masked(batches.into_iter().flat_map(|b| b.1).collect(), redact);
            let shape = self.plan(session, seq, messages, stored_before, &mut reads)?;
            let batch = prepare_batch(shape, &limits, encoding)?;
            let inputs = self.record_inputs(session, &batch, stored_before, &mut recent)?;
            let record = record(&batch, inputs, &caps, encoding);
            return store(self, batch, record);
        }
        // The pool masks every batch, prepares each as this thread has
        // planned it (its lookups need the connection), and records each
        // once the terms of those before it are known, oldest first; this
        // thread plans, dispatches and stores each batch as soon as it and
        // those before it are ready, while the pool works on the next ones.
        let seqs: Vec<u32> = batches.iter().map(|b| b.0).collect();
        rayon::in_place_scope_fifo(|scope| {
            let (tx, rx) = mpsc::channel();
            let mut unmasked = batches.into_iter().enumerate();
            // Batches that came ready before an earlier one, by place.
            let mut masked_early = BTreeMap::new();
            let mut prepared_early = BTreeMap::new();
            let mut recorded_early = BTreeMap::new();
            let (mut next_mask, mut next_plan, mut next_record, mut next_store) = (0, 0, 0, 0);
            while next_store < seqs.len() {
                // At most IN_FLIGHT batches past the stored ones are worked
                // on: an append of many exchanges holds a few of them in
                // their intermediate forms, not all (the batch `next_store`
                // is always among them, so a job is always running).
                while next_mask < seqs.len() && next_mask < next_store + IN_FLIGHT {
                    let (i, (_, messages)) = unmasked.next().expect("a batch per exchange");
                    spawn(scope, &tx, move || {
                        Ready::Masked(i, masked(messages, redact))
                    });
                    next_mask += 1;
                }
                // Every job sends once, and this thread holds a sender.
                match rx.recv().expect("a sender is held") {
                    Ok(Ready::Masked(i, messages)) => {
                        masked_early.insert(i, messages);
                    }
                    Ok(Ready::Prepared(i, batch)) => {
                        prepared_early.insert(i, batch?);
                    }
                    Ok(Ready::Recorded(i, recorded)) => {
                        recorded_early.insert(i, recorded);
                    }
                    Err(panic) => std::panic::resume_unwind(panic),
                }
                while let Some(messages) = masked_early.remove(&next_plan) {
                    let seq = seqs[next_plan];
                    let shape = self.plan(session, seq, messages, stored_before, &mut reads)?;
                    let (limits, i) = (&limits, next_plan);
                    spawn(scope, &tx, move || {
                        Ready::Prepared(i, prepare_batch(shape, limits, encoding).map(Box::new))
                    });
                    next_plan += 1;
                }
                while let Some(batch) = prepared_early.remove(&next_record) {
                    let inputs = self.record_inputs(session, &batch, stored_before, &mut recent)?;
                    let (caps, i) = (&caps, next_record);
                    spawn(scope, &tx, move || {
                        let record = record(&batch, inputs, caps, encoding);
                        Ready::Recorded(i, Box::new((*batch, record)))
                    });
                    next_record += 1;
                }
                while let Some(recorded) = recorded_early.remove(&next_store) {
                    let (batch, record) = *recorded;
                    store(self, batch, record)?;
                    next_store += 1;
                }
            }
            Ok(())
        })
    }

    /// What recording `batch` needs: the terms before it (then its own join
    /// `recent`), and what a model wrote for it when it was stored before.
    fn record_inputs(
        &self,
        session: &str,
        batch: &Batch,
        stored_before: u32,
        recent: &mut RecentTerms,
    ) -> Result<RecordInputs> {
        let seen = recent.seen().clone();
        recent.push(batch.terms.clone());
        Ok(RecordInputs {
            seen,
            model: self.model_texts(session, batch.seq, batch.seq > stored_before)?,
        })
    }

    /// The lookups of one batch's tool results, against the store and this
    /// append's earlier reads (`reads`, which it joins).
    fn plan(
        &self,
        session: &str,
        seq: u32,
        messages: Vec<Message>,
        stored_before: u32,
        reads: &mut Reads,
    ) -> Result<Shape> {
        let stored = match seq <= stored_before {
            true => read::load_messages(&self.conn, session, seq)?,
            false => Vec::new(),
        };
        let at = messages.iter().find_map(|m| m.at.clone());
        let calls: Vec<Option<ToolCall>> = (0..messages.len())
            .map(|i| {
                let earlier = stored.iter().map(|k| &k.message).chain(&messages[..i]);
                exchange_record::answered_call(&messages[i], earlier).cloned()
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
                    Some((exchange, hash, bytes)) => Some(Prior::InHand(PriorRead {
                        exchange: *exchange,
                        changed_from: (*hash != pending.hash)
                            .then(|| String::from_utf8_lossy(bytes).into_owned()),
                    })),
                    None => self.prior_read(session, path, &pending.hash)?,
                },
            };
            if let Some(path) = &pending.path {
                let output = pending.bytes().to_vec();
                reads.insert(path.clone(), (id.exchange, pending.hash, output));
            }
            slots.push(Slot::ToolResult(Planned {
                pending,
                stored_tokens,
                prior,
            }));
        }
        Ok(Shape {
            seq,
            at,
            stored,
            slots,
        })
    }

    /// The last read of `path` stored before this append, if there was one.
    fn prior_read(&self, session: &str, path: &str, hash: &BlobHash) -> Result<Option<Prior>> {
        let row: Option<(u32, Vec<u8>)> = query_row_cached(
            &self.conn,
            "SELECT seq, hash FROM file_reads WHERE session_id = ?1 AND path = ?2",
            params![session, path],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
        let Some((seq, prev)) = row else {
            return Ok(None);
        };
        let exchange = ExchangeId(seq);
        if prev[..] == hash.0[..] {
            return Ok(Some(Prior::InHand(PriorRead {
                exchange,
                changed_from: None,
            })));
        }
        let prev_hash = BlobHash(
            prev.try_into()
                .map_err(|_| StoreError::Unreadable("bad hash in file_reads".into()))?,
        );
        let blob = blobs::stored_blob(&self.conn, &self.blob_dir, &prev_hash)?;
        Ok(Some(Prior::Stored(exchange, blob)))
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

/// An exchange's record (`exchange_record::record_exchange`).
fn record(
    batch: &Batch,
    inputs: RecordInputs,
    caps: &LayerCaps,
    encoding: Encoding,
) -> ExchangeRecord {
    exchange_record::record_exchange(
        ExchangeId(batch.seq),
        &batch.kept,
        &batch.facts,
        &inputs.seen,
        &inputs.model,
        caps,
        encoding,
    )
}

/// Messages as they are stored: secrets masked when `redact` is on.
fn masked(messages: Vec<Message>, redact: bool) -> Vec<Message> {
    match redact {
        true => messages.into_iter().map(secrets::mask_message).collect(),
        false => messages,
    }
}

/// Runs `job` on the pool, its result (or panic) sent back on `tx`.
fn spawn<'scope>(
    scope: &rayon::ScopeFifo<'scope>,
    tx: &mpsc::Sender<std::thread::Result<Ready>>,
    job: impl FnOnce() -> Ready + Send + 'scope,
) {
    let tx = tx.clone();
    scope.spawn_fifo(move |_| {
        // A closed channel: storing failed, the append is over.
        let _ = tx.send(run_caught(job));
    });
}

/// `job`'s result, or its panic to resume on the writer's thread (as a
/// panic in work done there would be).
fn run_caught<T>(job: impl FnOnce() -> T) -> std::thread::Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(job))
}

/// A batch prepared: each message kept and counted (a tool result
/// digested, its blob compressed), and what the exchange says.
fn prepare_batch(shape: Shape, limits: &DigestLimits, encoding: Encoding) -> Result<Batch> {
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
            Slot::ToolResult(p) => prepare_tool_result(p, limits, encoding)?,
        };
        kept.push(k);
        new.push(n);
    }
    let facts = ExchangeFacts::of(&kept);
    Ok(Batch {
        seq,
        at,
        terms: facts.terms(),
        facts,
        kept,
        new,
    })
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
) -> Result<(KeptMessage, NewMessage)> {
    let bytes = p.pending.bytes();
    let tokens = p
        .stored_tokens
        .unwrap_or_else(|| exchange_record::blob_tokens(encoding, bytes));
    let encoded = blobs::encode(bytes);
    let output = indexed_output(bytes);
    let stored = Stored {
        tokens,
        prior: p.prior.map(Prior::read).transpose()?,
    };
    let kept = p.pending.keep(&stored, limits, encoding);
    let blob = PreparedBlob {
        encoded,
        output,
        digest_tokens: tokens::count(encoding, &kept.message.content),
        reference: exchange_record::reference(&kept, encoding),
    };
    let new = NewMessage {
        tokens,
        blob: Some(blob),
    };
    Ok((kept, new))
}

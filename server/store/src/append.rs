//! `append`: messages grouped into exchanges, tool results into blobs and
//! digests, each exchange's record (`core::exchange_record`), its full-text row and
//! the current context after it; what happened, as events.

use std::collections::VecDeque;

use ctxproxy_core::context;
use ctxproxy_core::digest::OutputKind;
use ctxproxy_core::exchange::{self, KeptMessage, ToolResult};
use ctxproxy_core::exchange_record::{CountedText, ExchangeRecord, ModelTexts};
use ctxproxy_core::ids::{BlobHash, ExchangeId, MessageId};
use ctxproxy_core::message::Message;
use ctxproxy_core::summary;
use ctxproxy_core::supersede::ExchangeRange;
use rusqlite::{params, OptionalExtension};

use crate::cached::{execute_cached, query_row_cached};
use crate::error::StoreError;
use crate::exchange_row::TextSource;
use crate::read;
use crate::time::now_rfc3339;
use crate::tip::{self, Tip};
use crate::writer::Writer;
use crate::Result;
use crate::{blobs, exchange_row, fulltext};

mod early_headers;
mod prepare;

use prepare::{Batch, NewMessage};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlobOutcome {
    pub hash: BlobHash,
    pub message: MessageId,
    pub bytes: u64,
    pub tokens: u32,
    pub digest_tokens: u32,
    /// The message that first stored the same bytes (`s-…/x3.2` when it is
    /// in another session).
    pub duplicate_of: Option<String>,
}

#[derive(Clone, Debug, Default)]
pub struct AppendOutcome {
    pub exchanges: Vec<ExchangeId>,
    /// The session's tip once the append is stored.
    pub tip: Tip,
    pub blobs: Vec<BlobOutcome>,
    pub events: Vec<Event>,
}

/// A state change worth telling clients about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    ExchangeStored {
        session: String,
        exchange: ExchangeId,
        messages: u32,
    },
    BlobStored {
        session: String,
        blob: BlobHash,
        bytes: u64,
        duplicate: bool,
    },
    SummaryUpdated {
        session: String,
        exchange: ExchangeId,
        source: TextSource,
    },
}

impl Writer {
    pub fn append(&mut self, session: &str, messages: Vec<Message>) -> Result<AppendOutcome> {
        self.append_to(session, messages, None, &[])
    }

    /// `append`, checked against the exchange the client means (`ctx/append`'s
    /// `exchange`): the append must open or continue exactly that exchange, so
    /// that two writers on one session never attach an answer to the other's
    /// question. `supersedes` (`ctx/append`'s) marks earlier exchanges as
    /// replaced by the one this append opens or continues.
    pub fn append_to(
        &mut self,
        session: &str,
        messages: Vec<Message>,
        expected: Option<ExchangeId>,
        supersedes: &[ExchangeRange],
    ) -> Result<AppendOutcome> {
        let (count, base, current) = self.session_state(session)?;
        let stored_before = count;
        // Grouped as sent (by role); `prepare_each` masks each exchange.
        let (continuing, opened) = exchange::group(messages);
        // The one exchange an append that names it, or supersedes, goes to.
        let target = match (continuing.is_empty(), opened.len()) {
            (false, 0) => Some(ExchangeId(count.max(1))),
            (true, 1) => Some(ExchangeId(count + 1)),
            _ => None,
        };
        let one_exchange = |field: &str, does: &str| {
            target.ok_or_else(|| {
                StoreError::Invalid(format!(
                    "{field}: an append that {does} must hold one exchange's messages"
                ))
            })
        };
        if !supersedes.is_empty() {
            one_exchange("supersedes", "supersedes")?;
        }
        if let Some(expected) = expected {
            let target = one_exchange("exchange", "names its exchange")?;
            if target != expected {
                return Err(StoreError::ExchangeNotOpen {
                    given: expected.to_string(),
                    open: ExchangeId(count).to_string(),
                    target: target.to_string(),
                });
            }
        }
        let mut out = AppendOutcome::default();
        let (mut base, mut current, mut count) = (base, current, count);

        // Messages before the first user message continue the open exchange;
        // a session's very first messages open x1 whoever sent them.
        let mut batches: Vec<(u32, Vec<Message>)> = Vec::new();
        if !continuing.is_empty() {
            if count == 0 {
                count = 1;
                batches.push((1, continuing));
            } else {
                batches.push((count, continuing));
            }
        }
        for group in opened {
            count += 1;
            batches.push((count, group));
        }
        self.prepare_each(session, batches, stored_before, |w, batch, record| {
            let Batch {
                seq,
                at,
                kept,
                new,
                facts,
                terms,
            } = batch;
            let is_new = seq > stored_before;
            if is_new && seq > 1 {
                // The previous exchange is closed: its context becomes the base.
                base = current.clone();
            }
            // This append's tool outputs are in hand; earlier ones are read
            // back from their blobs for the full-text row.
            let first_new = kept.len() - new.len();
            let mut outputs: Vec<Option<String>> = vec![None; first_new];
            for (k, n) in kept[first_new..].iter().zip(new) {
                outputs.push(w.store_message(session, k, n, &mut out)?);
            }
            w.store_exchange(session, seq, at, &kept, &record, &terms, &outputs, is_new)?;
            current = context::advance(&base, ExchangeId(seq), &facts, &record.trio);
            out.exchanges.push(ExchangeId(seq));
            out.events.push(Event::ExchangeStored {
                session: session.to_string(),
                exchange: ExchangeId(seq),
                messages: kept.len() as u32,
            });
            out.events.push(Event::SummaryUpdated {
                session: session.to_string(),
                exchange: ExchangeId(seq),
                source: TextSource::Extractive,
            });
            Ok(())
        })?;
        if let (Some(by), false) = (target, supersedes.is_empty()) {
            self.supersede(session, by, supersedes)?;
        }
        if stored_before <= summary::HEADER_PEERS && count > 1 {
            for exchange in self.revise_early_headers(session, count)? {
                out.events.push(Event::SummaryUpdated {
                    session: session.to_string(),
                    exchange,
                    source: TextSource::Extractive,
                });
            }
        }
        execute_cached(
            &self.conn,
            "UPDATE sessions SET exchange_count = ?2, updated_at = ?3 WHERE id = ?1",
            params![session, count, now_rfc3339()],
        )?;
        self.save_context(session, &base, &current)?;
        out.tip = tip::tip(&self.conn, session)?;
        Ok(out)
    }

    /// Stores a message of this append, prepared: a tool result's bytes as
    /// a blob and the read of its path too. Returns a tool result's output
    /// as the full-text row takes it.
    fn store_message(
        &mut self,
        session: &str,
        kept: &KeptMessage,
        new: NewMessage,
        out: &mut AppendOutcome,
    ) -> Result<Option<String>> {
        let id = kept.id;
        let (Some(blob), Some(result)) = (new.blob, &kept.result) else {
            self.insert_message(session, id, &kept.message, new.tokens, None, None)?;
            return Ok(None);
        };
        let hash = result.blob;
        let duplicate_of =
            self.put_blob(session, id, &hash, result.bytes, new.tokens, blob.encoded)?;
        if let Some(p) = &result.path {
            execute_cached(
                &self.conn,
                "INSERT INTO file_reads (session_id, path, seq, hash) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (session_id, path) DO UPDATE SET seq = excluded.seq, hash = excluded.hash",
                params![session, p, id.exchange.0, &hash.0[..]],
            )?;
        }
        out.blobs.push(BlobOutcome {
            hash,
            message: id,
            bytes: result.bytes,
            tokens: new.tokens,
            digest_tokens: blob.digest_tokens,
            duplicate_of: duplicate_of.clone(),
        });
        out.events.push(Event::BlobStored {
            session: session.to_string(),
            blob: hash,
            bytes: result.bytes,
            duplicate: duplicate_of.is_some(),
        });
        self.insert_message(
            session,
            id,
            &kept.message,
            new.tokens,
            Some(result),
            blob.reference.as_ref(),
        )?;
        Ok(Some(blob.output))
    }

    fn insert_message(
        &self,
        session: &str,
        id: MessageId,
        m: &Message,
        tokens: u32,
        result: Option<&ToolResult>,
        reference: Option<&CountedText>,
    ) -> Result<()> {
        let calls = (!m.tool_calls.is_empty()).then(|| read::encode_tool_calls(&m.tool_calls));
        execute_cached(
            &self.conn,
            "INSERT INTO messages (session_id, seq, idx, role, kind, content, tool_calls, tool_call_id, name,
                agent, at, tokens, blob_hash, result_kind, result_path, headline, ref_line, ref_o200k, ref_cl100k)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
            params![
                session,
                id.exchange.0,
                id.index,
                m.role.as_str(),
                m.kind.map(|k| k.as_str()),
                m.content,
                calls,
                m.tool_call_id,
                m.name,
                m.agent,
                m.at,
                tokens,
                result.map(|r| r.blob.0.to_vec()),
                result.map(|r| r.kind.as_str()),
                result.and_then(|r| r.path.clone()),
                result.map(|r| r.headline.clone()),
                reference.map(|r| &r.text),
                reference.map(|r| r.tokens.o200k),
                reference.map(|r| r.tokens.cl100k),
            ],
        )?;
        Ok(())
    }

    /// Stores a blob's bytes (`encoded`, `bytes` long, counting `tokens`)
    /// once; returns, when they were stored before, the message that first
    /// stored them.
    fn put_blob(
        &mut self,
        session: &str,
        id: MessageId,
        hash: &BlobHash,
        bytes: u64,
        tokens: u32,
        encoded: Vec<u8>,
    ) -> Result<Option<String>> {
        let existing: Option<(String, String)> = query_row_cached(
            &self.conn,
            "SELECT first_session, first_message FROM blobs WHERE hash = ?1",
            [&hash.0[..]],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
        if let Some((first_session, first_message)) = existing {
            execute_cached(
                &self.conn,
                "UPDATE blobs SET duplicate_hits = duplicate_hits + 1 WHERE hash = ?1",
                [&hash.0[..]],
            )?;
            let first = if first_session == session {
                first_message
            } else {
                format!("{first_session}/{first_message}")
            };
            return Ok(Some(first));
        }
        let inline = encoded.len() <= blobs::INLINE_MAX_BYTES;
        if !inline {
            blobs::write_file(&self.blob_dir, hash, &encoded)?;
        }
        execute_cached(
            &self.conn,
            "INSERT INTO blobs (hash, hex, bytes, stored_bytes, data, tokens, first_session, first_message)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                &hash.0[..],
                hash.to_hex(),
                bytes as i64,
                encoded.len() as i64,
                inline.then_some(encoded),
                tokens,
                session,
                id.to_string()
            ],
        )?;
        Ok(None)
    }

    /// Writes (or rewrites) an exchange's record, its terms and its
    /// full-text row (`outputs`: as `index_text` takes them).
    #[allow(clippy::too_many_arguments)]
    fn store_exchange(
        &mut self,
        session: &str,
        seq: u32,
        at: Option<String>,
        kept: &[KeptMessage],
        recorded: &ExchangeRecord,
        terms: &[String],
        outputs: &[Option<String>],
        is_new: bool,
    ) -> Result<()> {
        // A new exchange is dated now when no message says when it was sent;
        // a rewritten one keeps its date.
        let at = match at {
            None if is_new => Some(now_rfc3339()),
            at => at,
        };
        // Every message's raw tokens were counted once, when it was kept.
        let raw_tokens: u32 = query_row_cached(
            &self.conn,
            "SELECT coalesce(sum(tokens), 0) FROM messages WHERE session_id = ?1 AND seq = ?2",
            params![session, seq],
            |r| r.get(0),
        )?;
        exchange_row::write(
            &self.conn,
            session,
            seq,
            at.as_deref(),
            recorded,
            terms,
            raw_tokens,
        )?;
        self.index_text(session, seq, &recorded.trio, kept, outputs)
    }

    /// What a model wrote for an exchange stored before (its header or
    /// summary outlives later extractive updates); nothing for a new one.
    fn model_texts(&self, session: &str, seq: u32, is_new: bool) -> Result<ModelTexts> {
        if is_new {
            return Ok(ModelTexts::default());
        }
        let (h, hs, s, ss): (String, String, String, String) = self.conn.query_row(
            "SELECT header, header_source, summary, summary_source FROM exchanges WHERE session_id = ?1 AND seq = ?2",
            params![session, seq],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )?;
        Ok(ModelTexts {
            header: (hs == TextSource::Model.as_str()).then_some(h),
            summary: (ss == TextSource::Model.as_str()).then_some(s),
        })
    }

    /// The terms of the session's exchanges before `seq` (the newest
    /// `TERM_WINDOW` that have any).
    fn recent_terms(&self, session: &str, seq: u32) -> Result<RecentTerms> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT terms FROM exchanges
             WHERE session_id = ?1 AND seq < ?2 AND terms != '' ORDER BY seq DESC LIMIT ?3",
        )?;
        let newest_first: VecDeque<Vec<String>> = stmt
            .query_map(params![session, seq, summary::TERM_WINDOW], |r| {
                Ok(r.get::<_, String>(0)?.lines().map(str::to_string).collect())
            })?
            .collect::<std::result::Result<_, _>>()?;
        Ok(RecentTerms::new(newest_first.into_iter().rev().collect()))
    }

    /// (Re)writes the exchange's full-text row: header, summary, and every
    /// message's text, tool outputs included: `outputs[i]` when the output
    /// of `kept[i]` is in hand, else read back from its blob.
    fn index_text(
        &self,
        session: &str,
        seq: u32,
        trio: &summary::Trio,
        kept: &[KeptMessage],
        outputs: &[Option<String>],
    ) -> Result<()> {
        let rowid: i64 = query_row_cached(
            &self.conn,
            "SELECT id FROM exchanges WHERE session_id = ?1 AND seq = ?2",
            params![session, seq],
            |r| r.get(0),
        )?;
        let mut body = String::new();
        for (i, k) in kept.iter().enumerate() {
            match (&k.result, outputs.get(i).and_then(Option::as_deref)) {
                // Bytes that are not text: their digest says what they are.
                (Some(r), _) if r.kind == OutputKind::Binary => body.push_str(&r.digest),
                (Some(_), Some(output)) => body.push_str(output),
                (Some(r), None) => {
                    let raw = read::blob_bytes(&self.conn, &self.blob_dir, &r.blob)?;
                    body.push_str(&indexed_output(&raw));
                }
                (None, _) => body.push_str(&k.message.content),
            }
            for c in &k.message.tool_calls {
                body.push('\n');
                body.push_str(&c.name);
                body.push(' ');
                body.push_str(&c.arguments);
            }
            body.push('\n');
        }
        fulltext::index(
            &self.conn,
            rowid,
            &trio.header.text,
            &trio.summary.text,
            &body,
        )
    }
}

const FTS_BLOB_MAX_BYTES: usize = 256 * 1024;

/// A tool output's bytes as its exchange's full-text row holds them.
fn indexed_output(raw: &[u8]) -> String {
    String::from_utf8_lossy(&raw[..raw.len().min(FTS_BLOB_MAX_BYTES)]).into_owned()
}

/// The terms (`ExchangeFacts::terms`) of the newest `TERM_WINDOW`
/// exchanges before the one being stored that have any, oldest first, and
/// their counts (`SeenTerms::of` of them), kept up to date as exchanges
/// join and leave the window instead of recounted for every exchange.
struct RecentTerms {
    window: VecDeque<Vec<String>>,
    seen: summary::SeenTerms,
}

impl RecentTerms {
    fn new(oldest_first: VecDeque<Vec<String>>) -> RecentTerms {
        let seen = summary::SeenTerms::of(oldest_first.iter().map(Vec::as_slice));
        RecentTerms {
            window: oldest_first,
            seen,
        }
    }

    fn seen(&self) -> &summary::SeenTerms {
        &self.seen
    }

    /// Adds the terms of the exchange just stored, the newest.
    fn push(&mut self, terms: Vec<String>) {
        if terms.is_empty() {
            return;
        }
        for t in &terms {
            *self.seen.counts.entry(t.clone()).or_default() += 1;
        }
        self.seen.exchanges += 1;
        self.window.push_back(terms);
        if self.window.len() > summary::TERM_WINDOW as usize {
            let oldest = self.window.pop_front().expect("a full window");
            for t in &oldest {
                if let Some(n) = self.seen.counts.get_mut(t) {
                    *n -= 1;
                    if *n == 0 {
                        self.seen.counts.remove(t);
                    }
                }
            }
            self.seen.exchanges -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The counts kept up to date equal the window counted afresh, as
    /// exchanges (some without terms, some repeating a term) pass through.
    #[test]
    fn recent_terms_count_as_the_window_counted_afresh() {
        let words = ["parser", "cache", "x12", "Token", "parser", "blob"];
        let mut recent = RecentTerms::new(VecDeque::new());
        for i in 0..200usize {
            let terms: Vec<String> = (0..i % 4)
                .map(|j| words[(i * 7 + j * 3) % words.len()].to_string())
                .collect();
            recent.push(terms);
            let afresh = summary::SeenTerms::of(recent.window.iter().map(Vec::as_slice));
            assert_eq!(recent.seen(), &afresh, "after exchange {i}");
            assert!(recent.window.len() <= summary::TERM_WINDOW as usize);
        }
    }
}

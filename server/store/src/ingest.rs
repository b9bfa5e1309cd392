//! The writer: every state change, applied in submission order, each inside
//! one transaction so a failed request leaves nothing half-written.

use std::path::PathBuf;

use ctxproxy_core::config::{DigestLimits, LayerCaps};
use ctxproxy_core::context::{self, CurrentContext, Housekeeping};
use ctxproxy_core::digest::{self, OutputKind, PriorRead};
use ctxproxy_core::exchange::{self, KeptMessage, ToolResult};
use ctxproxy_core::ids::{BlobHash, ExchangeId, MessageId, PromptId};
use ctxproxy_core::message::{Message, Role};
use ctxproxy_core::record::{self, CountedText, ModelTexts};
use ctxproxy_core::tokens::{self, Encoding};
use ctxproxy_core::view::SessionView;
use ctxproxy_core::{packer, render, secrets, summary};
use rusqlite::{params, Connection, OptionalExtension, Params};

use crate::error::StoreError;
use crate::read::{self, session_exists, stored_context, Reader};
use crate::time::now_rfc3339;
use crate::Result;
use crate::{blobs, exchange_row};

/// How ingest digests, summarises and counts; changed by configuration.
#[derive(Clone, Debug)]
pub struct IngestSettings {
    /// The encoding raw tool outputs are counted in and caps are fitted in.
    pub encoding: Encoding,
    pub caps: LayerCaps,
    pub digest: DigestLimits,
    pub redact_secrets: bool,
}

impl Default for IngestSettings {
    fn default() -> Self {
        let c = ctxproxy_core::config::Config::default();
        IngestSettings {
            encoding: c.encoding,
            caps: c.layers,
            digest: c.digest,
            redact_secrets: c.redact_secrets,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct NewSession {
    pub workspace: Option<String>,
    pub title: Option<String>,
    /// Fork of this session, sharing its history up to the given exchange
    /// (all of it when `None`).
    pub parent: Option<(String, Option<u32>)>,
}

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
        source: &'static str,
    },
}

/// How long a transaction waits for other processes' writers before the
/// store answers "unavailable".
const BUSY_DEADLINE: std::time::Duration = std::time::Duration::from_secs(120);

pub struct Writer {
    conn: Connection,
    db_path: PathBuf,
    blob_dir: PathBuf,
    settings: IngestSettings,
    /// Why writes are refused: the store is read-only, or was found damaged
    /// (writing into a malformed database spreads the damage).
    refusal: Option<StoreError>,
    /// Whether SQLite's page check ran: before the first write, so that
    /// reads (and the CLI, which only reads) never pay for it.
    pages_checked: bool,
}

impl Writer {
    pub(crate) fn new(
        conn: Connection,
        db_path: PathBuf,
        blob_dir: PathBuf,
        settings: IngestSettings,
    ) -> Writer {
        Writer {
            conn,
            db_path,
            blob_dir,
            settings,
            refusal: None,
            pages_checked: false,
        }
    }

    /// Refuses every later write with `why` (the store is read-only).
    pub(crate) fn refuse_writes(&mut self, why: Option<String>) {
        self.refusal = why.map(|why| StoreError::WritesRefused {
            damaged: false,
            why,
        });
    }

    /// Names the store in an error that says it is damaged, and refuses
    /// writes from then on.
    pub(crate) fn noticed(&mut self, e: StoreError) -> StoreError {
        let e = e.at_store(&self.db_path);
        if let StoreError::Damaged { .. } = &e {
            self.refusal
                .get_or_insert_with(|| StoreError::WritesRefused {
                    damaged: true,
                    why: e.to_string(),
                });
        }
        e
    }

    /// `PRAGMA quick_check`: SQLite's structural check of every page. A
    /// store it finds damaged refuses writes (they would spread the damage).
    fn quick_check(&mut self) {
        self.pages_checked = true;
        let found = self
            .conn
            .prepare("PRAGMA quick_check")
            .and_then(|mut stmt| {
                stmt.query_map([], |r| r.get::<_, String>(0))?
                    .collect::<rusqlite::Result<Vec<_>>>()
            });
        let damage = match found {
            Ok(lines) if lines.iter().all(|l| l == "ok") => return,
            Ok(lines) => lines.join("; "),
            Err(e) => e.to_string(),
        };
        self.noticed(StoreError::Unreadable(format!("quick_check: {damage}")));
    }

    /// `PRAGMA wal_checkpoint(TRUNCATE)`; best effort: another process
    /// reading the store may keep part of the WAL until it is done.
    pub(crate) fn checkpoint(&mut self) {
        if self.refusal.is_none() {
            let _ = self
                .conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
        }
    }

    /// Runs `f` in one immediate transaction, committed only if it succeeds.
    pub(crate) fn transaction<T>(&mut self, f: impl FnOnce(&mut Writer) -> Result<T>) -> Result<T> {
        if !self.pages_checked {
            self.quick_check();
        }
        if let Some(StoreError::WritesRefused { damaged, why }) = &self.refusal {
            return Err(StoreError::WritesRefused {
                damaged: *damaged,
                why: why.clone(),
            });
        }
        self.begin("BEGIN IMMEDIATE")?;
        match f(self) {
            Ok(v) => {
                self.conn.execute_batch("COMMIT")?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// Starts a transaction, waiting for other processes' writers as long
    /// as it takes (up to `BUSY_DEADLINE`): `busy_timeout` alone gives up
    /// after 5 s, and a client must never see a busy store it could wait for.
    fn begin(&self, sql: &str) -> Result<()> {
        let deadline = std::time::Instant::now() + BUSY_DEADLINE;
        let mut pause = std::time::Duration::from_millis(2);
        loop {
            match self.conn.execute_batch(sql) {
                Err(e)
                    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(std::time::Duration::from_millis(100));
                }
                other => return Ok(other?),
            }
        }
    }

    /// Runs a read on the writer's connection, in one deferred transaction
    /// so that it sees one state even if another process writes meanwhile.
    pub(crate) fn read<T>(&mut self, f: impl FnOnce(&Reader) -> Result<T>) -> Result<T> {
        self.begin("BEGIN DEFERRED")?;
        let out = f(&Reader::new(&self.conn, &self.blob_dir));
        let _ = self.conn.execute_batch("COMMIT");
        out
    }

    pub fn configure(&mut self, settings: IngestSettings) -> Result<()> {
        self.settings = settings;
        Ok(())
    }

    pub fn open_session(&mut self, new: NewSession) -> Result<String> {
        let now = now_rfc3339();
        let id = self.fresh_session_id(&now)?;
        let (parent, fork_at, depth, workspace) = match &new.parent {
            None => (None, None, 0, new.workspace.clone().unwrap_or_default()),
            Some((pid, at)) => {
                let (count, depth, ws): (u32, u32, String) = self
                    .conn
                    .query_row(
                        "SELECT exchange_count, depth, workspace FROM sessions WHERE id = ?1",
                        [pid],
                        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                    )
                    .optional()?
                    .ok_or_else(|| StoreError::UnknownSession(pid.clone()))?;
                let at = at.unwrap_or(count);
                if at > count {
                    return Err(StoreError::Invalid(format!(
                        "parent.atExchange: session {pid} has {count} exchanges, cannot fork at x{at}"
                    )));
                }
                (
                    Some(pid.clone()),
                    Some(at),
                    depth + 1,
                    new.workspace.clone().unwrap_or(ws),
                )
            }
        };
        self.conn.execute(
            "INSERT INTO sessions (id, workspace, title, parent_id, fork_at, depth, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)",
            params![id, workspace, new.title.clone().unwrap_or_default(), parent, fork_at, depth, now],
        )?;
        if let (Some(parent), Some(at)) = (parent, fork_at) {
            self.copy_history(&parent, &id, at)?;
        }
        Ok(id)
    }

    fn fresh_session_id(&self, now: &str) -> Result<String> {
        const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
        for attempt in 0u32.. {
            let seed = format!(
                "{now}/{}/{attempt}/{:?}",
                std::process::id(),
                std::time::Instant::now()
            );
            let hash = blake3::hash(seed.as_bytes());
            let id: String = std::iter::once("s-".to_string())
                .chain(
                    hash.as_bytes()[..6]
                        .iter()
                        .map(|b| (ALPHABET[*b as usize % 36] as char).to_string()),
                )
                .collect();
            if !session_exists(&self.conn, &id)? {
                return Ok(id);
            }
        }
        unreachable!("the loop returns")
    }

    /// A fork shares its parent's history: the rows up to `at` are copied
    /// (blobs are shared by hash) and the current context is rebuilt there.
    fn copy_history(&mut self, parent: &str, child: &str, at: u32) -> Result<()> {
        let c = &self.conn;
        exchange_row::copy(c, parent, child, at)?;
        c.execute(
            "INSERT INTO messages SELECT ?2, seq, idx, role, kind, content, tool_calls, tool_call_id, name, agent,
                at, tokens, blob_hash, result_kind, result_path, headline, ref_line, ref_o200k, ref_cl100k
             FROM messages WHERE session_id = ?1 AND seq <= ?3",
            params![parent, child, at],
        )?;
        c.execute(
            "INSERT INTO file_reads SELECT ?2, path, seq, hash FROM file_reads WHERE session_id = ?1 AND seq <= ?3",
            params![parent, child, at],
        )?;
        c.execute(
            "INSERT INTO exchange_text (rowid, header, summary, body)
             SELECT child.id, t.header, t.summary, t.body
             FROM exchanges child
             JOIN exchanges par ON par.session_id = ?1 AND par.seq = child.seq
             JOIN exchange_text t ON t.rowid = par.id
             WHERE child.session_id = ?2",
            params![parent, child],
        )?;
        let mut base = CurrentContext::default();
        let mut current = CurrentContext::default();
        for seq in 1..=at {
            base = current;
            let msgs = read::load_messages(c, child, seq)?;
            let trio = read::stored_trio(c, child, seq)?;
            current = context::advance(&base, ExchangeId(seq), &msgs, &trio);
        }
        c.execute(
            "UPDATE sessions SET exchange_count = ?2 WHERE id = ?1",
            params![child, at],
        )?;
        self.save_context(child, &base, &current)
    }

    pub fn append(&mut self, session: &str, messages: Vec<Message>) -> Result<AppendOutcome> {
        self.append_to(session, messages, None)
    }

    /// `append`, checked against the exchange the client means (`ctx/append`'s
    /// `exchange`): the append must open or continue exactly that exchange, so
    /// that two writers on one session never attach an answer to the other's
    /// question.
    pub fn append_to(
        &mut self,
        session: &str,
        messages: Vec<Message>,
        expected: Option<ExchangeId>,
    ) -> Result<AppendOutcome> {
        let (count, base, current) = self.session_state(session)?;
        let stored_before = count;
        let messages = if self.settings.redact_secrets {
            messages.into_iter().map(secrets::mask_message).collect()
        } else {
            messages
        };
        let (continuing, opened) = exchange::group(messages);
        if let Some(expected) = expected {
            let target = match (continuing.is_empty(), opened.len()) {
                (false, 0) => ExchangeId(count.max(1)),
                (true, 1) => ExchangeId(count + 1),
                _ => return Err(StoreError::Invalid(
                    "exchange: an append that names its exchange must hold one exchange's messages"
                        .into(),
                )),
            };
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
        for (seq, new_messages) in batches {
            let is_new = seq > stored_before;
            if is_new && seq > 1 {
                // The previous exchange is closed: its context becomes the base.
                base = current.clone();
            }
            let mut kept = if is_new {
                Vec::new()
            } else {
                read::load_messages(&self.conn, session, seq)?
            };
            let at = new_messages.iter().find_map(|m| m.at.clone());
            for m in new_messages {
                let index = kept.len() as u32 + 1;
                let id = MessageId {
                    exchange: ExchangeId(seq),
                    index,
                };
                let km = self.keep_message(session, id, m, &kept, &mut out)?;
                kept.push(km);
            }
            let trio = self.store_exchange(session, seq, at, &kept, is_new)?;
            current = context::advance(&base, ExchangeId(seq), &kept, &trio);
            out.exchanges.push(ExchangeId(seq));
            out.events.push(Event::ExchangeStored {
                session: session.to_string(),
                exchange: ExchangeId(seq),
                messages: kept.len() as u32,
            });
            out.events.push(Event::SummaryUpdated {
                session: session.to_string(),
                exchange: ExchangeId(seq),
                source: "extractive",
            });
        }
        execute_cached(
            &self.conn,
            "UPDATE sessions SET exchange_count = ?2, updated_at = ?3 WHERE id = ?1",
            params![session, count, now_rfc3339()],
        )?;
        self.save_context(session, &base, &current)?;
        Ok(out)
    }

    /// Stores one message; a tool result's bytes become a blob and the
    /// message keeps its digest (`record::keep_tool_result`).
    fn keep_message(
        &mut self,
        session: &str,
        id: MessageId,
        m: Message,
        earlier: &[KeptMessage],
        out: &mut AppendOutcome,
    ) -> Result<KeptMessage> {
        let enc = self.settings.encoding;
        if m.role != Role::Tool {
            let tokens = tokens::count(enc, &m.content);
            self.insert_message(session, id, &m, tokens, None, None)?;
            return Ok(KeptMessage {
                id,
                message: m,
                result: None,
            });
        }
        let call = record::answered_call(&m, earlier);
        let raw = record::result_bytes(&m);
        let hash = BlobHash::of(raw);
        let (tokens, duplicate_of) = self.put_blob(session, id, &hash, raw)?;
        let prior = match digest::read_path(&record::tool_output(&m, call)) {
            Some(p) => self.prior_read(session, &p, &hash)?,
            None => None,
        };
        let blob = record::StoredBlob {
            hash,
            bytes: raw,
            tokens,
        };
        let kept = record::keep_tool_result(
            id,
            m.clone(),
            call,
            blob,
            prior.as_ref(),
            &self.settings.digest,
            enc,
        );
        let result = kept.result.as_ref().expect("a kept tool result has one");
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
            tokens,
            digest_tokens: tokens::count(enc, &result.digest),
            duplicate_of: duplicate_of.clone(),
        });
        out.events.push(Event::BlobStored {
            session: session.to_string(),
            blob: hash,
            bytes: result.bytes,
            duplicate: duplicate_of.is_some(),
        });
        let reference = record::reference(&kept);
        self.insert_message(
            session,
            id,
            &kept.message,
            tokens,
            Some(result),
            reference.as_ref(),
        )?;
        Ok(kept)
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

    /// Stores the bytes once; returns their token count and, when they were
    /// stored before, the message that first stored them.
    fn put_blob(
        &mut self,
        session: &str,
        id: MessageId,
        hash: &BlobHash,
        raw: &[u8],
    ) -> Result<(u32, Option<String>)> {
        let existing: Option<(u32, String, String)> = query_row_cached(
            &self.conn,
            "SELECT tokens, first_session, first_message FROM blobs WHERE hash = ?1",
            [&hash.0[..]],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
        if let Some((tokens, first_session, first_message)) = existing {
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
            return Ok((tokens, Some(first)));
        }
        let text = String::from_utf8_lossy(raw);
        let tokens = tokens::count(self.settings.encoding, &text);
        let encoded = blobs::encode(raw);
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
                raw.len() as i64,
                encoded.len() as i64,
                inline.then_some(encoded),
                tokens,
                session,
                id.to_string()
            ],
        )?;
        Ok((tokens, None))
    }

    fn prior_read(&self, session: &str, path: &str, hash: &BlobHash) -> Result<Option<PriorRead>> {
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
            return Ok(Some(PriorRead {
                exchange,
                changed_from: None,
            }));
        }
        let prev_hash = BlobHash(
            prev.try_into()
                .map_err(|_| StoreError::Unreadable("bad hash in file_reads".into()))?,
        );
        let before = read::blob_bytes(&self.conn, &self.blob_dir, &prev_hash)?;
        Ok(Some(PriorRead {
            exchange,
            changed_from: Some(String::from_utf8_lossy(&before).into_owned()),
        }))
    }

    /// Writes (or rewrites) an exchange's record (`record::record_exchange`)
    /// and full-text row.
    fn store_exchange(
        &mut self,
        session: &str,
        seq: u32,
        at: Option<String>,
        kept: &[KeptMessage],
        is_new: bool,
    ) -> Result<summary::Trio> {
        // A model-written header or summary outlives later extractive updates.
        let model = if is_new {
            ModelTexts::default()
        } else {
            let (h, hs, s, ss): (String, String, String, String) = self.conn.query_row(
                "SELECT header, header_source, summary, summary_source FROM exchanges WHERE session_id = ?1 AND seq = ?2",
                params![session, seq],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )?;
            ModelTexts {
                header: (hs == "model").then_some(h),
                summary: (ss == "model").then_some(s),
            }
        };
        let seen = self.seen_terms(session, seq)?;
        let recorded = record::record_exchange(
            ExchangeId(seq),
            kept,
            &seen,
            &model,
            &self.settings.caps,
            self.settings.encoding,
        );
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
            &recorded,
            raw_tokens,
        )?;
        self.index_text(session, seq, &recorded.trio, kept)?;
        Ok(recorded.trio)
    }

    /// The terms of the session's exchanges before `seq` (the newest
    /// `TERM_WINDOW` that have any), counted.
    fn seen_terms(&self, session: &str, seq: u32) -> Result<summary::SeenTerms> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT terms FROM exchanges
             WHERE session_id = ?1 AND seq < ?2 AND terms != '' ORDER BY seq DESC LIMIT ?3",
        )?;
        let lists: Vec<Vec<String>> = stmt
            .query_map(params![session, seq, summary::TERM_WINDOW], |r| {
                Ok(r.get::<_, String>(0)?.lines().map(str::to_string).collect())
            })?
            .collect::<std::result::Result<_, _>>()?;
        Ok(summary::SeenTerms::of(
            lists.iter().rev().map(Vec::as_slice),
        ))
    }

    /// (Re)writes the exchange's full-text row: header, summary, and every
    /// message's text, tool outputs included (read back from their blobs).
    fn index_text(
        &self,
        session: &str,
        seq: u32,
        trio: &summary::Trio,
        kept: &[KeptMessage],
    ) -> Result<()> {
        let rowid: i64 = query_row_cached(
            &self.conn,
            "SELECT id FROM exchanges WHERE session_id = ?1 AND seq = ?2",
            params![session, seq],
            |r| r.get(0),
        )?;
        let mut body = String::new();
        for k in kept {
            match &k.result {
                // Bytes that are not text: their digest says what they are.
                Some(r) if r.kind == OutputKind::Binary => body.push_str(&r.digest),
                Some(r) => {
                    let raw = read::blob_bytes(&self.conn, &self.blob_dir, &r.blob)?;
                    let raw = &raw[..raw.len().min(FTS_BLOB_MAX_BYTES)];
                    body.push_str(&String::from_utf8_lossy(raw));
                }
                None => body.push_str(&k.message.content),
            }
            for c in &k.message.tool_calls {
                body.push('\n');
                body.push_str(&c.name);
                body.push(' ');
                body.push_str(&c.arguments);
            }
            body.push('\n');
        }
        execute_cached(
            &self.conn,
            "DELETE FROM exchange_text WHERE rowid = ?1",
            [rowid],
        )?;
        execute_cached(
            &self.conn,
            "INSERT INTO exchange_text (rowid, header, summary, body) VALUES (?1, ?2, ?3, ?4)",
            params![rowid, trio.header.text, trio.summary.text, body],
        )?;
        Ok(())
    }

    fn session_state(&self, session: &str) -> Result<(u32, CurrentContext, CurrentContext)> {
        let (count, base, current): (u32, String, String) = query_row_cached(
            &self.conn,
            "SELECT exchange_count, context_base, context_current FROM sessions WHERE id = ?1",
            [session],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?
        .ok_or_else(|| StoreError::UnknownSession(session.to_string()))?;
        Ok((count, stored_context(&base)?, stored_context(&current)?))
    }

    fn save_context(
        &self,
        session: &str,
        base: &CurrentContext,
        current: &CurrentContext,
    ) -> Result<()> {
        execute_cached(
            &self.conn,
            "UPDATE sessions SET context_base = ?2, context_current = ?3 WHERE id = ?1",
            params![session, base.encode(), current.encode()],
        )?;
        Ok(())
    }

    /// Applies model-written housekeeping: header and summary replace the
    /// extractive ones; the current context takes the model's words.
    /// Removes a session that has no forks, and the blobs only it showed;
    /// returns the blob files to delete once this has committed. Used to
    /// leave a store as it was when a replay fails halfway.
    pub fn remove_session(&mut self, session: &str) -> Result<Vec<PathBuf>> {
        let forks: i64 = self.conn.query_row(
            "SELECT count(*) FROM sessions WHERE parent_id = ?1",
            [session],
            |r| r.get(0),
        )?;
        if forks > 0 {
            return Err(StoreError::Invalid(format!(
                "session {session} has {forks} forks: remove them first"
            )));
        }
        let c = &self.conn;
        // Undo the duplicate hits this session's tool results counted.
        c.execute(
            "UPDATE blobs SET duplicate_hits = duplicate_hits - \
               ((SELECT count(*) FROM messages m WHERE m.session_id = ?1 AND m.blob_hash = blobs.hash) \
                - (first_session = ?1)) \
             WHERE hash IN (SELECT blob_hash FROM messages WHERE session_id = ?1)",
            [session],
        )?;
        let orphans = {
            let mut stmt = c.prepare(
                "SELECT hash, data IS NULL FROM blobs WHERE first_session = ?1 AND hash NOT IN \
                 (SELECT blob_hash FROM messages WHERE session_id != ?1 AND blob_hash IS NOT NULL)",
            )?;
            let rows = stmt.query_map([session], |r| {
                Ok((r.get::<_, Vec<u8>>(0)?, r.get::<_, bool>(1)?))
            })?;
            rows.collect::<rusqlite::Result<Vec<_>>>()?
        };
        c.execute(
            "DELETE FROM exchange_text WHERE rowid IN (SELECT id FROM exchanges WHERE session_id = ?1)",
            [session],
        )?;
        for table in ["messages", "exchanges", "file_reads", "prompts"] {
            c.execute(
                &format!("DELETE FROM {table} WHERE session_id = ?1"),
                [session],
            )?;
        }
        let mut files = Vec::new();
        for (hash, in_file) in orphans {
            c.execute("DELETE FROM blobs WHERE hash = ?1", [&hash])?;
            if let (true, Ok(hash)) = (in_file, <[u8; 32]>::try_from(hash.as_slice())) {
                files.push(blobs::file_path(&self.blob_dir, &BlobHash(hash)));
            }
        }
        c.execute("DELETE FROM sessions WHERE id = ?1", [session])?;
        Ok(files)
    }

    pub fn housekeeping(&mut self, session: &str, hk: Housekeeping) -> Result<Vec<Event>> {
        let (exchanges, base, current) = self.session_state(session)?;
        let seq = hk.exchange.0;
        if seq == 0 || seq > exchanges {
            return Err(StoreError::UnknownId(hk.exchange.to_string()));
        }
        let caps = self.settings.caps.clone();
        let enc = self.settings.encoding;
        if let Some(h) = &hk.header {
            let h = summary::fit_header(h, &caps, enc);
            let header = CountedText::new(h.text);
            let line = CountedText::new(render::header_line(hk.exchange, &header.text));
            self.conn.execute(
                "UPDATE exchanges SET header = ?3, header_source = 'model', header_line = ?4,
                    header_o200k = ?5, header_cl100k = ?6, line_o200k = ?7, line_cl100k = ?8
                 WHERE session_id = ?1 AND seq = ?2",
                params![
                    session,
                    seq,
                    header.text,
                    line.text,
                    header.tokens.o200k,
                    header.tokens.cl100k,
                    line.tokens.o200k,
                    line.tokens.cl100k
                ],
            )?;
        }
        let summary_text = hk.summary_text();
        if let Some(s) = summary_text {
            let s = CountedText::new(summary::fit_summary(&s, &caps, enc).text);
            self.conn.execute(
                "UPDATE exchanges SET summary = ?3, summary_source = 'model', summary_o200k = ?4, summary_cl100k = ?5
                 WHERE session_id = ?1 AND seq = ?2",
                params![session, seq, s.text, s.tokens.o200k, s.tokens.cl100k],
            )?;
        }
        let rowid: i64 = self.conn.query_row(
            "SELECT id FROM exchanges WHERE session_id = ?1 AND seq = ?2",
            params![session, seq],
            |r| r.get(0),
        )?;
        self.conn.execute(
            "UPDATE exchange_text SET header = (SELECT header FROM exchanges WHERE id = ?1),
                summary = (SELECT summary FROM exchanges WHERE id = ?1) WHERE rowid = ?1",
            [rowid],
        )?;
        // The open exchange's context is recomputed from the base on every
        // append, so model-written context applies to both.
        let base = if seq < exchanges {
            context::apply_housekeeping(&base, &hk)
        } else {
            base
        };
        let current = context::apply_housekeeping(&current, &hk);
        self.save_context(session, &base, &current)?;
        Ok(vec![Event::SummaryUpdated {
            session: session.to_string(),
            exchange: hk.exchange,
            source: "model",
        }])
    }

    /// Builds the session's view for `encoding`, lets `pack` turn it into a
    /// prompt, and records that prompt under the next `p<N>`. When `pack`
    /// refuses (a budget too small, say), nothing is recorded.
    pub fn assemble<T, E>(
        &mut self,
        session: &str,
        encoding: Encoding,
        pack: impl FnOnce(
            PromptId,
            &SessionView,
            &LayerCaps,
        ) -> std::result::Result<AssembledPrompt<T>, E>,
    ) -> Result<std::result::Result<T, E>> {
        self.assemble_as(session, encoding, true, pack)
    }

    /// `assemble` without recording: the prompt the next `assemble` would
    /// give (counting tokens for a client that asks before it sends).
    pub fn preview<T, E>(
        &mut self,
        session: &str,
        encoding: Encoding,
        pack: impl FnOnce(
            PromptId,
            &SessionView,
            &LayerCaps,
        ) -> std::result::Result<AssembledPrompt<T>, E>,
    ) -> Result<std::result::Result<T, E>> {
        self.assemble_as(session, encoding, false, pack)
    }

    fn assemble_as<T, E>(
        &mut self,
        session: &str,
        encoding: Encoding,
        record: bool,
        pack: impl FnOnce(
            PromptId,
            &SessionView,
            &LayerCaps,
        ) -> std::result::Result<AssembledPrompt<T>, E>,
    ) -> Result<std::result::Result<T, E>> {
        let caps = self.settings.caps.clone();
        let window = packer::window_len(&caps);
        let view = read::session_view(&self.conn, session, encoding, &caps, window)?;
        let prompt_count: u32 = self.conn.query_row(
            "SELECT prompt_count FROM sessions WHERE id = ?1",
            [session],
            |r| r.get(0),
        )?;
        let id = PromptId(prompt_count + 1);
        let assembled = match pack(id, &view, &caps) {
            Ok(a) => a,
            Err(e) => return Ok(Err(e)),
        };
        if !record {
            return Ok(Ok(assembled.value));
        }
        self.conn.execute(
            "INSERT INTO prompts (session_id, seq, created_at, total_tokens, record) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                session,
                id.0,
                now_rfc3339(),
                assembled.total_tokens,
                blobs::encode(assembled.record.as_bytes())
            ],
        )?;
        self.conn.execute(
            "UPDATE sessions SET prompt_count = ?2 WHERE id = ?1",
            params![session, id.0],
        )?;
        Ok(Ok(assembled.value))
    }
}

/// What a packing closure hands back: the caller's value, the prompt's total
/// tokens and the record kept for `ctx/explain`.
pub struct AssembledPrompt<T> {
    pub value: T,
    pub total_tokens: u32,
    pub record: String,
}

const FTS_BLOB_MAX_BYTES: usize = 256 * 1024;

/// `execute` on a statement the connection keeps prepared: ingest runs the
/// same dozen statements for every message, and preparing each anew cost
/// about a tenth of its time.
pub(crate) fn execute_cached(
    conn: &Connection,
    sql: &str,
    params: impl Params,
) -> rusqlite::Result<usize> {
    conn.prepare_cached(sql)?.execute(params)
}

/// `query_row` on a statement the connection keeps prepared.
fn query_row_cached<T>(
    conn: &Connection,
    sql: &str,
    params: impl Params,
    f: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    conn.prepare_cached(sql)?.query_row(params, f)
}

//! Queries: everything a client reads back by id (`Reader`), and the row
//! loaders the writer shares.

use std::path::Path;

use ctxproxy_core::context::CurrentContext;
use ctxproxy_core::digest::OutputKind;
use ctxproxy_core::exchange::{Counted, KeptMessage, Level, Outcome, ToolResult};
use ctxproxy_core::ids::{BlobHash, ExchangeId, MessageId, PromptId};
use ctxproxy_core::message::{Message, Role, ToolCall, UserKind};
use ctxproxy_core::summary::{self, Trio};
use ctxproxy_core::{render, text};
use rusqlite::{params, Connection, OptionalExtension, Row};

use crate::blobs;
use crate::error::StoreError;
use crate::Result;

/// Read access to a connection and the blob directory: the writer's own
/// connection for reads ordered with writes, or a read-only one (CLI).
pub struct Reader<'a> {
    pub(crate) conn: &'a Connection,
    pub(crate) blob_dir: &'a Path,
}

/// Which edge opened a session: the proxy finds its conversations again
/// among its own sessions only.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Edge {
    #[default]
    Lsp,
    Proxy,
}

impl Edge {
    pub fn as_str(self) -> &'static str {
        match self {
            Edge::Lsp => "lsp",
            Edge::Proxy => "proxy",
        }
    }

    pub(crate) fn parse(s: &str) -> Edge {
        match s {
            "proxy" => Edge::Proxy,
            _ => Edge::Lsp,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionListing {
    pub id: String,
    pub title: String,
    /// The session's project (a folder, or `''`: none).
    pub workspace: String,
    /// Whose the session is: `''` for the local user.
    pub tenant: String,
    pub edge: Edge,
    pub exchanges: u32,
    pub prompts: u32,
    pub created_at: String,
    pub updated_at: String,
    pub parent: Option<ParentLink>,
    /// 0 for a root; a child is one deeper than its parent, a fork as deep.
    pub depth: u32,
}

/// The session a fork or a child call was opened from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParentLink {
    pub session: String,
    /// A fork's last shared exchange; a child's call point.
    pub at_exchange: u32,
    pub kind: ParentKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParentKind {
    Fork,
    Child,
}

impl ParentKind {
    /// As the `parent_kind` column and the wire spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            ParentKind::Fork => "fork",
            ParentKind::Child => "child",
        }
    }
}

ctxproxy_core::wire_name!(ParentKind: Fork, Child);

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExchangeListing {
    pub id: ExchangeId,
    pub header: String,
    pub summary: String,
    pub at: Option<String>,
    pub outcome: Outcome,
    /// Tokens of the exchange as appended, tool outputs raw.
    pub raw_tokens: u32,
    /// Tokens of the exchange in full (digests for tool results), o200k.
    pub full_tokens: u32,
    pub header_source: String,
    pub summary_source: String,
    /// The exchange that superseded this one (its first), if any.
    pub superseded_by: Option<ExchangeId>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageItem {
    pub id: MessageId,
    /// The message as appended; a tool result's content is its original text.
    pub message: Message,
    pub blob: Option<BlobHash>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlobText {
    pub hash: BlobHash,
    /// The blob as text; empty when it is not UTF-8 (then `raw`).
    pub text: String,
    /// The bytes of a blob that is not UTF-8, exactly as stored.
    pub raw: Option<Vec<u8>>,
    pub bytes: u64,
    pub tokens: u32,
}

/// Whether a session's search takes in the other sessions of its project.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SearchReach {
    Session,
    Project,
}

#[derive(Clone, Debug, PartialEq)]
pub struct SearchHit {
    pub session: String,
    pub exchange: ExchangeId,
    pub header: String,
    /// The words around the best match, from whichever text matched best
    /// (header, summary, or the messages and raw tool output), so that a
    /// model can tell the right exchange before retrieving it.
    pub snippet: String,
    pub score: f64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptRecord {
    pub id: PromptId,
    pub created_at: String,
    pub total_tokens: u32,
    pub record: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Stats {
    pub sessions: u64,
    pub exchanges: u64,
    pub messages: u64,
    pub prompts: u64,
    pub blobs: u64,
    pub blob_files: u64,
    /// Bytes of every distinct blob before compression.
    pub raw_bytes: u64,
    /// Bytes of every distinct blob as stored.
    pub stored_bytes: u64,
    /// Bytes of every tool result appended, duplicates counted each time.
    pub appended_bytes: u64,
    pub duplicate_hits: u64,
    pub database_bytes: u64,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(conn: &'a Connection, blob_dir: &'a Path) -> Reader<'a> {
        Reader { conn, blob_dir }
    }

    pub fn session(&self, id: &str) -> Result<SessionListing> {
        self.conn
            .query_row(
                &format!("{SESSION_COLUMNS} WHERE id = ?1"),
                [id],
                session_row,
            )
            .optional()?
            .ok_or_else(|| StoreError::UnknownSession(id.to_string()))
    }

    pub fn sessions(&self, workspace: Option<&str>) -> Result<Vec<SessionListing>> {
        let mut stmt = self.conn.prepare(&format!(
            "{SESSION_COLUMNS} WHERE ?1 IS NULL OR workspace = ?1 ORDER BY updated_at DESC, id"
        ))?;
        let rows = stmt.query_map([workspace], session_row)?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// The newest `limit` sessions the proxy opened for `tenant` (titled
    /// `title`, when given), newest first.
    pub fn proxied_sessions(
        &self,
        tenant: &str,
        title: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SessionListing>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "{SESSION_COLUMNS} WHERE edge = 'proxy' AND tenant = ?1 AND (?2 IS NULL OR title = ?2)
             ORDER BY updated_at DESC, id LIMIT ?3"
        ))?;
        let rows = stmt.query_map(params![tenant, title, limit as i64], session_row)?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    pub fn exchanges(&self, session: &str, from: u32, limit: u32) -> Result<Vec<ExchangeListing>> {
        self.session(session)?;
        let mut stmt = self.conn.prepare(
            "SELECT seq, header, summary, at, outcome, raw_tokens, full_o200k, header_source, summary_source,
                    superseded_by
             FROM exchanges WHERE session_id = ?1 AND seq >= ?2 ORDER BY seq LIMIT ?3",
        )?;
        let rows = stmt.query_map(params![session, from, limit], |r| {
            Ok(ExchangeListing {
                id: ExchangeId(r.get(0)?),
                header: r.get(1)?,
                summary: r.get(2)?,
                at: r.get(3)?,
                outcome: Outcome::parse(&r.get::<_, String>(4)?).unwrap_or_default(),
                raw_tokens: r.get(5)?,
                full_tokens: r.get(6)?,
                header_source: r.get(7)?,
                summary_source: r.get(8)?,
                superseded_by: r.get::<_, Option<u32>>(9)?.map(ExchangeId),
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    pub fn exchange(&self, session: &str, id: ExchangeId) -> Result<ExchangeListing> {
        self.exchanges(session, id.0, 1)?
            .into_iter()
            .find(|e| e.id == id)
            .ok_or_else(|| StoreError::UnknownId(id.to_string()))
    }

    /// The exchange's messages rendered in full, as the model sees them.
    pub fn exchange_full_text(&self, session: &str, id: ExchangeId) -> Result<String> {
        let kept = load_messages(self.conn, session, id.0)?;
        if kept.is_empty() {
            return Err(StoreError::UnknownId(id.to_string()));
        }
        Ok(kept
            .iter()
            .map(|k| render::message_text(k, Level::Full))
            .collect())
    }

    /// The exchange's messages as stored (tool results as digests).
    pub fn kept_messages(&self, session: &str, id: ExchangeId) -> Result<Vec<KeptMessage>> {
        let kept = load_messages(self.conn, session, id.0)?;
        if kept.is_empty() {
            return Err(StoreError::UnknownId(id.to_string()));
        }
        Ok(kept)
    }

    /// One message exactly as appended (secrets masked when redaction is on).
    pub fn message(&self, session: &str, id: MessageId) -> Result<MessageItem> {
        self.session(session)?;
        let kept = load_messages(self.conn, session, id.exchange.0)?;
        let k = kept
            .into_iter()
            .find(|k| k.id == id)
            .ok_or_else(|| StoreError::UnknownId(id.to_string()))?;
        let mut message = k.message;
        let blob = k.result.map(|r| r.blob);
        if let Some(hash) = &blob {
            (message.content, message.raw) =
                text_or_raw(blob_bytes(self.conn, self.blob_dir, hash)?);
        }
        Ok(MessageItem { id, message, blob })
    }

    /// A blob by any unambiguous hex prefix of 8 to 64 characters,
    /// whichever session stored it: for the store's owner (the CLI), not
    /// for a session's requests (`session_blob`).
    pub fn blob(&self, hex_prefix: &str) -> Result<BlobText> {
        let hash = self.resolve_blob(hex_prefix, None)?;
        self.blob_text(hash)
    }

    /// A blob `session` reaches: one a message of its lineage holds (the
    /// session, the sessions it forked from or was called by, up to its
    /// root). Any other is an unknown id, as if it did not exist.
    pub fn session_blob(&self, session: &str, hex_prefix: &str) -> Result<BlobText> {
        self.session(session)?;
        let hash = self.resolve_blob(hex_prefix, Some(session))?;
        self.blob_text(hash)
    }

    fn blob_text(&self, hash: BlobHash) -> Result<BlobText> {
        let (bytes, tokens): (i64, u32) = self.conn.query_row(
            "SELECT bytes, tokens FROM blobs WHERE hash = ?1",
            [&hash.0[..]],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let bytes = bytes as u64;
        let (text, raw) = text_or_raw(blob_bytes(self.conn, self.blob_dir, &hash)?);
        Ok(BlobText {
            hash,
            text,
            raw,
            bytes,
            tokens,
        })
    }

    /// The blob whose hex starts with `hex_prefix`; with `reach`, among
    /// the blobs that session's lineage holds only.
    fn resolve_blob(&self, hex_prefix: &str, reach: Option<&str>) -> Result<BlobHash> {
        let upper = format!("{hex_prefix}g");
        let found: Vec<String> = match reach {
            None => self
                .conn
                .prepare_cached(
                    "SELECT hex FROM blobs WHERE hex >= ?1 AND hex < ?2 ORDER BY hex LIMIT 3",
                )?
                .query_map(params![hex_prefix, upper], |r| r.get(0))?
                .collect::<std::result::Result<_, _>>()?,
            Some(session) => self
                .conn
                .prepare_cached(
                    "WITH RECURSIVE lineage(id) AS (
                         SELECT ?3
                         UNION SELECT s.parent_id FROM sessions s JOIN lineage l ON s.id = l.id
                         WHERE s.parent_id IS NOT NULL)
                     SELECT b.hex FROM blobs b
                     WHERE b.hex >= ?1 AND b.hex < ?2
                       AND EXISTS (SELECT 1 FROM messages m JOIN lineage l ON m.session_id = l.id
                                   WHERE m.blob_hash = b.hash)
                     ORDER BY b.hex LIMIT 3",
                )?
                .query_map(params![hex_prefix, upper, session], |r| r.get(0))?
                .collect::<std::result::Result<_, _>>()?,
        };
        match found.as_slice() {
            [] => Err(StoreError::UnknownId(format!("b3:{hex_prefix}"))),
            [one] => Ok(BlobHash::from_hex(one).expect("stored hex is valid")),
            many => Err(StoreError::AmbiguousId {
                id: format!("b3:{hex_prefix}"),
                matches: many
                    .iter()
                    .map(|h| format!("b3:{}", &h[..16]))
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    /// Full-text search over headers, summaries and message text, best first.
    /// Exchanges matching `query`, best first: of `session` (with
    /// `SearchReach::Project`, of the other sessions of its tenant's project
    /// too), of a `workspace`, or of every session.
    pub fn search(
        &self,
        session: Option<&str>,
        reach: SearchReach,
        workspace: Option<&str>,
        query: &str,
        limit: u32,
    ) -> Result<Vec<SearchHit>> {
        let Some(fts) = fts_query(query) else {
            return Ok(Vec::new());
        };
        // An exchange's score is its header and summary's plus its body's,
        // each scaled by its own length (`fulltext`). The snippet, computed
        // for the hits kept only, is the body's around the match, or the
        // header and summary's when the body has none of the words.
        let mut stmt = self.conn.prepare(
            "WITH hits(rowid, score) AS (
                 SELECT rowid, -bm25(exchange_gist, 4.0, 2.0) FROM exchange_gist WHERE exchange_gist MATCH ?1
                 UNION ALL
                 SELECT rowid, -bm25(exchange_text) FROM exchange_text WHERE exchange_text MATCH ?1
             ),
             best AS (
                 SELECT e.id, e.session_id, e.seq, e.header, sum(h.score) AS score
                 FROM hits h JOIN exchanges e ON e.id = h.rowid JOIN sessions s ON s.id = e.session_id
                 WHERE (?2 IS NULL OR e.session_id = ?2
                        OR (?6 AND s.workspace != '' AND (s.tenant, s.workspace) =
                            (SELECT tenant, workspace FROM sessions WHERE id = ?2)))
                    AND (?3 IS NULL OR s.workspace = ?3)
                 GROUP BY e.id ORDER BY score DESC, e.session_id, e.seq LIMIT ?4
             )
             SELECT b.session_id, b.seq, b.header, b.score, coalesce(
                 (SELECT snippet(exchange_text, 0, '', '', '…', ?5) FROM exchange_text
                  WHERE exchange_text MATCH ?1 AND rowid = b.id),
                 (SELECT snippet(exchange_gist, -1, '', '', '…', ?5) FROM exchange_gist
                  WHERE exchange_gist MATCH ?1 AND rowid = b.id))
             FROM best b ORDER BY b.score DESC, b.session_id, b.seq",
        )?;
        let rows = stmt.query_map(
            params![
                fts,
                session,
                workspace,
                limit,
                SNIPPET_TOKENS,
                reach == SearchReach::Project
            ],
            |r| {
                Ok(SearchHit {
                    session: r.get(0)?,
                    exchange: ExchangeId(r.get(1)?),
                    header: r.get(2)?,
                    score: r.get(3)?,
                    snippet: text::one_line(&r.get::<_, String>(4)?),
                })
            },
        )?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    pub fn prompt(&self, session: &str, id: PromptId) -> Result<PromptRecord> {
        self.session(session)?;
        self.conn
            .query_row(
                "SELECT seq, created_at, total_tokens, record FROM prompts WHERE session_id = ?1 AND seq = ?2",
                params![session, id.0],
                prompt_row,
            )
            .optional()?
            .ok_or_else(|| StoreError::UnknownId(id.to_string()))
    }

    pub fn prompts(&self, session: &str) -> Result<Vec<PromptRecord>> {
        self.session(session)?;
        let mut stmt = self.conn.prepare(
            "SELECT seq, created_at, total_tokens, record FROM prompts WHERE session_id = ?1 ORDER BY seq",
        )?;
        let rows = stmt.query_map([session], prompt_row)?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Store-wide figures, or one session's (`database_bytes` is always the
    /// whole file's; a session's duplicate hits are its tool results whose
    /// bytes were already stored, by it or another session).
    pub fn stats(&self, session: Option<&str>) -> Result<Stats> {
        if let Some(s) = session {
            self.session(s)?;
        }
        let one = |sql: &str| -> Result<u64> {
            Ok(self
                .conn
                .query_row(sql, [session], |r| r.get::<_, i64>(0))? as u64)
        };
        let pragma = |name: &str| -> Result<u64> {
            Ok(self
                .conn
                .query_row(&format!("PRAGMA {name}"), [], |r| r.get::<_, i64>(0))?
                as u64)
        };
        let (page_count, page_size) = (pragma("page_count")?, pragma("page_size")?);
        const BLOBS: &str = "FROM blobs WHERE (?1 IS NULL OR hash IN \
            (SELECT blob_hash FROM messages WHERE session_id = ?1))";
        Ok(Stats {
            sessions: one("SELECT count(*) FROM sessions WHERE ?1 IS NULL OR id = ?1")?,
            exchanges: one("SELECT count(*) FROM exchanges WHERE ?1 IS NULL OR session_id = ?1")?,
            messages: one("SELECT count(*) FROM messages WHERE ?1 IS NULL OR session_id = ?1")?,
            prompts: one("SELECT count(*) FROM prompts WHERE ?1 IS NULL OR session_id = ?1")?,
            blobs: one(&format!("SELECT count(*) {BLOBS}"))?,
            blob_files: one(&format!("SELECT count(*) {BLOBS} AND data IS NULL"))?,
            raw_bytes: one(&format!("SELECT coalesce(sum(bytes), 0) {BLOBS}"))?,
            stored_bytes: one(&format!("SELECT coalesce(sum(stored_bytes), 0) {BLOBS}"))?,
            appended_bytes: one(
                "SELECT coalesce(sum(b.bytes), 0) FROM messages m JOIN blobs b ON b.hash = m.blob_hash \
                 WHERE ?1 IS NULL OR m.session_id = ?1",
            )?,
            duplicate_hits: match session {
                None => one("SELECT coalesce(sum(duplicate_hits), 0) FROM blobs WHERE ?1 IS NULL")?,
                Some(_) => one(
                    "SELECT (SELECT count(blob_hash) FROM messages WHERE session_id = ?1) \
                     - (SELECT count(*) FROM blobs WHERE first_session = ?1)",
                )?,
            },
            database_bytes: page_count * page_size,
        })
    }
}

/// Records are kept as `blobs::encode` makes them (zstd: they repeat a lot).
fn prompt_row(r: &Row) -> rusqlite::Result<PromptRecord> {
    let stored: Vec<u8> = r.get(3)?;
    let record = blobs::unpack(&stored, PROMPT_RECORD_MAX_BYTES).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(3, rusqlite::types::Type::Blob, e.into())
    })?;
    Ok(PromptRecord {
        id: PromptId(r.get(0)?),
        created_at: r.get(1)?,
        total_tokens: r.get(2)?,
        record: String::from_utf8_lossy(&record).into_owned(),
    })
}

pub(crate) const PROMPT_RECORD_MAX_BYTES: usize = 256 * 1024 * 1024;

const SESSION_COLUMNS: &str =
    "SELECT id, title, workspace, exchange_count, prompt_count, created_at, updated_at, parent_id, fork_at, \
     parent_kind, depth, tenant, edge FROM sessions";

fn session_row(r: &Row) -> rusqlite::Result<SessionListing> {
    let parent: Option<String> = r.get(7)?;
    let fork_at: Option<u32> = r.get(8)?;
    let kind = match r.get::<_, Option<String>>(9)?.as_deref() {
        Some("child") => ParentKind::Child,
        _ => ParentKind::Fork,
    };
    Ok(SessionListing {
        id: r.get(0)?,
        title: r.get(1)?,
        workspace: r.get(2)?,
        exchanges: r.get(3)?,
        prompts: r.get(4)?,
        created_at: r.get(5)?,
        updated_at: r.get(6)?,
        parent: parent.map(|session| ParentLink {
            session,
            at_exchange: fork_at.unwrap_or(0),
            kind,
        }),
        depth: r.get(10)?,
        tenant: r.get(11)?,
        edge: Edge::parse(&r.get::<_, String>(12)?),
    })
}

/// Words of context a search hit's snippet shows around the match (FTS5's
/// limit is 64).
const SNIPPET_TOKENS: i64 = 24;

/// The FTS5 query for a search: any of its words, each quoted (so query
/// syntax in them is text). Filler words ("what", "did", "the") match
/// almost every exchange and only blur the ranking: they are left out
/// unless the query has nothing else. Two telling words side by side
/// ("npm test", "source maps") are also a phrase: an exchange that has
/// them together ranks above one that has them apart (`ctxproxy replay
/// --report` on the recorded sessions: the fact's exchange in the top 3
/// for 52 of 82 facts instead of 49).
fn fts_query(query: &str) -> Option<String> {
    let words: Vec<&str> = query
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let telling = |w: &str| !summary::is_stopword(w);
    let mut terms: Vec<String> = words
        .iter()
        .filter(|w| telling(w))
        .map(|w| format!("\"{w}\""))
        .collect();
    if terms.is_empty() {
        terms = words.iter().map(|w| format!("\"{w}\"")).collect();
    }
    let phrases = words
        .windows(2)
        .filter(|pair| pair.iter().all(|w| telling(w)))
        .map(|pair| format!("\"{} {}\"", pair[0], pair[1]));
    terms.extend(phrases);
    (!terms.is_empty()).then(|| terms.join(" OR "))
}

pub(crate) fn session_exists(conn: &Connection, id: &str) -> Result<bool> {
    Ok(conn
        .query_row("SELECT 1 FROM sessions WHERE id = ?1", [id], |_| Ok(()))
        .optional()?
        .is_some())
}

pub(crate) fn encode_tool_calls(calls: &[ToolCall]) -> String {
    let list: Vec<serde_json::Value> = calls
        .iter()
        .map(|c| serde_json::json!({"id": c.id, "name": c.name, "arguments": c.arguments}))
        .collect();
    serde_json::Value::Array(list).to_string()
}

fn decode_tool_calls(text: &str) -> Vec<ToolCall> {
    let Ok(serde_json::Value::Array(list)) = serde_json::from_str(text) else {
        return Vec::new();
    };
    list.iter()
        .map(|v| ToolCall {
            id: v["id"].as_str().unwrap_or_default().to_string(),
            name: v["name"].as_str().unwrap_or_default().to_string(),
            arguments: v["arguments"].as_str().unwrap_or_default().to_string(),
        })
        .collect()
}

/// The messages of one exchange as kept, in order.
pub(crate) fn load_messages(
    conn: &Connection,
    session: &str,
    seq: u32,
) -> Result<Vec<KeptMessage>> {
    let mut stmt = conn.prepare_cached(&format!(
        "{KEPT_MESSAGE} WHERE m.session_id = ?1 AND m.seq = ?2 ORDER BY m.idx"
    ))?;
    let rows = stmt.query_map(params![session, seq], kept_message)?;
    Ok(rows.collect::<std::result::Result<_, _>>()?)
}

/// The messages of the session's exchanges from `first` on, in order: one
/// range read, where `load_messages` for each exchange seeks each one.
pub(crate) fn load_messages_from(
    conn: &Connection,
    session: &str,
    first: u32,
) -> Result<Vec<KeptMessage>> {
    let mut stmt = conn.prepare_cached(&format!(
        "{KEPT_MESSAGE} WHERE m.session_id = ?1 AND m.seq >= ?2 ORDER BY m.seq, m.idx"
    ))?;
    let rows = stmt.query_map(params![session, first], kept_message)?;
    Ok(rows.collect::<std::result::Result<_, _>>()?)
}

/// A message as kept: the columns `kept_message` reads.
const KEPT_MESSAGE: &str =
    "SELECT m.seq, m.idx, m.role, m.kind, m.content, m.tool_calls, m.tool_call_id, m.name, m.agent,
            m.at, m.tokens, m.blob_hash, m.result_kind, m.result_path, m.headline, b.bytes,
            m.ref_line IS NULL
     FROM messages m LEFT JOIN blobs b ON b.hash = m.blob_hash";

fn kept_message(r: &Row) -> rusqlite::Result<KeptMessage> {
    let role: String = r.get(2)?;
    let kind: Option<String> = r.get(3)?;
    let calls: Option<String> = r.get(5)?;
    let hash: Option<Vec<u8>> = r.get(11)?;
    let content: String = r.get(4)?;
    let result = match hash {
        Some(h) => Some(ToolResult {
            blob: BlobHash(h.try_into().unwrap_or([0; 32])),
            kind: OutputKind::parse(&r.get::<_, String>(12)?).unwrap_or(OutputKind::Generic),
            path: r.get(13)?,
            bytes: r.get::<_, i64>(15)? as u64,
            tokens: r.get(10)?,
            headline: r.get(14)?,
            digest: content.clone(),
            whole: r.get(16)?,
        }),
        None => None,
    };
    Ok(KeptMessage {
        id: MessageId {
            exchange: ExchangeId(r.get(0)?),
            index: r.get(1)?,
        },
        message: Message {
            role: Role::parse(&role).unwrap_or(Role::User),
            content,
            raw: None,
            kind: kind.as_deref().and_then(UserKind::parse),
            tool_calls: calls.as_deref().map(decode_tool_calls).unwrap_or_default(),
            tool_call_id: r.get(6)?,
            name: r.get(7)?,
            agent: r.get(8)?,
            at: r.get(9)?,
        },
        result,
    })
}

/// Stored bytes as text when they are UTF-8, else as the bytes themselves:
/// a blob is returned exactly, never with U+FFFD in place of its bytes.
fn text_or_raw(bytes: Vec<u8>) -> (String, Option<Vec<u8>>) {
    match String::from_utf8(bytes) {
        Ok(text) => (text, None),
        Err(e) => (String::new(), Some(e.into_bytes())),
    }
}

/// The stored header, summary and outcome of an exchange.
pub(crate) fn stored_trio(conn: &Connection, session: &str, seq: u32) -> Result<Trio> {
    Ok(conn.query_row(
        "SELECT header, header_o200k, summary, summary_o200k, outcome, entities FROM exchanges
         WHERE session_id = ?1 AND seq = ?2",
        params![session, seq],
        |r| {
            let entities: String = r.get(5)?;
            Ok(Trio {
                header: Counted {
                    text: r.get(0)?,
                    tokens: r.get(1)?,
                },
                summary: Counted {
                    text: r.get(2)?,
                    tokens: r.get(3)?,
                },
                outcome: Outcome::parse(&r.get::<_, String>(4)?).unwrap_or_default(),
                entities: entities.lines().map(str::to_string).collect(),
            })
        },
    )?)
}

/// A blob's original bytes, verified against its hash.
pub(crate) fn blob_bytes(conn: &Connection, blob_dir: &Path, hash: &BlobHash) -> Result<Vec<u8>> {
    blobs::stored_blob(conn, blob_dir, hash)?.decode()
}

/// A current context as the sessions table keeps it; empty before the
/// first exchange.
pub(crate) fn stored_context(s: &str) -> Result<CurrentContext> {
    if s.is_empty() {
        return Ok(CurrentContext::default());
    }
    CurrentContext::decode(s)
        .map_err(|e| StoreError::Unreadable(format!("stored context unreadable: {e}")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_search_takes_the_telling_words_and_their_pairs() {
        assert_eq!(
            super::fts_query("Why did npm test fail with source maps?").as_deref(),
            Some(
                r#""npm" OR "test" OR "fail" OR "source" OR "maps" OR "npm test" OR "test fail" OR "source maps""#
            )
        );
        assert_eq!(
            super::fts_query("what is it").as_deref(),
            Some(r#""what" OR "is" OR "it""#),
            "filler only: all of it"
        );
        assert_eq!(super::fts_query(" ?! "), None);
    }
}

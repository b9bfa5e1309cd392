//! The request log: one row per model request the proxy forwarded for a
//! session, with what the client sent, what was forwarded and what the
//! provider reported it counted (`Usage`). Written by the writer when a
//! request ends; read by `show-prompt` (a prompt's row) and the proxy's
//! dashboard (a session's rows, every session's sums).

use ctxproxy_core::ids::PromptId;
use ctxproxy_core::usage::Usage;
use rusqlite::{params, OptionalExtension, Row};

use crate::read::Reader;
use crate::time::now_rfc3339;
use crate::writer::Writer;
use crate::Result;

/// One model request, as the proxy logs it.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestLog {
    pub session: String,
    /// The prompt recorded for it; `None` when it was forwarded as sent.
    pub prompt: Option<PromptId>,
    /// The API's name (`openai`, `anthropic`, `responses`, `gemini`).
    pub api: String,
    /// The model the client asked for.
    pub model: String,
    /// How it ended (`ok`, `upstream_error`, …: the proxy's words).
    pub outcome: String,
    /// The tokens of what the client sent, by ctxproxy's count.
    pub client_tokens: u64,
    /// The tokens ctxproxy forwarded, by its count.
    pub forwarded_tokens: u64,
    /// Upstream calls made for it: 1, plus one per context-tool round.
    pub rounds: u32,
    /// What the provider reported, summed over the rounds; `None` when no
    /// reply stated it.
    pub usage: Option<Usage>,
    /// The time ctxproxy itself added, in milliseconds.
    pub added_ms: f64,
}

/// A logged request with when it ended.
#[derive(Clone, Debug, PartialEq)]
pub struct LoggedRequest {
    pub at: String,
    pub request: RequestLog,
}

/// One session's requests summed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionRequests {
    pub session: String,
    pub title: String,
    pub workspace: Option<String>,
    pub requests: u64,
    pub client_tokens: u64,
    pub forwarded_tokens: u64,
    /// Requests whose replies stated a usage.
    pub reported: u64,
    pub usage: Usage,
    /// When its newest request ended.
    pub last_at: String,
}

impl Writer {
    pub fn log_request(&mut self, r: &RequestLog) -> Result<()> {
        let usage = r.usage;
        self.conn.execute(
            "INSERT INTO requests (session_id, prompt_seq, at, api, model, outcome, client_tokens,
                 forwarded_tokens, rounds, input_tokens, cached_input_tokens, cache_write_tokens,
                 output_tokens, added_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            params![
                r.session,
                r.prompt.map(|p| p.0),
                now_rfc3339(),
                r.api,
                r.model,
                r.outcome,
                sql(r.client_tokens),
                sql(r.forwarded_tokens),
                r.rounds,
                usage.map(|u| sql(u.input)),
                usage.map(|u| sql(u.cached_input)),
                usage.map(|u| sql(u.cache_write)),
                usage.map(|u| sql(u.output)),
                r.added_ms,
            ],
        )?;
        Ok(())
    }
}

/// The columns `request_row` reads, and the row id last (for an outer
/// query to order by).
const REQUEST_COLUMNS: &str =
    "SELECT session_id, prompt_seq, at, api, model, outcome, client_tokens,
    forwarded_tokens, rounds, input_tokens, cached_input_tokens, cache_write_tokens, output_tokens,
    added_ms, id FROM requests";

/// A count as SQLite keeps it (a signed 64-bit integer).
fn sql(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn count(r: &Row, i: usize) -> rusqlite::Result<u64> {
    Ok(u64::try_from(r.get::<_, i64>(i)?).unwrap_or(0))
}

fn request_row(r: &Row) -> rusqlite::Result<LoggedRequest> {
    let usage = match r.get::<_, Option<i64>>(9)? {
        None => None,
        Some(_) => Some(Usage {
            input: count(r, 9)?,
            cached_input: count(r, 10)?,
            cache_write: count(r, 11)?,
            output: count(r, 12)?,
        }),
    };
    Ok(LoggedRequest {
        at: r.get(2)?,
        request: RequestLog {
            session: r.get(0)?,
            prompt: r.get::<_, Option<u32>>(1)?.map(PromptId),
            api: r.get(3)?,
            model: r.get(4)?,
            outcome: r.get(5)?,
            client_tokens: count(r, 6)?,
            forwarded_tokens: count(r, 7)?,
            rounds: r.get(8)?,
            usage,
            added_ms: r.get(13)?,
        },
    })
}

impl Reader<'_> {
    /// A session's requests, oldest first.
    pub fn requests(&self, session: &str) -> Result<Vec<LoggedRequest>> {
        self.session(session)?;
        let mut stmt = self.conn.prepare(&format!(
            "{REQUEST_COLUMNS} WHERE session_id = ?1 ORDER BY id"
        ))?;
        let rows = stmt.query_map([session], request_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The newest `limit` requests of every session (of `tenant`'s, when
    /// given), oldest first.
    pub fn recent_requests(&self, limit: u32, tenant: Option<&str>) -> Result<Vec<LoggedRequest>> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT * FROM ({REQUEST_COLUMNS}
                WHERE ?2 IS NULL OR session_id IN (SELECT id FROM sessions WHERE tenant = ?2)
                ORDER BY id DESC LIMIT ?1) ORDER BY id"
        ))?;
        let rows = stmt.query_map(params![limit, tenant], request_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The request a prompt was assembled for, if it was logged.
    pub fn request_of_prompt(
        &self,
        session: &str,
        prompt: PromptId,
    ) -> Result<Option<LoggedRequest>> {
        Ok(self
            .conn
            .query_row(
                &format!("{REQUEST_COLUMNS} WHERE session_id = ?1 AND prompt_seq = ?2"),
                params![session, prompt.0],
                request_row,
            )
            .optional()?)
    }

    /// Every session (of `tenant`, when given) that has logged requests,
    /// its requests summed, the most recently active first.
    pub fn sessions_with_requests(&self, tenant: Option<&str>) -> Result<Vec<SessionRequests>> {
        let mut stmt = self.conn.prepare(
            "SELECT r.session_id, coalesce(s.title, ''), s.workspace, count(*),
                    sum(r.client_tokens), sum(r.forwarded_tokens), count(r.input_tokens),
                    coalesce(sum(r.input_tokens), 0), coalesce(sum(r.cached_input_tokens), 0),
                    coalesce(sum(r.cache_write_tokens), 0), coalesce(sum(r.output_tokens), 0),
                    max(r.at), max(r.id) AS newest
             FROM requests r JOIN sessions s ON s.id = r.session_id
             WHERE ?1 IS NULL OR s.tenant = ?1
             GROUP BY r.session_id ORDER BY newest DESC",
        )?;
        let rows = stmt.query_map([tenant], |r| {
            Ok(SessionRequests {
                session: r.get(0)?,
                title: r.get(1)?,
                workspace: r.get(2)?,
                requests: count(r, 3)?,
                client_tokens: count(r, 4)?,
                forwarded_tokens: count(r, 5)?,
                reported: count(r, 6)?,
                usage: Usage {
                    input: count(r, 7)?,
                    cached_input: count(r, 8)?,
                    cache_write: count(r, 9)?,
                    output: count(r, 10)?,
                },
                last_at: r.get(11)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

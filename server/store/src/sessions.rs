//! Sessions: opening one (a fork copies its parent's history, a child call
//! starts fresh from a query), removing one, and the current context (L0)
//! each keeps.

use std::path::PathBuf;

use ctxproxy_core::context::{self, CurrentContext};
use ctxproxy_core::ids::{BlobHash, ExchangeId};
use ctxproxy_core::secrets::{self, Source};
use ctxproxy_core::summary::ExchangeFacts;
use rusqlite::{params, OptionalExtension};

use crate::cached::{execute_cached, query_row_cached};
use crate::error::StoreError;
use crate::read::{self, session_exists, stored_context, Edge};
use crate::time::now_rfc3339;
use crate::writer::Writer;
use crate::Result;
use crate::{blobs, exchange_row, fulltext};

#[derive(Clone, Debug, Default)]
pub struct NewSession {
    /// The session's project; a fork or child call keeps its parent's
    /// unless given.
    pub workspace: Option<String>,
    /// Whose the session is (`''`: the local user); a fork or child call
    /// is its parent's.
    pub tenant: String,
    /// A fork or child call is its parent's edge's.
    pub edge: Edge,
    pub title: Option<String>,
    /// Fork of this session, sharing its history up to the given exchange
    /// (all of it when `None`); with `child`, the call point instead.
    pub parent: Option<(String, Option<u32>)>,
    /// A recursive call made by `parent`: a session one deeper that shares
    /// none of its history.
    pub child: Option<ChildCall>,
}

/// What a child session is called with (a recursive runtime's `llm_query(query, context)`).
#[derive(Clone, Debug, Default)]
pub struct ChildCall {
    pub query: String,
    pub context: Option<String>,
    /// The configured `maxDepth`: a parent at it makes no further calls.
    pub max_depth: u32,
}

impl Writer {
    pub fn open_session(&mut self, new: NewSession) -> Result<String> {
        let now = now_rfc3339();
        let id = self.fresh_session_id(&now)?;
        if new.child.is_some() && new.parent.is_none() {
            return Err(StoreError::Invalid(
                "child: a child call needs `parent` (the session making the call)".into(),
            ));
        }
        let (parent, fork_at, depth, workspace, objective, tenant, edge) = match &new.parent {
            None => (
                None,
                None,
                0,
                new.workspace.clone().unwrap_or_default(),
                None,
                new.tenant.clone(),
                new.edge.as_str().to_string(),
            ),
            Some((pid, at)) => {
                #[allow(clippy::type_complexity)]
                let (count, depth, ws, context, tenant, edge): (
                    u32,
                    u32,
                    String,
                    String,
                    String,
                    String,
                ) = self
                    .conn
                    .query_row(
                        "SELECT exchange_count, depth, workspace, context_current, tenant, edge
                         FROM sessions WHERE id = ?1",
                        [pid],
                        |r| {
                            Ok((
                                r.get(0)?,
                                r.get(1)?,
                                r.get(2)?,
                                r.get(3)?,
                                r.get(4)?,
                                r.get(5)?,
                            ))
                        },
                    )
                    .optional()?
                    .ok_or_else(|| StoreError::UnknownSession(pid.clone()))?;
                let at = at.unwrap_or(count);
                if at > count {
                    let doing = match new.child {
                        Some(_) => "call at",
                        None => "fork at",
                    };
                    return Err(StoreError::Invalid(format!(
                        "parent.atExchange: session {pid} has {count} exchanges, cannot {doing} x{at}"
                    )));
                }
                let depth = match &new.child {
                    None => depth,
                    Some(call) if depth >= call.max_depth => {
                        return Err(StoreError::Invalid(format!(
                            "parent.sessionId: session {pid} is at depth {depth}; a session at depth {depth} {} maxDepth {} makes no further calls",
                            if depth == call.max_depth { "=" } else { ">" },
                            call.max_depth
                        )))
                    }
                    Some(_) => depth + 1,
                };
                (
                    Some(pid.clone()),
                    Some(at),
                    depth,
                    new.workspace.clone().unwrap_or(ws),
                    Some(stored_context(&context)?.objective),
                    tenant,
                    edge,
                )
            }
        };
        let kind = parent.as_ref().map(|_| match new.child {
            Some(_) => "child",
            None => "fork",
        });
        // Kept as messages are: secrets masked, the query as conversation,
        // the context as the data (files, outputs) it is.
        let masked = |text: &str, source| match self.settings.redact_secrets {
            true => secrets::mask(text, source).text.into_owned(),
            false => text.to_string(),
        };
        let (query, context, objective) = match &new.child {
            Some(call) => (
                Some(masked(&call.query, Source::Conversation)),
                call.context
                    .as_deref()
                    .map(|c| masked(c, Source::ToolOutput)),
                objective,
            ),
            None => (None, None, None),
        };
        self.conn.execute(
            "INSERT INTO sessions (id, workspace, title, parent_id, fork_at, depth, created_at, updated_at,
                 parent_kind, call_query, call_context, call_objective, tenant, edge)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            params![
                id,
                workspace,
                new.title.clone().unwrap_or_default(),
                parent,
                fork_at,
                depth,
                now,
                kind,
                query,
                context,
                objective,
                tenant,
                edge
            ],
        )?;
        if let (Some(parent), Some(at), None) = (parent, fork_at, &new.child) {
            self.copy_history(&parent, &id, at)?;
        }
        Ok(id)
    }

    /// The store's secret `name`: 32 random bytes, made on first use
    /// (SQLite's `randomblob`, from the operating system's randomness) and
    /// the same for every process on the store from then on.
    pub fn store_secret(&mut self, name: &str) -> Result<[u8; 32]> {
        self.conn.execute(
            "INSERT OR IGNORE INTO store_secrets (name, value) VALUES (?1, randomblob(32))",
            [name],
        )?;
        let value: Vec<u8> = self.conn.query_row(
            "SELECT value FROM store_secrets WHERE name = ?1",
            [name],
            |r| r.get(0),
        )?;
        <[u8; 32]>::try_from(value.as_slice()).map_err(|_| {
            StoreError::Unreadable(format!(
                "store secret {name}: {} bytes, not 32",
                value.len()
            ))
        })
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
        fulltext::copy_to_fork(c, parent, child)?;
        let mut base = CurrentContext::default();
        let mut current = CurrentContext::default();
        for seq in 1..=at {
            base = current;
            let msgs = read::load_messages(c, child, seq)?;
            let trio = read::stored_trio(c, child, seq)?;
            current = context::advance(&base, ExchangeId(seq), &ExchangeFacts::of(&msgs), &trio);
        }
        c.execute(
            "UPDATE sessions SET exchange_count = ?2 WHERE id = ?1",
            params![child, at],
        )?;
        self.save_context(child, &base, &current)
    }

    pub(crate) fn session_state(
        &self,
        session: &str,
    ) -> Result<(u32, CurrentContext, CurrentContext)> {
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

    pub(crate) fn save_context(
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
                "SELECT hash, data IS NULL FROM blobs WHERE first_session = ?1 AND NOT EXISTS \
                 (SELECT 1 FROM messages m WHERE m.blob_hash = blobs.hash AND m.session_id != ?1)",
            )?;
            let rows = stmt.query_map([session], |r| {
                Ok((r.get::<_, Vec<u8>>(0)?, r.get::<_, bool>(1)?))
            })?;
            rows.collect::<rusqlite::Result<Vec<_>>>()?
        };
        fulltext::remove_session(c, session)?;
        for table in ["messages", "exchanges", "file_reads", "prompts", "requests"] {
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
}

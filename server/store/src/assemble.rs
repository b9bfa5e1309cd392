//! `assemble`: the session's view handed to a packing closure, and the
//! prompt it returns recorded under the next `p<N>` (or only previewed).

use ctxproxy_core::config::LayerCaps;
use ctxproxy_core::ids::PromptId;
use ctxproxy_core::packer;
use ctxproxy_core::tokens::Encoding;
use ctxproxy_core::view::SessionView;
use rusqlite::params;

use crate::blobs;
use crate::read;
use crate::time::now_rfc3339;
use crate::writer::Writer;
use crate::Result;

/// Whether an assembled prompt is recorded (`ctx/assemble`) or only looked
/// at (the proxy's `count_tokens`: the prompt the next assemble would give).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    Record,
    Preview,
}

impl Writer {
    /// Builds the session's view for `encoding` and lets `pack` turn it into
    /// a prompt; with `Keep::Record`, records that prompt under the next
    /// `p<N>`. When `pack` refuses (a budget too small, say), nothing is
    /// recorded.
    pub fn assemble<T, E>(
        &mut self,
        session: &str,
        encoding: Encoding,
        keep: Keep,
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
        if keep == Keep::Preview {
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

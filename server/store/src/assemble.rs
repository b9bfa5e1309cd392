//! `assemble`: the session's view handed to a packing closure, and the
//! prompt record it returns stored under the next `p<N>` (or only
//! previewed).

use ctxproxy_core::config::LayerCaps;
use ctxproxy_core::exchange_record;
use ctxproxy_core::ids::{ExchangeId, PromptId};
use ctxproxy_core::packer;
use ctxproxy_core::render;
use ctxproxy_core::tokens::{self, Encoding};
use ctxproxy_core::view::SessionView;
use rusqlite::{params, OptionalExtension};
use serde::Serialize;

use crate::blobs;
use crate::cached::execute_cached;
use crate::memory;
use crate::prompt_record::PackedRecord;
use crate::read;
use crate::recall;
use crate::session_view::view_span;
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
    /// Builds the session's view for `encoding` with the caps of `budget`
    /// and the recall block's hits for `question` (the text of an input
    /// that opens a new exchange; `None`: the newest exchange's, while it is
    /// open), and lets `pack` turn it into a prompt's record; with
    /// `Keep::Record`, stores that record (as JSON, `PackedRecord::to_json`)
    /// under the next `p<N>`, and returns it either way: `pack` runs in the
    /// write transaction, so it only packs, and the caller formats the
    /// record once the job has returned. When `pack` refuses (a budget too
    /// small, say), nothing is recorded.
    #[allow(clippy::too_many_arguments)]
    pub fn assemble<F: Serialize, S: Serialize, E>(
        &mut self,
        session: &str,
        encoding: Encoding,
        budget: u32,
        question: Option<&str>,
        keep: Keep,
        pack: impl FnOnce(
            PromptId,
            &SessionView,
            &LayerCaps,
        ) -> std::result::Result<AssembledPrompt<F, S>, E>,
    ) -> Result<std::result::Result<PackedRecord<F, S>, E>> {
        let caps = self.settings.layers.caps(budget);
        // An unknown session has none: `session_view` says it is unknown.
        let count: u32 = self
            .conn
            .query_row(
                "SELECT exchange_count FROM sessions WHERE id = ?1",
                [session],
                |r| r.get(0),
            )
            .optional()?
            .unwrap_or(0);
        let window = packer::view_len(&caps, budget, count, |older| {
            // Either encoding's count, whichever is larger: the other may
            // not be counted yet (NULL, which SQLite's max() would return
            // whatever the other count), and the packer checks the loaded
            // view exactly.
            self.conn.query_row(
                "SELECT COALESCE(SUM(MAX(COALESCE(full_o200k, 0), COALESCE(full_cl100k, 0))), 0)
                 FROM exchanges
                 WHERE session_id = ?1 AND seq <= ?2",
                params![session, older],
                |r| r.get::<_, i64>(0).map(|n| n as u64),
            )
        })?;
        self.count_for_view(session, encoding, &caps, window)?;
        self.kept.check(&self.conn)?;
        let view = self
            .kept
            .view
            .view(&self.conn, session, encoding, &caps, window)?;
        // The question both recall blocks answer, read once.
        let asked = recall::question_for(&self.conn, session, view.exchange_count, question)?;
        view.recall = recall::recall(
            &self.conn,
            &self.blob_dir,
            &mut self.kept.counts,
            session,
            asked.as_ref(),
            &caps,
            encoding,
        )?;
        view.memory = match self.settings.memory {
            true => memory::project_memory(
                &self.conn,
                &self.blob_dir,
                &mut self.standing,
                &mut self.kept.counts,
                session,
                asked.as_ref().map(|(_, q)| q.as_str()),
                &caps,
                encoding,
            )?,
            false => Default::default(),
        };
        let prompt_count: u32 = self.conn.query_row(
            "SELECT prompt_count FROM sessions WHERE id = ?1",
            [session],
            |r| r.get(0),
        )?;
        let id = PromptId(prompt_count + 1);
        let assembled = match pack(id, view, &caps) {
            Ok(a) => a,
            Err(e) => return Ok(Err(e)),
        };
        if keep == Keep::Preview {
            return Ok(Ok(assembled.record));
        }
        let headers: Vec<String> = assembled.headers.iter().map(|x| x.0.to_string()).collect();
        self.conn.execute(
            "INSERT INTO prompts (session_id, seq, created_at, total_tokens, record, headers)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                session,
                id.0,
                now_rfc3339(),
                assembled.record.total,
                blobs::encode(assembled.record.to_json().as_bytes()),
                headers.join(" ")
            ],
        )?;
        self.conn.execute(
            "UPDATE sessions SET prompt_count = ?2 WHERE id = ?1",
            params![session, id.0],
        )?;
        self.kept.prompt_recorded(&self.conn)?;
        Ok(Ok(assembled.record))
    }

    /// Counts in `encoding` what the session's view (`session_view`)
    /// shows and ingest left uncounted (`exchange_record::counted_at_ingest`), and
    /// stores the counts: the header lines it may list, the exchanges of its
    /// window, and the reference lines it may choose from. The counts are
    /// those ingest would have taken; each is taken once per store.
    fn count_for_view(
        &mut self,
        session: &str,
        encoding: Encoding,
        caps: &LayerCaps,
        window: u32,
    ) -> Result<()> {
        if Encoding::ALL
            .iter()
            .all(|&ingest| exchange_record::counted_at_ingest(encoding, ingest))
        {
            return Ok(());
        }
        let e = encoding.as_str().trim_end_matches("_base");
        let count: Option<u32> = self
            .conn
            .query_row(
                "SELECT exchange_count FROM sessions WHERE id = ?1",
                [session],
                |r| r.get(0),
            )
            .optional()?;
        // An unknown session is the view's to report.
        let Some(count) = count else {
            return Ok(());
        };
        let (first_header, first_window) = view_span(count, caps, window);

        let lines: Vec<(u32, String)> = self
            .conn
            .prepare_cached(&format!(
                "SELECT seq, header_line FROM exchanges
                 WHERE session_id = ?1 AND seq >= ?2 AND line_{e} IS NULL"
            ))?
            .query_map(params![session, first_header], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })?
            .collect::<std::result::Result<_, _>>()?;
        for (seq, line) in lines {
            execute_cached(
                &self.conn,
                &format!("UPDATE exchanges SET line_{e} = ?3 WHERE session_id = ?1 AND seq = ?2"),
                params![session, seq, tokens::count(encoding, &line)],
            )?;
        }

        let exchanges: Vec<(u32, String, String)> = self
            .conn
            .prepare_cached(&format!(
                "SELECT seq, header, summary FROM exchanges
                 WHERE session_id = ?1 AND seq >= ?2 AND (header_{e} IS NULL OR summary_{e} IS NULL
                    OR full_{e} IS NULL OR digests_{e} IS NULL)"
            ))?
            .query_map(params![session, first_window], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?
            .collect::<std::result::Result<_, _>>()?;
        for (seq, header, summary) in exchanges {
            let kept = read::load_messages(&self.conn, session, seq)?;
            let levels = render::exchange_tokens(&kept, encoding);
            execute_cached(
                &self.conn,
                &format!(
                    "UPDATE exchanges SET header_{e} = ?3, summary_{e} = ?4, full_{e} = ?5, digests_{e} = ?6
                     WHERE session_id = ?1 AND seq = ?2"
                ),
                params![
                    session,
                    seq,
                    tokens::count(encoding, &header),
                    tokens::count(encoding, &summary),
                    levels.full,
                    levels.digests
                ],
            )?;
        }

        // The view takes the newest reference lines up to a horizon at or
        // after its window's first exchange: those of the window, and the
        // newest it may take before it.
        let references: Vec<(u32, u32, String)> = self
            .conn
            .prepare_cached(&format!(
                "SELECT seq, idx, ref_line FROM messages
                 WHERE session_id = ?1 AND ref_line IS NOT NULL AND ref_{e} IS NULL AND seq >= ?2
                 UNION ALL
                 SELECT seq, idx, ref_line FROM (
                    SELECT seq, idx, ref_line, ref_{e} FROM messages
                    WHERE session_id = ?1 AND ref_line IS NOT NULL AND seq < ?2
                    ORDER BY seq DESC, idx DESC LIMIT ?3)
                 WHERE ref_{e} IS NULL"
            ))?
            .query_map(
                params![session, first_window, caps.max_references * 4],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?
            .collect::<std::result::Result<_, _>>()?;
        for (seq, idx, line) in references {
            execute_cached(
                &self.conn,
                &format!(
                    "UPDATE messages SET ref_{e} = ?4 WHERE session_id = ?1 AND seq = ?2 AND idx = ?3"
                ),
                params![session, seq, idx, tokens::count(encoding, &line)],
            )?;
        }
        Ok(())
    }
}

/// What a packing closure hands back: the record kept for `ctx/explain`,
/// which is what `assemble` returns.
pub struct AssembledPrompt<F, S> {
    pub record: PackedRecord<F, S>,
    /// The exchanges the prompt shows as header lines
    /// (`PackedPrompt::header_lines_shown`): the next appends keep their
    /// headers as this prompt showed them (`append/early_headers`).
    pub headers: Vec<ExchangeId>,
}

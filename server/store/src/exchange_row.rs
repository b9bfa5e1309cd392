//! The one writer of an exchange's row: its record (`core::exchange_record`) under
//! one column list, whether the row is new, rewritten or copied to a fork.

use ctxproxy_core::exchange_record::{CountedText, ExchangeRecord};
use ctxproxy_core::ids::ExchangeId;
use ctxproxy_core::render;
use ctxproxy_core::tokens::Encoding;
use rusqlite::{params, Connection};

use crate::cached::execute_cached;
use crate::fulltext::{self, Gist};
use crate::Result;

/// The columns an exchange's record fills, in the order `write` binds them
/// (after session, seq and date).
const RECORD_COLUMNS: &str = "header, summary, outcome, entities, header_line, \
    header_o200k, header_cl100k, summary_o200k, summary_cl100k, line_o200k, line_cl100k, \
    full_o200k, full_cl100k, digests_o200k, digests_cl100k, raw_tokens, terms";

/// Inserts or rewrites exchange `seq`'s row. A rewritten row keeps its date
/// and whose texts it shows (`header_source`, `summary_source`); counts in
/// an encoding the record has none in are NULL until a prompt asks for it
/// (`session_view`).
pub(crate) fn write(
    conn: &Connection,
    session: &str,
    seq: u32,
    at: Option<&str>,
    r: &ExchangeRecord,
    terms: &[String],
    raw_tokens: u32,
) -> Result<()> {
    let updates: Vec<String> = RECORD_COLUMNS
        .split(',')
        .map(|c| format!("{0} = excluded.{0}", c.trim()))
        .collect();
    let sql = format!(
        "INSERT INTO exchanges (session_id, seq, at, {RECORD_COLUMNS})
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)
         ON CONFLICT (session_id, seq) DO UPDATE SET {}",
        updates.join(", ")
    );
    execute_cached(
        conn,
        &sql,
        params![
            session,
            seq,
            at,
            r.trio.header.text,
            r.trio.summary.text,
            r.trio.outcome.as_str(),
            r.trio.entities.join("\n"),
            r.line.text,
            r.header.o200k,
            r.header.cl100k,
            r.summary.o200k,
            r.summary.cl100k,
            r.line.tokens.o200k,
            r.line.tokens.cl100k,
            r.levels.o200k.map(|l| l.full),
            r.levels.cl100k.map(|l| l.full),
            r.levels.o200k.map(|l| l.digests),
            r.levels.cl100k.map(|l| l.digests),
            raw_tokens,
            terms.join("\n"),
        ],
    )?;
    Ok(())
}

/// Who wrote an exchange's header or summary: the extractive summariser
/// at append, or a model through `ctx/housekeeping` (whose text later
/// appends keep).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextSource {
    Extractive,
    Model,
}

impl TextSource {
    /// As the `header_source` / `summary_source` columns and the wire spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            TextSource::Extractive => "extractive",
            TextSource::Model => "model",
        }
    }
}

ctxproxy_core::wire_name!(TextSource: Extractive, Model);

/// Replaces exchange `seq`'s header, its L2 line and their counts (in the
/// encodings ingest in `ingest` counts in, as `write` stores them: another
/// encoding's tables are not loaded for it), and the header of its
/// full-text row; `source` says who wrote it. Its caller forgets the
/// writer's standing section (`memory::StandingSection`), which reads
/// headers.
pub(crate) fn write_header(
    conn: &Connection,
    session: &str,
    seq: u32,
    text: &str,
    source: TextSource,
    ingest: Encoding,
) -> Result<()> {
    let header = CountedText::at_ingest(text.to_string(), ingest);
    let line = CountedText::at_ingest(render::header_line(ExchangeId(seq), &header.text), ingest);
    execute_cached(
        conn,
        "UPDATE exchanges SET header = ?3, header_source = ?4, header_line = ?5,
            header_o200k = ?6, header_cl100k = ?7, line_o200k = ?8, line_cl100k = ?9
         WHERE session_id = ?1 AND seq = ?2",
        params![
            session,
            seq,
            header.text,
            source.as_str(),
            line.text,
            header.tokens.o200k,
            header.tokens.cl100k,
            line.tokens.o200k,
            line.tokens.cl100k
        ],
    )?;
    fulltext::rewrite(conn, session, seq, Gist::Header, &header.text)
}

/// Copies the rows of `parent`'s exchanges up to `at` to the fork `child`.
/// A supersession is kept only when its superseder is shared too: in the
/// fork, the exchanges after `at` are the fork's own.
pub(crate) fn copy(conn: &Connection, parent: &str, child: &str, at: u32) -> Result<()> {
    conn.execute(
        &format!(
            "INSERT INTO exchanges (session_id, seq, at, header_source, summary_source, superseded_by, {RECORD_COLUMNS})
             SELECT ?2, seq, at, header_source, summary_source,
                    CASE WHEN superseded_by <= ?3 THEN superseded_by END, {RECORD_COLUMNS}
             FROM exchanges WHERE session_id = ?1 AND seq <= ?3 ORDER BY seq"
        ),
        params![parent, child, at],
    )?;
    Ok(())
}

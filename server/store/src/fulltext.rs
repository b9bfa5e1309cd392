//! The only writer of the full-text index, two FTS5 tables keyed by the
//! exchange's row id: `exchange_gist(header, summary)` and
//! `exchange_text(body)`, the text of every message, tool calls and outputs.
//!
//! Two tables, not one, because FTS5's `bm25` scales a row's score down by
//! the row's whole length: in one table a header's words counted for less
//! the longer the exchange's tool output was, so an exchange that read a
//! large file or ran a noisy build ranked under a short one that only
//! mentioned the words (`read::search` adds the two scores;
//! docs/ASSEMBLY.md, "What search misses"). A header or summary written
//! again also rewrites only its short row, not the body's.

use rusqlite::{params, Connection};

use crate::cached::execute_cached;
use crate::Result;

/// Indexes exchange `rowid` anew.
pub(crate) fn index(
    conn: &Connection,
    rowid: i64,
    header: &str,
    summary: &str,
    body: &str,
) -> Result<()> {
    execute_cached(conn, "DELETE FROM exchange_gist WHERE rowid = ?1", [rowid])?;
    execute_cached(conn, "DELETE FROM exchange_text WHERE rowid = ?1", [rowid])?;
    execute_cached(
        conn,
        "INSERT INTO exchange_gist (rowid, header, summary) VALUES (?1, ?2, ?3)",
        params![rowid, header, summary],
    )?;
    execute_cached(
        conn,
        "INSERT INTO exchange_text (rowid, body) VALUES (?1, ?2)",
        params![rowid, body],
    )?;
    Ok(())
}

/// The text of an exchange's gist row that is written again.
pub(crate) enum Gist {
    /// A header revised or written by the model.
    Header,
    /// A summary written by the model.
    Summary,
}

/// Replaces one text of exchange `seq`'s gist row.
pub(crate) fn rewrite(
    conn: &Connection,
    session: &str,
    seq: u32,
    which: Gist,
    text: &str,
) -> Result<()> {
    let sql = match which {
        Gist::Header => {
            "UPDATE exchange_gist SET header = ?3
             WHERE rowid = (SELECT id FROM exchanges WHERE session_id = ?1 AND seq = ?2)"
        }
        Gist::Summary => {
            "UPDATE exchange_gist SET summary = ?3
             WHERE rowid = (SELECT id FROM exchanges WHERE session_id = ?1 AND seq = ?2)"
        }
    };
    execute_cached(conn, sql, params![session, seq, text])?;
    Ok(())
}

/// The rows of the fork `child`'s exchanges, copied from the `parent`'s
/// with the same sequence numbers.
pub(crate) fn copy_to_fork(conn: &Connection, parent: &str, child: &str) -> Result<()> {
    const PAIRS: &str = "FROM exchanges child
         JOIN exchanges par ON par.session_id = ?1 AND par.seq = child.seq";
    conn.execute(
        &format!(
            "INSERT INTO exchange_gist (rowid, header, summary)
             SELECT child.id, t.header, t.summary {PAIRS}
             JOIN exchange_gist t ON t.rowid = par.id WHERE child.session_id = ?2"
        ),
        params![parent, child],
    )?;
    conn.execute(
        &format!(
            "INSERT INTO exchange_text (rowid, body)
             SELECT child.id, t.body {PAIRS}
             JOIN exchange_text t ON t.rowid = par.id WHERE child.session_id = ?2"
        ),
        params![parent, child],
    )?;
    Ok(())
}

/// The rows of every exchange of `session`, before its exchanges go.
pub(crate) fn remove_session(conn: &Connection, session: &str) -> Result<()> {
    for table in ["exchange_gist", "exchange_text"] {
        conn.execute(
            &format!(
                "DELETE FROM {table} WHERE rowid IN (SELECT id FROM exchanges WHERE session_id = ?1)"
            ),
            [session],
        )?;
    }
    Ok(())
}

/// The statements that copy `session`'s rows from the attached store `old`
/// into this one (`maintenance::salvage`), each with the session as `?1`.
pub(crate) const SALVAGE: [&str; 2] = [
    "INSERT INTO main.exchange_gist (rowid, header, summary) \
     SELECT rowid, header, summary FROM old.exchange_gist \
     WHERE rowid IN (SELECT id FROM old.exchanges WHERE session_id = ?1)",
    "INSERT INTO main.exchange_text (rowid, body) \
     SELECT rowid, body FROM old.exchange_text \
     WHERE rowid IN (SELECT id FROM old.exchanges WHERE session_id = ?1)",
];

//! Statements the connection keeps prepared: ingest runs the same dozen
//! statements for every message.

use rusqlite::{Connection, Params};

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
pub(crate) fn query_row_cached<T>(
    conn: &Connection,
    sql: &str,
    params: impl Params,
    f: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    conn.prepare_cached(sql)?.query_row(params, f)
}

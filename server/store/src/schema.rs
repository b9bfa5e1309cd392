//! The database schema, as an ordered list of migrations. Append new ones;
//! never edit a migration that has shipped.

use rusqlite::Connection;
use rusqlite_migration::{Migrations, M};

const MIGRATIONS: &[M<'static>] = &[
    M::up(
        r#"
CREATE TABLE sessions (
    id            TEXT PRIMARY KEY,
    workspace     TEXT NOT NULL DEFAULT '',
    title         TEXT NOT NULL DEFAULT '',
    parent_id     TEXT REFERENCES sessions(id),
    fork_at       INTEGER,
    depth         INTEGER NOT NULL DEFAULT 0,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    exchange_count INTEGER NOT NULL DEFAULT 0,
    prompt_count  INTEGER NOT NULL DEFAULT 0,
    -- L0: the context of all exchanges before the open one, the context with
    -- it, and the rendered block with its token counts.
    context_base    TEXT NOT NULL DEFAULT '',
    context_current TEXT NOT NULL DEFAULT '',
    l0_text       TEXT NOT NULL DEFAULT '',
    l0_o200k      INTEGER NOT NULL DEFAULT 0,
    l0_cl100k     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_by_workspace ON sessions(workspace, updated_at);

CREATE TABLE exchanges (
    id            INTEGER PRIMARY KEY,
    session_id    TEXT NOT NULL REFERENCES sessions(id),
    seq           INTEGER NOT NULL,
    at            TEXT,
    header        TEXT NOT NULL,
    header_source TEXT NOT NULL DEFAULT 'extractive',
    summary       TEXT NOT NULL,
    summary_source TEXT NOT NULL DEFAULT 'extractive',
    outcome       TEXT NOT NULL,
    entities      TEXT NOT NULL DEFAULT '',
    header_line   TEXT NOT NULL,
    header_o200k  INTEGER NOT NULL, header_cl100k  INTEGER NOT NULL,
    summary_o200k INTEGER NOT NULL, summary_cl100k INTEGER NOT NULL,
    line_o200k    INTEGER NOT NULL, line_cl100k    INTEGER NOT NULL,
    full_o200k    INTEGER NOT NULL, full_cl100k    INTEGER NOT NULL,
    digests_o200k INTEGER NOT NULL, digests_cl100k INTEGER NOT NULL,
    raw_tokens    INTEGER NOT NULL,
    UNIQUE (session_id, seq)
);

CREATE TABLE blobs (
    hash          BLOB PRIMARY KEY,
    hex           TEXT NOT NULL UNIQUE,
    bytes         INTEGER NOT NULL,
    stored_bytes  INTEGER NOT NULL,
    -- NULL when the blob lives in a file under blobs/.
    data          BLOB,
    tokens        INTEGER NOT NULL,
    first_session TEXT NOT NULL,
    first_message TEXT NOT NULL,
    duplicate_hits INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE messages (
    session_id    TEXT NOT NULL REFERENCES sessions(id),
    seq           INTEGER NOT NULL,
    idx           INTEGER NOT NULL,
    role          TEXT NOT NULL,
    kind          TEXT,
    -- The message text; for a tool result, its digest (raw bytes in the blob).
    content       TEXT NOT NULL,
    tool_calls    TEXT,
    tool_call_id  TEXT,
    name          TEXT,
    agent         TEXT,
    at            TEXT,
    tokens        INTEGER NOT NULL,
    blob_hash     BLOB REFERENCES blobs(hash),
    result_kind   TEXT,
    result_path   TEXT,
    headline      TEXT,
    ref_line      TEXT,
    ref_o200k     INTEGER, ref_cl100k INTEGER,
    PRIMARY KEY (session_id, seq, idx)
) WITHOUT ROWID;
CREATE INDEX messages_by_blob ON messages(session_id, blob_hash) WHERE blob_hash IS NOT NULL;

-- The last read of each path, for "unchanged since xN" digests.
CREATE TABLE file_reads (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    path       TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    hash       BLOB NOT NULL,
    PRIMARY KEY (session_id, path)
) WITHOUT ROWID;

CREATE TABLE prompts (
    session_id TEXT NOT NULL REFERENCES sessions(id),
    seq        INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    total_tokens INTEGER NOT NULL,
    record     TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;

-- Full-text index over each exchange: rowid = exchanges.id.
CREATE VIRTUAL TABLE exchange_text USING fts5(header, summary, body, tokenize = 'unicode61');
"#,
    ),
    // L0 is rendered at assemble, leaving out what the prompt shows in full.
    M::up(
        r#"
ALTER TABLE sessions DROP COLUMN l0_text;
ALTER TABLE sessions DROP COLUMN l0_o200k;
ALTER TABLE sessions DROP COLUMN l0_cl100k;
"#,
    ),
    // The words each exchange's header may carry (`ExchangeFacts::terms`,
    // one a line), so that the next headers can leave out what many
    // exchanges say. Exchanges stored before have none.
    M::up("ALTER TABLE exchanges ADD COLUMN terms TEXT NOT NULL DEFAULT '';"),
    // Search matches words by their stem (Porter): a question about the
    // "ports" a test "printed" finds the exchange that says "port" and
    // "prints".
    M::up(
        r#"
CREATE VIRTUAL TABLE exchange_text_stemmed USING fts5(header, summary, body, tokenize = 'porter unicode61');
INSERT INTO exchange_text_stemmed (rowid, header, summary, body) SELECT rowid, header, summary, body FROM exchange_text;
DROP TABLE exchange_text;
ALTER TABLE exchange_text_stemmed RENAME TO exchange_text;
"#,
    ),
    // An exchange that replaces the state earlier ones built (`supersedes`)
    // is recorded on each of them: the superseder's seq, its first one.
    M::up("ALTER TABLE exchanges ADD COLUMN superseded_by INTEGER;"),
    // Recursive calls: a session opened by another is a 'fork'
    // (it shares the history up to `fork_at`) or a 'child' (a call made
    // after `fork_at`: none of the history, only the query and context
    // kept here, and the parent's objective when it called). A fork is as
    // deep as its parent; only a child is one deeper. Every session with a
    // parent so far is a fork, and so every session is at depth 0.
    M::up(
        r#"
ALTER TABLE sessions ADD COLUMN parent_kind TEXT CHECK (parent_kind IN ('fork', 'child'));
ALTER TABLE sessions ADD COLUMN call_query TEXT;
ALTER TABLE sessions ADD COLUMN call_context TEXT;
ALTER TABLE sessions ADD COLUMN call_objective TEXT;
UPDATE sessions SET parent_kind = 'fork' WHERE parent_id IS NOT NULL;
UPDATE sessions SET depth = 0;
"#,
    ),
    // Ingest counts in o200k and the ingest encoding only; an exchange's
    // cl100k counts are NULL until the first cl100k prompt that shows it
    // counts them (`session_view`). Counts stored before are dropped
    // and counted again the same way when asked for.
    M::up(
        r#"
ALTER TABLE exchanges DROP COLUMN header_cl100k;
ALTER TABLE exchanges DROP COLUMN summary_cl100k;
ALTER TABLE exchanges DROP COLUMN line_cl100k;
ALTER TABLE exchanges DROP COLUMN full_cl100k;
ALTER TABLE exchanges DROP COLUMN digests_cl100k;
ALTER TABLE exchanges ADD COLUMN header_cl100k INTEGER;
ALTER TABLE exchanges ADD COLUMN summary_cl100k INTEGER;
ALTER TABLE exchanges ADD COLUMN line_cl100k INTEGER;
ALTER TABLE exchanges ADD COLUMN full_cl100k INTEGER;
ALTER TABLE exchanges ADD COLUMN digests_cl100k INTEGER;
"#,
    ),
    // Every assemble reads the supersessions the prompt can show
    // (`superseded_by >= the oldest exchange shown`): without an index that
    // scans all of a session's exchanges (30-50 ms at 100,000 of them). Few
    // exchanges are superseded, so the index holds only those.
    M::up(
        "CREATE INDEX exchanges_superseded ON exchanges(session_id, superseded_by)
         WHERE superseded_by IS NOT NULL;",
    ),
    // The exchanges a prompt shows as header lines (sequence numbers,
    // space-separated): their headers stay as shown (`append/early_headers`).
    // NULL for a prompt recorded before: not known.
    M::up("ALTER TABLE prompts ADD COLUMN headers TEXT;"),
    // The full-text index in two tables (`fulltext`): FTS5's bm25 scales a
    // row down by its whole length, so in one table a header's words
    // counted for less the longer the exchange's tool output was.
    M::up(
        r#"
CREATE VIRTUAL TABLE exchange_gist USING fts5(header, summary, tokenize = 'porter unicode61');
INSERT INTO exchange_gist (rowid, header, summary) SELECT rowid, header, summary FROM exchange_text;
CREATE VIRTUAL TABLE exchange_body USING fts5(body, tokenize = 'porter unicode61');
INSERT INTO exchange_body (rowid, body) SELECT rowid, body FROM exchange_text;
DROP TABLE exchange_text;
ALTER TABLE exchange_body RENAME TO exchange_text;
"#,
    ),
    // The proxy's request log (`requests`): what each model request sent,
    // forwarded, and what the provider reported it counted (NULL usage:
    // no reply stated one).
    M::up(
        r#"
CREATE TABLE requests (
    id                  INTEGER PRIMARY KEY,
    session_id          TEXT NOT NULL REFERENCES sessions(id),
    prompt_seq          INTEGER,
    at                  TEXT NOT NULL,
    api                 TEXT NOT NULL,
    model               TEXT NOT NULL,
    outcome             TEXT NOT NULL,
    client_tokens       INTEGER NOT NULL,
    forwarded_tokens    INTEGER NOT NULL,
    rounds              INTEGER NOT NULL,
    input_tokens        INTEGER,
    cached_input_tokens INTEGER,
    cache_write_tokens  INTEGER,
    output_tokens       INTEGER,
    added_ms            REAL NOT NULL
);
CREATE INDEX requests_by_session ON requests(session_id, prompt_seq);
"#,
    ),
    // Tenants and edges: whose a session is (a keyed hash of a proxy
    // client's credential, '' for the local user) and which edge opened it.
    // Proxied sessions were kept apart by the workspace `proxy`; the
    // workspace is now the session's project, and `edge` keeps them apart.
    M::up(
        r#"
ALTER TABLE sessions ADD COLUMN tenant TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN edge TEXT NOT NULL DEFAULT 'lsp';
UPDATE sessions SET edge = 'proxy', workspace = '' WHERE workspace = 'proxy';
CREATE INDEX sessions_by_project ON sessions(tenant, workspace, created_at);
CREATE INDEX sessions_by_edge ON sessions(edge, tenant, title);
"#,
    ),
    // Secrets the store keeps for itself: the key tenants are derived
    // from a client's credential under (`Writer::store_secret`).
    M::up(
        r#"
CREATE TABLE store_secrets (
    name  TEXT PRIMARY KEY,
    value BLOB NOT NULL
);
"#,
    ),
    // Removing sessions (`ctxproxy forget`, a replay that fails) deletes
    // the blobs only they showed: without these, each blob deleted scanned
    // every message for one naming it (the foreign key), each session
    // every blob and every session, and forgetting a project of 100
    // sessions took 11 s.
    M::up(
        r#"
CREATE INDEX messages_by_hash ON messages(blob_hash) WHERE blob_hash IS NOT NULL;
CREATE INDEX blobs_by_first_session ON blobs(first_session);
CREATE INDEX sessions_by_parent ON sessions(parent_id) WHERE parent_id IS NOT NULL;
"#,
    ),
];

pub fn migrate(conn: &mut Connection) -> Result<(), rusqlite_migration::Error> {
    Migrations::from_slice(MIGRATIONS).to_latest(conn)
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;
    use rusqlite_migration::Migrations;

    #[test]
    fn migrations_are_valid() {
        Migrations::from_slice(super::MIGRATIONS)
            .validate()
            .unwrap();
    }

    #[test]
    fn a_store_of_the_first_schema_upgrades_and_keeps_its_sessions() {
        let mut conn = Connection::open_in_memory().unwrap();
        Migrations::from_slice(&super::MIGRATIONS[..1])
            .to_latest(&mut conn)
            .unwrap();
        conn.execute(
            "INSERT INTO sessions (id, created_at, updated_at, context_current, l0_text)
             VALUES ('s-1', 'now', 'now', '{}', '## Current context')",
            [],
        )
        .unwrap();
        super::migrate(&mut conn).unwrap();
        let context: String = conn
            .query_row(
                "SELECT context_current FROM sessions WHERE id = 's-1'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(context, "{}");
        let l0 = conn.query_row("SELECT l0_text FROM sessions", [], |r| {
            r.get::<_, String>(0)
        });
        assert!(l0.is_err(), "the rendered L0 column is gone");
    }

    #[test]
    fn proxied_sessions_leave_the_proxy_workspace_for_their_edge() {
        let mut conn = Connection::open_in_memory().unwrap();
        Migrations::from_slice(&super::MIGRATIONS[..super::MIGRATIONS.len() - 3])
            .to_latest(&mut conn)
            .unwrap();
        for (id, workspace) in [("s-1", "proxy"), ("s-2", "/home/me/app")] {
            conn.execute(
                "INSERT INTO sessions (id, workspace, created_at, updated_at) VALUES (?1, ?2, 'now', 'now')",
                [id, workspace],
            )
            .unwrap();
        }
        super::migrate(&mut conn).unwrap();
        let rows: Vec<(String, String, String, String)> = conn
            .prepare("SELECT id, workspace, edge, tenant FROM sessions ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let s = |a: &str, b: &str, c: &str| (a.into(), b.into(), c.into(), String::new());
        assert_eq!(
            rows,
            [s("s-1", "", "proxy"), s("s-2", "/home/me/app", "lsp")]
        );
    }

    #[test]
    fn the_full_text_index_is_split_with_every_row_kept() {
        let mut conn = Connection::open_in_memory().unwrap();
        // The migrations before the split: all but it and the ones after.
        let split = super::MIGRATIONS.len() - 5;
        Migrations::from_slice(&super::MIGRATIONS[..split])
            .to_latest(&mut conn)
            .unwrap();
        conn.execute(
            "INSERT INTO exchange_text (rowid, header, summary, body)
             VALUES (7, 'parser rejects', 'Ask: why', 'cargo build output')",
            [],
        )
        .unwrap();
        super::migrate(&mut conn).unwrap();
        let row = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
        assert_eq!(
            row("SELECT rowid FROM exchange_gist WHERE exchange_gist MATCH 'parser AND why'"),
            7
        );
        assert_eq!(
            row("SELECT rowid FROM exchange_text WHERE exchange_text MATCH 'build'"),
            7
        );
        let gist_in_body = conn.query_row(
            "SELECT count(*) FROM exchange_text WHERE exchange_text MATCH 'parser'",
            [],
            |r| r.get::<_, i64>(0),
        );
        assert_eq!(gist_in_body.unwrap(), 0);
    }
}

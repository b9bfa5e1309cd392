//! Whole-store operations for the command line: an online backup, the
//! doctor's checks, and salvaging the readable sessions of a damaged store.
//! They open connections of their own, so a server may run meanwhile.

use std::path::Path;
use std::time::Duration;

use ctxproxy_core::ids::BlobHash;
use rusqlite::backup::{Backup, StepResult};
use rusqlite::{params, Connection};

use crate::{
    blob_dir_of, blobs, fulltext, open_connection, open_for_writing, Access, Result, StoreError,
};

/// What `backup` copied.
#[derive(Debug)]
pub struct BackupReport {
    pub pages: u64,
    pub blob_files: u64,
}

/// Copies the store at `src` to a new store at `dest` with SQLite's online
/// backup API (one consistent snapshot, even while a server writes), then
/// the blob files the snapshot names, each verified against its hash.
pub fn backup(src: &Path, dest: &Path) -> Result<BackupReport> {
    must_be_new(dest, "back up to")?;
    let from = open_source(src)?;
    if let Some(dir) = dest.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(StoreError::io("create the directory", dir))?;
    }
    let mut to = Connection::open(dest).map_err(|source| StoreError::Open {
        path: dest.to_path_buf(),
        mode: "writing",
        source,
    })?;
    let pages = {
        let copy = Backup::new(&from, &mut to)?;
        // All pages in one step: the copy is one snapshot of the source.
        loop {
            match copy.step(-1)? {
                StepResult::Done => break,
                _ => std::thread::sleep(Duration::from_millis(50)),
            }
        }
        copy.progress().pagecount as u64
    };
    let blob_files = copy_blob_files(&to, &blob_dir_of(src), &blob_dir_of(dest))?;
    to.pragma_update(None, "journal_mode", "WAL")?;
    Ok(BackupReport { pages, blob_files })
}

fn copy_blob_files(db: &Connection, from: &Path, to: &Path) -> Result<u64> {
    let mut stmt = db.prepare("SELECT hash, bytes FROM blobs WHERE data IS NULL")?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, Vec<u8>>(0)?, r.get::<_, i64>(1)?)))?;
    let mut copied = 0;
    for row in rows {
        let (hash, bytes) = row?;
        let hash = blob_hash(&hash)?;
        let stored = blobs::read_file(from, &hash)?;
        blobs::decode(&hash, &stored, bytes as usize)?;
        blobs::write_file(to, &hash, &stored)?;
        copied += 1;
    }
    Ok(copied)
}

/// What the doctor found; empty lists mean a healthy store.
#[derive(Debug, Default)]
pub struct Diagnosis {
    /// `PRAGMA integrity_check`'s findings (nothing when it says `ok`).
    pub integrity: Vec<String>,
    pub blobs_checked: u64,
    /// `(blob id, why, messages that show it)`.
    pub bad_blobs: Vec<(String, String, Vec<String>)>,
    pub prompts_checked: u64,
    /// `(session, prompt id, why)`.
    pub bad_prompts: Vec<(String, String, String)>,
    /// `(session, why)`: a session whose rows or context do not read back.
    pub bad_sessions: Vec<(String, String)>,
    pub sessions: u64,
}

impl Diagnosis {
    pub fn is_healthy(&self) -> bool {
        self.integrity.is_empty()
            && self.bad_blobs.is_empty()
            && self.bad_prompts.is_empty()
            && self.bad_sessions.is_empty()
    }
}

/// Runs SQLite's integrity check, then reads back every blob (verifying its
/// hash), every prompt record and every session's rows.
pub fn diagnose(src: &Path) -> Result<Diagnosis> {
    let conn = open_source(src)?;
    let mut d = Diagnosis::default();
    {
        let mut stmt = conn.prepare("PRAGMA integrity_check")?;
        let found = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>());
        match found {
            Ok(lines) => d.integrity = lines.into_iter().filter(|l| l != "ok").collect(),
            Err(e) => d.integrity.push(e.to_string()),
        }
    }
    let blob_dir = blob_dir_of(src);
    for_each_row(&conn, "SELECT hash FROM blobs", &mut d.integrity, |r| {
        let hash = blob_hash(&r.get::<_, Vec<u8>>(0)?).map_err(to_sqlite)?;
        d.blobs_checked += 1;
        if let Err(e) = crate::read::blob_bytes(&conn, &blob_dir, &hash) {
            let shown_by = messages_showing(&conn, &hash);
            d.bad_blobs.push((hash.short_id(), e.to_string(), shown_by));
        }
        Ok(())
    });
    for_each_row(
        &conn,
        "SELECT session_id, seq, record FROM prompts",
        &mut d.integrity,
        |r| {
            let session: String = r.get(0)?;
            let seq: u32 = r.get(1)?;
            let stored: Vec<u8> = r.get(2)?;
            d.prompts_checked += 1;
            if let Err(why) = prompt_record_ok(&stored) {
                d.bad_prompts.push((session, format!("p{seq}"), why));
            }
            Ok(())
        },
    );
    for session in session_ids(&conn)? {
        d.sessions += 1;
        if let Err(why) = session_reads_back(&conn, "", &session) {
            d.bad_sessions.push((session, why));
        }
    }
    Ok(d)
}

/// What `salvage` copied and left behind.
#[derive(Debug, Default)]
pub struct Salvage {
    pub copied: Vec<String>,
    /// `(session, why)`: sessions whose history does not read back.
    pub lost: Vec<(String, String)>,
    /// `(session, what)`: prompt records left behind from copied sessions.
    pub prompts_left: Vec<(String, String)>,
}

/// Copies every session of `src` whose rows, blobs and prompt records all
/// read back into a new store at `dest` (parents before their forks; a fork
/// of a lost session is lost too).
pub fn salvage(src: &Path, dest: &Path) -> Result<Salvage> {
    must_be_new(dest, "salvage into")?;
    let from = open_source(src)?;
    let sessions = session_ids(&from)?;
    drop(from);
    let (src_blobs, dest_blobs) = (blob_dir_of(src), blob_dir_of(dest));
    let mut to = open_for_writing(dest, &dest_blobs)?;
    to.execute(
        "ATTACH DATABASE ?1 AS old",
        [src.to_string_lossy().as_ref()],
    )?;
    let mut out = Salvage::default();
    for session in sessions {
        let tx = to.transaction()?;
        match copy_session(&tx, &session, &src_blobs, &dest_blobs) {
            Ok(()) => {
                tx.commit()?;
                // After the history's commit, one statement each: a damaged
                // page met while reading them must not undo the history.
                let prompts_left = copy_prompts(&to, &session);
                out.prompts_left
                    .extend(prompts_left.into_iter().map(|p| (session.clone(), p)));
                out.copied.push(session);
            }
            Err(why) => {
                drop(tx);
                out.lost.push((session, why));
            }
        }
    }
    to.execute("DETACH DATABASE old", [])?;
    to.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    Ok(out)
}

fn copy_session(
    tx: &rusqlite::Transaction,
    session: &str,
    src_blobs: &Path,
    dest_blobs: &Path,
) -> std::result::Result<(), String> {
    session_reads_back(tx, "old.", session)?;
    let run = |sql: &str| tx.execute(sql, [session]).map_err(|e| e.to_string());
    run("INSERT INTO main.sessions SELECT * FROM old.sessions WHERE id = ?1")?;
    run("INSERT INTO main.exchanges SELECT * FROM old.exchanges WHERE session_id = ?1")?;
    run(
        "INSERT OR IGNORE INTO main.blobs SELECT * FROM old.blobs WHERE hash IN \
         (SELECT blob_hash FROM old.messages WHERE session_id = ?1 AND blob_hash IS NOT NULL)",
    )?;
    run("INSERT INTO main.messages SELECT * FROM old.messages WHERE session_id = ?1")?;
    run("INSERT INTO main.file_reads SELECT * FROM old.file_reads WHERE session_id = ?1")?;
    for sql in fulltext::SALVAGE {
        run(sql)?;
    }
    let mut stmt = tx
        .prepare(
            "SELECT DISTINCT b.hash, b.bytes, b.data FROM main.blobs b \
             JOIN main.messages m ON m.blob_hash = b.hash WHERE m.session_id = ?1",
        )
        .map_err(|e| e.to_string())?;
    let rows = stmt
        .query_map([session], |r| {
            Ok((
                r.get::<_, Vec<u8>>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, Option<Vec<u8>>>(2)?,
            ))
        })
        .map_err(|e| e.to_string())?;
    for row in rows {
        let (hash, bytes, data) = row.map_err(|e| e.to_string())?;
        let hash = blob_hash(&hash).map_err(|e| e.to_string())?;
        let stored = match data {
            Some(d) => d,
            None => blobs::read_file(src_blobs, &hash).map_err(|e| e.to_string())?,
        };
        blobs::decode(&hash, &stored, bytes as usize).map_err(|e| e.to_string())?;
        if data_is_file(tx, &hash) {
            blobs::write_file(dest_blobs, &hash, &stored).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// Copies a session's prompt records one by one: they are diagnostics, so a
/// damaged one is left behind without losing the session's history. Says
/// what was left behind.
fn copy_prompts(tx: &Connection, session: &str) -> Vec<String> {
    let mut left = Vec::new();
    let seqs = tx
        .prepare("SELECT seq FROM old.prompts WHERE session_id = ?1 ORDER BY seq")
        .and_then(|mut stmt| {
            stmt.query_map([session], |r| r.get::<_, u32>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()
        });
    let seqs = match seqs {
        Ok(seqs) => seqs,
        Err(e) => return vec![format!("prompt records unreadable: {e}")],
    };
    for seq in seqs {
        let copied = tx
            .query_row(
                "SELECT record FROM old.prompts WHERE session_id = ?1 AND seq = ?2",
                params![session, seq],
                |r| r.get::<_, Vec<u8>>(0),
            )
            .map_err(|e| e.to_string())
            .and_then(|stored| prompt_record_ok(&stored))
            .and_then(|()| {
                tx.execute(
                    "INSERT INTO main.prompts SELECT * FROM old.prompts WHERE session_id = ?1 AND seq = ?2",
                    params![session, seq],
                )
                .map_err(|e| e.to_string())
            });
        if let Err(why) = copied {
            left.push(format!("prompt p{seq}: {why}"));
        }
    }
    left
}

fn data_is_file(conn: &Connection, hash: &BlobHash) -> bool {
    conn.query_row(
        "SELECT data IS NULL FROM main.blobs WHERE hash = ?1",
        [&hash.0[..]],
        |r| r.get::<_, bool>(0),
    )
    .unwrap_or(false)
}

/// Reads every row of a session (the session, its exchanges, messages and
/// context) and says why one does not read back.
/// `schema` is `""` for the store itself, `"old."` for the one attached.
fn session_reads_back(
    conn: &Connection,
    schema: &str,
    session: &str,
) -> std::result::Result<(), String> {
    for table in ["exchanges", "messages", "file_reads"] {
        let sql = format!("SELECT * FROM {schema}{table} WHERE session_id = ?1");
        let mut stmt = conn.prepare(&sql).map_err(|e| e.to_string())?;
        let columns = stmt.column_count();
        let mut rows = stmt.query([session]).map_err(|e| e.to_string())?;
        while let Some(row) = rows.next().map_err(|e| format!("{table}: {e}"))? {
            for i in 0..columns {
                row.get_ref(i).map_err(|e| format!("{table}: {e}"))?;
            }
        }
    }
    let context: String = conn
        .query_row(
            &format!("SELECT context_current FROM {schema}sessions WHERE id = ?1"),
            [session],
            |r| r.get(0),
        )
        .map_err(|e| format!("sessions: {e}"))?;
    crate::read::stored_context(&context).map_err(|e| e.to_string())?;
    Ok(())
}

fn prompt_record_ok(stored: &[u8]) -> std::result::Result<(), String> {
    let raw = blobs::unpack(stored, crate::read::PROMPT_RECORD_MAX_BYTES)?;
    serde_json::from_slice::<serde_json::Value>(&raw).map_err(|e| e.to_string())?;
    Ok(())
}

fn messages_showing(conn: &Connection, hash: &BlobHash) -> Vec<String> {
    let found = conn
        .prepare("SELECT session_id, seq, idx FROM messages WHERE blob_hash = ?1")
        .and_then(|mut stmt| {
            stmt.query_map(params![&hash.0[..]], |r| {
                Ok(format!(
                    "{}/x{}.{}",
                    r.get::<_, String>(0)?,
                    r.get::<_, u32>(1)?,
                    r.get::<_, u32>(2)?
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()
        });
    found.unwrap_or_else(|e| vec![format!("(messages unreadable: {e})")])
}

/// Sessions in the order they were made, so that parents come before forks.
fn session_ids(conn: &Connection) -> Result<Vec<String>> {
    let mut stmt = conn.prepare("SELECT id FROM sessions ORDER BY rowid")?;
    let ids = stmt
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(ids)
}

/// Calls `f` on every row of `sql`; an error reading the table is a finding.
fn for_each_row(
    conn: &Connection,
    sql: &str,
    findings: &mut Vec<String>,
    mut f: impl FnMut(&rusqlite::Row) -> rusqlite::Result<()>,
) {
    let walked = conn.prepare(sql).and_then(|mut stmt| {
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            f(row)?;
        }
        Ok(())
    });
    if let Err(e) = walked {
        findings.push(format!("{sql}: {e}"));
    }
}

/// A backup or salvage never overwrites: `dest` must not exist.
fn must_be_new(dest: &Path, doing: &str) -> Result<()> {
    if dest.exists() {
        return Err(StoreError::Invalid(format!(
            "{} exists: {doing} a new file",
            dest.display()
        )));
    }
    Ok(())
}

fn open_source(src: &Path) -> Result<Connection> {
    if !src.exists() {
        return Err(StoreError::Invalid(format!(
            "no store at {}",
            src.display()
        )));
    }
    open_connection(src, Access::ReadOnly).map_err(|source| StoreError::Open {
        path: src.to_path_buf(),
        mode: "reading",
        source,
    })
}

fn blob_hash(bytes: &[u8]) -> Result<BlobHash> {
    <[u8; 32]>::try_from(bytes)
        .map(BlobHash)
        .map_err(|_| StoreError::Unreadable(format!("a blob hash of {} bytes", bytes.len())))
}

fn to_sqlite(e: StoreError) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(Box::new(e))
}

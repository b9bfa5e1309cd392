//! Opening the database file: the writer's connection (directories made,
//! a read-only or damaged file told apart, migrations run) and read-only
//! ones, with the pragmas each needs.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use crate::error::StoreError;
use crate::schema;
use crate::Result;

/// Blob files live in `blobs/` beside the database file.
pub(crate) fn blob_dir_of(db_path: &Path) -> PathBuf {
    db_path.with_file_name("blobs")
}

pub(crate) fn open_for_writing(db_path: &Path, blob_dir: &Path) -> Result<Connection> {
    if let Some(dir) = db_path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(StoreError::io("create the store directory", dir))?;
    }
    std::fs::create_dir_all(blob_dir)
        .map_err(StoreError::io("create the blob directory", blob_dir))?;
    let opened = open_connection(db_path, Access::ReadWrite).and_then(|conn| {
        // A store that SQLite cannot read at all fails here (not a database,
        // a damaged schema page); the migrations read the schema too.
        conn.query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()))?;
        // SQLite opens a file it may not write read-only without a word.
        if conn.is_readonly(rusqlite::MAIN_DB)? {
            return Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_READONLY),
                Some(
                    "Permission denied: the file or its directory is read-only for this user"
                        .into(),
                ),
            ));
        }
        Ok(conn)
    });
    let mut conn = opened.map_err(|source| match StoreError::Sqlite(source) {
        e if e.is_damage() => e.at_store(db_path),
        StoreError::Sqlite(source) => StoreError::Open {
            path: db_path.to_path_buf(),
            mode: "writing",
            source,
        },
        e => e,
    })?;
    schema::migrate(&mut conn).map_err(|e| StoreError::from(e).at_store(db_path))?;
    Ok(conn)
}

/// What a connection may do: the writer's and the checkpointer's change the
/// store (and set its journal mode); every other one only reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    ReadWrite,
    ReadOnly,
}

pub(crate) fn open_connection(path: &Path, access: Access) -> rusqlite::Result<Connection> {
    let flags = match access {
        Access::ReadOnly => OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        Access::ReadWrite => {
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
        }
    };
    let mut conn = Connection::open_with_flags(path, flags)?;
    if access == Access::ReadOnly {
        // A WAL store in a directory this user cannot write has no -shm
        // file SQLite could create: it reads only as immutable, which is
        // exact when the log holds nothing (a clean exit checkpointed it,
        // whether or not the emptied -wal file was left behind).
        let probe = conn.query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()));
        if let Err(e) = probe {
            let no_index = matches!(
                e.sqlite_extended_error_code(),
                Some(rusqlite::ffi::SQLITE_READONLY_DIRECTORY | rusqlite::ffi::SQLITE_CANTOPEN)
            );
            if !no_index || !wal_is_empty(path) {
                return Err(e);
            }
            let uri = format!("file:{}?immutable=1", path.display());
            conn = Connection::open_with_flags(uri, flags | OpenFlags::SQLITE_OPEN_URI)?;
        }
    }
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    // Room for every statement ingest and assemble keep prepared (rusqlite
    // keeps 16 by default, fewer than one append runs).
    conn.set_prepared_statement_cache_capacity(64);
    conn.pragma_update(None, "foreign_keys", "ON")?;
    if access == Access::ReadWrite {
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
    }
    Ok(conn)
}

/// Whether the store's write-ahead log holds nothing: no `-wal` file, or an
/// empty one.
fn wal_is_empty(db_path: &Path) -> bool {
    let mut wal = db_path.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(wal).map_or(true, |m| m.len() == 0)
}

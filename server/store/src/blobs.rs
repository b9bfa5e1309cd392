//! Blob bytes at rest: a one-byte codec tag, then the payload. Small blobs
//! live in the `blobs` table, large ones in files under `blobs/` written by
//! temp file and rename, so a crash never leaves half a blob under its name.
//! Every read verifies the BLAKE3 hash of the decoded bytes.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use ctxproxy_core::ids::BlobHash;
use rusqlite::{Connection, OptionalExtension};

use crate::error::StoreError;
use crate::Result;

const CODEC_RAW: u8 = 0;
const CODEC_ZSTD: u8 = 1;
const ZSTD_LEVEL: i32 = 3;
/// Encoded blobs up to this size stay inline in SQLite.
pub const INLINE_MAX_BYTES: usize = 64 * 1024;

// zstd's contexts cost more to make (hundreds of KB, zeroed) than a few KB
// of text costs to compress: each thread keeps one of each.
thread_local! {
    static COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
        const { std::cell::RefCell::new(None) };
    static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { std::cell::RefCell::new(None) };
}

fn compress(raw: &[u8]) -> std::io::Result<Vec<u8>> {
    COMPRESSOR.with_borrow_mut(|c| match c {
        Some(c) => c.compress(raw),
        None => c
            .insert(zstd::bulk::Compressor::new(ZSTD_LEVEL)?)
            .compress(raw),
    })
}

fn decompress(payload: &[u8], max_len: usize) -> std::io::Result<Vec<u8>> {
    DECOMPRESSOR.with_borrow_mut(|d| match d {
        Some(d) => d.decompress(payload, max_len),
        None => d
            .insert(zstd::bulk::Decompressor::new()?)
            .decompress(payload, max_len),
    })
}

/// Encodes raw bytes with zstd when that saves space.
pub fn encode(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() / 3 + 1);
    if raw.len() > 64 {
        if let Ok(z) = compress(raw) {
            if z.len() < raw.len() {
                out.push(CODEC_ZSTD);
                out.extend_from_slice(&z);
                return out;
            }
        }
    }
    out.push(CODEC_RAW);
    out.extend_from_slice(raw);
    out
}

/// Decodes stored bytes and checks that they hash to `hash`.
pub fn decode(hash: &BlobHash, stored: &[u8], raw_len: usize) -> Result<Vec<u8>, StoreError> {
    let corrupt = |why: String| StoreError::BlobCorrupt {
        id: hash.short_id(),
        why,
    };
    let raw = unpack(stored, raw_len).map_err(corrupt)?;
    if BlobHash::of(&raw) != *hash {
        return Err(corrupt("hash mismatch".into()));
    }
    Ok(raw)
}

/// Decodes bytes written by `encode`, at most `max_len` of them.
pub fn unpack(stored: &[u8], max_len: usize) -> Result<Vec<u8>, String> {
    let (&tag, payload) = stored.split_first().ok_or("empty record")?;
    match tag {
        CODEC_RAW => Ok(payload.to_vec()),
        CODEC_ZSTD => decompress(payload, max_len).map_err(|e| e.to_string()),
        other => Err(format!("unknown codec tag {other}")),
    }
}

/// Where a file blob lives: `blobs/ab/abcdef…`.
pub fn file_path(dir: &Path, hash: &BlobHash) -> PathBuf {
    let hex = hash.to_hex();
    dir.join(&hex[..2]).join(hex)
}

/// Writes an encoded blob to its file, atomically. An existing file with the
/// same name already holds the same bytes (the name is their hash).
pub fn write_file(dir: &Path, hash: &BlobHash, encoded: &[u8]) -> Result<(), StoreError> {
    let path = file_path(dir, hash);
    if path.exists() {
        return Ok(());
    }
    let parent = path.parent().expect("blob path has a parent");
    fs::create_dir_all(parent).map_err(StoreError::io("create the blob directory", parent))?;
    let tmp = parent.join(format!(".{}.tmp-{}", hash.to_hex(), std::process::id()));
    let write = || -> std::io::Result<()> {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(encoded)?;
        f.sync_data()
    };
    write().map_err(StoreError::io("write the blob file", &tmp))?;
    fs::rename(&tmp, &path).map_err(StoreError::io("rename into place the blob file", &path))?;
    Ok(())
}

pub fn read_file(dir: &Path, hash: &BlobHash) -> Result<Vec<u8>, StoreError> {
    fs::read(file_path(dir, hash)).map_err(|e| StoreError::BlobCorrupt {
        id: hash.short_id(),
        why: format!("blob file unreadable: {e}"),
    })
}

/// A blob as stored (`encode`d), read but not yet decoded: the
/// decoding can run on another thread.
pub(crate) struct StoredBlob {
    hash: BlobHash,
    stored: Vec<u8>,
    bytes: usize,
}

impl StoredBlob {
    /// The original bytes, verified against the hash.
    pub(crate) fn decode(&self) -> Result<Vec<u8>> {
        decode(&self.hash, &self.stored, self.bytes)
    }
}

pub(crate) fn stored_blob(
    conn: &Connection,
    blob_dir: &Path,
    hash: &BlobHash,
) -> Result<StoredBlob> {
    let (bytes, data): (i64, Option<Vec<u8>>) = conn
        .query_row(
            "SELECT bytes, data FROM blobs WHERE hash = ?1",
            [&hash.0[..]],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?
        .ok_or_else(|| StoreError::UnknownId(hash.short_id()))?;
    let stored = match data {
        Some(d) => d,
        None => read_file(blob_dir, hash)?,
    };
    Ok(StoredBlob {
        hash: *hash,
        stored,
        bytes: bytes as usize,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_detects_corruption() {
        for raw in [
            b"".to_vec(),
            b"short".to_vec(),
            "line\n".repeat(1000).into_bytes(),
        ] {
            let h = BlobHash::of(&raw);
            let enc = encode(&raw);
            assert_eq!(decode(&h, &enc, raw.len()).unwrap(), raw);
            let mut bad = enc.clone();
            let last = bad.len() - 1;
            if last > 0 {
                bad[last] ^= 1;
                assert!(decode(&h, &bad, raw.len()).is_err());
            }
        }
    }

    #[test]
    fn compressible_text_is_compressed() {
        let raw = "error[E0308]: mismatched types\n".repeat(200).into_bytes();
        assert!(encode(&raw).len() < raw.len() / 10);
    }

    #[test]
    fn files_are_written_atomically_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let raw = b"file blob".to_vec();
        let h = BlobHash::of(&raw);
        write_file(dir.path(), &h, &encode(&raw)).unwrap();
        let stored = read_file(dir.path(), &h).unwrap();
        assert_eq!(decode(&h, &stored, raw.len()).unwrap(), raw);
        let leftovers = fs::read_dir(file_path(dir.path(), &h).parent().unwrap())
            .unwrap()
            .count();
        assert_eq!(leftovers, 1);
    }
}

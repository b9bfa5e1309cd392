//! Binary tool output (NUL bytes or bytes that are not UTF-8): stored as
//! sent, never shown as text. The digest names its size and, from its
//! magic number, what it probably is.

use super::draft::Draft;

/// Git's rule, and what a terminal shows as garbage: a NUL in the first
/// 8000 bytes, or bytes that are not UTF-8 anywhere.
pub fn is_binary(bytes: &[u8]) -> bool {
    has_nul(bytes) || std::str::from_utf8(bytes).is_err()
}

/// A NUL in the first 8000 bytes: how text that is UTF-8 shows it is binary.
pub(crate) fn has_nul(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8000)].contains(&0)
}

/// Signatures at the start of a file (and tar's at 257), most specific first.
const MAGIC: &[(usize, &[u8], &str)] = &[
    (0, b"\x7fELF", "ELF executable or object"),
    (0, b"\x89PNG\r\n\x1a\n", "PNG image"),
    (0, b"\xff\xd8\xff", "JPEG image"),
    (0, b"GIF87a", "GIF image"),
    (0, b"GIF89a", "GIF image"),
    (0, b"%PDF-", "PDF document"),
    (0, b"SQLite format 3\0", "SQLite database"),
    (0, b"\x1f\x8b", "gzip compressed data"),
    (0, b"\x28\xb5\x2f\xfd", "zstd compressed data"),
    (0, b"\xfd7zXZ\0", "xz compressed data"),
    (0, b"BZh", "bzip2 compressed data"),
    (0, b"7z\xbc\xaf\x27\x1c", "7-zip archive"),
    (
        0,
        b"PK\x03\x04",
        "zip archive (also jar, docx, xlsx, wheel)",
    ),
    (0, b"PK\x05\x06", "zip archive (empty)"),
    (257, b"ustar", "tar archive"),
    (0, b"\0asm", "WebAssembly module"),
    (
        0,
        b"\xca\xfe\xba\xbe",
        "Java class or Mach-O universal binary",
    ),
    (0, b"\xcf\xfa\xed\xfe", "Mach-O executable"),
    (0, b"\xce\xfa\xed\xfe", "Mach-O executable"),
    (0, b"MZ", "Windows (PE/DOS) executable"),
    (0, b"\xff\xfe", "UTF-16 (little endian) text"),
    (0, b"\xfe\xff", "UTF-16 (big endian) text"),
];

/// What the bytes probably are, from their first bytes.
pub fn type_guess(bytes: &[u8]) -> &'static str {
    if bytes.starts_with(b"RIFF") && bytes.len() >= 12 {
        return match &bytes[8..12] {
            b"WEBP" => "WebP image",
            b"WAVE" => "WAV audio",
            b"AVI " => "AVI video",
            _ => "RIFF data",
        };
    }
    MAGIC
        .iter()
        .find(|(at, magic, _)| bytes.get(*at..at + magic.len()) == Some(*magic))
        .map_or("data (type unknown)", |(_, _, name)| name)
}

pub(crate) fn digest(label: &str, bytes: &[u8], draft: &mut Draft) {
    draft.headline(format!(
        "{label}: binary, {} bytes, {}",
        bytes.len(),
        type_guess(bytes)
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_is_nul_or_not_utf8() {
        assert!(is_binary(b"a\0b"));
        assert!(is_binary(b"caf\xe9"));
        assert!(!is_binary("café ✓\n".as_bytes()));
        assert!(!is_binary(b""));
    }

    #[test]
    fn types_from_magic_numbers() {
        let mut tar = vec![0u8; 512];
        tar[257..262].copy_from_slice(b"ustar");
        let cases: [(&[u8], &str); 8] = [
            (b"\x7fELF\x02\x01\x01", "ELF executable or object"),
            (b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", "PNG image"),
            (b"\x1f\x8b\x08\0", "gzip compressed data"),
            (
                b"PK\x03\x04\x14\0",
                "zip archive (also jar, docx, xlsx, wheel)",
            ),
            (b"%PDF-1.7\n", "PDF document"),
            (b"SQLite format 3\0\x10\0", "SQLite database"),
            (b"RIFF\0\0\0\0WEBPVP8 ", "WebP image"),
            (b"\x00\x01\x02\x03", "data (type unknown)"),
        ];
        for (bytes, want) in cases {
            assert_eq!(type_guess(bytes), want, "{bytes:?}");
        }
        assert_eq!(type_guess(&tar), "tar archive");
    }
}

//! Short identifiers a model can type: `x12`, `x12.3`, `b3:1a2b3c4d5e6f`, `p4`.

use std::fmt;

/// `x<seq>`: the seq-th exchange of a session, 1-based (`x0`, the default,
/// is before the first).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ExchangeId(pub u32);

/// `x<seq>.<n>`: the n-th message (1-based) of exchange `seq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MessageId {
    pub exchange: ExchangeId,
    pub index: u32,
}

/// `p<seq>`: the seq-th prompt assembled for a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PromptId(pub u32);

/// The full BLAKE3 hash of a blob's raw bytes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BlobHash(pub [u8; 32]);

/// How many hex characters of the hash a blob id shows.
pub const BLOB_ID_HEX: usize = 12;
/// The shortest hex prefix accepted when looking a blob up.
pub const BLOB_PREFIX_MIN_HEX: usize = 8;

impl BlobHash {
    pub fn of(bytes: &[u8]) -> BlobHash {
        BlobHash(*blake3::hash(bytes).as_bytes())
    }

    pub fn to_hex(&self) -> String {
        blake3::Hash::from_bytes(self.0).to_hex().to_string()
    }

    /// The short id shown to models: `b3:` and the first 12 hex characters.
    pub fn short_id(&self) -> String {
        format!("b3:{}", &self.to_hex()[..BLOB_ID_HEX])
    }

    pub fn from_hex(hex: &str) -> Option<BlobHash> {
        if hex.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, chunk) in hex.as_bytes().chunks(2).enumerate() {
            let s = std::str::from_utf8(chunk).ok()?;
            out[i] = u8::from_str_radix(s, 16).ok()?;
        }
        Some(BlobHash(out))
    }
}

impl fmt::Debug for BlobHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.short_id())
    }
}

impl fmt::Display for ExchangeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "x{}", self.0)
    }
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "x{}.{}", self.exchange.0, self.index)
    }
}

impl fmt::Display for PromptId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "p{}", self.0)
    }
}

/// Any id a client or model may ask for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ItemId {
    Exchange(ExchangeId),
    Message(MessageId),
    /// Lower-case hex prefix of a blob hash, 8 to 64 characters.
    Blob(String),
    Prompt(PromptId),
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("`{0}` is not an id: expected x<N>, x<N>.<M>, p<N> or b3:<8 to 64 hex characters>, each optionally after its session's id and `/` (s-k3v9qa/x12)")]
    Malformed(String),
    #[error("`{0}`: sequence numbers start at 1")]
    Zero(String),
}

impl ItemId {
    pub fn parse(raw: &str) -> Result<ItemId, IdError> {
        let s = raw.trim();
        let malformed = || IdError::Malformed(raw.to_string());
        if let Some(hex) = s.strip_prefix("b3:") {
            let hex = hex.to_ascii_lowercase();
            let ok = (BLOB_PREFIX_MIN_HEX..=64).contains(&hex.len())
                && hex.bytes().all(|b| b.is_ascii_hexdigit());
            return if ok {
                Ok(ItemId::Blob(hex))
            } else {
                Err(malformed())
            };
        }
        let number = |t: &str| -> Result<u32, IdError> {
            if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
                return Err(malformed());
            }
            let n: u32 = t.parse().map_err(|_| malformed())?;
            if n == 0 {
                return Err(IdError::Zero(raw.to_string()));
            }
            Ok(n)
        };
        if let Some(rest) = s.strip_prefix('x') {
            return match rest.split_once('.') {
                Some((x, m)) => Ok(ItemId::Message(MessageId {
                    exchange: ExchangeId(number(x)?),
                    index: number(m)?,
                })),
                None => Ok(ItemId::Exchange(ExchangeId(number(rest)?))),
            };
        }
        if let Some(rest) = s.strip_prefix('p') {
            return Ok(ItemId::Prompt(PromptId(number(rest)?)));
        }
        Err(malformed())
    }
}

impl fmt::Display for ItemId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ItemId::Exchange(x) => x.fmt(f),
            ItemId::Message(m) => m.fmt(f),
            ItemId::Blob(hex) => write!(f, "b3:{hex}"),
            ItemId::Prompt(p) => p.fmt(f),
        }
    }
}

/// An id a model or client may ask for, of this session or, prefixed by
/// its session's id, of another session of the project: `x12`,
/// `s-k3v9qa/x12`, `s-k3v9qa/b3:…`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QualifiedId {
    pub session: Option<String>,
    pub item: ItemId,
}

impl QualifiedId {
    pub fn parse(raw: &str) -> Result<QualifiedId, IdError> {
        let s = raw.trim();
        let Some((session, item)) = s.split_once('/') else {
            return Ok(QualifiedId {
                session: None,
                item: ItemId::parse(s)?,
            });
        };
        let well_formed = session.strip_prefix("s-").is_some_and(|rest| {
            !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
        if !well_formed {
            return Err(IdError::Malformed(raw.to_string()));
        }
        Ok(QualifiedId {
            session: Some(session.to_string()),
            item: ItemId::parse(item).map_err(|e| match e {
                IdError::Malformed(_) => IdError::Malformed(raw.to_string()),
                IdError::Zero(_) => IdError::Zero(raw.to_string()),
            })?,
        })
    }
}

/// `id` as a prompt names it: bare in its own session, prefixed by its
/// session's id in another's.
pub fn qualified(session: Option<&str>, id: impl fmt::Display) -> String {
    match session {
        Some(s) => format!("{s}/{id}"),
        None => id.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ids_of_other_sessions() {
        let q = QualifiedId::parse("s-k3v9qa/x12").unwrap();
        assert_eq!(q.session.as_deref(), Some("s-k3v9qa"));
        assert_eq!(q.item, ItemId::Exchange(ExchangeId(12)));
        let q = QualifiedId::parse(" s-k3v9qa/b3:1A2b3c4d").unwrap();
        assert_eq!(q.item, ItemId::Blob("1a2b3c4d".into()));
        assert_eq!(QualifiedId::parse("x3").unwrap().session, None);
        for bad in ["k3v9qa/x12", "s-/x1", "s-k3/y1", "s-k3 v/x1"] {
            assert!(
                matches!(QualifiedId::parse(bad), Err(IdError::Malformed(ref r)) if r == bad),
                "{bad}"
            );
        }
        assert_eq!(qualified(Some("s-k3v9qa"), ExchangeId(12)), "s-k3v9qa/x12");
        assert_eq!(qualified(None, ExchangeId(12)), "x12");
    }

    fn check(raw: &str, expected: &str) {
        let got = match ItemId::parse(raw) {
            Ok(id) => format!("{id:?}"),
            Err(e) => format!("error: {e}"),
        };
        assert_eq!(got, expected, "parsing {raw:?}");
    }

    #[test]
    fn parses_every_id_form() {
        check("x12", "Exchange(ExchangeId(12))");
        check(
            "x12.3",
            "Message(MessageId { exchange: ExchangeId(12), index: 3 })",
        );
        check("p4", "Prompt(PromptId(4))");
        check("b3:1A2b3c4d", "Blob(\"1a2b3c4d\")");
        check(" x1 ", "Exchange(ExchangeId(1))");
    }

    #[test]
    fn rejects_bad_ids() {
        check("x0", "error: `x0`: sequence numbers start at 1");
        check("b3:1234567", "error: `b3:1234567` is not an id: expected x<N>, x<N>.<M>, p<N> or b3:<8 to 64 hex characters>, each optionally after its session's id and `/` (s-k3v9qa/x12)");
        check("x1.", "error: `x1.` is not an id: expected x<N>, x<N>.<M>, p<N> or b3:<8 to 64 hex characters>, each optionally after its session's id and `/` (s-k3v9qa/x12)");
        check("y3", "error: `y3` is not an id: expected x<N>, x<N>.<M>, p<N> or b3:<8 to 64 hex characters>, each optionally after its session's id and `/` (s-k3v9qa/x12)");
        check("b3:zzzzzzzz", "error: `b3:zzzzzzzz` is not an id: expected x<N>, x<N>.<M>, p<N> or b3:<8 to 64 hex characters>, each optionally after its session's id and `/` (s-k3v9qa/x12)");
    }

    #[test]
    fn blob_short_id_is_twelve_hex() {
        let h = BlobHash::of(b"hello");
        assert_eq!(h.short_id(), "b3:ea8f163db386");
        assert_eq!(BlobHash::from_hex(&h.to_hex()), Some(h));
    }
}

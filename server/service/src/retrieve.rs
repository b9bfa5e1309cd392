//! One item of `ctx/retrieve` read from the store: an exchange at the level
//! asked for, a message as appended, a blob's original bytes (as base64 when
//! they are not text). `Service::retrieve` cuts each to the lines, grep or
//! token cap asked for.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use ctxproxy_core::ids::{ItemId, PromptId, QualifiedId};
use ctxproxy_core::slice;
use ctxproxy_core::tokens::Encoding;

use crate::api::{
    BlobDetails, ExchangeDetails, ItemDetails, ItemKind, MessageDetails, RetrieveFormat,
    RetrieveParams, WireMessage,
};
use crate::error::ServiceError;

/// What a retrieve item returns: text, or bytes that are not UTF-8.
pub(crate) enum Body {
    Text(String),
    Bytes(Vec<u8>),
}

impl Body {
    fn of(text: String, raw: Option<Vec<u8>>) -> Body {
        match raw {
            Some(bytes) => Body::Bytes(bytes),
            None => Body::Text(text),
        }
    }
}

/// Bytes as standard base64 (`encoding: "base64"`): exact, never U+FFFD.
/// `maxTokens` keeps a prefix of whole 4-character groups, so what is
/// returned decodes to the first bytes; `lines` and `grep` are for text.
pub(crate) fn bytes_as_base64(
    id: &str,
    bytes: &[u8],
    p: &RetrieveParams,
    encoding: Encoding,
) -> Result<slice::Slice, ServiceError> {
    if p.lines.is_some() || p.grep.is_some() {
        return Err(ServiceError::InvalidParams(format!(
            "`{}` is binary ({} bytes): lines and grep apply to text; retrieve it without them (base64)",
            id.trim(),
            bytes.len()
        )));
    }
    let mut cut = slice::cap(BASE64.encode(bytes), p.max_tokens, encoding);
    if cut.truncated {
        let whole_groups = cut.text.len() / 4 * 4;
        cut.text.truncate(whole_groups);
    }
    Ok(cut)
}

/// One retrieve item: (kind, format, body, details).
pub(crate) fn retrieve_one(
    r: &ctxproxy_store::Reader,
    session: &str,
    raw: &str,
    format: Option<RetrieveFormat>,
) -> Result<(ItemKind, RetrieveFormat, Body, ItemDetails), ServiceError> {
    // One sentence per failed item: the model reads it.
    let id = QualifiedId::parse(raw).map_err(|e| ServiceError::UnknownId(e.to_string()))?;
    let session = match &id.session {
        None => session,
        Some(other) if other == session => session,
        Some(other) => {
            // Another tenant's or project's session is not told apart from
            // one that does not exist.
            let peer = r.session(other).ok().filter(|o| {
                r.session(session).is_ok_and(|s| {
                    !s.workspace.is_empty() && s.workspace == o.workspace && s.tenant == o.tenant
                })
            });
            if peer.is_none() {
                return Err(ServiceError::UnknownId(format!(
                    "`{}`: no session {other} in this session's project",
                    raw.trim()
                )));
            }
            other.as_str()
        }
    };
    match id.item {
        ItemId::Exchange(x) => {
            let e = r.exchange(session, x)?;
            let fmt = format.unwrap_or(RetrieveFormat::Full);
            let text = match fmt {
                RetrieveFormat::Header => e.header.clone(),
                RetrieveFormat::Summary => e.summary.clone(),
                RetrieveFormat::Full => r.exchange_full_text(session, x)?,
            };
            Ok((
                ItemKind::Exchange,
                fmt,
                Body::Text(text),
                ItemDetails::Exchange(ExchangeDetails {
                    at: e.at,
                    outcome: e.outcome,
                    superseded_by: e.superseded_by.map(|x| x.to_string()),
                }),
            ))
        }
        ItemId::Message(m) => {
            let item = r.message(session, m)?;
            let wire = WireMessage::from_core(&item.message);
            let details = ItemDetails::Message(MessageDetails {
                role: wire.role,
                message_kind: wire.kind,
                tool_calls: wire.tool_calls,
                tool_call_id: wire.tool_call_id,
                name: wire.name,
                agent: wire.agent,
                at: wire.at,
                blob_id: item.blob.map(|b| b.short_id()),
            });
            let body = Body::of(item.message.content, item.message.raw);
            Ok((ItemKind::Message, RetrieveFormat::Full, body, details))
        }
        ItemId::Blob(hex) => {
            let b = r.session_blob(session, &hex)?;
            Ok((
                ItemKind::Blob,
                RetrieveFormat::Full,
                Body::of(b.text, b.raw),
                ItemDetails::Blob(BlobDetails {
                    blob_id: b.hash.short_id(),
                    bytes: b.bytes,
                    raw_tokens: b.tokens,
                }),
            ))
        }
        ItemId::Prompt(PromptId(n)) => Err(ServiceError::UnknownId(format!(
            "`p{n}` is a prompt, not an item to retrieve: ctx/explain shows a prompt"
        ))),
    }
}

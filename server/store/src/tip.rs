//! A session's tip: how far its stored history goes. Processes that share a
//! store (two proxies behind one load balancer) each keep what they saw of a
//! conversation; the tip tells one whether another appended since, and an
//! append that names the tip it expects is refused when the session moved
//! on (`Writer::append_at`), so nothing is written twice or over another's
//! turn.

use ctxproxy_core::ids::{ExchangeId, MessageId};
use ctxproxy_core::message::Message;
use rusqlite::{params, Connection, OptionalExtension};

use crate::append::AppendOutcome;
use crate::cached::query_row_cached;
use crate::read::{blob_bytes, load_messages_from, Reader, SessionListing};
use crate::writer::Writer;
use crate::Result;

/// A session's newest message (`None` while it holds none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tip(pub Option<MessageId>);

impl std::fmt::Display for Tip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(m) => write!(f, "{m}"),
            None => f.write_str("no message"),
        }
    }
}

impl Tip {
    /// Whether `message` comes after the tip.
    fn before(self, message: MessageId) -> bool {
        self.0.is_none_or(|tip| message > tip)
    }
}

/// What `Writer::append_at` did.
#[derive(Debug)]
pub enum AppendedAt {
    Stored(AppendOutcome),
    /// The session no longer ends at the tip the caller named: another
    /// process appended in between. Nothing is stored; the messages are
    /// handed back.
    Moved(Vec<Message>),
}

impl Writer {
    /// Appends `messages` to a session that still ends at `tip`. The check
    /// and the append are one transaction, and a transaction holds the
    /// database's write lock from its start (`BEGIN IMMEDIATE`), so two
    /// processes that both saw the same tip cannot both append after it.
    pub fn append_at(
        &mut self,
        session: &str,
        tip: Tip,
        messages: Vec<Message>,
    ) -> Result<AppendedAt> {
        self.session_state(session)?;
        if self::tip(&self.conn, session)? != tip {
            return Ok(AppendedAt::Moved(messages));
        }
        Ok(AppendedAt::Stored(self.append(session, messages)?))
    }
}

pub(crate) fn tip(conn: &Connection, session: &str) -> Result<Tip> {
    let newest = query_row_cached(
        conn,
        "SELECT seq, idx FROM messages WHERE session_id = ?1 ORDER BY seq DESC, idx DESC LIMIT 1",
        params![session],
        |r| {
            Ok(MessageId {
                exchange: ExchangeId(r.get(0)?),
                index: r.get(1)?,
            })
        },
    )
    .optional()?;
    Ok(Tip(newest))
}

impl Reader<'_> {
    pub fn tip(&self, session: &str) -> Result<Tip> {
        self.session(session)?;
        tip(self.conn, session)
    }

    /// The newest `limit` sessions the proxy opened for `tenant` titled
    /// `title` (`proxied_sessions`), newest first, each with its tip.
    pub fn proxied_tips(
        &self,
        tenant: &str,
        title: &str,
        limit: usize,
    ) -> Result<Vec<(SessionListing, Tip)>> {
        self.proxied_sessions(tenant, Some(title), limit)?
            .into_iter()
            .map(|s| {
                let tip = tip(self.conn, &s.id)?;
                Ok((s, tip))
            })
            .collect()
    }

    /// The session's messages after `after`, in order, as `message` returns
    /// each (tool results as their original text): what a client that
    /// resends its whole history is compared against, read from where the
    /// reader last saw the session.
    pub fn session_messages_after(
        &self,
        session: &str,
        after: Tip,
    ) -> Result<Vec<(MessageId, Message)>> {
        self.session(session)?;
        let first = after.0.map_or(1, |m| m.exchange.0);
        let mut out = Vec::new();
        for k in load_messages_from(self.conn, session, first)? {
            if !after.before(k.id) {
                continue;
            }
            let mut message = k.message;
            if let Some(r) = &k.result {
                message.content =
                    String::from_utf8_lossy(&blob_bytes(self.conn, self.blob_dir, &r.blob)?)
                        .into_owned();
            }
            out.push((k.id, message));
        }
        Ok(out)
    }
}

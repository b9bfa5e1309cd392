//! The session's view for one prompt (`core::view::SessionView`): its
//! headers, its window's exchanges, the references and supersessions the
//! prompt can show, every text counted in the prompt's encoding. Read by
//! the writer's `assemble` job only, which keeps it for the next prompt
//! while the store does not change (`KeptView`).

use ctxproxy_core::call::CallLineage;
use ctxproxy_core::config::LayerCaps;
use ctxproxy_core::exchange::{Counted, LevelTokens};
use ctxproxy_core::ids::{BlobHash, ExchangeId};
use ctxproxy_core::packer;
use ctxproxy_core::tokens::Encoding;
use ctxproxy_core::view::{self, BlobRef, ExchangeView, HeaderItem, SessionView};
use rusqlite::{params, Connection, OptionalExtension};

use crate::error::StoreError;
use crate::read::{load_messages_from, stored_context};
use crate::Result;

/// The supersessions a prompt can show: a superseder is newer than what it
/// supersedes, so those whose superseder is at or after the oldest exchange
/// shown cover the headers, the window and the references' exchanges. Read
/// on every assemble: it must stay an index search (a test checks the plan).
const SUPERSEDED_SHOWN: &str =
    "SELECT seq, superseded_by FROM exchanges WHERE session_id = ?1 AND superseded_by >= ?2";

/// The first exchange of a view's headers and of its window, for a session
/// of `count` exchanges: the one place that says which exchanges a view
/// shows (the view reads them; `count_for_view` counts them first in an
/// encoding ingest left out).
pub(crate) fn view_span(count: u32, caps: &LayerCaps, window: u32) -> (u32, u32) {
    (
        count.saturating_sub(caps.max_headers) + 1,
        count.saturating_sub(window) + 1,
    )
}

/// The view last read and what it was read for, kept from one prompt to
/// the next while the store does not change (`kept::Kept`).
#[derive(Default)]
pub(crate) struct KeptView(Option<(ViewKey, SessionView)>);

#[derive(PartialEq, Eq)]
struct ViewKey {
    session: String,
    encoding: Encoding,
    caps: LayerCaps,
    window: u32,
}

impl KeptView {
    /// `session_view`'s view: the one kept when it was read with the same
    /// arguments, else read now. Its recall hits and project memory are the
    /// previous prompt's until the caller sets them.
    pub(crate) fn view(
        &mut self,
        conn: &Connection,
        session: &str,
        encoding: Encoding,
        caps: &LayerCaps,
        window: u32,
    ) -> Result<&mut SessionView> {
        let key = ViewKey {
            session: session.to_string(),
            encoding,
            caps: caps.clone(),
            window,
        };
        let view = match self.0.take() {
            Some((kept, view)) if kept == key => view,
            _ => session_view(conn, session, encoding, caps, window)?,
        };
        Ok(&mut self.0.insert((key, view)).1)
    }
}

/// Everything the packer needs for one prompt, counted in `encoding`.
fn session_view(
    conn: &Connection,
    session: &str,
    encoding: Encoding,
    caps: &LayerCaps,
    window: u32,
) -> Result<SessionView> {
    let col = |name: &str| match encoding {
        Encoding::O200kBase => format!("{name}_o200k"),
        Encoding::Cl100kBase => format!("{name}_cl100k"),
    };
    let (count, context, depth, call): (u32, String, u32, Option<CallLineage>) = conn
        .query_row(
            "SELECT exchange_count, context_current, depth, parent_kind = 'child', parent_id, fork_at,
                call_objective, call_query, call_context
             FROM sessions WHERE id = ?1",
            [session],
            |r| {
                let call = match r.get::<_, Option<bool>>(3)? {
                    Some(true) => Some(CallLineage {
                        parent_session: r.get(4)?,
                        at_exchange: r.get(5)?,
                        parent_objective: r.get::<_, Option<String>>(6)?.unwrap_or_default(),
                        query: r.get::<_, Option<String>>(7)?.unwrap_or_default(),
                        context: r.get::<_, Option<String>>(8)?.unwrap_or_default(),
                    }),
                    _ => None,
                };
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, call))
            },
        )
        .optional()?
        .ok_or_else(|| StoreError::UnknownSession(session.to_string()))?;

    let (first_header, first_window) = view_span(count, caps, window);
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT seq, at, header_line, {} FROM exchanges WHERE session_id = ?1 AND seq >= ?2 ORDER BY seq",
        col("line")
    ))?;
    let headers = stmt
        .query_map(params![session, first_header], |r| {
            Ok(HeaderItem {
                id: ExchangeId(r.get(0)?),
                at: r.get(1)?,
                line: Counted {
                    text: r.get(2)?,
                    tokens: r.get(3)?,
                },
            })
        })?
        .collect::<std::result::Result<Vec<_>, _>>()?;

    let mut stmt = conn.prepare_cached(&format!(
        "SELECT seq, at, header, {}, summary, {}, {}, {} FROM exchanges
         WHERE session_id = ?1 AND seq >= ?2 ORDER BY seq",
        col("header"),
        col("summary"),
        col("full"),
        col("digests")
    ))?;
    let rows = stmt
        .query_map(params![session, first_window], |r| {
            Ok((
                r.get::<_, u32>(0)?,
                r.get::<_, Option<String>>(1)?,
                Counted {
                    text: r.get(2)?,
                    tokens: r.get(3)?,
                },
                Counted {
                    text: r.get(4)?,
                    tokens: r.get(5)?,
                },
                LevelTokens {
                    full: r.get(6)?,
                    digests: r.get(7)?,
                },
            ))
        })?
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let mut messages = load_messages_from(conn, session, first_window)?
        .into_iter()
        .peekable();
    let mut window_views = Vec::with_capacity(rows.len());
    for (seq, at, header, summary, tokens) in rows {
        let messages =
            std::iter::from_fn(|| messages.next_if(|m| m.id.exchange.0 == seq)).collect();
        window_views.push(ExchangeView {
            id: ExchangeId(seq),
            at,
            header,
            summary,
            messages,
            tokens,
        });
    }

    let mut stmt = conn.prepare_cached(&format!(
        "SELECT blob_hash, seq, ref_line, {} FROM messages
         WHERE session_id = ?1 AND ref_line IS NOT NULL AND seq <= ?3
         ORDER BY seq DESC, idx DESC LIMIT ?2",
        col("ref")
    ))?;
    // Newer exchanges are recent and show their blob ids themselves.
    let horizon = packer::references_horizon(count, &window_views, caps).0;
    let candidates = stmt
        .query_map(params![session, caps.max_references * 4, horizon], |r| {
            let h: Vec<u8> = r.get(0)?;
            Ok(BlobRef {
                blob: BlobHash(h.try_into().unwrap_or([0; 32])),
                exchange: ExchangeId(r.get(1)?),
                line: Counted {
                    text: r.get(2)?,
                    tokens: r.get(3)?,
                },
            })
        })?
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let references = view::newest_references(candidates, caps.max_references);
    // Every supersession the prompt can show (`SUPERSEDED_SHOWN`).
    let oldest_shown = references
        .iter()
        .map(|r| r.exchange.0)
        .chain([first_header, first_window])
        .min();
    let mut stmt = conn.prepare_cached(SUPERSEDED_SHOWN)?;
    let superseded = stmt
        .query_map(params![session, oldest_shown], |r| {
            Ok((ExchangeId(r.get(0)?), ExchangeId(r.get(1)?)))
        })?
        .collect::<std::result::Result<_, _>>()?;
    Ok(SessionView {
        session_id: session.to_string(),
        exchange_count: count,
        headers,
        window: window_views,
        references,
        current_context: stored_context(&context)?,
        superseded,
        depth,
        call,
        // The recall block's hits need the question: `Writer::assemble`.
        recall: Default::default(),
        memory: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    /// A scan would read every exchange of the session on every assemble
    /// (30-50 ms at 100,000 exchanges, `ctxproxy bench --sizes 100000`).
    #[test]
    fn the_superseded_query_searches_an_index() {
        let mut conn = Connection::open_in_memory().unwrap();
        crate::schema::migrate(&mut conn).unwrap();
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {}", super::SUPERSEDED_SHOWN))
            .unwrap()
            .query_map(rusqlite::params!["s-1", 1], |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            plan,
            ["SEARCH exchanges USING INDEX exchanges_superseded (session_id=? AND superseded_by>?)"]
        );
    }
}

//! The headers of a session's first exchanges, made again as the exchanges
//! after them arrive: a header's words are compared with at least
//! `HEADER_PEERS` exchanges (`SeenTerms::around`), and the first ones have
//! fewer before them. Without this, every header of a reasoner whose asks
//! all open with the same problem statement is that statement. A header
//! the session's newest prompt shows stays as it is, so that the next
//! prompt keeps that prompt's cached prefix.

use ctxproxy_core::ids::ExchangeId;
use ctxproxy_core::summary::{self, ExchangeFacts, SeenTerms};
use rusqlite::{params, OptionalExtension};

use crate::exchange_row::{self, TextSource};
use crate::read;
use crate::writer::Writer;
use crate::Result;

impl Writer {
    /// Makes the extractive headers of exchanges `1..count` that have fewer
    /// than `HEADER_PEERS` exchanges before them again, compared with the
    /// exchanges after them too; writes those that change. A model-written
    /// header stays, and so does one the newest prompt shows. Returns the
    /// exchanges whose header changed.
    pub(super) fn revise_early_headers(
        &mut self,
        session: &str,
        count: u32,
    ) -> Result<Vec<ExchangeId>> {
        let last = count.min(summary::HEADER_PEERS + 1);
        let mut stmt = self.conn.prepare_cached(
            "SELECT terms, header, header_source FROM exchanges
             WHERE session_id = ?1 AND seq <= ?2 ORDER BY seq",
        )?;
        let rows: Vec<(String, String, String)> = stmt
            .query_map(params![session, last], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?
            .collect::<std::result::Result<_, _>>()?;
        drop(stmt);
        let terms: Vec<Vec<String>> = rows
            .iter()
            .map(|(t, ..)| t.lines().map(str::to_string).collect())
            .collect();
        let Some(shown) = self.header_lines_shown(session)? else {
            return Ok(Vec::new());
        };
        let caps = &self.settings.caps;
        let mut revised = Vec::new();
        let encoding = self.settings.encoding;
        // The newest exchange was headed with all it has before it.
        for (at, (_, stored, source)) in rows.iter().enumerate().take(rows.len().saturating_sub(1))
        {
            let seq = at as u32 + 1;
            if at >= summary::HEADER_PEERS as usize
                || source == TextSource::Model.as_str()
                || shown.contains(&seq)
            {
                continue;
            }
            let facts = ExchangeFacts::of(&read::load_messages(&self.conn, session, seq)?);
            let seen = SeenTerms::around(&terms, at);
            let header = summary::header(&facts, &seen, caps.header_max, encoding);
            if header.text != *stored {
                exchange_row::write_header(
                    &self.conn,
                    session,
                    seq,
                    &header.text,
                    TextSource::Extractive,
                    encoding,
                )?;
                revised.push(ExchangeId(seq));
            }
        }
        if !revised.is_empty() {
            self.standing.forget();
        }
        Ok(revised)
    }

    /// The exchanges the session's newest prompt shows as header lines;
    /// `None` when that is not known (a prompt recorded before the store
    /// kept them): then no header changes.
    fn header_lines_shown(&self, session: &str) -> Result<Option<Vec<u32>>> {
        let newest: Option<Option<String>> = self
            .conn
            .query_row(
                "SELECT headers FROM prompts WHERE session_id = ?1 ORDER BY seq DESC LIMIT 1",
                [session],
                |r| r.get(0),
            )
            .optional()?;
        Ok(match newest {
            None => Some(Vec::new()),
            Some(None) => None,
            Some(Some(list)) => Some(
                list.split_whitespace()
                    .filter_map(|seq| seq.parse().ok())
                    .collect(),
            ),
        })
    }
}

//! Model-written housekeeping: a header, summary or context the model wrote
//! replaces the extractive one.

use ctxproxy_core::context::{self, Housekeeping};
use ctxproxy_core::exchange_record::CountedText;
use ctxproxy_core::summary;
use rusqlite::params;

use crate::append::Event;
use crate::error::StoreError;
use crate::exchange_row::{self, TextSource};
use crate::fulltext::{self, Gist};
use crate::writer::Writer;
use crate::Result;

impl Writer {
    /// Applies model-written housekeeping: header and summary replace the
    /// extractive ones; the current context takes the model's words.
    pub fn housekeeping(&mut self, session: &str, hk: Housekeeping) -> Result<Vec<Event>> {
        let (exchanges, base, current) = self.session_state(session)?;
        let seq = hk.exchange.0;
        if seq == 0 || seq > exchanges {
            return Err(StoreError::UnknownId(hk.exchange.to_string()));
        }
        let caps = self.settings.caps.clone();
        let enc = self.settings.encoding;
        if let Some(h) = &hk.header {
            let h = summary::fit_header(h, &caps, enc);
            exchange_row::write_header(&self.conn, session, seq, &h.text, TextSource::Model, enc)?;
            self.standing.forget();
        }
        if let Some(s) = hk.summary_text() {
            let s = CountedText::new(summary::fit_summary(&s, &caps, enc).text);
            self.conn.execute(
                "UPDATE exchanges SET summary = ?3, summary_source = 'model', summary_o200k = ?4, summary_cl100k = ?5
                 WHERE session_id = ?1 AND seq = ?2",
                params![session, seq, s.text, s.tokens.o200k, s.tokens.cl100k],
            )?;
            fulltext::rewrite(&self.conn, session, seq, Gist::Summary, &s.text)?;
        }
        // The open exchange's context is recomputed from the base on every
        // append, so model-written context applies to both.
        let base = if seq < exchanges {
            context::apply_housekeeping(&base, &hk)
        } else {
            base
        };
        let current = context::apply_housekeeping(&current, &hk);
        self.save_context(session, &base, &current)?;
        Ok(vec![Event::SummaryUpdated {
            session: session.to_string(),
            exchange: hk.exchange,
            source: TextSource::Model,
        }])
    }
}

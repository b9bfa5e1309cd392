//! `supersede`: the one writer of `exchanges.superseded_by`. An exchange
//! that replaces the state earlier ones built (`ctx/append`'s or
//! `ctx/housekeeping`'s `supersedes`) is recorded on each of them; an
//! exchange already superseded keeps its first superseder, so the state a
//! reasoning step replaced is always the one it saw.

use ctxproxy_core::ids::ExchangeId;
use ctxproxy_core::supersede::ExchangeRange;
use rusqlite::params;

use crate::cached::execute_cached;
use crate::error::StoreError;
use crate::writer::Writer;
use crate::Result;

impl Writer {
    /// Marks the exchanges of `ranges` superseded by `by` (stored or being
    /// stored in this transaction). Each range must end before `by`; the
    /// error names the range by its index (`supersedes[1]`).
    pub fn supersede(
        &mut self,
        session: &str,
        by: ExchangeId,
        ranges: &[ExchangeRange],
    ) -> Result<()> {
        if let Some((i, r)) = ranges.iter().enumerate().find(|(_, r)| r.last >= by) {
            return Err(StoreError::Invalid(format!(
                "supersedes[{i}]: {r} is not earlier than {by}, the exchange that supersedes it"
            )));
        }
        if !ranges.is_empty() {
            self.standing.forget();
        }
        for r in ranges {
            execute_cached(
                &self.conn,
                "UPDATE exchanges SET superseded_by = ?2
                 WHERE session_id = ?1 AND seq BETWEEN ?3 AND ?4 AND superseded_by IS NULL",
                params![session, by.0, r.first.0, r.last.0],
            )?;
        }
        Ok(())
    }
}

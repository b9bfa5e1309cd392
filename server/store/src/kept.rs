//! What one prompt's assembly read that the next may take as it is (the
//! session view, the question words' counts), kept by the writer while the
//! store does not change (`Revision`).

use rusqlite::Connection;

use crate::elsewhere::{outside_commits, OutsideCommits};
use crate::recall::WordCounts;
use crate::session_view::KeptView;
use crate::Result;

/// Two revisions of one connection are equal only when nothing was written
/// to the store between them: another process's commit moves
/// `OutsideCommits`, and the connection's count of the rows its own
/// statements inserted, updated or deleted moves with every write of this
/// one, a rolled-back write included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Revision {
    outside: OutsideCommits,
    own_changes: u64,
}

impl Revision {
    fn of(conn: &Connection) -> Result<Revision> {
        Ok(Revision {
            outside: outside_commits(conn)?,
            own_changes: conn.total_changes(),
        })
    }
}

/// Repeated prompts with nothing written in between (a new question on
/// each, a preview, a retried call) read the same rows: the header lines
/// and the window's exchanges with their messages, and the counts of the
/// question's common words, most of an assemble's time in a long session.
#[derive(Default)]
pub(crate) struct Kept {
    /// The store's revision when what is kept was read.
    at: Option<Revision>,
    pub(crate) view: KeptView,
    pub(crate) counts: WordCounts,
}

impl Kept {
    /// Forgets everything kept if the store has changed since it was read:
    /// called by a prompt before it reads.
    pub(crate) fn check(&mut self, conn: &Connection) -> Result<()> {
        let now = Some(Revision::of(conn)?);
        if self.at != now {
            *self = Kept {
                at: now,
                ..Kept::default()
            };
        }
        Ok(())
    }

    /// The writes since `check` were a prompt's record alone, which
    /// nothing kept is read from: what is kept stays past them.
    pub(crate) fn prompt_recorded(&mut self, conn: &Connection) -> Result<()> {
        self.at = Some(Revision::of(conn)?);
        Ok(())
    }
}

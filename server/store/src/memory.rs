//! Project memory's reads (`core::view::ProjectMemory`): what the other
//! sessions of a session's project did, for its prompts.
//!
//! A session's project is its tenant and workspace; the sessions read are
//! the project's other conversations (roots: a fork or a child call is part
//! of its root's conversation), never another project's or tenant's. Only
//! their exchanges stored before the session's own first one are read, so
//! what memory shows is fixed while the session runs: the standing section
//! is byte-identical on every prompt, and the recall hits depend on the
//! question alone.

use std::path::Path;
use std::sync::Arc;

use ctxproxy_core::config::LayerCaps;
use ctxproxy_core::exchange::Counted;
use ctxproxy_core::ids::{self, ExchangeId};
use ctxproxy_core::memory::{self, NoteSource};
use ctxproxy_core::recall::{self, Reach, RecallWord};
use ctxproxy_core::tokens::{self, Encoding};
use ctxproxy_core::view::{MemoryNote, ProjectMemory};
use rusqlite::{params, Connection, OptionalExtension};

use crate::elsewhere::{outside_commits, OutsideCommits};
use crate::recall::{
    distinctive_query, exchange_texts, phrase, CountQuery, Within, WordCounts, CANDIDATES,
    HITS_PER_BLOCK, NEWEST,
};
use crate::{read, Result};

/// One earlier session takes at most this share of the standing section,
/// so the sessions before the newest one are seen too.
const SESSION_SHARE: u32 = 2;

/// The standing section and the project's recent exchanges last built,
/// and what they were built from. Within a session both are the same on
/// every prompt (they read only exchanges stored before the session's
/// first one), so a prompt takes them as they are unless something they
/// were built from has changed: the project's sessions, the row they read
/// before, their caps, the encoding, or an exchange they read (`forget`,
/// which the writer calls when it rewrites a header or supersedes an
/// exchange; another process's commit moves the store's `OutsideCommits`).
#[derive(Default)]
pub(crate) struct StandingSection {
    built: Option<(StandingKey, Standing)>,
}

#[derive(PartialEq, Eq)]
struct StandingKey {
    sessions: Vec<String>,
    before_row: i64,
    caps: (u32, u32),
    encoding: Encoding,
    outside: OutsideCommits,
}

/// What a session's prompts show of the project whatever the question.
#[derive(Clone, Default)]
struct Standing {
    notes: Arc<[MemoryNote]>,
    recent: Arc<[MemoryNote]>,
}

impl StandingSection {
    /// A stored exchange changed: the next prompt builds the section again.
    pub(crate) fn forget(&mut self) {
        self.built = None;
    }

    /// The section within `caps.memory_tokens` and the recent exchanges
    /// within `caps.project_recent_tokens` for `project`: the ones last
    /// built when they were built from the same, else built now.
    fn standing(
        &mut self,
        conn: &Connection,
        project: &Project,
        caps: &LayerCaps,
        encoding: Encoding,
    ) -> Result<Standing> {
        let key = StandingKey {
            sessions: project.sessions.clone(),
            before_row: project.before_row,
            caps: (caps.memory_tokens, caps.project_recent_tokens),
            encoding,
            outside: outside_commits(conn)?,
        };
        if let Some((built, standing)) = &self.built {
            if *built == key {
                return Ok(standing.clone());
            }
        }
        let standing = Standing {
            notes: match caps.memory_tokens {
                0 => Arc::default(),
                cap => notes(conn, project, cap, encoding)?.into(),
            },
            recent: match caps.project_recent_tokens {
                0 => Arc::default(),
                cap => recent(conn, project, cap, encoding)?.into(),
            },
        };
        self.built = Some((key, standing.clone()));
        Ok(standing)
    }
}

/// The project of `session` as memory reads it: the other root sessions of
/// its tenant and workspace, newest first, and the row id before which
/// their exchanges count.
struct Project {
    sessions: Vec<String>,
    before_row: i64,
    exchanges: u32,
}

/// What the project's other sessions give a prompt of `session` for its
/// `question` (`recall::question_for`): the standing section within
/// `caps.memory_tokens`, the recent exchanges within
/// `caps.project_recent_tokens` and the recall hits within
/// `caps.project_recall_max`. Empty when the session has no project.
/// `standing` keeps the first two from one prompt to the next, `counts`
/// the question words' counts.
#[allow(clippy::too_many_arguments)]
pub(crate) fn project_memory(
    conn: &Connection,
    blob_dir: &Path,
    standing: &mut StandingSection,
    counts: &mut WordCounts,
    session: &str,
    question: Option<&str>,
    caps: &LayerCaps,
    encoding: Encoding,
) -> Result<ProjectMemory> {
    let Some(project) = project_of(conn, session)? else {
        return Ok(ProjectMemory::default());
    };
    let Standing { notes, recent } = standing.standing(conn, &project, caps, encoding)?;
    let recall = match (caps.project_recall_max, question) {
        (0, _) | (_, None) => Vec::new(),
        (cap, Some(question)) => hits(conn, blob_dir, counts, &project, question, cap, encoding)?,
    };
    Ok(ProjectMemory {
        notes,
        recall,
        recent,
    })
}

fn project_of(conn: &Connection, session: &str) -> Result<Option<Project>> {
    let Some((tenant, workspace)): Option<(String, String)> = conn
        .prepare_cached("SELECT tenant, workspace FROM sessions WHERE id = ?1")?
        .query_row([session], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?
    else {
        return Ok(None);
    };
    if workspace.is_empty() {
        return Ok(None);
    }
    let root = root_of(conn, session)?;
    let sessions: Vec<(String, u32)> = conn
        .prepare_cached(
            "SELECT id, exchange_count FROM sessions
             WHERE tenant = ?1 AND workspace = ?2 AND parent_id IS NULL AND id != ?3
                AND exchange_count > 0
             ORDER BY rowid DESC",
        )?
        .query_map(params![tenant, workspace, root], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?
        .collect::<std::result::Result<_, _>>()?;
    if sessions.is_empty() {
        return Ok(None);
    }
    // Before the session's first exchange; before its first prompt, every
    // exchange stored so far (the next one stored is the session's own).
    let before_row: i64 = conn
        .prepare_cached(
            "SELECT COALESCE((SELECT MIN(id) FROM exchanges WHERE session_id = ?1),
                             (SELECT COALESCE(MAX(id), 0) + 1 FROM exchanges))",
        )?
        .query_row([session], |r| r.get(0))?;
    Ok(Some(Project {
        exchanges: sessions.iter().map(|s| s.1).sum(),
        sessions: sessions.into_iter().map(|s| s.0).collect(),
        before_row,
    }))
}

/// The root of `session`'s call tree (itself when it has no parent).
fn root_of(conn: &Connection, session: &str) -> Result<String> {
    let mut id = session.to_string();
    // A tree is shallow (`maxDepth` levels of calls, and forks); the bound
    // only guards against a cycle a damaged store could hold.
    for _ in 0..64 {
        let parent: Option<String> = conn
            .prepare_cached("SELECT parent_id FROM sessions WHERE id = ?1")?
            .query_row([&id], |r| r.get(0))
            .optional()?
            .flatten();
        match parent {
            Some(p) => id = p,
            None => break,
        }
    }
    Ok(id)
}

/// The standing section: for each earlier session, newest first, its
/// exchanges newest first, each as `memory::note_line` says it; each
/// session at most `1 / SESSION_SHARE` of the section, the section at most
/// `cap` tokens.
fn notes(conn: &Connection, project: &Project, cap: u32, enc: Encoding) -> Result<Vec<MemoryNote>> {
    let mut notes = Vec::new();
    let mut left = cap;
    let per_session = cap / SESSION_SHARE;
    let mut exchanges = conn.prepare_cached(
        "SELECT e.seq, e.header, e.outcome = 'error',
                (SELECT m.content FROM messages m
                  WHERE m.session_id = e.session_id AND m.seq = e.seq ORDER BY m.idx LIMIT 1),
                EXISTS (SELECT 1 FROM messages m
                  WHERE m.session_id = e.session_id AND m.seq = e.seq AND m.role = 'tool')
         FROM exchanges e
         WHERE e.session_id = ?1 AND e.id < ?2 AND e.superseded_by IS NULL
         ORDER BY e.seq DESC",
    )?;
    let mut digests = conn.prepare_cached(
        "SELECT content FROM messages WHERE session_id = ?1 AND seq = ?2 AND role = 'tool'
         ORDER BY idx",
    )?;
    for session in &project.sessions {
        let mut room = per_session.min(left);
        let rows = exchanges.query_map(params![session, project.before_row], |r| {
            Ok((
                r.get::<_, u32>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, bool>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, bool>(4)?,
            ))
        })?;
        for row in rows {
            let (seq, header, failed, opening, ran_tools) = row?;
            let id = ids::qualified(Some(session), ExchangeId(seq));
            // Only a failure's line reads its outputs' digests.
            let outputs: Vec<String> = match failed && ran_tools {
                true => digests
                    .query_map(params![session, seq], |r| r.get(0))?
                    .collect::<std::result::Result<_, _>>()?,
                false => Vec::new(),
            };
            let line = memory::note_line(&NoteSource {
                id: &id,
                header: &header,
                opening: opening.as_deref().unwrap_or_default(),
                ran_tools,
                failed,
                digests: &outputs,
            });
            let tokens = tokens::count(enc, &line);
            if tokens > room {
                break;
            }
            room -= tokens;
            left -= tokens;
            notes.push(MemoryNote {
                id,
                line: Counted { text: line, tokens },
            });
        }
        if left == 0 {
            break;
        }
    }
    Ok(notes)
}

/// The project's newest exchanges before the session, each as
/// `memory::transcript` writes it, up to `cap` tokens: the newest session's
/// newest first, then the session before it, as a window over the project's
/// history keeps the newest whole messages it can (one exchange too large
/// for what is left, a long tool loop, does not hide the ones before it).
/// At most `NEWEST` exchanges are read.
fn recent(
    conn: &Connection,
    project: &Project,
    cap: u32,
    enc: Encoding,
) -> Result<Vec<MemoryNote>> {
    let mut exchanges = conn.prepare_cached(
        "SELECT seq FROM exchanges
         WHERE session_id = ?1 AND id < ?2 AND superseded_by IS NULL
         ORDER BY seq DESC",
    )?;
    let mut recent = Vec::new();
    let mut left = cap;
    let mut seen = 0;
    for session in &project.sessions {
        let seqs = exchanges.query_map(params![session, project.before_row], |r| r.get(0))?;
        for seq in seqs {
            let seq: u32 = seq?;
            if seen == NEWEST {
                return Ok(recent);
            }
            seen += 1;
            let id = ids::qualified(Some(session), ExchangeId(seq));
            let text = memory::transcript(&id, &read::load_messages(conn, session, seq)?);
            let tokens = tokens::count(enc, &text);
            if tokens > left {
                continue;
            }
            left -= tokens;
            recent.push(MemoryNote {
                id,
                line: Counted { text, tokens },
            });
        }
    }
    Ok(recent)
}

/// The row id from which the project's newest `NEWEST` exchanges before
/// `before_row` run; `None` when it has no more than that many.
fn newest_rows(conn: &Connection, sessions: &str, before_row: i64) -> Result<Option<i64>> {
    // Read back from `before_row` by row id (`+`: not through the index
    // of each session's exchanges, which would read them all to sort).
    Ok(conn
        .prepare_cached(
            "SELECT id FROM exchanges
             WHERE id < ?1 AND +session_id IN (SELECT value FROM json_each(?2))
             ORDER BY id DESC LIMIT 1 OFFSET ?3",
        )?
        .query_row(params![before_row, sessions, NEWEST - 1], |r| r.get(0))
        .optional()?)
}

/// In how many of the project's exchanges from row id `from` up to its
/// `before_row` the index finds `query`, counted up to `common + 1`. A
/// count `counts` holds is not taken again.
fn exchanges_with(
    conn: &Connection,
    counts: &mut WordCounts,
    query: &str,
    from: i64,
    project: &Project,
    sessions: &str,
    common: u32,
) -> Result<u32> {
    let counted = CountQuery {
        query: query.to_string(),
        within: Within::Project {
            sessions: sessions.to_string(),
            from,
            before: project.before_row,
        },
        up_to: common + 1,
    };
    // The index first (`CROSS JOIN`): read from the exchanges' side, each
    // of them would be a query of the index of its own.
    counts.get_or(counted, || {
        Ok(conn
            .prepare_cached(
                "SELECT count(*) FROM (
                    SELECT t.rowid FROM exchange_text t CROSS JOIN exchanges e ON e.id = t.rowid
                    WHERE exchange_text MATCH ?1 AND t.rowid >= ?2 AND t.rowid < ?3
                       AND e.session_id IN (SELECT value FROM json_each(?4))
                    LIMIT ?5)",
            )?
            .query_row(
                params![query, from, project.before_row, sessions, common + 1],
                |r| r.get(0),
            )?)
    })
}

/// The other sessions' lines that match `question`, best first, as the
/// session's own recall picks them (`core::recall`): the question's
/// distinctive words among the project's exchanges, ranked by the
/// full-text index, each hit's passage under ids that name its session.
fn hits(
    conn: &Connection,
    blob_dir: &Path,
    counts: &mut WordCounts,
    project: &Project,
    question: &str,
    cap: u32,
    enc: Encoding,
) -> Result<Vec<recall::RecallHit>> {
    let sessions = serde_json::to_string(&project.sessions).expect("strings serialize");
    let common = recall::common_count(project.exchanges);
    // A word common among the project's newest exchanges is common, as in
    // the session's own recall: checked there first, where counting it
    // stops soonest (a word every exchange uses would otherwise be counted
    // through a quarter of the project).
    let newest = newest_rows(conn, &sessions, project.before_row)?;
    let newest_common = recall::common_count(NEWEST);
    let mut words = Vec::new();
    for word in recall::question_words(question) {
        let query = phrase(&word);
        let in_newest = match newest {
            Some(from) => exchanges_with(
                conn,
                counts,
                &query,
                from,
                project,
                &sessions,
                newest_common,
            )?,
            None => 0,
        };
        let exchanges = match in_newest {
            n if n > newest_common => common + 1,
            _ => exchanges_with(conn, counts, &query, 0, project, &sessions, common)?,
        };
        words.push(RecallWord {
            word,
            exchanges,
            distinctive: false,
        });
    }
    let words = recall::weigh(words, project.exchanges, Reach::PROJECT);
    let Some(query) = distinctive_query(&words) else {
        return Ok(Vec::new());
    };
    // The index first, as in `exchanges_with`.
    let ranked: Vec<(String, u32)> = conn
        .prepare_cached(
            "SELECT e.session_id, e.seq FROM exchange_text t CROSS JOIN exchanges e ON e.id = t.rowid
             WHERE exchange_text MATCH ?1 AND t.rowid < ?2
                AND e.session_id IN (SELECT value FROM json_each(?3))
                AND e.superseded_by IS NULL
             ORDER BY bm25(exchange_text), e.id DESC LIMIT ?4",
        )?
        .query_map(
            params![query, project.before_row, sessions, CANDIDATES],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?
        .collect::<std::result::Result<_, _>>()?;
    let per_hit = cap / HITS_PER_BLOCK;
    let mut hits = Vec::new();
    for (session, seq) in ranked {
        let texts = exchange_texts(conn, blob_dir, &session, seq)?;
        if let Some(hit) = recall::passage(
            Some(&session),
            ExchangeId(seq),
            &texts,
            &words,
            Reach::PROJECT,
            enc,
            per_hit,
        ) {
            hits.push(hit);
        }
    }
    Ok(recall::choose(hits, Reach::PROJECT))
}

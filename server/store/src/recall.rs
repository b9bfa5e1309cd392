//! The recall block's candidates (`core::recall`): the session's earlier
//! exchanges that hold the question's distinctive words, ranked by the
//! full-text index of their text, each with the texts (message contents,
//! tool outputs from their blobs) `core::recall::passage` cuts lines from.
//!
//! Only exchanges older than the one the question opens are searched, and
//! only their text (not their headers, which early headers may rewrite), so
//! every model call of one exchange gets the same hits.

use std::collections::HashMap;
use std::path::Path;

use ctxproxy_core::config::LayerCaps;
use ctxproxy_core::ids::{ExchangeId, MessageId};
use ctxproxy_core::message::Role;
use ctxproxy_core::recall::{self, Reach, RecallText, RecallWord};
use ctxproxy_core::tokens::Encoding;
use ctxproxy_core::view::Recall;
use rusqlite::{params, Connection, OptionalExtension};

use crate::read;
use crate::Result;

/// How far back recall looks: the newest this many exchanges before the
/// question. The index is read within their row ids only, so an assemble
/// costs the same in a session of 2,000 exchanges as in one of 100,000.
const HORIZON: u32 = 2_000;
/// A word's commonness is checked first among this many newest exchanges.
pub(crate) const NEWEST: u32 = 200;
/// Exchanges ranked by the index before their passages are cut: more than
/// fit the block, since some fall below the bar or are shown whole.
pub(crate) const CANDIDATES: u32 = 16;
/// A hit's passage takes at most this share of `recall_max`, so that
/// several hits fit.
pub(crate) const HITS_PER_BLOCK: u32 = 2;

/// How many words `WordCounts` keeps at most: past that it starts again.
const KEPT_WORDS: usize = 1_024;

/// In how many exchanges a question's words occur, as the session's recall
/// and project memory's counted them, kept from one prompt to the next
/// while the store does not change (`kept::Kept`): a person's questions
/// repeat their common words.
#[derive(Default)]
pub(crate) struct WordCounts(HashMap<CountQuery, u32>);

/// What a count counted: a full-text query's rows within a range, up to a
/// limit.
#[derive(PartialEq, Eq, Hash)]
pub(crate) struct CountQuery {
    pub(crate) query: String,
    pub(crate) within: Within,
    pub(crate) up_to: u32,
}

/// The rows a count reads: the session's own, by row id (`first ..=
/// last`), or the project sessions' (a JSON list of their ids) from row id
/// `from` up to before `before`.
#[derive(PartialEq, Eq, Hash)]
pub(crate) enum Within {
    Rows(i64, i64),
    Project {
        sessions: String,
        from: i64,
        before: i64,
    },
}

impl WordCounts {
    /// The count of `query` kept, else the one `count` takes, kept.
    pub(crate) fn get_or(
        &mut self,
        query: CountQuery,
        count: impl FnOnce() -> Result<u32>,
    ) -> Result<u32> {
        if let Some(&n) = self.0.get(&query) {
            return Ok(n);
        }
        let n = count()?;
        if self.0.len() >= KEPT_WORDS {
            self.0.clear();
        }
        self.0.insert(query, n);
        Ok(n)
    }
}

/// The recall block's hits for a prompt of `session`, for the exchange it
/// serves and its question (`question_for`).
pub(crate) fn recall(
    conn: &Connection,
    blob_dir: &Path,
    counts: &mut WordCounts,
    session: &str,
    asked: Option<&(ExchangeId, String)>,
    caps: &LayerCaps,
    encoding: Encoding,
) -> Result<Recall> {
    let Some((for_exchange, question)) = asked else {
        return Ok(Recall::default());
    };
    let for_exchange = *for_exchange;
    let none = Recall {
        for_exchange,
        hits: Vec::new(),
    };
    let first = for_exchange.0.saturating_sub(HORIZON).max(1);
    let earlier = for_exchange.0 - first;
    if earlier == 0 || caps.recall_max == 0 {
        return Ok(none);
    }
    let Some(rows) = row_ids(conn, session, first, for_exchange)? else {
        return Ok(none);
    };
    // A word in more than this many of them is not distinctive: counting
    // stops there.
    let common = recall::common_count(earlier);
    // A word common among the newest exchanges is common: checked there
    // first, where counting it stops soonest.
    let newest = for_exchange.0.saturating_sub(NEWEST).max(first);
    let newest_rows = row_ids(conn, session, newest, for_exchange)?.unwrap_or(rows);
    let newest_common = recall::common_count(for_exchange.0 - newest);
    let mut words = Vec::new();
    for word in recall::question_words(question) {
        let query = phrase(&word);
        let exchanges = match exchanges_with(conn, counts, newest_rows, &query, newest_common)? {
            n if n > newest_common => common + 1,
            _ => exchanges_with(conn, counts, rows, &query, common)?,
        };
        words.push(RecallWord {
            word,
            exchanges,
            distinctive: false,
        });
    }
    let words = recall::weigh(words, earlier, Reach::OWN);
    let Some(query) = distinctive_query(&words) else {
        return Ok(none);
    };
    // The index first (`CROSS JOIN`): SQLite would otherwise read the
    // session's exchanges and query the index once for each of them, 65 ms
    // at 1,000 exchanges.
    let ranked: Vec<u32> = conn
        .prepare_cached(
            "SELECT e.seq FROM exchange_text t CROSS JOIN exchanges e ON e.id = t.rowid
             WHERE exchange_text MATCH ?1 AND t.rowid BETWEEN ?2 AND ?3
                AND e.session_id = ?4 AND e.seq < ?5
             ORDER BY bm25(exchange_text), e.seq LIMIT ?6",
        )?
        .query_map(
            params![query, rows.0, rows.1, session, for_exchange.0, CANDIDATES],
            |r| r.get(0),
        )?
        .collect::<std::result::Result<_, _>>()?;
    let per_hit = caps.recall_max / HITS_PER_BLOCK;
    let mut hits = Vec::new();
    for seq in ranked {
        let texts = exchange_texts(conn, blob_dir, session, seq)?;
        if let Some(hit) = recall::passage(
            None,
            ExchangeId(seq),
            &texts,
            &words,
            Reach::OWN,
            encoding,
            per_hit,
        ) {
            hits.push(hit);
        }
    }
    Ok(Recall {
        for_exchange,
        hits: recall::choose(hits, Reach::OWN),
    })
}

/// The exchange a prompt of `session` (`count` exchanges) serves and its
/// question: `question` when the prompt's input opens a new exchange with
/// it, else the newest exchange's opening message (its tool loop); `None`
/// before the first exchange without an input.
pub(crate) fn question_for(
    conn: &Connection,
    session: &str,
    count: u32,
    question: Option<&str>,
) -> Result<Option<(ExchangeId, String)>> {
    Ok(match question {
        Some(q) => Some((ExchangeId(count + 1), q.to_string())),
        None if count == 0 => None,
        None => Some((ExchangeId(count), opening_text(conn, session, count)?)),
    })
}

/// The weighed words' distinctive ones as one full-text query (any of
/// them); `None` when none is.
pub(crate) fn distinctive_query(words: &[RecallWord]) -> Option<String> {
    let query = words
        .iter()
        .filter(|w| w.distinctive)
        .map(|w| phrase(&w.word))
        .collect::<Vec<_>>()
        .join(" OR ");
    (!query.is_empty()).then_some(query)
}

/// A word as an FTS5 phrase (quoted, so `-` and `:` are not operators).
pub(crate) fn phrase(word: &str) -> String {
    format!("\"{}\"", word.replace('"', "\"\""))
}

/// The row ids of the session's exchanges `first ..` up to before
/// `before`: the range the index is read in (a session's exchanges get
/// increasing row ids, a fork's copies too). `None` when it has none.
fn row_ids(
    conn: &Connection,
    session: &str,
    first: u32,
    before: ExchangeId,
) -> Result<Option<(i64, i64)>> {
    let id = |seq: u32| -> Result<Option<i64>> {
        Ok(conn
            .prepare_cached("SELECT id FROM exchanges WHERE session_id = ?1 AND seq = ?2")?
            .query_row(params![session, seq], |r| r.get(0))
            .optional()?)
    };
    if first >= before.0 {
        return Ok(None);
    }
    Ok(id(first)?.zip(id(before.0 - 1)?))
}

/// In how many rows of the range the index finds `query`, counted up to
/// `common + 1`. The rows of another session written between the
/// session's own (several sessions at once) count too: a word's rarity is
/// an estimate, and reading only the range keeps it cheap. A count
/// `counts` holds is not taken again.
fn exchanges_with(
    conn: &Connection,
    counts: &mut WordCounts,
    rows: (i64, i64),
    query: &str,
    common: u32,
) -> Result<u32> {
    let counted = CountQuery {
        query: query.to_string(),
        within: Within::Rows(rows.0, rows.1),
        up_to: common + 1,
    };
    counts.get_or(counted, || {
        Ok(conn
            .prepare_cached(
                "SELECT count(*) FROM (SELECT rowid FROM exchange_text
                 WHERE exchange_text MATCH ?1 AND rowid BETWEEN ?2 AND ?3 LIMIT ?4)",
            )?
            .query_row(params![query, rows.0, rows.1, common + 1], |r| r.get(0))?)
    })
}

/// The text of the message that opened exchange `seq`.
fn opening_text(conn: &Connection, session: &str, seq: u32) -> Result<String> {
    Ok(conn
        .prepare_cached(
            "SELECT content FROM messages WHERE session_id = ?1 AND seq = ?2 ORDER BY idx LIMIT 1",
        )?
        .query_row(params![session, seq], |r| r.get(0))
        .optional()?
        .unwrap_or_default())
}

/// What a passage may quote of an exchange: each message's content (a tool
/// output's from its blob, so the line numbers are the output's own) and
/// the arguments of each tool call.
pub(crate) fn exchange_texts(
    conn: &Connection,
    blob_dir: &Path,
    session: &str,
    seq: u32,
) -> Result<Vec<RecallText>> {
    let mut texts = Vec::new();
    for kept in read::load_messages(conn, session, seq)? {
        let message = MessageId {
            exchange: ExchangeId(seq),
            index: kept.id.index,
        };
        match &kept.result {
            Some(result) => {
                let bytes = read::blob_bytes(conn, blob_dir, &result.blob)?;
                texts.push(RecallText {
                    message,
                    blob: Some(result.blob),
                    text: String::from_utf8_lossy(&bytes).into_owned(),
                });
            }
            None => texts.push(RecallText {
                message,
                blob: None,
                text: kept.message.content.clone(),
            }),
        }
        if kept.message.role == Role::Assistant {
            texts.extend(kept.message.tool_calls.iter().map(|call| RecallText {
                message,
                blob: None,
                text: call.arguments.clone(),
            }));
        }
    }
    Ok(texts)
}

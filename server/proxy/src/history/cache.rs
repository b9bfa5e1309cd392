//! The histories the proxy keeps between a conversation's requests (see
//! `history`): the most recently used, at most `MAX_HISTORIES` of them and
//! `MAX_BYTES` in all (and none over `IDLE_MAX_BYTES` while the proxy is
//! idle), each with the API and the session header it came with.
//!
//! A request takes out the history its body continues, chosen on the
//! body's first bytes before the rest arrives (`receive` compares the rest
//! as it comes), and puts its own back once read. Two requests of one
//! conversation at once: the second finds none and is read whole.

use std::sync::Mutex;

use super::History;
use ctxproxy_service::format::Format;

/// Conversations kept: a sidecar serves one developer's assistants and
/// their sub-agents.
pub const MAX_HISTORIES: usize = 16;

/// Memory kept in all (bodies and their reading): a 1,000-exchange
/// conversation holds about 15 MiB.
pub const MAX_BYTES: usize = 256 << 20;

/// A history over this size is not kept while the proxy is idle
/// (`take_large`): a 1,000-exchange conversation (about 15 MiB) keeps its
/// own, while a body of 100,000 short messages would hold 7 times its
/// 4 MB until the client came back, to save reading it whole again (about
/// 0.1-0.4 s more on the release build).
pub const IDLE_MAX_BYTES: usize = 16 << 20;

struct Kept {
    format: Format,
    key: Option<String>,
    size: usize,
    history: History,
}

/// Kept histories, most recently used first.
#[derive(Default)]
pub struct HistoryCache {
    kept: Mutex<Vec<Kept>>,
}

impl HistoryCache {
    /// Takes out the history a body starting with `head` continues: of
    /// the same API and session header, whose body `head` repeats whole
    /// (or up to its last message: the body after it), the one it repeats
    /// furthest, the most recent of equals. A history whose conversation
    /// `head` does not continue is left for its own.
    pub fn take(&self, format: Format, key: Option<&str>, head: &[u8]) -> Option<History> {
        let mut kept = self.kept.lock().expect("histories lock");
        let mut best: Option<(usize, usize)> = None;
        for (i, k) in kept.iter().enumerate() {
            if k.format != format || k.key.as_deref() != key {
                continue;
            }
            let Some(open) = k.history.resumable_past() else {
                continue;
            };
            let same = common_prefix(k.history.body(), head);
            let continued = same == head.len() || same >= k.history.last_end();
            if continued && same > open && best.is_none_or(|(_, b)| same > b) {
                best = Some((i, same));
            }
        }
        best.map(|(i, _)| kept.remove(i).history)
    }

    /// Keeps a request's history, first; returns the histories that no
    /// longer fit, to be freed off the request's path.
    #[must_use]
    pub fn put(&self, format: Format, key: Option<String>, history: History) -> Vec<History> {
        let size = history.size();
        if size > MAX_BYTES || history.resumable_past().is_none() {
            return vec![history];
        }
        let mut kept = self.kept.lock().expect("histories lock");
        kept.insert(
            0,
            Kept {
                format,
                key,
                size,
                history,
            },
        );
        let mut total: usize = kept.iter().map(|k| k.size).sum();
        let mut evicted = Vec::new();
        while kept.len() > MAX_HISTORIES || total > MAX_BYTES {
            let k = kept.pop().expect("over a limit, so not empty");
            total -= k.size;
            evicted.push(k.history);
        }
        evicted
    }
}

impl HistoryCache {
    /// Takes out the histories over `IDLE_MAX_BYTES`, to be freed while
    /// the proxy is idle.
    #[must_use]
    pub fn take_large(&self) -> Vec<History> {
        let mut kept = self.kept.lock().expect("histories lock");
        let (large, small) = std::mem::take(&mut *kept)
            .into_iter()
            .partition(|k| k.size > IDLE_MAX_BYTES);
        *kept = small;
        large.into_iter().map(|k| k.history).collect()
    }
}

/// How many leading bytes `a` and `b` share: compared a block at a time
/// (`memcmp`), a byte at a time only within the block that differs.
pub fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 4096;
    let n = a.len().min(b.len());
    let mut at = 0;
    while at < n {
        let end = (at + BLOCK).min(n);
        if a[at..end] != b[at..end] {
            let differs = a[at..end].iter().zip(&b[at..end]).position(|(x, y)| x != y);
            return at + differs.expect("the blocks differ");
        }
        at = end;
    }
    n
}

//! Memory given back to the system once the proxy is idle after a large
//! request: the kept histories too large to keep while idle freed, then
//! the allocator's free pages released. glibc's malloc keeps what a request freed (its body's reading,
//! the store's batches, spread over the arenas of the threads that made
//! them) for the process's lifetime; `malloc_trim` releases the free pages
//! of every arena. It runs when no request has been in flight for `IDLE`:
//! trimmed while the request still records its reply, the pages it frees
//! after would stay, and a request that follows at once would fault back in
//! the pages it needs.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::history::cache::HistoryCache;

/// A body from this size on is large: once the proxy is idle after it, the
/// memory it took is given back.
pub const LARGE_BODY: usize = 1 << 20;

/// How long no request must be in flight before memory is given back:
/// longer than an assistant's tool calls usually take between two requests
/// of a conversation (whose large kept history is then still there), well
/// within the 10 s in which memory is to be back.
const IDLE: Duration = Duration::from_secs(5);

/// The requests in flight, and whether a large one ran since the last trim.
#[derive(Default)]
pub struct Trimmer {
    busy: AtomicUsize,
    /// Requests begun so far: one that began during the wait ends the idleness.
    begun: AtomicU64,
    large: AtomicBool,
    idle: Notify,
}

/// A request in flight; dropped when it ends (its reply recorded).
pub struct Busy {
    trimmer: Arc<Trimmer>,
}

impl Trimmer {
    pub fn begin(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::SeqCst);
        self.begun.fetch_add(1, Ordering::SeqCst);
        Busy {
            trimmer: self.clone(),
        }
    }

    /// Gives memory back each time the proxy has been idle for `IDLE`
    /// after a large request, the kept histories too large to keep while
    /// idle (`HistoryCache::take_large`) first; runs for the proxy's
    /// lifetime.
    pub async fn run(self: Arc<Self>, histories: Arc<HistoryCache>) {
        loop {
            self.idle.notified().await;
            loop {
                let begun = self.begun.load(Ordering::SeqCst);
                tokio::time::sleep(IDLE).await;
                let quiet = self.busy.load(Ordering::SeqCst) == 0
                    && self.begun.load(Ordering::SeqCst) == begun;
                if quiet {
                    break;
                }
            }
            self.large.store(false, Ordering::SeqCst);
            let large = histories.take_large();
            let _ = tokio::task::spawn_blocking(move || {
                drop(large);
                give_memory_back();
            })
            .await;
        }
    }
}

impl Busy {
    /// The request's body is large (`LARGE_BODY`).
    pub fn large(&self) {
        self.trimmer.large.store(true, Ordering::SeqCst);
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let t = &self.trimmer;
        if t.busy.fetch_sub(1, Ordering::SeqCst) == 1 && t.large.load(Ordering::SeqCst) {
            t.idle.notify_one();
        }
    }
}

/// Keeps every allocation from `MMAP_FROM` on in a mapping of its own,
/// unmapped when it is freed. glibc raises that threshold to the size of
/// the largest mapped block freed (up to 32 MiB), after which a request's
/// large lists (a body, its messages, the store's batches) are carved out
/// of the arenas, where the small allocations made beside them keep their
/// pages from being given back.
pub fn map_large_blocks() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets the allocator's parameter.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_FROM);
    }
}

/// glibc's default threshold, fixed.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_FROM: libc::c_int = 128 << 10;

/// Hands the allocator's free memory back to the system.
fn give_memory_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

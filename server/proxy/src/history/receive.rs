//! Receiving a model request's body into the buffer of the body its
//! conversation sent last: what the new body repeats is compared where it
//! lies, not copied, and the new bytes are appended after the first that
//! differs. Collecting a 7 MB body into fresh memory costs more than
//! reading it off the socket (every page of it faulted in, every chunk of
//! the connection's buffer given up for a new one); a resent history is
//! mostly bytes already in memory.

use axum::body::{Body, Bytes};
use futures_util::StreamExt;

use super::cache::{common_prefix, HistoryCache};
use super::{read_resumed, read_whole, History, Read};
use crate::api::{Api, BadRequest};
use ctxproxy_service::format::Format;

/// The first bytes a body is matched to a kept history by: enough to tell
/// conversations apart by their system prompt and first messages.
const HEAD: usize = 64 << 10;

/// Room reserved up front at most, whatever `content-length` claims.
const MAX_RESERVED: usize = 64 << 20;

/// A body received.
pub struct Received {
    pub body: Vec<u8>,
    /// The history the body continues, and how many leading bytes of its
    /// body the new one repeats.
    pub previous: Option<(History, usize)>,
}

impl Received {
    /// Reads the body: from the history it continues when that can be
    /// vouched for, else whole. Also says which (`true`: resumed).
    pub fn read<A: Api>(self) -> (Result<Read, BadRequest>, bool) {
        match self.previous {
            Some((previous, same)) => match read_resumed::<A>(previous, self.body, same) {
                Ok(read) => (Ok(read), true),
                Err(body) => (read_whole::<A>(body), false),
            },
            None => (read_whole::<A>(self.body), false),
        }
    }
}

/// Receives a body (`expected`: its `content-length`, when given) over
/// the kept history of the same API and session header that it repeats.
pub async fn receive(
    body: Body,
    histories: &HistoryCache,
    format: Format,
    key: Option<&str>,
    expected: usize,
) -> Result<Received, axum::Error> {
    let mut chunks = body.into_data_stream();
    // The chunks up to the head's end, held as they came: a first chunk
    // that holds the head (the usual case) is not copied.
    let mut first: Vec<Bytes> = Vec::new();
    let mut held = 0;
    let mut ended = false;
    while held < HEAD {
        match chunks.next().await {
            Some(chunk) => {
                let chunk = chunk?;
                held += chunk.len();
                first.push(chunk);
            }
            None => {
                ended = true;
                break;
            }
        }
    }
    let joined;
    let head: &[u8] = match first.as_slice() {
        [one] => one,
        _ => {
            joined = first.concat();
            &joined
        }
    };
    // Chunks may overshoot: the match is on the head alone, whatever the
    // chunking.
    let mut previous = histories.take(format, key, &head[..head.len().min(HEAD)]);
    let buffer = match &mut previous {
        Some(history) => history.take_body(),
        None => Vec::new(),
    };
    let mut into = Overwrite::new(buffer, expected.min(MAX_RESERVED));
    for chunk in first {
        into.feed(&chunk);
    }
    while !ended {
        match chunks.next().await {
            Some(chunk) => into.feed(&chunk?),
            None => ended = true,
        }
    }
    let (body, same) = into.finish();
    Ok(Received {
        body,
        previous: previous.map(|h| (h, same)),
    })
}

/// A buffer holding an earlier body, overwritten by a new one from the
/// first byte that differs.
struct Overwrite {
    buffer: Vec<u8>,
    /// The new body's bytes so far.
    len: usize,
    /// Where the new body first differs from the earlier one, once it does.
    differs: Option<usize>,
}

impl Overwrite {
    fn new(mut buffer: Vec<u8>, expected: usize) -> Overwrite {
        buffer.reserve(expected.saturating_sub(buffer.len()));
        Overwrite {
            buffer,
            len: 0,
            differs: None,
        }
    }

    fn feed(&mut self, chunk: &[u8]) {
        if self.differs.is_none() {
            let earlier = &self.buffer[self.len..];
            let same = common_prefix(earlier, chunk);
            if same == chunk.len() {
                self.len += same;
                return;
            }
            self.differs = Some(self.len + same);
            self.buffer.truncate(self.len + same);
            self.buffer.extend_from_slice(&chunk[same..]);
        } else {
            self.buffer.extend_from_slice(chunk);
        }
        self.len += chunk.len();
    }

    /// The new body, and how many of its leading bytes the earlier one had.
    fn finish(mut self) -> (Vec<u8>, usize) {
        let same = self.differs.unwrap_or(self.len);
        self.buffer.truncate(self.len);
        (self.buffer, same)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `new` in chunks of `size` over `earlier`.
    fn overwrite(earlier: &[u8], new: &[u8], size: usize) -> (Vec<u8>, usize) {
        let mut into = Overwrite::new(earlier.to_vec(), 0);
        for chunk in new.chunks(size) {
            into.feed(chunk);
        }
        into.finish()
    }

    #[test]
    fn the_new_body_replaces_the_earlier_from_the_first_byte_that_differs() {
        let cases: [(&[u8], &[u8], usize); 7] = [
            (b"", b"abc", 0),
            (b"abc", b"abc", 3),
            (b"abcdef", b"abc", 3),
            (b"abc", b"abcdef", 3),
            (b"abXdef", b"abcdef", 2),
            (b"abcdef", b"Xbcdef", 0),
            (b"abcdef", b"", 0),
        ];
        for (earlier, new, same) in cases {
            for size in 1..=4 {
                assert_eq!(
                    overwrite(earlier, new, size),
                    (new.to_vec(), same),
                    "{earlier:?} then {new:?} in chunks of {size}"
                );
            }
        }
    }

    #[test]
    fn common_prefixes_span_blocks() {
        let a = vec![7u8; 10_000];
        let mut b = a.clone();
        assert_eq!(common_prefix(&a, &b), 10_000);
        b[9_000] = 8;
        assert_eq!(common_prefix(&a, &b), 9_000);
        assert_eq!(common_prefix(&a[..5_000], &b), 5_000);
    }
}

//! Server-sent events, byte-level: a framer that cuts an upstream byte
//! stream into events wherever the chunks happen to split it, and the
//! encoding of the events the proxy sends.
//!
//! A small framer of our own rather than `eventsource-stream`: the proxy must
//! see each event the moment its blank line arrives (no buffering beyond
//! one event), keep `event:` names and `data:` text exactly, and encode
//! events again; the crate decodes only, and its UTF-8 stream adapter would
//! sit between us and the bytes. The property test below feeds every event
//! list through arbitrary chunk splits.

/// One event: its `event:` name (empty when absent) and its `data:` lines
/// joined by `\n`. Comments and `id:` / `retry:` fields are dropped: no
/// upstream the proxy speaks to sends them with meaning.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Event {
    pub event: String,
    pub data: String,
}

impl Event {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = String::new();
        if !self.event.is_empty() {
            out.push_str("event: ");
            out.push_str(&self.event);
            out.push('\n');
        }
        for line in self.data.split('\n') {
            out.push_str("data: ");
            out.push_str(line);
            out.push('\n');
        }
        out.push('\n');
        out.into_bytes()
    }
}

/// An SSE comment line, the keep-alive that every SSE client ignores.
pub fn comment(text: &str) -> Vec<u8> {
    format!(": {text}\n\n").into_bytes()
}

/// Accumulates bytes and hands out each complete event.
#[derive(Default)]
pub struct Framer {
    buffer: Vec<u8>,
    /// Where scanning for the end of a line resumes: bytes before it hold no
    /// complete line (keeps a slow stream linear, not quadratic).
    scanned: usize,
    current: Event,
    has_data: bool,
}

impl Framer {
    /// Feeds a chunk; returns the events it completed, in order.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Event> {
        self.buffer.extend_from_slice(chunk);
        let mut events = Vec::new();
        let mut start = 0;
        let mut i = self.scanned;
        while i < self.buffer.len() {
            let b = self.buffer[i];
            if b == b'\n' || b == b'\r' {
                // A lone `\r` at the end may be the first half of `\r\n`.
                if b == b'\r' && i + 1 == self.buffer.len() {
                    break;
                }
                let line = String::from_utf8_lossy(&self.buffer[start..i]).into_owned();
                let next = if b == b'\r' && self.buffer[i + 1] == b'\n' {
                    i + 2
                } else {
                    i + 1
                };
                if let Some(e) = self.line(&line) {
                    events.push(e);
                }
                start = next;
                i = next;
            } else {
                i += 1;
            }
        }
        self.buffer.drain(..start);
        self.scanned = self
            .buffer
            .len()
            .saturating_sub(usize::from(self.buffer.last() == Some(&b'\r')));
        events
    }

    fn line(&mut self, line: &str) -> Option<Event> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.current.event = value.to_string(),
            "data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<Event> {
        let event = std::mem::take(&mut self.current);
        let had = std::mem::take(&mut self.has_data);
        (had || !event.event.is_empty()).then_some(event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frame_all(chunks: &[&[u8]]) -> Vec<Event> {
        let mut f = Framer::default();
        chunks.iter().flat_map(|c| f.push(c)).collect()
    }

    #[test]
    fn names_data_comments_and_line_endings() {
        let input = b": keep-alive\r\n\r\nevent: ping\r\ndata: {\"type\": \"ping\"}\r\n\r\ndata: a\ndata:b\n\ndata: [DONE]\n\n";
        let events = frame_all(&[input]);
        assert_eq!(
            events,
            vec![
                Event {
                    event: "ping".into(),
                    data: "{\"type\": \"ping\"}".into()
                },
                Event {
                    event: String::new(),
                    data: "a\nb".into()
                },
                Event {
                    event: String::new(),
                    data: "[DONE]".into()
                },
            ]
        );
    }

    #[test]
    fn an_event_cut_before_its_blank_line_is_never_dispatched() {
        // The SSE rule: at the end of the stream, pending data is discarded.
        assert_eq!(frame_all(&[b"data: {\"x\":1}\n\ndata: {\"y\":"]).len(), 1);
        assert_eq!(frame_all(&[b"event: message_stop\ndata: {}\n"]), vec![]);
    }

    fn event_strategy() -> impl Strategy<Value = Event> {
        (
            prop_oneof![
                Just(String::new()),
                "[a-z_]{1,12}".prop_map(|s| s.to_string())
            ],
            // Data lines: any text without line breaks, one to three lines.
            prop::collection::vec("[^\r\n]{0,20}", 1..4).prop_map(|l| l.join("\n")),
        )
            .prop_map(|(event, data)| Event { event, data })
    }

    proptest! {
        /// Encoded events come back whole and in order, however the bytes
        /// are split into chunks, with `\n` or `\r\n` line ends.
        #[test]
        fn any_chunking_gives_the_same_events(
            events in prop::collection::vec(event_strategy(), 0..8),
            cuts in prop::collection::vec(0usize..400, 0..12),
            crlf in any::<bool>(),
        ) {
            let mut bytes: Vec<u8> = events.iter().flat_map(Event::encode).collect();
            if crlf {
                bytes = String::from_utf8(bytes).unwrap().replace('\n', "\r\n").into_bytes();
            }
            let mut cuts: Vec<usize> = cuts.into_iter().filter(|c| *c < bytes.len()).collect();
            cuts.sort_unstable();
            cuts.dedup();
            let mut chunks = Vec::new();
            let mut last = 0;
            for c in cuts {
                chunks.push(&bytes[last..c]);
                last = c;
            }
            chunks.push(&bytes[last..]);
            prop_assert_eq!(frame_all(&chunks), events);
        }
    }
}

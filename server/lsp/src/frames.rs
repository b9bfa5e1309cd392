//! A guard in front of tower-lsp-server on stdio: it reads `Content-Length`
//! frames, answers a body that is not JSON with -32700 and a JSON value that
//! is not a JSON-RPC message with -32600 (both with the id when one can be
//! read), and passes every well-formed message through unchanged. tower-lsp
//! would answer the second kind with -32601, and ends the connection on an id
//! it cannot represent.
//!
//! A bad frame never deafens the server: bytes before a header line are
//! skipped up to the next `Content-Length:` (and the skip is logged on
//! stderr), and a frame longer than the limit is drained without being held
//! in memory.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use tokio::io::{
    AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream,
};
use tokio::sync::mpsc;

/// The largest frame the guard reads into memory; shared with the server,
/// which sets it from `maxPayloadBytes` (see `frame_limit`).
pub type FrameLimit = Arc<AtomicU64>;

/// The frame limit for a `maxPayloadBytes`: the content limit is checked per
/// message by the service, with the request's id in the error; the frame
/// limit only keeps a frame from being allocated whole, so it leaves room
/// for the JSON envelope and escaping of content at the limit.
pub fn frame_limit(max_payload_bytes: u64) -> u64 {
    max_payload_bytes.saturating_mul(2).saturating_add(1 << 20)
}

/// One frame's body, or why there is none.
#[derive(Debug, PartialEq)]
enum Frame {
    Body(Vec<u8>),
    /// A header block without a usable Content-Length.
    BadHeader(String),
    /// A frame over the limit, its body still to be skipped (`skip_body`):
    /// it is answered first, as its body may never come.
    TooLarge {
        length: u64,
        limit: u64,
    },
    End,
}

/// Drains the body of a frame over the limit, a buffer at a time.
async fn skip_body<R: AsyncRead + Unpin>(r: &mut BufReader<R>, length: u64) -> std::io::Result<()> {
    tokio::io::copy(&mut r.take(length), &mut tokio::io::sink()).await?;
    Ok(())
}

/// The longest header line kept: a longer one is junk, of which only the
/// tail can hold the next `Content-Length:`.
const LINE_KEEP: usize = 4096;

/// Reads one line (through `\n`), keeping at most its last `LINE_KEEP`
/// bytes; returns the bytes dropped from its front, or `None` at the end.
async fn read_header_line<R: AsyncRead + Unpin>(
    r: &mut BufReader<R>,
    line: &mut Vec<u8>,
) -> std::io::Result<Option<u64>> {
    line.clear();
    let mut dropped = 0u64;
    loop {
        let available = r.fill_buf().await?;
        if available.is_empty() {
            return Ok(if line.is_empty() && dropped == 0 {
                None
            } else {
                Some(dropped)
            });
        }
        let (chunk, done) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (&available[..=i], true),
            None => (available, false),
        };
        line.extend_from_slice(chunk);
        let used = chunk.len();
        r.consume(used);
        if line.len() > 2 * LINE_KEEP {
            let cut = line.len() - LINE_KEEP;
            line.drain(..cut);
            dropped += cut as u64;
        }
        if done {
            return Ok(Some(dropped));
        }
    }
}

fn find_content_length(line: &[u8]) -> Option<usize> {
    const NAME: &[u8] = b"content-length:";
    line.windows(NAME.len())
        .position(|w| w.eq_ignore_ascii_case(NAME))
}

async fn read_frame<R: AsyncRead + Unpin>(
    r: &mut BufReader<R>,
    limit: u64,
) -> std::io::Result<Frame> {
    let mut length: Option<Result<u64, String>> = None;
    let mut saw_header = false;
    let mut skipped = 0u64;
    let mut line = Vec::new();
    loop {
        let Some(dropped) = read_header_line(r, &mut line).await? else {
            log_skipped(skipped);
            return Ok(Frame::End);
        };
        skipped += dropped;
        let text = trim_line_end(&line);
        if text.is_empty() {
            if !saw_header {
                continue;
            }
            break;
        }
        // A header starts a line; junk before one (the tail of a frame whose
        // Content-Length was short) is skipped up to the next Content-Length.
        let text = match find_content_length(text) {
            Some(at) if at > 0 => {
                skipped += at as u64;
                &text[at..]
            }
            Some(_) => text,
            None if !saw_header && !looks_like_header(text) => {
                skipped += line.len() as u64;
                continue;
            }
            None => text,
        };
        saw_header = true;
        let text = String::from_utf8_lossy(text);
        if let Some((name, value)) = text.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = Some(
                    value
                        .trim()
                        .parse::<u64>()
                        .map_err(|_| format!("invalid Content-Length {:?}", value.trim())),
                );
            }
        }
    }
    log_skipped(skipped);
    let length = match length {
        None => return Ok(Frame::BadHeader("missing Content-Length".into())),
        Some(Err(why)) => return Ok(Frame::BadHeader(why)),
        Some(Ok(n)) => n,
    };
    if length > limit {
        return Ok(Frame::TooLarge { length, limit });
    }
    let mut body = vec![0; length as usize];
    r.read_exact(&mut body).await?;
    Ok(Frame::Body(body))
}

fn trim_line_end(line: &[u8]) -> &[u8] {
    let mut end = line.len();
    while end > 0 && matches!(line[end - 1], b'\r' | b'\n') {
        end -= 1;
    }
    &line[..end]
}

/// `Name: value` with a token name, as LSP's base protocol headers are.
fn looks_like_header(line: &[u8]) -> bool {
    match line.iter().position(|b| *b == b':') {
        Some(colon) if colon > 0 => line[..colon]
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'-'),
        _ => false,
    }
}

fn log_skipped(skipped: u64) {
    if skipped > 0 {
        eprintln!("ctxproxy: skipped {skipped} bytes of input that were not a frame header");
    }
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

fn error_response(id: Value, code: i64, message: &str) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        .to_string()
        .into_bytes()
}

/// Why a JSON value is not a JSON-RPC 2.0 request, notification or response.
fn invalid_reason(v: &Value) -> Option<&'static str> {
    let Some(o) = v.as_object() else {
        return Some("a JSON-RPC message must be an object");
    };
    if o.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Some("jsonrpc: expected \"2.0\"");
    }
    // tower-lsp's ids are i64 or strings (or null); any other id would end
    // its connection instead of getting an answer.
    match o.get("id") {
        None | Some(Value::Null) | Some(Value::String(_)) => {}
        Some(Value::Number(n)) if n.is_i64() => {}
        Some(_) => return Some("id: expected a string or an integer"),
    }
    match o.get("method") {
        Some(Value::String(_)) => match o.get("params") {
            None | Some(Value::Object(_)) | Some(Value::Array(_)) | Some(Value::Null) => None,
            Some(_) => Some("params: expected an object or an array"),
        },
        Some(_) => Some("method: expected a string"),
        None if o.contains_key("id") && (o.contains_key("result") || o.contains_key("error")) => {
            None
        }
        None => Some("method: missing"),
    }
}

/// Reads `input`, answers malformed frames on `replies`, forwards the rest.
async fn filter<R: AsyncRead + Unpin>(
    input: R,
    mut to_server: DuplexStream,
    replies: mpsc::UnboundedSender<Vec<u8>>,
    limit: FrameLimit,
) {
    let mut input = BufReader::new(input);
    loop {
        let body = match read_frame(&mut input, limit.load(Ordering::Relaxed)).await {
            Ok(Frame::Body(b)) => b,
            Ok(Frame::BadHeader(why)) => {
                let _ = replies.send(error_response(
                    Value::Null,
                    -32700,
                    &format!("Parse error: {why}"),
                ));
                continue;
            }
            Ok(Frame::TooLarge { length, limit }) => {
                let _ = replies.send(error_response(
                    Value::Null,
                    -32005,
                    &format!(
                        "frame of {length} bytes is over the frame limit of {limit} bytes \
                         (twice maxPayloadBytes plus 1 MiB); it was skipped"
                    ),
                ));
                if skip_body(&mut input, length).await.is_err() {
                    break;
                }
                continue;
            }
            Ok(Frame::End) | Err(_) => break,
        };
        let reply = match serde_json::from_slice::<Value>(&body) {
            Err(e) => Some(error_response(
                Value::Null,
                -32700,
                &format!("Parse error: {e}"),
            )),
            Ok(v) => invalid_reason(&v).map(|why| {
                let id = v
                    .get("id")
                    .cloned()
                    .filter(|i| i.is_string() || i.is_i64())
                    .unwrap_or(Value::Null);
                error_response(id, -32600, &format!("Invalid Request: {why}"))
            }),
        };
        match reply {
            Some(r) => {
                let _ = replies.send(r);
            }
            None => {
                if to_server.write_all(&frame(&body)).await.is_err() {
                    break;
                }
            }
        }
    }
    // Dropping the pipe ends the server's input, as a closed stdin would.
}

/// Copies the server's frames and the guard's replies to `out`, a whole
/// frame at a time so they never interleave. Ends when the server's output
/// does (after `exit`), with the guard's pending replies written first.
async fn merge<W: AsyncWrite + Unpin>(
    from_server: DuplexStream,
    mut replies: mpsc::UnboundedReceiver<Vec<u8>>,
    mut out: W,
) {
    let mut from_server = BufReader::new(from_server);
    loop {
        let body = tokio::select! {
            f = read_frame(&mut from_server, u64::MAX) => match f {
                Ok(Frame::Body(b)) => b,
                _ => break,
            },
            Some(r) = replies.recv() => r,
        };
        if out.write_all(&frame(&body)).await.is_err() || out.flush().await.is_err() {
            return;
        }
    }
    while let Ok(r) = replies.try_recv() {
        let _ = out.write_all(&frame(&r)).await;
    }
    let _ = out.flush().await;
}

/// Wraps stdin and stdout: returns the streams to hand tower-lsp's `Server`,
/// and a future that resolves once everything the server wrote is on stdout.
pub fn guard_stdio(
    limit: FrameLimit,
) -> (
    DuplexStream,
    DuplexStream,
    impl std::future::Future<Output = ()>,
) {
    const PIPE: usize = 1 << 20;
    let (server_in, filter_out) = tokio::io::duplex(PIPE);
    let (server_out, merge_in) = tokio::io::duplex(PIPE);
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(filter(tokio::io::stdin(), filter_out, tx, limit));
    let merged = tokio::spawn(merge(merge_in, rx, tokio::io::stdout()));
    (server_in, server_out, async move {
        let _ = merged.await;
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every frame `read_frame` finds in `input`, as text.
    fn frames_of(input: &[u8], limit: u64) -> Vec<String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let mut r = BufReader::new(input);
            let mut out = Vec::new();
            loop {
                match read_frame(&mut r, limit).await.expect("read") {
                    Frame::End => return out,
                    Frame::Body(b) => out.push(String::from_utf8(b).expect("utf-8")),
                    Frame::TooLarge { length, limit } => {
                        out.push(format!("{:?}", Frame::TooLarge { length, limit }));
                        skip_body(&mut r, length).await.expect("skip");
                    }
                    other => out.push(format!("{other:?}")),
                }
            }
        })
    }

    #[test]
    fn resynchronises_after_a_bad_frame() {
        let good = b"Content-Length: 7\r\n\r\n{\"a\":1}";
        let check = |input: Vec<u8>, expect: &[&str]| {
            assert_eq!(
                frames_of(&input, 1000),
                expect,
                "{}",
                String::from_utf8_lossy(&input)
            );
        };
        // Content-Length a few bytes short: the rest of its body is skipped.
        check(
            [&b"Content-Length: 5\r\n\r\n{\"a\":1}"[..], good].concat(),
            &["{\"a\":", "{\"a\":1}"],
        );
        // A header block without Content-Length, then its body, then a frame.
        check(
            [&b"Content-Type: x\r\n\r\n{\"a\":1}"[..], good].concat(),
            &["BadHeader(\"missing Content-Length\")", "{\"a\":1}"],
        );
        check(
            [&b"Content-Length: many\r\n\r\n"[..], good].concat(),
            &[
                "BadHeader(\"invalid Content-Length \\\"many\\\"\")",
                "{\"a\":1}",
            ],
        );
        // Junk lines, and a long junk line without a newline, before a frame.
        check(
            [&b"hello\r\n  }\r\n"[..], &vec![b'z'; 20_000], good].concat(),
            &["{\"a\":1}"],
        );
        // Over the limit: drained, not allocated, and the next frame is read.
        check(
            [
                &b"Content-Length: 2000\r\n\r\n"[..],
                &vec![b' '; 2000],
                good,
            ]
            .concat(),
            &["TooLarge { length: 2000, limit: 1000 }", "{\"a\":1}"],
        );
        check(
            b"Content-Length: 1000000000000\r\n\r\n{}".to_vec(),
            &["TooLarge { length: 1000000000000, limit: 1000 }"],
        );
    }

    #[test]
    fn tells_requests_from_junk() {
        let check = |v: Value, expect: Option<&str>| assert_eq!(invalid_reason(&v), expect, "{v}");
        check(
            json!({"jsonrpc": "2.0", "id": 1, "method": "ctx/stats", "params": {}}),
            None,
        );
        check(json!({"jsonrpc": "2.0", "method": "exit"}), None);
        check(json!({"jsonrpc": "2.0", "id": 1, "result": null}), None);
        check(
            json!({"jsonrpc": "2.0", "id": null, "params": {}}),
            Some("method: missing"),
        );
        check(
            json!({"id": 1, "method": "x"}),
            Some("jsonrpc: expected \"2.0\""),
        );
        check(json!([1, 2]), Some("a JSON-RPC message must be an object"));
        check(
            json!({"jsonrpc": "2.0", "id": 1, "method": 3}),
            Some("method: expected a string"),
        );
        check(
            json!({"jsonrpc": "2.0", "id": 1, "method": "m", "params": 3}),
            Some("params: expected an object or an array"),
        );
        for id in [
            json!(true),
            json!(1.5),
            json!({"a": 1}),
            json!(18446744073709551616u128 as f64),
            json!(u64::MAX),
        ] {
            check(
                json!({"jsonrpc": "2.0", "id": id, "method": "ctx/stats"}),
                Some("id: expected a string or an integer"),
            );
        }
    }
}

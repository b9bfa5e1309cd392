//! A guard in front of tower-lsp-server on stdio: it reads `Content-Length`
//! frames, answers a body that is not JSON with -32700 and a JSON value that
//! is not a JSON-RPC message with -32600 (both with the id when one can be
//! read), and passes every well-formed message through unchanged. tower-lsp
//! would answer the second kind with -32601.

use serde_json::{json, Value};
use tokio::io::{
    AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream,
};
use tokio::sync::mpsc;

/// One frame's body, or why there is none.
enum Frame {
    Body(Vec<u8>),
    /// A header block without a usable Content-Length.
    BadHeader(String),
    End,
}

async fn read_frame<R: AsyncRead + Unpin>(r: &mut BufReader<R>) -> std::io::Result<Frame> {
    let mut length: Option<usize> = None;
    let mut saw_header = false;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).await? == 0 {
            return Ok(Frame::End);
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            if !saw_header {
                continue;
            }
            break;
        }
        saw_header = true;
        if let Some((name, value)) = line.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok();
            }
        }
    }
    let Some(length) = length else {
        return Ok(Frame::BadHeader("missing or invalid Content-Length".into()));
    };
    let mut body = vec![0; length];
    r.read_exact(&mut body).await?;
    Ok(Frame::Body(body))
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
) {
    let mut input = BufReader::new(input);
    loop {
        let body = match read_frame(&mut input).await {
            Ok(Frame::Body(b)) => b,
            Ok(Frame::BadHeader(why)) => {
                let _ = replies.send(error_response(
                    Value::Null,
                    -32700,
                    &format!("Parse error: {why}"),
                ));
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
                    .filter(|i| i.is_string() || i.is_number())
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
            f = read_frame(&mut from_server) => match f {
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
pub fn guard_stdio() -> (
    DuplexStream,
    DuplexStream,
    impl std::future::Future<Output = ()>,
) {
    const PIPE: usize = 1 << 20;
    let (server_in, filter_out) = tokio::io::duplex(PIPE);
    let (server_out, merge_in) = tokio::io::duplex(PIPE);
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(filter(tokio::io::stdin(), filter_out, tx));
    let merged = tokio::spawn(merge(merge_in, rx, tokio::io::stdout()));
    (server_in, server_out, async move {
        let _ = merged.await;
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    }
}

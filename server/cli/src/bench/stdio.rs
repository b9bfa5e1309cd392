//! `ctxproxy serve` spawned on a fresh store and spoken to over its stdin
//! and stdout: JSON-RPC framed by hand, as an editor frames it.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

/// `ctxproxy serve` on a fresh store, spoken to over its stdin and stdout.
pub struct StdioServer {
    _dir: tempfile::TempDir,
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    next_id: u64,
}

impl StdioServer {
    pub fn spawn() -> anyhow::Result<StdioServer> {
        let dir = tempfile::tempdir()?;
        let mut child = Command::new(std::env::current_exe()?)
            .args(["serve", "--store"])
            .arg(dir.path().join("store.db"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        Ok(StdioServer {
            _dir: dir,
            child,
            stdin,
            stdout,
            next_id: 1,
        })
    }

    pub fn send(&mut self, body: &Value) -> anyhow::Result<()> {
        let body = body.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{}", body.len(), body)?;
        Ok(self.stdin.flush()?)
    }

    /// Sends a request and returns the body of its reply (as bytes: its
    /// size is reported), skipping notifications.
    pub fn call(&mut self, method: &str, params: Value) -> anyhow::Result<Vec<u8>> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            let body = self.read_frame()?;
            let v: Value = serde_json::from_slice(&body)?;
            if v.get("id") == Some(&json!(id)) {
                if let Some(e) = v.get("error") {
                    anyhow::bail!("{method}: {e}");
                }
                return Ok(body);
            }
        }
    }

    fn read_frame(&mut self) -> anyhow::Result<Vec<u8>> {
        let mut len = None;
        loop {
            let mut line = String::new();
            if self.stdout.read_line(&mut line)? == 0 {
                anyhow::bail!("server closed stdout");
            }
            if line.trim().is_empty() {
                break;
            }
            if let Some(v) = line.strip_prefix("Content-Length:") {
                len = Some(v.trim().parse()?);
            }
        }
        let mut body = vec![0; len.ok_or_else(|| anyhow::anyhow!("frame without Content-Length"))?];
        self.stdout.read_exact(&mut body)?;
        Ok(body)
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A JSON-RPC response's result (an error response does not parse).
#[derive(serde::Deserialize)]
pub struct RpcResult<T> {
    pub result: T,
}

//! The floor under the proxy's own time per request at 1,000 exchanges: what
//! receiving a 7 MB body over loopback costs (an axum handler that only
//! collects it, as the proxy does), and what each way of reading it costs
//! (a `RawValue` scan of the messages, a full `serde_json::Value` parse, a
//! byte comparison with the previous body). Run:
//! `cargo run --release -p ctxproxy --example proxy_floor [EXCHANGES]`.

use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::routing::post;
use axum::Router;
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// The OpenAI-shaped history `ctxproxy bench --via-proxy` sends after `n`
/// exchanges (the same synthetic exchange).
fn history(n: u32) -> Vec<Value> {
    let mut out = Vec::new();
    for i in 0..n {
        let file = format!("src/module_{}.rs", i % 97);
        let mut output = String::new();
        for line in 0..(40 + i % 60) {
            output.push_str(&format!(
                "pub fn handler_{i}_{line}(input: &str) -> Result<usize, Error> {{ parse(input).map(|v| v.len() + {line}) }}\n"
            ));
        }
        out.push(json!({"role": "user", "content": format!("Why does handler_{i} fail on empty input in {file}? Check the parser.")}));
        out.push(json!({"role": "assistant", "content": format!("Reading {file}."), "tool_calls": [
            {"id": format!("c{i}"), "type": "function", "function": {"name": "read_file", "arguments": json!({"path": file}).to_string()}}]}));
        out.push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": output}));
        out.push(json!({"role": "assistant", "content": format!("handler_{i} calls parse() without checking for an empty string.")}));
    }
    out
}

fn report(name: &str, mut times: Vec<Duration>) {
    times.sort();
    let at = |p: f64| times[((times.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1000.0;
    println!(
        "{name:<52} p50 {:>7.3} ms  p99 {:>7.3} ms",
        at(0.5),
        at(0.99)
    );
}

fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> Vec<Duration> {
    (0..runs)
        .map(|_| {
            let started = Instant::now();
            std::hint::black_box(f());
            started.elapsed()
        })
        .collect()
}

#[derive(serde::Deserialize)]
struct Messages<'a> {
    #[serde(borrow)]
    messages: Vec<&'a RawValue>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let n: u32 = std::env::args().nth(1).map_or(Ok(1000), |a| a.parse())?;
    let runs = 60;
    let body = json!({"model": "replay", "messages": history(n)}).to_string();
    let previous = body.clone();
    println!(
        "{n} exchanges, body {:.1} MiB, {runs} runs",
        body.len() as f64 / 1048576.0
    );

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/", listener.local_addr()?);
    let app = Router::new().route(
        "/",
        post(|b: axum::body::Body| async move {
            let bytes = axum::body::to_bytes(b, usize::MAX)
                .await
                .unwrap_or_default();
            bytes.len().to_string()
        }),
    );
    let app = app.route(
        "/drain",
        post(|b: axum::body::Body| async move {
            use futures_util::StreamExt;
            let mut stream = b.into_data_stream();
            let (mut n, mut chunks) = (0, 0);
            while let Some(Ok(c)) = stream.next().await {
                n += c.len();
                chunks += 1;
            }
            format!("{n} {chunks}")
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let mut loopback = Vec::new();
    for _ in 0..runs {
        let sent = Bytes::from(body.clone());
        let started = Instant::now();
        let resp = client.post(&url).body(sent).send().await?;
        resp.bytes().await?;
        loopback.push(started.elapsed());
    }
    report("send + collect over loopback (axum to_bytes)", loopback);
    let mut drained = Vec::new();
    let mut answer = String::new();
    for _ in 0..runs {
        let sent = Bytes::from(body.clone());
        let started = Instant::now();
        let resp = client.post(format!("{url}drain")).body(sent).send().await?;
        answer = resp.text().await?;
        drained.push(started.elapsed());
    }
    report(
        &format!("send + drain chunks over loopback ({answer})"),
        drained,
    );

    // The same bytes over a bare loopback socket: the kernel's share.
    let raw = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let raw_addr = raw.local_addr()?;
    let size = body.len();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut s, _)) = raw.accept().await {
            let mut got = Vec::with_capacity(size);
            while got.len() < size {
                if s.read_buf(&mut got).await.unwrap_or(0) == 0 {
                    break;
                }
            }
            let _ = s.write_all(b"k").await;
        }
    });
    let mut socket = Vec::new();
    for _ in 0..runs {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::TcpStream::connect(raw_addr).await?;
        let started = Instant::now();
        s.write_all(body.as_bytes()).await?;
        let mut ack = [0u8; 1];
        s.read_exact(&mut ack).await?;
        socket.push(started.elapsed());
    }
    report("send + read over a bare loopback socket", socket);

    let bytes = body.as_bytes();
    report(
        "RawValue scan of the messages",
        time(runs, || {
            serde_json::from_slice::<Messages>(bytes).map(|m| m.messages.len())
        }),
    );
    report(
        "serde_json::Value parse",
        time(runs, || serde_json::from_slice::<Value>(bytes)),
    );
    report(
        "byte comparison with the previous body",
        time(runs, || {
            bytes
                .iter()
                .zip(previous.as_bytes())
                .position(|(a, b)| a != b)
        }),
    );
    report(
        "memcmp with the previous body",
        time(runs, || bytes == previous.as_bytes()),
    );
    report(
        "XXH3-128 of the body",
        time(runs, || xxhash_rust::xxh3::xxh3_128(bytes)),
    );
    Ok(())
}

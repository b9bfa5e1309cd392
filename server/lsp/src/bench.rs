//! `ctxproxy bench`: generates sessions of 100, 1,000 and 10,000 exchanges,
//! ingests them through the service, and prints assemble p50/p99, ingest
//! rate, peak memory and start-up time to answering `initialize`.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::service::Service;

#[derive(clap::Args)]
pub struct Args {
    /// Session sizes, in exchanges (each at least 1), comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = vec![100u32, 1_000, 10_000],
          value_parser = clap::value_parser!(u32).range(1..))]
    sizes: Vec<u32>,
    /// Assembles timed per size (at least 1: p50/p99 need a sample).
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u32).range(1..))]
    assembles: u32,
    /// Exchanges per `ctx/append` while ingesting (at least 1).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    batch: u32,
}

/// One synthetic exchange: a question, a tool call, a tool output of a few
/// KB that varies per exchange, and a conclusion.
fn exchange(i: u32) -> Vec<Value> {
    let file = format!("src/module_{}.rs", i % 97);
    let mut output = String::new();
    for line in 0..(40 + i % 60) {
        output.push_str(&format!(
            "pub fn handler_{i}_{line}(input: &str) -> Result<usize, Error> {{ parse(input).map(|v| v.len() + {line}) }}\n"
        ));
    }
    vec![
        json!({"role": "user", "content": format!("Why does handler_{i} fail on empty input in {file}? Check the parser.")}),
        json!({"role": "assistant", "content": format!("Reading {file}."), "toolCalls": [
            {"id": format!("c{i}"), "name": "read_file", "arguments": {"path": file}}]}),
        json!({"role": "tool", "toolCallId": format!("c{i}"), "name": "read_file", "content": output}),
        json!({"role": "assistant", "content": format!(
            "handler_{i} calls parse() without checking for an empty string; I added an early return in {file}.")}),
    ]
}

pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    // Steady state: the tokenizer tables load once per process, as `serve`
    // does in the background at start (start-up is measured separately).
    ctxproxy_core::tokens::warm_up();
    println!(
        "{:>9} {:>12} {:>11} {:>11} {:>11} {:>12}",
        "exchanges", "ingest x/s", "assemble p50", "p99", "max", "prompt tok"
    );
    for &size in &args.sizes {
        let dir = tempfile::tempdir()?;
        let service = Service::open(dir.path().join("store.db"), Default::default(), None)?;
        let session = service
            .open_session(json!({"title": format!("bench {size}")}))
            .await?;
        let session = session["sessionId"].as_str().expect("id").to_string();
        let started = Instant::now();
        let mut i = 0;
        while i < size {
            let end = (i + args.batch).min(size);
            let messages: Vec<Value> = (i..end).flat_map(exchange).collect();
            service
                .append(json!({"sessionId": session, "messages": messages}))
                .await?;
            i = end;
        }
        let ingest_rate = size as f64 / started.elapsed().as_secs_f64();
        let input = json!({"role": "user", "content": "What did we change in the parser, and which handlers are still failing?"});
        let mut times = Vec::with_capacity(args.assembles as usize);
        let mut total = 0;
        for _ in 0..args.assembles {
            let t = Instant::now();
            let r = service
                .assemble(json!({"sessionId": session, "input": input}))
                .await?;
            times.push(t.elapsed());
            total = r["tokens"]["total"].as_u64().unwrap_or(0);
        }
        times.sort();
        println!(
            "{:>9} {:>12.0} {:>11.2}ms {:>9.2}ms {:>9.2}ms {:>12}",
            size,
            ingest_rate,
            ms(percentile(&times, 0.5)),
            ms(percentile(&times, 0.99)),
            ms(*times.last().expect("timed")),
            total
        );
    }
    if let Some(kib) = peak_rss_kib() {
        println!("peak memory (VmHWM): {:.1} MiB", kib as f64 / 1024.0);
    }
    match startup_to_initialize() {
        Ok(d) => println!(
            "start-up to initialize answered: {:.1} ms (spawn included)",
            ms(d)
        ),
        Err(e) => println!("start-up not measured: {e}"),
    }
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Spawns `ctxproxy serve` on a fresh store and times `initialize`.
fn startup_to_initialize() -> anyhow::Result<Duration> {
    let dir = tempfile::tempdir()?;
    let exe = std::env::current_exe()?;
    let started = Instant::now();
    let mut child = Command::new(exe)
        .args(["serve", "--store"])
        .arg(dir.path().join("store.db"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})
            .to_string();
    let mut stdin = child.stdin.take().expect("stdin");
    write!(stdin, "Content-Length: {}\r\n\r\n{}", body.len(), body)?;
    stdin.flush()?;
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        out.read_line(&mut line)?;
        if line.trim().is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Content-Length:") {
            len = v.trim().parse()?;
        }
    }
    let mut buf = vec![0; len];
    out.read_exact(&mut buf)?;
    let elapsed = started.elapsed();
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    Ok(elapsed)
}

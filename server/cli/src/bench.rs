//! `ctxproxy bench`: generates sessions of 100, 1,000 and 10,000 exchanges,
//! ingests them through the service, and prints, per size, the ingest rate
//! and assemble p50/p99 twice: with the same question on every call, and
//! with a new question on every call that mixes words most exchanges use
//! with the name of a function only one has (`workload`). Then a project:
//! 50 earlier sessions of 2,000 exchanges in one workspace and a new
//! session there, assembled with new questions, so its prompts carry
//! project memory's standing section and recall (`--project-sessions`,
//! `--project-exchanges`; 0 sessions: none). Then peak memory, start-up
//! time to answering `initialize`, the time to append one single-line tool
//! output of 1 MB and of 4 MB (their ratio is about 4 when ingest is linear
//! in the length of a line), and the time and memory of the first token
//! count in a fresh process.
//! `--over-stdio` drives a spawned `ctxproxy serve` instead (`stdio`) and
//! times `ctx/assemble` as an editor sees it, reply on stdout included: the
//! same runs, through the same loops (`timed`, over `target::Target`).
//! `--via-proxy` times the proxy's own path per model request instead
//! (`replay --via-proxy` on the generated sessions).

mod stdio;
mod target;
mod timed;
mod workload;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use ctxproxy_core::tokens::{self, Encoding};
use ctxproxy_service::from_json;
use ctxproxy_service::service::Service;
use stdio::StdioServer;
use target::InProcess;
use workload::exchange;

#[derive(clap::Args)]
pub struct Args {
    /// Session sizes, in exchanges (each at least 1), comma-separated
    /// [default: 100,1000,10000; with --via-proxy 100,1000].
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u32).range(1..))]
    sizes: Option<Vec<u32>>,
    /// Assembles timed per size (at least 1: p50/p99 need a sample).
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u32).range(1..))]
    assembles: u32,
    /// Exchanges per `ctx/append` while ingesting (at least 1).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..))]
    batch: u32,
    /// Earlier sessions of the project case: a new session in one workspace
    /// with this many sessions before it, assembled with project memory
    /// (0: no project case).
    #[arg(long, value_name = "N", default_value_t = 50)]
    project_sessions: u32,
    /// Exchanges of each earlier session of the project case (at least 1).
    #[arg(long, value_name = "N", default_value_t = 2_000, value_parser = clap::value_parser!(u32).range(1..))]
    project_exchanges: u32,
    /// Drive a spawned `ctxproxy serve` over stdio, as an editor does, and
    /// time each `ctx/assemble` from request written to reply read.
    #[arg(long)]
    over_stdio: bool,
    /// Send every model call of each session through an in-process `ctxproxy
    /// proxy` as an OpenAI client would (the whole history each time) and
    /// print the time the proxy added beyond the store's work, over the last
    /// tenth of the calls (a history of about the given size). Each call
    /// resends the history: use sizes up to a few thousand.
    #[arg(long, conflicts_with = "over_stdio")]
    via_proxy: bool,
    /// Count one short text in this process, before anything else counts,
    /// and print the time and peak memory growth of that count as JSON
    /// (what `bench` runs in fresh processes of its own binary).
    #[arg(long, hide = true)]
    first_count: bool,
}

impl Args {
    /// The sizes asked for, or the mode's default: every call through the
    /// proxy resends the whole history, so its default stops at 1,000.
    fn sizes(&self) -> Vec<u32> {
        let default: &[u32] = match self.via_proxy {
            true => &[100, 1_000],
            false => &[100, 1_000, 10_000],
        };
        self.sizes.clone().unwrap_or_else(|| default.to_vec())
    }

    fn plan(&self) -> timed::Plan {
        timed::Plan {
            sizes: self.sizes(),
            assembles: self.assembles,
            batch: self.batch,
            project: (self.project_sessions, self.project_exchanges),
        }
    }
}

/// A figure of this process's /proc/self/status in KiB (`VmHWM`: peak
/// resident memory; `VmRSS`: resident now).
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    if args.over_stdio {
        return timed::table::<StdioServer>(&args.plan()).await;
    }
    if args.via_proxy {
        return via_proxy(&args.sizes()).await;
    }
    if args.first_count {
        return first_count_here();
    }
    // Steady state: o200k's pre-tokenizer regex is built once per process,
    // as `serve` does in the background at start (start-up and the first
    // count are measured separately).
    tokens::warm_up();
    timed::table::<InProcess>(&args.plan()).await?;
    if let Some(kib) = status_kib("VmHWM") {
        println!("peak memory (VmHWM): {:.1} MiB", kib as f64 / 1024.0);
    }
    let one = long_line_append(1 << 20).await?;
    let four = long_line_append(4 << 20).await?;
    println!(
        "one-line output appended: 1 MiB {:.0} ms, 4 MiB {:.0} ms (ratio {:.1})",
        ms(one),
        ms(four),
        four.as_secs_f64() / one.as_secs_f64()
    );
    match startup_to_initialize() {
        Ok(d) => println!(
            "start-up to initialize answered: {:.1} ms (spawn included)",
            ms(d)
        ),
        Err(e) => println!("start-up not measured: {e}"),
    }
    match first_count() {
        Ok(first) => println!(
            "first token count in a fresh process ({}, median of {FIRST_COUNT_RUNS}): {:.1} ms, peak memory +{:.1} MiB",
            Encoding::O200kBase.as_str(),
            first.ms,
            first.peak_growth_kib as f64 / 1024.0
        ),
        Err(e) => println!("first token count not measured: {e}"),
    }
    Ok(())
}

/// What one fresh process reports of its first token count.
#[derive(serde::Serialize, serde::Deserialize)]
struct FirstCount {
    ms: f64,
    /// The count's peak resident memory over the resident memory before it.
    peak_growth_kib: u64,
}

/// A line as a CLI call or a server's first request counts first.
const FIRST_COUNT_TEXT: &str =
    "Why does handler_7 fail on empty input in src/module_7.rs? Check the parser.";
const FIRST_COUNT_RUNS: usize = 5;

/// Runs `bench --first-count` in fresh processes of this binary and returns
/// the median time and the median memory growth (each its own median).
fn first_count() -> anyhow::Result<FirstCount> {
    let mut runs = Vec::with_capacity(FIRST_COUNT_RUNS);
    for _ in 0..FIRST_COUNT_RUNS {
        let out = Command::new(std::env::current_exe()?)
            .args(["bench", "--first-count"])
            .stderr(Stdio::inherit())
            .output()?;
        anyhow::ensure!(out.status.success(), "bench --first-count: {}", out.status);
        runs.push(serde_json::from_slice::<FirstCount>(&out.stdout)?);
    }
    let mut ms: Vec<f64> = runs.iter().map(|r| r.ms).collect();
    let mut kib: Vec<u64> = runs.iter().map(|r| r.peak_growth_kib).collect();
    ms.sort_by(f64::total_cmp);
    kib.sort();
    Ok(FirstCount {
        ms: ms[FIRST_COUNT_RUNS / 2],
        peak_growth_kib: kib[FIRST_COUNT_RUNS / 2],
    })
}

/// `--first-count`: this process's first token count, timed, with its
/// peak memory growth (the peak reset first, so an earlier one does not
/// hide it).
fn first_count_here() -> anyhow::Result<()> {
    std::fs::write("/proc/self/clear_refs", "5")?;
    let before = status_kib("VmRSS").ok_or_else(|| anyhow::anyhow!("no VmRSS"))?;
    let started = Instant::now();
    std::hint::black_box(tokens::count(Encoding::O200kBase, FIRST_COUNT_TEXT));
    let ms = ms(started.elapsed());
    let peak = status_kib("VmHWM").ok_or_else(|| anyhow::anyhow!("no VmHWM"))?;
    let first = FirstCount {
        ms,
        peak_growth_kib: peak.saturating_sub(before),
    };
    println!("{}", serde_json::to_string(&first)?);
    Ok(())
}

/// The proxy's own time per model request at each size: `replay
/// --via-proxy` of a generated session, over the calls whose history is
/// within a tenth of the full size: the figures of [`via_proxy::Spreads`]
/// (the columns' meanings are printed under the table).
async fn via_proxy(sizes: &[u32]) -> anyhow::Result<()> {
    use crate::via_proxy;
    const COLUMNS: [&str; 10] = [
        "added p50",
        "added p99",
        "beyond p50",
        "beyond p99",
        "direct p50",
        "direct p99",
        "over direct p50",
        "over direct p99",
        "beyond over direct p50",
        "beyond over direct p99",
    ];
    let mut header = format!("{:>9} {:>6} {:>9}", "exchanges", "calls", "body MiB");
    for c in COLUMNS {
        header.push_str(&format!(" {c:>11}"));
    }
    println!("{header}");
    for &size in sizes {
        // A generated recorded session, read by the one parser of the format.
        let lines: Vec<String> = (0..size)
            .map(|i| json!({"messages": exchange(i)}).to_string())
            .collect();
        let session = ctxproxy_core::session_file::parse(&lines.join("\n"))?;
        let dir = tempfile::tempdir()?;
        let service = Service::open(dir.path().join("store.db"), Default::default(), None)?;
        let calls =
            via_proxy::run(&session, service, ctxproxy_proxy::ModelApi::ChatCompletions).await?;
        let tail = &calls[calls.len() - calls.len().div_ceil(10)..];
        let t = via_proxy::Spreads::of(tail);
        let body = tail.iter().map(|c| c.sent_bytes).max().unwrap_or(0);
        let mut line = format!(
            "{size:>9} {:>6} {:>9.1}",
            tail.len(),
            body as f64 / (1024.0 * 1024.0)
        );
        let figures = [
            t.added,
            t.beyond_store,
            t.direct,
            t.added_over_direct,
            t.beyond_store_over_direct,
        ]
        .into_iter()
        .flat_map(|s| [s.p50, s.p99]);
        for (c, ms) in COLUMNS.iter().zip(figures) {
            let figure = format!("{ms:.2}ms");
            line.push_str(&format!(" {figure:>w$}", w = c.len().max(11)));
        }
        println!("{line}");
    }
    println!(
        "added: the wait through the proxy less the upstream's own time; beyond: that less the store's work;\n\
         direct: the same request's wait sent straight to the upstream less the upstream's own time;\n\
         over direct: added less direct, per call (signed, ranked as signed); beyond over direct: that less the store's work"
    );
    Ok(())
}

/// Appends, to a fresh store, one exchange whose tool output is a single
/// line of `bytes` without whitespace (minified code, base64: the case that
/// made tokenizing quadratic), and times that `ctx/append`.
async fn long_line_append(bytes: usize) -> anyhow::Result<Duration> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut x: u64 = 1;
    let line: String = (0..bytes)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ALPHABET[(x >> 58) as usize] as char
        })
        .collect();
    let dir = tempfile::tempdir()?;
    let service = Service::open(dir.path().join("store.db"), Default::default(), None)?;
    let session = service
        .open_session(from_json::parse(json!({"title": "long line"}))?)
        .await?;
    let messages = json!([
        {"role": "user", "content": "Print the bundle."},
        {"role": "assistant", "content": "", "toolCalls": [
            {"id": "c1", "name": "run_command", "arguments": {"command": "cat dist/bundle.min.js"}}]},
        {"role": "tool", "toolCallId": "c1", "name": "run_command", "content": line},
    ]);
    let started = Instant::now();
    service
        .append(from_json::parse(
            json!({"sessionId": session.session_id, "messages": messages}),
        )?)
        .await?;
    Ok(started.elapsed())
}

/// CPU time this process has used, all threads: on a machine shared with
/// other work, exchanges per CPU-second vary less than per wall second.
fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Spawns `ctxproxy serve` on a fresh store and times `initialize`.
fn startup_to_initialize() -> anyhow::Result<Duration> {
    let started = Instant::now();
    let mut server = StdioServer::spawn()?;
    server.call("initialize", json!({"capabilities": {}}))?;
    Ok(started.elapsed())
}

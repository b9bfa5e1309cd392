//! The timed runs of `ctxproxy bench` over a `Target`: a session of each
//! size, assembled with the same question on every call and with a new one
//! on every call, then a new session in a project of earlier sessions; one
//! table row per run.

use std::ops::Range;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::target::Target;
use super::workload::{exchange, Question};
use super::{cpu_time, ms};
use crate::timing::percentile;

/// The workspace the project's sessions share.
const PROJECT_WORKSPACE: &str = "/bench/project";
/// Ingest prints its progress on stderr every this many exchanges, in a
/// run of at least as many.
const PROGRESS_EVERY: u32 = 10_000;

/// What a run asks of the store.
pub struct Plan {
    pub sizes: Vec<u32>,
    pub assembles: u32,
    pub batch: u32,
    /// Earlier sessions of the project and exchanges of each; no project
    /// run when either is 0.
    pub project: (u32, u32),
}

/// How fast a store took its exchanges.
struct Ingest {
    per_second: f64,
    per_cpu_second: f64,
}

/// Every row of the table for `plan` through targets of kind `T`.
pub async fn table<T: Target>(plan: &Plan) -> anyhow::Result<()> {
    print_header::<T>();
    for &size in &plan.sizes {
        let mut target = T::open().await?;
        let session = target.open_session(&format!("bench {size}"), None).await?;
        let started = Instant::now();
        let cpu_before = cpu_time();
        ingest(
            &mut target,
            &session,
            0..size,
            plan.batch,
            &mut Progress::new(size),
        )
        .await?;
        let mut ingest = Some(rates(size, started.elapsed(), cpu_time() - cpu_before));
        for question in [Question::Fixed, Question::New] {
            let (times, reply) =
                assembles(&mut target, &session, question, size, plan.assembles).await?;
            print_row::<T>(&size.to_string(), ingest.take(), question, &times, reply);
        }
        target.close().await?;
    }
    if let (sessions @ 1.., exchanges @ 1..) = plan.project {
        project::<T>(plan, sessions, exchanges).await?;
    }
    println!(
        "question: fixed, the same one on every call; new, a new one on every call (common words and a\n\
         function only one exchange has). NxM: a new session in a project of N earlier sessions of M exchanges."
    );
    Ok(())
}

/// `sessions` earlier sessions of `exchanges` each in one workspace, then
/// a new session there, assembled with a new question on every call: its
/// prompts carry project memory's standing section and recall.
async fn project<T: Target>(plan: &Plan, sessions: u32, exchanges: u32) -> anyhow::Result<()> {
    let total = sessions
        .checked_mul(exchanges)
        .ok_or_else(|| anyhow::anyhow!("{sessions} sessions of {exchanges} exchanges: too many"))?;
    let mut target = T::open().await?;
    let mut progress = Progress::new(total);
    let started = Instant::now();
    let cpu_before = cpu_time();
    for s in 0..sessions {
        let title = format!("bench project {s}");
        let session = target.open_session(&title, Some(PROJECT_WORKSPACE)).await?;
        let first = s * exchanges;
        ingest(
            &mut target,
            &session,
            first..first + exchanges,
            plan.batch,
            &mut progress,
        )
        .await?;
    }
    let ingest = rates(total, started.elapsed(), cpu_time() - cpu_before);
    let session = target
        .open_session("bench project, new session", Some(PROJECT_WORKSPACE))
        .await?;
    let (times, reply) =
        assembles(&mut target, &session, Question::New, total, plan.assembles).await?;
    let label = format!("{sessions}x{exchanges}");
    print_row::<T>(&label, Some(ingest), Question::New, &times, reply);
    target.close().await
}

/// Appends exchanges `range` to `session`, `batch` a call.
async fn ingest<T: Target>(
    target: &mut T,
    session: &str,
    range: Range<u32>,
    batch: u32,
    progress: &mut Progress,
) -> anyhow::Result<()> {
    let mut i = range.start;
    while i < range.end {
        let end = (i + batch).min(range.end);
        let messages: Vec<Value> = (i..end).flat_map(exchange).collect();
        target.append(session, messages).await?;
        progress.add(end - i);
        i = end;
    }
    Ok(())
}

/// Exchanges per wall second and per CPU-second of this process.
fn rates(exchanges: u32, wall: Duration, cpu: Duration) -> Ingest {
    Ingest {
        per_second: exchanges as f64 / wall.as_secs_f64(),
        per_cpu_second: exchanges as f64 / cpu.as_secs_f64(),
    }
}

/// Times `count` assembles of `session` whose input is `question`'s text
/// for each call, over a store of `exchanges`; returns the times, sorted,
/// and the last reply's figure.
async fn assembles<T: Target>(
    target: &mut T,
    session: &str,
    question: Question,
    exchanges: u32,
    count: u32,
) -> anyhow::Result<(Vec<Duration>, u64)> {
    let mut times = Vec::with_capacity(count as usize);
    let mut reply = 0;
    for call in 0..count {
        let input = json!({"role": "user", "content": question.text(call, exchanges)});
        let t = Instant::now();
        reply = target.assemble(session, &input).await?;
        times.push(t.elapsed());
    }
    times.sort();
    Ok((times, reply))
}

/// Ingest's progress on stderr, in a run long enough to want it.
struct Progress {
    total: u32,
    done: u32,
    started: Instant,
}

impl Progress {
    fn new(total: u32) -> Progress {
        Progress {
            total,
            done: 0,
            started: Instant::now(),
        }
    }

    fn add(&mut self, exchanges: u32) {
        let before = self.done / PROGRESS_EVERY;
        self.done += exchanges;
        if self.total >= 2 * PROGRESS_EVERY && self.done / PROGRESS_EVERY > before {
            eprintln!(
                "ingested {} of {} exchanges ({:.0} s)",
                self.done,
                self.total,
                self.started.elapsed().as_secs_f64()
            );
        }
    }
}

fn print_header<T: Target>() {
    let cpu = match T::CPU_IS_THE_SERVICE {
        true => format!(" {:>14}", "x/CPU-second"),
        false => String::new(),
    };
    println!(
        "{:>9} {:>12}{cpu} {:>8} {:>11} {:>11} {:>11} {:>12}",
        "exchanges",
        "ingest x/s",
        "question",
        "assemble p50",
        "p99",
        "max",
        T::REPLY_COLUMN
    );
}

/// One row; `ingest` only on a store's first row.
fn print_row<T: Target>(
    label: &str,
    ingest: Option<Ingest>,
    question: Question,
    times: &[Duration],
    reply: u64,
) {
    let (rate, cpu_rate) = match ingest {
        Some(i) => (
            format!("{:.0}", i.per_second),
            format!("{:.0}", i.per_cpu_second),
        ),
        None => (String::new(), String::new()),
    };
    let cpu = match T::CPU_IS_THE_SERVICE {
        true => format!(" {cpu_rate:>14}"),
        false => String::new(),
    };
    println!(
        "{label:>9} {rate:>12}{cpu} {:>8} {:>11.2}ms {:>9.2}ms {:>9.2}ms {:>12}",
        question.as_str(),
        ms(percentile(times, 0.5)),
        ms(percentile(times, 0.99)),
        ms(*times.last().expect("timed")),
        reply
    );
}

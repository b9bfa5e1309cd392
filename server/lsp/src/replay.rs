//! `ctxproxy replay`: drives a recorded session through the same `Service`
//! an editor talks to: before every exchange it assembles the prompt the
//! model would get (the exchange's first message as input), then appends the
//! exchange. Prints a per-turn table; `--report` adds the baselines and facts,
//! `--html` writes the same report as a page.

use std::path::PathBuf;

use anyhow::{bail, Context};
use serde_json::{json, Value};

use crate::protocol::WireMessage;
use crate::recorded::Turn;
use crate::service::Service;
use crate::{report, report_html};
use ctxproxy_core::recorded::{self, RecordedExchange};

#[derive(clap::Args)]
pub struct Args {
    /// The recorded session: JSON Lines, one exchange per line (see fixtures/README.md); `-` reads stdin.
    file: PathBuf,
    /// Keep the store here (default: a fresh store in a temp dir, removed afterwards). A replay that
    /// fails halfway removes its session, leaving the store as it was.
    #[arg(long)]
    store: Option<PathBuf>,
    /// Add the baselines (full history, Cline-style truncation, sliding window) and the facts check.
    #[arg(long)]
    report: bool,
    /// Prompt budget in tokens (default: the configured 16000).
    #[arg(long)]
    budget: Option<u32>,
    /// Tokenizer: o200k_base (default) or cl100k_base.
    #[arg(long)]
    encoding: Option<String>,
    /// cache-stable (default) or seed003.
    #[arg(long)]
    order: Option<String>,
    /// Context window for the Cline-style baseline, in tokens.
    #[arg(long, default_value_t = 128_000)]
    window: u32,
    /// Print the turns and summary as JSON instead of tables.
    #[arg(long)]
    json: bool,
    /// Also write the report as one self-contained HTML page (charts per turn, the facts table) to this file.
    #[arg(long, value_name = "OUT.html")]
    html: Option<PathBuf>,
    /// Send every model call of the session through an in-process `ctxproxy proxy` as an OpenAI
    /// client would (the whole history each time), to a scripted upstream on loopback; print the
    /// tokens the client sent against those the upstream got, and the time the proxy added.
    #[arg(long, conflicts_with = "report")]
    via_proxy: bool,
    /// Any other setting, as the JSON editors send in initializationOptions,
    /// e.g. '{"layers": {"recentFull": 3, "maxHeaders": 100}, "digest": {"inlineMaxTokens": 300}}'.
    /// Applied before --budget, --encoding and --order.
    #[arg(long, value_name = "JSON")]
    config: Option<String>,
}

/// How many search hits the replay looks through for a need's exchange.
const SEARCH_DEPTH: u32 = 10;

/// Reads and checks a whole recorded session (`-` is stdin) before anything
/// is stored: every error names FILE:LINE and the field.
pub fn read_session(path: &PathBuf) -> anyhow::Result<Vec<RecordedExchange>> {
    let text = if path.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin()).context("reading the session from stdin")?
    } else {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?
    };
    recorded::parse(&text)
        .map_err(|e| anyhow::anyhow!("{}:{}: {}: {}", path.display(), e.line, e.field, e.why))
}

pub async fn run(args: Args) -> anyhow::Result<()> {
    let session_file = read_session(&args.file)?;
    // Fail before the replay, not after it, when the page cannot be written.
    if let Some(path) = &args.html {
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        if dir.is_some_and(|d| !d.is_dir()) {
            bail!("--html {}: no such directory", path.display());
        }
    }
    let temp = tempfile::tempdir()?;
    let store_path = args
        .store
        .clone()
        .unwrap_or_else(|| temp.path().join("store.db"));
    let mut config = ctxproxy_core::config::Config::default();
    if let Some(text) = &args.config {
        let value: Value = serde_json::from_str(text).context("--config is not JSON")?;
        config = crate::config::apply(&config, value)
            .map_err(|e| anyhow::anyhow!("--config: {e}"))?
            .0;
    }
    if let Some(b) = args.budget {
        config.budget = b;
    }
    if let Some(e) = &args.encoding {
        config.encoding = crate::config::parse_encoding(e, "--encoding")?;
    }
    if let Some(o) = &args.order {
        config.order = crate::config::parse_order(o, "--order")?;
    }
    let service = Service::open(store_path.clone(), config.clone(), None)?;
    if args.via_proxy {
        let calls = crate::proxy::via_proxy::run(&session_file, service).await?;
        print!("{}", crate::proxy::via_proxy::report(&calls, args.json));
        return Ok(());
    }
    let title = args
        .file
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let opened = service
        .open_session(json!({"title": title, "workspace": "replay"}))
        .await?;
    let session = opened.session_id;

    let turns = match replay_turns(&service, &session, &session_file).await {
        Ok(turns) => turns,
        Err(e) => {
            // Leave the store as it was: no half-replayed session.
            let removed = service.store().remove_session(&session).await;
            return Err(match removed {
                Ok(()) => e.context(format!(
                    "replaying {}: nothing was kept",
                    args.file.display()
                )),
                Err(r) => e.context(format!(
                    "replaying {}; removing the half-replayed session {session} failed too: {r}",
                    args.file.display()
                )),
            });
        }
    };
    let stats = service.stats(json!({"sessionId": session})).await?;
    service.store().checkpoint().await?;
    let out = report::Report::build(&session_file, &turns, &config, args.window, args.report);
    let data = out.to_json(&session, &stats);
    if let Some(path) = &args.html {
        let page = report_html::render(&data, &title);
        std::fs::write(path, page).with_context(|| format!("writing {}", path.display()))?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&data)?);
    } else {
        print!("{}", out.to_text(&session, &stats));
        if args.store.is_some() {
            println!(
                "store: {} (session {session}; try `ctxproxy show-prompt {session} p1 --store {}`)",
                store_path.display(),
                store_path.display()
            );
        }
    }
    Ok(())
}

/// Assembles before and appends every exchange of the recorded session.
async fn replay_turns(
    service: &Service,
    session: &str,
    session_file: &[RecordedExchange],
) -> anyhow::Result<Vec<Turn>> {
    let mut turns = Vec::with_capacity(session_file.len());
    for (i, x) in session_file.iter().enumerate() {
        let question = &x.messages[0].content;
        let messages: Vec<WireMessage> = x.messages.iter().map(WireMessage::from_core).collect();
        let mut search_ranks = Vec::with_capacity(x.needs.len());
        if !x.needs.is_empty() {
            let found = service
                .search(json!({"sessionId": session, "query": question, "limit": SEARCH_DEPTH}))
                .await
                .with_context(|| format!("searching for the needs of exchange x{}", i + 1))?;
            for need in &x.needs {
                let wanted = format!("x{}", need.from);
                search_ranks.push(
                    found
                        .hits
                        .iter()
                        .position(|h| h.id == wanted)
                        .map(|p| p + 1),
                );
            }
        }
        let prompt = service
            .assemble(json!({"sessionId": session, "input": messages[0], "format": "text"}))
            .await
            .with_context(|| format!("assembling the prompt before exchange x{}", i + 1))?;
        let appended = service
            .append(json!({"sessionId": session, "messages": messages}))
            .await
            .with_context(|| format!("appending exchange x{}", i + 1))?;
        let blobs = appended.blobs.into_iter().map(|b| b.id).collect();
        turns.push(Turn {
            seq: i as u32 + 1,
            prompt,
            blobs,
            search_ranks,
        });
    }
    Ok(turns)
}

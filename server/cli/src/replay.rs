//! `ctxproxy replay`: drives a recorded session through the same `Service`
//! an editor talks to: before every exchange it assembles the prompt the
//! model would get (the exchange's first message as input), then appends the
//! exchange. A file of several sessions opens each where it is declared
//! (`ctx/openSession` with `parent`, and `child` for a child call) and
//! appends each exchange, with its `supersedes`, to its own session. Prints
//! a per-turn table per session; `--report` adds the baselines and facts,
//! `--html` writes the same report as a page (one per session).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde_json::{json, Value};

use crate::across::AcrossSessions;
use crate::report::TurnSeen;
use crate::{report, report_html};
use ctxproxy_core::ids::{ExchangeId, ItemId};
use ctxproxy_core::session_file::{self, Origin, RecordedExchange, RecordedFile, Step};
use ctxproxy_core::supersede;
use ctxproxy_service::api::{
    AppendParams, AssembleParams, ChildParams, Format, ListExchangesParams, OpenSessionParams,
    ParentRef, PathParams, SearchParams, StatsParams, WireMessage,
};
use ctxproxy_service::service::Service;

#[derive(clap::Args)]
pub struct Args {
    /// The recorded session: JSON Lines, one exchange per line, forks and child calls declared by
    /// session lines (see fixtures/README.md); `-` reads stdin.
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
    /// Also write the report as one self-contained HTML page (charts per turn, the facts table) to this file;
    /// a file of several sessions writes one page per session (OUT-NAME.html for all but main).
    #[arg(long, value_name = "OUT.html")]
    html: Option<PathBuf>,
    /// Send every model call of the session through an in-process `ctxproxy proxy` as a client
    /// of --api would (the whole history each time), to a scripted upstream on loopback; print the
    /// tokens the client sent against those the upstream got, and the time the proxy added.
    #[arg(long, conflicts_with = "report")]
    via_proxy: bool,
    /// The model API --via-proxy's client speaks.
    #[arg(
        long,
        value_parser = crate::proxy_args::model_api(),
        default_value = "chat-completions",
        requires = "via_proxy"
    )]
    api: ctxproxy_proxy::ModelApi,
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
pub fn read_session(path: &PathBuf) -> anyhow::Result<RecordedFile> {
    let text = if path.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin()).context("reading the session from stdin")?
    } else {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?
    };
    session_file::parse_file(&text)
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
    let settings = ctxproxy_service::config::settings_text(args.config.as_deref())?;
    let (mut config, store_path) = ctxproxy_service::config::load(
        settings,
        ctxproxy_service::config::SettingsSource::ConfigFlag,
        args.store.clone(),
        || temp.path().join("store.db"),
    )?;
    if let Some(b) = args.budget {
        config.budget = b;
    }
    if let Some(e) = &args.encoding {
        config.encoding = ctxproxy_service::config::parse_encoding(e, "--encoding")?;
    }
    if let Some(o) = &args.order {
        config.order = ctxproxy_service::config::parse_order(o, "--order")?;
    }
    let service = Service::open(store_path.clone(), config.clone(), None)?;
    if args.via_proxy {
        let calls = via_proxy_file(&session_file, &args.file, service, args.api).await?;
        print!("{}", crate::via_proxy::report(&calls, args.json));
        return Ok(());
    }
    let title = args
        .file
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();

    let mut replayed = Replayed::default();
    if let Err(e) = replay_file(&service, &title, &session_file, &mut replayed).await {
        // Leave the store as it was: no half-replayed session (forks first).
        let mut failed = Vec::new();
        for id in replayed.ids.iter().rev() {
            if let Err(r) = service.remove_session(id).await {
                failed.push(format!("{id}: {r}"));
            }
        }
        return Err(if failed.is_empty() {
            e.context(format!(
                "replaying {}: nothing was kept",
                args.file.display()
            ))
        } else {
            e.context(format!(
                "replaying {}; removing the half-replayed sessions failed too: {}",
                args.file.display(),
                failed.join("; ")
            ))
        });
    }
    service.checkpoint().await?;
    let mut reports = Vec::new();
    for (i, s) in session_file.sessions.iter().enumerate() {
        let id = &replayed.ids[i];
        let stats = service
            .stats(StatsParams {
                session_id: Some(id.clone()),
            })
            .await?;
        let history: Vec<RecordedExchange> = session_file.history(i).into_iter().cloned().collect();
        let turns = replayed.history_turns(&session_file, i);
        let own_from = s.shared() as usize;
        let out = report::Report::build(
            &s.opening(),
            &history,
            &turns,
            own_from,
            &config,
            args.window,
            args.report,
        );
        let header = SessionHeader::read(&service, &session_file, i, id).await?;
        reports.push((header, out, stats));
    }
    // Judged in the prompts' text, which replay asks for with `--report`.
    let across = match args.report {
        true => AcrossSessions::of_file(&session_file, &replayed.ids, &replayed.turns),
        false => session_file
            .sessions
            .iter()
            .map(|_| AcrossSessions::default())
            .collect(),
    };
    let single = reports.len() == 1;
    let data: Vec<Value> = reports
        .iter()
        .zip(&across)
        .map(|((h, out, stats), across)| {
            let mut data = out.to_json(&h.id, stats);
            if !single {
                h.add_to(&mut data);
            }
            if across.needs > 0 {
                data["acrossSessions"] = across.to_json();
            }
            data
        })
        .collect();
    if let Some(path) = &args.html {
        for ((h, _, _), data) in reports.iter().zip(&data) {
            let path = html_path(
                path,
                (!single && h.name != "main").then_some(h.name.as_str()),
            );
            let page = report_html::render(data, &format!("{title} {}", h.name));
            std::fs::write(&path, page).with_context(|| format!("writing {}", path.display()))?;
        }
    }
    if args.json {
        let out = match single {
            true => data.into_iter().next().unwrap_or_default(),
            false => json!({"sessions": data}),
        };
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for ((h, out, stats), across) in reports.iter().zip(&across) {
            if !single {
                println!("{}", h.to_text());
            }
            print!("{}", out.to_text(&h.id, stats));
            print!("{}", across.to_text());
            if !single {
                println!();
            }
        }
        if args.store.is_some() {
            let main = &replayed.ids[0];
            println!(
                "store: {} (session {main}; try `ctxproxy show-prompt {main} p1 --store {}`)",
                store_path.display(),
                store_path.display()
            );
        }
    }
    Ok(())
}

/// `OUT.html` for the main session, `OUT-NAME.html` for another one.
fn html_path(path: &std::path::Path, name: Option<&str>) -> PathBuf {
    match name {
        None => path.to_path_buf(),
        Some(name) => {
            let stem = path.file_stem().unwrap_or_default().to_string_lossy();
            path.with_file_name(format!("{stem}-{name}.html"))
        }
    }
}

/// What a replay opened and saw: each session's id and own turns, in the
/// file's order of sessions.
#[derive(Default)]
struct Replayed {
    ids: Vec<String>,
    turns: Vec<Vec<TurnSeen>>,
}

impl Replayed {
    /// The turns of session `i`'s whole history: for a fork, its parent's
    /// turns up to the fork point (the same prompts), then its own.
    fn history_turns(&self, file: &RecordedFile, i: usize) -> Vec<TurnSeen> {
        let mut out = match file.sessions[i].origin {
            Origin::Fork { from, at } => {
                let mut shared = self.history_turns(file, from);
                shared.truncate(at as usize);
                shared
            }
            Origin::Main | Origin::Child { .. } => Vec::new(),
        };
        out.extend(self.turns[i].iter().cloned());
        out
    }
}

/// How the report names a session of a file of several.
struct SessionHeader {
    name: String,
    id: String,
    /// `fork` or `child`, the parent's name and `atExchange`.
    origin: Option<(&'static str, String, u32)>,
    depth: u32,
    exchanges: u32,
    /// `x1-x3 superseded by x4`, for each range.
    superseded: Vec<String>,
}

impl SessionHeader {
    async fn read(
        service: &Service,
        file: &RecordedFile,
        i: usize,
        id: &str,
    ) -> anyhow::Result<SessionHeader> {
        let s = &file.sessions[i];
        let origin = match &s.origin {
            Origin::Main => None,
            Origin::Fork { from, at } => Some(("fork", file.sessions[*from].name.clone(), *at)),
            Origin::Child { from, at, .. } => {
                Some(("child", file.sessions[*from].name.clone(), *at))
            }
        };
        let path = service
            .path(PathParams {
                session_id: id.to_string(),
                exchange_id: None,
            })
            .await?;
        let depth = path.sessions.last().map_or(0, |p| p.depth);
        // Every exchange, a page of 10,000 (the most `ctx/listExchanges` gives) at a time.
        const PAGE: usize = 10_000;
        let mut listed = Vec::new();
        loop {
            let page = service
                .list_exchanges(ListExchangesParams {
                    session_id: id.to_string(),
                    from: Some(listed.len() as u32 + 1),
                    limit: Some(PAGE as u32),
                })
                .await?
                .exchanges;
            let last = page.len() < PAGE;
            listed.extend(page);
            if last {
                break;
            }
        }
        let pairs = listed.iter().filter_map(|x| {
            let parse = |raw: &str| match ItemId::parse(raw) {
                Ok(ItemId::Exchange(x)) => Some(x),
                _ => None,
            };
            Some((parse(&x.id)?, parse(x.superseded_by.as_deref()?)?))
        });
        let superseded = supersede::grouped(pairs)
            .iter()
            .map(|g| format!("{} superseded by {}", g.ids, g.by))
            .collect();
        Ok(SessionHeader {
            name: s.name.clone(),
            id: id.to_string(),
            origin,
            depth,
            exchanges: listed.len() as u32,
            superseded,
        })
    }

    fn to_text(&self) -> String {
        let mut out = format!("== session {} ({})", self.name, self.id);
        if let Some((kind, parent, at)) = &self.origin {
            out.push_str(&format!(": {kind} of {parent} at x{at}"));
        }
        out.push_str(&format!(
            ", depth {}, {} exchanges",
            self.depth, self.exchanges
        ));
        if !self.superseded.is_empty() {
            out.push_str(&format!("; {}", self.superseded.join(", ")));
        }
        out
    }

    fn add_to(&self, data: &mut Value) {
        data["name"] = json!(self.name);
        data["depth"] = json!(self.depth);
        data["exchanges"] = json!(self.exchanges);
        data["superseded"] = json!(self.superseded);
        if let Some((kind, parent, at)) = &self.origin {
            data["parent"] = json!({"name": parent, "kind": kind, "atExchange": at});
        }
    }
}

/// `--via-proxy` over a file: every conversation of it (`main` and the
/// project's independent sessions) a client of its own, naming its session
/// and project in the proxy's headers, its exchanges sent in the file's
/// order. Forks and child calls are the proxy's own to find and are not
/// replayed through it.
async fn via_proxy_file(
    file: &RecordedFile,
    path: &Path,
    service: Service,
    api: ctxproxy_proxy::ModelApi,
) -> anyhow::Result<Vec<crate::via_proxy::Call>> {
    if let Some(s) = file.sessions.iter().find(|s| s.origin != Origin::Main) {
        bail!(
            "--via-proxy replays conversations of their own; {} has {}, a fork or a child call",
            path.display(),
            s.name
        );
    }
    let conversations: Vec<crate::via_proxy::Conversation> = file
        .sessions
        .iter()
        .map(|s| crate::via_proxy::Conversation {
            name: &s.name,
            project: s.project.as_deref(),
        })
        .collect();
    let steps: Vec<(usize, &RecordedExchange)> = file
        .steps
        .iter()
        .filter_map(|step| match step {
            Step::Exchange {
                session, exchange, ..
            } => Some((*session, exchange)),
            Step::Open(_) => None,
        })
        .collect();
    crate::via_proxy::run_conversations(&conversations, &steps, service, api).await
}

/// Opens every session of the file where it is declared and replays each
/// exchange into its own session, in the file's order.
async fn replay_file(
    service: &Service,
    title: &str,
    file: &RecordedFile,
    replayed: &mut Replayed,
) -> anyhow::Result<()> {
    let opened = service
        .open_session(OpenSessionParams {
            title: Some(
                file.sessions[0]
                    .title
                    .clone()
                    .unwrap_or_else(|| title.to_string()),
            ),
            // A session without a project sees no other: a file's sessions
            // only share memory when they say they are of one project.
            workspace: file.sessions[0].project.clone(),
            ..OpenSessionParams::default()
        })
        .await?;
    replayed.ids.push(opened.session_id);
    replayed.turns.push(Vec::new());
    for step in &file.steps {
        match step {
            Step::Open(i) => {
                let s = &file.sessions[*i];
                let parent = |from: &usize, at: &u32| ParentRef {
                    session_id: replayed.ids[*from].clone(),
                    at_exchange: Some(json!(at)),
                };
                let (parent, child) = match &s.origin {
                    Origin::Main => (None, None),
                    Origin::Fork { from, at } => (Some(parent(from, at)), None),
                    Origin::Child {
                        from,
                        at,
                        query,
                        context,
                    } => (
                        Some(parent(from, at)),
                        Some(ChildParams {
                            query: query.clone(),
                            context: context.clone(),
                        }),
                    ),
                };
                let params = OpenSessionParams {
                    title: Some(
                        s.title
                            .clone()
                            .unwrap_or_else(|| format!("{title} {}", s.name)),
                    ),
                    workspace: s.project.clone(),
                    parent,
                    child,
                };
                let opened = service
                    .open_session(params)
                    .await
                    .with_context(|| format!("opening session {}", s.name))?;
                replayed.ids.push(opened.session_id);
                replayed.turns.push(Vec::new());
            }
            Step::Exchange {
                session,
                id,
                exchange,
            } => {
                let turn = replay_turn(service, &replayed.ids[*session], *id, exchange)
                    .await
                    .with_context(|| format!("in session {}", file.sessions[*session].name))?;
                replayed.turns[*session].push(turn);
            }
        }
    }
    Ok(())
}

/// Searches for the needs of, assembles before and appends exchange `id`.
async fn replay_turn(
    service: &Service,
    session: &str,
    id: ExchangeId,
    x: &RecordedExchange,
) -> anyhow::Result<TurnSeen> {
    let question = &x.messages[0].content;
    let messages: Vec<WireMessage> = x.messages.iter().map(WireMessage::from_core).collect();
    let mut search_ranks = Vec::with_capacity(x.needs.len());
    if !x.needs.is_empty() {
        let found = service
            .search(SearchParams {
                session_id: Some(session.to_string()),
                project: None,
                workspace: None,
                query: question.clone(),
                limit: Some(SEARCH_DEPTH),
            })
            .await
            .with_context(|| format!("searching for the needs of exchange {id}"))?;
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
        .assemble(AssembleParams {
            session_id: session.to_string(),
            input: Some(messages[0].clone()),
            format: Some(Format::Text),
            ..AssembleParams::default()
        })
        .await
        .with_context(|| format!("assembling the prompt before exchange {id}"))?;
    let appended = service
        .append(AppendParams {
            session_id: session.to_string(),
            messages,
            exchange: None,
            supersedes: x.supersedes.iter().map(ToString::to_string).collect(),
        })
        .await
        .with_context(|| format!("appending exchange {id}"))?;
    let blobs = appended.blobs.into_iter().map(|b| b.id).collect();
    Ok(TurnSeen {
        seq: id.0,
        prompt,
        blobs,
        search_ranks,
    })
}

//! `ctxproxy`: the command line; each command is a call into the library
//! (`serve`, `proxy`, `replay`, the store tools).

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use ctxproxy::{bench, doctor, inspect, proxy_args, replay, run};
use ctxproxy_lsp::server;
use ctxproxy_proxy as proxy;
use ctxproxy_service::config;

#[derive(Parser)]
#[command(
    name = "ctxproxy",
    version,
    about = "Decides what an AI coding assistant's model sees: \
stores every exchange, digests tool output into blobs, assembles prompts under a token budget."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// `--store`, as every command that reads a store takes it.
#[derive(clap::Args)]
struct StoreArg {
    /// The store database (default: $CTXPROXY_STORE, else <data dir>/ctxproxy/store.db).
    #[arg(long)]
    store: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve LSP over stdio (what editors spawn).
    Serve {
        /// Accepted for vscode-languageclient, which appends it; stdio is the only transport.
        #[arg(long)]
        stdio: bool,
        #[command(flatten)]
        store: StoreArg,
    },
    /// Serve the OpenAI / Anthropic model APIs over HTTP: assistants use ctxproxy by changing their base URL.
    Proxy(proxy_args::ProxyArgs),
    /// Run an assistant through a proxy of its own on a free loopback port (`ctxproxy run claude -p "…"`);
    /// prints what each session was sent and forwarded, and exits with the assistant's status.
    Run(run::Args),
    /// Replay a recorded session (JSON Lines) as an editor would, and print a per-turn table.
    Replay(replay::Args),
    /// Show an exchange, message, blob or prompt of a session.
    Inspect {
        /// The session, as `ctxproxy sessions` lists it (s-…).
        session: String,
        /// x<N> (an exchange), x<N>.<M> (a message) or b3:<hex> (a blob); for p<N> use show-prompt.
        id: String,
        /// Show exchanges in full instead of header and summary.
        #[arg(long)]
        full: bool,
        #[command(flatten)]
        store: StoreArg,
    },
    /// Show exactly what the model was sent for prompt p<N>, layer by layer.
    ShowPrompt {
        /// The session, as `ctxproxy sessions` lists it (s-…).
        session: String,
        /// The prompt: p<N>, as ctx/assemble and the replay table name it.
        prompt: String,
        /// Print the recorded JSON instead of the readable form.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: StoreArg,
    },
    /// Print the chain from the root session through each fork point to an exchange.
    Path {
        /// The session, as `ctxproxy sessions` lists it (s-…).
        session: String,
        /// The node: x<N> (default: the session's newest exchange).
        exchange: Option<String>,
        /// Print the `ctx/path` result as JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: StoreArg,
    },
    /// List the sessions of a store, under their tenants and projects.
    Sessions {
        /// Only this project's sessions: a directory (made absolute), or a name an
        /// `x-ctxproxy-project` header gave.
        #[arg(long, value_name = "P")]
        project: Option<String>,
        /// Only this tenant's sessions: a `t-…` the proxy derived from an API key, or a name
        /// from `proxy --tokens`.
        #[arg(long, value_name = "T")]
        tenant: Option<String>,
        #[command(flatten)]
        store: StoreArg,
    },
    /// Remove what project memory could show: every session of a project,
    /// or one session, with the forks and calls made from it and the stored
    /// tool outputs nothing else references.
    Forget {
        /// The project (the folder a session was opened in), as
        /// `ctxproxy sessions` lists it.
        #[arg(long, conflicts_with = "session", required_unless_present = "session")]
        project: Option<String>,
        /// With --project: only this tenant's sessions (as `ctxproxy sessions`
        /// lists them; "" for the local user's); without it, every tenant's.
        #[arg(long, requires = "project")]
        tenant: Option<String>,
        /// One session (s-…).
        #[arg(long)]
        session: Option<String>,
        #[command(flatten)]
        store: StoreArg,
    },
    /// Store figures: sessions, exchanges, blobs, bytes, duplicate hits.
    Stats {
        #[command(flatten)]
        store: StoreArg,
        /// Print the figures as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the digest the model would see for a tool output file.
    Digest(inspect::DigestArgs),
    /// Generate sessions of 100, 1,000 and 10,000 exchanges and a project of 50 sessions; print
    /// assemble p50/p99, ingest rate, memory.
    Bench(bench::Args),
    /// Copy a store (database and blob files) to a new file, consistent while a server runs.
    Backup {
        #[command(flatten)]
        store: StoreArg,
        /// The new database file (must not exist); its blob files go in `blobs/` beside it.
        dest: PathBuf,
    },
    /// Check a store: SQLite's integrity check, every blob's hash, every prompt record and
    /// session; exit 1 if anything is damaged.
    Doctor {
        #[command(flatten)]
        store: StoreArg,
        /// Also copy every session that reads back whole into a new store at this path.
        #[arg(long, value_name = "NEW_DB")]
        salvage: Option<PathBuf>,
    },
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // Only the commands that print and exit: a server (LSP on stdio, the
    // proxy's sockets, replay --via-proxy's and bench's loopback clients)
    // that met SIGPIPE would die on a client that hangs up mid-answer.
    if matches!(
        cli.command,
        Command::Inspect { .. }
            | Command::ShowPrompt { .. }
            | Command::Path { .. }
            | Command::Sessions { .. }
            | Command::Stats { .. }
            | Command::Digest(_)
    ) {
        die_quietly_on_broken_pipe();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    match cli.command {
        Command::Serve { stdio: _, store } => {
            std::thread::spawn(ctxproxy_core::tokens::warm_up);
            let code = runtime.block_on(server::serve(store.store));
            // stdin is read on a blocking thread that would keep the runtime
            // (and the process) alive: leave at once, as LSP's `exit` asks.
            std::process::exit(code)
        }
        Command::Proxy(args) => {
            let access = args.access()?;
            runtime.block_on(proxy::serve(args.options.into(), args.listen, access))
        }
        Command::Run(args) => {
            let code = runtime.block_on(run::run(args))?;
            std::process::exit(code)
        }
        Command::Replay(args) => runtime.block_on(replay::run(args)),
        Command::Inspect {
            session,
            id,
            full,
            store,
        } => inspect::inspect(&store_path(store)?, &session, &id, full),
        Command::ShowPrompt {
            session,
            prompt,
            json,
            store,
        } => inspect::show_prompt(&store_path(store)?, &session, &prompt, json),
        Command::Path {
            session,
            exchange,
            json,
            store,
        } => inspect::path(&store_path(store)?, &session, exchange.as_deref(), json),
        Command::Sessions {
            project,
            tenant,
            store,
        } => inspect::sessions(&store_path(store)?, project.as_deref(), tenant.as_deref()),
        Command::Forget {
            project,
            tenant,
            session,
            store,
        } => runtime.block_on(inspect::forget(
            &store_path(store)?,
            project,
            tenant,
            session,
        )),
        Command::Stats { store, json } => inspect::stats(&store_path(store)?, json),
        Command::Digest(args) => inspect::digest(args),
        Command::Bench(args) => runtime.block_on(bench::run(args)),
        Command::Backup { store, dest } => doctor::backup(&store_path(store)?, &dest),
        Command::Doctor { store, salvage } => {
            doctor::doctor(&store_path(store)?, salvage.as_deref())
        }
    }
}

fn store_path(given: StoreArg) -> anyhow::Result<PathBuf> {
    Ok(config::store_location(given.store)?)
}

/// The printing commands end quietly when their reader goes away
/// (`ctxproxy inspect … | head`), as Unix tools do, instead of panicking in
/// `println!`. Rust ignores SIGPIPE; restore the default. Servers keep
/// ignoring it: a closed stdout or socket there is an error they handle.
fn die_quietly_on_broken_pipe() {
    #[cfg(unix)]
    // SAFETY: called once at start-up, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

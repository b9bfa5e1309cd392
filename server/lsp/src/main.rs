//! `ctxproxy`: the LSP sidecar (`serve`) and its command-line tools.

mod assemble;
mod bench;
mod config;
mod doctor;
mod format;
mod frames;
mod inspect;
mod protocol;
mod replay;
mod report;
mod server;
mod service;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

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

#[derive(Subcommand)]
enum Command {
    /// Serve LSP over stdio (what editors spawn).
    Serve {
        /// Accepted for vscode-languageclient, which appends it; stdio is the only transport.
        #[arg(long)]
        stdio: bool,
        /// The store database (default: $CTXPROXY_STORE, else <data dir>/ctxproxy/store.db).
        #[arg(long)]
        store: Option<PathBuf>,
    },
    /// Replay a recorded session (JSON Lines) as an editor would, and print a per-turn table.
    Replay(replay::Args),
    /// Show an exchange, message, blob or prompt of a session.
    Inspect {
        session: String,
        /// x<N>, x<N>.<M>, b3:<hex> or p<N>.
        id: String,
        /// Show exchanges in full instead of header and summary.
        #[arg(long)]
        full: bool,
        #[arg(long)]
        store: Option<PathBuf>,
    },
    /// Show exactly what the model was sent for prompt p<N>, layer by layer.
    ShowPrompt {
        session: String,
        prompt: String,
        /// Print the recorded JSON instead of the readable form.
        #[arg(long)]
        json: bool,
        #[arg(long)]
        store: Option<PathBuf>,
    },
    /// List the sessions of a store.
    Sessions {
        #[arg(long)]
        store: Option<PathBuf>,
    },
    /// Store figures: sessions, exchanges, blobs, bytes, duplicate hits.
    Stats {
        #[arg(long)]
        store: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Print the digest the model would see for a tool output file.
    Digest(inspect::DigestArgs),
    /// Generate sessions of 100, 1,000 and 10,000 exchanges; print assemble p50/p99, ingest rate, memory.
    Bench(bench::Args),
    /// Copy a store (database and blob files) to a new file, consistent while a server runs.
    Backup {
        /// The store to copy (default: $CTXPROXY_STORE, else <data dir>/ctxproxy/store.db).
        #[arg(long)]
        store: Option<PathBuf>,
        /// The new database file; its blob files go in `blobs/` beside it. Must not exist.
        dest: PathBuf,
    },
    /// Check a store: SQLite's integrity check, every blob's hash, every prompt record and
    /// session; exit 1 if anything is damaged.
    Doctor {
        /// The store to check (default: $CTXPROXY_STORE, else <data dir>/ctxproxy/store.db).
        #[arg(long)]
        store: Option<PathBuf>,
        /// Also copy every session that reads back whole into a new store at this path.
        #[arg(long, value_name = "NEW_DB")]
        salvage: Option<PathBuf>,
    },
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    match cli.command {
        Command::Serve { stdio: _, store } => {
            std::thread::spawn(ctxproxy_core::tokens::warm_up);
            let code = runtime.block_on(server::serve(store));
            // stdin is read on a blocking thread that would keep the runtime
            // (and the process) alive: leave at once, as LSP's `exit` asks.
            std::process::exit(code)
        }
        Command::Replay(args) => runtime.block_on(replay::run(args)),
        Command::Inspect {
            session,
            id,
            full,
            store,
        } => inspect::inspect(&store_path(store), &session, &id, full),
        Command::ShowPrompt {
            session,
            prompt,
            json,
            store,
        } => inspect::show_prompt(&store_path(store), &session, &prompt, json),
        Command::Sessions { store } => inspect::sessions(&store_path(store)),
        Command::Stats { store, json } => inspect::stats(&store_path(store), json),
        Command::Digest(args) => inspect::digest(args),
        Command::Bench(args) => runtime.block_on(bench::run(args)),
        Command::Backup { store, dest } => doctor::backup(&store_path(store), &dest),
        Command::Doctor { store, salvage } => {
            doctor::doctor(&store_path(store), salvage.as_deref())
        }
    }
}

fn store_path(given: Option<PathBuf>) -> PathBuf {
    given.unwrap_or_else(config::default_store_path)
}

//! `ctxproxy run ASSISTANT [ARGS…]`: one run of an assistant through a
//! proxy of its own. The proxy listens on a free loopback port over the
//! usual store; the assistant gets the proxy's address in the base-URL
//! variables the model SDKs read, or for Codex a setting on its command
//! line (its own config files are never touched), and its arguments,
//! standard input and output as they are. When it exits
//! the proxy stops, and what each session was sent and forwarded is
//! printed; ctxproxy exits with the assistant's status.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::{Command, ExitStatus};

use anyhow::Context;

use ctxproxy_proxy::{self as proxy, tally, Access};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    options: crate::proxy_args::OptionsArgs,
    /// The assistant and its arguments (claude, aider, qwen, cn, opencode, codex, gemini, …),
    /// or any command after `--`.
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "ASSISTANT [ARGS]"
    )]
    command: Vec<String>,
}

/// The variables that point a run at the proxy: OpenAI's SDKs read
/// `OPENAI_BASE_URL` (the `/v1` API root), LiteLLM (Aider) `OPENAI_API_BASE`,
/// Anthropic's SDKs and Claude Code `ANTHROPIC_BASE_URL` (the host root),
/// Gemini CLI `GOOGLE_GEMINI_BASE_URL` (the host root, without `/v1beta`).
pub fn base_url_variables(addr: SocketAddr) -> [(&'static str, String); 4] {
    let root = format!("http://{addr}");
    [
        ("OPENAI_BASE_URL", format!("{root}/v1")),
        ("OPENAI_API_BASE", format!("{root}/v1")),
        ("ANTHROPIC_BASE_URL", root.clone()),
        ("GOOGLE_GEMINI_BASE_URL", root),
    ]
}

/// The program's file name: `codex` for `/usr/local/bin/codex`.
fn program_name(program: &str) -> &str {
    std::path::Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(program)
}

/// The arguments that point an assistant reading none of those variables
/// at the proxy, put before its own: Codex's built-in `openai` provider
/// takes its URL from the `openai_base_url` setting, which `-c` sets for
/// one run.
fn base_url_arguments(program: &str, addr: SocketAddr) -> Vec<String> {
    match program_name(program) {
        "codex" => vec!["-c".into(), format!("openai_base_url=\"http://{addr}/v1\"")],
        _ => Vec::new(),
    }
}

/// Runs the assistant; returns the exit code to leave with.
pub async fn run(args: Args) -> anyhow::Result<i32> {
    let (program, rest) = args
        .command
        .split_first()
        .context("ctxproxy run: name the assistant to run")?;
    let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    let mut options: proxy::Options = args.options.into();
    if options.project.is_none() {
        // The assistant works on the directory it is started in: its
        // sessions belong to that project, whatever it states.
        options.project = Some(std::env::current_dir().context("the current directory")?);
    }
    let opened = proxy::open(options, listen, Access::Open, true).await?;
    let addr = opened.addr;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(opened.serve_until(async {
        let _ = stopped.await;
    }));
    // Ctrl-C reaches the assistant too (one process group): the assistant
    // decides what it means, and the proxy stays up until it exits.
    tokio::spawn(async { while tokio::signal::ctrl_c().await.is_ok() {} });
    let mut command = Command::new(program);
    command
        .args(base_url_arguments(program, addr))
        .args(rest)
        .envs(base_url_variables(addr));
    let program_name = program.clone();
    let status = tokio::task::spawn_blocking(move || command.status())
        .await
        .context("waiting for the assistant")?;
    let _ = stop.send(());
    let tallies = serving.await.context("the proxy task")??;
    eprint!("{}", tally::report(&tallies));
    match status {
        Ok(status) => Ok(exit_code(status)),
        Err(e) => {
            eprintln!("ctxproxy run: cannot start `{program_name}`: {e}");
            // As shells say a command that cannot be found or run.
            Ok(match e.kind() {
                std::io::ErrorKind::NotFound => 127,
                _ => 126,
            })
        }
    }
}

/// The status to exit with: the assistant's code, or 128 + the signal that
/// ended it, as shells report it.
fn exit_code(status: ExitStatus) -> i32 {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return 128 + signal;
        }
    }
    status.code().unwrap_or(1)
}

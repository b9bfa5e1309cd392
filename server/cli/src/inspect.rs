//! Read-only CLI commands over a store: inspect, show-prompt, path, sessions,
//! stats, and digest (no store) for any file.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use ctxproxy_core::config::DigestLimits;
use ctxproxy_core::digest;
use ctxproxy_core::ids::ItemId;
use ctxproxy_core::tokens::{self, Encoding};
use ctxproxy_store::{ParentKind, SessionListing, Store, StoreError};

use ctxproxy_service::config;
use ctxproxy_service::service::{Forget, Service};

fn open_existing(path: &Path) -> anyhow::Result<Store> {
    if !path.exists() {
        bail!(
            "no store at {} (give --store PATH, or set CTXPROXY_STORE)",
            path.display()
        );
    }
    Store::open(path, Default::default())
        .with_context(|| format!("opening store {}", path.display()))
}

/// `ctxproxy forget`: removes a project's sessions (one tenant's, or
/// every tenant's) or one session, and says what went.
pub async fn forget(
    store: &Path,
    project: Option<String>,
    tenant: Option<String>,
    session: Option<String>,
) -> anyhow::Result<()> {
    if !store.exists() {
        bail!(
            "no store at {} (give --store PATH, or set CTXPROXY_STORE)",
            store.display()
        );
    }
    let service = Service::open(store.to_path_buf(), Default::default(), None)
        .with_context(|| format!("opening store {}", store.display()))?;
    let (scope, what) = match (project, session) {
        (Some(project), _) => (
            Forget::Project {
                tenant: tenant.clone(),
                project: project.clone(),
            },
            match &tenant {
                Some(t) => format!("project {project} of tenant {t:?}"),
                None => format!("project {project}"),
            },
        ),
        (None, Some(id)) => (Forget::Session(id.clone()), format!("session {id}")),
        (None, None) => bail!("forget: give --project P or --session S"),
    };
    let removed = service.forget(scope).await?;
    service.checkpoint().await?;
    match removed.len() {
        0 => println!("{what}: no sessions to forget"),
        n => println!("{what}: forgot {n} session(s): {}", removed.join(" ")),
    }
    Ok(())
}

pub fn inspect(store: &Path, session: &str, raw_id: &str, full: bool) -> anyhow::Result<()> {
    let store = open_existing(store)?;
    let id = ItemId::parse(raw_id)?;
    // Text ends with a newline; a blob that is not UTF-8 is written exactly.
    let out = store.read_now(|r| -> Result<Vec<u8>, StoreError> {
        let text = match &id {
            ItemId::Exchange(x) => {
                let e = r.exchange(session, *x)?;
                let mut out = format!(
                    "{x}  {}  {}  {} tokens raw, {} in full\nheader ({}): {}\nsummary ({}): {}\n",
                    e.at.as_deref().unwrap_or("-"),
                    e.outcome.as_str(),
                    e.raw_tokens,
                    e.full_tokens,
                    e.header_source,
                    e.header,
                    e.summary_source,
                    e.summary
                );
                if let Some(by) = e.superseded_by {
                    out.push_str(&format!("superseded by {by}\n"));
                }
                if full {
                    out.push('\n');
                    out.push_str(&r.exchange_full_text(session, *x)?);
                }
                out
            }
            ItemId::Message(m) => {
                let item = r.message(session, *m)?;
                let mut out = format!("{m}  {}", item.message.role.as_str());
                if let Some(b) = item.blob {
                    out.push_str(&format!("  blob {}", b.short_id()));
                }
                for c in &item.message.tool_calls {
                    out.push_str(&format!("\n→ {} {} ({})", c.name, c.arguments, c.id));
                }
                out.push_str("\n\n");
                out.push_str(&item.message.content);
                out
            }
            ItemId::Blob(hex) => {
                let blob = r.blob(hex)?;
                match blob.raw {
                    Some(bytes) => return Ok(bytes),
                    None => blob.text,
                }
            }
            ItemId::Prompt(_) => {
                return Err(StoreError::Invalid(
                    "use `ctxproxy show-prompt` for prompts".into(),
                ))
            }
        };
        Ok(format!("{text}\n").into_bytes())
    })?;
    std::io::Write::write_all(&mut std::io::stdout().lock(), &out)?;
    Ok(())
}

pub fn show_prompt(store: &Path, session: &str, prompt: &str, json: bool) -> anyhow::Result<()> {
    let store = open_existing(store)?;
    let Ok(ItemId::Prompt(id)) = ItemId::parse(prompt) else {
        bail!("expected a prompt id p<N>, got {prompt:?}")
    };
    let record = store.read_now(|r| r.prompt(session, id))?;
    let prompt = ctxproxy_service::assemble::read_record(&record, store.db_path())?;
    if json {
        // As recorded: a JSON object, keys sorted.
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::to_value(&prompt)?)?
        );
    } else {
        print!("{}", ctxproxy_service::format::explain_text(&prompt));
        if let Some(logged) = store.read_now(|r| r.request_of_prompt(session, id))? {
            print!("{}", request_text(&logged.request));
        }
    }
    Ok(())
}

/// What the proxy logged of the request a prompt was assembled for: what
/// the client sent and what the provider reported, beside ctxproxy's count.
fn request_text(r: &ctxproxy_store::RequestLog) -> String {
    let mut out = format!(
        "\nrequest: {} {} ({}), {} round(s): the client sent {} tokens, ctxproxy forwarded {}\n",
        r.api, r.model, r.outcome, r.rounds, r.client_tokens, r.forwarded_tokens
    );
    match r.usage {
        Some(u) => out.push_str(&format!(
            "provider usage: {} input ({} cached, {} written to the cache), {} output\n",
            u.input, u.cached_input, u.cache_write, u.output
        )),
        None => out.push_str("provider usage: not reported\n"),
    }
    out
}

/// `ctxproxy path SESSION [xN]`: the chain from the root session to the
/// node, as `ctx/path` returns it.
pub fn path(store: &Path, session: &str, node: Option<&str>, json: bool) -> anyhow::Result<()> {
    let store = open_existing(store)?;
    let node = match node {
        None => None,
        Some(raw) => match ItemId::parse(raw) {
            Ok(ItemId::Exchange(x)) => Some(x),
            _ => bail!("expected an exchange id x<N>, got {raw:?}"),
        },
    };
    let path = ctxproxy_service::service::path_result(store.read_now(|r| r.path(session, node))?);
    if json {
        println!("{}", serde_json::to_string_pretty(&path)?);
    } else {
        print!("{}", ctxproxy_service::format::path_text(&path));
    }
    Ok(())
}

/// `ctxproxy sessions [--project P]`: one project's sessions, or every
/// session under its project's heading.
pub fn sessions(store: &Path, project: Option<&str>, tenant: Option<&str>) -> anyhow::Result<()> {
    let store = open_existing(store)?;
    let project = project.map(project_filter).transpose()?;
    let mut list = store.read_now(|r| r.sessions(project.as_deref()))?;
    if let Some(tenant) = tenant {
        list.retain(|s| s.tenant == tenant);
    }
    println!(
        "{:<10} {:>9} {:>7}  {:<20}  title",
        "session", "exchanges", "prompts", "updated"
    );
    match project {
        Some(_) => print_sessions(&list),
        None => {
            for ((tenant, project), list) in by_project(list) {
                let whose = match tenant.as_str() {
                    "" => String::new(),
                    t => format!(" · tenant {t}"),
                };
                match project.as_str() {
                    "" => println!("\n(no project){whose}"),
                    p => println!("\nproject {p}{whose}"),
                }
                print_sessions(&list);
            }
        }
    }
    Ok(())
}

/// `--project P` as sessions are stored under it: a directory (absolute,
/// or one that exists here) as the proxy stores one, any other name as
/// given (an `x-ctxproxy-project` header's).
fn project_filter(project: &str) -> anyhow::Result<String> {
    let path = Path::new(project);
    Ok(match path.is_absolute() || path.is_dir() {
        true => ctxproxy_proxy::project::directory_project(path)?,
        false => project.trim().to_string(),
    })
}

/// A tenant and one of its projects.
type Whose = (String, String);

/// Sessions (newest first) grouped by tenant and project: the group of the
/// newest session first, each group's sessions newest first.
fn by_project(list: Vec<SessionListing>) -> Vec<(Whose, Vec<SessionListing>)> {
    let mut groups: Vec<(Whose, Vec<SessionListing>)> = Vec::new();
    for s in list {
        match groups
            .iter_mut()
            .find(|((t, p), _)| *t == s.tenant && *p == s.workspace)
        {
            Some((_, group)) => group.push(s),
            None => groups.push(((s.tenant.clone(), s.workspace.clone()), vec![s])),
        }
    }
    groups
}

fn print_sessions(list: &[SessionListing]) {
    for s in list {
        // Where a session sits among the others, after its title.
        let origin = match &s.parent {
            None => String::new(),
            Some(p) => match p.kind {
                ParentKind::Child => format!(
                    "  [depth {}, called by {} after x{}]",
                    s.depth, p.session, p.at_exchange
                ),
                ParentKind::Fork => format!("  [fork of {} at x{}]", p.session, p.at_exchange),
            },
        };
        println!(
            "{:<10} {:>9} {:>7}  {:<20}  {}{origin}",
            s.id, s.exchanges, s.prompts, s.updated_at, s.title
        );
    }
}

pub fn stats(store: &Path, json: bool) -> anyhow::Result<()> {
    let store = open_existing(store)?;
    let s = store.read_now(|r| r.stats(None))?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::to_value(
                ctxproxy_service::service::stats_result(&s)
            )?)?
        );
        return Ok(());
    }
    println!("sessions        {}", s.sessions);
    println!("exchanges       {}", s.exchanges);
    println!("messages        {}", s.messages);
    println!("prompts         {}", s.prompts);
    println!("blobs           {} ({} as files)", s.blobs, s.blob_files);
    println!(
        "appended bytes  {} (tool output, duplicates counted)",
        s.appended_bytes
    );
    println!("raw bytes       {} (distinct blobs)", s.raw_bytes);
    println!(
        "stored bytes    {} ({:.1}% of raw)",
        s.stored_bytes,
        pct(s.stored_bytes, s.raw_bytes)
    );
    println!("duplicate hits  {}", s.duplicate_hits);
    println!("database bytes  {}", s.database_bytes);
    Ok(())
}

fn pct(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

#[derive(clap::Args)]
pub struct DigestArgs {
    /// The tool output to digest.
    file: Option<PathBuf>,
    /// Instead: print a markdown table of raw vs digest tokens for every
    /// `KIND/NAME.out` under DIR (tool and arguments from `NAME.cmd` beside it).
    #[arg(long, value_name = "DIR", conflicts_with = "file")]
    table: Option<PathBuf>,
    /// The tool's name, as the assistant called it (read_file, grep, run_command, ...).
    #[arg(long)]
    tool: Option<String>,
    /// The call's arguments as JSON, e.g. '{"command": "cargo test"}'.
    #[arg(long)]
    args: Option<String>,
    /// The digest's token cap.
    #[arg(long, default_value_t = DigestLimits::default().inline_max_tokens)]
    max_tokens: u32,
    /// Tokenizer for the counts: o200k_base or cl100k_base.
    #[arg(long, default_value = "o200k_base")]
    encoding: String,
}

pub fn digest(a: DigestArgs) -> anyhow::Result<()> {
    let encoding = config::parse_encoding(&a.encoding, "--encoding")?;
    let limits = DigestLimits {
        inline_max_tokens: a.max_tokens,
    };
    if let Some(dir) = a.table {
        print!("{}", digest_table(&dir, &limits, encoding)?);
        return Ok(());
    }
    let Some(file) = a.file else {
        bail!("give a FILE to digest, or --table DIR")
    };
    let raw = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
    println!(
        "{}",
        digest::digest_standalone(
            &raw,
            a.tool.as_deref(),
            a.args.as_deref(),
            None,
            &limits,
            encoding
        )
        .text
    );
    Ok(())
}

/// Every `KIND/NAME.out` fixture's raw and digest tokens, as the digest
/// snapshot test computes them (secrets masked first, prior reads given).
fn digest_table(dir: &Path, limits: &DigestLimits, encoding: Encoding) -> anyhow::Result<String> {
    let mut outs: Vec<PathBuf> = Vec::new();
    for kind in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let kind = kind?.path();
        if kind.is_dir() {
            for f in std::fs::read_dir(&kind)? {
                let f = f?.path();
                if f.extension().is_some_and(|e| e == "out") {
                    outs.push(f);
                }
            }
        }
    }
    outs.sort();
    let read = |p: &Path| std::fs::read(p).map(|b| String::from_utf8_lossy(&b).into_owned());
    let mut rows = Vec::new();
    for out in outs {
        let cmd = read(&out.with_extension("cmd")).unwrap_or_default();
        let prior = match digest::fixture_prior(&cmd) {
            Some(name) => Some(read(&out.with_file_name(name))?),
            None => None,
        };
        let (text, d) =
            digest::digest_fixture(&read(&out)?, &cmd, prior.as_deref(), limits, encoding);
        let name = out
            .strip_prefix(dir)
            .unwrap_or(&out)
            .with_extension("")
            .display()
            .to_string();
        rows.push((
            name,
            tokens::count(encoding, &text),
            tokens::count(encoding, &d.text),
        ));
    }
    Ok(digest::ratio_table(&rows))
}

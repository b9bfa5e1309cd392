//! Which digester a tool result gets: from the tool's name and arguments in
//! the common naming of Cline, Continue, OpenHands, Claude Code and
//! OpenAI-style tools, or by sniffing the content when the name says nothing.

use super::{OutputKind, ToolOutput};
use crate::arguments::{self, READ_PATH_KEYS};
use regex::Regex;
use std::sync::LazyLock;

/// Tools that read one file and return its text.
const READ_TOOLS: &[&str] = &[
    "read_file",
    "read",
    "view",
    "open_file",
    "cat",
    "view_file",
    "read_file_tool",
];
/// Tools whose `command` argument chooses between viewing and editing.
const EDITOR_TOOLS: &[&str] = &[
    "str_replace_editor",
    "str_replace_based_edit_tool",
    "text_editor",
];
const SEARCH_TOOLS: &[&str] = &[
    "grep",
    "search_files",
    "grep_search",
    "ripgrep",
    "rg",
    "search",
    "file_search",
    "codebase_search",
];
const LISTING_TOOLS: &[&str] = &[
    "list_files",
    "ls",
    "list_dir",
    "list_directory",
    "glob",
    "view_subdirectory",
    "find_files",
    "file_glob_search",
];
pub fn classify(output: &ToolOutput) -> OutputKind {
    let tool = output.tool.map(str::to_ascii_lowercase).unwrap_or_default();
    if read_path(output).is_some() {
        return OutputKind::FileRead;
    }
    if SEARCH_TOOLS.contains(&tool.as_str()) {
        return OutputKind::Search;
    }
    if LISTING_TOOLS.contains(&tool.as_str()) {
        return OutputKind::Listing;
    }
    if let Some(kind) = command(output).and_then(|c| by_command(&c)) {
        // The command only hints: a digest that claims test results needs a
        // test runner's summary in the output (`pip show pytest`, `npm view
        // vitest --json` and `rg '# cargo test'` ran no tests).
        if summary_shows(kind, output.content) {
            return kind;
        }
        return sniff(output.content);
    }
    sniff(output.content)
}

/// Whether the output bears out a test-running command: its runner's
/// summary (or, for cargo, the errors of a run that did not compile). Other
/// kinds claim no results and need nothing.
fn summary_shows(kind: OutputKind, content: &str) -> bool {
    let summary = match kind {
        OutputKind::CargoTest => &*CARGO_TEST_SUMMARY,
        OutputKind::Pytest => &*PYTEST_SUMMARY,
        OutputKind::JsTest => &*JS_TEST_SUMMARY,
        OutputKind::GoTest => &*GO_TEST_SUMMARY,
        _ => return true,
    };
    summary.is_match(&super::clean::strip_terminal_noise(content))
}

static CARGO_TEST_SUMMARY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?m)^test result: |^\s+Summary \[.*tests? run:|^running \d+ tests?$|^error(?:\[\w+\])?: |could not compile",
    )
    .unwrap()
});
static PYTEST_SUMMARY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?m)(?-u:\b)\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected)(?-u:\b).* in [\d.]+s|no tests ran in [\d.]+s|short test summary info|^ERROR collecting ",
    )
    .unwrap()
});
static JS_TEST_SUMMARY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?m)^Tests:\s+|^\s*Test Files\s+\d+|^\s*Tests\s+\d+ (?:passed|failed)|No tests found",
    )
    .unwrap()
});
static GO_TEST_SUMMARY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^(?:ok|FAIL|---|\?)\s+\S|^(?:PASS|FAIL)$|no test files").unwrap()
});

/// The path a file-read call read: a read tool's path argument, an editor's
/// `view`, or a shell `cat FILE`.
pub fn read_path(output: &ToolOutput) -> Option<String> {
    let tool = output.tool?.to_ascii_lowercase();
    let args: Option<serde_json::Value> =
        output.arguments.and_then(|a| serde_json::from_str(a).ok());
    let path_arg = || {
        let args = args.as_ref()?;
        READ_PATH_KEYS
            .iter()
            .find_map(|k| args.get(*k).and_then(|v| v.as_str()).map(str::to_string))
    };
    if READ_TOOLS.contains(&tool.as_str()) {
        return path_arg();
    }
    if EDITOR_TOOLS.contains(&tool.as_str()) {
        let viewing = args.as_ref()?.get("command")?.as_str()? == "view";
        let is_dir = output
            .content
            .starts_with("Here's the files and directories");
        return path_arg().filter(|_| viewing && !is_dir);
    }
    let command = command(output)?;
    let c = CAT.captures(&command)?;
    Some(c[1].to_string())
}

/// `cat FILE` alone: a read. `cat a b`, pipes and redirects are commands.
static CAT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*cat\s+([^\s|;&<>]+)\s*$").unwrap());

/// The shell command of a command-running call, from its arguments.
pub(crate) fn command(output: &ToolOutput) -> Option<String> {
    let args: serde_json::Value = serde_json::from_str(output.arguments?).ok()?;
    arguments::command(&args)
}

static COMMANDS: LazyLock<Vec<(Regex, OutputKind)>> = LazyLock::new(|| {
    // Matched against each `&&`, `;` or `|` part of the command; first wins.
    let table = [
        (
            r"(?-u:\b)cargo\s+(?:\+\S+\s+)?(?:test|t|nextest)(?-u:\b)",
            OutputKind::CargoTest,
        ),
        (
            r"(?-u:\b)cargo\s+(?:\+\S+\s+)?(?:build|b|check|c|clippy|rustc)(?-u:\b)|^\s*rustc(?-u:\b)",
            OutputKind::RustBuild,
        ),
        (r"(?-u:\b)(?:py\.test|pytest)(?-u:\b)", OutputKind::Pytest),
        (
            r"(?-u:\b)(?:jest|vitest)(?-u:\b)|(?-u:\b)(?:npm|yarn|pnpm)\s+(?:run\s+)?test(?-u:\b)",
            OutputKind::JsTest,
        ),
        (r"(?-u:\b)tsc(?-u:\b)", OutputKind::Tsc),
        (r"(?-u:\b)eslint(?-u:\b)", OutputKind::Eslint),
        (r"(?-u:\b)go\s+test(?-u:\b)", OutputKind::GoTest),
        (r"(?-u:\b)git\s+(?:diff|show)(?-u:\b)", OutputKind::GitDiff),
        (r"(?-u:\b)git\s+status(?-u:\b)", OutputKind::GitStatus),
        (r"(?-u:\b)git\s+log(?-u:\b)", OutputKind::GitLog),
        (
            r"^\s*(?:rg|grep|egrep|ag|ack)(?-u:\b)|(?-u:\b)git\s+grep(?-u:\b)",
            OutputKind::Search,
        ),
        (
            r"^\s*(?:ls|tree|find|fd|exa|eza)(?-u:\b)",
            OutputKind::Listing,
        ),
    ];
    table
        .into_iter()
        .map(|(p, k)| (Regex::new(p).unwrap(), k))
        .collect()
});

fn by_command(command: &str) -> Option<OutputKind> {
    let parts: Vec<&str> = command
        .split(['|', ';', '&'])
        .filter(|p| !p.trim().is_empty())
        .collect();
    COMMANDS
        .iter()
        .find(|(pattern, _)| parts.iter().any(|p| pattern.is_match(strip_env(p))))
        .map(|(_, kind)| *kind)
}

/// `RUST_BACKTRACE=1 cargo test` is `cargo test`.
fn strip_env(part: &str) -> &str {
    let mut rest = part.trim_start();
    while let Some((word, after)) = rest.split_once(' ') {
        if word.contains('=') && !word.starts_with('-') {
            rest = after.trim_start();
        } else {
            break;
        }
    }
    rest
}

static SNIFFS: LazyLock<Vec<(Regex, OutputKind)>> = LazyLock::new(|| {
    let table = [
        (
            r#"(?m)^\{"reason":"compiler-(?:message|artifact)""#,
            OutputKind::RustBuild,
        ),
        (
            r"(?m)^test result: |^\s+Summary \[.*tests? run:",
            OutputKind::CargoTest,
        ),
        (
            r"(?m)^(?:error|warning)(?:\[\w+\])?: .+\n\s+--> ",
            OutputKind::RustBuild,
        ),
        (
            r"(?m)^\S+:\d+:\d+: (?:error|warning)\[\w+\]: ",
            OutputKind::RustBuild,
        ),
        (
            r"(?m)^=+ .*short test summary info =+$|^=+ .*\d+ (?:passed|failed).* in [\d.]+s",
            OutputKind::Pytest,
        ),
        (
            r"(?m)^Tests:\s+.*total$|^\s+Test Files\s+\d+",
            OutputKind::JsTest,
        ),
        (r"(?m)error TS\d+: ", OutputKind::Tsc),
        (r"(?m)^✖ \d+ problems? \(", OutputKind::Eslint),
        (
            r"(?m)^--- FAIL: |^(?:ok|FAIL)\s+\S+\s+[\d.]+s$",
            OutputKind::GoTest,
        ),
        (r"(?m)^diff --git ", OutputKind::GitDiff),
        (r"(?m)^commit [0-9a-f]{40}", OutputKind::GitLog),
        (
            r"(?m)^On branch |^Changes (?:not staged|to be committed)",
            OutputKind::GitStatus,
        ),
        (r"(?m)^total \d+\n[d\-l][rwx\-]{9}", OutputKind::Listing),
        (r"(?m)^[├└]── ", OutputKind::Listing),
    ];
    table
        .into_iter()
        .map(|(p, k)| (Regex::new(p).unwrap(), k))
        .collect()
});

/// Sniffing looks at the start only: markers show early, and it stays cheap.
const SNIFF_BYTES: usize = 64 * 1024;

fn sniff(content: &str) -> OutputKind {
    let mut end = content.len().min(SNIFF_BYTES);
    while !content.is_char_boundary(end) {
        end -= 1;
    }
    let head = &content[..end];
    if let Some((_, kind)) = SNIFFS.iter().find(|(pattern, _)| pattern.is_match(head)) {
        return *kind;
    }
    let trimmed = content.trim_start();
    if (trimmed.starts_with('{') || trimmed.starts_with('['))
        && serde_json::from_str::<serde_json::Value>(content).is_ok()
    {
        return OutputKind::Json;
    }
    if looks_like_search(head) {
        return OutputKind::Search;
    }
    OutputKind::Generic
}

static SEARCH_LINE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^[^\s:]+:\d+:").unwrap());

/// Most lines are `path:line:text`.
fn looks_like_search(head: &str) -> bool {
    let lines: Vec<&str> = head.lines().take(200).collect();
    let hits = lines.iter().filter(|l| SEARCH_LINE.is_match(l)).count();
    lines.len() >= 2 && hits * 10 >= lines.len() * 8
}

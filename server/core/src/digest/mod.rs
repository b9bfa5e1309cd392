//! Digesters: the compact text a model is shown in place of a tool result.
//!
//! A digest never looks at the prompt's budget; it fits `DigestLimits` and
//! ends with a footer naming its blob, so the model can fetch `lines` or `grep`
//! of the original. Its first line, the headline, says what the output is and
//! how it ended: prompts under pressure show only `headline [b3:id]`.
//!
//! Invariant: every distinct error and failing test of a build or test output
//! is named with its location. Duplicates are grouped and locations shortened
//! to fit; when even the shortest form exceeds the cap, the digest exceeds it
//! rather than drop one (see `draft.rs`).

mod binary;
mod cargo;
mod classify;
mod clean;
mod diagnostics;
mod draft;
mod file_read;
mod fixture;
mod git;
mod js;
mod json;
mod listing;
mod log;
mod outline;
mod search;
mod table;
mod test_run;
mod tests_output;

pub use binary::{is_binary, type_guess};
pub use classify::{classify, read_path};
pub use fixture::{digest_fixture, digest_standalone, fixture_call, fixture_prior};
pub use table::ratio_table;

use std::borrow::Cow;

use crate::config::DigestLimits;
use crate::ids::ExchangeId;
use crate::tokens::Encoding;
use draft::Draft;

/// What a tool result is, decided from the tool's name and arguments, or by
/// sniffing the content when the name says nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutputKind {
    FileRead,
    Search,
    /// cargo build / check / clippy and rustc, human, short or JSON messages.
    RustBuild,
    /// cargo test and cargo nextest.
    CargoTest,
    Tsc,
    Eslint,
    Pytest,
    /// jest and vitest.
    JsTest,
    GoTest,
    GitDiff,
    GitStatus,
    GitLog,
    /// ls, tree, find and list-files tools.
    Listing,
    Json,
    /// Any other command output: logs, progress, plain text.
    Generic,
    /// Bytes that are not text (`is_binary`): never shown, only described.
    Binary,
}

impl OutputKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OutputKind::FileRead => "file",
            OutputKind::Search => "search",
            OutputKind::RustBuild => "rust-build",
            OutputKind::CargoTest => "cargo-test",
            OutputKind::Tsc => "tsc",
            OutputKind::Eslint => "eslint",
            OutputKind::Pytest => "pytest",
            OutputKind::JsTest => "js-test",
            OutputKind::GoTest => "go-test",
            OutputKind::GitDiff => "git-diff",
            OutputKind::GitStatus => "git-status",
            OutputKind::GitLog => "git-log",
            OutputKind::Listing => "listing",
            OutputKind::Json => "json",
            OutputKind::Generic => "output",
            OutputKind::Binary => "binary",
        }
    }

    pub const ALL: [OutputKind; 16] = [
        OutputKind::FileRead,
        OutputKind::Search,
        OutputKind::RustBuild,
        OutputKind::CargoTest,
        OutputKind::Tsc,
        OutputKind::Eslint,
        OutputKind::Pytest,
        OutputKind::JsTest,
        OutputKind::GoTest,
        OutputKind::GitDiff,
        OutputKind::GitStatus,
        OutputKind::GitLog,
        OutputKind::Listing,
        OutputKind::Json,
        OutputKind::Generic,
        OutputKind::Binary,
    ];

    /// The kind `as_str` named; the store keeps kinds by name.
    pub fn parse(s: &str) -> Option<OutputKind> {
        OutputKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// A tool result and the call that produced it.
#[derive(Clone, Copy, Debug)]
pub struct ToolOutput<'a> {
    /// The tool's name, from the tool message or its matching call.
    pub tool: Option<&'a str>,
    /// The matching call's arguments, as JSON text.
    pub arguments: Option<&'a str>,
    pub content: &'a str,
}

/// Facts about the stored blob that every digest's footer shows.
#[derive(Clone, Debug)]
pub struct BlobFacts {
    /// The short id, `b3:` and 12 hex characters.
    pub id: String,
    pub bytes: u64,
    pub tokens: u32,
}

/// The last earlier read of the same path in this session.
#[derive(Clone, Debug)]
pub struct PriorRead {
    pub exchange: ExchangeId,
    /// The earlier content when its bytes differ, to report `+a -b` lines;
    /// `None` when the bytes are the same.
    pub changed_from: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Digest {
    pub kind: OutputKind,
    /// One line that says what the output is and how it ended.
    pub headline: String,
    /// The whole digest, headline first, footer last; within the limit.
    /// Or, when `whole`, the output itself.
    pub text: String,
    /// The output costs no more than its digest, so `text` is the output,
    /// without headline or footer: there is nothing more to retrieve.
    pub whole: bool,
}

pub fn footer(facts: &BlobFacts) -> String {
    format!(
        "[{} · {} bytes · {} tokens · context_retrieve with lines or grep for more]",
        facts.id, facts.bytes, facts.tokens
    )
}

/// Digests a tool result with the digester its kind calls for.
pub fn digest(
    output: &ToolOutput,
    facts: &BlobFacts,
    prior: Option<&PriorRead>,
    limits: &DigestLimits,
    encoding: Encoding,
) -> Digest {
    // Text with NUL bytes is binary too (an archive that happens to be UTF-8).
    if binary::has_nul(output.content.as_bytes()) {
        return digest_binary(output, output.content.as_bytes(), facts, limits, encoding);
    }
    let kind = classify(output);
    let footer = footer(facts);
    let mut draft = Draft::new(encoding, limits.inline_max_tokens, &footer);
    let label =
        classify::command(output).unwrap_or_else(|| output.tool.unwrap_or("output").to_string());
    let content = clean::strip_terminal_noise(output.content);
    let text = content.as_ref();
    match kind {
        OutputKind::FileRead => {
            let path = read_path(output).unwrap_or_else(|| "file".to_string());
            file_read::digest(&path, text, prior, &mut draft)
        }
        OutputKind::Search => search::digest(&label, text, &mut draft),
        OutputKind::RustBuild => cargo::digest(&label, text, &mut draft),
        OutputKind::CargoTest => tests_output::cargo(&label, text, &mut draft),
        OutputKind::Pytest => tests_output::pytest(&label, text, &mut draft),
        OutputKind::GoTest => tests_output::go(&label, text, &mut draft),
        OutputKind::Tsc => js::tsc(&label, text, &mut draft),
        OutputKind::Eslint => js::eslint(&label, text, &mut draft),
        OutputKind::JsTest => js::tests(&label, text, &mut draft),
        OutputKind::GitDiff => git::diff(&label, text, &mut draft),
        OutputKind::GitStatus => git::status(&label, text, &mut draft),
        OutputKind::GitLog => git::log(&label, text, &mut draft),
        OutputKind::Listing => listing::digest(&label, text, &mut draft),
        OutputKind::Json => json::digest(&label, text, &mut draft),
        OutputKind::Generic => log::digest(&label, text, &mut draft),
        OutputKind::Binary => unreachable!("binary output is digested by digest_binary"),
    }
    // The whole output can replace the digest only when it fits the cap;
    // untouched by cleaning, its size is already known (`facts.tokens`), so
    // a large output is not counted a second time.
    let may_fit = matches!(content, Cow::Owned(_)) || facts.tokens <= limits.inline_max_tokens + 4;
    if kind != OutputKind::FileRead && !text.trim().is_empty() && may_fit {
        draft.prefer_whole(text);
    }
    let (headline, digest, digest_tokens) = draft.finish();
    let whole = !text.trim().is_empty() && facts.tokens <= digest_tokens;
    Digest {
        kind,
        headline,
        text: if whole {
            text.trim_end().to_string()
        } else {
            digest
        },
        whole,
    }
}

/// Digests a tool result whose bytes are not text (`is_binary`): its size
/// and type, never its bytes; `output.content` is not read.
pub fn digest_binary(
    output: &ToolOutput,
    bytes: &[u8],
    facts: &BlobFacts,
    limits: &DigestLimits,
    encoding: Encoding,
) -> Digest {
    // Lines and grep do not apply to bytes: the footer says what does.
    let footer = format!(
        "[{} · {} bytes · binary: context_retrieve returns its bytes as base64]",
        facts.id, facts.bytes
    );
    let mut draft = Draft::new(encoding, limits.inline_max_tokens, &footer);
    let label = read_path(output)
        .or_else(|| classify::command(output))
        .unwrap_or_else(|| output.tool.unwrap_or("output").to_string());
    binary::digest(&label, bytes, &mut draft);
    let (headline, text, _) = draft.finish();
    Digest {
        kind: OutputKind::Binary,
        headline,
        text,
        whole: false,
    }
}

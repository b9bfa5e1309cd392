//! Digesters: the compact text a model is shown in place of a tool result.
//!
//! A digest never looks at the prompt's budget; it fits `DigestLimits` and
//! ends with a footer naming its blob, so the model can fetch `lines` or `grep`
//! of the original.

use crate::config::DigestLimits;
use crate::ids::ExchangeId;
use crate::tokens::{self, Encoding};

/// What a tool result is, decided from the tool's name and arguments, or by
/// sniffing the content when the name says nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OutputKind {
    FileRead,
    Generic,
}

impl OutputKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OutputKind::FileRead => "file",
            OutputKind::Generic => "output",
        }
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
    pub text: String,
}

pub fn classify(output: &ToolOutput) -> OutputKind {
    if read_path(output).is_some() {
        OutputKind::FileRead
    } else {
        OutputKind::Generic
    }
}

/// The path a file-read call read, when the call is a file read.
pub fn read_path(output: &ToolOutput) -> Option<String> {
    let tool = output.tool?.to_ascii_lowercase();
    if !matches!(tool.as_str(), "read_file" | "read" | "view" | "open_file" | "cat") {
        return None;
    }
    let args: serde_json::Value = serde_json::from_str(output.arguments?).ok()?;
    ["path", "file_path", "filePath", "target_file", "absolute_path", "file"]
        .iter()
        .find_map(|k| args.get(*k).and_then(|v| v.as_str()).map(str::to_string))
}

pub fn footer(facts: &BlobFacts) -> String {
    format!(
        "[{} · {} bytes · {} tokens · context_retrieve with lines or grep for more]",
        facts.id, facts.bytes, facts.tokens
    )
}

/// Digests a tool result: head and tail lines, the footer last.
pub fn digest(
    output: &ToolOutput,
    facts: &BlobFacts,
    prior: Option<&PriorRead>,
    limits: &DigestLimits,
    encoding: Encoding,
) -> Digest {
    let kind = classify(output);
    let lines: Vec<&str> = output.content.lines().collect();
    let what = match (kind, read_path(output)) {
        (OutputKind::FileRead, Some(path)) => format!("{path}: {} lines", lines.len()),
        _ => format!("{}: {} lines", output.tool.unwrap_or("tool output"), lines.len()),
    };
    let headline = match prior {
        Some(PriorRead { exchange, changed_from: None }) => format!("{what}, unchanged since {exchange}"),
        Some(PriorRead { exchange, changed_from: Some(_) }) => format!("{what}, changed since {exchange}"),
        None => what,
    };
    let footer = footer(facts);
    let fixed = tokens::count(encoding, &headline) + tokens::count(encoding, &footer) + 2;
    let room = limits.inline_max_tokens.saturating_sub(fixed);
    let body = head_and_tail(&lines, room, encoding);
    let text = if body.is_empty() {
        format!("{headline}\n{footer}")
    } else {
        format!("{headline}\n{body}\n{footer}")
    };
    Digest { kind, headline, text }
}

/// As many head and tail lines as fit `room` tokens, with a marker between.
fn head_and_tail(lines: &[&str], room: u32, encoding: Encoding) -> String {
    let whole = lines.join("\n");
    if tokens::count(encoding, &whole) <= room {
        return whole;
    }
    let (mut head, mut tail) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0usize, lines.len());
    let mut used = 8; // the omission marker
    while i < j {
        let take_head = head.len() <= tail.len();
        let line = if take_head { lines[i] } else { lines[j - 1] };
        let line = tokens::truncate(encoding, line, 60);
        let cost = tokens::count(encoding, line) + 1;
        if used + cost > room {
            break;
        }
        used += cost;
        if take_head {
            head.push(line);
            i += 1;
        } else {
            tail.push(line);
            j -= 1;
        }
    }
    tail.reverse();
    let mut out = head.join("\n");
    out.push_str(&format!("\n… {} lines omitted …\n", j - i));
    out.push_str(&tail.join("\n"));
    out
}

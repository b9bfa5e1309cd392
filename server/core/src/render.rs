//! The one rendering of messages, header lines and reference lines, used at
//! ingest (to count tokens once) and at assemble (to emit the same text).
//!
//! Token accounting is additive: every piece of text the packer places ends
//! in `"\n"` and starts with a non-space character, so the tokenizer never
//! merges the end of one piece with the start of the next, and the count of
//! a message is the sum of its pieces' counts. Each chat message costs
//! `MESSAGE_OVERHEAD` on top of its content, a prompt `REPLY_PRIMER` on top
//! of its messages, and the tool definitions `tools_tokens`.

use crate::exchange::{Counted, KeptMessage, Level, LevelTokens, ToolResult};
use crate::ids::ExchangeId;
use crate::message::Role;
use crate::text::{clip_chars, one_line};
use crate::tokens::{self, Encoding};

/// Tokens a chat message costs besides its content (role and separators),
/// as in OpenAI's accounting.
pub const MESSAGE_OVERHEAD: u32 = 4;
/// Tokens every prompt costs once, priming the model's reply.
pub const REPLY_PRIMER: u32 = 3;
/// Tokens the tool list costs besides the JSON of its definitions.
pub const TOOLS_OVERHEAD: u32 = 12;
/// String arguments longer than this are shortened at `Level::Digests`.
const DIGEST_ARGUMENT_CHARS: usize = 80;

/// One piece of a prompt message, in the shape model APIs know.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        arguments: String,
    },
    ToolResult {
        call_id: String,
        name: String,
        text: String,
    },
}

impl Block {
    /// The text this block is counted as: non-empty, ends in `"\n"`.
    pub fn text(&self) -> String {
        match self {
            Block::Text(text) | Block::ToolResult { text, .. } => text.clone(),
            Block::ToolUse {
                name, arguments, ..
            } => tool_use_text(name, arguments),
        }
    }
}

fn tool_use_text(name: &str, arguments: &str) -> String {
    format!("→ {name} {arguments}\n")
}

/// `text` as a piece: trimmed, ending in `"\n"`; `None` when blank.
pub fn piece(text: &str) -> Option<String> {
    let trimmed = text.trim();
    (!trimmed.is_empty()).then(|| format!("{trimmed}\n"))
}

/// `text` as a counted piece, e.g. the system prompt handed to the packer.
pub fn counted_piece(text: &str, encoding: Encoding) -> Counted {
    let text = piece(text).unwrap_or_default();
    Counted {
        tokens: tokens::count(encoding, &text),
        text,
    }
}

/// The blocks a stored message shows at `level` (`Full` or `Digests`; the
/// other levels show the exchange, not its messages, and render as `Digests`).
pub fn message_blocks(m: &KeptMessage, level: Level) -> Vec<Block> {
    let full = level == Level::Full;
    let msg = &m.message;
    match msg.role {
        Role::Tool => {
            let text = match (&m.result, full) {
                (Some(r), false) => piece(&format!(
                    "{} [{}]",
                    one_line(&r.headline),
                    r.blob.short_id()
                ))
                .unwrap_or_default(),
                _ => piece(&msg.content).unwrap_or_else(|| "(no output)\n".to_string()),
            };
            vec![Block::ToolResult {
                call_id: msg.tool_call_id.clone().unwrap_or_default(),
                name: msg.name.clone().unwrap_or_default(),
                text,
            }]
        }
        _ => {
            let mut blocks: Vec<Block> = piece(&msg.content).map(Block::Text).into_iter().collect();
            blocks.extend(msg.tool_calls.iter().map(|c| Block::ToolUse {
                id: c.id.clone(),
                name: c.name.clone(),
                arguments: if full {
                    compact_json(&c.arguments)
                } else {
                    shortened_arguments(&c.arguments)
                },
            }));
            blocks
        }
    }
}

/// The content of a stored message at `level`, exactly as the prompt shows it.
pub fn message_text(m: &KeptMessage, level: Level) -> String {
    message_blocks(m, level).iter().map(Block::text).collect()
}

/// Tokens of a message at `level`, overhead included.
pub fn message_tokens(m: &KeptMessage, level: Level, encoding: Encoding) -> u32 {
    tokens::count(encoding, &message_text(m, level)) + MESSAGE_OVERHEAD
}

/// What an exchange's messages cost at the levels that list them. A message
/// that reads the same at both levels (prose without tool calls) is counted once.
pub fn exchange_tokens(messages: &[KeptMessage], encoding: Encoding) -> LevelTokens {
    let mut total = LevelTokens::default();
    for m in messages {
        let full = message_text(m, Level::Full);
        let digests = message_text(m, Level::Digests);
        let full_tokens = tokens::count(encoding, &full) + MESSAGE_OVERHEAD;
        total.full += full_tokens;
        total.digests += if digests == full {
            full_tokens
        } else {
            tokens::count(encoding, &digests) + MESSAGE_OVERHEAD
        };
    }
    total
}

/// The L2 line of an exchange: `x12 fix E0308 in src/a.rs`. No clock time:
/// it costs tokens on every line and rarely points at anything.
/// The outcome is shown only when it is an error: " — completed" on every
/// line costs tokens and says nothing.
pub fn header_line(id: ExchangeId, header: &str) -> String {
    let header = one_line(header);
    let header = header
        .strip_suffix(" — completed")
        .or_else(|| header.strip_suffix(" — ongoing"))
        .unwrap_or(&header);
    format!("{id} {header}\n")
}

/// The L4 line of a stored tool output: `b3:… x4 src/a.rs`, or its
/// headline when it has no path. Size and kind are in the blob itself.
pub fn reference_line(result: &ToolResult, exchange: ExchangeId) -> String {
    let what = match &result.path {
        Some(path) => path.clone(),
        None => clip_chars(&one_line(&result.headline), 60),
    };
    format!("{} {exchange} {what}\n", result.blob.short_id())
}

fn compact_json(arguments: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(v) => v.to_string(),
        Err(_) if arguments.trim().is_empty() => "{}".to_string(),
        Err(_) => one_line(arguments),
    }
}

/// Arguments with long string values cut, still valid JSON: a `write_file`
/// call shows its path, not the file it wrote.
fn shortened_arguments(arguments: &str) -> String {
    fn shorten(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::String(s) if s.chars().count() > DIGEST_ARGUMENT_CHARS => {
                let n = s.chars().count();
                *s = format!("{} ({n} chars)", clip_chars(s, DIGEST_ARGUMENT_CHARS / 2));
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(shorten),
            serde_json::Value::Object(map) => map.values_mut().for_each(shorten),
            _ => {}
        }
    }
    match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(mut v) => {
            shorten(&mut v);
            v.to_string()
        }
        Err(_) => {
            let shown = patch_files(arguments).unwrap_or_else(|| one_line(arguments));
            clip_chars(&shown, DIGEST_ARGUMENT_CHARS)
        }
    }
}

/// A patch in the form Codex's `apply_patch` takes as its input (`*** Begin
/// Patch`, then `*** Add File: …`, `*** Update File: …`, …) told by the
/// files it touches: what its digest says instead of its first lines.
fn patch_files(input: &str) -> Option<String> {
    const MARKERS: [(&str, &str); 4] = [
        ("*** Add File: ", "add"),
        ("*** Update File: ", "update"),
        ("*** Delete File: ", "delete"),
        ("*** Move to: ", "move to"),
    ];
    if !input.trim_start().starts_with("*** Begin Patch") {
        return None;
    }
    let files: Vec<String> = input
        .lines()
        .filter_map(|line| {
            MARKERS.iter().find_map(|(marker, verb)| {
                line.strip_prefix(marker)
                    .map(|path| format!("{verb} {}", path.trim()))
            })
        })
        .collect();
    (!files.is_empty()).then(|| format!("patch: {}", files.join(", ")))
}

/// What the context tools' definitions cost in a prompt.
pub fn tools_tokens(encoding: Encoding) -> u32 {
    tokens::count(encoding, &crate::context_tool::definitions().to_string()) + TOOLS_OVERHEAD
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::OutputKind;
    use crate::ids::{BlobHash, MessageId};
    use crate::message::{Message, ToolCall};

    #[test]
    fn a_patch_is_shortened_to_the_files_it_touches() {
        let patch = "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-old\n+new\n\
                     *** Add File: hello.txt\n+hi\n*** Delete File: old.txt\n*** End Patch\n";
        assert_eq!(
            shortened_arguments(patch),
            "patch: update src/lib.rs, add hello.txt, delete old.txt"
        );
        // Other text that is not JSON: its first characters, on one line.
        assert_eq!(shortened_arguments("ls -la\nsrc"), "ls -la src");
    }

    pub(crate) fn kept(role: Role, content: &str) -> KeptMessage {
        KeptMessage {
            id: MessageId {
                exchange: ExchangeId(1),
                index: 1,
            },
            message: Message::new(role, content),
            result: None,
        }
    }

    fn result(path: Option<&str>) -> ToolResult {
        ToolResult {
            blob: BlobHash::of(b"raw"),
            kind: if path.is_some() {
                OutputKind::FileRead
            } else {
                OutputKind::Generic
            },
            path: path.map(str::to_string),
            bytes: 2048,
            tokens: 600,
            headline: "src/a.rs: 80 lines".to_string(),
            digest: "src/a.rs: 80 lines\nfn main() {}\n[footer]".to_string(),
            whole: false,
        }
    }

    fn check(m: &KeptMessage, level: Level, expect: &str) {
        assert_eq!(message_text(m, level), expect);
    }

    #[test]
    fn renders_each_role_at_each_level() {
        check(
            &kept(Role::User, "  fix the build \n"),
            Level::Full,
            "fix the build\n",
        );
        check(&kept(Role::User, "   "), Level::Full, "");
        let mut call = kept(Role::Assistant, "Reading it.");
        call.message.tool_calls.push(ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: "{ \"path\": \"src/a.rs\" }".into(),
        });
        check(
            &call,
            Level::Full,
            "Reading it.\n→ read_file {\"path\":\"src/a.rs\"}\n",
        );
        let mut write = kept(Role::Assistant, "");
        write.message.tool_calls.push(ToolCall {
            id: "c2".into(),
            name: "write_file".into(),
            arguments: serde_json::json!({"path": "a.txt", "content": "x".repeat(200)}).to_string(),
        });
        check(
            &write,
            Level::Digests,
            &format!(
                "→ write_file {{\"content\":\"{}… (200 chars)\",\"path\":\"a.txt\"}}\n",
                "x".repeat(40)
            ),
        );
        let mut tool = kept(Role::Tool, "src/a.rs: 80 lines\nfn main() {}\n[footer]");
        tool.result = Some(result(Some("src/a.rs")));
        check(
            &tool,
            Level::Full,
            "src/a.rs: 80 lines\nfn main() {}\n[footer]\n",
        );
        check(
            &tool,
            Level::Digests,
            "src/a.rs: 80 lines [b3:d4d4d19bd64b]\n",
        );
        check(&kept(Role::Tool, ""), Level::Digests, "(no output)\n");
    }

    #[test]
    fn lines_for_headers_and_references() {
        let line = header_line(ExchangeId(12), "fix E0308\n in a.rs — completed");
        assert_eq!(line, "x12 fix E0308 in a.rs\n");
        assert_eq!(
            header_line(ExchangeId(6), "cargo test E0425 — error"),
            "x6 cargo test E0425 — error\n"
        );
        assert_eq!(
            reference_line(&result(Some("src/a.rs")), ExchangeId(4)),
            "b3:d4d4d19bd64b x4 src/a.rs\n"
        );
        assert_eq!(
            reference_line(&result(None), ExchangeId(4)),
            "b3:d4d4d19bd64b x4 src/a.rs: 80 lines\n"
        );
    }

    #[test]
    fn exchange_tokens_sum_message_counts() {
        let ms = [kept(Role::User, "hello world"), kept(Role::Assistant, "hi")];
        let t = exchange_tokens(&ms, Encoding::O200kBase);
        assert_eq!(t.full, 2 + 1 + 2 * MESSAGE_OVERHEAD + 2);
        assert_eq!(t.digests, t.full);
        assert!(tools_tokens(Encoding::O200kBase) > TOOLS_OVERHEAD);
    }
}

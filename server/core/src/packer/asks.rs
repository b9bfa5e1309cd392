//! What the person said before the recent tail: the person's own messages
//! of the exchanges that ran no tools, verbatim, one line each under the
//! exchange id, newest back to `asks_tokens`.
//!
//! In a conversation the names, numbers and decisions a person asks about
//! later are mostly what they said themselves, and their messages are a
//! fifth of its tokens or less: past the tail, this layer keeps those words
//! in view about four times as far back as the same tokens of whole turns.
//! The assistant's replies stay one retrieve away by the same ids.
//!
//! The lines are chosen from the tail boundary back, so they only change
//! when the tail is compacted: between compactions the layer is the same
//! text, turn after turn, and stays in the cached prefix.

use crate::exchange::Counted;
use crate::message::Role;
use crate::render::MESSAGE_OVERHEAD;
use crate::supersede::SupersededBy;
use crate::tokens::{self, Encoding};
use crate::view::ExchangeView;

/// One exchange's line in the layer: its id and what the person wrote.
pub(super) struct Ask<'a> {
    pub(super) exchange: &'a ExchangeView,
    pub(super) line: Counted,
}

/// A message longer than this share of `asks_tokens` is left to its header
/// and summary (a pasted document, a log): one such message would take the
/// room of a dozen short ones.
const LONGEST_SHARE: u32 = 4;

/// Prose takes 3 to 6 bytes a token: a message of more bytes than this
/// many per token of `longest` is too long without counting it (a pasted
/// log is not counted on every assemble).
const BYTES_PER_TOKEN_AT_MOST: usize = 32;

/// The asks of the exchanges up to `boundary`, oldest first: newest back,
/// at most `reach` exchanges, until the next would pass `asks_tokens` with
/// the layer's title (`title_cost`). An exchange that ran tools (its output
/// is in view as digests and references), a superseded one, or one whose
/// person wrote nothing or too much is passed over.
pub(super) fn choose<'a>(
    window: &'a [ExchangeView],
    boundary: u32,
    reach: u32,
    asks_tokens: u32,
    title_cost: u32,
    superseded: &SupersededBy,
    enc: Encoding,
) -> Vec<Ask<'a>> {
    let longest = asks_tokens / LONGEST_SHARE;
    let mut room = i64::from(asks_tokens) - i64::from(title_cost + MESSAGE_OVERHEAD);
    let mut chosen = Vec::new();
    let oldest = boundary.saturating_sub(reach);
    for e in window
        .iter()
        .rev()
        .filter(|e| e.id.0 <= boundary && e.id.0 > oldest)
    {
        if e.ran_tools() || superseded.contains_key(&e.id) {
            continue;
        }
        let Some(line) = ask_line(e, longest, enc) else {
            continue;
        };
        if i64::from(line.tokens) > room {
            break;
        }
        room -= i64::from(line.tokens);
        chosen.push(Ask { exchange: e, line });
    }
    chosen.reverse();
    chosen
}

/// `x12 <what the person wrote>`: the exchange's user messages, each
/// trimmed, one after the other; `None` when they are empty or longer than
/// `longest` tokens.
fn ask_line(e: &ExchangeView, longest: u32, enc: Encoding) -> Option<Counted> {
    let said: Vec<&str> = e
        .messages
        .iter()
        .filter(|m| m.message.role == Role::User)
        .map(|m| m.message.content.trim())
        .filter(|t| !t.is_empty())
        .collect();
    let bytes: usize = said.iter().map(|t| t.len()).sum();
    if said.is_empty() || bytes > longest as usize * BYTES_PER_TOKEN_AT_MOST {
        return None;
    }
    let text = format!("{} {}\n", e.id, said.join("\n"));
    let tokens = tokens::count(enc, &text);
    (tokens <= longest).then_some(Counted { text, tokens })
}

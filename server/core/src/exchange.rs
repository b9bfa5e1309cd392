//! Exchanges as they are kept: messages with tool results replaced by their
//! blob, and the header / summary / full trio.

use crate::digest::OutputKind;
use crate::ids::{BlobHash, MessageId};
use crate::message::Message;

/// A tool result as kept: the raw bytes live in a blob, the prompt shows the digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolResult {
    pub blob: BlobHash,
    pub kind: OutputKind,
    /// The path of a file read, when the call was one.
    pub path: Option<String>,
    pub bytes: u64,
    /// Tokens of the raw (masked) output.
    pub tokens: u32,
    /// The digest's first line.
    pub headline: String,
    /// The whole digest, footer included; the output itself when `whole`.
    pub digest: String,
    /// The digest is the output: no reference line, nothing to retrieve.
    pub whole: bool,
}

/// How much of an exchange a prompt shows, from most to least.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Every message; tool results as their digests.
    Full,
    /// Every message; tool results as one reference line (headline and blob id).
    Digests,
    /// The exchange's summary.
    Summary,
    /// The exchange's header line.
    Header,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Full => "full",
            Level::Digests => "digests",
            Level::Summary => "summary",
            Level::Header => "header",
        }
    }
}

/// A message of a stored exchange.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeptMessage {
    pub id: MessageId,
    /// For tool results, `content` holds the digest; the raw text is in the blob.
    pub message: Message,
    pub result: Option<ToolResult>,
}

/// The text of a header or summary with its token count, counted once.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Counted {
    pub text: String,
    pub tokens: u32,
}

/// How an exchange ended, as far as the messages tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Outcome {
    #[default]
    Ongoing,
    Completed,
    Error,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ongoing => "ongoing",
            Outcome::Completed => "completed",
            Outcome::Error => "error",
        }
    }
}

crate::wire_name!(Outcome: Ongoing, Completed, Error);

/// Splits an appended batch into the part that continues the session's open
/// exchange and the new exchanges that follow: a user message opens one.
pub fn group(mut messages: Vec<Message>) -> (Vec<Message>, Vec<Vec<Message>>) {
    let starts: Vec<usize> = (0..messages.len())
        .filter(|&i| messages[i].opens_exchange())
        .collect();
    // Each exchange is split off the end at its own length (grown a push at
    // a time, a two-message exchange's Vec would hold room for four), and
    // the batch gives its room back as it empties: an append of 50,000
    // exchanges does not hold its messages twice over.
    let mut opened = Vec::with_capacity(starts.len());
    for &start in starts.iter().rev() {
        opened.push(messages.split_off(start));
        if messages.len() * 4 < messages.capacity() * 3 {
            messages.shrink_to_fit();
        }
    }
    opened.reverse();
    (messages, opened)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Role;

    fn roles(ms: &[Message]) -> String {
        ms.iter().map(|m| &m.role.as_str()[..1]).collect()
    }

    #[test]
    fn user_messages_open_exchanges() {
        let batch = [
            Role::Assistant,
            Role::Tool,
            Role::User,
            Role::Assistant,
            Role::User,
            Role::Tool,
        ]
        .into_iter()
        .map(|r| Message::new(r, "."))
        .collect();
        let (cont, opened) = group(batch);
        assert_eq!(roles(&cont), "at");
        assert_eq!(
            opened.iter().map(|o| roles(o)).collect::<Vec<_>>(),
            ["ua", "ut"]
        );
    }
}

/// Token counts of an exchange rendered at the levels that list messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct LevelTokens {
    pub full: u32,
    pub digests: u32,
}

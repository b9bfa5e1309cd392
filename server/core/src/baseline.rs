//! What ctxproxy is compared with in the replay report, over plain data:
//! full history, Cline-style truncation and a sliding window. How a run of
//! prompts is judged is `evaluation`.

use crate::message::{Message, Role};
use crate::render::{MESSAGE_OVERHEAD, REPLY_PRIMER};
use crate::tokens::{self, Encoding};

/// A prompt of a baseline strategy: whole raw messages.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawPrompt {
    pub messages: Vec<(Role, String)>,
    /// Tokens of each message, overhead included.
    pub tokens: Vec<u32>,
}

impl RawPrompt {
    pub fn total(&self) -> u32 {
        self.tokens.iter().sum::<u32>() + REPLY_PRIMER
    }

    pub fn text(&self) -> String {
        self.messages.iter().map(|(_, t)| t.as_str()).collect()
    }

    /// Tokens of the messages identical, from the start, in `prev`.
    pub fn shared_prefix(&self, prev: &RawPrompt) -> u32 {
        self.messages
            .iter()
            .zip(&prev.messages)
            .zip(&self.tokens)
            .take_while(|((a, b), _)| a == b)
            .map(|(_, n)| n)
            .sum()
    }
}

/// How a baseline fits history into a prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Every message, tool outputs raw.
    FullHistory,
    /// Cline's `getNextTruncationRange`: keep the first user/assistant pair;
    /// once a prompt is over `window - 40_000`, drop half of the rest
    /// (rounded to pairs, the kept part starting at a user message). The
    /// dropped range only grows.
    Cline { window: u32 },
    /// The newest messages that fit `budget`.
    SlidingWindow { budget: u32 },
}

impl Strategy {
    pub const CLINE_DEFAULT_WINDOW: u32 = 128_000;
    const CLINE_HEADROOM: u32 = 40_000;

    pub fn name(self) -> &'static str {
        match self {
            Strategy::FullHistory => "full-history",
            Strategy::Cline { .. } => "cline",
            Strategy::SlidingWindow { .. } => "sliding-window",
        }
    }
}

/// A raw message as one text: content, then one line per tool call.
fn raw_text(m: &Message) -> String {
    let mut text = sent_content(m);
    for c in &m.tool_calls {
        text.push_str(&format!("\n→ {} {}", c.name, c.arguments));
    }
    text.push('\n');
    text
}

/// A message's text as a client sends it: a tool output whose bytes are
/// not UTF-8 cannot be a JSON string, so a client sends them decoded
/// lossily.
pub fn sent_content(m: &Message) -> String {
    match &m.raw {
        Some(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        None => m.content.clone(),
    }
}

/// What one message of a client's history costs as it sends it: its text
/// and calls (`raw_text`) and a message's overhead. What full history is
/// counted by, here and in what `ctxproxy run` says the client sent.
pub fn message_tokens(m: &Message, encoding: Encoding) -> u32 {
    tokens::count(encoding, &raw_text(m)) + MESSAGE_OVERHEAD
}

/// The prompt each baseline sends when each exchange opens: all earlier
/// exchanges, then the exchange's first message. One prompt per exchange.
/// `opening` begins every history (a child call's query and context, which
/// its runtime sends before the child's own exchanges).
pub fn replay(
    strategy: Strategy,
    opening: &[Message],
    exchanges: &[Vec<Message>],
    encoding: Encoding,
) -> Vec<RawPrompt> {
    let entry = |m: &Message| (m.role, raw_text(m), message_tokens(m, encoding));
    let mut history: Vec<(Role, String, u32)> = opening.iter().map(entry).collect();
    let mut dropped: Option<(usize, usize)> = None;
    let mut prompts = Vec::new();
    for exchange in exchanges {
        let Some(input) = exchange.first() else {
            continue;
        };
        let input_text = raw_text(input);
        let input_tokens = message_tokens(input, encoding);
        let kept: Vec<usize> = match strategy {
            Strategy::FullHistory => (0..history.len()).collect(),
            Strategy::Cline { window } => {
                let kept = |d: Option<(usize, usize)>| -> Vec<usize> {
                    (0..history.len())
                        .filter(|&i| d.is_none_or(|(s, e)| i < s || i > e))
                        .collect()
                };
                let size: u32 =
                    kept(dropped).iter().map(|&i| history[i].2).sum::<u32>() + input_tokens;
                if size > window.saturating_sub(Strategy::CLINE_HEADROOM) {
                    dropped = cline_truncation(&history, dropped).or(dropped);
                }
                kept(dropped)
            }
            Strategy::SlidingWindow { budget } => {
                let mut room = budget.saturating_sub(input_tokens + REPLY_PRIMER);
                let mut start = history.len();
                while start > 0 && history[start - 1].2 <= room {
                    room -= history[start - 1].2;
                    start -= 1;
                }
                while start < history.len() && history[start].0 == Role::Tool {
                    start += 1;
                }
                (start..history.len()).collect()
            }
        };
        let mut prompt = RawPrompt::default();
        for i in kept {
            prompt.messages.push((history[i].0, history[i].1.clone()));
            prompt.tokens.push(history[i].2);
        }
        prompt.messages.push((input.role, input_text));
        prompt.tokens.push(input_tokens);
        prompts.push(prompt);
        history.extend(exchange.iter().map(entry));
    }
    prompts
}

/// Cline's next deleted range: from the message after the first pair to
/// half of what remains, extended so the next kept message is a user's.
fn cline_truncation(
    history: &[(Role, String, u32)],
    dropped: Option<(usize, usize)>,
) -> Option<(usize, usize)> {
    let start_of_rest = dropped.map_or(2, |(_, end)| end + 1);
    let remove = history.len().checked_sub(start_of_rest)? / 4 * 2;
    if remove == 0 {
        return None;
    }
    let mut end = start_of_rest + remove - 1;
    while end + 1 < history.len() && history[end + 1].0 != Role::User {
        end += 1;
    }
    Some((2, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENC: Encoding = Encoding::O200kBase;

    /// Exchanges of `n` messages each: user, then assistant and tool turns.
    fn exchanges(count: usize, words: usize) -> Vec<Vec<Message>> {
        (0..count)
            .map(|i| {
                let body = |tag: &str| format!("{tag} {i} {}", "word ".repeat(words));
                let mut call = Message::new(Role::Assistant, body("calling"));
                call.tool_calls.push(crate::message::ToolCall {
                    id: format!("c{i}"),
                    name: "read_file".into(),
                    arguments: "{}".into(),
                });
                let mut result = Message::new(Role::Tool, body("output"));
                result.tool_call_id = Some(format!("c{i}"));
                vec![
                    Message::new(Role::User, body("ask")),
                    call,
                    result,
                    Message::new(Role::Assistant, body("done")),
                ]
            })
            .collect()
    }

    fn roles(p: &RawPrompt) -> String {
        p.messages.iter().map(|(r, _)| &r.as_str()[..1]).collect()
    }

    #[test]
    fn full_history_sends_everything_before_the_input() {
        let prompts = replay(Strategy::FullHistory, &[], &exchanges(3, 5), ENC);
        assert_eq!(
            prompts.iter().map(roles).collect::<Vec<_>>(),
            ["u", "uatau", "uatauatau"]
        );
        // The previous input is the same message as the history's next one.
        assert_eq!(
            prompts[2].shared_prefix(&prompts[1]),
            prompts[1].tokens.iter().sum::<u32>()
        );
    }

    #[test]
    fn cline_keeps_the_first_pair_and_drops_half_the_rest() {
        let ex = exchanges(12, 40);
        let prompts = replay(
            Strategy::Cline {
                window: 40_000 + 1_500,
            },
            &[],
            &ex,
            ENC,
        );
        let shapes: Vec<String> = prompts.iter().map(roles).collect();
        assert_eq!(
            shapes[3], "uatauatauatau",
            "under the limit nothing is dropped"
        );
        let truncated: Vec<&String> = shapes
            .iter()
            .enumerate()
            .filter(|(i, s)| s.len() < 4 * i + 1)
            .map(|(_, s)| s)
            .collect();
        assert!(truncated.len() >= 4, "{shapes:?}");
        for (p, shape) in prompts
            .iter()
            .zip(&shapes)
            .filter(|(_, s)| truncated.contains(s))
        {
            assert!(
                p.messages[0].1.starts_with("ask 0") && p.messages[1].1.starts_with("calling 0")
            );
            assert_eq!(
                &shape[2..3],
                "u",
                "the kept part starts at a user message: {shape}"
            );
        }
        assert!(
            prompts[11].messages.len() < 2 + 4 * 11 / 2 + 1,
            "{}",
            shapes[11]
        );
    }

    #[test]
    fn sliding_window_fits_its_budget() {
        let ex = exchanges(10, 30);
        for p in replay(Strategy::SlidingWindow { budget: 600 }, &[], &ex, ENC) {
            assert!(p.total() <= 600 || p.messages.len() == 1, "{}", p.total());
            assert_ne!(p.messages[0].0, Role::Tool);
        }
    }
}

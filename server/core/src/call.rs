//! Recursive calls: what a child session was called with, the
//! lines L0 shows about its place in the call tree, and the reason a call
//! at the maximum depth gets a one-shot prompt.

use crate::text::{clip_chars, one_line};

/// What a child session was called with: it inherits none of its parent's
/// history, only this.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallLineage {
    pub parent_session: String,
    /// The parent's exchange after which the call was made (0: before any).
    pub at_exchange: u32,
    /// The parent's objective when it made the call.
    pub parent_objective: String,
    pub query: String,
    /// The context passed with the query; empty when none was.
    pub context: String,
}

/// How a call opens its child's context: the query, then the context
/// passed with it under a `Context:` line. `call_head` is the part before
/// the context (the one-shot prompt cuts only the context).
pub fn call_head(query: &str, context: &str) -> String {
    match context.is_empty() {
        true => query.to_string(),
        false => format!("{query}\n\nContext:\n"),
    }
}

/// The whole message a call opens its child with, as a runtime sends it:
/// what the baselines of a child session start from.
pub fn call_message(query: &str, context: &str) -> String {
    format!("{}{context}", call_head(query, context))
}

/// Where a prompt stands in its call tree, beyond what the view holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallPlace<'a> {
    pub depth: u32,
    pub max_depth: u32,
    /// The prompt's number in its session (`p<N>`).
    pub iteration: u32,
    pub tools: &'a [&'a str],
    pub budget: u32,
    pub lineage: &'a CallLineage,
}

/// The lines L0 gives a child session, each within a few dozen tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallSummary {
    /// `depth 1 of max 2 · iteration 3 · called by s-abc after x2 · tools … · budget 16000`
    pub call: String,
    pub query: String,
    pub parent_objective: String,
    /// The context's size and its first words; empty when none was passed.
    pub context: String,
}

/// Characters of the query and the parent's objective L0 shows, as the
/// objective's own cap.
const LINE_CHARS: usize = 200;
/// Characters of the context's start L0 shows (a recursive runtime's preview is 200).
const CONTEXT_PREVIEW_CHARS: usize = 120;

pub fn summary(place: &CallPlace) -> CallSummary {
    let l = place.lineage;
    let call = format!(
        "depth {} of max {} · iteration {} · called by {} after x{} · tools {} · budget {} tokens",
        place.depth,
        place.max_depth,
        place.iteration,
        l.parent_session,
        l.at_exchange,
        place.tools.join(", "),
        place.budget
    );
    let context = match l.context.is_empty() {
        true => String::new(),
        false => format!(
            "{} characters, starting {:?}",
            l.context.chars().count(),
            clip_chars(&one_line(&l.context), CONTEXT_PREVIEW_CHARS)
        ),
    };
    CallSummary {
        call,
        query: clip_chars(&one_line(&l.query), LINE_CHARS),
        parent_objective: clip_chars(&one_line(&l.parent_objective), LINE_CHARS),
        context,
    }
}

/// Whether a session at `depth` gets the one-shot shape.
pub fn is_one_shot(depth: u32, max_depth: u32) -> bool {
    depth >= max_depth
}

/// How much of a one-shot call's context its prompt kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextCut {
    pub depth: u32,
    pub max_depth: u32,
    /// Tokens of the context as passed.
    pub passed: u32,
    /// Tokens of it the prompt shows.
    pub kept: u32,
}

impl ContextCut {
    /// What the prompt record says about the one-shot shape.
    pub fn reason(&self) -> String {
        let relation = match self.depth == self.max_depth {
            true => "=",
            false => ">",
        };
        let head = format!(
            "depth {} {relation} maxDepth {}: one-shot prompt",
            self.depth, self.max_depth
        );
        match (self.passed, self.passed == self.kept) {
            (0, _) => format!("{head}, no context passed"),
            (_, true) => format!("{head}, context whole ({} tokens)", thousands(self.passed)),
            (_, false) => format!(
                "{head}, context cut from {} to {} tokens",
                thousands(self.passed),
                thousands(self.kept)
            ),
        }
    }
}

fn thousands(n: u32) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_say_depth_and_cut() {
        let cut = |depth, passed, kept| {
            ContextCut {
                depth,
                max_depth: 2,
                passed,
                kept,
            }
            .reason()
        };
        assert_eq!(
            cut(2, 4213, 1000),
            "depth 2 = maxDepth 2: one-shot prompt, context cut from 4,213 to 1,000 tokens"
        );
        assert_eq!(
            cut(3, 812, 812),
            "depth 3 > maxDepth 2: one-shot prompt, context whole (812 tokens)"
        );
        assert_eq!(
            cut(2, 0, 0),
            "depth 2 = maxDepth 2: one-shot prompt, no context passed"
        );
    }

    #[test]
    fn summary_is_one_line_each() {
        let lineage = CallLineage {
            parent_session: "s-root".into(),
            at_exchange: 2,
            parent_objective: "which functions\nraise ValueError?".into(),
            query: "List the textwrap part".into(),
            context: "x".repeat(500),
        };
        let s = summary(&CallPlace {
            depth: 1,
            max_depth: 2,
            iteration: 3,
            tools: &["context_retrieve", "context_search"],
            budget: 16000,
            lineage: &lineage,
        });
        assert_eq!(
            s.call,
            "depth 1 of max 2 · iteration 3 · called by s-root after x2 · tools context_retrieve, context_search · budget 16000 tokens"
        );
        assert_eq!(s.parent_objective, "which functions raise ValueError?");
        assert!(s.context.starts_with("500 characters, starting \"xxx"));
        assert!(s.context.chars().count() < 160);
    }
}

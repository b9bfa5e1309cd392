//! Every cap and limit, in one place. Values arrive from initializationOptions,
//! `workspace/didChangeConfiguration` or the CLI. The layers that hold
//! history are sized by the prompt's budget unless pinned
//! (`LayerSettings`; the shares are tabled in docs/ARCHITECTURE.md, "The
//! budget and its shares"); the per-item caps are the layered design's except
//! L0, 100 tokens (it is new, uncached, on every turn).

use crate::tokens::Encoding;

/// What each layer may take in one prompt, resolved for a budget
/// (`LayerSettings::caps`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerCaps {
    /// L0: the current-context block, in tokens.
    pub current_context_max: u32,
    /// L1: how many of the newest exchanges that ran tools a compaction
    /// keeps in full.
    pub recent_full: u32,
    /// L1: the recent exchanges that ran tools grow up to this many tokens
    /// (in full) before the tail is compacted into headers and summaries at
    /// once. Tool output is most of a coding session's tokens, and older
    /// output is one retrieve away by its digest and reference.
    pub tail_tokens: u32,
    /// L1: the whole recent tail, the dialogue's own turns included, grows
    /// up to this many tokens before it is compacted: what the other layers
    /// leave of the budget, so a conversation's tail holds about what a
    /// sliding window of the budget would.
    pub dialogue_tokens: u32,
    /// What the person said before the recent tail: their messages of the
    /// exchanges that ran no tools, verbatim, newest back, up to this many
    /// tokens. A person's own words hold the names, numbers and decisions
    /// they ask about later, in a fifth of a conversation's tokens.
    pub asks_tokens: u32,
    /// L3: at most this many exchanges before the recent ones are offered
    /// as summaries. Frozen: the exchanges that leave the tail append to
    /// them, and they become headers together, in batches of this many.
    pub summaries: u32,
    /// Cap of one exchange summary, in tokens.
    pub summary_max: u32,
    /// Cap of one exchange header, in tokens.
    pub header_max: u32,
    /// L2: how many of the newest headers are listed.
    pub max_headers: u32,
    /// L4: how many blob references are listed.
    pub max_references: u32,
    /// The recall block: at most this many tokens of earlier exchanges'
    /// lines that match the question.
    pub recall_max: u32,
    /// Project memory's standing section: at most this many tokens of what
    /// the project's earlier sessions did, the same on every prompt of a
    /// session.
    pub memory_tokens: u32,
    /// Project memory's recall: at most this many tokens of the lines of
    /// the project's other sessions that match the question.
    pub project_recall_max: u32,
    /// Project memory's recent exchanges: the newest exchanges of the
    /// project's earlier sessions, as their messages were, newest first, in
    /// what the session's own history leaves of the budget, up to this many
    /// tokens. A new conversation starts where the project's last one ended,
    /// as a window over the project's history would.
    pub project_recent_tokens: u32,
}

/// The budget a prompt gets when neither the request nor the settings say.
pub const DEFAULT_BUDGET: u32 = 16_000;

impl LayerCaps {
    /// The caps at `budget` when none is pinned: the layers that hold
    /// history (the recent tail, what the person said before it, summaries,
    /// headers, references, recall) are shares of the budget, so a larger
    /// budget shows more and a smaller one saves; the per-item caps (a
    /// header, a summary, L0) stay put. At the default budget: a tail of
    /// 3,000 tokens of exchanges that ran tools and 11,000 in all, 2,000 of
    /// what the person said before it, 5 exchanges that ran tools kept in
    /// full at a compaction, 40 summaries, 200 headers, 30 references,
    /// 1,000 tokens of recall, 2,000 of project memory's standing section,
    /// 1,000 of its recall and up to the whole budget of its recent
    /// exchanges, in what the rest leaves (docs/ASSEMBLY.md, "The budget and
    /// the recall block": why the shares are these).
    pub fn for_budget(budget: u32) -> LayerCaps {
        let share =
            |num: u32, den: u32| (u64::from(budget) * u64::from(num) / u64::from(den)) as u32;
        LayerCaps {
            current_context_max: 100,
            recent_full: share(1, 3_200).clamp(3, 20),
            tail_tokens: share(3, 16),
            dialogue_tokens: share(11, 16),
            asks_tokens: share(1, 8),
            summaries: share(1, 400).max(10),
            summary_max: 120,
            header_max: 12,
            max_headers: share(1, 80).max(50),
            max_references: share(1, 530).max(8),
            recall_max: share(1, 16),
            memory_tokens: share(1, 8),
            project_recall_max: share(1, 16),
            project_recent_tokens: share(1, 1),
        }
    }
}

impl Default for LayerCaps {
    fn default() -> Self {
        LayerCaps::for_budget(DEFAULT_BUDGET)
    }
}

/// Layer caps as configured: each one pinned (`Some`) or sized by the
/// prompt's budget (`LayerCaps::for_budget`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LayerSettings {
    pub current_context_max: Option<u32>,
    pub recent_full: Option<u32>,
    pub tail_tokens: Option<u32>,
    pub dialogue_tokens: Option<u32>,
    pub asks_tokens: Option<u32>,
    pub summaries: Option<u32>,
    pub summary_max: Option<u32>,
    pub header_max: Option<u32>,
    pub max_headers: Option<u32>,
    pub max_references: Option<u32>,
    pub recall_max: Option<u32>,
    pub memory_tokens: Option<u32>,
    pub project_recall_max: Option<u32>,
    pub project_recent_tokens: Option<u32>,
}

impl LayerSettings {
    /// The caps of a prompt with `budget`: the pinned ones as they are,
    /// the others sized by the budget.
    pub fn caps(&self, budget: u32) -> LayerCaps {
        let sized = LayerCaps::for_budget(budget);
        LayerCaps {
            current_context_max: self
                .current_context_max
                .unwrap_or(sized.current_context_max),
            recent_full: self.recent_full.unwrap_or(sized.recent_full),
            tail_tokens: self.tail_tokens.unwrap_or(sized.tail_tokens),
            dialogue_tokens: self.dialogue_tokens.unwrap_or(sized.dialogue_tokens),
            asks_tokens: self.asks_tokens.unwrap_or(sized.asks_tokens),
            summaries: self.summaries.unwrap_or(sized.summaries),
            summary_max: self.summary_max.unwrap_or(sized.summary_max),
            header_max: self.header_max.unwrap_or(sized.header_max),
            max_headers: self.max_headers.unwrap_or(sized.max_headers),
            max_references: self.max_references.unwrap_or(sized.max_references),
            recall_max: self.recall_max.unwrap_or(sized.recall_max),
            memory_tokens: self.memory_tokens.unwrap_or(sized.memory_tokens),
            project_recall_max: self.project_recall_max.unwrap_or(sized.project_recall_max),
            project_recent_tokens: self
                .project_recent_tokens
                .unwrap_or(sized.project_recent_tokens),
        }
    }
}

/// Recursive calls: how deep a call tree goes, and how much
/// context a call at the bottom gets in its one-shot prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallLimits {
    /// A child at this depth makes no further calls, and its prompt is the
    /// one-shot shape (its query and its context cut to fit). 2: a root,
    /// one level of calls that loop like the root, and one-shot leaves: each
    /// level multiplies the calls, and two show every shape a call takes.
    pub max_depth: u32,
    /// At most this many tokens of a one-shot call's context: about the
    /// 8,000 characters a recursive runtime keeps
    /// (`MAX_ONESHOT_CONTEXT_CHARS`), at four characters a token.
    pub one_shot_context_max: u32,
}

impl Default for CallLimits {
    fn default() -> Self {
        CallLimits {
            max_depth: 2,
            one_shot_context_max: 2_000,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DigestLimits {
    /// A digest never exceeds this many tokens.
    pub inline_max_tokens: u32,
}

impl Default for DigestLimits {
    fn default() -> Self {
        DigestLimits {
            inline_max_tokens: 400,
        }
    }
}

/// Where the stable layers go. `CacheStable` keeps the prompt's prefix
/// identical across turns; `Seed003` puts the current context first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LayerOrder {
    #[default]
    CacheStable,
    Seed003,
}

impl LayerOrder {
    pub fn as_str(self) -> &'static str {
        match self {
            LayerOrder::CacheStable => "cache-stable",
            LayerOrder::Seed003 => "seed003",
        }
    }
}

crate::wire_name!(LayerOrder: CacheStable, Seed003);

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub encoding: Encoding,
    pub budget: u32,
    pub layers: LayerSettings,
    pub digest: DigestLimits,
    pub calls: CallLimits,
    pub order: LayerOrder,
    /// A session's prompt may be its whole history, without L0 or the
    /// context tools, while that fits the budget
    /// (`packer::Shape::Whole`). Off: every prompt is layered and offers the
    /// context tools from the first.
    pub whole_history: bool,
    /// Project memory: a session's prompts may show what the project's
    /// earlier sessions did and said (`memoryTokens`,
    /// `projectRecallMax`, `projectRecentTokens`). Off: a session sees only
    /// itself.
    pub memory: bool,
    pub redact_secrets: bool,
    pub max_payload_bytes: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            encoding: Encoding::O200kBase,
            budget: DEFAULT_BUDGET,
            layers: LayerSettings::default(),
            digest: DigestLimits::default(),
            calls: CallLimits::default(),
            order: LayerOrder::default(),
            whole_history: true,
            memory: true,
            redact_secrets: true,
            max_payload_bytes: 64 * 1024 * 1024,
        }
    }
}

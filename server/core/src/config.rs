//! Every cap and limit, in one place. Values arrive from initializationOptions,
//! `workspace/didChangeConfiguration` or the CLI. The defaults are seed 003's
//! caps except where a measured reason changed them (docs/ASSEMBLY.md): L0
//! 100 tokens (it is new on every turn), summaries 10 (frozen, in batches).

use crate::tokens::Encoding;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerCaps {
    /// L0: the current-context block, in tokens.
    pub current_context_max: u32,
    /// L1: how many of the newest exchanges are offered in full.
    pub recent_full: u32,
    /// L1: the recent exchanges grow up to this many tokens (in full)
    /// before they are compacted into headers and summaries at once.
    pub tail_tokens: u32,
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
}

impl Default for LayerCaps {
    fn default() -> Self {
        LayerCaps {
            current_context_max: 100,
            recent_full: 5,
            tail_tokens: 3_000,
            summaries: 40,
            summary_max: 120,
            header_max: 12,
            max_headers: 200,
            max_references: 30,
        }
    }
}

/// Recursive calls (seed 002): how deep a call tree goes, and how much
/// context a call at the bottom gets in its one-shot prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallLimits {
    /// A child at this depth makes no further calls, and its prompt is the
    /// one-shot shape (its query and its context cut to fit). 2: a root,
    /// one level of calls that loop like the root, and one-shot leaves: each
    /// level multiplies the calls, and two show every shape a call takes.
    pub max_depth: u32,
    /// At most this many tokens of a one-shot call's context: about the
    /// 8,000 characters seed 002's runtime keeps
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

    pub fn parse(s: &str) -> Option<LayerOrder> {
        match s {
            "cache-stable" => Some(LayerOrder::CacheStable),
            "seed003" => Some(LayerOrder::Seed003),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub encoding: Encoding,
    pub budget: u32,
    pub layers: LayerCaps,
    pub digest: DigestLimits,
    pub calls: CallLimits,
    pub order: LayerOrder,
    /// A short session's prompt may be its whole history, without L0 or the
    /// context tools, while that costs no more than the layers
    /// (`packer::Shape::Whole`). Off: every prompt is layered and offers the
    /// context tools from the first.
    pub whole_history: bool,
    pub redact_secrets: bool,
    pub max_payload_bytes: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            encoding: Encoding::O200kBase,
            budget: 16_000,
            layers: LayerCaps::default(),
            digest: DigestLimits::default(),
            calls: CallLimits::default(),
            order: LayerOrder::default(),
            whole_history: true,
            redact_secrets: true,
            max_payload_bytes: 64 * 1024 * 1024,
        }
    }
}

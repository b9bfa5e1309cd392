//! The first phase: what every prompt holds (system, input, L0, the
//! header list, each exchange of the window at least as its header) and
//! whether its history part (all but system, tools and input) fits the
//! budget.

use super::offered_tools;
use super::prompt::{PackError, PackRequest};
use super::regions::Placement;
use super::titles::{title_tokens, HEADERS_TITLE, SUMMARIES_TITLE};
use crate::call;
use crate::config::LayerCaps;
use crate::context;
use crate::exchange::{Counted, KeptMessage, Level};
use crate::render::MESSAGE_OVERHEAD;
use crate::view::SessionView;

/// What the guaranteed part costs, and the budget it leaves.
pub(super) struct Reserved {
    pub(super) system_cost: u32,
    /// L0 as rendered for this prompt; none before the first exchange.
    pub(super) l0: Option<Counted>,
    pub(super) context_cost: u32,
    /// Signed: an exchange can cost less in full than as a header line.
    pub(super) left: i64,
}

pub(super) fn reserve(
    view: &SessionView,
    req: &PackRequest,
    caps: &LayerCaps,
    placement: &Placement,
) -> Result<Reserved, PackError> {
    let enc = req.encoding;
    let (summarised, recent, listed) =
        (&placement.summarised, &placement.recent, &placement.listed);
    // The guaranteed part: system, input, L0, the header list, and every
    // exchange of the summaries and recent regions at least as its header.
    let title = |t: &'static str| title_tokens(t, enc);
    let system_cost = req
        .system
        .as_ref()
        .map_or(0, |s| s.tokens + MESSAGE_OVERHEAD);
    // L0 leaves out what the recent region shows (it is never dropped,
    // only demoted); a session without exchanges has no context yet.
    let shown_messages: Vec<&KeptMessage> =
        recent.iter().flat_map(|p| &p.exchange.messages).collect();
    let shown = context::Shown {
        from: recent.first().map(|p| p.exchange.id),
        messages: &shown_messages,
    };
    // A child's L0 carries its lineage, before its first exchange too.
    let lineage = view.call.as_ref().map(|lineage| {
        call::summary(&call::CallPlace {
            depth: view.depth,
            max_depth: req.calls.max_depth,
            iteration: req.iteration,
            tools: offered_tools(req.tools_tokens),
            budget: req.budget,
            lineage,
        })
    });
    let l0 = (view.current_context.turn > 0 || lineage.is_some())
        .then(|| context::render(&view.current_context, caps, enc, shown, lineage.as_ref()));
    let context_cost = l0.as_ref().map_or(0, |c| c.tokens + MESSAGE_OVERHEAD);
    let listed_cost = match listed.is_empty() {
        true => 0,
        false => {
            title(HEADERS_TITLE)
                + MESSAGE_OVERHEAD
                + listed.iter().map(|h| h.line.tokens).sum::<u32>()
        }
    };
    let summaries_base = match summarised.is_empty() {
        true => 0,
        false => {
            title(SUMMARIES_TITLE)
                + MESSAGE_OVERHEAD
                + summarised
                    .iter()
                    .map(|p| p.cost(Level::Header, false))
                    .sum::<u32>()
        }
    };
    let recent_base: u32 = recent.iter().map(|p| p.cost(Level::Header, true)).sum();
    // The budget governs the history; system, tools and input are apart.
    let needed = context_cost + listed_cost + summaries_base + recent_base;
    if needed > req.budget {
        return Err(PackError::BudgetTooSmall {
            needed,
            budget: req.budget,
        });
    }
    Ok(Reserved {
        system_cost,
        l0,
        context_cost,
        left: i64::from(req.budget - needed),
    })
}

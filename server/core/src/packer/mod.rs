//! The packer: the only code that trims, demotes or orders what a prompt
//! shows. It sums counts made at ingest; its own three layer titles are
//! counted once per encoding per process.
//!
//! Regions, oldest to newest (`B` is the tail boundary, `S` = `summaries`,
//! `H` the largest multiple of `S` below `B`):
//! - headers (L2): exchanges up to `H`, one line each, guaranteed, and the
//!   references (L4) of their stored outputs;
//! - summaries (L3): exchanges `H + 1 ..= B`, as summaries when they fit;
//!   frozen: a compaction appends to them, and every `S` exchanges they
//!   become headers together;
//! - what the person said (`asks`): the user messages of the exchanges up
//!   to `B` that ran no tools, verbatim, newest back to `asks_tokens`;
//! - recent (L1): exchanges after `B`, in full when they fit, demoted
//!   full → digests → summary → header otherwise, newest first.
//!
//! `B` stays where it is while new exchanges append to the recent tail, so
//! the prompt only grows at its end, as full history does, and a provider's
//! prompt cache keeps hitting. The tail has two caps: its exchanges that
//! ran tools may take `tail_tokens` (tool output leaves the tail as
//! digests and references), and the whole tail, the dialogue included,
//! `dialogue_tokens`, what the other layers leave of the budget, so a
//! conversation's tail holds about what a sliding window of the budget
//! would. When the tail passes either (or a new block starts, which keeps
//! `B` a function of the newest exchanges alone) it is compacted at once:
//! `B` jumps to keep the newest exchanges, two thirds of the dialogue's
//! share and an eighth of the tools'. The first listed header moves in steps of a
//! quarter of `max_headers`.
//!
//! A superseded exchange (`view.superseded`) is shown as its header line
//! in whichever region it is, its references are not listed, and each such
//! demotion is a `Trim` "superseded by xN". The regions themselves do not
//! depend on supersession, so declaring one changes how those exchanges
//! are shown and nothing else. A superseding exchange in the summaries
//! region keeps its summary even when the summary saves less than a third.

mod asks;
mod emit;
mod guaranteed;
mod one_shot;
mod prompt;
mod regions;
mod titles;
mod upgrades;
mod whole;

use crate::call;
use crate::config::LayerCaps;
use crate::context_tool::ContextTool;
use crate::view::SessionView;

pub use prompt::{
    shared_prefix_tokens, ItemForm, Layer, LayerItem, LayerReport, PackError, PackRequest,
    PackedPrompt, PromptMessage, Shape, ShapeKind, Trim,
};
pub use regions::{references_horizon, view_len, window_len};
pub use whole::whole_allowed;

/// Packs a prompt. A child session at the maximum depth gets the one-shot
/// shape: its query and its context cut to fit, no history. A session whose
/// whole history fits the budget gets the whole shape (`whole`), until its
/// first layered prompt.
///
/// Any other prompt is packed in three phases: what is guaranteed (system, input, L0,
/// the header list, every exchange of the window at least as its header)
/// must fit the budget; the budget left upgrades exchanges and lists
/// references, most useful first; then the layers are emitted in order.
pub fn pack(
    view: &SessionView,
    req: &PackRequest,
    caps: &LayerCaps,
) -> Result<PackedPrompt, PackError> {
    if let Some(lineage) = &view.call {
        if call::is_one_shot(view.depth, req.calls.max_depth) {
            return one_shot::pack(view.depth, lineage, view.exchange_count, req);
        }
    }
    let layered = layered(view, req, caps)?;
    Ok(whole::pack(view, req, layered.total).unwrap_or(layered))
}

fn layered(
    view: &SessionView,
    req: &PackRequest,
    caps: &LayerCaps,
) -> Result<PackedPrompt, PackError> {
    let mut placement = regions::place(view, caps, req.encoding);
    let reserved = guaranteed::reserve(view, req, caps, &placement)?;
    let upgraded = upgrades::upgrade(view, caps, req.encoding, &mut placement, reserved.left);
    Ok(emit::emit(
        req,
        &placement,
        &reserved,
        upgraded,
        &view.superseded,
        view.recall.for_exchange,
    ))
}

/// The names of the tools a prompt offers, from the tokens it spends on
/// them (`PackRequest::tools_tokens`, `PackedPrompt::tools_tokens`): none
/// when it sends no tools (the whole shape, a one-shot call without
/// exchanges).
pub fn offered_tools(tools_tokens: u32) -> &'static [&'static str] {
    match tools_tokens {
        0 => &[],
        _ => &ContextTool::NAMES,
    }
}

//! The whole shape: the session's history as it was sent, every message,
//! no L0 and no context tools. While the history fits the budget a sliding
//! window of the budget would hold all of it, so the prompt holds all of it
//! too: nothing left out, nothing to retrieve. A short session's layered
//! prompt even costs more than its history (L0 and the tools' definitions
//! outweigh what there is to leave out). Once the history outgrows the
//! budget the prompt is layered, and stays so.

use super::emit::{exchange_messages, pair_tool_calls};
use super::prompt::{
    ItemForm, Layer, LayerItem, LayerReport, PackRequest, PackedPrompt, PromptMessage, Shape,
};
use crate::exchange::Level;
use crate::message::Role;
use crate::render::REPLY_PRIMER;
use crate::view::SessionView;

/// The whole history as a prompt, when the view holds all of it, every
/// tool output of it is shown whole (nothing lives only in a blob), its
/// history fits the budget, and the project's memory has nothing for it. A child call
/// (its lineage is in L0) and a session with superseded exchanges (their
/// state was replaced on purpose) keep the layers.
pub(super) fn pack(view: &SessionView, req: &PackRequest, layered: u32) -> Option<PackedPrompt> {
    // Checked cheapest first: most prompts of a session are past the first
    // test (`whole_allowed` is false once a prompt was layered).
    let all_shown = || {
        view.window.len() as u32 == view.exchange_count
            && view.call.is_none()
            && view.superseded.is_empty()
    };
    let nothing_hidden = || {
        view.window
            .iter()
            .flat_map(|e| &e.messages)
            .all(|m| m.result.as_ref().is_none_or(|r| r.whole))
    };
    // Project memory's ids are followed with the context tools, which
    // only a layered prompt offers.
    let no_memory = view.memory.notes.is_empty()
        && view.memory.recall.is_empty()
        && view.memory.recent.is_empty();
    if !(req.whole_allowed && no_memory && all_shown() && nothing_hidden()) {
        return None;
    }
    let system = req
        .system
        .as_ref()
        .map(|s| PromptMessage::of_pieces(Role::System, vec![(s.text.clone(), s.tokens)]));
    let history = view.window.iter().map(|e| {
        let item = LayerItem {
            id: e.id.to_string(),
            format: ItemForm::Level(Level::Full),
            tokens: e.tokens.full,
        };
        (exchange_messages(e, Level::Full), item)
    });
    let (history, items): (Vec<Vec<PromptMessage>>, Vec<LayerItem>) = history.unzip();
    let input = req
        .input
        .as_ref()
        .map(|i| PromptMessage::of_input(i, req.input_tokens));
    let report = |layer: Layer, items: Vec<LayerItem>| LayerReport {
        layer,
        tokens: items.iter().map(|i| i.tokens).sum(),
        items,
    };
    let layers = Layer::VARIANTS
        .iter()
        .map(|&layer| match layer {
            Layer::System => report(layer, one_item(layer, system.as_ref())),
            Layer::Recent => report(layer, items.clone()),
            Layer::Input => report(layer, one_item(layer, input.as_ref())),
            _ => report(layer, Vec::new()),
        })
        .collect();
    let system_tokens = system.as_ref().map_or(0, |m| m.charged);
    let input_tokens = input.as_ref().map_or(0, |m| m.charged);
    let mut messages: Vec<PromptMessage> = system
        .into_iter()
        .chain(history.into_iter().flatten())
        .chain(input)
        .collect();
    pair_tool_calls(&mut messages);
    let total = messages.iter().map(|m| m.charged).sum::<u32>() + REPLY_PRIMER;
    (total - (REPLY_PRIMER + system_tokens + input_tokens) <= req.budget).then_some(PackedPrompt {
        messages,
        tools_tokens: 0,
        total,
        layers,
        trimmed: Vec::new(),
        superseded: Vec::new(),
        recall: Vec::new(),
        shape: Shape::Whole { layered },
    })
}

/// Whether a session's next prompt may have the whole shape
/// (`PackRequest::whole_allowed`): its previous prompt had it, or it has
/// none. A process that does not remember the previous prompt (`None` after
/// the first) keeps the layers.
pub fn whole_allowed(previous: Option<&PackedPrompt>, first: bool) -> bool {
    match previous {
        Some(p) => matches!(p.shape, Shape::Whole { .. }),
        None => first,
    }
}

/// The item a layer of one message (system, input) holds.
fn one_item(layer: Layer, message: Option<&PromptMessage>) -> Vec<LayerItem> {
    message
        .map(|m| LayerItem {
            id: layer.as_str().to_string(),
            format: ItemForm::Text,
            tokens: m.charged,
        })
        .into_iter()
        .collect()
}

//! The one-shot shape of a call at the maximum depth (a recursive runtime's
//! `buildOneShotPrompt`): the system prompt, one message with the query and
//! the context cut to fit, then the input. No history layers and no L0: the
//! call makes no further calls and loops no further.

use super::emit::pair_tool_calls;
use super::prompt::{
    ItemForm, Layer, LayerItem, LayerReport, PackError, PackRequest, PackedPrompt, PromptMessage,
    Shape,
};
use crate::call::{self, CallLineage, ContextCut};
use crate::message::Role;
use crate::render::{MESSAGE_OVERHEAD, REPLY_PRIMER};
use crate::tokens;

/// The context gets what the budget leaves after the system prompt, the
/// input, the tools and the query, at most `calls.one_shot_context_max`.
/// The context tools are offered only to a call with exchanges of its own:
/// they are the only way to its history, and before it has any there is
/// nothing to retrieve (a recursive runtime's one-shot prompt offers none).
pub(super) fn pack(
    depth: u32,
    lineage: &CallLineage,
    exchanges: u32,
    req: &PackRequest,
) -> Result<PackedPrompt, PackError> {
    let enc = req.encoding;
    let tools_tokens = match exchanges {
        0 => 0,
        _ => req.tools_tokens,
    };
    // The budget governs the call's head and context; the system prompt,
    // tools and input are counted apart (`PackRequest::fixed_tokens`).
    let head = call::call_head(&lineage.query, &lineage.context);
    let needed = MESSAGE_OVERHEAD + tokens::count(enc, &head);
    if needed > req.budget {
        return Err(PackError::BudgetTooSmall {
            needed,
            budget: req.budget,
        });
    }
    let passed = tokens::count(enc, &lineage.context);
    let mut cap = passed
        .min(req.calls.one_shot_context_max)
        .min(req.budget - needed);
    // The query and the cut are counted together: a cut can merge with
    // what precedes it, so the sum of the parts may be off by a token.
    let (text, call_tokens, kept) = loop {
        let cut = tokens::truncate(enc, &lineage.context, cap);
        let text = format!("{head}{cut}");
        let n = tokens::count(enc, &text);
        if MESSAGE_OVERHEAD + n <= req.budget || cap == 0 {
            break (text, n, tokens::count(enc, cut));
        }
        cap -= (MESSAGE_OVERHEAD + n - req.budget).min(cap);
    };

    let mut reports: Vec<LayerReport> = Layer::VARIANTS
        .iter()
        .map(|&layer| LayerReport {
            layer,
            tokens: 0,
            items: Vec::new(),
        })
        .collect();
    let mut messages = Vec::new();
    let mut put = |layer: Layer, id: &str, message: PromptMessage| {
        let report = reports.iter_mut().find(|r| r.layer == layer).unwrap();
        report.tokens += message.charged;
        report.items.push(LayerItem {
            id: id.to_string(),
            format: ItemForm::Text,
            tokens: message.charged,
        });
        messages.push(message);
    };
    if let Some(system) = &req.system {
        let message =
            PromptMessage::of_pieces(Role::System, vec![(system.text.clone(), system.tokens)]);
        put(Layer::System, "system", message);
    }
    let call = PromptMessage::of_pieces(Role::User, vec![(text, call_tokens)]);
    put(Layer::CurrentContext, "call", call);
    if let Some(input) = &req.input {
        let message = PromptMessage::of_input(input, req.input_tokens);
        put(Layer::Input, "input", message);
    }
    pair_tool_calls(&mut messages);
    let total = messages.iter().map(|m| m.charged).sum::<u32>() + REPLY_PRIMER + tools_tokens;
    Ok(PackedPrompt {
        messages,
        tools_tokens,
        total,
        layers: reports,
        trimmed: Vec::new(),
        // No history is shown, so none of it is shown superseded.
        superseded: Vec::new(),
        // No history is shown, so none of it is recalled.
        recall: Vec::new(),
        shape: Shape::OneShot(ContextCut {
            depth,
            max_depth: req.calls.max_depth,
            passed,
            kept,
        }),
    })
}

//! The last phase: each layer's messages and report, then the layers in
//! the request's order, tool calls paired.

use std::collections::{HashMap, HashSet};

use super::guaranteed::Reserved;
use super::prompt::{
    ItemForm, Layer, LayerItem, LayerReport, PackRequest, PackedPrompt, PromptMessage, Shape,
};
use super::regions::Placement;
use super::titles::{
    titled_layer, ASKS_TITLE, HEADERS_TITLE, MEMORY_TITLE, PROJECT_RECALL_TITLE,
    PROJECT_RECENT_TITLE, RECALL_TITLE, REFERENCES_TITLE, SUMMARIES_TITLE,
};
use super::upgrades::Upgraded;
use crate::config::LayerOrder;
use crate::exchange::{Counted, Level};
use crate::ids::ExchangeId;
use crate::message::Role;
use crate::recall::RecallHit;
use crate::render::{self, Block, REPLY_PRIMER};
use crate::supersede::{self, SupersededBy};
use crate::view::ExchangeView;

/// One entry of a titled layer: a counted text shown as it is, and the item
/// the layer's report lists for it.
fn line_entry(id: String, format: ItemForm, line: &Counted) -> (Vec<(String, u32)>, LayerItem) {
    let item = LayerItem {
        id,
        format,
        tokens: line.tokens,
    };
    (vec![(line.text.clone(), line.tokens)], item)
}

/// The prompt: every layer emitted, then ordered.
pub(super) fn emit(
    req: &PackRequest,
    placement: &Placement,
    reserved: &Reserved,
    upgraded: Upgraded,
    superseded: &SupersededBy,
    recall_for: ExchangeId,
) -> PackedPrompt {
    let enc = req.encoding;
    let Placement {
        summarised,
        recent,
        listed,
        asked,
    } = placement;
    let (system_cost, context_cost, l0) =
        (reserved.system_cost, reserved.context_cost, &reserved.l0);
    let Upgraded {
        references,
        recall,
        project_recall,
        notes,
        project_recent,
        trimmed,
        left,
    } = upgraded;
    // Emit, layer by layer.
    let mut reports: HashMap<Layer, LayerReport> = Layer::VARIANTS
        .iter()
        .map(|&layer| {
            (
                layer,
                LayerReport {
                    layer,
                    tokens: 0,
                    items: Vec::new(),
                },
            )
        })
        .collect();
    let mut sections: HashMap<Layer, Vec<PromptMessage>> = HashMap::new();
    // Reports `messages` and `items` under `layer` and places the messages
    // in `section`'s run of the prompt (the recall block may sit inside
    // the recent tail).
    let mut put_in =
        |layer: Layer, section: Layer, messages: Vec<PromptMessage>, items: Vec<LayerItem>| {
            let report = reports.get_mut(&layer).unwrap();
            report.tokens += messages.iter().map(|m| m.charged).sum::<u32>();
            report.items.extend(items);
            sections.entry(section).or_default().extend(messages);
        };
    if let Some(system) = &req.system {
        let item = LayerItem {
            id: "system".into(),
            format: ItemForm::Text,
            tokens: system_cost,
        };
        put_in(
            Layer::System,
            Layer::System,
            vec![PromptMessage::of_pieces(
                Role::System,
                vec![(system.text.clone(), system.tokens)],
            )],
            vec![item],
        );
    }
    for (layer, title, entries) in [
        (Layer::Memory, MEMORY_TITLE, &notes),
        (Layer::ProjectRecent, PROJECT_RECENT_TITLE, &project_recent),
    ] {
        if !entries.is_empty() {
            let entries = entries
                .iter()
                .map(|n| line_entry(n.id.clone(), ItemForm::Text, &n.line));
            let (messages, items) = titled_layer(title, enc, entries);
            put_in(layer, layer, messages, items);
        }
    }
    if let Some(c) = l0 {
        let item = LayerItem {
            id: "currentContext".into(),
            format: ItemForm::Text,
            tokens: context_cost,
        };
        put_in(
            Layer::CurrentContext,
            Layer::CurrentContext,
            vec![PromptMessage::of_pieces(
                Role::User,
                vec![(c.text.clone(), c.tokens)],
            )],
            vec![item],
        );
    }
    if !listed.is_empty() {
        let entries = listed
            .iter()
            .map(|h| line_entry(h.id.to_string(), ItemForm::Level(Level::Header), &h.line));
        let (messages, items) = titled_layer(HEADERS_TITLE, enc, entries);
        put_in(Layer::Headers, Layer::Headers, messages, items);
    }
    if !summarised.is_empty() {
        let entries = summarised.iter().map(|p| {
            let item = LayerItem {
                id: p.exchange.id.to_string(),
                format: ItemForm::Level(p.level),
                tokens: p.cost(p.level, false),
            };
            (p.pieces(), item)
        });
        let (messages, items) = titled_layer(SUMMARIES_TITLE, enc, entries);
        put_in(Layer::Summaries, Layer::Summaries, messages, items);
    }
    if !asked.is_empty() {
        let entries = asked
            .iter()
            .map(|a| line_entry(a.exchange.id.to_string(), ItemForm::Text, &a.line));
        let (messages, items) = titled_layer(ASKS_TITLE, enc, entries);
        put_in(Layer::Asks, Layer::Asks, messages, items);
    }
    if !references.is_empty() {
        let entries = references
            .iter()
            .map(|r| line_entry(r.blob.short_id(), ItemForm::Reference, &r.line));
        let (messages, items) = titled_layer(REFERENCES_TITLE, enc, entries);
        put_in(Layer::References, Layer::References, messages, items);
    }
    // The recall block goes right before the exchange it serves: before
    // that exchange's first message while it is open (the input, if any,
    // continues it), else in its own place by the input that opens it.
    // Project memory's recall follows the session's own, in the same place.
    let block = |title: &'static str, hits: &[&RecallHit]| {
        (!hits.is_empty()).then(|| {
            let entries = hits
                .iter()
                .map(|hit| line_entry(hit.id(), ItemForm::Text, &hit.passage));
            titled_layer(title, enc, entries)
        })
    };
    let mut recall_blocks = [
        (Layer::Recall, block(RECALL_TITLE, &recall)),
        (
            Layer::ProjectRecall,
            block(PROJECT_RECALL_TITLE, &project_recall),
        ),
    ];
    for p in recent {
        if p.exchange.id == recall_for {
            for (layer, block) in &mut recall_blocks {
                if let Some((messages, items)) = block.take() {
                    put_in(*layer, Layer::Recent, messages, items);
                }
            }
        }
        let messages = match p.level {
            Level::Full | Level::Digests => exchange_messages(p.exchange, p.level),
            Level::Summary | Level::Header => {
                vec![PromptMessage::of_pieces(Role::User, p.pieces())]
            }
        };
        let item = LayerItem {
            id: p.exchange.id.to_string(),
            format: ItemForm::Level(p.level),
            tokens: p.cost(p.level, true),
        };
        put_in(Layer::Recent, Layer::Recent, messages, vec![item]);
    }
    for (layer, block) in recall_blocks {
        if let Some((messages, items)) = block {
            put_in(layer, layer, messages, items);
        }
    }
    if let Some(input) = &req.input {
        let message = PromptMessage::of_input(input, req.input_tokens);
        let item = LayerItem {
            id: "input".into(),
            format: ItemForm::Text,
            tokens: req.input_tokens,
        };
        put_in(Layer::Input, Layer::Input, vec![message], vec![item]);
    }

    let order: &[Layer] = match req.order {
        LayerOrder::Seed003 => &Layer::ALL_SEED003,
        LayerOrder::CacheStable => &Layer::ALL_CACHE_STABLE,
    };
    let mut messages: Vec<PromptMessage> = order
        .iter()
        .flat_map(|l| sections.remove(l).unwrap_or_default())
        .collect();
    pair_tool_calls(&mut messages);
    let layers: Vec<LayerReport> = Layer::VARIANTS
        .iter()
        .map(|l| reports.remove(l).unwrap())
        .collect();
    let total = messages.iter().map(|m| m.charged).sum::<u32>() + REPLY_PRIMER + req.tools_tokens;
    debug_assert_eq!(
        i64::from(total),
        i64::from(req.fixed_tokens()) + i64::from(req.budget) - left
    );
    // The superseded exchanges this prompt covers (all as headers).
    let covered = listed
        .iter()
        .map(|h| h.id)
        .chain(summarised.iter().chain(recent).map(|p| p.exchange.id));
    let superseded =
        supersede::grouped(covered.filter_map(|id| superseded.get(&id).map(|&by| (id, by))));
    PackedPrompt {
        messages,
        tools_tokens: req.tools_tokens,
        total,
        layers,
        trimmed,
        superseded,
        recall: recall.into_iter().chain(project_recall).cloned().collect(),
        shape: Shape::Layered,
    }
}

/// The messages of an exchange at `Full` or `Digests`, charged on the last.
pub(super) fn exchange_messages(exchange: &ExchangeView, level: Level) -> Vec<PromptMessage> {
    let mut out: Vec<PromptMessage> = exchange
        .messages
        .iter()
        .map(|m| PromptMessage {
            role: m.message.role,
            blocks: render::message_blocks(m, level),
            charged: 0,
            block_tokens: Vec::new(),
        })
        .collect();
    if let Some(last) = out.last_mut() {
        last.charged = match level {
            Level::Full => exchange.tokens.full,
            _ => exchange.tokens.digests,
        };
    }
    out
}

/// Keeps tool calls valid for APIs that check pairing: a call is a
/// `ToolUse` only when its result follows in the run of tool messages right
/// after it, and a result is a `ToolResult` only when its call precedes it;
/// any other becomes plain text, with the same text and so the same tokens.
pub(super) fn pair_tool_calls(messages: &mut [PromptMessage]) {
    let mut i = 0;
    while i < messages.len() {
        let run_end = (i + 1..messages.len())
            .find(|&j| messages[j].role != Role::Tool)
            .unwrap_or(messages.len());
        if messages[i].role == Role::Assistant {
            let calls: HashSet<String> = messages[i].tool_use_ids().map(str::to_string).collect();
            let mut answered = HashSet::new();
            for m in &mut messages[i + 1..run_end] {
                let matched = match &m.blocks[..] {
                    [Block::ToolResult { call_id, .. }] => {
                        calls.contains(call_id) && answered.insert(call_id.clone())
                    }
                    _ => false,
                };
                if !matched {
                    as_user_text(m);
                }
            }
            for b in &mut messages[i].blocks {
                if matches!(b, Block::ToolUse { id, .. } if !answered.contains(id)) {
                    *b = Block::Text(b.text());
                }
            }
            i = run_end;
        } else {
            if messages[i].role == Role::Tool {
                as_user_text(&mut messages[i]);
            }
            i += 1;
        }
    }
}

fn as_user_text(m: &mut PromptMessage) {
    m.role = Role::User;
    for b in &mut m.blocks {
        *b = Block::Text(b.text());
    }
}

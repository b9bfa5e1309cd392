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
//! - recent (L1): exchanges after `B`, in full when they fit, demoted
//!   full → digests → summary → header otherwise, newest first.
//!
//! `B` stays where it is while new exchanges append to the recent tail, so
//! the prompt only grows at its end, as full history does, and a provider's
//! prompt cache keeps hitting. When the tail passes `tail_tokens` (or a new
//! block of `6 × recent_full` exchanges starts, which keeps `B` a function
//! of the newest exchanges alone) the tail is compacted at once: `B` jumps
//! to keep only the newest exchanges. The first listed header moves in
//! steps of a quarter of `max_headers`.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use crate::config::{LayerCaps, LayerOrder};
use crate::context;
use crate::exchange::{Counted, KeptMessage, Level};
use crate::ids::ExchangeId;
use crate::message::Role;
use crate::render::{self, Block, MESSAGE_OVERHEAD, REPLY_PRIMER};
use crate::tokens::{self, Encoding};
use crate::view::{ExchangeView, HeaderItem, SessionView};

const HEADERS_TITLE: &str =
    "## Earlier exchanges, oldest first (context_retrieve an id for more)\n";
const SUMMARIES_TITLE: &str = "## Summaries of the exchanges before the recent ones\n";
const REFERENCES_TITLE: &str =
    "## Stored tool outputs (context_retrieve a b3: id for lines or grep)\n";

/// Tokens of a layer title: the titles never change, so each is counted
/// once per encoding, not on every assemble.
fn title_tokens(title: &'static str, encoding: Encoding) -> u32 {
    const TITLES: [&str; 3] = [HEADERS_TITLE, SUMMARIES_TITLE, REFERENCES_TITLE];
    static COUNTS: OnceLock<[[u32; 3]; 2]> = OnceLock::new();
    let counts = COUNTS.get_or_init(|| Encoding::ALL.map(|e| TITLES.map(|t| tokens::count(e, t))));
    let e = Encoding::ALL
        .iter()
        .position(|e| *e == encoding)
        .expect("known encoding");
    let t = TITLES
        .iter()
        .position(|t| *t == title)
        .expect("a layer title");
    counts[e][t]
}

/// A layer shown as one user message: its title, then each entry's pieces.
fn titled_layer(
    title: &'static str,
    encoding: Encoding,
    entries: impl IntoIterator<Item = (Vec<(String, u32)>, LayerItem)>,
) -> (Vec<PromptMessage>, Vec<LayerItem>) {
    let mut pieces = vec![(title.to_string(), title_tokens(title, encoding))];
    let mut items = Vec::new();
    for (entry, item) in entries {
        pieces.extend(entry);
        items.push(item);
    }
    (vec![layer_message(Role::User, pieces)], items)
}

/// The store loads `SessionView::references` from exchanges up to this
/// one: newer exchanges are summarised or recent, and show their blob ids
/// themselves (a summary's `Refs:`, a digest's id).
/// `window` is the exchanges the store loaded for the view (oldest first).
pub fn references_horizon(
    exchange_count: u32,
    window: &[ExchangeView],
    caps: &LayerCaps,
) -> ExchangeId {
    ExchangeId(Regions::of(exchange_count, window, caps).summaries_from)
}

/// Exchanges per block: the tail is compacted at least once a block, at
/// the block's first exchange, so the boundary is a function of the
/// newest exchanges alone (no history before the block is needed).
fn block_len(caps: &LayerCaps) -> u32 {
    (6 * caps.recent_full).max(1)
}

/// How many of the newest exchanges the store loads with their messages
/// into `SessionView::window`: a block, the exchanges kept in full at its
/// start, and the summaries before them.
pub fn window_len(caps: &LayerCaps) -> u32 {
    match caps.recent_full {
        0 => caps.summaries,
        r => block_len(caps) + r + caps.summaries,
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackRequest {
    /// Ceiling in tokens for messages, their overhead, the reply primer and tools.
    pub budget: u32,
    pub encoding: Encoding,
    pub order: LayerOrder,
    /// The system prompt as a piece: `render::counted_piece`.
    pub system: Option<Counted>,
    /// The message the prompt ends with.
    pub input: Option<KeptMessage>,
    /// `render::message_tokens(input, Level::Full, encoding)`.
    pub input_tokens: u32,
    /// `render::tools_tokens(encoding)` when the tools are sent, else 0.
    pub tools_tokens: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layer {
    System,
    CurrentContext,
    Recent,
    Headers,
    Summaries,
    References,
    Input,
}

impl Layer {
    pub const ALL: [Layer; 7] = [
        Layer::System,
        Layer::CurrentContext,
        Layer::Recent,
        Layer::Headers,
        Layer::Summaries,
        Layer::References,
        Layer::Input,
    ];

    /// The name `ctx/assemble` and `ctx/explain` use.
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::System => "system",
            Layer::CurrentContext => "currentContext",
            Layer::Recent => "recent",
            Layer::Headers => "headers",
            Layer::Summaries => "summaries",
            Layer::References => "references",
            Layer::Input => "input",
        }
    }
}

/// How an item is shown: an exchange level, or one of the other forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ItemForm {
    Level(Level),
    Reference,
    Text,
    Dropped,
}

impl ItemForm {
    pub fn as_str(self) -> &'static str {
        match self {
            ItemForm::Level(level) => level.as_str(),
            ItemForm::Reference => "reference",
            ItemForm::Text => "text",
            ItemForm::Dropped => "dropped",
        }
    }
}

/// One thing a layer holds: `x12`, `b3:…`, or the layer's own name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerItem {
    pub id: String,
    pub format: ItemForm,
    pub tokens: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerReport {
    pub layer: Layer,
    /// Content and message overhead of what the layer holds.
    pub tokens: u32,
    pub items: Vec<LayerItem>,
}

/// A demotion: `id` would have been shown as `from`, is shown as `to`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trim {
    pub id: String,
    pub from: ItemForm,
    pub to: ItemForm,
    pub reason: String,
}

/// A message of the prompt in API-neutral shape. Adjacent `Text` blocks are
/// one content string in APIs that take a string (`PromptMessage::text`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptMessage {
    pub role: Role,
    pub blocks: Vec<Block>,
    /// Tokens charged for this message, overhead included. The messages of
    /// an exchange are charged together, on its last message.
    pub charged: u32,
    /// Tokens of each block when known (layer messages), else empty.
    pub block_tokens: Vec<u32>,
}

impl PromptMessage {
    /// The content as one string: what the tokenizer sees.
    pub fn text(&self) -> String {
        self.blocks.iter().map(Block::text).collect()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackedPrompt {
    pub messages: Vec<PromptMessage>,
    pub tools_tokens: u32,
    /// Everything charged: messages, `REPLY_PRIMER` and tools; ≤ the budget.
    pub total: u32,
    /// Every layer, in `Layer::ALL` order.
    pub layers: Vec<LayerReport>,
    pub trimmed: Vec<Trim>,
}

impl PackedPrompt {
    pub fn layer(&self, layer: Layer) -> &LayerReport {
        &self.layers[Layer::ALL.iter().position(|l| *l == layer).unwrap()]
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PackError {
    #[error("budget of {budget} tokens is smaller than the {needed} the system prompt, input, current context and headers need")]
    BudgetTooSmall { needed: u32, budget: u32 },
}

/// Where the regions start, from the number of exchanges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Regions {
    /// Exchanges after this are recent.
    boundary: u32,
    /// Exchanges after this (and up to `boundary`) are summarised.
    summaries_from: u32,
    /// Headers after this are listed.
    headers_from: u32,
}

impl Regions {
    /// The boundary moves only when the recent tail grows past
    /// `caps.tail_tokens` (or at the first exchange of a block): then it
    /// jumps so that only the newest exchanges (at most `recent_full`, at
    /// most an eighth of `tail_tokens` unless one is larger) stay recent.
    /// In between, new exchanges append to the tail and everything before
    /// them is the same prompt text, turn after turn.
    fn of(count: u32, window: &[ExchangeView], caps: &LayerCaps) -> Regions {
        let r = caps.recent_full;
        let boundary = match r {
            0 => count,
            _ => {
                let full = |id: u32| -> u32 {
                    window
                        .iter()
                        .find(|e| e.id.0 == id)
                        .map_or(0, |e| e.tokens.full)
                };
                let oldest_loaded = window.first().map_or(count + 1, |e| e.id.0);
                // Compaction at `n`: keep `n` and the newest before it.
                let compact = |n: u32| -> u32 {
                    let mut b = n - 1;
                    let mut kept = full(n);
                    while b >= 1
                        && b >= oldest_loaded
                        && n - b < r
                        && kept + full(b) <= caps.tail_tokens / 8
                    {
                        kept += full(b);
                        b -= 1;
                    }
                    b
                };
                let block = block_len(caps);
                let start = match count {
                    0 => 0,
                    c => (c - 1) / block * block + 1,
                };
                let mut b = 0;
                if start >= 1 {
                    b = compact(start);
                    let mut tail: u32 = (b + 1..=start).map(full).sum();
                    for n in start + 1..=count {
                        tail += full(n);
                        if tail > caps.tail_tokens {
                            b = compact(n);
                            tail = (b + 1..=n).map(full).sum();
                        }
                    }
                }
                b
            }
        };
        // Summaries are frozen: the exchanges that leave the tail append to
        // them, and they are demoted to headers in a batch when they would
        // pass `summaries` (the region restarts at a multiple of it).
        let summaries_from = match caps.summaries {
            0 => boundary,
            s => boundary.saturating_sub(1) / s * s,
        };
        let step = (caps.max_headers / 4).max(1);
        let oldest = count.saturating_sub(caps.max_headers);
        let headers_from = oldest.div_ceil(step) * step;
        Regions {
            boundary,
            summaries_from,
            headers_from,
        }
    }
}

/// How an exchange of the summaries or recent region is shown.
struct Placed<'a> {
    exchange: &'a ExchangeView,
    line: Counted,
    level: Level,
}

impl Placed<'_> {
    /// What the exchange costs at `level`: as part of the summaries
    /// message (`own_message == false`) or as messages of its own.
    fn cost(&self, level: Level, own_message: bool) -> u32 {
        let overhead = if own_message { MESSAGE_OVERHEAD } else { 0 };
        match level {
            Level::Full => self.exchange.tokens.full,
            Level::Digests => self.exchange.tokens.digests,
            Level::Summary if self.has_summary() => {
                self.line.tokens + self.exchange.summary.tokens + 1 + overhead
            }
            Level::Summary | Level::Header => self.line.tokens + overhead,
        }
    }

    fn has_summary(&self) -> bool {
        !self.exchange.summary.text.trim().is_empty()
    }

    /// Pieces of the summary or header form, with their tokens.
    fn pieces(&self) -> Vec<(String, u32)> {
        let mut out = vec![(self.line.text.clone(), self.line.tokens)];
        if self.level == Level::Summary && self.has_summary() {
            out.push((
                format!("{}\n", self.exchange.summary.text),
                self.exchange.summary.tokens + 1,
            ));
        }
        out
    }
}

fn header_line_of(
    exchange: &ExchangeView,
    headers: &HashMap<ExchangeId, &HeaderItem>,
    enc: Encoding,
) -> Counted {
    match headers.get(&exchange.id) {
        Some(item) => item.line.clone(),
        None => {
            let text = render::header_line(exchange.id, &exchange.header.text);
            Counted {
                tokens: tokens::count(enc, &text),
                text,
            }
        }
    }
}

fn over_budget(what: &str, needs: i64, left: i64) -> String {
    format!("over budget: {what} needs {needs} more tokens, {left} left")
}

/// A message made of counted pieces.
fn layer_message(role: Role, pieces: Vec<(String, u32)>) -> PromptMessage {
    let charged = pieces.iter().map(|(_, n)| n).sum::<u32>() + MESSAGE_OVERHEAD;
    let (blocks, block_tokens) = pieces.into_iter().map(|(t, n)| (Block::Text(t), n)).unzip();
    PromptMessage {
        role,
        blocks,
        charged,
        block_tokens,
    }
}

/// The messages of an exchange at `Full` or `Digests`, charged on the last.
fn exchange_messages(exchange: &ExchangeView, level: Level) -> Vec<PromptMessage> {
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

pub fn pack(
    view: &SessionView,
    req: &PackRequest,
    caps: &LayerCaps,
) -> Result<PackedPrompt, PackError> {
    let enc = req.encoding;
    let regions = Regions::of(view.exchange_count, &view.window, caps);
    let headers: HashMap<ExchangeId, &HeaderItem> =
        view.headers.iter().map(|h| (h.id, h)).collect();
    let mut summarised: Vec<Placed> = Vec::new();
    let mut recent: Vec<Placed> = Vec::new();
    for e in &view.window {
        let p = Placed {
            exchange: e,
            line: header_line_of(e, &headers, enc),
            level: Level::Header,
        };
        if e.id.0 > regions.boundary {
            recent.push(p);
        } else if e.id.0 > regions.summaries_from {
            summarised.push(p);
        }
    }
    let in_window: HashSet<ExchangeId> = summarised
        .iter()
        .chain(&recent)
        .map(|p| p.exchange.id)
        .collect();
    let listed: Vec<&HeaderItem> = view
        .headers
        .iter()
        .filter(|h| h.id.0 > regions.headers_from && !in_window.contains(&h.id))
        .collect();

    // The guaranteed part: system, input, L0, the header list, and every
    // exchange of the summaries and recent regions at least as its header.
    let title = |t: &'static str| title_tokens(t, enc);
    let system_cost = req
        .system
        .as_ref()
        .map_or(0, |s| s.tokens + MESSAGE_OVERHEAD);
    let input_cost = req.input.as_ref().map_or(0, |_| req.input_tokens);
    // L0 leaves out what the recent region shows (it is never dropped,
    // only demoted); a session without exchanges has no context yet.
    let shown_messages: Vec<&KeptMessage> =
        recent.iter().flat_map(|p| &p.exchange.messages).collect();
    let shown = context::Shown {
        from: recent.first().map(|p| p.exchange.id),
        messages: &shown_messages,
    };
    let l0 = (view.current_context.turn > 0)
        .then(|| context::render(&view.current_context, caps, enc, shown));
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
    let needed = REPLY_PRIMER
        + req.tools_tokens
        + system_cost
        + input_cost
        + context_cost
        + listed_cost
        + summaries_base
        + recent_base;
    if needed > req.budget {
        return Err(PackError::BudgetTooSmall {
            needed,
            budget: req.budget,
        });
    }
    // Signed: an exchange can cost less in full than as a header line.
    let mut left = i64::from(req.budget - needed);
    let mut trimmed = Vec::new();

    // Upgrades, most useful first: recent exchanges newest first, then
    // summaries newest first, then references.
    for p in recent.iter_mut().rev() {
        let extra = |p: &Placed, level| {
            i64::from(p.cost(level, true)) - i64::from(p.cost(Level::Header, true))
        };
        let candidates = [Level::Full, Level::Digests, Level::Summary];
        let fits = candidates
            .into_iter()
            .find(|&l| extra(p, l) <= left && (l != Level::Summary || p.has_summary()));
        p.level = fits.unwrap_or(Level::Header);
        if p.level != Level::Full {
            trimmed.push(Trim {
                id: p.exchange.id.to_string(),
                from: ItemForm::Level(Level::Full),
                to: ItemForm::Level(p.level),
                reason: over_budget("full", extra(p, Level::Full), left),
            });
        }
        left -= extra(p, p.level);
    }
    for p in summarised.iter_mut().rev() {
        // A summary that does not halve its exchange is not worth its
        // tokens on every turn: the header points at the exchange, one
        // retrieve away. Small exchanges (a call and a short answer) end so.
        let summary = p.cost(Level::Summary, false);
        if 2 * summary > p.exchange.tokens.full {
            trimmed.push(Trim {
                id: p.exchange.id.to_string(),
                from: ItemForm::Level(Level::Summary),
                to: ItemForm::Level(Level::Header),
                reason: format!(
                    "summary saves too little: {summary} tokens of {} in full",
                    p.exchange.tokens.full
                ),
            });
            continue;
        }
        let extra = i64::from(summary - p.cost(Level::Header, false));
        if extra <= left {
            left -= extra;
            p.level = Level::Summary;
        } else {
            trimmed.push(Trim {
                id: p.exchange.id.to_string(),
                from: ItemForm::Level(Level::Summary),
                to: ItemForm::Level(Level::Header),
                reason: over_budget("summary", extra, left),
            });
        }
    }
    let shown_whole: HashSet<ExchangeId> = recent
        .iter()
        .filter(|p| matches!(p.level, Level::Full | Level::Digests))
        .map(|p| p.exchange.id)
        .collect();
    let mut references = Vec::new();
    let references_title = title(REFERENCES_TITLE) + MESSAGE_OVERHEAD;
    for r in view
        .references
        .iter()
        .filter(|r| !shown_whole.contains(&r.exchange))
    {
        let cost = i64::from(
            r.line.tokens
                + if references.is_empty() {
                    references_title
                } else {
                    0
                },
        );
        if references.len() < caps.max_references as usize && cost <= left {
            left -= cost;
            references.push(r);
        } else {
            trimmed.push(Trim {
                id: r.blob.short_id(),
                from: ItemForm::Reference,
                to: ItemForm::Dropped,
                reason: over_budget("reference", cost, left),
            });
        }
    }
    // Listed oldest first, so that new references append.
    references.sort_by_key(|r| r.exchange);

    // Emit, layer by layer.
    let mut reports: HashMap<Layer, LayerReport> = Layer::ALL
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
    let mut put = |layer: Layer, messages: Vec<PromptMessage>, items: Vec<LayerItem>| {
        let report = reports.get_mut(&layer).unwrap();
        report.tokens += messages.iter().map(|m| m.charged).sum::<u32>();
        report.items.extend(items);
        sections.entry(layer).or_default().extend(messages);
    };
    if let Some(system) = &req.system {
        let item = LayerItem {
            id: "system".into(),
            format: ItemForm::Text,
            tokens: system_cost,
        };
        put(
            Layer::System,
            vec![layer_message(
                Role::System,
                vec![(system.text.clone(), system.tokens)],
            )],
            vec![item],
        );
    }
    if let Some(c) = &l0 {
        let item = LayerItem {
            id: "currentContext".into(),
            format: ItemForm::Text,
            tokens: context_cost,
        };
        put(
            Layer::CurrentContext,
            vec![layer_message(Role::User, vec![(c.text.clone(), c.tokens)])],
            vec![item],
        );
    }
    if !listed.is_empty() {
        let entries = listed.iter().map(|h| {
            let item = LayerItem {
                id: h.id.to_string(),
                format: ItemForm::Level(Level::Header),
                tokens: h.line.tokens,
            };
            (vec![(h.line.text.clone(), h.line.tokens)], item)
        });
        let (messages, items) = titled_layer(HEADERS_TITLE, enc, entries);
        put(Layer::Headers, messages, items);
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
        put(Layer::Summaries, messages, items);
    }
    if !references.is_empty() {
        let entries = references.iter().map(|r| {
            let item = LayerItem {
                id: r.blob.short_id(),
                format: ItemForm::Reference,
                tokens: r.line.tokens,
            };
            (vec![(r.line.text.clone(), r.line.tokens)], item)
        });
        let (messages, items) = titled_layer(REFERENCES_TITLE, enc, entries);
        put(Layer::References, messages, items);
    }
    for p in &recent {
        let messages = match p.level {
            Level::Full | Level::Digests => exchange_messages(p.exchange, p.level),
            Level::Summary | Level::Header => vec![layer_message(Role::User, p.pieces())],
        };
        let item = LayerItem {
            id: p.exchange.id.to_string(),
            format: ItemForm::Level(p.level),
            tokens: p.cost(p.level, true),
        };
        put(Layer::Recent, messages, vec![item]);
    }
    if let Some(input) = &req.input {
        let message = PromptMessage {
            role: input.message.role,
            blocks: render::message_blocks(input, Level::Full),
            charged: req.input_tokens,
            block_tokens: Vec::new(),
        };
        let item = LayerItem {
            id: "input".into(),
            format: ItemForm::Text,
            tokens: req.input_tokens,
        };
        put(Layer::Input, vec![message], vec![item]);
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
    let layers: Vec<LayerReport> = Layer::ALL
        .iter()
        .map(|l| reports.remove(l).unwrap())
        .collect();
    let total = messages.iter().map(|m| m.charged).sum::<u32>() + REPLY_PRIMER + req.tools_tokens;
    debug_assert_eq!(i64::from(total), i64::from(req.budget) - left);
    Ok(PackedPrompt {
        messages,
        tools_tokens: req.tools_tokens,
        total,
        layers,
        trimmed,
    })
}

impl Layer {
    const ALL_SEED003: [Layer; 7] = [
        Layer::System,
        Layer::CurrentContext,
        Layer::Headers,
        Layer::Summaries,
        Layer::References,
        Layer::Recent,
        Layer::Input,
    ];
    /// The input comes before L0: the next prompt shows it again as the
    /// start of the newest exchange, so in this place it stays in the
    /// cached prefix; and a tool result as input stays right after its call.
    const ALL_CACHE_STABLE: [Layer; 7] = [
        Layer::System,
        Layer::Headers,
        Layer::References,
        Layer::Summaries,
        Layer::Recent,
        Layer::Input,
        Layer::CurrentContext,
    ];
}

/// Keeps tool calls valid for APIs that check pairing: a call is a
/// `ToolUse` only when its result follows in the run of tool messages right
/// after it, and a result is a `ToolResult` only when its call precedes it;
/// any other becomes plain text, with the same text and so the same tokens.
fn pair_tool_calls(messages: &mut [PromptMessage]) {
    let mut i = 0;
    while i < messages.len() {
        let run_end = (i + 1..messages.len())
            .find(|&j| messages[j].role != Role::Tool)
            .unwrap_or(messages.len());
        if messages[i].role == Role::Assistant {
            let calls: HashSet<String> = messages[i]
                .blocks
                .iter()
                .filter_map(|b| match b {
                    Block::ToolUse { id, .. } => Some(id.clone()),
                    _ => None,
                })
                .collect();
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

/// Tokens at the start of `next` that are identical in `prev`: tools, then
/// whole equal messages, then equal leading pieces of the first message
/// that differs. What a provider's prompt cache can reuse, at most.
///
/// Equal messages may be charged differently: the input is charged alone,
/// and the next prompt shows it again as the first message of an exchange,
/// whose messages are charged together on its last. Everything before
/// matched, so either charge covers only matched messages.
pub fn shared_prefix_tokens(prev: &PackedPrompt, next: &PackedPrompt) -> u32 {
    let mut shared = if prev.tools_tokens == next.tools_tokens {
        next.tools_tokens
    } else {
        return 0;
    };
    for (a, b) in prev.messages.iter().zip(&next.messages) {
        if a.role == b.role && a.blocks == b.blocks {
            shared += if b.charged > 0 { b.charged } else { a.charged };
            continue;
        }
        if a.role == b.role && !b.block_tokens.is_empty() {
            shared += a
                .blocks
                .iter()
                .zip(&b.blocks)
                .zip(&b.block_tokens)
                .take_while(|((x, y), _)| x == y)
                .map(|(_, n)| n)
                .sum::<u32>();
        }
        break;
    }
    shared
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::OutputKind;
    use crate::exchange::ToolResult;
    use crate::ids::{BlobHash, MessageId};
    use crate::memory::MemorySession;
    use crate::message::{Message, ToolCall};
    use proptest::prelude::*;

    const ENC: Encoding = Encoding::O200kBase;

    /// A generated exchange: the ask's length, tool calls as (tool, output
    /// lines, failed), and the answer's length.
    #[derive(Clone, Debug)]
    struct Spec {
        ask: usize,
        calls: Vec<(usize, usize, bool)>,
        answer: usize,
    }

    const TOOLS: [&str; 5] = ["read_file", "bash", "write_file", "grep", "book_flight"];
    const WORDS: [&str; 12] = [
        "fix",
        "the",
        "parser",
        "src/lib.rs",
        "E0308",
        "flight",
        "cargo",
        "test",
        "Parser::peek",
        "why",
        "next",
        "ok.",
    ];

    fn text(seed: usize, n: usize) -> String {
        (0..n)
            .map(|i| WORDS[(seed * 7 + i * 3) % WORDS.len()])
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn messages(id: u32, spec: &Spec) -> Vec<KeptMessage> {
        let mut out = vec![Message::new(Role::User, text(id as usize, spec.ask))];
        for (k, &(tool, lines, failed)) in spec.calls.iter().enumerate() {
            let call_id = format!("call_{id}_{k}");
            let mut call = Message::new(
                Role::Assistant,
                if k == 0 { text(k, 3) } else { String::new() },
            );
            let arguments = format!(r#"{{"path":"src/m{k}.rs","command":"cargo test {k}"}}"#);
            call.tool_calls.push(ToolCall {
                id: call_id.clone(),
                name: TOOLS[tool].into(),
                arguments,
            });
            let body = (0..lines)
                .map(|l| format!("line {l} of output {}", if failed { "error" } else { "ok" }));
            let mut result = Message::new(Role::Tool, body.collect::<Vec<_>>().join("\n"));
            result.tool_call_id = Some(call_id);
            result.name = Some(TOOLS[tool].into());
            out.extend([call, result]);
        }
        if spec.answer > 0 {
            out.push(Message::new(
                Role::Assistant,
                text(id as usize + 1, spec.answer),
            ));
        }
        out.into_iter()
            .enumerate()
            .map(|(i, message)| {
                let result = (message.role == Role::Tool).then(|| ToolResult {
                    blob: BlobHash::of(format!("{id}/{i}").as_bytes()),
                    kind: OutputKind::Generic,
                    path: None,
                    bytes: message.content.len() as u64 * 10,
                    tokens: message.content.len() as u32,
                    headline: message.content.lines().next().unwrap_or("").to_string(),
                    digest: message.content.clone(),
                    whole: false,
                });
                KeptMessage {
                    id: MessageId {
                        exchange: ExchangeId(id),
                        index: i as u32 + 1,
                    },
                    message,
                    result,
                }
            })
            .collect()
    }

    fn session(specs: &[Spec], caps: &LayerCaps) -> MemorySession {
        let mut s = MemorySession::new(caps.clone(), ENC);
        for (i, spec) in specs.iter().enumerate() {
            s.push(
                Some(format!("2026-11-21T10:{:02}:00Z", i % 60)),
                messages(i as u32 + 1, spec),
            );
        }
        s
    }

    fn request(budget: u32, order: LayerOrder, input: Option<KeptMessage>) -> PackRequest {
        let input_tokens = input
            .as_ref()
            .map_or(0, |m| render::message_tokens(m, Level::Full, ENC));
        PackRequest {
            budget,
            encoding: ENC,
            order,
            system: Some(render::counted_piece("You are a coding assistant.", ENC)),
            input,
            input_tokens,
            tools_tokens: render::tools_tokens(ENC),
        }
    }

    /// Which layer holds what, in prompt order, and what was trimmed.
    fn describe(p: &PackedPrompt) -> String {
        let mut out = Vec::new();
        for r in p.layers.iter().filter(|r| !r.items.is_empty()) {
            let items: Vec<String> = r
                .items
                .iter()
                .map(|i| {
                    if i.format == ItemForm::Text {
                        i.id.clone()
                    } else {
                        format!("{}:{}", i.id, i.format.as_str())
                    }
                })
                .collect();
            out.push(format!("{}: {}", r.layer.as_str(), items.join(" ")));
        }
        for t in &p.trimmed {
            out.push(format!(
                "trimmed {} {}→{}",
                t.id,
                t.from.as_str(),
                t.to.as_str()
            ));
        }
        out.join("\n")
    }

    fn check(count: usize, budget: u32, expect: &str) {
        let caps = LayerCaps {
            max_headers: 16,
            max_references: 3,
            summaries: 3,
            tail_tokens: 2_500,
            ..LayerCaps::default()
        };
        let spec = Spec {
            ask: 6,
            calls: vec![(0, 30, false), (1, 5, true)],
            answer: 12,
        };
        let s = session(&vec![spec; count], &caps);
        let got = match pack(
            &s.view(),
            &request(budget, LayerOrder::CacheStable, None),
            &caps,
        ) {
            Ok(p) => describe(&p),
            Err(e) => e.to_string(),
        };
        assert_eq!(got.trim(), expect.trim(), "\n--- got ---\n{got}\n");
    }

    #[test]
    fn regions_follow_the_batches() {
        check(
            3,
            100_000,
            r#"
system: system
currentContext: currentContext
recent: x1:full x2:full x3:full
"#,
        );
        // The tail grows past `tail_tokens` and is compacted at once,
        // keeping the newest exchanges up to an eighth of it; the summaries
        // restart at a multiple of `summaries` (x7 only, x1-x6 are headers).
        check(
            12,
            100_000,
            r#"
system: system
currentContext: currentContext
recent: x8:full x9:full x10:full x11:full x12:full
headers: x1:header x2:header x3:header x4:header x5:header x6:header
summaries: x7:summary
references: b3:6fca0f71386e:reference b3:a7e0bdab8c0a:reference b3:ade1bc4bc809:reference
"#,
        );
        check(
            23,
            1_000,
            r#"
system: system
currentContext: currentContext
recent: x22:digests x23:full
headers: x9:header x10:header x11:header x12:header x13:header x14:header x15:header x16:header x17:header x18:header
summaries: x19:header x20:header x21:summary
references: b3:e3f9dcf571b4:reference b3:262379a1284b:reference
trimmed x22 full→digests
trimmed x20 summary→header
trimmed x19 summary→header
trimmed b3:064c66118cbb reference→dropped
"#,
        );
        check(
            23,
            300,
            r#"
budget of 300 tokens is smaller than the 381 the system prompt, input, current context and headers need
"#,
        );
    }

    /// What a model API would check: every tool result right after its
    /// call, every call answered.
    fn assert_paired(messages: &[PromptMessage]) {
        let mut open: Vec<String> = Vec::new();
        for m in messages {
            for b in &m.blocks {
                match b {
                    Block::ToolResult { call_id, .. } => {
                        assert_eq!(m.role, Role::Tool);
                        assert!(open.contains(call_id), "result {call_id} without its call");
                        open.retain(|c| c != call_id);
                    }
                    _ if m.role != Role::Tool => {
                        assert!(open.is_empty(), "calls {open:?} left unanswered")
                    }
                    _ => {}
                }
            }
            if m.role == Role::Assistant {
                open = m
                    .blocks
                    .iter()
                    .filter_map(|b| match b {
                        Block::ToolUse { id, .. } => Some(id.clone()),
                        _ => None,
                    })
                    .collect();
            }
        }
        assert!(open.is_empty(), "calls {open:?} left unanswered");
    }

    fn spec() -> impl Strategy<Value = Spec> {
        (
            0usize..20,
            prop::collection::vec((0usize..5, 0usize..60, any::<bool>()), 0..4),
            0usize..40,
        )
            .prop_map(|(ask, calls, answer)| Spec { ask, calls, answer })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn budget_is_never_exceeded_and_counts_add_up(
            specs in prop::collection::vec(spec(), 0..30),
            budget in 200u32..6_000,
            recent_full in 0u32..6,
            summaries in 0u32..6,
            max_headers in 1u32..30,
            seed003 in any::<bool>(),
            tool_input in any::<bool>(),
        ) {
            let caps = LayerCaps { recent_full, summaries, max_headers, max_references: 5, ..LayerCaps::default() };
            let s = session(&specs, &caps);
            let view = s.view();
            let order = if seed003 { LayerOrder::Seed003 } else { LayerOrder::CacheStable };
            // A tool result as input answers the newest exchange's last call, if any.
            let mut input = KeptMessage {
                id: MessageId { exchange: ExchangeId(s.len() + 1), index: 1 },
                message: Message::new(Role::User, "and now run the tests please"),
                result: None,
            };
            let last_call = view.window.last().and_then(|e| e.messages.iter().rev().find_map(|m| m.message.tool_calls.last()));
            if let (true, Some(call)) = (tool_input, last_call) {
                input.message = Message { tool_call_id: Some(call.id.clone()), ..Message::new(Role::Tool, "3 passed") };
            }
            let req = request(budget, order, Some(input));
            match pack(&view, &req, &caps) {
                Ok(p) => {
                    prop_assert!(p.total <= budget, "total {} over budget {budget}", p.total);
                    let real: u32 = p.messages.iter().map(|m| tokens::count(ENC, &m.text()) + MESSAGE_OVERHEAD).sum();
                    // Equal but for a summary's closing "\n" that merges with its last token.
                    prop_assert!(real + REPLY_PRIMER + p.tools_tokens <= p.total);
                    prop_assert!(real + REPLY_PRIMER + p.tools_tokens + p.layer(Layer::Summaries).items.len() as u32 + p.layer(Layer::Recent).items.len() as u32 >= p.total);
                    for m in p.messages.iter().filter(|m| !m.block_tokens.is_empty()) {
                        prop_assert!(tokens::count(ENC, &m.text()) <= m.block_tokens.iter().sum::<u32>());
                    }
                    let layers: u32 = p.layers.iter().map(|l| l.tokens).sum();
                    prop_assert_eq!(layers + REPLY_PRIMER + p.tools_tokens, p.total);
                    let is_piece = |t: String| t.ends_with('\n') && !t.starts_with(char::is_whitespace);
                    let pieces_ok = p.messages.iter().all(|m| m.blocks.iter().all(|b| is_piece(b.text())));
                    prop_assert!(pieces_ok, "{:?}", p.messages.iter().flat_map(|m| m.blocks.iter().map(|b| b.text())).filter(|t| !is_piece(t.clone())).collect::<Vec<_>>());
                    assert_paired(&p.messages);
                    prop_assert_eq!(pack(&view, &req, &caps), Ok(p));
                }
                Err(PackError::BudgetTooSmall { needed, budget: b }) => {
                    prop_assert_eq!(b, budget);
                    prop_assert!(needed > budget);
                }
            }
        }
    }

    #[test]
    fn the_input_stays_in_the_next_prompts_prefix() {
        let caps = LayerCaps::default();
        let spec = Spec {
            ask: 8,
            calls: vec![(0, 5, false)],
            answer: 6,
        };
        let mut s = session(&vec![spec.clone(); 3], &caps);
        let ask = messages(4, &spec).remove(0);
        let first = pack(
            &s.view(),
            &request(20_000, LayerOrder::CacheStable, Some(ask)),
            &caps,
        )
        .unwrap();
        // The input, then L0, end the prompt.
        let n = first.messages.len();
        assert_eq!(
            first.messages[n - 2].text(),
            messages(4, &spec)[0].message.content.clone() + "\n"
        );
        assert!(first.messages[n - 1]
            .text()
            .starts_with("## Current context"));
        // The exchange the input opened is appended: everything but L0 and
        // the reply primer is still a prefix of the next prompt.
        s.push(None, messages(4, &spec));
        let next = pack(
            &s.view(),
            &request(20_000, LayerOrder::CacheStable, None),
            &caps,
        )
        .unwrap();
        let l0 = first.messages[n - 1].charged;
        assert_eq!(
            shared_prefix_tokens(&first, &next),
            first.total - l0 - REPLY_PRIMER
        );
    }

    #[test]
    fn a_summary_that_does_not_halve_its_exchange_gives_way_to_the_header() {
        let caps = LayerCaps {
            summaries: 3,
            tail_tokens: 200,
            ..LayerCaps::default()
        };
        // A question and a one-line answer: the summary repeats most of it.
        let small = Spec {
            ask: 12,
            calls: vec![],
            answer: 12,
        };
        let s = session(&vec![small; 20], &caps);
        let p = pack(
            &s.view(),
            &request(20_000, LayerOrder::CacheStable, None),
            &caps,
        )
        .unwrap();
        let summaries = p.layer(Layer::Summaries);
        assert!(!summaries.items.is_empty());
        assert!(summaries
            .items
            .iter()
            .all(|i| i.format == ItemForm::Level(Level::Header)));
        assert!(p
            .trimmed
            .iter()
            .any(|t| t.reason.starts_with("summary saves too little")));
    }

    #[test]
    fn the_prefix_changes_only_when_the_tail_is_compacted() {
        let caps = LayerCaps::default();
        let spec = Spec {
            ask: 8,
            calls: vec![(0, 20, false), (2, 3, false)],
            answer: 10,
        };
        let mut s = MemorySession::new(caps.clone(), ENC);
        let mut prev: Option<PackedPrompt> = None;
        let mut reused = Vec::new();
        for i in 1..=30u32 {
            s.push(None, messages(i, &spec));
            let p = pack(
                &s.view(),
                &request(20_000, LayerOrder::CacheStable, None),
                &caps,
            )
            .unwrap();
            if let Some(prev) = &prev {
                reused.push(100 * shared_prefix_tokens(prev, &p) / p.total);
            }
            prev = Some(p);
        }
        // Between compactions the prompt only grows at its end: everything
        // but the current context and the input is reused. A compaction
        // (the tail past `tail_tokens`, or a new block) moves the boundary
        // and the old prefix ends at the summaries.
        let moves = reused.iter().filter(|&&r| r < 70).count();
        assert!(moves * 4 <= reused.len(), "{reused:?}");
        let mean = reused.iter().sum::<u32>() / reused.len() as u32;
        assert!(mean >= 65, "{reused:?}");
    }

    #[test]
    fn seed003_puts_the_current_context_first() {
        let caps = LayerCaps::default();
        let s = session(
            &vec![
                Spec {
                    ask: 5,
                    calls: vec![],
                    answer: 5
                };
                3
            ],
            &caps,
        );
        let p = pack(
            &s.view(),
            &request(10_000, LayerOrder::Seed003, None),
            &caps,
        )
        .unwrap();
        assert!(p.messages[1].text().starts_with("## Current context"));
        let p = pack(
            &s.view(),
            &request(10_000, LayerOrder::CacheStable, None),
            &caps,
        )
        .unwrap();
        assert!(p
            .messages
            .last()
            .unwrap()
            .text()
            .starts_with("## Current context"));
    }
}

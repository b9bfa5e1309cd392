//! The packer's tests: fixtures of generated sessions, snapshots of the
//! prompts, properties of every packing.

use ctxproxy_core::config::{LayerCaps, LayerOrder};
use ctxproxy_core::digest::OutputKind;
use ctxproxy_core::exchange::{KeptMessage, Level};
use ctxproxy_core::ids::ExchangeId;
use ctxproxy_core::ids::{BlobHash, MessageId};
use ctxproxy_core::message::Role;
use ctxproxy_core::message::{Message, ToolCall};
use ctxproxy_core::packer::*;
use ctxproxy_core::render::{self, Block, MESSAGE_OVERHEAD, REPLY_PRIMER};
use ctxproxy_core::tokens::{self, Encoding};
use ctxproxy_testkit::{kept, MemorySession, Output};
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
    kept(id, out, |at, m| Output {
        blob: BlobHash::of(format!("{}/{}", at.exchange.0, at.index - 1).as_bytes()),
        kind: OutputKind::Generic,
        path: None,
        bytes: m.content.len() as u64 * 10,
        tokens: m.content.len() as u32,
    })
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
        iteration: 1,
        whole_allowed: false,
        calls: Default::default(),
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

/// Caps small enough that a dozen exchanges fill every region.
fn small_caps(summaries: u32) -> LayerCaps {
    LayerCaps {
        max_headers: 16,
        max_references: 3,
        summaries,
        tail_tokens: 2_500,
        ..LayerCaps::default()
    }
}

/// An exchange with a 30-line output and a failing call.
fn coding_spec() -> Spec {
    Spec {
        ask: 6,
        calls: vec![(0, 30, false), (1, 5, true)],
        answer: 12,
    }
}

fn check(count: usize, budget: u32, expect: &str) {
    let caps = small_caps(3);
    let spec = coding_spec();
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
recent: x22:full x23:full
headers: x9:header x10:header x11:header x12:header x13:header x14:header x15:header x16:header x17:header x18:header
summaries: x19:header x20:summary x21:summary
trimmed x19 summary→header
trimmed b3:e3f9dcf571b4 reference→dropped
trimmed b3:262379a1284b reference→dropped
trimmed b3:064c66118cbb reference→dropped
"#,
    );
    // The budget governs the history: the system prompt and the tools
    // are counted apart, so 300 tokens hold the guaranteed part.
    check(
        23,
        300,
        r#"
system: system
currentContext: currentContext
recent: x22:header x23:digests
headers: x9:header x10:header x11:header x12:header x13:header x14:header x15:header x16:header x17:header x18:header
summaries: x19:header x20:header x21:header
trimmed x23 full→digests
trimmed x22 full→header
trimmed x21 summary→header
trimmed x20 summary→header
trimmed x19 summary→header
trimmed b3:e3f9dcf571b4 reference→dropped
trimmed b3:262379a1284b reference→dropped
trimmed b3:064c66118cbb reference→dropped
"#,
    );
    check(
        23,
        150,
        r#"
budget of 150 tokens is smaller than the 152 the current context and headers need (the system prompt, tools and input are counted apart)
"#,
    );
}

/// Which exchange supersedes which ranges (`x3-x5`).
type Supersedes<'a> = &'a [(u32, &'a [&'a str])];

/// Supersession cases: (exchanges, budget, supersedes as (superseder,
/// ranges)). Each prompt is described with its trims' reasons and its
/// `superseded` ranges; a superseded exchange is never above its header.
#[test]
fn superseded_exchanges_keep_a_header_at_most() {
    let cases: &[(usize, u32, Supersedes)] = &[
        // In the recent tail: x2-x4 replaced by x5, x6 appends.
        (6, 100_000, &[(5, &["x2-x4"])]),
        // In every region: headers (x1-x3), summaries (x4-x7), recent;
        // x7 supersedes and keeps its summary; x5's first superseder stays.
        (
            12,
            100_000,
            &[(7, &["x1-x3", "x5", "x6"]), (9, &["x5", "x8"])],
        ),
        // Under a tight budget the superseded cost nothing beyond headers.
        (12, 1_200, &[(11, &["x8-x10"])]),
    ];
    let caps = small_caps(4);
    let spec = coding_spec();
    let mut out = Vec::new();
    for (count, budget, supersedes) in cases {
        let mut s = session(&vec![spec.clone(); *count], &caps);
        for (by, ranges) in *supersedes {
            let ranges: Vec<_> = ranges
                .iter()
                .map(|r| ctxproxy_core::supersede::ExchangeRange::parse(r).unwrap())
                .collect();
            s.supersede(ExchangeId(*by), &ranges);
        }
        let view = s.view();
        let p = pack(
            &view,
            &request(*budget, LayerOrder::CacheStable, None),
            &caps,
        )
        .unwrap();
        for item in p.layers.iter().flat_map(|l| &l.items) {
            let id = ctxproxy_core::ids::ItemId::parse(&item.id);
            if let Ok(ctxproxy_core::ids::ItemId::Exchange(x)) = id {
                if view.superseded.contains_key(&x) {
                    assert_eq!(item.format, ItemForm::Level(Level::Header), "{x}");
                }
            }
        }
        let reasons: Vec<String> = p
            .trimmed
            .iter()
            .map(|t| {
                format!(
                    "  {} {}→{}: {}",
                    t.id,
                    t.from.as_str(),
                    t.to.as_str(),
                    t.reason
                )
            })
            .collect();
        let superseded: Vec<String> = p
            .superseded
            .iter()
            .map(|s| format!("{} superseded by {}", s.ids, s.by))
            .collect();
        out.push(format!(
            "{count} exchanges, budget {budget}, supersedes {supersedes:?}\n{}\nreasons:\n{}\nsuperseded: {}\n",
            describe(&p).lines().filter(|l| !l.starts_with("trimmed")).collect::<Vec<_>>().join("\n"),
            reasons.join("\n"),
            superseded.join(", ")
        ));
    }
    insta::assert_snapshot!(out.join("\n"));
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
            open = m.tool_use_ids().map(str::to_string).collect();
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
                // The budget governs the history; system, tools and input are apart.
                prop_assert!(p.total - req.fixed_tokens() <= budget, "total {} over budget {budget} + fixed {}", p.total, req.fixed_tokens());
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
fn a_summary_that_saves_less_than_a_third_gives_way_to_the_header() {
    let caps = LayerCaps {
        summaries: 3,
        dialogue_tokens: 200,
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
fn the_headers_a_prompt_shows_include_those_that_open_a_summary() {
    let caps = small_caps(3);
    let s = session(&vec![coding_spec(); 12], &caps);
    let p = pack(
        &s.view(),
        &request(20_000, LayerOrder::CacheStable, None),
        &caps,
    )
    .unwrap();
    let at = |level: Level| -> Vec<String> {
        let items = p.layers.iter().flat_map(|l| &l.items);
        items
            .filter(|i| i.format == ItemForm::Level(level))
            .map(|i| i.id.clone())
            .collect()
    };
    let (summaries, headers) = (at(Level::Summary), at(Level::Header));
    assert!(
        !summaries.is_empty() && !headers.is_empty(),
        "{}",
        describe(&p)
    );
    let mut shown: Vec<String> = p
        .header_lines_shown()
        .iter()
        .map(|x| x.to_string())
        .collect();
    let mut expected = [summaries, headers].concat();
    shown.sort();
    expected.sort();
    assert_eq!(shown, expected, "{}", describe(&p));
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

#[test]
fn a_supersession_changes_the_prompt_once() {
    let caps = LayerCaps::default();
    let spec = Spec {
        ask: 8,
        calls: vec![(0, 20, false)],
        answer: 10,
    };
    let mut s = MemorySession::new(caps.clone(), ENC);
    let mut prompts = Vec::new();
    for i in 1..=9u32 {
        let id = s.push(None, messages(i, &spec));
        if i == 6 {
            let ranges = [ctxproxy_core::supersede::ExchangeRange::parse("x3-x5").unwrap()];
            s.supersede(id, &ranges);
        }
        let view = s.view();
        let req = request(20_000, LayerOrder::CacheStable, None);
        prompts.push(pack(&view, &req, &caps).unwrap());
    }
    // Everything a prompt holds but L0 (sent last, new every turn).
    let stable = |p: &PackedPrompt| p.total - REPLY_PRIMER - p.layer(Layer::CurrentContext).tokens;
    let shared = |a: usize, b: usize| shared_prefix_tokens(&prompts[a - 1], &prompts[b - 1]);
    // The superseding exchange rewrites the prompt from x3 on, once...
    let p5 = &prompts[4];
    let before_x3 = p5.tools_tokens
        + p5.layer(Layer::System).tokens
        + p5.layer(Layer::Recent).items[..2]
            .iter()
            .map(|i| i.tokens)
            .sum::<u32>();
    assert_eq!(shared(5, 6), before_x3);
    assert!(before_x3 < stable(p5));
    // ...and the prompts after it only grow at their end again.
    for n in 6..9 {
        assert_eq!(
            shared(n, n + 1),
            stable(&prompts[n - 1]),
            "p{n} → p{}",
            n + 1
        );
    }
}

/// A child session of `depth` with `exchanges` exchanges of its own, called
/// with a context of `context_lines` lines.
fn child_view(
    depth: u32,
    exchanges: usize,
    context_lines: usize,
) -> ctxproxy_core::view::SessionView {
    let caps = LayerCaps::default();
    let spec = Spec {
        ask: 5,
        calls: vec![(1, 20, false)],
        answer: 5,
    };
    let mut view = session(&vec![spec; exchanges], &caps).view();
    view.depth = depth;
    view.call = Some(ctxproxy_core::call::CallLineage {
        parent_session: "s-root".into(),
        at_exchange: 3,
        parent_objective: "which functions raise ValueError".into(),
        query: "the textwrap part".into(),
        context: (0..context_lines)
            .map(|i| format!("line {i}: {}\n", text(i, 8)))
            .collect(),
    });
    view
}

#[test]
fn a_childs_l0_leads_with_its_call_line() {
    let caps = LayerCaps::default();
    for exchanges in [0, 4] {
        let p = pack(
            &child_view(1, exchanges, 40),
            &request(10_000, LayerOrder::CacheStable, None),
            &caps,
        )
        .unwrap();
        assert_eq!(p.shape, Shape::Layered);
        let l0 = p.messages.last().unwrap().text();
        assert!(
            l0.contains("\nCall: depth 1 of max 2 · iteration 1 · called by s-root after x3"),
            "{l0}"
        );
        assert!(l0.contains("\nQuery: the textwrap part\n"), "{l0}");
        assert!(
            p.layer(Layer::CurrentContext).tokens <= caps.current_context_max + MESSAGE_OVERHEAD
        );
        assert_eq!(p.layer(Layer::Recent).items.len(), exchanges.min(4));
    }
}

#[test]
fn at_max_depth_a_child_gets_the_one_shot_shape_within_any_budget() {
    let caps = LayerCaps::default();
    let view = child_view(2, 6, 2_000);
    let passed = tokens::count(ENC, &view.call.as_ref().unwrap().context);
    let mut kept_before = 0;
    for budget in [900, 1_500, 2_500, 4_000, 16_000] {
        let p = pack(
            &view,
            &request(budget, LayerOrder::CacheStable, None),
            &caps,
        )
        .unwrap();
        let Shape::OneShot(cut) = p.shape else {
            panic!("one-shot expected, got {:?}", p.shape);
        };
        assert!(
            p.tools_tokens > 0,
            "its own exchanges are one retrieve away"
        );
        assert_eq!((cut.depth, cut.max_depth, cut.passed), (2, 2, passed));
        assert!(cut.kept <= 2_000 && cut.kept >= kept_before, "{cut:?}");
        kept_before = cut.kept;
        let req = request(budget, LayerOrder::CacheStable, None);
        assert!(
            p.total - req.fixed_tokens() + p.tools_tokens - req.tools_tokens <= budget,
            "{} > {budget}",
            p.total
        );
        let charged: u32 = p.messages.iter().map(|m| m.charged).sum();
        assert_eq!(p.total, charged + REPLY_PRIMER + p.tools_tokens);
        assert_eq!(p.messages.len(), 2, "system and the call, no history");
        assert!(p.messages[1]
            .text()
            .starts_with("the textwrap part\n\nContext:\nline 0: "));
        assert_eq!(
            tokens::count(ENC, &p.messages[1].text()) + MESSAGE_OVERHEAD,
            p.messages[1].charged
        );
    }
    assert_eq!(kept_before, 2_000, "the cap when the budget allows");
    let err = pack(&view, &request(5, LayerOrder::CacheStable, None), &caps).unwrap_err();
    assert!(matches!(err, PackError::BudgetTooSmall { .. }), "{err}");
}

#[test]
fn a_call_at_max_depth_without_exchanges_is_offered_no_context_tools() {
    let caps = LayerCaps::default();
    let p = pack(
        &child_view(2, 0, 200),
        &request(4_000, LayerOrder::CacheStable, None),
        &caps,
    )
    .unwrap();
    assert!(matches!(p.shape, Shape::OneShot(_)), "{:?}", p.shape);
    assert_eq!(p.tools_tokens, 0);
    let charged: u32 = p.messages.iter().map(|m| m.charged).sum();
    assert_eq!(p.total, charged + REPLY_PRIMER);
}

/// A question and a short answer, no tool call: nothing to retrieve.
fn talk() -> Spec {
    Spec {
        ask: 8,
        calls: vec![],
        answer: 10,
    }
}

/// `whole_request` for a session whose previous prompt was layered.
fn layered_request(budget: u32) -> PackRequest {
    PackRequest {
        whole_allowed: false,
        ..whole_request(budget)
    }
}

fn whole_request(budget: u32) -> PackRequest {
    let input = kept(4, vec![Message::new(Role::User, "and now?")], |_, _| {
        unreachable!("no tool output")
    })
    .remove(0);
    PackRequest {
        whole_allowed: true,
        ..request(budget, LayerOrder::CacheStable, Some(input))
    }
}

#[test]
fn a_short_history_with_nothing_to_retrieve_is_sent_whole() {
    let caps = LayerCaps::default();
    let s = session(&vec![talk(); 3], &caps);
    let view = s.view();
    let layered = pack(&view, &layered_request(16_000), &caps).unwrap();
    let p = pack(&view, &whole_request(16_000), &caps).unwrap();
    assert_eq!(
        p.shape,
        Shape::Whole {
            layered: layered.total
        }
    );
    assert!(p.total < layered.total, "{} >= {}", p.total, layered.total);
    assert_eq!(p.tools_tokens, 0, "nothing to retrieve: no context tools");
    // System, the six messages as they were sent, the input; no L0.
    // (Every message's text ends with the newline the layers count it with.)
    let sent: Vec<String> = p
        .messages
        .iter()
        .map(|m| m.text().trim_end().to_string())
        .collect();
    let history: Vec<String> = view
        .window
        .iter()
        .flat_map(|e| &e.messages)
        .map(|m| m.message.content.clone())
        .collect();
    assert_eq!(sent.len(), 1 + history.len() + 1);
    assert_eq!(sent[1..=history.len()], history[..]);
    assert_eq!(sent.last().unwrap(), "and now?");
    let charged: u32 = p.messages.iter().map(|m| m.charged).sum();
    assert_eq!(p.total, charged + REPLY_PRIMER);
    let layers: u32 = p.layers.iter().map(|l| l.tokens).sum();
    assert_eq!(p.total, layers + REPLY_PRIMER);
    assert_eq!(p.layer(Layer::Recent).items.len(), 3);
    assert!(p.layer(Layer::CurrentContext).items.is_empty());
}

#[test]
fn the_layers_stay_when_something_would_be_left_out() {
    let caps = LayerCaps::default();
    let layered = |p: &PackedPrompt| assert_eq!(p.shape, Shape::Layered, "{:?}", p.shape);
    // Not allowed: the session's previous prompt was layered.
    let s = session(&vec![talk(); 3], &caps);
    let p = pack(&s.view(), &layered_request(16_000), &caps).unwrap();
    layered(&p);
    assert!(p.tools_tokens > 0);
    // A tool output that lives in its blob (a digest is shown).
    let with_output = Spec {
        calls: vec![(1, 40, false)],
        ..talk()
    };
    let s = session(&[talk(), with_output], &caps);
    layered(&pack(&s.view(), &whole_request(16_000), &caps).unwrap());
    // Over the budget.
    let long = Spec {
        ask: 400,
        calls: vec![],
        answer: 400,
    };
    let s = session(&vec![long; 12], &caps);
    layered(&pack(&s.view(), &whole_request(6_000), &caps).unwrap());
}

#[test]
fn the_whole_shape_is_kept_only_while_it_was_chosen() {
    let caps = LayerCaps::default();
    let s = session(&vec![talk(); 2], &caps);
    let whole = pack(&s.view(), &whole_request(16_000), &caps).unwrap();
    let layered = pack(&s.view(), &layered_request(16_000), &caps).unwrap();
    assert!(whole_allowed(None, true));
    assert!(!whole_allowed(None, false), "a forgotten previous prompt");
    assert!(whole_allowed(Some(&whole), false));
    assert!(!whole_allowed(Some(&layered), false));
}

/// The full tokens of the exchanges the recent layer shows in full, and
/// the newest exchange it shows first.
fn recent_full_tail(p: &PackedPrompt) -> (u32, Vec<String>) {
    let recent = p.layer(Layer::Recent);
    let full: Vec<&LayerItem> = recent
        .items
        .iter()
        .filter(|i| i.format == ItemForm::Level(Level::Full))
        .collect();
    (
        full.iter().map(|i| i.tokens).sum(),
        full.iter().map(|i| i.id.clone()).collect(),
    )
}

/// A conversation (no tools) at two budgets: its tail is what the other
/// layers leave of the budget. After a compaction it still holds the
/// newest turns that fit two thirds of `dialogue_tokens`, so it never holds
/// less than a sliding window of that size; it grows with the budget; and
/// every turn of it is shown in full.
#[test]
fn a_conversations_tail_is_what_the_other_layers_leave() {
    let specs: Vec<Spec> = (0..160)
        .map(|i| Spec {
            ask: 12 + i % 7,
            calls: vec![],
            answer: 40 + (i * 13) % 50,
        })
        .collect();
    let mut mean = Vec::new();
    for budget in [4_000, 16_000] {
        let caps = LayerCaps::for_budget(budget);
        let mut s = MemorySession::new(caps.clone(), ENC);
        let mut sizes: Vec<u32> = Vec::new();
        let mut tails = Vec::new();
        for (i, spec) in specs.iter().enumerate() {
            let id = i as u32 + 1;
            s.push(None, messages(id, spec));
            let view = s.view();
            sizes.push(view.window.last().unwrap().tokens.full);
            let p = pack(
                &view,
                &request(budget, LayerOrder::CacheStable, None),
                &caps,
            )
            .unwrap();
            let (tokens, shown) = recent_full_tail(&p);
            // The newest turns that fit two thirds of the tail's share: a
            // compaction keeps them, so the tail never holds fewer.
            let mut fit = 0;
            let mut newest = 0;
            for size in sizes.iter().rev() {
                if newest > 0 && 3 * (fit + size) > 2 * caps.dialogue_tokens {
                    break;
                }
                fit += size;
                newest += 1;
            }
            assert!(
                shown.len() >= newest,
                "x{id} at {budget}: {shown:?} < {newest}"
            );
            let every_recent = p.layer(Layer::Recent).items.len();
            assert_eq!(
                shown.len(),
                every_recent,
                "x{id} at {budget}: a recent turn demoted"
            );
            assert!(
                tokens <= caps.dialogue_tokens + sizes[i],
                "x{id} at {budget}: {tokens}"
            );
            tails.push(tokens);
        }
        mean.push(tails.iter().sum::<u32>() / tails.len() as u32);
    }
    assert!(mean[1] > 2 * mean[0], "{mean:?}");
}

/// A coding session's tail takes only the tools' share (`tail_tokens`) of
/// the budget, however much the dialogue's share would allow: tool output
/// leaves the tail as digests and references.
#[test]
fn a_coding_sessions_tail_keeps_the_tools_share() {
    let caps = LayerCaps::for_budget(16_000);
    let spec = coding_spec();
    let mut s = MemorySession::new(caps.clone(), ENC);
    for id in 1..=60 {
        s.push(None, messages(id, &spec));
        let view = s.view();
        let newest = view.window.last().unwrap().tokens.full;
        let p = pack(
            &view,
            &request(16_000, LayerOrder::CacheStable, None),
            &caps,
        )
        .unwrap();
        let (tokens, _) = recent_full_tail(&p);
        assert!(tokens <= caps.tail_tokens + newest, "x{id}: {tokens}");
    }
}

/// Past the tail, what the person said is in view verbatim: every user
/// message of the exchanges before the tail that ran no tools, newest back
/// to `asks_tokens`, oldest first, and the layer only changes when the
/// tail is compacted. Exchanges that ran tools have none, nor does a
/// message longer than a quarter of the layer; pinned at 0 it is off.
#[test]
fn what_the_person_said_before_the_tail_is_in_view() {
    let caps = LayerCaps::for_budget(4_000);
    let specs: Vec<Spec> = (0..120)
        .map(|i| match i % 10 {
            3 => coding_spec(),
            6 => Spec {
                ask: 300,
                calls: vec![],
                answer: 20,
            },
            _ => Spec {
                ask: 10 + i % 5,
                calls: vec![],
                answer: 60,
            },
        })
        .collect();
    let mut s = MemorySession::new(caps.clone(), ENC);
    let mut previous: Option<(String, Vec<String>)> = None;
    for (i, spec) in specs.iter().enumerate() {
        let id = i as u32 + 1;
        s.push(None, messages(id, spec));
        let view = s.view();
        let p = pack(&view, &request(4_000, LayerOrder::CacheStable, None), &caps).unwrap();
        let asks = p.layer(Layer::Asks);
        let recent: Vec<String> = p
            .layer(Layer::Recent)
            .items
            .iter()
            .map(|i| i.id.clone())
            .collect();
        assert!(asks.tokens <= caps.asks_tokens, "x{id}: {}", asks.tokens);
        let ids: Vec<u32> = asks
            .items
            .iter()
            .map(|i| i.id.trim_start_matches('x').parse().unwrap())
            .collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "x{id}: {ids:?}");
        let layer = p
            .messages
            .iter()
            .map(|m| m.blocks.iter().map(|b| b.text()).collect::<String>())
            .find(|t| t.starts_with("## What the person said"))
            .unwrap_or_default();
        for &n in &ids {
            let said = text(n as usize, specs[n as usize - 1].ask);
            assert!(layer.contains(&format!("x{n} {said}\n")), "x{id}: x{n}");
            assert!(
                specs[n as usize - 1].calls.is_empty(),
                "x{id}: x{n} ran tools"
            );
            assert!(
                n % 10 != 7,
                "x{id}: x{n}'s message is over a quarter of the layer"
            );
            assert!(!recent.contains(&format!("x{n}")), "x{id}: x{n} is recent");
        }
        if let (Some(&newest), Some(first)) = (ids.last(), recent.first()) {
            // Newest back from the tail: every exchange between the newest
            // ask and the tail ran tools or said too much.
            let first: u32 = first.trim_start_matches('x').parse().unwrap();
            assert!((newest + 1..first).all(|n| n % 10 == 4 || n % 10 == 7));
        }
        if let Some((before, before_recent)) = &previous {
            if before_recent.first() == recent.first() {
                assert_eq!(
                    before, &layer,
                    "x{id}: the layer moved without a compaction"
                );
            }
        }
        previous = Some((layer, recent));
    }
    assert!(previous.is_some_and(|(t, _)| !t.is_empty()));
    let off = LayerCaps {
        asks_tokens: 0,
        ..caps.clone()
    };
    let p = pack(
        &s.view(),
        &request(4_000, LayerOrder::CacheStable, None),
        &off,
    )
    .unwrap();
    assert!(p.layer(Layer::Asks).items.is_empty());
}

/// Project memory's latest exchanges fill what the session's own history
/// leaves, and give it back from their end in steps: while the session's
/// history grows within a step, the section (and the prefix through it)
/// stays the same, so it changes far less often than the history grows by
/// an entry's size.
#[test]
fn the_projects_latest_exchanges_give_the_budget_back_in_steps() {
    use ctxproxy_core::exchange::Counted;
    use ctxproxy_core::view::MemoryNote;

    let budget = 4_000;
    let caps = LayerCaps::for_budget(budget);
    let step = caps.project_recent_tokens / 16;
    let earlier: Vec<MemoryNote> = (0..60)
        .map(|i| {
            let text = format!("s-abcdef/x{}\nperson: {}\n", 60 - i, text(i, 60));
            MemoryNote {
                id: format!("s-abcdef/x{}", 60 - i),
                line: Counted {
                    tokens: tokens::count(ENC, &text),
                    text,
                },
            }
        })
        .collect();
    let mut s = MemorySession::new(caps.clone(), ENC);
    let mut shown: Vec<Vec<String>> = Vec::new();
    let mut own = Vec::new();
    for (i, spec) in std::iter::repeat_n(talk(), 40).enumerate() {
        s.push(None, messages(i as u32 + 1, &spec));
        let mut view = s.view();
        view.memory.recent = earlier.clone().into();
        let p = pack(&view, &layered_request(budget), &caps).unwrap();
        let ids: Vec<String> = p
            .layer(Layer::ProjectRecent)
            .items
            .iter()
            .map(|i| i.id.clone())
            .collect();
        assert!(!ids.is_empty(), "turn {}: the section is shown", i + 1);
        if let Some(before) = shown.last() {
            assert!(
                before.starts_with(&ids),
                "only the oldest leave, from the end"
            );
        }
        shown.push(ids);
        own.push(p.layer(Layer::Recent).tokens);
    }
    let grown = own.last().unwrap() - own.first().unwrap();
    let changes = shown.windows(2).filter(|w| w[0] != w[1]).count() as u32;
    let entries_left = (shown[0].len() - shown.last().unwrap().len()) as u32;
    assert!(
        grown > 3 * step,
        "the history grows past a few steps: {grown} of {step}"
    );
    assert!(
        changes <= grown / step + 1,
        "{changes} changes over {grown} tokens in steps of {step}"
    );
    assert!(
        changes < entries_left,
        "{changes} changes for {entries_left} entries given back"
    );
}

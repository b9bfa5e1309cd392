//! The current context (L0) advanced over fixture exchanges.

use ctxproxy_core::config::LayerCaps;
use ctxproxy_core::context::*;
use ctxproxy_core::exchange::KeptMessage;
use ctxproxy_core::ids::ExchangeId;
use ctxproxy_core::summary::ExchangeFacts;
use ctxproxy_core::summary::{summarise, SeenTerms};
use ctxproxy_core::tokens::Encoding;
use ctxproxy_testkit::parse_exchange;

/// Advances an empty context over `exchanges` and renders it.
fn run(exchanges: &[&str]) -> CurrentContext {
    let caps = LayerCaps::default();
    exchanges
        .iter()
        .enumerate()
        .fold(CurrentContext::default(), |ctx, (i, fixture)| {
            let id = ExchangeId(i as u32 + 1);
            let messages = parse_exchange(id.0, fixture);
            let facts = ExchangeFacts::of(&messages);
            let trio = summarise(&facts, &SeenTerms::default(), &caps, Encoding::O200kBase);
            advance(&ctx, id, &facts, &trio)
        })
}

fn check(exchanges: &[&str], expect: &str) {
    let ctx = run(exchanges);
    let caps = LayerCaps::default();
    let block = render(&ctx, &caps, Encoding::O200kBase, Shown::default(), None);
    assert!(block.tokens <= caps.current_context_max);
    assert_eq!(
        ctxproxy_core::tokens::count(Encoding::O200kBase, &block.text),
        block.tokens
    );
    assert!(block.text.ends_with('\n'));
    assert_eq!(CurrentContext::decode(&ctx.encode()).unwrap(), ctx);
    assert_eq!(
        block.text.trim(),
        expect.trim(),
        "\n--- got ---\n{}",
        block.text
    );
}

const READ: &str = r#"user: how does the parser handle `let` statements?
    assistant: -> read_file {"path":"src/parser.rs"}
    tool: fn parse_let() {}
    assistant: The parser reads **let statements** in `parse_let()`. It first expects an identifier, then an optional type annotation, then an equals sign and an expression. Errors are reported through `Diagnostic` values that carry a span so that the editor can underline the right place, and the parser recovers by skipping to the next semicolon so that one mistake does not hide the rest of the file from the user."#;
const FAIL: &str = r##"user: add a test for it and run it
    assistant: -> write_file {"path":"tests/let.rs","content":"#[test] fn t() {}"}
    tool: ok
    assistant: -> bash {"command":"cargo test let"}
    tool: test let_with_type ... FAILED\npanicked at tests/let.rs:3:5"##;

#[test]
fn phases_follow_the_work() {
    assert_eq!(run(&[READ]).phase, Phase::Understanding);
    assert_eq!(run(&[READ, FAIL]).phase, Phase::Debugging);
    assert_eq!(
        run(&["user: please review the diff"]).phase,
        Phase::Reviewing
    );
    assert_eq!(
        run(&[r#"user: book it
        assistant: -> book_flight {"to":"JFK"}
        tool: {"status":"ok"}
        assistant: Booked."#])
        .phase,
        Phase::Applying
    );
}

#[test]
fn renders_state_within_cap() {
    check(
        &[READ, FAIL],
        r#"
## Current context (turn 2, phase: debugging)
Objective: add a test for it and run it
Story so far: x2 add test run let.rs — error; x1 parser handle let statements Diagnostic — completed
Active files: tests/let.rs; src/parser.rs
Active symbols: parse_let(); Diagnostic
Concepts: cargo test let; let
Already explained (do not re-introduce): let statements; parse_let(); Diagnostic
"#,
    );
}

#[test]
fn a_search_pattern_is_no_active_file() {
    // coding-strsim x40: `grep {"pattern": "\\.len\\(\\)"}` listed the
    // regex as a file; so would a glob or a regex quoted in prose.
    let ctx = run(&[r#"user: any other `.len()` on a string?
        assistant: -> grep {"pattern":"\\.len\\(\\)","path":"src/lib.rs"}
        tool: 373:    let a_len = a_elems.len();
        assistant: -> glob {"pattern":"src/**/*.rs"}
        tool: src/lib.rs
        assistant: Only `a_elems.len()`, searched with `\.len\(` and `foo.*\.rs`; the score is `1.0 - distance / max(a, b)` for `src/tests/`."#]);
    assert_eq!(
        ctx.files,
        vec!["src/lib.rs".to_string(), "src/tests/".to_string()]
    );
}

#[test]
fn leaves_out_what_the_prompt_shows() {
    let ctx = run(&[READ, FAIL]);
    let caps = LayerCaps::default();
    let fail = parse_exchange(2, FAIL);
    let fail_messages: Vec<&KeptMessage> = fail.iter().collect();
    // x2 shown in full: its ask (the objective), its story line and
    // the names its text holds (tests/let.rs, `cargo test let`) are not
    // repeated; x1's remain.
    let shown = Shown {
        from: Some(ExchangeId(2)),
        messages: &fail_messages,
    };
    let block = render(&ctx, &caps, Encoding::O200kBase, shown, None);
    assert_eq!(
        block.text.trim(),
        r#"
## Current context (turn 2, phase: debugging)
Story so far: x1 parser handle let statements Diagnostic — completed
Active files: src/parser.rs
Active symbols: parse_let(); Diagnostic
Already explained (do not re-introduce): let statements; parse_let(); Diagnostic
"#
        .trim(),
        "\n--- got ---\n{}",
        block.text
    );
    assert_eq!(
        ctxproxy_core::tokens::count(Encoding::O200kBase, &block.text),
        block.tokens
    );
}

#[test]
fn housekeeping_overlays_model_notes() {
    let ctx = run(&[READ, FAIL]);
    let hk = Housekeeping {
        exchange: ExchangeId(2),
        header: Some("test for let fails on type annotations".into()),
        summary: None,
        key_decisions: vec!["keep recovery at semicolons".into()],
        code_changes: vec![],
        open_questions: vec!["why does the annotation not parse?".into()],
        current_context: Some("Debugging let parsing; next fix parse_type.".into()),
    };
    let next = apply_housekeeping(&ctx, &hk);
    assert_eq!(
        next.narrative[0],
        "x2 test for let fails on type annotations"
    );
    assert_eq!(next.next_steps, ["why does the annotation not parse?"]);
    assert_eq!(
        next.model_note.as_deref(),
        Some("Debugging let parsing; next fix parse_type.")
    );
    assert_eq!(next.achievements[0], "keep recovery at semicolons");
    assert_eq!(
        ctx.model_note, None,
        "advance and housekeeping never mutate"
    );
}

#[test]
fn decode_names_bad_fields() {
    let err = CurrentContext::decode(r#"{"turn":"x"}"#).unwrap_err();
    assert_eq!(
        err.to_string(),
        "current context field `turn` is missing or has the wrong type"
    );
    assert!(CurrentContext::decode("nope").is_err());
}

//! Headers and summaries of fixture exchanges.

use ctxproxy_core::config::LayerCaps;
use ctxproxy_core::exchange::Outcome;
use ctxproxy_core::summary::*;
use ctxproxy_core::tokens::{self, Encoding};
use ctxproxy_testkit::parse_exchange;

fn trio_of(fixture: &str) -> Trio {
    let messages = parse_exchange(1, fixture);
    summarise(
        &ExchangeFacts::of(&messages),
        &SeenTerms::default(),
        &LayerCaps::default(),
        Encoding::O200kBase,
    )
}

fn check(fixture: &str, expect: &str) {
    let caps = LayerCaps::default();
    let trio = trio_of(fixture);
    assert!(trio.header.tokens <= caps.header_max, "{trio:?}");
    assert!(trio.summary.tokens <= caps.summary_max, "{trio:?}");
    assert_eq!(
        tokens::count(Encoding::O200kBase, &trio.summary.text),
        trio.summary.tokens
    );
    let got = format!(
        "{}\n{}\nentities: {}",
        trio.header.text,
        trio.summary.text,
        trio.entities.join(" | ")
    );
    assert_eq!(got.trim(), expect.trim(), "\n--- got ---\n{got}\n");
}

fn header_of(fixture: &str) -> String {
    trio_of(fixture).header.text
}

#[test]
fn a_question_header_keeps_the_values_its_answer_found() {
    let header = header_of(
        r#"
        user: What MSRV does the crate pin — and which edition?
        assistant: -> read_file {"path":"Cargo.toml"}
        tool: [package]\nname = "strsim"\nrust-version = "1.56"
        assistant: It pins rust-version 1.56 and sets no edition, so 2015. See line 3.
        "#,
    );
    assert!(
        header.contains("1.56") && header.contains("2015"),
        "{header}"
    );
    let words = header.trim_end().trim_end_matches(" — completed");
    assert!(!words.contains(" 3 ") && !words.contains('—'), "{header}");
}

#[test]
fn a_header_says_what_the_person_asked_not_the_assistants_notes() {
    let header = header_of(
        r#"
        user: <system-reminder> # Environment - Primary working directory: /w </system-reminder> Why does the invoice total come out a penny off?
        assistant: -> read_file {"path":"orders.py"}
        tool: def order_total(order, prices):\n    return int(sum(prices[i] * n for i, n in order))
        assistant: order_total truncates with int(); rounding half up fixes the penny.
        "#,
    );
    assert!(
        !header.contains("system-reminder") && !header.contains("Environment"),
        "{header}"
    );
    assert!(
        header.contains("invoice") || header.contains("penny"),
        "{header}"
    );
}

#[test]
fn a_header_leaves_out_words_that_many_earlier_exchanges_use() {
    let exchange = r#"
        user: Why does the parser reject let-else in src/lib.rs?
        assistant: -> read_file {"path":"src/lib.rs"}
        tool: fn parse_let() {}
        assistant: The parser predates let-else: its MSRV is 1.56.
        "#;
    let facts = ExchangeFacts::of(&parse_exchange(1, exchange));
    let caps = LayerCaps::default();
    let alone = summarise(&facts, &SeenTerms::default(), &caps, Encoding::O200kBase);
    // Alone, every word is as rare as any other: the subject is the ask's
    // words its answer takes up.
    assert!(
        alone.header.text.starts_with("parser let-else"),
        "{:?}",
        alone.header
    );
    // Ten earlier exchanges that all name the parser and lib.rs, and
    // one that names let-else.
    let common = vec!["parser".to_string(), "lib.rs".to_string()];
    let mut earlier = vec![common; 10];
    earlier.push(vec!["let-else".to_string()]);
    let seen = SeenTerms::of(earlier.iter().map(Vec::as_slice));
    assert_eq!(
        (seen.exchanges, seen.count("parser"), seen.count("LET-ELSE")),
        (11, 10, 1)
    );
    let later = summarise(&facts, &seen, &caps, Encoding::O200kBase);
    let words: Vec<&str> = later.header.text.split_whitespace().collect();
    assert!(
        !words.contains(&"parser") && !words.contains(&"lib.rs"),
        "{:?}",
        later.header
    );
    assert!(words.contains(&"let-else"), "{:?}", later.header);
    assert!(later.header.tokens <= alone.header.tokens);
    // The terms it hands on: lower-case, each once, sorted.
    let terms = facts.terms();
    assert!(terms.windows(2).all(|w| w[0] < w[1]), "{terms:?}");
    assert!(
        terms.contains(&"let-else".to_string()) && terms.contains(&"lib.rs".to_string()),
        "{terms:?}"
    );
}

#[test]
fn only_the_newest_exchanges_are_counted() {
    let lists: Vec<Vec<String>> = (0..TERM_WINDOW + 10)
        .map(|i| vec![if i < 10 { "old" } else { "new" }.to_string()])
        .collect();
    let seen = SeenTerms::of(lists.iter().map(Vec::as_slice));
    assert_eq!(
        (seen.exchanges, seen.count("old"), seen.count("new")),
        (TERM_WINDOW, 0, TERM_WINDOW)
    );
}

#[test]
fn the_first_exchanges_are_compared_with_the_ones_after_them() {
    let session: Vec<Vec<String>> = (1..=12).map(|i| vec![format!("w{i}")]).collect();
    let peers = |at: usize| {
        let seen = SeenTerms::around(&session, at);
        let mut words: Vec<&str> = seen.counts.keys().map(String::as_str).collect();
        words.sort_by_key(|w| w[1..].parse::<u32>().unwrap());
        (seen.exchanges, words.join(" "))
    };
    // x1 has none before it: the eight after it.
    assert_eq!(peers(0), (8, "w2 w3 w4 w5 w6 w7 w8 w9".to_string()));
    // x4 has three before it: five after it complete them.
    assert_eq!(peers(3), (8, "w1 w2 w3 w5 w6 w7 w8 w9".to_string()));
    // x10 has nine before it, enough: none after it.
    assert_eq!(peers(9).0, 9);
    assert!(!peers(9).1.contains("w11"));
    // Exchanges without terms are not peers.
    let mut gaps = session.clone();
    gaps[1].clear();
    assert_eq!(SeenTerms::around(&gaps, 0).count("w10"), 1);
}

#[test]
fn a_header_names_what_sets_its_exchange_apart_from_the_session() {
    // A reasoner's asks all open with the same tags and problem statement;
    // what one exchange is about comes after them, in lower case.
    let ask = |tag: &str, focus: &str, question: &str| {
        format!(
            "user: [{tag} · focus: {focus} · style: numeric] Problem: Solve x^3 - 3x^2 + x - 10 = 0. {question}\n\
             assistant: Found it: f(3) = -7 and f(4) = 10, so the root is in (3, 4), near 3.522167."
        )
    };
    let exchanges = [
        ask(
            "ANALYZE",
            "candidates",
            "Which rational roots are possible?",
        ),
        ask("ANALYZE", "sign changes", "Where does f change sign?"),
        ask(
            "EVALUATE",
            "root count",
            "Confirm it with the discriminant.",
        ),
        ask(
            "SYNTHESIZE",
            "what we know",
            "Combine the reasoning so far.",
        ),
    ];
    let facts: Vec<ExchangeFacts> = exchanges
        .iter()
        .enumerate()
        .map(|(i, e)| ExchangeFacts::of(&parse_exchange(i as u32 + 1, e)))
        .collect();
    let terms: Vec<Vec<String>> = facts.iter().map(ExchangeFacts::terms).collect();
    let caps = LayerCaps::default();
    let header = |at: usize, seen: &SeenTerms| {
        ctxproxy_core::summary::header(&facts[at], seen, caps.header_max, Encoding::O200kBase).text
    };
    // Alone, x2's header is the statement every exchange opens with.
    let alone = header(1, &SeenTerms::default());
    assert!(
        alone.contains("Problem") && !alone.contains("sign"),
        "{alone}"
    );
    // Compared with the session, it says what x2 asked about.
    let around = header(1, &SeenTerms::around(&terms, 1));
    assert!(around.contains("sign"), "{around}");
    assert!(
        !around.contains("Problem") && !around.contains("Solve"),
        "{around}"
    );
    let first = header(0, &SeenTerms::around(&terms, 0));
    assert!(
        first.contains("candidates") || first.contains("rational"),
        "{first}"
    );
}

#[test]
fn a_headers_subject_is_what_the_exchange_took_up_not_how_it_was_asked() {
    // "Fantastic" and "Fine" are as rare in a session as the subject; the
    // exchange's calls and answer take up only the subject.
    let header = header_of(
        r#"
        user: Fantastic! Now that authentication went through, kindly reserve the Zermatt chalet.
        assistant: -> reserve_chalet {"resort":"Zermatt","nights":3}
        tool: {"reservation": "ZR-2291", "status": "confirmed"}
        assistant: Your Zermatt reservation ZR-2291 is confirmed.
        "#,
    );
    assert!(header.contains("Zermatt"), "{header}");
    assert!(!header.contains("Fantastic"), "{header}");
    let header = header_of(
        r#"
        user: Fine. How much of src do the tests cover now?
        assistant: -> run_command {"command":"npx vitest run --coverage"}
        tool: All files | 61.11 | 49.38
        assistant: Statement coverage of src is 61.11%, branches 49.38%.
        "#,
    );
    let subject: Vec<&str> = header.split_whitespace().take(2).collect();
    assert!(
        subject.contains(&"src") && subject.contains(&"cover"),
        "{header}"
    );
}

#[test]
fn a_header_carries_the_commit_hash_its_command_printed() {
    let header = header_of(
        r#"
        user: Commit the three fixes.
        assistant: -> run_command {"command":"git commit -qam 'Fix dates' && git log --oneline -n 1"}
        tool: 5afa47c Fix dates
        assistant: Committed.
        "#,
    );
    assert!(header.contains("5afa47c"), "{header}");
    // Neither a number nor a hex-looking word is an id: both a digit and
    // a letter, 7 to 40 of them.
    let header = header_of(
        r#"
        user: Count the lines.
        assistant: -> run_command {"command":"wc -l src/*.rs"}
        tool: 1234567 total deadbeef
        assistant: Counted.
        "#,
    );
    assert!(
        !header.contains("1234567") && !header.contains("deadbeef"),
        "{header}"
    );
}

#[test]
fn contractions_are_filler_with_either_apostrophe() {
    for w in ["they're", "There\u{2019}s", "DIDN'T", "you\u{2019}d"] {
        assert!(is_stopword(w), "{w}");
    }
    // A possessive names its owner.
    assert!(!is_stopword("node's"));
}

#[test]
fn a_run_that_reports_zero_failures_did_not_fail() {
    let run = |output: &str| {
        ExchangeFacts::of(&parse_exchange(
            1,
            &format!(
                "user: Run the unit tests.\n\
                 assistant: -> run_command {{\"command\":\"cargo test\"}}\n\
                 tool: {output}\n\
                 assistant: Done."
            ),
        ))
    };
    let passing = run(
        r"running 2 tests\ntest parse_config ... ok\ntest parse_ports ... ok\n\ntest result: ok. 2 passed; 0 failed; 0 ignored\n",
    );
    assert!(passing.errors.is_empty(), "{:?}", passing.errors);
    assert_eq!(passing.outcome, Outcome::Completed);
    // One failure among the passes is still one.
    let failing = run(
        r"running 2 tests\ntest parse_config ... FAILED\ntest parse_ports ... ok\n\ntest result: FAILED. 1 passed; 1 failed; 0 ignored\n",
    );
    assert_eq!(failing.outcome, Outcome::Error, "{failing:?}");
}

#[test]
fn an_edits_lines_of_code_are_not_entities() {
    let facts = ExchangeFacts::of(&parse_exchange(
        1,
        r#"
        user: Fix that one.
        assistant: -> edit_file {"path":"tests/test_bump.py","oldText":"    parse_version_info,\n    Version,\n)","newText":"    parse_version_info,\n)","mode":" strict "}
        tool: --- a/tests/test_bump.py
        assistant: Moved Version up.
        "#,
    ));
    assert!(
        facts
            .entities
            .iter()
            .all(|e| !e.contains('\n') && e.trim() == e),
        "{:?}",
        facts.entities
    );
    assert!(
        facts.entities.contains(&"strict".to_string()),
        "{:?}",
        facts.entities
    );
    assert!(
        facts.terms().iter().all(|t| !t.contains('\n')),
        "{:?}",
        facts.terms()
    );
}

#[test]
fn json_fails_on_an_error_key_not_on_a_value() {
    let ticket = header_of(
        r#"
        user: Open a ticket saying the cancellation failed.
        assistant: -> create_ticket {"title":"Cancellation"}
        tool: {"id": 2, "description": "Error encountered during cancellation."}
        assistant: Ticket 2 is open.
        "#,
    );
    assert!(ticket.ends_with("— completed"), "{ticket}");
    let failed = header_of(
        r#"
        user: Cancel booking 7.
        assistant: -> cancel_booking {"booking_id":"7"}
        tool: {"error": "No booking with id 7", "cancel_status": false}
        assistant: There is no booking 7.
        "#,
    );
    assert!(failed.ends_with("— error"), "{failed}");
}

#[test]
fn coding_exchange_with_a_fix() {
    check(
        r#"
        user: Please fix the type error E0308 in src/parser.rs, the build is broken.
        assistant: Let me build it. -> bash {"command":"cargo build"}
        tool: error[E0308]: mismatched types\n --> src/parser.rs:42:9\nerror: could not compile
        assistant: -> edit_file {"path":"src/parser.rs","old":"x","new":"y"}
        tool: edited src/parser.rs
        assistant: Fixed: `parse_expr()` returned `Option<Expr>` instead of `Expr`. The build now passes. Should I add a test for `Parser::peek`?
        "#,
        r#"
type error E0308 parser.rs parse_expr() — completed
Ask: Please fix the type error E0308 in src/parser.rs, the build is broken.
Did: edited src/parser.rs; ran `cargo build` (failed)
Errors: error[E0308]: mismatched types at src/parser.rs:42:9 [b3:f829114ef37f]
Result: Fixed: `parse_expr()` returned `Option<Expr>` instead of `Expr`. The build now passes.
Open: Should I add a test for `Parser::peek`?
Refs: b3:ccab65bd688e src/parser.rs
entities: E0308 | src/parser.rs | parse_expr() | Parser::peek | cargo build | Option<Expr> | Expr
"#,
    );
}

#[test]
fn function_calling_exchange() {
    check(
        r#"
        user: Book me a flight from SFO to JFK on 2024-12-01 in economy, then tell me the total.
        assistant: -> get_flight_cost {"from":"SFO","to":"JFK","date":"2024-12-01","class":"economy"}
        tool: {"cost": 412.5}
        assistant: -> book_flight {"from":"SFO","to":"JFK","date":"2024-12-01","class":"economy","card":"card_7"}
        tool: {"booking_id": "BK-3392", "status": "confirmed"}
        assistant: Your flight is booked: booking BK-3392, total $412.50.
        "#,
        r#"
book_flight get_flight_cost SFO JFK — completed
Ask: Book me a flight from SFO to JFK on 2024-12-01 in economy, then tell me the total.
Did: book_flight(card=card_7, class=economy, date=2024-12-01, from=SFO, to=JFK); looked at get_flight_cost
Result: Your flight is booked: booking BK-3392, total $412.50.
Refs: b3:c88e695574a0 get_flight_cost; b3:69937a4a434b book_flight
entities: economy | 2024-12-01 | SFO | JFK | card_7
"#,
    );
}

#[test]
fn failing_tool_and_feedback() {
    check(
        r#"
        feedback: no, use the other directory
        assistant: -> mv {"source":"report.txt","destination":"archive"}
        tool: {"error": "mv: no such directory: archive"}
        "#,
        r#"
no use other directory report.txt archive — error
Ask: (feedback) no, use the other directory
Did: mv(destination=archive, source=report.txt) (failed)
Errors: {"error": "mv: no such directory: archive"} [b3:f072a1714534]
entities: report.txt | archive
"#,
    );
    check(
        "user: what does the borrow checker do?",
        "borrow checker — ongoing\nAsk: what does the borrow checker do?\nentities: ",
    );
}

#[test]
fn caps_hold_on_long_exchanges() {
    let long = "The quick brown fox jumps over the lazy dog near src/very/long/path/module.rs. "
        .repeat(40);
    check(
        &format!("user: {long}\nassistant: {long}"),
        r#"
quick brown fox jumps over lazy dog near module.rs — completed
Ask: The quick brown fox jumps over the lazy dog near src/very/long/path/module.rs. The quick brown fox jumps over the lazy dog near src/very/long/path/module.rs.
Result: The quick brown fox jumps over the lazy dog near src/very/long/path/module.rs.
entities: src/very/long/path/module.rs
"#,
    );
}

#[test]
fn model_written_texts_fit_caps() {
    let caps = LayerCaps::default();
    let h = fit_header(
        "  Fixed the\nparser bug in src/parser.rs after a long hunt through the code base today  ",
        &caps,
        Encoding::O200kBase,
    );
    assert_eq!(
        h.text,
        "Fixed the parser bug in src/parser.rs after a long hunt"
    );
    let s = fit_summary(
        &"One sentence here. ".repeat(60),
        &caps,
        Encoding::O200kBase,
    );
    assert!(s.tokens <= 120 && s.text.ends_with('.'), "{s:?}");
}

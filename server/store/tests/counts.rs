//! The counts a session's view carries equal counting its texts now, in
//! either encoding: those ingest took (o200k) and those the first prompt in
//! another encoding (cl100k) took, before and after the open exchange grows.

mod common;

use ctxproxy_core::config::{LayerCaps, DEFAULT_BUDGET};
use ctxproxy_core::message::{Message, Role};
use ctxproxy_core::packer;
use ctxproxy_core::render;
use ctxproxy_core::tokens::{self, Encoding};
use ctxproxy_core::view::SessionView;
use ctxproxy_store::{AssembledPrompt, Keep, Store, StoreError};

/// What `see` makes of the view and caps a prompt in `encoding` is packed
/// from; the packing closure packs nothing, so nothing is recorded.
fn look<T: Send + 'static>(
    store: &Store,
    session: &str,
    encoding: Encoding,
    see: impl FnOnce(&SessionView, &LayerCaps) -> T + Send + 'static,
) -> T {
    let session = session.to_string();
    common::write(store, move |w| {
        let mut seen = None;
        w.assemble(
            &session,
            encoding,
            DEFAULT_BUDGET,
            None,
            Keep::Record,
            |_, view, caps| {
                seen = Some(see(view, caps));
                Err::<AssembledPrompt<(), ()>, ()>(())
            },
        )?
        .unwrap_err();
        Ok(seen.expect("packed"))
    })
    .unwrap()
}

fn view(store: &Store, session: &str, encoding: Encoding) -> SessionView {
    look(store, session, encoding, |view, _| view.clone())
}

/// Every count in `view` that differs from counting its text in `encoding`.
fn miscounts(view: &SessionView, encoding: Encoding) -> Vec<String> {
    let count = |text: &str| tokens::count(encoding, text);
    let mut wrong = Vec::new();
    for h in &view.headers {
        if h.line.tokens != count(&h.line.text) {
            wrong.push(format!("{} header line {}", h.id, h.line.tokens));
        }
    }
    for x in &view.window {
        if x.header.tokens != count(&x.header.text) {
            wrong.push(format!("{} header {}", x.id, x.header.tokens));
        }
        if x.summary.tokens != count(&x.summary.text) {
            wrong.push(format!("{} summary {}", x.id, x.summary.tokens));
        }
        if x.tokens != render::exchange_tokens(&x.messages, encoding) {
            wrong.push(format!("{} levels {:?}", x.id, x.tokens));
        }
    }
    for r in &view.references {
        if r.line.tokens != count(&r.line.text) {
            wrong.push(format!("{} reference {}", r.exchange, r.line.tokens));
        }
    }
    wrong
}

#[test]
fn every_view_count_equals_its_text_counted_in_either_encoding() {
    for (name, file) in common::recorded_files() {
        let t = common::open();
        let session = common::session(&t.store);
        // The main session's exchanges (the other sessions of a file are
        // forks and calls of it).
        let exchanges: Vec<Vec<Message>> = file
            .history(0)
            .into_iter()
            .map(|x| x.messages.clone())
            .collect();
        let half = exchanges.len() / 2;
        let mut checks = 0;
        for (i, x) in exchanges.into_iter().enumerate() {
            common::append(&t.store, &session, x).unwrap();
            if i + 1 != half {
                continue;
            }
            // The cl100k prompt counts what ingest left out, and the same
            // prompt again reads the counts it stored.
            let first = view(&t.store, &session, Encoding::Cl100kBase);
            assert_eq!(
                miscounts(&first, Encoding::Cl100kBase),
                Vec::<String>::new(),
                "{name}"
            );
            assert_eq!(
                first,
                view(&t.store, &session, Encoding::Cl100kBase),
                "{name}"
            );
            checks += 1;
        }
        // Later exchanges, and the open one grown by a message.
        common::append(
            &t.store,
            &session,
            vec![common::msg(Role::Assistant, "One more remark.")],
        )
        .unwrap();
        for encoding in Encoding::ALL {
            let v = view(&t.store, &session, encoding);
            assert!(!v.window.is_empty(), "{name}");
            assert_eq!(
                miscounts(&v, encoding),
                Vec::<String>::new(),
                "{name} {encoding:?}"
            );
            checks += 1;
        }
        assert!(checks >= 2, "{name}: {checks} checks");
    }
}

#[test]
fn a_prompt_in_another_encoding_for_an_unknown_session_names_it() {
    let t = common::open();
    let err = common::write(&t.store, |w| {
        w.assemble(
            "s-missing",
            Encoding::Cl100kBase,
            DEFAULT_BUDGET,
            None,
            Keep::Record,
            |_, _, _| Err::<AssembledPrompt<(), ()>, ()>(()),
        )
    })
    .unwrap_err();
    assert!(
        matches!(&err, StoreError::UnknownSession(s) if s == "s-missing"),
        "{err:?}"
    );
}

/// A history far past the budget is not loaded whole to find that out:
/// the view holds the packer's window, whichever encodings its exchanges
/// are counted in yet (ingest leaves cl100k uncounted).
#[test]
fn a_history_past_the_budget_loads_only_the_window() {
    let t = common::open();
    let session = common::session(&t.store);
    let words = "a long answer with many words in it ".repeat(60);
    for i in 0..200 {
        let x = vec![
            common::msg(Role::User, &format!("question {i}")),
            common::msg(Role::Assistant, &words),
        ];
        common::append(&t.store, &session, x).unwrap();
    }
    let (loaded, window) = look(&t.store, &session, Encoding::O200kBase, |view, caps| {
        (view.window.len() as u32, packer::window_len(caps))
    });
    assert!(window < 200, "the window is {window} exchanges");
    assert_eq!(loaded, window);
}

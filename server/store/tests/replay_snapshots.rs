//! Every recorded session replayed into a real store; each exchange's header,
//! summary, tool digests and superseder snapshotted, and every message and
//! blob read back byte for byte. A file of several sessions opens each fork
//! from its parent and snapshots each session's own exchanges.

mod common;

use ctxproxy_core::config::LayerCaps;
use ctxproxy_core::ids::{ExchangeId, MessageId};
use ctxproxy_core::message::Role;
use ctxproxy_core::secrets;
use ctxproxy_core::session_file::{Origin, Step};
use ctxproxy_core::summary::{self, ExchangeFacts, SeenTerms};
use ctxproxy_core::tokens::Encoding;
use ctxproxy_store::NewSession;

#[test]
fn recorded_sessions_snapshot_and_round_trip() {
    for (name, file) in common::recorded_files() {
        let t = common::open();
        let mut ids = vec![common::session(&t.store)];
        for step in &file.steps {
            match step {
                Step::Open(i) => {
                    let s = &file.sessions[*i];
                    // A child stores only its own exchanges, from x1: what
                    // this test checks of it is a fresh session's.
                    let parent = match s.origin {
                        Origin::Fork { from, at } => Some((ids[from].clone(), Some(at))),
                        Origin::Main | Origin::Child { .. } => None,
                    };
                    let title = s.title.clone();
                    let id = common::write(&t.store, move |w| {
                        w.open_session(NewSession {
                            title,
                            parent,
                            ..Default::default()
                        })
                    })
                    .unwrap();
                    ids.push(id);
                }
                Step::Exchange {
                    session, exchange, ..
                } => {
                    let (sid, messages) = (ids[*session].clone(), exchange.messages.clone());
                    let supersedes = exchange.supersedes.clone();
                    common::write(&t.store, move |w| {
                        w.append_to(&sid, messages, None, &supersedes)
                    })
                    .unwrap();
                }
            }
        }
        let several = file.sessions.len() > 1;
        let mut snapshot = String::new();
        t.store
            .read_now(|r| {
                let mut current = None;
                for (s, id, x) in file.exchanges().collect::<Vec<_>>() {
                    let session = &ids[s];
                    let appended = &x.messages;
                    if several && current != Some(s) {
                        snapshot.push_str(&format!("# session {}\n\n", file.sessions[s].name));
                        current = Some(s);
                    }
                    let e = r.exchange(session, id)?;
                    snapshot.push_str(&format!(
                        "## {id} ({})\nheader: {}\nsummary: {}\n",
                        e.outcome.as_str(),
                        e.header,
                        e.summary
                    ));
                    if let Some(by) = e.superseded_by {
                        snapshot.push_str(&format!("superseded by {by}\n"));
                    }
                    for k in r.kept_messages(session, id)? {
                        if let Some(res) = &k.result {
                            snapshot.push_str(&format!("digest {}:\n{}\n", k.id, res.digest));
                        }
                    }
                    snapshot.push('\n');
                    for (j, sent) in appended.iter().enumerate() {
                        let mid = MessageId {
                            exchange: id,
                            index: j as u32 + 1,
                        };
                        let got = r.message(session, mid)?;
                        let expected = secrets::mask_message(sent.clone());
                        assert_eq!(
                            got.message, expected,
                            "{name} {mid} differs from what was appended"
                        );
                        if let Some(hash) = got.blob {
                            assert_eq!(sent.role, Role::Tool);
                            assert_eq!(
                                r.blob(&hash.to_hex()[..12])?.text,
                                expected.content,
                                "{name} blob of {mid}"
                            );
                        }
                    }
                }
                Ok(())
            })
            .unwrap();
        for session in &ids {
            headers_are_made_from_what_the_store_reads_back(&t.store, session, &name);
        }
        insta::assert_snapshot!(format!("replay_{name}"), snapshot);
    }
}

/// Every stored header is the one its exchange's messages, read back, give
/// against its peers: the exchanges before it, and for the first ones the
/// ones after it too (no prompt was assembled, so none stayed as shown).
/// So the headers made again after later appends come from the same facts
/// as the ones the appends made, and the terms the store keeps for the
/// next headers are the ones its exchanges have (one line each).
fn headers_are_made_from_what_the_store_reads_back(
    store: &ctxproxy_store::Store,
    session: &str,
    name: &str,
) {
    store
        .read_now(|r| {
            let count = r.session(session)?.exchanges;
            let facts: Vec<ExchangeFacts> = (1..=count)
                .map(|seq| {
                    Ok(ExchangeFacts::of(
                        &r.kept_messages(session, ExchangeId(seq))?,
                    ))
                })
                .collect::<ctxproxy_store::Result<_>>()?;
            let terms: Vec<Vec<String>> = facts.iter().map(ExchangeFacts::terms).collect();
            for (at, f) in facts.iter().enumerate() {
                let seen = match at < summary::HEADER_PEERS as usize {
                    true => SeenTerms::around(&terms, at),
                    false => SeenTerms::of(terms[..at].iter().map(Vec::as_slice)),
                };
                let cap = LayerCaps::default().header_max;
                let made = summary::header(f, &seen, cap, Encoding::O200kBase);
                let stored = r.exchange(session, ExchangeId(at as u32 + 1))?.header;
                assert_eq!(made.text, stored, "{name} {session} x{}", at + 1);
                assert!(!stored.contains('\n'), "{name} x{}: {stored:?}", at + 1);
            }
            Ok(())
        })
        .unwrap();
}

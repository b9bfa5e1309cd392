//! The store on real SQLite files: grouping, dedup, blob files and their
//! verification, forks, housekeeping, search, prompts, and reopening.

mod common;

use common::{call, msg, result, write};
use ctxproxy_core::config::DEFAULT_BUDGET;
use ctxproxy_core::context::Housekeeping;
use ctxproxy_core::ids::{ExchangeId, MessageId, PromptId};
use ctxproxy_core::message::{Message, Role};
use ctxproxy_store::prompt_record::{self, PackedRecord, RecordRequest, Recorded};
use ctxproxy_store::{
    AssembledPrompt, ChildCall, Event, IngestSettings, NewSession, ParentKind, ParentLink,
    SearchReach, Store, StoreError,
};

fn x(n: u32) -> ExchangeId {
    ExchangeId(n)
}

#[test]
fn user_messages_open_exchanges_and_later_messages_continue_them() {
    let t = common::open();
    let s = common::session(&t.store);
    let out = common::append(
        &t.store,
        &s,
        vec![
            msg(Role::User, "first"),
            msg(Role::Assistant, "a1"),
            msg(Role::User, "second"),
        ],
    )
    .unwrap();
    assert_eq!(out.exchanges, vec![x(1), x(2)]);
    let out = common::append(&t.store, &s, vec![msg(Role::Assistant, "a2")]).unwrap();
    assert_eq!(
        out.exchanges,
        vec![x(2)],
        "an assistant message continues the open exchange"
    );
    let list = t.store.read_now(|r| r.exchanges(&s, 1, 10)).unwrap();
    assert_eq!(list.len(), 2);
    let m = t
        .store
        .read_now(|r| {
            r.message(
                &s,
                MessageId {
                    exchange: x(2),
                    index: 2,
                },
            )
        })
        .unwrap();
    assert_eq!(m.message.content, "a2");
}

#[test]
fn identical_bytes_are_stored_once_and_reported_as_duplicates() {
    let t = common::open();
    let s = common::session(&t.store);
    let output = "line\n".repeat(50);
    let batch = |o: String| {
        vec![
            msg(Role::User, "read it"),
            call("c1", "read_file", r#"{"path":"src/a.rs"}"#),
            result("c1", "read_file", &o),
        ]
    };
    let (s1, o1) = (s.clone(), output.clone());
    let first = write(&t.store, move |w| w.append(&s1, batch(o1))).unwrap();
    let (s1, o1) = (s.clone(), output.clone());
    let second = write(&t.store, move |w| w.append(&s1, batch(o1))).unwrap();
    assert_eq!(first.blobs[0].duplicate_of, None);
    assert_eq!(second.blobs[0].duplicate_of.as_deref(), Some("x1.3"));
    assert_eq!(first.blobs[0].hash, second.blobs[0].hash);
    let stats = t.store.read_now(|r| r.stats(None)).unwrap();
    assert_eq!((stats.blobs, stats.duplicate_hits), (1, 1));
    assert_eq!(stats.appended_bytes, 2 * output.len() as u64);
    let kept = t.store.read_now(|r| r.kept_messages(&s, x(2))).unwrap();
    assert!(
        kept[2]
            .result
            .as_ref()
            .unwrap()
            .headline
            .contains("unchanged since x1"),
        "{:?}",
        kept[2].result
    );
}

#[test]
fn large_blobs_live_in_files_and_corruption_is_detected() {
    let t = common::open();
    let s = common::session(&t.store);
    // Incompressible enough to stay over the inline limit after zstd.
    let big: String = (0..40_000u32)
        .map(|i| format!("{:08x}\n", i.wrapping_mul(2_654_435_761)))
        .collect();
    let (s1, b1) = (s.clone(), big.clone());
    let out = write(&t.store, move |w| {
        w.append(
            &s1,
            vec![
                msg(Role::User, "run"),
                call("c", "run_command", r#"{"command":"od"}"#),
                result("c", "run_command", &b1),
            ],
        )
    })
    .unwrap();
    let hash = out.blobs[0].hash;
    let stats = t.store.read_now(|r| r.stats(None)).unwrap();
    assert_eq!(stats.blob_files, 1);
    assert_eq!(
        t.store.read_now(|r| r.blob(&hash.to_hex())).unwrap().text,
        big
    );
    let hex = hash.to_hex();
    let file = t.dir.path().join("blobs").join(&hex[..2]).join(&hex);
    let mut bytes = std::fs::read(&file).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&file, bytes).unwrap();
    let err = t.store.read_now(|r| r.blob(&hex[..10])).unwrap_err();
    // The damage is named with the store's path and the blob.
    let StoreError::Damaged { path, source } = &err else {
        panic!("expected Damaged, got {err}")
    };
    assert_eq!(path, &t.store.db_path().to_path_buf());
    // The damage keeps the error that showed it.
    assert!(
        matches!(**source, StoreError::BlobCorrupt { .. }),
        "{source:?}"
    );
    assert!(
        source
            .to_string()
            .contains(&format!("blob b3:{}", &hex[..12])),
        "{source}"
    );
}

#[test]
fn binary_output_is_kept_byte_for_byte_and_described() {
    let t = common::open();
    let s = common::session(&t.store);
    // A gzip header and bytes that are not UTF-8, over the inline limit.
    let mut bytes = vec![0x1f, 0x8b, 0x08, 0x00];
    bytes.extend((0..200_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    let mut binary = result("c", "run_command", "");
    binary.raw = Some(bytes.clone());
    let s1 = s.clone();
    let out = write(&t.store, move |w| {
        w.append(
            &s1,
            vec![
                msg(Role::User, "show the archive"),
                call("c", "run_command", r#"{"command":"cat out.tar.gz"}"#),
                binary,
            ],
        )
    })
    .unwrap();
    let hash = out.blobs[0].hash;
    assert_eq!(out.blobs[0].bytes, 200_004);
    let blob = t.store.read_now(|r| r.blob(&hash.to_hex())).unwrap();
    assert_eq!(blob.raw.as_deref(), Some(&bytes[..]));
    assert_eq!(blob.text, "");
    assert_eq!(blob.bytes, 200_004);
    let id = MessageId {
        exchange: ExchangeId(1),
        index: 3,
    };
    let item = t.store.read_now(|r| r.message(&s, id)).unwrap();
    assert_eq!(item.message.raw.as_deref(), Some(&bytes[..]));
    // The conversation keeps the digest: size and type, not the bytes.
    let exchange = t
        .store
        .read_now(|r| r.exchange_full_text(&s, ExchangeId(1)))
        .unwrap();
    assert!(
        exchange.contains("out.tar.gz: binary, 200004 bytes, gzip compressed data"),
        "{exchange}"
    );
}

#[test]
fn blob_prefixes_resolve_or_fail_clearly() {
    let t = common::open();
    let s = common::session(&t.store);
    let out = common::append(
        &t.store,
        &s,
        vec![
            msg(Role::User, "q"),
            call("c", "grep", "{}"),
            result("c", "grep", "src/a.rs:1:fn main"),
        ],
    )
    .unwrap();
    let hex = out.blobs[0].hash.to_hex();
    assert_eq!(
        t.store.read_now(|r| r.blob(&hex[..8])).unwrap().text,
        "src/a.rs:1:fn main"
    );
    let missing = if hex.starts_with("0000") {
        "ffffffff"
    } else {
        "00000000"
    };
    assert!(matches!(
        t.store.read_now(|r| r.blob(missing)),
        Err(StoreError::UnknownId(_))
    ));
}

#[test]
fn a_failed_append_stores_nothing() {
    let t = common::open();
    let s = common::session(&t.store);
    let err = write(&t.store, |w| {
        w.append("s-missing", vec![msg(Role::User, "x")])
    })
    .unwrap_err();
    assert!(matches!(err, StoreError::UnknownSession(_)));
    let stats = t.store.read_now(|r| r.stats(None)).unwrap();
    assert_eq!(stats.exchanges, 0);
    let _ = s;
}

#[test]
fn forks_share_history_up_to_the_fork_point_then_diverge() {
    let t = common::open();
    let parent = common::session(&t.store);
    common::append(
        &t.store,
        &parent,
        vec![
            msg(Role::User, "one"),
            msg(Role::User, "two"),
            msg(Role::User, "three"),
        ],
    )
    .unwrap();
    let p1 = parent.clone();
    let child = write(&t.store, move |w| {
        w.open_session(NewSession {
            parent: Some((p1, Some(2))),
            ..Default::default()
        })
    })
    .unwrap();
    common::append(&t.store, &child, vec![msg(Role::User, "child three")]).unwrap();
    let text = |s: &str, n| {
        t.store
            .read_now(|r| {
                r.message(
                    s,
                    MessageId {
                        exchange: x(n),
                        index: 1,
                    },
                )
            })
            .unwrap()
            .message
            .content
    };
    assert_eq!(text(&child, 1), "one");
    assert_eq!(text(&child, 2), "two");
    assert_eq!(text(&child, 3), "child three");
    assert_eq!(text(&parent, 3), "three");
    let listing = t.store.read_now(|r| r.session(&child)).unwrap();
    assert_eq!(
        listing.parent,
        Some(ParentLink {
            session: parent.clone(),
            at_exchange: 2,
            kind: ParentKind::Fork
        })
    );
    let hits = t
        .store
        .read_now(|r| r.search(Some(&child), SearchReach::Session, None, "two", 5))
        .unwrap();
    assert_eq!(
        hits.iter().map(|h| h.exchange).collect::<Vec<_>>(),
        vec![x(2)]
    );
    let p1 = parent.clone();
    let err = write(&t.store, move |w| {
        w.open_session(NewSession {
            parent: Some((p1, Some(9))),
            ..Default::default()
        })
    })
    .unwrap_err();
    assert!(matches!(err, StoreError::Invalid(_)), "{err}");
}

#[test]
fn a_child_call_starts_fresh_one_deeper_and_stops_at_max_depth() {
    let t = common::open();
    let root = common::session(&t.store);
    common::append(
        &t.store,
        &root,
        vec![msg(Role::User, "which functions raise ValueError?")],
    )
    .unwrap();
    let open_child = |parent: &str, at: Option<u32>| {
        let parent = parent.to_string();
        write(&t.store, move |w| {
            w.open_session(NewSession {
                parent: Some((parent, at)),
                child: Some(ChildCall {
                    query: "the textwrap part".into(),
                    context: Some("def wrap(): ...".into()),
                    max_depth: 2,
                }),
                ..Default::default()
            })
        })
    };
    let c1 = open_child(&root, None).unwrap();
    let c1a = open_child(&c1, Some(0)).unwrap();
    let listing = t.store.read_now(|r| r.session(&c1a)).unwrap();
    assert_eq!(listing.depth, 2);
    assert_eq!(listing.exchanges, 0, "a child inherits no history");
    assert_eq!(
        listing.parent,
        Some(ParentLink {
            session: c1.clone(),
            at_exchange: 0,
            kind: ParentKind::Child
        })
    );
    let at_c1 = t.store.read_now(|r| r.session(&c1)).unwrap();
    assert_eq!(
        at_c1.parent.map(|p| p.at_exchange),
        Some(1),
        "the parent's newest exchange"
    );
    let err = open_child(&c1a, None).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("invalid request: parent.sessionId: session {c1a} is at depth 2; a session at depth 2 = maxDepth 2 makes no further calls")
    );
    // A fork of a child is as deep as the child.
    let c1a2 = c1a.clone();
    let fork = write(&t.store, move |w| {
        w.open_session(NewSession {
            parent: Some((c1a2, None)),
            ..Default::default()
        })
    })
    .unwrap();
    assert_eq!(t.store.read_now(|r| r.session(&fork)).unwrap().depth, 2);
    let orphan = write(&t.store, |w| {
        w.open_session(NewSession {
            child: Some(ChildCall::default()),
            ..Default::default()
        })
    })
    .unwrap_err();
    assert!(
        orphan
            .to_string()
            .contains("child: a child call needs `parent`"),
        "{orphan}"
    );
}

#[test]
fn housekeeping_replaces_header_and_summary_and_survives_growth() {
    let t = common::open();
    let s = common::session(&t.store);
    common::append(
        &t.store,
        &s,
        vec![
            msg(Role::User, "fix the parser"),
            msg(Role::Assistant, "done"),
        ],
    )
    .unwrap();
    let s1 = s.clone();
    write(&t.store, move |w| {
        w.housekeeping(
            &s1,
            Housekeeping {
                exchange: x(1),
                header: Some("parser fixed in src/parse.rs".into()),
                summary: Some("Fixed the off-by-one in parse_line.".into()),
                key_decisions: vec!["keep the old API".into()],
                code_changes: vec![],
                open_questions: vec![],
                current_context: Some("Working on the parser.".into()),
            },
        )
    })
    .unwrap();
    common::append(&t.store, &s, vec![msg(Role::Assistant, "one more thing")]).unwrap();
    let e = t.store.read_now(|r| r.exchange(&s, x(1))).unwrap();
    assert_eq!(e.header, "parser fixed in src/parse.rs");
    assert_eq!(e.summary_source, "model");
    assert!(e.summary.contains("keep the old API"), "{}", e.summary);
    let hits = t
        .store
        .read_now(|r| r.search(Some(&s), SearchReach::Session, None, "parser", 5))
        .unwrap();
    assert_eq!(hits.len(), 1);
    let s1 = s.clone();
    let err = write(&t.store, move |w| {
        w.housekeeping(
            &s1,
            Housekeeping {
                exchange: x(7),
                header: None,
                summary: None,
                key_decisions: vec![],
                code_changes: vec![],
                open_questions: vec![],
                current_context: None,
            },
        )
    })
    .unwrap_err();
    assert!(matches!(err, StoreError::UnknownId(_)));
}

/// A reasoner's step: every ask opens with the same tag and problem.
fn ask(focus: &str) -> Vec<Message> {
    vec![
        msg(
            Role::User,
            &format!("[ANALYZE · focus: {focus}] Problem: Solve x^3 - 3x^2 + x - 10 = 0."),
        ),
        msg(Role::Assistant, "Analysis: done."),
    ]
}

/// A record of a prompt with nothing packed, numbered `id`.
fn empty_record(id: PromptId) -> PackedRecord<(), ()> {
    PackedRecord {
        version: prompt_record::VERSION,
        request: RecordRequest {
            prompt_id: id.to_string(),
            session_id: String::new(),
            budget: DEFAULT_BUDGET,
            encoding: Default::default(),
            format: (),
            order: Default::default(),
            prefix_reused: 0,
            client_tools_tokens: 0,
            state: (),
        },
        total: 10,
        layers: Vec::new(),
        trimmed: Vec::new(),
        superseded: Vec::new(),
        recall: Vec::new(),
        shape: Default::default(),
        reason: None,
        tools: Vec::new(),
        messages: Vec::new(),
    }
}

/// Records a prompt of `session` that shows `headers` as header lines, as
/// an assemble would.
fn record_prompt(store: &Store, session: &str, headers: Vec<ExchangeId>) {
    let session = session.to_string();
    write(store, move |w| {
        w.assemble(
            &session,
            Default::default(),
            DEFAULT_BUDGET,
            None,
            ctxproxy_store::Keep::Record,
            |id, _, _| {
                Ok::<_, ()>(AssembledPrompt {
                    record: empty_record(id),
                    headers,
                })
            },
        )
    })
    .unwrap()
    .unwrap();
}

#[test]
fn the_first_headers_learn_what_the_session_repeats_until_a_prompt_shows_them() {
    let t = common::open();
    let s = common::session(&t.store);
    let header = |seq: u32| t.store.read_now(|r| r.exchange(&s, x(seq))).unwrap().header;
    common::append(&t.store, &s, ask("rational candidates")).unwrap();
    assert!(header(1).contains("Problem"), "{}", header(1));
    // Once three exchanges follow that open the same way, x1's header
    // names what only x1 asked about.
    let mut revised = Vec::new();
    for focus in ["sign changes", "discriminant", "bisection"] {
        let out = common::append(&t.store, &s, ask(focus)).unwrap();
        revised.extend(out.events.into_iter().filter_map(|e| match e {
            Event::SummaryUpdated { exchange, .. } => Some(exchange),
            _ => None,
        }));
    }
    // Each append says which headers it made again, as it says its own.
    assert!(revised.contains(&x(1)), "{revised:?}");
    let first = header(1);
    assert!(
        first.contains("rational") && !first.contains("Problem"),
        "{first}"
    );
    let hits = t
        .store
        .read_now(|r| {
            r.search(
                Some(&s),
                SearchReach::Session,
                None,
                "rational candidates",
                5,
            )
        })
        .unwrap();
    assert_eq!(hits.first().map(|h| h.exchange), Some(x(1)), "{hits:?}");
    // A header the newest prompt shows stays as that prompt showed it.
    let shown = header(2);
    record_prompt(&t.store, &s, vec![x(2)]);
    // Two more on sign changes would make x2's words common.
    for focus in ["sign changes, again", "sign changes, bisected"] {
        common::append(&t.store, &s, ask(focus)).unwrap();
    }
    assert_eq!(header(2), shown);
}

#[test]
fn a_prompt_that_does_not_say_which_headers_it_shows_leaves_every_header_as_it_is() {
    let t = common::open();
    let s = common::session(&t.store);
    common::append(&t.store, &s, ask("rational candidates")).unwrap();
    // A prompt recorded before the store kept which headers it shows.
    record_prompt(&t.store, &s, vec![]);
    let db = rusqlite::Connection::open(t.dir.path().join("store.db")).unwrap();
    db.execute("UPDATE prompts SET headers = NULL", []).unwrap();
    let before = t.store.read_now(|r| r.exchange(&s, x(1))).unwrap().header;
    for focus in ["sign changes", "discriminant", "bisection"] {
        common::append(&t.store, &s, ask(focus)).unwrap();
    }
    let after = t.store.read_now(|r| r.exchange(&s, x(1))).unwrap().header;
    assert_eq!(after, before);
}

#[test]
fn prompts_are_numbered_and_recorded_and_refusals_record_nothing() {
    let t = common::open();
    let s = common::session(&t.store);
    common::append(&t.store, &s, vec![msg(Role::User, "hello")]).unwrap();
    for expected in ["p1", "p2"] {
        let s1 = s.clone();
        let recorded = write(&t.store, move |w| {
            w.assemble(
                &s1,
                Default::default(),
                DEFAULT_BUDGET,
                None,
                ctxproxy_store::Keep::Record,
                |id, view, _| {
                    assert_eq!(view.exchange_count, 1);
                    Ok::<_, ()>(AssembledPrompt {
                        record: empty_record(id),
                        headers: Vec::new(),
                    })
                },
            )
        })
        .unwrap()
        .unwrap();
        assert_eq!(recorded.request.prompt_id, expected);
    }
    let s1 = s.clone();
    let refused = write(&t.store, move |w| {
        w.assemble(
            &s1,
            Default::default(),
            DEFAULT_BUDGET,
            None,
            ctxproxy_store::Keep::Record,
            |_, _, _| Err::<AssembledPrompt<(), ()>, _>("too small"),
        )
    })
    .unwrap();
    assert_eq!(refused.unwrap_err(), "too small");
    let prompts = t.store.read_now(|r| r.prompts(&s)).unwrap();
    let read: Vec<PackedRecord<(), ()>> = prompts
        .iter()
        .map(|p| match Recorded::parse(&p.record).unwrap() {
            Recorded::Packed(record) => *record,
            Recorded::Unversioned(json) => panic!("unversioned: {json}"),
        })
        .collect();
    assert_eq!(read, [empty_record(PromptId(1)), empty_record(PromptId(2))]);
}

#[test]
fn everything_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested").join("store.db");
    let s = {
        let store = Store::open(&path, IngestSettings::default()).unwrap();
        let s = common::session(&store);
        common::append(
            &store,
            &s,
            vec![
                msg(Role::User, "kept"),
                call("c", "ls", "{}"),
                result("c", "ls", "a\nb\n"),
            ],
        )
        .unwrap();
        s
    };
    let store = Store::open(&path, IngestSettings::default()).unwrap();
    let m = store
        .read_now(|r| {
            r.message(
                &s,
                MessageId {
                    exchange: x(1),
                    index: 3,
                },
            )
        })
        .unwrap();
    assert_eq!(m.message.content, "a\nb\n");
    assert_eq!(store.read_now(|r| r.sessions(None)).unwrap().len(), 1);
}

#[test]
fn secrets_are_masked_before_storage_unless_turned_off() {
    let key = "AKIAIOSFODNN7EXAMPLE";
    for redact in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let settings = IngestSettings {
            redact_secrets: redact,
            ..IngestSettings::default()
        };
        let store = Store::open(&dir.path().join("s.db"), settings).unwrap();
        let s = common::session(&store);
        let s1 = s.clone();
        let text = format!("export AWS_ACCESS_KEY_ID={key}\n");
        write(&store, move |w| {
            w.append(
                &s1,
                vec![
                    msg(Role::User, "env"),
                    call("c", "run_command", "{}"),
                    result("c", "run_command", &text),
                ],
            )
        })
        .unwrap();
        let m = store
            .read_now(|r| {
                r.message(
                    &s,
                    MessageId {
                        exchange: x(1),
                        index: 3,
                    },
                )
            })
            .unwrap();
        assert_eq!(
            m.message.content.contains(key),
            !redact,
            "redact={redact}: {}",
            m.message.content
        );
        let db = std::fs::read(dir.path().join("s.db")).unwrap();
        let wal = std::fs::read(dir.path().join("s.db-wal")).unwrap_or_default();
        let raw_hit = |b: &[u8]| b.windows(key.len()).any(|w| w == key.as_bytes());
        if redact {
            assert!(
                !raw_hit(&db) && !raw_hit(&wal),
                "the key reached the database file"
            );
        }
    }
}

#[test]
fn errors_name_the_path_and_operation_and_keep_their_source() {
    use std::error::Error;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    let err = Store::open(&file.join("store.db"), IngestSettings::default())
        .err()
        .expect("a store under a file cannot be made");
    assert!(
        err.to_string().starts_with(&format!(
            "cannot create the store directory {}",
            file.display()
        )),
        "{err}"
    );
    let source = err.source().expect("the io::Error is kept");
    assert!(
        source.downcast_ref::<std::io::Error>().is_some(),
        "{source:?}"
    );

    // A file that is not a database: damage, named with the path.
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![7u8; 8192]).unwrap();
    let err = Store::open(&junk, IngestSettings::default())
        .err()
        .expect("junk is no store");
    assert!(err.is_damage(), "{err:?}");
    assert!(
        err.to_string()
            .contains(&format!("the store {} is damaged", junk.display())),
        "{err}"
    );
}

#[test]
fn a_search_hit_carries_the_words_around_its_match_in_the_raw_output() {
    let t = common::open();
    let s = common::session(&t.store);
    let listing: String = (0..400)
        .map(|i| format!("src/module_{i}/file_{i}.rs\n"))
        .chain(["binary file matches: blob.bin: NUL byte at offset 19\n".to_string()])
        .collect();
    common::append(
        &t.store,
        &s,
        vec![
            msg(Role::User, "search the tree for long lines"),
            call("c1", "run_command", r#"{"command": "rg -n long"}"#),
            result("c1", "run_command", &listing),
            msg(Role::Assistant, "Done."),
        ],
    )
    .unwrap();
    let hits = t
        .store
        .read_now(|r| {
            r.search(
                Some(&s),
                SearchReach::Session,
                None,
                "offset of the NUL byte",
                5,
            )
        })
        .unwrap();
    assert_eq!(hits.len(), 1);
    let snippet = &hits[0].snippet;
    assert!(snippet.contains("NUL byte at offset 19"), "{snippet}");
    assert!(!snippet.contains('\n') && snippet.len() < 400, "{snippet}");
    // Words match by their stem: "offsets" and "matching" find "offset"
    // and "matches".
    let stemmed = t
        .store
        .read_now(|r| r.search(Some(&s), SearchReach::Session, None, "offsets matching", 5))
        .unwrap();
    assert_eq!(stemmed.len(), 1);
}

#[test]
fn a_header_counts_as_much_whatever_the_size_of_its_exchanges_output() {
    let t = common::open();
    let s = common::session(&t.store);
    // x1 is about the zanzibar deploy config and read 2,000 lines of it;
    // x2 ran the tests, one of whose names has the same words.
    let config: String = (0..2000)
        .map(|i| format!("listen_port_{i} = {}\n", 8000 + i))
        .collect();
    common::append(
        &t.store,
        &s,
        vec![
            msg(Role::User, "Show me the zanzibar deploy config."),
            call("c1", "read_file", r#"{"path": "deploy/zanzibar.conf"}"#),
            result("c1", "read_file", &config),
            msg(
                Role::Assistant,
                "The zanzibar deploy config opens 2,000 ports.",
            ),
        ],
    )
    .unwrap();
    common::append(
        &t.store,
        &s,
        vec![
            msg(Role::User, "Run the unit tests."),
            call("c2", "run_command", r#"{"command": "cargo test"}"#),
            result(
                "c2",
                "run_command",
                "running 2 tests\ntest parse_zanzibar_deploy_config ... ok\ntest parse_ports ... ok\n\ntest result: ok. 2 passed; 0 failed\n",
            ),
            msg(Role::Assistant, "All pass."),
        ],
    )
    .unwrap();
    // Other exchanges, so that the three words are rare in the session.
    for i in 0..6 {
        common::append(
            &t.store,
            &s,
            vec![
                msg(Role::User, &format!("Fix lint warning {i} in the parser.")),
                msg(Role::Assistant, &format!("Fixed warning {i}.")),
            ],
        )
        .unwrap();
    }
    let hits = t
        .store
        .read_now(|r| {
            r.search(
                Some(&s),
                SearchReach::Session,
                None,
                "zanzibar deploy config",
                5,
            )
        })
        .unwrap();
    let order: Vec<ExchangeId> = hits.iter().map(|h| h.exchange).collect();
    assert_eq!(order, [x(1), x(2)], "{hits:?}");
    // The snippet of a match in the body is the body's, around the match.
    assert!(
        hits[1]
            .snippet
            .contains("parse_zanzibar_deploy_config ... ok"),
        "{hits:?}"
    );
}

/// An append's tool results are prepared together before they are stored
/// in order; what is kept must be what appending one exchange at a time
/// keeps: re-reads of a path within the append (changed, then unchanged),
/// the same bytes twice (a duplicate), and an exchange continued later.
#[test]
fn one_append_keeps_tool_results_as_appends_one_by_one_do() {
    let source = |n: usize| {
        (0..n)
            .map(|i| format!("pub fn f{i}(x: u32) -> u32 {{ x + {i} }}\n"))
            .collect::<String>()
    };
    let read = |id: &str, path: &str, text: &str| {
        vec![
            msg(Role::User, &format!("read {path}")),
            call(id, "read_file", &format!(r#"{{"path":"{path}"}}"#)),
            result(id, "read_file", text),
        ]
    };
    let exchanges = [
        read("c1", "src/a.rs", &source(300)),
        read("c2", "src/a.rs", &source(310)),
        read("c3", "src/a.rs", &source(310)),
        read("c4", "src/b.rs", &source(300)),
    ];
    let later = vec![
        call("c5", "read_file", r#"{"path":"src/b.rs"}"#),
        result("c5", "read_file", &source(5)),
    ];
    let together = common::open();
    let one_by_one = common::open();
    let (s1, s2) = (
        common::session(&together.store),
        common::session(&one_by_one.store),
    );
    let mut outcomes = (Vec::new(), Vec::new());
    outcomes
        .0
        .push(common::append(&together.store, &s1, exchanges.concat()).unwrap());
    for e in &exchanges {
        outcomes
            .1
            .push(common::append(&one_by_one.store, &s2, e.clone()).unwrap());
    }
    outcomes
        .0
        .push(common::append(&together.store, &s1, later.clone()).unwrap());
    outcomes
        .1
        .push(common::append(&one_by_one.store, &s2, later).unwrap());
    let blobs = |o: &[ctxproxy_store::AppendOutcome]| -> Vec<_> {
        o.iter().flat_map(|o| o.blobs.clone()).collect()
    };
    assert_eq!(blobs(&outcomes.0), blobs(&outcomes.1));
    assert_eq!(
        blobs(&outcomes.0)[3].duplicate_of.as_deref(),
        Some("x1.3"),
        "x4 read x1's bytes"
    );
    for n in 1..=4 {
        let kept = |t: &common::TempStore, s: &str| {
            t.store.read_now(|r| r.kept_messages(s, x(n))).unwrap()
        };
        assert_eq!(kept(&together, &s1), kept(&one_by_one, &s2), "x{n}");
    }
    let headline = |n: u32, i: usize| {
        let kept = together
            .store
            .read_now(|r| r.kept_messages(&s1, x(n)))
            .unwrap();
        kept[i].result.as_ref().unwrap().headline.clone()
    };
    assert!(
        headline(2, 2).contains("changed since x1: +10 -0 lines"),
        "{}",
        headline(2, 2)
    );
    assert!(
        headline(3, 2).contains("unchanged since x2"),
        "{}",
        headline(3, 2)
    );
    assert!(
        headline(4, 4).contains("changed since x4"),
        "{}",
        headline(4, 4)
    );
}

#[test]
fn an_append_at_a_tip_stores_only_while_the_session_still_ends_there() {
    use ctxproxy_store::{AppendedAt, Tip};

    let t = common::open();
    let s = common::session(&t.store);
    let tip = |s: &str| {
        let s = s.to_string();
        t.store.read_now(move |r| r.tip(&s)).unwrap()
    };
    assert_eq!(tip(&s), Tip(None));
    let (s1, s2) = (s.clone(), s.clone());
    let stored = write(&t.store, move |w| {
        w.append_at(
            &s1,
            Tip(None),
            vec![msg(Role::User, "first"), msg(Role::Assistant, "one")],
        )
    })
    .unwrap();
    let AppendedAt::Stored(outcome) = stored else {
        panic!("the session ended at its tip: stored")
    };
    let after_first = Tip(Some(MessageId {
        exchange: x(1),
        index: 2,
    }));
    assert_eq!((outcome.tip, tip(&s)), (after_first, after_first));
    // Another writer that still thinks the session is empty gets its messages back.
    let moved = write(&t.store, move |w| {
        w.append_at(&s2, Tip(None), vec![msg(Role::User, "first again")])
    })
    .unwrap();
    let AppendedAt::Moved(back) = moved else {
        panic!("the session had moved on: nothing stored")
    };
    assert_eq!(back[0].content, "first again");
    assert_eq!(tip(&s), after_first);
    // What it missed, read from where it last saw the session.
    let s3 = s.clone();
    let missed = t
        .store
        .read_now(move |r| r.session_messages_after(&s3, Tip(None)))
        .unwrap();
    let contents: Vec<&str> = missed.iter().map(|(_, m)| m.content.as_str()).collect();
    assert_eq!(contents, ["first", "one"]);
    let s4 = s.clone();
    let none = t
        .store
        .read_now(move |r| r.session_messages_after(&s4, after_first))
        .unwrap();
    assert!(none.is_empty());
}

#[test]
fn a_read_if_changed_elsewhere_is_skipped_after_own_writes_and_runs_after_another_process_commits()
{
    let t = common::open();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    // What a cache of the store reads again when someone else may have
    // changed it: here, how many sessions there are.
    let sessions = |store: &Store, seen| {
        runtime
            .block_on(store.read_if_changed_elsewhere(seen, |r| Ok(r.sessions(None)?.len())))
            .unwrap()
    };
    let (mark, read) = sessions(&t.store, None);
    assert_eq!(read, Some(0), "without a mark the read runs");
    let s = common::session(&t.store);
    common::append(
        &t.store,
        &s,
        vec![msg(Role::User, "first"), msg(Role::Assistant, "one")],
    )
    .unwrap();
    assert_eq!(
        sessions(&t.store, Some(mark)),
        (mark, None),
        "the store's own writes leave the mark where it was"
    );
    // Another process: a second handle on the file, with a writer of its own.
    let other = Store::open(&t.dir.path().join("store.db"), IngestSettings::default()).unwrap();
    common::session(&other);
    let (moved, read) = sessions(&t.store, Some(mark));
    assert_ne!(moved, mark, "another process committed");
    assert_eq!(read, Some(2));
    assert_eq!(sessions(&t.store, Some(moved)), (moved, None));
}

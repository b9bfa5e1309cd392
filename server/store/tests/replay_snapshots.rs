//! Every recorded session replayed into a real store; each exchange's header,
//! summary and tool digests snapshotted, and every message and blob read back
//! byte for byte.

mod common;

use ctxproxy_core::ids::{ExchangeId, MessageId};
use ctxproxy_core::message::Role;
use ctxproxy_core::secrets;

#[test]
fn recorded_sessions_snapshot_and_round_trip() {
    let mut paths: Vec<_> = std::fs::read_dir(common::fixtures_dir().join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 3, "expected the shipped recorded sessions");
    for path in paths {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let t = common::open();
        let session = common::session(&t.store);
        let exchanges = common::recorded(&path);
        for x in exchanges.clone() {
            common::append(&t.store, &session, x).unwrap();
        }
        let mut snapshot = String::new();
        t.store
            .read_now(|r| {
                for (i, appended) in exchanges.iter().enumerate() {
                    let id = ExchangeId(i as u32 + 1);
                    let e = r.exchange(&session, id)?;
                    snapshot.push_str(&format!(
                        "## {id} ({})\nheader: {}\nsummary: {}\n",
                        e.outcome.as_str(),
                        e.header,
                        e.summary
                    ));
                    for k in r.kept_messages(&session, id)? {
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
                        let got = r.message(&session, mid)?;
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
        insta::assert_snapshot!(format!("replay_{name}"), snapshot);
    }
}

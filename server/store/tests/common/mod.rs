//! Helpers shared by the store's integration tests: a store on a real SQLite
//! file in a temp dir, and recorded sessions read into core messages.

// Each test binary uses part of these helpers.
#![allow(dead_code)]

use std::path::Path;

use ctxproxy_core::message::{Message, Role, ToolCall};
use ctxproxy_store::{IngestSettings, NewSession, Store};

pub struct TempStore {
    pub store: Store,
    pub dir: tempfile::TempDir,
}

pub fn open() -> TempStore {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("store.db"), IngestSettings::default()).unwrap();
    TempStore { store, dir }
}

pub fn write<T: Send + 'static>(
    store: &Store,
    f: impl FnOnce(&mut ctxproxy_store::Writer) -> ctxproxy_store::Result<T> + Send + 'static,
) -> ctxproxy_store::Result<T> {
    store.write(f).blocking_recv().expect("writer answers")
}

/// Appends `messages` to `session` through the writer and waits.
pub fn append(
    store: &Store,
    session: &str,
    messages: Vec<Message>,
) -> ctxproxy_store::Result<ctxproxy_store::AppendOutcome> {
    let session = session.to_string();
    write(store, move |w| w.append(&session, messages))
}

pub fn session(store: &Store) -> String {
    write(store, |w| {
        w.open_session(NewSession {
            title: Some("test".into()),
            ..Default::default()
        })
    })
    .unwrap()
}

pub fn msg(role: Role, content: &str) -> Message {
    Message::new(role, content)
}

pub fn call(id: &str, name: &str, args: &str) -> Message {
    let mut m = Message::new(Role::Assistant, "");
    m.tool_calls.push(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    });
    m
}

pub fn result(id: &str, name: &str, content: &str) -> Message {
    let mut m = Message::new(Role::Tool, content);
    m.tool_call_id = Some(id.into());
    m.name = Some(name.into());
    m
}

pub fn fixtures_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// Every shipped recorded file (`fixtures/sessions/*.jsonl`), by name, with
/// its parsed sessions.
pub fn recorded_files() -> Vec<(String, ctxproxy_core::session_file::RecordedFile)> {
    let mut paths: Vec<_> = std::fs::read_dir(fixtures_dir().join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 3, "expected the shipped recorded sessions");
    paths
        .into_iter()
        .map(|path| {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).unwrap();
            let file = ctxproxy_core::session_file::parse_file(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (name, file)
        })
        .collect()
}

//! `pack()` on sessions of 100, 1,000 and 10,000 exchanges. The view holds
//! at most `max_headers` headers and `window_len` exchanges whatever the
//! session's length, so the time should stay flat.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

use ctxproxy_core::config::{LayerCaps, LayerOrder};
use ctxproxy_core::digest::OutputKind;
use ctxproxy_core::exchange::{KeptMessage, Level};
use ctxproxy_core::ids::{BlobHash, ExchangeId, MessageId};
use ctxproxy_core::message::{Message, Role, ToolCall};
use ctxproxy_core::packer::{pack, PackRequest};
use ctxproxy_core::render;
use ctxproxy_core::tokens::Encoding;
use ctxproxy_testkit::{kept, MemorySession, Output};

const ENC: Encoding = Encoding::O200kBase;

/// A coding exchange: ask, a file read with its digest, an edit, an answer.
fn exchange(id: u32) -> Vec<KeptMessage> {
    let path = format!("src/module_{}.rs", id % 37);
    let mut read = Message::new(
        Role::Assistant,
        format!("Reading {path} to find `parse_{id}()`."),
    );
    read.tool_calls.push(ToolCall {
        id: format!("r{id}"),
        name: "read_file".into(),
        arguments: format!(r#"{{"path":"{path}"}}"#),
    });
    let digest: String = (0..40)
        .map(|l| format!("{l:>4} fn parse_{id}_{l}(input: &str) -> Result<Ast, Error>\n"))
        .collect();
    let mut result = Message::new(Role::Tool, digest.clone());
    result.tool_call_id = Some(format!("r{id}"));
    result.name = Some("read_file".into());
    let mut edit = Message::new(Role::Assistant, "");
    edit.tool_calls.push(ToolCall {
        id: format!("e{id}"),
        name: "edit_file".into(),
        arguments: format!(r#"{{"path":"{path}","old":"a","new":"b"}}"#),
    });
    let mut edited = Message::new(Role::Tool, "ok");
    edited.tool_call_id = Some(format!("e{id}"));
    let messages = vec![
        Message::new(
            Role::User,
            format!("Fix the E0308 mismatch in {path}, exchange {id}."),
        ),
        read,
        result,
        edit,
        edited,
        Message::new(
            Role::Assistant,
            format!("Fixed: `parse_{id}()` now returns `Ast`. Next: run the tests?"),
        ),
    ];
    kept(id, messages, |at, _| Output {
        blob: BlobHash::of(format!("{}/{}", at.exchange.0, at.index - 1).as_bytes()),
        kind: OutputKind::FileRead,
        path: Some(path.clone()),
        bytes: 4_000,
        tokens: 1_000,
    })
}

fn bench_pack(c: &mut Criterion) {
    let caps = LayerCaps::default();
    let mut group = c.benchmark_group("pack");
    let mut session = MemorySession::new(caps.clone(), ENC);
    for size in [100u32, 1_000, 10_000] {
        while session.len() < size {
            let id = session.len() + 1;
            session.push(Some("2026-11-21T10:02:00Z".into()), exchange(id));
        }
        let view = session.view();
        let input = KeptMessage {
            id: MessageId {
                exchange: ExchangeId(size + 1),
                index: 1,
            },
            message: Message::new(Role::User, "Now run the tests and fix what fails."),
            result: None,
        };
        let req = PackRequest {
            budget: 16_000,
            encoding: ENC,
            order: LayerOrder::CacheStable,
            system: Some(render::counted_piece(
                "You are a careful coding assistant.",
                ENC,
            )),
            input_tokens: render::message_tokens(&input, Level::Full, ENC),
            input: Some(input),
            tools_tokens: render::tools_tokens(ENC),
            iteration: 1,
            whole_allowed: false,
            calls: Default::default(),
        };
        group.bench_with_input(BenchmarkId::from_parameter(size), &view, |b, view| {
            b.iter(|| pack(view, &req, &caps).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, bench_pack);
criterion_main!(benches);

//! `ctx/assemble`: turns request params into a packer request, runs the
//! packer on the writer's view and makes the prompt's record there; the
//! record becomes the wire result, formatted for the chosen API, after the
//! writer's job returns (`to_wire`, which `ctx/explain` reads it with too).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use ctxproxy_core::config::{CallLimits, Config, LayerCaps, LayerOrder};
use ctxproxy_core::exchange::{Counted, KeptMessage, Level};
use ctxproxy_core::ids::{ExchangeId, MessageId, PromptId};
use ctxproxy_core::message::{Message, Role};
use ctxproxy_core::packer::{self, PackError, PackRequest, PackedPrompt, ShapeKind};
use ctxproxy_core::render;
use ctxproxy_core::tokens::{self, Encoding};
use ctxproxy_core::view::SessionView;
use ctxproxy_store::prompt_record::{PackedRecord, RecordRequest, Recorded};
use ctxproxy_store::{AssembledPrompt, PromptRecord, StoreError};

use crate::api::{
    AssembleParams, AssembleResult, LayerItem, LayerReport, PromptTokens, RecallShown,
    StateEnvelope, SupersededRange, Trim,
};
use crate::error::ServiceError;
use crate::format::{self, Format};
use crate::state;

/// The previous prompt of each session, to measure prefix reuse.
#[derive(Default)]
pub struct LastPrompts(Mutex<HashMap<String, PackedPrompt>>);

impl LastPrompts {
    /// Whether this process assembled (and recorded) a prompt of `session`.
    pub fn remembers(&self, session: &str) -> bool {
        self.0
            .lock()
            .expect("last prompts lock")
            .contains_key(session)
    }
}

#[derive(Clone, Debug)]
pub struct Request {
    pub budget: u32,
    pub encoding: Encoding,
    pub order: LayerOrder,
    pub format: Format,
    pub system: Option<String>,
    pub input: Option<Message>,
    pub calls: CallLimits,
    /// `Config::whole_history`.
    pub whole_history: bool,
    /// `AssembleResult::client_tools_tokens`: the client's tool
    /// definitions, which the request sends besides the prompt.
    pub client_tools_tokens: u32,
}

impl Request {
    /// The question the recall block answers when the input opens a new
    /// exchange (a user message); `None` otherwise (the newest exchange's).
    pub fn question(&self) -> Option<&str> {
        self.input
            .as_ref()
            .filter(|m| m.role == Role::User)
            .map(|m| m.content.as_str())
    }

    pub fn from_params(p: &AssembleParams, config: &Config) -> Result<Request, ServiceError> {
        let input = match &p.input {
            Some(m) => Some(m.to_core("input")?),
            None => None,
        };
        let budget = p.budget.unwrap_or(config.budget);
        if budget == 0 {
            return Err(ServiceError::InvalidParams(
                "budget: must be at least 1".into(),
            ));
        }
        Ok(Request {
            budget,
            encoding: p.encoding.unwrap_or(config.encoding),
            order: p.order.unwrap_or(config.order),
            format: p.format.unwrap_or(Format::OpenAi),
            system: p.system.clone(),
            input,
            calls: config.calls.clone(),
            whole_history: config.whole_history,
            client_tools_tokens: 0,
        })
    }
}

/// A prompt as the packer made it, with what its record needs besides
/// the request: prefix reuse and the state envelope (which reads the view).
struct Packed {
    prompt: PackedPrompt,
    prefix_reused: u32,
    state: StateEnvelope,
}

/// The record of a prompt as the service keeps it: formatted for the API
/// asked for only when read (`to_wire`).
pub type Record = PackedRecord<Format, StateEnvelope>;

/// Packs one prompt and makes its record; runs on the store's writer
/// thread, and only packs: formatting waits until the job has returned.
/// `whole_so_far`: whether the session's newest prompt record has the
/// whole shape, or it has none; what decides whether this prompt may be
/// whole when `last` does not hold the previous prompt (the first prompt
/// after a restart, a preview).
pub fn run(
    id: PromptId,
    view: &SessionView,
    req: &Request,
    caps: &LayerCaps,
    last: &LastPrompts,
    whole_so_far: bool,
) -> Result<AssembledPrompt<Format, StateEnvelope>, ServiceError> {
    let mut previous = last.0.lock().expect("last prompts lock");
    let packed = pack(
        id,
        view,
        req,
        caps,
        previous.get(&view.session_id),
        whole_so_far,
    )?;
    let record = PackedRecord::new(
        &packed.prompt,
        RecordRequest {
            prompt_id: id.to_string(),
            session_id: view.session_id.clone(),
            budget: req.budget,
            encoding: req.encoding,
            format: req.format,
            order: req.order,
            prefix_reused: packed.prefix_reused,
            client_tools_tokens: req.client_tools_tokens,
            state: packed.state,
        },
    );
    let headers = packed.prompt.header_lines_shown();
    previous.insert(view.session_id.clone(), packed.prompt);
    Ok(AssembledPrompt { record, headers })
}

/// Packs one prompt against the session's previous one (`earlier`, for
/// prefix reuse and whether it may be whole).
fn pack(
    id: PromptId,
    view: &SessionView,
    req: &Request,
    caps: &LayerCaps,
    earlier: Option<&PackedPrompt>,
    whole_so_far: bool,
) -> Result<Packed, ServiceError> {
    let enc = req.encoding;
    let system = req.system.as_ref().map(|s| Counted {
        tokens: tokens::count(enc, s),
        text: s.clone(),
    });
    let input = req.input.as_ref().map(|m| KeptMessage {
        id: MessageId {
            exchange: ExchangeId(view.exchange_count + 1),
            index: 1,
        },
        message: m.clone(),
        result: None,
    });
    let input_tokens = input
        .as_ref()
        .map_or(0, |k| render::message_tokens(k, Level::Full, enc));
    let pack_request = PackRequest {
        budget: req.budget,
        encoding: enc,
        order: req.order,
        system,
        input,
        input_tokens,
        tools_tokens: tools_tokens(enc),
        iteration: id.0,
        calls: req.calls.clone(),
        whole_allowed: req.whole_history && packer::whole_allowed(earlier, whole_so_far),
    };
    let prompt = packer::pack(view, &pack_request, caps).map_err(|e| match e {
        PackError::BudgetTooSmall { .. } => ServiceError::BudgetTooSmall(e.to_string()),
    })?;
    let state = state::envelope(
        view,
        &state::Prompt {
            iteration: id.0,
            max_depth: req.calls.max_depth,
            tools: packer::offered_tools(prompt.tools_tokens),
            budget: req.budget,
            used: prompt.total,
            cap: caps.current_context_max,
            encoding: enc,
        },
    );
    Ok(Packed {
        prefix_reused: earlier.map_or(0, |prev| packer::shared_prefix_tokens(prev, &prompt)),
        prompt,
        state,
    })
}

/// The wire result of a prompt record, formatted for the API it was asked
/// for: what `ctx/assemble` answers and `ctx/explain` shows, computed here
/// only.
pub fn to_wire(record: &Record) -> AssembleResult {
    let tools = match record.tools.as_slice() {
        [] => serde_json::Value::Array(Vec::new()),
        _ => ctxproxy_core::context_tool::definitions(),
    };
    AssembleResult {
        prompt_id: record.request.prompt_id.clone(),
        session_id: record.request.session_id.clone(),
        budget: record.request.budget,
        encoding: record.request.encoding,
        format: record.request.format,
        order: record.request.order,
        tokens: PromptTokens {
            total: record.total + record.request.client_tools_tokens,
            layers: record
                .layers
                .iter()
                .map(|l| (l.layer.as_str().to_string(), l.tokens))
                .collect(),
        },
        prefix_reused: record.request.prefix_reused,
        client_tools_tokens: record.request.client_tools_tokens,
        trimmed: record
            .trimmed
            .iter()
            .map(|t| Trim {
                id: t.id.clone(),
                from: t.from,
                to: t.to,
                reason: t.reason.clone(),
            })
            .collect(),
        superseded: record
            .superseded
            .iter()
            .map(|s| SupersededRange {
                ids: s.ids.clone(),
                by: s.by.clone(),
            })
            .collect(),
        recall: record
            .recall
            .iter()
            .map(|hit| RecallShown {
                id: hit.exchange.clone(),
                words: hit.words.clone(),
                tokens: hit.tokens,
                text: hit.text.clone(),
            })
            .collect(),
        layers: record
            .layers
            .iter()
            .map(|l| LayerReport {
                layer: l.layer,
                tokens: l.tokens,
                items: l
                    .items
                    .iter()
                    .map(|i| LayerItem {
                        id: i.id.clone(),
                        format: i.format,
                        tokens: i.tokens,
                    })
                    .collect(),
            })
            .collect(),
        shape: record.shape,
        reason: record.reason.clone(),
        state: Some(record.request.state.clone()),
        prompt: format::prompt_fields(&record.prompt_messages(), &tools, record.request.format),
    }
}

/// The tool definitions never change: counted once per encoding, and only
/// in an encoding a prompt asks for (counting loads its tables).
fn tools_tokens(encoding: Encoding) -> u32 {
    static COUNTS: [OnceLock<u32>; 2] = [const { OnceLock::new() }; 2];
    let e = Encoding::ALL
        .iter()
        .position(|e| *e == encoding)
        .expect("known encoding");
    *COUNTS[e].get_or_init(|| render::tools_tokens(encoding))
}

/// Reads back a prompt record (`ctx/explain`, `show-prompt`) as its wire
/// result; one that does not parse is damage, named with the store's path.
/// A record from before records had a version is the wire result itself,
/// read with the defaults `AssembleResult` keeps for the oldest ones.
pub fn read_record(record: &PromptRecord, db_path: &Path) -> Result<AssembleResult, StoreError> {
    let unreadable = |e: &dyn std::fmt::Display| {
        StoreError::Unreadable(format!("prompt record {} unreadable: {e}", record.id))
            .at_store(db_path)
    };
    match Recorded::<Format, StateEnvelope>::parse(&record.record) {
        Ok(Recorded::Packed(packed)) => Ok(to_wire(&packed)),
        Ok(Recorded::Unversioned(json)) => serde_json::from_str(&json).map_err(|e| unreadable(&e)),
        Err(e) => Err(unreadable(&e)),
    }
}

/// The shape a prompt record was packed in, read without formatting the
/// prompt; `None` when the record does not read.
pub fn recorded_shape(record: &PromptRecord) -> Option<ShapeKind> {
    match Recorded::<Format, StateEnvelope>::parse(&record.record).ok()? {
        Recorded::Packed(packed) => Some(packed.shape),
        Recorded::Unversioned(json) => {
            let mut value: serde_json::Value = serde_json::from_str(&json).ok()?;
            serde_json::from_value(value.get_mut("shape")?.take()).ok()
        }
    }
}

/// Passes a packer refusal through as its own error, and formats what was
/// packed, off the writer thread.
pub fn flatten(
    r: Result<Result<Record, ServiceError>, StoreError>,
) -> Result<AssembleResult, ServiceError> {
    Ok(to_wire(&r.map_err(ServiceError::from)??))
}

//! Every `ctx/` request, independent of the transport: the LSP server and
//! `ctxproxy replay` both drive this, so replay behaves exactly as an editor.
//!
//! Ordering: each handler submits its store job before its first `.await`,
//! so state changes are applied in the order requests arrive.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ctxproxy_core::config::Config;
use ctxproxy_core::context::Housekeeping;
use ctxproxy_core::ids::{self, ExchangeId, ItemId, PromptId};
use ctxproxy_core::message::Message;
use ctxproxy_core::packer::ShapeKind;
use ctxproxy_core::slice;
use ctxproxy_core::tokens;
use ctxproxy_store::{
    settle, AppendOutcome, Event, Keep, Lineage, ParentKind, PathSegment, SearchReach, Store,
};
pub use ctxproxy_store::{ChildCall, Edge, NewSession};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::api::*;
use crate::assemble;
use crate::config;
pub use crate::error::ServiceError;
use crate::retrieve::{bytes_as_base64, retrieve_one, Body};
use crate::state;

/// A method's typed result.
pub type Reply<T> = Result<T, ServiceError>;

/// A `ctx/event` notification's params.
pub type EventSink = mpsc::UnboundedSender<CtxEvent>;

pub struct Service {
    pub(crate) store: Store,
    config: Mutex<Config>,
    events: Option<EventSink>,
    /// The last prompt assembled per session, for prefix-reuse figures.
    last_prompts: Arc<assemble::LastPrompts>,
    /// The state envelope of each session's last prompt, for `stateChanged`.
    last_states: Mutex<HashMap<String, StateEnvelope>>,
    /// The key a tenant is derived from a credential under, read once.
    tenant_key: tokio::sync::OnceCell<[u8; 32]>,
}

impl Service {
    pub fn open(
        store_path: PathBuf,
        config: Config,
        events: Option<EventSink>,
    ) -> Result<Service, ServiceError> {
        let store = Store::open(&store_path, config::ingest_settings(&config))?;
        Ok(Service {
            store,
            config: Mutex::new(config),
            events,
            last_prompts: Arc::default(),
            last_states: Mutex::default(),
            tenant_key: tokio::sync::OnceCell::new(),
        })
    }

    /// The tenant a client's credential (an API key, a bearer token) makes
    /// it: `t-` and a keyed hash of it under a secret the store keeps, never
    /// the credential itself; the local user's (`""`) without one.
    pub async fn tenant_of(&self, credential: Option<&str>) -> Reply<String> {
        let Some(credential) = credential.map(str::trim).filter(|c| !c.is_empty()) else {
            return Ok(String::new());
        };
        let key = self
            .tenant_key
            .get_or_try_init(|| async {
                settle(self.store.write(|w| w.store_secret("tenant-key"))).await
            })
            .await?;
        let hash = blake3::keyed_hash(key, credential.as_bytes());
        Ok(format!("t-{}", &hash.to_hex()[..16]))
    }

    /// The store's database file.
    pub fn store_path(&self) -> &Path {
        self.store.db_path()
    }

    /// Moves the write-ahead log into the database file, as a clean exit
    /// leaves the store: `store.db` alone.
    pub async fn checkpoint(&self) -> Reply<()> {
        Ok(self.store.checkpoint().await?)
    }

    /// Removes a session and what only it holds (a replay that failed
    /// halfway).
    pub async fn remove_session(&self, session_id: &str) -> Reply<()> {
        Ok(self.store.remove_session(session_id).await?)
    }

    /// Removes what project memory could show of `scope`: every session of
    /// a project (of one tenant, or of all), or one session, each with the forks and
    /// calls made from it, and the blobs nothing else references. Returns
    /// the sessions removed, descendants first.
    pub async fn forget(&self, scope: Forget) -> Reply<Vec<String>> {
        let all = self.store.read(|r| r.sessions(None)).await?;
        let picked: HashSet<&str> = all
            .iter()
            .filter(|s| match &scope {
                Forget::Project { tenant, project } => {
                    s.workspace == *project && tenant.as_ref().is_none_or(|t| s.tenant == *t)
                }
                Forget::Session(id) => s.id == *id,
            })
            .map(|s| s.id.as_str())
            .collect();
        if let Forget::Session(id) = &scope {
            if picked.is_empty() {
                return Err(ServiceError::UnknownSession(id.clone()));
            }
        }
        // With their descendants, whatever project those name, looked up
        // through each session's forks and children (not every session
        // scanned for each one picked): from the picked sessions whose
        // parent is not picked, breadth first, so that a parent comes
        // before its descendants however recently either was used.
        let mut children: HashMap<&str, Vec<&str>> = HashMap::new();
        for s in &all {
            if let Some(p) = &s.parent {
                children.entry(p.session.as_str()).or_default().push(&s.id);
            }
        }
        let mut chosen: Vec<&str> = all
            .iter()
            .filter(|s| picked.contains(s.id.as_str()))
            .filter(|s| {
                !s.parent
                    .as_ref()
                    .is_some_and(|p| picked.contains(p.session.as_str()))
            })
            .map(|s| s.id.as_str())
            .collect();
        let mut i = 0;
        while i < chosen.len() {
            chosen.extend(children.get(chosen[i]).into_iter().flatten());
            i += 1;
        }
        // Descendants first: a session with forks cannot be removed.
        let mut removed = Vec::new();
        for id in chosen.into_iter().rev() {
            self.store.remove_session(id).await?;
            removed.push(id.to_string());
        }
        Ok(removed)
    }

    pub fn config(&self) -> Config {
        self.config.lock().expect("config lock").clone()
    }

    /// Applies new settings (`workspace/didChangeConfiguration`, read by
    /// `config::apply`); the store path cannot change while running.
    pub async fn configure(&self, next: Config) -> Reply<Done> {
        let settings = config::ingest_settings(&next);
        *self.config.lock().expect("config lock") = next;
        settle(self.store.write(move |w| w.configure(settings))).await?;
        Ok(Done {})
    }

    fn emit(&self, event: CtxEvent) {
        if let Some(tx) = &self.events {
            let _ = tx.send(event);
        }
    }

    /// Sends the events of a store write (`events_of` its result) from the
    /// writer thread, in commit order (`Store::write_then`): the replies of
    /// pipelined appends resume in any order, their events must not.
    pub(crate) fn store_events<T: 'static>(
        &self,
        events_of: fn(&T) -> &[Event],
    ) -> impl FnOnce(&T) + Send + 'static {
        let sender = self.events.clone();
        move |done| {
            for e in events_of(done) {
                if let Some(tx) = &sender {
                    let _ = tx.send(wire_event(e));
                }
            }
        }
    }

    pub async fn open_session(&self, p: OpenSessionParams) -> Reply<OpenSessionResult> {
        let parent = match p.parent {
            None => None,
            Some(parent) => {
                let at = match parent.at_exchange {
                    None | Some(Value::Null) => None,
                    Some(v) => Some(exchange_number(&v, "parent.atExchange")?),
                };
                Some((parent.session_id, at))
            }
        };
        let limit = self.config().max_payload_bytes;
        let child = match p.child {
            None => None,
            Some(c) if c.query.trim().is_empty() => {
                return Err(ServiceError::InvalidParams(
                    "child.query: expected a non-empty string".into(),
                ))
            }
            Some(c)
                if (c.query.len() + c.context.as_ref().map_or(0, String::len)) as u64 > limit =>
            {
                return Err(ServiceError::PayloadTooLarge(format!(
                    "child: the query and context are over the maxPayloadBytes limit of {limit}"
                )))
            }
            Some(c) => Some(ChildCall {
                query: c.query,
                context: c.context,
                max_depth: self.config().calls.max_depth,
            }),
        };
        let new = NewSession {
            workspace: p.workspace,
            title: p.title,
            parent,
            child,
            ..NewSession::default()
        };
        let id = self.open_new_session(new).await?;
        Ok(OpenSessionResult { session_id: id })
    }

    /// `ctx/openSession` with typed params: the new session's id.
    pub async fn open_new_session(&self, new: NewSession) -> Result<String, ServiceError> {
        Ok(settle(self.store.write(move |w| w.open_session(new))).await?)
    }

    pub async fn append(&self, p: AppendParams) -> Reply<AppendResult> {
        let messages = to_core_messages(&p.messages, "messages")?;
        self.check_payload(&messages, "messages")?;
        let expected = match &p.exchange {
            None => None,
            Some(raw) => match ItemId::parse(raw) {
                Ok(ItemId::Exchange(x)) => Some(x),
                _ => {
                    return Err(ServiceError::InvalidParams(format!(
                        "exchange: expected x<N>, got {raw:?}"
                    )))
                }
            },
        };
        let supersedes = parse_supersedes(&p.supersedes)?;
        let session = p.session_id.clone();
        let outcome = settle(self.store.write_then(
            move |w| w.append_to(&session, messages, expected, &supersedes),
            self.store_events(|o: &AppendOutcome| &o.events),
        ))
        .await?;
        Ok(AppendResult {
            exchanges: outcome
                .exchanges
                .iter()
                .map(|x| ExchangeRef {
                    id: x.to_string(),
                    seq: x.0,
                })
                .collect(),
            blobs: outcome
                .blobs
                .into_iter()
                .map(|b| BlobRef {
                    id: b.hash.short_id(),
                    message_id: b.message.to_string(),
                    bytes: b.bytes,
                    tokens: b.tokens,
                    digest_tokens: b.digest_tokens,
                    duplicate_of: b.duplicate_of,
                })
                .collect(),
        })
    }

    fn check_payload(&self, messages: &[Message], field: &str) -> Result<(), ServiceError> {
        let limit = self.config().max_payload_bytes;
        let size: u64 = messages
            .iter()
            .map(|m| {
                m.content.len() as u64
                    + m.tool_calls
                        .iter()
                        .map(|c| c.arguments.len() as u64)
                        .sum::<u64>()
            })
            .sum();
        if size > limit {
            return Err(ServiceError::PayloadTooLarge(format!(
                "{field}: {size} bytes is over the maxPayloadBytes limit of {limit}"
            )));
        }
        Ok(())
    }

    pub async fn assemble(&self, p: AssembleParams) -> Reply<AssembleResult> {
        let request = assemble::Request::from_params(&p, &self.config())?;
        self.assemble_request(&p.session_id, request).await
    }

    /// The prompt the next assemble would give, not recorded (and not the
    /// previous prompt of prefix-reuse figures).
    pub async fn preview_request(
        &self,
        session_id: &str,
        request: assemble::Request,
    ) -> Reply<AssembleResult> {
        let unrecorded = Arc::new(assemble::LastPrompts::default());
        self.pack_in_store(session_id, request, Keep::Preview, unrecorded)
            .await
    }

    /// `ctx/assemble` with a typed request.
    pub async fn assemble_request(
        &self,
        session_id: &str,
        request: assemble::Request,
    ) -> Reply<AssembleResult> {
        let reply = self
            .pack_in_store(session_id, request, Keep::Record, self.last_prompts.clone())
            .await?;
        self.emit(CtxEvent::ContextAssembled {
            session_id: session_id.to_string(),
            prompt_id: reply.prompt_id.clone(),
            tokens: reply.tokens.total,
            budget: reply.budget,
            prefix_reused: reply.prefix_reused,
            layers: reply.tokens.layers.clone(),
        });
        if !reply.trimmed.is_empty() {
            self.emit(CtxEvent::LayerTrimmed {
                session_id: session_id.to_string(),
                prompt_id: reply.prompt_id.clone(),
                trimmed: reply.trimmed.clone(),
            });
        }
        if let Some(state) = &reply.state {
            if self.state_changed(session_id, state).await {
                self.emit(CtxEvent::StateChanged {
                    session_id: session_id.to_string(),
                    prompt_id: reply.prompt_id.clone(),
                    state: Box::new(state.clone()),
                });
            }
        }
        Ok(reply)
    }

    /// Packs `request` in the writer's job (the caps are the writer's
    /// layer settings at the request's budget: configuration changes reach
    /// it in order); `last` holds the prompts
    /// prefix reuse is measured against.
    async fn pack_in_store(
        &self,
        session_id: &str,
        request: assemble::Request,
        keep: Keep,
        last: Arc<assemble::LastPrompts>,
    ) -> Reply<AssembleResult> {
        if let Some(input) = &request.input {
            self.check_payload(std::slice::from_ref(input), "input")?;
        }
        // The store is asked only when `last` lacks the previous prompt.
        let whole_so_far = !last.remembers(session_id) && self.whole_so_far(session_id).await;
        let session = session_id.to_string();
        let (encoding, budget) = (request.encoding, request.budget);
        assemble::flatten(
            settle(self.store.write(move |w| {
                let question = request.question().map(str::to_string);
                w.assemble(
                    &session,
                    encoding,
                    budget,
                    question.as_deref(),
                    keep,
                    move |id, view, caps| {
                        assemble::run(id, view, &request, caps, &last, whole_so_far)
                    },
                )
            }))
            .await,
        )
    }

    /// Whether the session has no prompt yet or its newest prompt record
    /// has the whole shape: the shape a session keeps across restarts
    /// (`packer::whole_allowed`). An unreadable record keeps the layers.
    async fn whole_so_far(&self, session_id: &str) -> bool {
        let session = session_id.to_string();
        let newest = self
            .store
            .read(move |r| match r.session(&session)?.prompts {
                0 => Ok(None),
                n => r.prompt(&session, PromptId(n)).map(Some),
            })
            .await;
        match newest {
            Ok(None) => true,
            Ok(Some(record)) => assemble::recorded_shape(&record) == Some(ShapeKind::Whole),
            Err(_) => false,
        }
    }

    /// Whether `state` differs (`state::differs`) from the state of the
    /// session's previous prompt: the one this process assembled last, or
    /// after a restart the previous prompt's record. A session's first
    /// prompt, and one after a record without a state, is a change.
    async fn state_changed(&self, session_id: &str, state: &StateEnvelope) -> bool {
        let remembered = self
            .last_states
            .lock()
            .expect("last states lock")
            .insert(session_id.to_string(), state.clone());
        let previous = match (remembered, state.call.iteration) {
            (Some(previous), _) => Some(previous),
            (None, 1) => None,
            (None, n) => {
                let session = session_id.to_string();
                let record = self
                    .store
                    .read(move |r| r.prompt(&session, PromptId(n - 1)))
                    .await;
                record
                    .ok()
                    .and_then(|r| assemble::read_record(&r, self.store.db_path()).ok())
                    .and_then(|prompt| prompt.state)
            }
        };
        previous.is_none_or(|p| state::differs(&p, state))
    }

    pub async fn explain(&self, p: ExplainParams) -> Reply<ExplainResult> {
        let id = prompt_id_of(&p.prompt_id)?;
        let session = p.session_id.clone();
        let record = self.store.read(move |r| r.prompt(&session, id)).await?;
        let prompt = assemble::read_record(&record, self.store.db_path())?;
        Ok(ExplainResult {
            prompt,
            created_at: record.created_at,
        })
    }

    pub async fn retrieve(&self, p: RetrieveParams) -> Reply<RetrieveResult> {
        if let Some([first, last]) = p.lines {
            if first == 0 || last < first {
                return Err(ServiceError::InvalidParams(format!(
                    "lines: expected [first, last] with 1 <= first <= last, got [{first}, {last}]"
                )));
            }
        }
        if let Some(g) = &p.grep {
            slice::grep("", g).map_err(|e| ServiceError::InvalidParams(e.to_string()))?;
        }
        if p.ids.is_empty() {
            return Err(ServiceError::InvalidParams(
                "ids: give at least one id".into(),
            ));
        }
        let encoding = self.config().encoding;
        let session = p.session_id.clone();
        let items = self
            .store
            .read(move |r| {
                r.session(&session)?;
                Ok(p.ids
                    .iter()
                    .map(|raw| {
                        let item = retrieve_one(r, &session, raw, p.format).and_then(
                            |(kind, fmt, body, details)| {
                                let (cut, encoded) = match body {
                                    Body::Text(text) => {
                                        let text = match (&p.lines, &p.grep) {
                                            (Some([a, b]), _) => {
                                                slice::lines(&text, *a, *b).unwrap_or_default()
                                            }
                                            (None, Some(g)) => {
                                                slice::grep(&text, g).unwrap_or_default()
                                            }
                                            (None, None) => text,
                                        };
                                        (slice::cap(text, p.max_tokens, encoding), None)
                                    }
                                    Body::Bytes(bytes) => {
                                        let cut = bytes_as_base64(raw, &bytes, &p, encoding)?;
                                        (cut, Some(TextEncoding::Base64))
                                    }
                                };
                                Ok(RetrievedItem::Found(Box::new(Retrieved {
                                    id: raw.trim().to_string(),
                                    kind,
                                    format: fmt,
                                    tokens: tokens::count(encoding, &cut.text),
                                    truncated: cut.truncated,
                                    text: cut.text,
                                    encoding: encoded,
                                    details,
                                })))
                            },
                        );
                        item.unwrap_or_else(|e| {
                            RetrievedItem::Failed(RetrieveFailure {
                                id: raw.clone(),
                                error: ItemError {
                                    code: e.code(),
                                    message: e.to_string(),
                                },
                            })
                        })
                    })
                    .collect::<Vec<_>>())
            })
            .await?;
        Ok(RetrieveResult { items })
    }

    pub async fn search(&self, p: SearchParams) -> Reply<SearchResult> {
        let limit = p.limit.unwrap_or(20).clamp(1, 500);
        let searched = p.session_id.clone();
        let hits = self
            .store
            .read(move |r| {
                if let Some(s) = &p.session_id {
                    r.session(s)?;
                }
                let reach = match p.project {
                    Some(true) => SearchReach::Project,
                    _ => SearchReach::Session,
                };
                r.search(
                    p.session_id.as_deref(),
                    reach,
                    p.workspace.as_deref(),
                    &p.query,
                    limit,
                )
            })
            .await?;
        Ok(SearchResult {
            hits: hits
                .into_iter()
                .map(|h| SearchHit {
                    id: match &searched {
                        Some(s) if *s != h.session => ids::qualified(Some(&h.session), h.exchange),
                        _ => h.exchange.to_string(),
                    },
                    session_id: h.session,
                    header: h.header,
                    snippet: h.snippet,
                    score: h.score,
                })
                .collect(),
        })
    }

    pub async fn housekeeping(&self, p: HousekeepingParams) -> Reply<Done> {
        let exchange = match ItemId::parse(&p.exchange_id) {
            Ok(ItemId::Exchange(x)) => x,
            _ => {
                return Err(ServiceError::InvalidParams(format!(
                    "exchangeId: expected x<N>, got {:?}",
                    p.exchange_id
                )))
            }
        };
        let supersedes = parse_supersedes(&p.supersedes)?;
        let hk = Housekeeping {
            exchange,
            header: p.header,
            summary: p.summary,
            key_decisions: p.key_decisions,
            code_changes: p.code_changes,
            open_questions: p.open_questions,
            current_context: p.current_context,
        };
        let session = p.session_id;
        // One job, one transaction: the texts and the supersession together.
        settle(self.store.write_then(
            move |w| {
                let events = w.housekeeping(&session, hk)?;
                if !supersedes.is_empty() {
                    w.supersede(&session, exchange, &supersedes)?;
                }
                Ok(events)
            },
            self.store_events(|events: &Vec<Event>| events),
        ))
        .await?;
        Ok(Done {})
    }

    pub async fn list_sessions(&self, p: ListSessionsParams) -> Reply<ListSessionsResult> {
        let sessions = self
            .store
            .read(move |r| r.sessions(p.workspace.as_deref()))
            .await?;
        Ok(ListSessionsResult {
            sessions: sessions
                .into_iter()
                .map(|s| SessionInfo {
                    session_id: s.id,
                    title: s.title,
                    workspace: s.workspace,
                    exchanges: s.exchanges,
                    prompts: s.prompts,
                    created_at: s.created_at,
                    updated_at: s.updated_at,
                    parent: s.parent.map(|p| ParentInfo {
                        session_id: p.session,
                        at_exchange: p.at_exchange,
                        kind: p.kind,
                    }),
                    depth: s.depth,
                })
                .collect(),
        })
    }

    pub async fn list_exchanges(&self, p: ListExchangesParams) -> Reply<ListExchangesResult> {
        let limit = p.limit.unwrap_or(200);
        if !(1..=10_000).contains(&limit) {
            return Err(ServiceError::InvalidParams(format!(
                "limit: expected 1 to 10000, got {limit}"
            )));
        }
        let from = p.from.unwrap_or(1).max(1);
        let session = p.session_id;
        let list = self
            .store
            .read(move |r| r.exchanges(&session, from, limit))
            .await?;
        Ok(ListExchangesResult {
            exchanges: list
                .into_iter()
                .map(|e| ExchangeInfo {
                    id: e.id.to_string(),
                    header: e.header,
                    at: e.at,
                    tokens: e.raw_tokens,
                    full_tokens: e.full_tokens,
                    outcome: e.outcome,
                    superseded_by: e.superseded_by.map(|x| x.to_string()),
                })
                .collect(),
        })
    }

    pub async fn path(&self, p: PathParams) -> Reply<PathResult> {
        let node = match &p.exchange_id {
            None => None,
            Some(raw) => match ItemId::parse(raw) {
                Ok(ItemId::Exchange(x)) => Some(x),
                _ => {
                    return Err(ServiceError::InvalidParams(format!(
                        "exchangeId: expected x<N>, got {raw:?}"
                    )))
                }
            },
        };
        let segments = self
            .store
            .read(move |r| r.path(&p.session_id, node))
            .await?;
        Ok(path_result(segments))
    }

    pub async fn stats(&self, p: StatsParams) -> Reply<StatsResult> {
        let s = self
            .store
            .read(move |r| r.stats(p.session_id.as_deref()))
            .await?;
        Ok(stats_result(&s))
    }
}

/// A prompt's id as a client gave it (`p<N>`); the error names `promptId`.
pub fn prompt_id_of(raw: &str) -> Result<PromptId, ServiceError> {
    match ItemId::parse(raw) {
        Ok(ItemId::Prompt(id)) => Ok(id),
        _ => Err(ServiceError::InvalidParams(format!(
            "promptId: expected p<N>, got {raw:?}"
        ))),
    }
}

/// What `Service::forget` removes.
#[derive(Clone, Debug)]
pub enum Forget {
    /// `tenant`: one tenant's sessions of the project; `None`: every
    /// tenant's.
    Project {
        tenant: Option<String>,
        project: String,
    },
    Session(String),
}

/// A path as `ctx/path` answers it (and `ctxproxy path --json` prints it).
pub fn path_result(segments: Vec<PathSegment>) -> PathResult {
    PathResult {
        sessions: segments
            .into_iter()
            .map(|s| PathSession {
                session_id: s.session,
                title: s.title,
                depth: s.depth,
                parent: match s.lineage {
                    Lineage::Root => None,
                    Lineage::Fork { parent, at } => Some((parent, at, ParentKind::Fork)),
                    Lineage::Child { parent, at } => Some((parent, at, ParentKind::Child)),
                }
                .map(|(session_id, at_exchange, kind)| PathParent {
                    session_id,
                    at_exchange,
                    kind,
                }),
                exchanges: s
                    .exchanges
                    .into_iter()
                    .map(|e| PathExchange {
                        id: e.id.to_string(),
                        header: e.header,
                        superseded_by: e.superseded_by.map(|x| x.to_string()),
                    })
                    .collect(),
            })
            .collect(),
    }
}

pub fn stats_result(s: &ctxproxy_store::Stats) -> StatsResult {
    StatsResult {
        sessions: s.sessions,
        exchanges: s.exchanges,
        messages: s.messages,
        prompts: s.prompts,
        blobs: s.blobs,
        blob_files: s.blob_files,
        raw_bytes: s.raw_bytes,
        stored_bytes: s.stored_bytes,
        appended_bytes: s.appended_bytes,
        duplicate_hits: s.duplicate_hits,
        database_bytes: s.database_bytes,
    }
}

fn exchange_number(v: &Value, field: &str) -> Result<u32, ServiceError> {
    let bad = || {
        ServiceError::InvalidParams(format!(
            "{field}: expected an exchange number or x<N>, got {v}"
        ))
    };
    match v {
        Value::Number(n) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(bad),
        Value::String(s) => match ItemId::parse(s) {
            Ok(ItemId::Exchange(ExchangeId(n))) => Ok(n),
            _ => Err(bad()),
        },
        _ => Err(bad()),
    }
}

pub fn to_core_messages(
    messages: &[WireMessage],
    field: &str,
) -> Result<Vec<Message>, ServiceError> {
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| m.to_core(&format!("{field}[{i}]")))
        .collect()
}

/// A store event as `ctx/event` sends it.
fn wire_event(e: &Event) -> CtxEvent {
    match e {
        Event::ExchangeStored {
            session,
            exchange,
            messages,
        } => CtxEvent::ExchangeStored {
            session_id: session.clone(),
            exchange_id: exchange.to_string(),
            messages: *messages,
        },
        Event::BlobStored {
            session,
            blob,
            bytes,
            duplicate,
        } => CtxEvent::BlobStored {
            session_id: session.clone(),
            blob_id: blob.short_id(),
            bytes: *bytes,
            duplicate: *duplicate,
        },
        Event::SummaryUpdated {
            session,
            exchange,
            source,
        } => CtxEvent::SummaryUpdated {
            session_id: session.clone(),
            exchange_id: exchange.to_string(),
            source: *source,
        },
    }
}

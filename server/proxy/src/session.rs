//! Which ctxproxy session a request belongs to, and which of its messages
//! are new.
//!
//! A request names its conversation by a key: `x-ctxproxy-session`, the id
//! the client already sends (Claude Code, Codex), or a digest of the system
//! prompt and first user message. A key has branches: sessions titled with
//! the key among the sessions the proxy opened (`Edge::Proxy`), so they are
//! found again after a restart.
//! A request continues the branch whose stored history it repeats; one that
//! repeats only part of it forks that branch at the last whole exchange; one
//! that repeats nothing opens a branch of its own: a child session of the
//! key's main branch when its system prompt differs from the main branch's (a
//! sub-agent, such as Claude Code's Task agents, sends the same session id
//! with a system prompt of its own: a recursive call), else a root
//! session (a client's side request under the same id).
//!
//! A request under a key never seen that carries a stored conversation
//! resumes it (`Branch::resumed_by`): a client resuming a conversation may
//! name it anew or write its first message anew (Qwen Code's `--continue`
//! restates the folder as it is now), and its new turn belongs to the
//! conversation it repeats.
//!
//! Messages are compared by fingerprint: of the message as the client sent
//! it (kept in memory for what this process stored), or, for history stored
//! before a restart or by another process, of the message as the store keeps
//! it (secrets masked).
//!
//! What a process keeps of a key's branches is a cache of the store: each
//! request first reads where the key's sessions end (`Tip`) and reads what
//! another process appended since, or a branch it opened (`refresh`), when
//! another process has committed to the store since the last such read
//! (`OutsideCommits`); and every append names the tip it expects
//! (`Turn::append`). So two proxies on one store, as replicas behind a load
//! balancer, record each turn of a conversation once, however its requests
//! are spread.

use std::sync::Arc;

use axum::http::HeaderMap;
use ctxproxy_core::ids::{ExchangeId, MessageId};
use ctxproxy_core::message::{Message, Role};
use ctxproxy_core::secrets;
use dashmap::DashMap;
use serde_json::Value;
use tokio::sync::{Mutex, OwnedMutexGuard};
use xxhash_rust::xxh3::Xxh3;

use ctxproxy_service::proxied::{Appended, FoundSession, OutsideCommits, ProxiedTip, Tip};
use ctxproxy_service::service::{ChildCall, Edge, NewSession, Service, ServiceError};

/// A conversation as the proxy keeps it apart: the client's tenant
/// (`Service::tenant_of` its credential) and the key it names the
/// conversation by (`session_key`), which is the sessions' title.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub tenant: String,
    pub name: String,
}

/// Branches read back from the store for a key, newest first.
const BRANCHES_LOADED: usize = 8;

/// Appends of one turn retried after another process moved its branch on:
/// each retry follows a store that changed, so more means a conversation
/// other processes keep writing to as fast as this one reads.
const APPEND_ATTEMPTS: usize = 16;

/// Conversations of any key a resumed request is compared with, newest first.
const RESUMABLE: usize = 8;

pub type Fingerprint = [u8; 16];

/// A request's history as the session finder reads it: the messages and
/// their exact fingerprints (`exact`), computed once per message read
/// (a kept history's are kept with it).
#[derive(Clone, Copy)]
pub struct Sent<'a> {
    pub messages: &'a [Message],
    pub exacts: &'a [Fingerprint],
}

/// What a request says its conversation is.
pub fn session_key(headers: &HeaderMap, body: &Value, system: &str, first_user: &str) -> String {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
    };
    if let Some(name) = header("x-ctxproxy-session") {
        return format!("name:{name}");
    }
    if let Some(id) = header("x-claude-code-session-id") {
        return format!("claude-code:{id}");
    }
    if let Some(id) = body["metadata"]["user_id"]
        .as_str()
        .and_then(user_id_session)
    {
        return format!("claude-code:{id}");
    }
    if let Some(id) = header("session-id").or_else(|| header("session_id")) {
        return format!("codex:{id}");
    }
    if let Some(id) = header("x-session-id") {
        return format!("session:{id}");
    }
    // The Responses API's cache key: Codex and opencode send their thread id.
    if let Some(key) = body["prompt_cache_key"]
        .as_str()
        .map(str::trim)
        .filter(|k| !k.is_empty())
    {
        return format!("cache-key:{key}");
    }
    let mut h = blake3::Hasher::new();
    h.update(system.as_bytes());
    h.update(&[0]);
    h.update(first_user.as_bytes());
    format!("derived:{}", &h.finalize().to_hex()[..16])
}

/// The session id in Claude Code's `metadata.user_id`: a JSON object with
/// `session_id`, or the older `user_…_account_…_session_<uuid>`.
fn user_id_session(user_id: &str) -> Option<String> {
    if let Ok(v) = serde_json::from_str::<Value>(user_id) {
        return v["session_id"].as_str().map(str::to_string);
    }
    user_id
        .rsplit_once("_session_")
        .map(|(_, id)| id.to_string())
        .filter(|id| !id.is_empty())
}

/// The message byte for byte: what a client that echoes its history
/// exactly (most do) is matched by. Every request carries the whole
/// history, so this runs over megabytes per request: XXH3-128 hashes at
/// memory speed where BLAKE3 on messages of a few KB (too short for its
/// wide SIMD path) took most of the time finding the new messages. A match
/// only tells the proxy that a client repeated its own history, which the
/// client itself could forge anyway by sending it, so a cryptographic
/// hash buys nothing here.
pub fn exact(m: &Message) -> Fingerprint {
    let mut h = Xxh3::new();
    let mut field = |text: &str| {
        h.update(&(text.len() as u64).to_le_bytes());
        h.update(text.as_bytes());
    };
    field(m.role.as_str());
    field(&m.content);
    for c in &m.tool_calls {
        field(&c.id);
        field(&c.name);
        field(&c.arguments);
    }
    field(m.tool_call_id.as_deref().unwrap_or(""));
    h.digest128().to_le_bytes()
}

/// The message without its whitespace: computed only when the exact
/// fingerprint differs.
fn fingerprint(m: &Message) -> Fingerprint {
    // Whitespace is left out: clients re-serialise what they were sent
    // (arguments re-indented, text blocks joined) and it stays the same
    // turn. The non-whitespace bytes are gathered first: one long hash
    // update is many times faster than one per word.
    let mut bytes = Vec::with_capacity(m.content.len() + 64);
    let mut words = |text: &str| {
        bytes.extend(text.bytes().filter(|b| !b.is_ascii_whitespace()));
        bytes.push(0);
    };
    words(m.role.as_str());
    words(&m.content);
    for c in &m.tool_calls {
        words(&c.id);
        words(&c.name);
        words(&c.arguments);
    }
    words(m.tool_call_id.as_deref().unwrap_or(""));
    let mut out = [0; 16];
    out.copy_from_slice(&blake3::hash(&bytes).as_bytes()[..16]);
    out
}

/// One stored message of a branch.
#[derive(Clone, Debug)]
struct Print {
    /// Of the message as a client sent it (exact, without whitespace), once
    /// this process has seen it.
    sent: Option<(Fingerprint, Fingerprint)>,
    /// Of the message as stored, for history read back after a restart.
    stored: Option<Fingerprint>,
    exchange: u32,
}

#[derive(Clone, Debug)]
struct Branch {
    session: String,
    prints: Vec<Print>,
    /// Where the session ended when `prints` last matched it.
    tip: Tip,
    /// The fingerprint of the branch's system prompt: of the requests this
    /// process saw, or of its newest prompt record; `None` when unknown.
    system: Option<Fingerprint>,
    /// A child session (a sub-agent's calls), not a main branch.
    called: bool,
}

impl Branch {
    /// How many of `incoming` (with their exact fingerprints) repeat this
    /// branch's history, in order.
    fn matched(&mut self, incoming: &[Message], exacts: &[Fingerprint], mask: bool) -> usize {
        matched(&mut self.prints, incoming, exacts, mask)
    }

    /// Whether `incoming` resumes this branch: it repeats all of it but its
    /// first message, a user message the client may write anew when it
    /// resumes (Qwen Code's environment notes, which list the folder as it
    /// is now), and an answer of the assistant at least. The branch then
    /// knows the first message in its new form.
    fn resumed_by(&mut self, incoming: &[Message], exacts: &[Fingerprint], mask: bool) -> bool {
        let len = self.prints.len();
        let resumes = len >= 2
            && incoming.len() > len
            && incoming[0].role == Role::User
            && incoming[1..len].iter().any(|m| m.role == Role::Assistant)
            && matched(&mut self.prints[1..], &incoming[1..], &exacts[1..], mask) == len - 1;
        if resumes {
            self.prints[0].sent = Some((exacts[0], fingerprint(&incoming[0])));
        }
        resumes
    }

    fn exchanges(&self) -> u32 {
        self.prints.last().map_or(0, |p| p.exchange)
    }

    /// Reads what was appended to the branch's session since `tip` (by
    /// another process) into its prints.
    async fn catch_up(&mut self, service: &Service) -> Result<(), ServiceError> {
        for (id, m) in service.messages_after(&self.session, self.tip).await? {
            self.prints.push(Print {
                sent: None,
                stored: Some(fingerprint(&m)),
                exchange: id.exchange.0,
            });
            self.tip = Tip(Some(id));
        }
        Ok(())
    }

    /// The prints of `messages` appended to the branch: made before the
    /// messages are handed to the store, so that no copy of them is kept
    /// meanwhile (a body of 100,000 new messages would double).
    fn prints_after(&self, messages: &[Message]) -> Vec<Print> {
        let mut exchange = self.exchanges();
        let mut prints = Vec::with_capacity(messages.len());
        for m in messages {
            // As the store groups them: a user message opens an exchange, and
            // a session's first messages open x1 whoever sent them.
            if m.role == Role::User || exchange == 0 {
                exchange += 1;
            }
            prints.push(Print {
                sent: Some((exact(m), fingerprint(m))),
                stored: None,
                exchange,
            });
        }
        prints
    }
}

/// How many of `incoming` (with their exact fingerprints) repeat `prints`,
/// in order.
fn matched(
    prints: &mut [Print],
    incoming: &[Message],
    exacts: &[Fingerprint],
    mask: bool,
) -> usize {
    let mut n = 0;
    for (p, (m, e)) in prints.iter_mut().zip(incoming.iter().zip(exacts)) {
        let sent = match (p.sent, p.stored) {
            (Some((exact, _)), _) if exact == *e => Some((exact, None)),
            (Some((_, spaced)), _) => {
                let f = fingerprint(m);
                (f == spaced).then_some((*e, Some(f)))
            }
            (None, Some(stored)) => {
                let as_stored = if mask {
                    secrets::mask_message(m.clone())
                } else {
                    m.clone()
                };
                (fingerprint(&as_stored) == stored).then(|| (*e, Some(fingerprint(m))))
            }
            (None, None) => None,
        };
        let Some((exact, spaced)) = sent else {
            break;
        };
        // Remember the client's own form, to match it exactly next time.
        let spaced = spaced
            .or(p.sent.map(|(_, s)| s))
            .unwrap_or_else(|| fingerprint(m));
        p.sent = Some((exact, spaced));
        n += 1;
    }
    n
}

/// What a request does with a key's branches.
enum Choice {
    Continue(usize),
    Fork(usize),
    Open,
}

#[derive(Default)]
pub struct Branches {
    loaded: bool,
    /// The store's mark of other processes' commits when the branches last
    /// matched it; `None` when they may not (a turn that did not finish may
    /// have stored more than they hold).
    seen: Option<OutsideCommits>,
    list: Vec<Branch>,
}

impl Branches {
    /// Brings the branches up to date with the store: what another process
    /// appended to one, and a branch another process opened. One read of
    /// the key's tips per request, none while no other process has
    /// committed since the last; a branch that moved reads only what is
    /// new.
    async fn refresh(&mut self, service: &Service, key: &Key) -> Result<(), ServiceError> {
        let (seen, stored) = service
            .proxied_tips(&key.tenant, &key.name, BRANCHES_LOADED, self.seen)
            .await?;
        let Some(stored) = stored else {
            return Ok(());
        };
        // Oldest first, so that branches new to this process end up newest first.
        for ProxiedTip {
            session_id,
            called,
            tip,
        } in stored.into_iter().rev()
        {
            match self.list.iter_mut().find(|b| b.session == session_id) {
                Some(b) if b.tip == tip => {}
                Some(b) => b.catch_up(service).await?,
                None => {
                    let mut b = Branch {
                        session: session_id,
                        prints: Vec::new(),
                        tip: Tip::default(),
                        system: None,
                        called,
                    };
                    b.catch_up(service).await?;
                    self.list.insert(0, b);
                }
            }
        }
        self.seen = Some(seen);
        Ok(())
    }

    /// Opens a fork of branch `i` for a request that repeats its first
    /// `matched` messages: at the last exchange those hold whole, with the
    /// branch's prints up to there. The fork is branch 0 (the newest);
    /// returns how many prints it holds.
    async fn fork(
        &mut self,
        service: &Service,
        key: &Key,
        project: &str,
        i: usize,
        matched: usize,
        system: Fingerprint,
    ) -> Result<usize, ServiceError> {
        let parent = &self.list[i];
        let at = parent.prints[matched].exchange - 1;
        let keep = parent
            .prints
            .iter()
            .take_while(|p| p.exchange <= at)
            .count();
        let session = if at == 0 {
            open(service, key, project, None).await?
        } else {
            open(service, key, project, Some((parent.session.clone(), at))).await?
        };
        let branch = Branch {
            tip: service.tip(&session).await?,
            session,
            prints: parent.prints[..keep].to_vec(),
            system: Some(system),
            // A fork of a call's history is a branch of that call.
            called: parent.called && at > 0,
        };
        self.list.insert(0, branch);
        Ok(keep)
    }
}

/// Every key's branches; a key's lock is held for a whole request, so the
/// requests of one conversation are ingested and recorded in turn.
#[derive(Default)]
pub struct Sessions {
    keys: DashMap<Key, Arc<Mutex<Branches>>>,
}

/// A request's place in its session, held until its reply is recorded.
pub struct Turn {
    guard: OwnedMutexGuard<Branches>,
    /// The branches' mark, given back once the turn is recorded (`record`).
    seen: Option<OutsideCommits>,
    branch: usize,
    key: Key,
    project: String,
    system: Fingerprint,
    pub session: String,
    /// How many of the request's messages the branch holds: the rest are
    /// new (`Turn::take_new`).
    pub repeated: usize,
    /// Messages to store before assembling.
    pub earlier: Vec<Message>,
    /// The newest message: the prompt's input, stored with the reply.
    pub input: Option<Message>,
}

impl Sessions {
    async fn lock(
        &self,
        service: &Service,
        key: &Key,
    ) -> Result<OwnedMutexGuard<Branches>, ServiceError> {
        let lock = self.keys.entry(key.clone()).or_default().clone();
        let mut guard = lock.lock_owned().await;
        if guard.loaded {
            guard.refresh(service, key).await?;
        } else {
            guard.list = load_branches(service, key).await?;
            guard.loaded = true;
        }
        Ok(guard)
    }

    /// The session a request continues and its newest message, without
    /// storing anything: only when a branch holds every message but that
    /// one (what `count_tokens` can answer for exactly).
    pub async fn peek(
        &self,
        service: &Service,
        key: &Key,
        sent: Sent<'_>,
    ) -> Result<Option<(String, Message)>, ServiceError> {
        let mut guard = self.lock(service, key).await?;
        let mask = service.config().redact_secrets;
        let Some((newest, history)) = sent.messages.split_last() else {
            return Ok(None);
        };
        for b in guard.list.iter_mut() {
            if b.prints.len() == history.len()
                && b.matched(history, sent.exacts, mask) == history.len()
            {
                return Ok(Some((b.session.clone(), newest.clone())));
            }
        }
        Ok(None)
    }

    /// Finds (or opens, or forks) the session `messages` continue; a root
    /// session it opens is stored under `project` (a fork or a call
    /// belongs to the project of the session it branches from).
    pub async fn begin(
        &self,
        service: &Service,
        key: &Key,
        project: &str,
        system: &str,
        sent: Sent<'_>,
    ) -> Result<Turn, ServiceError> {
        let system = system_print(system);
        let mut guard = self.lock(service, key).await?;
        // Until the turn is recorded the branches may fall behind the store:
        // a request dropped mid-write (its client gone) has stored what it
        // did not add to them, and the mark cannot tell (it moves for other
        // processes' commits only). Taken, the next request reads the
        // store's tips again unless `record` gives it back.
        let seen = guard.seen.take();
        let mask = service.config().redact_secrets;
        let messages = sent.messages;
        // A key never seen whose request carries answers already: a client
        // resuming a stored conversation under another key.
        if guard.list.is_empty() && messages.iter().any(|m| m.role == Role::Assistant) {
            if let Some(resumed) = resumed_branch(service, &key.tenant, sent, mask).await? {
                guard.list.push(resumed);
            }
        }
        let scores: Vec<(usize, usize)> = guard
            .list
            .iter_mut()
            .map(|b| (b.matched(messages, sent.exacts, mask), b.prints.len()))
            .collect();
        // The longest branch the request repeats whole; else the one it
        // repeats most of (forked); else one that holds nothing yet (a
        // request that failed before its reply was recorded); else a new one.
        let whole = (0..scores.len())
            .filter(|&i| scores[i].0 == scores[i].1 && scores[i].1 > 0)
            .max_by_key(|&i| (scores[i].1, std::cmp::Reverse(i)));
        let partial = (0..scores.len())
            .filter(|&i| scores[i].0 > 0)
            .max_by_key(|&i| (scores[i].0, std::cmp::Reverse(i)));
        let empty = (0..scores.len()).find(|&i| scores[i].1 == 0);
        let choice = match (whole, partial, empty) {
            (Some(i), _, _) => Choice::Continue(i),
            (None, Some(i), _) => Choice::Fork(i),
            (None, None, Some(i)) => Choice::Continue(i),
            (None, None, None) => Choice::Open,
        };
        let (branch, from) = match choice {
            Choice::Continue(i) => (i, scores[i].0),
            Choice::Fork(i) => {
                let keep = guard
                    .fork(service, key, project, i, scores[i].0, system)
                    .await?;
                (0, keep)
            }
            Choice::Open => {
                // The newest main branch with another system prompt: this
                // request is a call it made.
                let caller = guard
                    .list
                    .iter()
                    .find(|b| !b.called && b.system.is_some_and(|s| s != system))
                    .map(|b| (b.session.clone(), b.exchanges()));
                let query = messages.iter().find(|m| m.role == Role::User);
                let (session, called) = match (caller, query) {
                    (Some(caller), Some(query)) => {
                        (open_call(service, key, caller, query).await?, true)
                    }
                    _ => (open(service, key, project, None).await?, false),
                };
                guard.list.insert(
                    0,
                    Branch {
                        session,
                        prints: Vec::new(),
                        tip: Tip::default(),
                        system: Some(system),
                        called,
                    },
                );
                (0, 0)
            }
        };
        // A branch read back after a restart learns its system prompt.
        guard.list[branch].system.get_or_insert(system);
        Ok(Turn {
            session: guard.list[branch].session.clone(),
            guard,
            seen,
            branch,
            key: key.clone(),
            project: project.to_string(),
            system,
            repeated: from,
            earlier: Vec::new(),
            input: None,
        })
    }
}

impl Turn {
    /// Takes the request's new messages (`History::new_messages`): the
    /// newest is the prompt's input, the rest are stored first.
    pub fn take_new(&mut self, mut new: Vec<Message>) {
        // A tool result is a tool output like any other: stored first, so
        // the prompt shows it as the packer decides (whole when it fits,
        // else its digest and blob id), never raw as the input, which a
        // large file read would push past the budget.
        self.input = match new.last() {
            Some(m) if m.role != Role::Tool => new.pop(),
            _ => None,
        };
        self.earlier = new;
    }

    /// Stores the messages before the input (assembly shows them).
    pub async fn store_earlier(&mut self, service: &Service) -> Result<(), ServiceError> {
        let earlier = std::mem::take(&mut self.earlier);
        self.append(service, earlier).await
    }

    /// Stores the input and the reply the client got, in one append.
    pub async fn record(
        mut self,
        service: &Service,
        reply: Vec<Message>,
    ) -> Result<(), ServiceError> {
        let messages: Vec<Message> = self.input.take().into_iter().chain(reply).collect();
        self.append(service, messages).await?;
        self.guard.seen = self.seen;
        Ok(())
    }

    /// Appends `messages` to the turn's branch, once. When another process
    /// appended to the branch since this one last saw it (two replicas
    /// answering one conversation at once), what it stored is read first:
    /// messages of ours it holds already are not stored again, and ours that
    /// differ from its go on a fork from the exchange they differ in, as a
    /// request repeating part of a branch does.
    async fn append(
        &mut self,
        service: &Service,
        mut messages: Vec<Message>,
    ) -> Result<(), ServiceError> {
        let mask = service.config().redact_secrets;
        for _ in 0..APPEND_ATTEMPTS {
            if messages.is_empty() {
                return Ok(());
            }
            let branch = &mut self.guard.list[self.branch];
            let prints = branch.prints_after(&messages);
            match service
                .append_at(&self.session, branch.tip, messages)
                .await?
            {
                Appended::Stored(tip) => {
                    branch.prints.extend(prints);
                    branch.tip = tip;
                    return Ok(());
                }
                Appended::Moved(back) => messages = back,
            }
            let before = branch.prints.len();
            branch.catch_up(service).await?;
            let exacts: Vec<Fingerprint> = messages.iter().map(exact).collect();
            let theirs = branch.prints.len() - before;
            let same = matched(&mut branch.prints[before..], &messages, &exacts, mask);
            if same == theirs || same == messages.len() {
                // What they stored is where ours go on from (or holds all of ours).
                messages.drain(..same);
                continue;
            }
            // Ours differ from theirs at `before + same`: a fork from the
            // exchange that holds it, with that exchange's messages up to
            // there read back and ours after them.
            let diverging = before + same;
            let exchange = branch.prints[diverging].exchange;
            let parent = self.session.clone();
            let keep = self
                .guard
                .fork(
                    service,
                    &self.key,
                    &self.project,
                    self.branch,
                    diverging,
                    self.system,
                )
                .await?;
            let after_previous = Tip(Some(MessageId {
                exchange: ExchangeId(exchange - 1),
                index: u32::MAX,
            }));
            let head: Vec<Message> = service
                .messages_after(&parent, after_previous)
                .await?
                .into_iter()
                .take(diverging - keep)
                .map(|(_, m)| m)
                .collect();
            self.branch = 0;
            self.session = self.guard.list[0].session.clone();
            messages.splice(..same, head);
        }
        Err(ServiceError::StoreUnavailable {
            why: format!(
                "session {}: other processes appended to it {APPEND_ATTEMPTS} times while this one tried to",
                self.session
            ),
            source: None,
        })
    }
}

async fn open(
    service: &Service,
    key: &Key,
    project: &str,
    parent: Option<(String, u32)>,
) -> Result<String, ServiceError> {
    // A fork keeps the workspace of the session it forks (`None`): it is
    // the same conversation, whatever this request says of its project.
    let workspace = parent.is_none().then(|| project.to_string());
    service
        .open_new_session(NewSession {
            workspace,
            title: Some(key.name.clone()),
            tenant: key.tenant.clone(),
            parent: parent.map(|(s, at)| (s, Some(at))),
            edge: Edge::Proxy,
            ..NewSession::default()
        })
        .await
}

/// A sub-agent's first request: a child session of `caller` after its
/// newest exchange, called with the sub-agent's first user message.
async fn open_call(
    service: &Service,
    key: &Key,
    (caller, at): (String, u32),
    query: &Message,
) -> Result<String, ServiceError> {
    let query = match query.content.trim() {
        "" => "(a sub-agent's call without text)".to_string(),
        text => text.to_string(),
    };
    service
        .open_new_session(NewSession {
            // The caller's workspace: a sub-agent works on its caller's project.
            workspace: None,
            title: Some(key.name.clone()),
            parent: Some((caller, Some(at))),
            child: Some(ChildCall {
                query,
                context: None,
                max_depth: service.config().calls.max_depth,
            }),
            ..NewSession::default()
        })
        .await
}

fn system_print(system: &str) -> Fingerprint {
    let mut out = [0; 16];
    out.copy_from_slice(&blake3::hash(system.as_bytes()).as_bytes()[..16]);
    out
}

/// The key's sessions in the store, newest first, with the fingerprints of
/// their messages as stored.
async fn load_branches(service: &Service, key: &Key) -> Result<Vec<Branch>, ServiceError> {
    let found = service
        .proxied_sessions(&key.tenant, Some(&key.name), BRANCHES_LOADED)
        .await?;
    Ok(branches(found))
}

/// The newest stored main branch, of any key, that `sent` resumes
/// (`Branch::resumed_by`): Qwen Code's `--continue`, which writes its
/// first message anew and so derives another key.
async fn resumed_branch(
    service: &Service,
    tenant: &str,
    sent: Sent<'_>,
    mask: bool,
) -> Result<Option<Branch>, ServiceError> {
    let found = service.proxied_sessions(tenant, None, RESUMABLE).await?;
    Ok(branches(found)
        .into_iter()
        .filter(|b| !b.called)
        .find_map(|mut b| b.resumed_by(sent.messages, sent.exacts, mask).then_some(b)))
}

fn branches(found: Vec<FoundSession>) -> Vec<Branch> {
    found
        .into_iter()
        .map(|s| Branch {
            called: s.called,
            tip: s.tip,
            session: s.session_id,
            prints: s
                .messages
                .iter()
                .map(|(exchange, m)| Print {
                    sent: None,
                    stored: Some(fingerprint(m)),
                    exchange: *exchange,
                })
                .collect(),
            system: s.system.as_deref().map(system_print),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use serde_json::json;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn keys_come_from_the_header_the_client_id_or_the_request() {
        let body = json!({"metadata": {"user_id": "user_ab_account_cd_session_1234-5678"}});
        let none = json!({});
        assert_eq!(
            session_key(
                &headers(&[
                    ("x-ctxproxy-session", "mine"),
                    ("x-claude-code-session-id", "cc")
                ]),
                &body,
                "",
                ""
            ),
            "name:mine"
        );
        assert_eq!(
            session_key(
                &headers(&[("x-claude-code-session-id", "cc")]),
                &body,
                "",
                ""
            ),
            "claude-code:cc"
        );
        assert_eq!(
            session_key(&headers(&[]), &body, "", ""),
            "claude-code:1234-5678"
        );
        let json_id =
            json!({"metadata": {"user_id": "{\"device_id\":\"d\",\"session_id\":\"s9\"}"}});
        assert_eq!(
            session_key(&headers(&[]), &json_id, "", ""),
            "claude-code:s9"
        );
        assert_eq!(
            session_key(&headers(&[("session-id", "cx")]), &none, "", ""),
            "codex:cx"
        );
        let cached = json!({"prompt_cache_key": "thread-1"});
        assert_eq!(
            session_key(&headers(&[("session-id", "cx")]), &cached, "", ""),
            "codex:cx"
        );
        assert_eq!(
            session_key(&headers(&[("x-session-id", "ses_1")]), &cached, "", ""),
            "session:ses_1"
        );
        assert_eq!(
            session_key(&headers(&[]), &cached, "", ""),
            "cache-key:thread-1"
        );
        let derived = session_key(&headers(&[]), &none, "sys", "hello");
        assert!(derived.starts_with("derived:"));
        assert_eq!(derived, session_key(&headers(&[]), &none, "sys", "hello"));
        assert_ne!(derived, session_key(&headers(&[]), &none, "sys", "hello!"));
    }

    #[test]
    fn fingerprints_ignore_whitespace_but_not_words() {
        let a = Message::new(Role::Assistant, "two  words\n");
        let b = Message::new(Role::Assistant, "two words");
        let c = Message::new(Role::User, "two words");
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&b), fingerprint(&c));
    }

    #[test]
    fn exact_fingerprints_tell_fields_apart() {
        let tool = |content: &str, id: &str| {
            let mut m = Message::new(Role::Tool, content);
            m.tool_call_id = Some(id.into());
            m
        };
        // The same bytes split differently between fields are another message.
        assert_ne!(exact(&tool("ab", "c")), exact(&tool("a", "bc")));
        assert_ne!(
            exact(&tool("ab", "")),
            exact(&Message::new(Role::Tool, "ab "))
        );
        assert_ne!(
            exact(&Message::new(Role::User, "x")),
            exact(&Message::new(Role::Assistant, "x"))
        );
        // Unlike `fingerprint`, whitespace counts.
        assert_ne!(
            exact(&Message::new(Role::User, "two words")),
            exact(&Message::new(Role::User, "two  words"))
        );
        assert_eq!(exact(&tool("ab", "c")), exact(&tool("ab", "c")));
    }

    /// A main branch that has stored `messages`.
    fn branch_of(messages: &[Message]) -> Branch {
        let mut b = Branch {
            session: "s".into(),
            prints: Vec::new(),
            tip: Tip::default(),
            system: None,
            called: false,
        };
        b.prints = b.prints_after(messages);
        b
    }

    fn exacts(messages: &[Message]) -> Vec<Fingerprint> {
        messages.iter().map(exact).collect()
    }

    #[test]
    fn a_branch_matches_an_echo_exactly_or_up_to_whitespace_and_stops_at_a_change() {
        let stored = [
            Message::new(Role::User, "run the tests"),
            Message::new(Role::Assistant, "All  passed.\n"),
            Message::new(Role::User, "thanks"),
        ];
        let mut b = branch_of(&stored);
        assert_eq!(b.matched(&stored, &exacts(&stored), false), 3);
        let mut respaced = stored.clone();
        respaced[1].content = "All passed.".into();
        assert_eq!(b.matched(&respaced, &exacts(&respaced), false), 3);
        // The respaced form is now the one remembered: matched exactly.
        assert_eq!(b.prints[1].sent.unwrap().0, exact(&respaced[1]));
        let mut edited = stored.clone();
        edited[1].content = "Two failed.".into();
        assert_eq!(b.matched(&edited, &exacts(&edited), false), 1);
    }

    #[test]
    fn a_branch_is_resumed_by_its_history_with_a_first_message_written_anew() {
        let stored = [
            Message::new(Role::User, "folder: a.txt"),
            Message::new(Role::User, "create hello.txt"),
            Message::new(Role::Assistant, "Created it."),
        ];
        let branch = || branch_of(&stored);
        let mut resumed = stored.to_vec();
        resumed[0].content = "folder: a.txt hello.txt".into();
        resumed.push(Message::new(Role::User, "what does it say?"));
        let mut b = branch();
        assert!(b.resumed_by(&resumed, &exacts(&resumed), false));
        // The first message's new form is the branch's now: matched as usual.
        assert_eq!(b.matched(&resumed, &exacts(&resumed), false), 3);

        // Not resumed: a history that is not longer, one that changes a later
        // message, one with no answer among what it repeats.
        let mut edited = resumed.clone();
        edited[2].content = "Failed.".into();
        assert!(!branch().resumed_by(&resumed[..3], &exacts(&resumed[..3]), false));
        assert!(!branch().resumed_by(&edited, &exacts(&edited), false));
        let questions = [
            Message::new(Role::User, "one"),
            Message::new(Role::User, "two"),
        ];
        let mut b = branch_of(&questions);
        let asked = [
            Message::new(Role::User, "zero"),
            Message::new(Role::User, "two"),
            Message::new(Role::User, "three"),
        ];
        assert!(!b.resumed_by(&asked, &exacts(&asked), false));
    }

    #[test]
    fn a_branch_numbers_exchanges_as_the_store_groups_them() {
        let b = branch_of(&[
            Message::new(Role::Assistant, "greeting"),
            Message::new(Role::User, "q1"),
            Message::new(Role::Assistant, "a1"),
            Message::new(Role::User, "q2"),
        ]);
        let exchanges: Vec<u32> = b.prints.iter().map(|p| p.exchange).collect();
        assert_eq!(exchanges, [1, 2, 2, 3]);
    }
}

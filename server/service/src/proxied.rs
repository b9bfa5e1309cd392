//! What the proxy reads and writes of the conversations it keeps: its
//! sessions found again by tenant and key, how far each goes (`Tip`), what
//! another process appended since, and appends that expect the session to
//! end where this process last saw it. A proxy's memory of a conversation
//! is a cache of these: any process on the store can serve any request.

use ctxproxy_core::ids::{MessageId, PromptId};
use ctxproxy_core::message::Message;
use ctxproxy_store::{settle, AppendedAt, ParentKind};
pub use ctxproxy_store::{OutsideCommits, Tip};

use crate::assemble;
use crate::format;
use crate::service::{Reply, Service};

/// A session the proxy opened, found again (`Service::proxied_sessions`).
pub struct FoundSession {
    pub session_id: String,
    /// Opened as a child call.
    pub called: bool,
    /// Its messages as stored, each with its exchange's number.
    pub messages: Vec<(u32, Message)>,
    /// Where its history ends.
    pub tip: Tip,
    /// The system prompt of its newest prompt; `None` before its first
    /// prompt or when that record does not read back.
    pub system: Option<String>,
}

/// Where a session the proxy opened ends (`Service::proxied_tips`).
pub struct ProxiedTip {
    pub session_id: String,
    /// Opened as a child call.
    pub called: bool,
    pub tip: Tip,
}

impl Service {
    /// The newest `limit` sessions the proxy opened for `tenant` (titled
    /// `title`, when given), newest first, each with its messages as stored
    /// (secrets masked, tool outputs whole) and the system prompt of its
    /// newest prompt: what the proxy needs to find a conversation again
    /// after a restart, or when a client resumes it under another name.
    pub async fn proxied_sessions(
        &self,
        tenant: &str,
        title: Option<&str>,
        limit: usize,
    ) -> Reply<Vec<FoundSession>> {
        let (tenant, title) = (tenant.to_string(), title.map(str::to_string));
        let found = self
            .store
            .read(move |r| {
                let mut out = Vec::new();
                for s in r.proxied_sessions(&tenant, title.as_deref(), limit)? {
                    let messages = r.session_messages_after(&s.id, Tip::default())?;
                    let tip = Tip(messages.last().map(|(id, _)| *id));
                    let record = match s.prompts {
                        0 => None,
                        n => Some(r.prompt(&s.id, PromptId(n))?),
                    };
                    let called = s.parent.is_some_and(|p| p.kind == ParentKind::Child);
                    out.push((s.id, called, messages, tip, record));
                }
                Ok(out)
            })
            .await?;
        // Records are read back off the writer's thread.
        Ok(found
            .into_iter()
            .map(|(session_id, called, messages, tip, record)| FoundSession {
                session_id,
                called,
                messages: messages
                    .into_iter()
                    .map(|(id, m)| (id.exchange.0, m))
                    .collect(),
                tip,
                system: record
                    .and_then(|r| assemble::read_record(&r, self.store.db_path()).ok())
                    .and_then(|prompt| format::system_of(&prompt.prompt)),
            })
            .collect())
    }

    /// Where each of the newest `limit` sessions the proxy opened for
    /// `tenant` under `title` ends, newest first: tells a process whether
    /// another appended to a conversation it keeps, or opened a branch of
    /// it. Read only when another process has committed to the store since
    /// `seen` (`None`: read), so a process that is the store's only writer
    /// reads nothing; with the mark to pass next time.
    pub async fn proxied_tips(
        &self,
        tenant: &str,
        title: &str,
        limit: usize,
        seen: Option<OutsideCommits>,
    ) -> Reply<(OutsideCommits, Option<Vec<ProxiedTip>>)> {
        let (tenant, title) = (tenant.to_string(), title.to_string());
        Ok(self
            .store
            .read_if_changed_elsewhere(seen, move |r| {
                let tips = r.proxied_tips(&tenant, &title, limit)?;
                Ok(tips
                    .into_iter()
                    .map(|(s, tip)| ProxiedTip {
                        tip,
                        called: s.parent.is_some_and(|p| p.kind == ParentKind::Child),
                        session_id: s.id,
                    })
                    .collect())
            })
            .await?)
    }

    /// The session's messages after `after` (secrets masked, tool outputs
    /// whole), each with its id.
    pub async fn messages_after(
        &self,
        session: &str,
        after: Tip,
    ) -> Reply<Vec<(MessageId, Message)>> {
        let session = session.to_string();
        Ok(self
            .store
            .read(move |r| r.session_messages_after(&session, after))
            .await?)
    }

    /// Appends `messages` to a session that still ends at `tip`, where this
    /// process last saw it. One another process appended to since is
    /// `Appended::Moved` and nothing is stored.
    pub async fn append_at(
        &self,
        session: &str,
        tip: Tip,
        messages: Vec<Message>,
    ) -> Reply<Appended> {
        let session = session.to_string();
        let done = settle(self.store.write_then(
            move |w| w.append_at(&session, tip, messages),
            self.store_events(|done: &AppendedAt| match done {
                AppendedAt::Stored(outcome) => &outcome.events,
                AppendedAt::Moved(_) => &[],
            }),
        ))
        .await?;
        Ok(match done {
            AppendedAt::Stored(outcome) => Appended::Stored(outcome.tip),
            AppendedAt::Moved(messages) => Appended::Moved(messages),
        })
    }

    pub async fn tip(&self, session: &str) -> Reply<Tip> {
        let session = session.to_string();
        Ok(self.store.read(move |r| r.tip(&session)).await?)
    }
}

/// What `Service::append_at` did.
pub enum Appended {
    /// Stored; the session now ends here.
    Stored(Tip),
    /// Another process appended since: nothing is stored, the messages are
    /// handed back.
    Moved(Vec<Message>),
}

//! Recorded sessions (`fixtures/README.md`, "The replay format", is their
//! format document): JSON Lines text to plain data, one exchange a line.
//! A file may hold several sessions ("Several sessions in one file"):
//! `session` lines declare forks and child calls, an exchange line's `in`
//! names its session, `supersedes` what it replaces. Every error names the
//! line and the field.

use serde_json::{Map, Value};

use crate::call;
use crate::ids::ExchangeId;
use crate::message::{Message, Role, ToolCall, UserKind};
use crate::message_json;
use crate::supersede::ExchangeRange;

/// One exchange line of a recorded session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedExchange {
    pub messages: Vec<Message>,
    pub needs: Vec<Need>,
    /// Earlier exchanges of its session this one replaces.
    pub supersedes: Vec<ExchangeRange>,
}

/// A file of one or more sessions, in the order things happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedFile {
    /// `main` first, then each declared session.
    pub sessions: Vec<RecordedSession>,
    pub steps: Vec<Step>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedSession {
    pub name: String,
    pub title: Option<String>,
    /// The project its sittings share (a fork or child is its parent's).
    pub project: Option<String>,
    pub origin: Origin,
}

/// How a session of the file begins; `from` indexes `RecordedFile::sessions`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A session of its own: `main`, or a new independent session (a new
    /// chat of the project, say).
    Main,
    /// Shares `from`'s first `at` exchanges.
    Fork { from: usize, at: u32 },
    /// A fresh session `from` called after its exchange `at`.
    Child {
        from: usize,
        at: u32,
        query: String,
        context: Option<String>,
    },
}

/// One line: a session declared (opened here) or an exchange of a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Open(usize),
    Exchange {
        session: usize,
        id: ExchangeId,
        exchange: RecordedExchange,
    },
}

impl RecordedSession {
    /// How many exchanges of its history the session shares with its
    /// parent (a fork's, up to its fork point); its own come after them.
    pub fn shared(&self) -> u32 {
        match self.origin {
            Origin::Fork { at, .. } => at,
            Origin::Main | Origin::Child { .. } => 0,
        }
    }

    /// What the session's history opens with before its own exchanges: a
    /// child's call (its query and context, as the runtime sends them);
    /// nothing for the main session and forks (a fork's shared exchanges
    /// are history).
    pub fn opening(&self) -> Vec<Message> {
        match &self.origin {
            Origin::Child { query, context, .. } => vec![Message::new(
                Role::User,
                call::call_message(query, context.as_deref().unwrap_or_default()),
            )],
            Origin::Main | Origin::Fork { .. } => Vec::new(),
        }
    }
}

impl RecordedFile {
    /// The whole history session `index` holds, oldest first: for a fork,
    /// the exchanges it shares with its parent, then its own. Exchange
    /// `x<N>` of the session is item N - 1.
    pub fn history(&self, index: usize) -> Vec<&RecordedExchange> {
        let session = &self.sessions[index];
        let mut out = match session.origin {
            Origin::Fork { from, .. } => {
                let mut shared = self.history(from);
                shared.truncate(session.shared() as usize);
                shared
            }
            Origin::Main | Origin::Child { .. } => Vec::new(),
        };
        out.extend(self.steps.iter().filter_map(|s| match s {
            Step::Exchange {
                session, exchange, ..
            } if *session == index => Some(exchange),
            _ => None,
        }));
        out
    }

    /// The exchange lines in file order.
    pub fn exchanges(&self) -> impl Iterator<Item = (usize, ExchangeId, &RecordedExchange)> {
        self.steps.iter().filter_map(|s| match s {
            Step::Exchange {
                session,
                id,
                exchange,
            } => Some((*session, *id, exchange)),
            Step::Open(_) => None,
        })
    }
}

/// A fact that answering an exchange needs from an earlier one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Need {
    /// Exact text of exchange `from`'s messages.
    pub fact: String,
    pub from: u32,
    /// The earlier session of the same project `from` is an exchange of
    /// (an index of `RecordedFile::sessions`); `None`: the line's own.
    pub session: Option<usize>,
    /// Words of the question that point at the fact.
    pub cues: Vec<String>,
}

/// Why a recorded session does not parse: `line` is 1-based, `field` a
/// path such as `messages[2].toolCalls[0].id`.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {field}: {why}")]
pub struct RecordedError {
    pub line: usize,
    pub field: String,
    pub why: String,
}

/// Parses a recorded session of one session (`main` alone); a file of
/// several is refused, naming its first `session` line.
pub fn parse(text: &str) -> Result<Vec<RecordedExchange>, RecordedError> {
    let file = parse_file(text)?;
    if file.sessions.len() > 1 {
        let line = lines(text)
            .find(|(_, l)| l.contains("\"session\""))
            .map_or(1, |(i, _)| i);
        return Err(RecordedError {
            line,
            field: "session".into(),
            why: "this reader takes a file of one session; `ctxproxy replay` reads several".into(),
        });
    }
    Ok(file
        .steps
        .into_iter()
        .filter_map(|s| match s {
            Step::Exchange { exchange, .. } => Some(exchange),
            Step::Open(_) => None,
        })
        .collect())
}

/// The non-blank lines, 1-based; a byte order mark is ignored.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i + 1, l))
}

/// Parses a recorded file of one or more sessions and checks how they
/// refer to each other: names, `from`, `atExchange`, `in`, `supersedes`
/// and each need's `from` against the session's exchanges so far.
pub fn parse_file(text: &str) -> Result<RecordedFile, RecordedError> {
    let mut file = RecordedFile {
        sessions: vec![RecordedSession {
            name: "main".into(),
            title: None,
            project: None,
            origin: Origin::Main,
        }],
        steps: Vec::new(),
    };
    // Exchanges each session holds so far (a fork's shared ones included).
    let mut counts: Vec<u32> = vec![0];
    for (line, text) in lines(text) {
        let fail = |(field, why): Bad| RecordedError { line, field, why };
        let v: Value =
            serde_json::from_str(text).map_err(|e| fail(bad("(line)", e.to_string())))?;
        let v = object(&v, "(line)").map_err(fail)?;
        if let Some(decl) = v.get("session") {
            // The first line may give `main` its title and project.
            let of_its_own = decl.get("fork").is_none() && decl.get("child").is_none();
            if file.steps.is_empty()
                && of_its_own
                && decl.get("name").and_then(Value::as_str) == Some("main")
            {
                let main = declared(decl, &[], &counts).map_err(fail)?;
                file.sessions[0] = main;
                continue;
            }
            let session = declared(decl, &file.sessions, &counts).map_err(fail)?;
            counts.push(session.shared());
            file.sessions.push(session);
            file.steps.push(Step::Open(file.sessions.len() - 1));
            continue;
        }
        let session = match string(v, "in", "").map_err(fail)? {
            None => 0,
            Some(name) => file
                .sessions
                .iter()
                .position(|s| s.name == name)
                .ok_or_else(|| {
                    fail(bad(
                        "in",
                        format!("no session {name:?} declared before this line"),
                    ))
                })?,
        };
        let exchange = exchange(v, &file.sessions).map_err(fail)?;
        counts[session] += 1;
        let id = ExchangeId(counts[session]);
        if let Some((i, r)) = exchange
            .supersedes
            .iter()
            .enumerate()
            .find(|(_, r)| r.last >= id)
        {
            return Err(fail(bad(
                format!("supersedes[{i}]"),
                format!("{r} is not earlier than this exchange, {id}"),
            )));
        }
        for (i, n) in exchange.needs.iter().enumerate() {
            let Some(other) = n.session else { continue };
            let field = format!("needs[{i}].session");
            let (own, theirs) = (&file.sessions[session], &file.sessions[other]);
            if other == session || own.project.is_none() || own.project != theirs.project {
                return Err(fail(bad(
                    field,
                    format!(
                        "{} is not an earlier session of this line's project",
                        theirs.name
                    ),
                )));
            }
            if n.from == 0 || n.from > counts[other] {
                return Err(fail(bad(
                    format!("needs[{i}].from"),
                    format!(
                        "{} has {} exchanges here, not x{}",
                        theirs.name, counts[other], n.from
                    ),
                )));
            }
        }
        if let Some((i, n)) = exchange
            .needs
            .iter()
            .enumerate()
            .filter(|(_, n)| n.session.is_none())
            .find(|(_, n)| n.from == 0 || n.from >= id.0)
        {
            return Err(fail(bad(
                format!("needs[{i}].from"),
                format!(
                    "{} is not an earlier exchange of this session ({id})",
                    n.from
                ),
            )));
        }
        file.steps.push(Step::Exchange {
            session,
            id,
            exchange,
        });
    }
    Ok(file)
}

/// A `session` line's declaration, checked against the sessions before it.
fn declared(
    v: &Value,
    sessions: &[RecordedSession],
    counts: &[u32],
) -> Result<RecordedSession, Bad> {
    let v = object(v, "session")?;
    known_fields(v, &["name", "title", "project", "fork", "child"], "session")?;
    let name = required(v, "name", "session")?;
    // `main` is declared only by the file's first line (`sessions` empty).
    if (name == "main" && !sessions.is_empty()) || sessions.iter().any(|s| s.name == name) {
        return Err(bad(
            "session.name",
            format!("{name:?} is already a session of this file"),
        ));
    }
    let title = string(v, "title", "session")?;
    let project = string(v, "project", "session")?;
    if project.as_deref() == Some("") {
        return Err(bad("session.project", "expected a non-empty name"));
    }
    let (kind, link) = match (v.get("fork"), v.get("child")) {
        (Some(f), None) => ("fork", f),
        (None, Some(c)) => ("child", c),
        (None, None) => {
            return Ok(RecordedSession {
                name,
                title,
                project,
                origin: Origin::Main,
            })
        }
        _ => return Err(bad("session", "expected at most one of fork and child")),
    };
    if name == "main" {
        return Err(bad(
            "session",
            "main is a session of its own: no fork or child",
        ));
    }
    let field = format!("session.{kind}");
    let link = object(link, &field)?;
    let known: &[&str] = match kind {
        "fork" => &["from", "atExchange"],
        _ => &["from", "atExchange", "query", "context"],
    };
    known_fields(link, known, &field)?;
    let parent = required(link, "from", &field)?;
    let from = sessions
        .iter()
        .position(|s| s.name == parent)
        .ok_or_else(|| {
            bad(
                format!("{field}.from"),
                format!("no session {parent:?} declared before"),
            )
        })?;
    let at = link
        .get("atExchange")
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| bad(format!("{field}.atExchange"), "expected an exchange number"))?;
    if at > counts[from] {
        return Err(bad(
            format!("{field}.atExchange"),
            format!(
                "{parent} has {} exchanges at this line, not {at}",
                counts[from]
            ),
        ));
    }
    let origin = match kind {
        "fork" => Origin::Fork { from, at },
        _ => Origin::Child {
            from,
            at,
            query: required(link, "query", &field)?,
            context: string(link, "context", &field)?,
        },
    };
    let inherited = sessions[from].project.clone();
    if project.is_some() && project != inherited {
        return Err(bad(
            "session.project",
            format!("a {kind} is of its parent's project ({inherited:?})"),
        ));
    }
    Ok(RecordedSession {
        name,
        title,
        project: inherited,
        origin,
    })
}

/// A field's path and what is wrong with it.
type Bad = (String, String);

fn bad(field: impl Into<String>, why: impl Into<String>) -> Bad {
    (field.into(), why.into())
}

fn exchange(v: &Map<String, Value>, sessions: &[RecordedSession]) -> Result<RecordedExchange, Bad> {
    let messages = array(v, "messages", "messages")?
        .ok_or_else(|| bad("messages", "missing"))?
        .iter()
        .enumerate()
        .map(|(i, m)| message(m, &format!("messages[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    if messages.first().map(|m| m.role) != Some(Role::User) {
        return Err(bad(
            "messages[0].role",
            "an exchange opens with a user message",
        ));
    }
    let needs = needs_of(v.get("needs"), sessions)?;
    let supersedes = array(v, "supersedes", "supersedes")?
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, r)| {
            let field = format!("supersedes[{i}]");
            let raw = r.as_str().ok_or_else(|| bad(&field, "expected a string"))?;
            ExchangeRange::parse(raw).map_err(|e| bad(&field, e.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(RecordedExchange {
        messages,
        needs,
        supersedes,
    })
}

/// A line's `needs` (absent or null: none).
fn needs_of(v: Option<&Value>, sessions: &[RecordedSession]) -> Result<Vec<Need>, Bad> {
    let list = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(a)) => a,
        Some(_) => return Err(bad("needs", "expected an array")),
    };
    list.iter()
        .enumerate()
        .map(|(i, n)| need(n, &format!("needs[{i}]"), sessions))
        .collect()
}

fn object<'a>(v: &'a Value, field: &str) -> Result<&'a Map<String, Value>, Bad> {
    v.as_object()
        .ok_or_else(|| bad(field, "expected an object"))
}

fn array<'a>(
    v: &'a Map<String, Value>,
    key: &str,
    field: &str,
) -> Result<Option<&'a Vec<Value>>, Bad> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) => Ok(Some(a)),
        Some(_) => Err(bad(field, "expected an array")),
    }
}

fn string(v: &Map<String, Value>, key: &str, field: &str) -> Result<Option<String>, Bad> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(bad(format!("{field}.{key}"), "expected a string")),
    }
}

fn required(v: &Map<String, Value>, key: &str, field: &str) -> Result<String, Bad> {
    string(v, key, field)?.ok_or_else(|| bad(format!("{field}.{key}"), "missing"))
}

/// The fields a message line may have; any other is refused, as
/// `ctx/append` refuses it (an OpenAI spelling such as `tool_calls` would
/// otherwise be dropped silently).
const MESSAGE_FIELDS: [&str; 8] = [
    "role",
    "content",
    "kind",
    "toolCalls",
    "toolCallId",
    "name",
    "agent",
    "at",
];
const TOOL_CALL_FIELDS: [&str; 3] = ["id", "name", "arguments"];

fn known_fields(v: &Map<String, Value>, known: &[&str], field: &str) -> Result<(), Bad> {
    match v.keys().find(|k| !known.contains(&k.as_str())) {
        None => Ok(()),
        Some(k) => Err(bad(
            format!("{field}.{k}"),
            format!("unknown field, expected one of {}", known.join(", ")),
        )),
    }
}

fn message(v: &Value, field: &str) -> Result<Message, Bad> {
    let v = object(v, field)?;
    known_fields(v, &MESSAGE_FIELDS, field)?;
    let in_message = |e: message_json::FieldError| bad(format!("{field}.{}", e.field), e.why);
    let role = required(v, "role", field)?;
    let role = Role::parse(&role).ok_or_else(|| {
        bad(
            format!("{field}.role"),
            format!("expected user, assistant, tool or system, got {role:?}"),
        )
    })?;
    let kind = match string(v, "kind", field)? {
        None => None,
        Some(k) => Some(UserKind::parse(&k).ok_or_else(|| {
            bad(
                format!("{field}.kind"),
                format!("expected query or feedback, got {k:?}"),
            )
        })?),
    };
    let tool_calls = array(v, "toolCalls", &format!("{field}.toolCalls"))?
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, c)| tool_call(c, &format!("{field}.toolCalls[{i}]")))
        .collect::<Result<Vec<_>, _>>()?;
    let (content, raw) =
        message_json::content_from_json(role, v.get("content").unwrap_or(&Value::Null))
            .map_err(in_message)?;
    let mut m = Message::new(role, content);
    m.raw = raw;
    m.kind = kind;
    m.tool_calls = tool_calls;
    m.tool_call_id = string(v, "toolCallId", field)?;
    m.name = string(v, "name", field)?;
    m.agent = string(v, "agent", field)?;
    m.at = string(v, "at", field)?;
    message_json::check(&m).map_err(in_message)?;
    Ok(m)
}

/// A tool call; its `arguments` are a JSON object (kept as its JSON text)
/// or already text.
fn tool_call(v: &Value, field: &str) -> Result<ToolCall, Bad> {
    let v = object(v, field)?;
    known_fields(v, &TOOL_CALL_FIELDS, field)?;
    Ok(ToolCall {
        id: required(v, "id", field)?,
        name: required(v, "name", field)?,
        arguments: message_json::arguments_from_json(v.get("arguments")),
    })
}

fn need(v: &Value, field: &str, sessions: &[RecordedSession]) -> Result<Need, Bad> {
    let v = object(v, field)?;
    let from = v
        .get("from")
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| bad(format!("{field}.from"), "expected an exchange number"))?;
    let cues = array(v, "cues", &format!("{field}.cues"))?
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, c)| {
            c.as_str()
                .map(str::to_string)
                .ok_or_else(|| bad(format!("{field}.cues[{i}]"), "expected a string"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let session = match string(v, "session", field)? {
        None => None,
        Some(name) => Some(
            sessions
                .iter()
                .position(|s| s.name == name)
                .ok_or_else(|| {
                    bad(
                        format!("{field}.session"),
                        format!("no session {name:?} declared before this line"),
                    )
                })?,
        ),
    };
    Ok(Need {
        fact: required(v, "fact", field)?,
        from,
        session,
        cues,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_messages_calls_and_needs() {
        let text = concat!(
            "\u{feff}{\"messages\": [{\"role\": \"user\", \"content\": \"read a.rs\", \"kind\": \"query\", \"at\": \"2026-11-21T10:00:00Z\"},",
            " {\"role\": \"assistant\", \"content\": \"\", \"toolCalls\": [{\"id\": \"c1\", \"name\": \"read_file\", \"arguments\": {\"path\": \"a.rs\"}}]},",
            " {\"role\": \"tool\", \"toolCallId\": \"c1\", \"name\": \"read_file\", \"content\": \"fn a() {}\"}]}\n",
            "\n",
            "{\"messages\": [{\"role\": \"user\", \"content\": \"what is in a.rs?\"}], \"needs\": [{\"fact\": \"fn a()\", \"from\": 1, \"cues\": [\"a.rs\"]}]}\n",
            "{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"a\"}, {\"type\": \"text\", \"text\": \"b\"}]},",
            " {\"role\": \"tool\", \"name\": \"cat\", \"content\": {\"base64\": \"//4=\"}}]}\n",
        );
        let session = parse(text).unwrap();
        assert_eq!(session.len(), 3);
        let first = &session[0].messages;
        assert_eq!(first[0].kind, Some(UserKind::Query));
        assert_eq!(first[0].at.as_deref(), Some("2026-11-21T10:00:00Z"));
        assert_eq!(first[1].tool_calls[0].arguments, r#"{"path":"a.rs"}"#);
        assert_eq!(first[2].tool_call_id.as_deref(), Some("c1"));
        assert_eq!(
            session[2].messages[1].raw.as_deref(),
            Some(&[0xff, 0xfe][..])
        );
        assert_eq!(session[2].messages[0].content, "ab");
        assert_eq!(
            session[1].needs,
            [Need {
                fact: "fn a()".into(),
                from: 1,
                session: None,
                cues: vec!["a.rs".into()]
            }]
        );
    }

    #[test]
    fn reads_sittings_of_projects_and_needs_across_them() {
        let text = [
            r#"{"session": {"name": "main", "title": "first", "project": "app"}}"#.to_string(),
            line(""),
            r#"{"session": {"name": "s2", "project": "app"}}"#.into(),
            r#"{"session": {"name": "o1", "project": "other"}}"#.into(),
            line(r#", "in": "s2", "needs": [{"fact": "q", "from": 1, "session": "main"}]"#),
            line(r#", "in": "o1""#),
        ]
        .join("\n");
        let file = parse_file(&text).unwrap();
        let projects: Vec<_> = file.sessions.iter().map(|s| s.project.as_deref()).collect();
        assert_eq!(projects, [Some("app"), Some("app"), Some("other")]);
        assert_eq!(file.sessions[0].title.as_deref(), Some("first"));
        assert!(file.sessions.iter().all(|s| s.origin == Origin::Main));
        let Step::Exchange { exchange, id, .. } = &file.steps[3] else {
            panic!("an exchange")
        };
        assert_eq!((id.0, exchange.needs[0].session), (1, Some(0)));
        for (needs, why) in [
            (
                r#""in": "o1", "needs": [{"fact": "q", "from": 1, "session": "main"}]"#,
                "line 5: needs[0].session: main is not an earlier session of this line's project",
            ),
            (
                r#""in": "s2", "needs": [{"fact": "q", "from": 2, "session": "main"}]"#,
                "line 5: needs[0].from: main has 1 exchanges here, not x2",
            ),
        ] {
            let mut bad = text.lines().take(4).map(str::to_string).collect::<Vec<_>>();
            bad.push(line(&format!(", {needs}")));
            let e = parse_file(&bad.join("\n")).unwrap_err();
            assert_eq!(e.to_string(), why);
        }
    }

    /// A line of the `main` session or of `in`, asking `q`.
    fn line(extra: &str) -> String {
        format!("{{\"messages\": [{{\"role\": \"user\", \"content\": \"q\"}}]{extra}}}")
    }

    #[test]
    fn several_sessions_forks_children_and_supersedes() {
        let text = [
            line(""),
            line(""),
            r#"{"session": {"name": "b1", "title": "other", "fork": {"from": "main", "atExchange": 1}}}"#.into(),
            line(r#", "in": "b1", "supersedes": ["x1"]"#),
            r#"{"session": {"name": "c1", "child": {"from": "b1", "atExchange": 2, "query": "sub", "context": "ctx"}}}"#.into(),
            line(r#", "in": "c1""#),
            line(r#", "supersedes": ["x1-x2"], "needs": [{"fact": "q", "from": 2}]"#),
        ]
        .join("\n");
        let file = parse_file(&text).unwrap();
        let names: Vec<_> = file
            .sessions
            .iter()
            .map(|s| (s.name.as_str(), s.origin.clone()))
            .collect();
        assert_eq!(
            names,
            [
                ("main", Origin::Main),
                ("b1", Origin::Fork { from: 0, at: 1 }),
                (
                    "c1",
                    Origin::Child {
                        from: 1,
                        at: 2,
                        query: "sub".into(),
                        context: Some("ctx".into())
                    }
                ),
            ]
        );
        let ids: Vec<_> = file
            .exchanges()
            .map(|(s, id, x)| (s, id.0, x.supersedes.len()))
            .collect();
        assert_eq!(ids, [(0, 1, 0), (0, 2, 0), (1, 2, 1), (2, 1, 0), (0, 3, 1)]);
        assert_eq!(
            file.history(1).len(),
            2,
            "b1 shares main's x1 and has its own x2"
        );
        assert_eq!(file.history(2).len(), 1, "a child inherits nothing");
        assert_eq!(file.history(0).len(), 3);
        assert!(parse(&text)
            .unwrap_err()
            .to_string()
            .starts_with("line 3: session: this reader takes a file of one session"));

        let cases = [
            (
                r#"{"session": {"name": "main", "fork": {"from": "main", "atExchange": 0}}}"#,
                "line 1: session.name: \"main\" is already a session of this file",
            ),
            (
                r#"{"session": {"name": "b", "fork": {"from": "nope", "atExchange": 0}}}"#,
                "line 1: session.fork.from: no session \"nope\" declared before",
            ),
            (
                r#"{"session": {"name": "b", "fork": {"from": "main", "atExchange": 1}}}"#,
                "line 1: session.fork.atExchange: main has 0 exchanges at this line, not 1",
            ),
            (
                r#"{"session": {"name": "b", "fork": {"from": "main", "atExchange": 0}, "child": {}}}"#,
                "line 1: session: expected at most one of fork and child",
            ),
            (
                r#"{"session": {"name": "b", "child": {"from": "main", "atExchange": 0}}}"#,
                "line 1: session.child.query: missing",
            ),
            (
                &line(r#", "in": "b2""#),
                "line 1: in: no session \"b2\" declared before this line",
            ),
            (
                &line(r#", "supersedes": ["x1"]"#),
                "line 1: supersedes[0]: x1 is not earlier than this exchange, x1",
            ),
            (
                &line(r#", "supersedes": ["x2-x1"]"#),
                "line 1: supersedes[0]: expected x<K> or x<K>-x<M>, got \"x2-x1\"",
            ),
            (
                &line(r#", "needs": [{"fact": "f", "from": 1}]"#),
                "line 1: needs[0].from: 1 is not an earlier exchange of this session (x1)",
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(
                parse_file(text).unwrap_err().to_string(),
                expected,
                "{text}"
            );
        }
    }

    #[test]
    fn errors_name_the_line_and_the_field() {
        let cases = [
            ("{\"messages\": []}", "line 1: messages[0].role: an exchange opens with a user message"),
            ("\n{\"messages\": [{\"role\": \"bot\"}]}", "line 2: messages[0].role: expected user, assistant, tool or system, got \"bot\""),
            ("{\"messages\": [{\"role\": \"user\", \"content\": \"q\", \"toolCalls\": [{\"name\": \"x\"}]}]}", "line 1: messages[0].toolCalls[0].id: missing"),
            ("{\"messages\": [{\"role\": \"user\", \"content\": \"q\"}], \"needs\": [{\"fact\": \"f\"}]}", "line 1: needs[0].from: expected an exchange number"),
            ("{\"needs\": []}", "line 1: messages: missing"),
            ("{\"messages\": [{\"role\": \"user\", \"content\": \"q\", \"tool_calls\": []}]}", "line 1: messages[0].tool_calls: unknown field, expected one of role, content, kind, toolCalls, toolCallId, name, agent, at"),
            ("{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"image\"}]}]}", "line 1: messages[0].content[0]: expected a {type: \"text\", text} part"),
            ("{\"messages\": [{\"role\": \"user\", \"content\": \"q\"}, {\"role\": \"tool\", \"content\": {\"base64\": \"aGk=\"}}]}", "line 1: messages[1].toolCallId: a tool message needs toolCallId or name"),
            ("{\"messages\": [{\"role\": \"user\", \"content\": \"q\"}, {\"role\": \"assistant\", \"content\": \"a\", \"kind\": \"query\"}]}", "line 1: messages[1].kind: only user messages have a kind"),
        ];
        for (text, expected) in cases {
            assert_eq!(parse(text).unwrap_err().to_string(), expected, "{text}");
        }
    }
}

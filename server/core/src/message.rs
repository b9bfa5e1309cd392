//! Chat messages as plain data. The wire shape lives in the `ctxproxy` crate.

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    User,
    Assistant,
    Tool,
    System,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
            Role::System => "system",
        }
    }
}

crate::wire_name!(Role: User, Assistant, Tool, System);

/// What a user message is: a new request, or feedback on the last answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UserKind {
    Query,
    Feedback,
}

impl UserKind {
    pub fn as_str(self) -> &'static str {
        match self {
            UserKind::Query => "query",
            UserKind::Feedback => "feedback",
        }
    }
}

crate::wire_name!(UserKind: Query, Feedback);

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as compact JSON text, exactly as received.
    pub arguments: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub role: Role,
    pub content: String,
    /// A tool output's bytes when they are not UTF-8 (sent as base64): kept
    /// and returned exactly; `content` is then empty until the store puts
    /// the digest there.
    pub raw: Option<Vec<u8>>,
    pub kind: Option<UserKind>,
    pub tool_calls: Vec<ToolCall>,
    pub tool_call_id: Option<String>,
    pub name: Option<String>,
    pub agent: Option<String>,
    pub at: Option<String>,
}

impl Message {
    pub fn new(role: Role, content: impl Into<String>) -> Message {
        Message {
            role,
            content: content.into(),
            raw: None,
            kind: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
            agent: None,
            at: None,
        }
    }

    /// A user message opens a new exchange.
    pub fn opens_exchange(&self) -> bool {
        self.role == Role::User
    }
}

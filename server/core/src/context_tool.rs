//! The context tools: the two tools a layered prompt offers the model so it
//! can pull older context back by id (`context_retrieve`) or find it
//! (`context_search`). Their names and their definitions, the schema the
//! model reads, live here and nowhere else; the service reads a call's
//! arguments, runs it and renders its answer (`ctxproxy_service::context_tool`).

use std::fmt;

/// One of the tools ctxproxy answers itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContextTool {
    Retrieve,
    Search,
}

/// A name that is not a context tool's. Only the context tools are
/// ctxproxy's to answer: any other name is an error, never a guess.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown tool `{0}`: the context tools are context_retrieve and context_search")]
pub struct UnknownTool(pub String);

impl ContextTool {
    pub const ALL: [ContextTool; 2] = [ContextTool::Retrieve, ContextTool::Search];

    /// The names, in the order the definitions list them.
    pub const NAMES: [&'static str; 2] = [ContextTool::Retrieve.name(), ContextTool::Search.name()];

    pub const fn name(self) -> &'static str {
        match self {
            ContextTool::Retrieve => "context_retrieve",
            ContextTool::Search => "context_search",
        }
    }

    /// The tool a call names.
    pub fn named(name: &str) -> Result<ContextTool, UnknownTool> {
        ContextTool::ALL
            .into_iter()
            .find(|t| t.name() == name)
            .ok_or_else(|| UnknownTool(name.to_string()))
    }

    /// The tool as an OpenAI function definition (`name`, `description`,
    /// `parameters`); other API shapes take the same three fields. The
    /// parameters are what `ctxproxy_service::context_tool` reads.
    pub fn definition(self) -> serde_json::Value {
        let (description, parameters) = match self {
            ContextTool::Retrieve => (
                "Fetch earlier conversation content by id: exchanges (x12), messages (x12.3) or stored tool outputs (b3:...). Use format header, summary or full; for blobs, lines [first,last] or grep.",
                serde_json::json!({"type": "object", "properties": {
                    "ids": {"type": "array", "items": {"type": "string"}},
                    "format": {"type": "string", "enum": ["header", "summary", "full"]},
                    "lines": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
                    "grep": {"type": "string"},
                    "maxTokens": {"type": "integer"}
                }, "required": ["ids"]}),
            ),
            ContextTool::Search => (
                "Full-text search over every stored exchange of this session; returns ids and headers.",
                serde_json::json!({"type": "object", "properties": {
                    "query": {"type": "string"},
                    "limit": {"type": "integer"}
                }, "required": ["query"]}),
            ),
        };
        serde_json::json!({"type": "function", "function": {
            "name": self.name(),
            "description": description,
            "parameters": parameters,
        }})
    }
}

impl fmt::Display for ContextTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether a call of `name` is ctxproxy's to answer (the client's
/// otherwise).
pub fn is_context_tool(name: &str) -> bool {
    ContextTool::named(name).is_ok()
}

/// The tools every layered prompt offers, as OpenAI function definitions.
pub fn definitions() -> serde_json::Value {
    serde_json::Value::Array(ContextTool::ALL.map(ContextTool::definition).to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_and_others_are_unknown() {
        for tool in ContextTool::ALL {
            assert_eq!(ContextTool::named(tool.name()), Ok(tool));
            assert_eq!(
                definitions()[tool as usize]["function"]["name"],
                tool.name()
            );
        }
        for other in ["shell", "", "Context_Retrieve", "context_retrieve "] {
            assert_eq!(ContextTool::named(other), Err(UnknownTool(other.into())));
        }
        assert_eq!(
            UnknownTool("shell".into()).to_string(),
            "unknown tool `shell`: the context tools are context_retrieve and context_search"
        );
    }
}

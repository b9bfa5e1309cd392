//! The context tools run: a call's arguments read (errors name the field),
//! the call dispatched to `ctx/retrieve` or `ctx/search`, and the answer
//! rendered as the text the model reads. The proxy answers the model's calls
//! with it and `ctx/callContextTool` hands an editor's chat loop the same
//! text, so a model reads one rendering whichever edge it came through.
//! The names and the definitions the model is offered are core's
//! (`ctxproxy_core::context_tool`).

use serde::Deserialize;
use serde_json::Value;

pub use ctxproxy_core::context_tool::{ContextTool, UnknownTool};

use crate::api::{
    CallContextToolParams, CallContextToolResult, RetrieveFormat, RetrieveParams, RetrieveResult,
    RetrievedItem, SearchParams, SearchResult,
};
use crate::error::ServiceError;
use crate::from_json;
use crate::service::Service;

/// `context_retrieve`'s arguments, as its definition names them.
#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetrieveArgs {
    pub ids: Vec<String>,
    pub format: Option<RetrieveFormat>,
    pub lines: Option<[u32; 2]>,
    pub grep: Option<String>,
    pub max_tokens: Option<u32>,
}

/// `context_search`'s arguments: a search of the caller's own session.
#[derive(Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    pub query: String,
    pub limit: Option<u32>,
}

/// A context-tool call, read: the tool and its arguments.
#[derive(Debug, PartialEq)]
pub enum ContextToolCall {
    Retrieve(RetrieveArgs),
    Search(SearchArgs),
}

/// Why a context-tool call got no answer. Its text is what the model reads
/// in place of one (the proxy answers a call with it: one bad call does not
/// end the turn), and `ctx/callContextTool`'s error message.
#[derive(Debug, thiserror::Error)]
pub enum ContextToolError {
    #[error(transparent)]
    UnknownTool(#[from] UnknownTool),
    /// The arguments are not JSON, or not the tool's; the source names the field.
    #[error("{tool} failed: arguments: {source}")]
    Arguments {
        tool: ContextTool,
        #[source]
        source: ServiceError,
    },
    /// The call itself failed (an unknown session, the store).
    #[error("{tool} failed: {source}")]
    Failed {
        tool: ContextTool,
        #[source]
        source: ServiceError,
    },
}

impl ContextToolError {
    /// The JSON-RPC code of `ctx/callContextTool`'s error: a bad name or
    /// bad arguments are bad params, a failed call keeps its own code.
    pub fn code(&self) -> i64 {
        match self {
            ContextToolError::UnknownTool(_) | ContextToolError::Arguments { .. } => -32602,
            ContextToolError::Failed { source, .. } => source.code(),
        }
    }
}

impl ContextToolCall {
    /// A call of the tool `name` with `arguments`, a JSON object (null and
    /// an absent object read as `{}`).
    pub fn read(name: &str, arguments: Value) -> Result<ContextToolCall, ContextToolError> {
        let tool = ContextTool::named(name)?;
        let bad = |source| ContextToolError::Arguments { tool, source };
        Ok(match tool {
            ContextTool::Retrieve => {
                ContextToolCall::Retrieve(from_json::parse(arguments).map_err(bad)?)
            }
            ContextTool::Search => {
                ContextToolCall::Search(from_json::parse(arguments).map_err(bad)?)
            }
        })
    }

    /// A call whose arguments are JSON text, as model APIs send them (blank
    /// text reads as `{}`, so that the error names the missing field).
    pub fn read_text(name: &str, arguments: &str) -> Result<ContextToolCall, ContextToolError> {
        let tool = ContextTool::named(name)?;
        let value = match arguments.trim() {
            "" => Value::Null,
            text => serde_json::from_str(text).map_err(|e| ContextToolError::Arguments {
                tool,
                source: ServiceError::InvalidParams(format!("not JSON: {e}")),
            })?,
        };
        ContextToolCall::read(name, value)
    }

    pub fn tool(&self) -> ContextTool {
        match self {
            ContextToolCall::Retrieve(_) => ContextTool::Retrieve,
            ContextToolCall::Search(_) => ContextTool::Search,
        }
    }
}

impl Service {
    /// Runs a context-tool call in `session` and renders its answer as the
    /// text the model reads.
    pub async fn run_context_tool(
        &self,
        session: &str,
        call: ContextToolCall,
    ) -> Result<String, ContextToolError> {
        let tool = call.tool();
        let session_id = session.to_string();
        let answer = match call {
            ContextToolCall::Retrieve(a) => self
                .retrieve(RetrieveParams {
                    session_id,
                    ids: a.ids,
                    format: a.format,
                    lines: a.lines,
                    grep: a.grep,
                    max_tokens: a.max_tokens,
                })
                .await
                .map(|r| render_retrieve(&r)),
            ContextToolCall::Search(a) => self
                .search(SearchParams {
                    session_id: Some(session_id),
                    // The model's search covers the project's other
                    // sessions, as its memory does.
                    project: Some(true),
                    workspace: None,
                    query: a.query,
                    limit: a.limit,
                })
                .await
                .map(|r| render_search(&r)),
        };
        answer.map_err(|source| ContextToolError::Failed { tool, source })
    }

    /// The text a model reads for its call of `name` with `arguments` (JSON
    /// text): the answer, or why there is none.
    pub async fn answer_context_call(&self, session: &str, name: &str, arguments: &str) -> String {
        let answer = match ContextToolCall::read_text(name, arguments) {
            Ok(call) => self.run_context_tool(session, call).await,
            Err(e) => Err(e),
        };
        answer.unwrap_or_else(|e| e.to_string())
    }

    /// `ctx/callContextTool`: an editor's chat loop hands over its model's
    /// call and gets back the text to give the model.
    pub async fn call_context_tool(
        &self,
        p: CallContextToolParams,
    ) -> Result<CallContextToolResult, ContextToolError> {
        let call = ContextToolCall::read(&p.name, p.arguments)?;
        let text = self.run_context_tool(&p.session_id, call).await?;
        Ok(CallContextToolResult { text })
    }
}

/// Each item as a `## id (format, N tokens)` heading over its text; a
/// failed item as its error, in its place.
fn render_retrieve(result: &RetrieveResult) -> String {
    listed(&result.items, "No items.", "\n\n", |item| match item {
        RetrievedItem::Failed(f) => {
            format!("## {}: error {}: {}", f.id, f.error.code, f.error.message)
        }
        RetrievedItem::Found(item) => {
            let mut notes = vec![
                item.format.as_str().to_string(),
                format!("{} tokens", item.tokens),
            ];
            if item.truncated {
                notes.push("truncated".into());
            }
            format!("## {} ({})\n{}", item.id, notes.join(", "), item.text)
        }
    })
}

/// One line per hit (`id [session] header`), its snippet under it (the
/// words around the match, `…` where FTS5 cut it), so that the model can
/// tell the right exchange before it retrieves it.
fn render_search(result: &SearchResult) -> String {
    listed(&result.hits, "No matches.", "\n", |h| {
        let mut line = format!("{} [{}] {}", h.id, h.session_id, h.header);
        if !h.snippet.is_empty() {
            line.push_str("\n  ");
            line.push_str(&h.snippet);
        }
        line
    })
}

/// Each of `items` rendered, joined by `separator`; `none` says there are
/// none, so that the model never reads an empty answer.
fn listed<T>(items: &[T], none: &str, separator: &str, render: impl Fn(&T) -> String) -> String {
    if items.is_empty() {
        return none.to_string();
    }
    items.iter().map(render).collect::<Vec<_>>().join(separator)
}

#[cfg(test)]
mod tests;

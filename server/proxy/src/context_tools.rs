//! Answers the model's `context_retrieve` and `context_search` calls through
//! the `Service`, as the text the model reads (the same rendering as the VS
//! Code participant's). A failed call is text too: one bad call does not
//! end the turn.

use serde::Deserialize;

use super::api::ContextCall;
use ctxproxy_service::api::{
    RetrieveFormat, RetrieveParams, RetrieveResult, RetrievedItem, SearchParams, SearchResult,
};
use ctxproxy_service::service::Service;

/// `context_retrieve`'s arguments as the tool definition names them.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RetrieveArgs {
    ids: Vec<String>,
    format: Option<RetrieveFormat>,
    lines: Option<[u32; 2]>,
    grep: Option<String>,
    max_tokens: Option<u32>,
}

#[derive(Deserialize)]
struct SearchArgs {
    query: String,
    limit: Option<u32>,
}

/// The answer to each call, in order.
pub async fn answer_all(
    service: &Service,
    session: &str,
    calls: &[ContextCall],
) -> Vec<(ContextCall, String)> {
    let mut out = Vec::with_capacity(calls.len());
    for call in calls {
        out.push((call.clone(), answer(service, session, call).await));
    }
    out
}

async fn answer(service: &Service, session: &str, call: &ContextCall) -> String {
    let result = match call.name.as_str() {
        "context_retrieve" => match serde_json::from_str::<RetrieveArgs>(&call.arguments) {
            Ok(a) => service
                .retrieve(RetrieveParams {
                    session_id: session.to_string(),
                    ids: a.ids,
                    format: a.format,
                    lines: a.lines,
                    grep: a.grep,
                    max_tokens: a.max_tokens,
                })
                .await
                .map(|v| render_retrieve(&v)),
            Err(e) => return format!("context_retrieve failed: arguments: {e}"),
        },
        _ => match serde_json::from_str::<SearchArgs>(&call.arguments) {
            Ok(a) => service
                .search(SearchParams {
                    session_id: Some(session.to_string()),
                    // The model's search covers the project's other
                    // sessions, as its memory does.
                    project: Some(true),
                    workspace: None,
                    query: a.query,
                    limit: a.limit,
                })
                .await
                .map(|v| render_search(&v)),
            Err(e) => return format!("context_search failed: arguments: {e}"),
        },
    };
    result.unwrap_or_else(|e| format!("{} failed: {e}", call.name))
}

fn render_retrieve(result: &RetrieveResult) -> String {
    if result.items.is_empty() {
        return "No items.".into();
    }
    result
        .items
        .iter()
        .map(|item| match item {
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
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn render_search(result: &SearchResult) -> String {
    if result.hits.is_empty() {
        return "No matches.".into();
    }
    result
        .hits
        .iter()
        .map(|h| format!("{} [{}] {}", h.id, h.session_id, h.header))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_read_as_the_participant_renders_them() {
        let retrieved: RetrieveResult = serde_json::from_value(json!({"items": [
            {"id": "x2", "kind": "exchange", "format": "summary", "tokens": 12, "truncated": false,
             "text": "asked for tests", "at": null, "outcome": "completed"},
            {"id": "b3:ff", "error": {"code": -32002, "message": "no blob b3:ff"}},
        ]}))
        .unwrap();
        assert_eq!(
            render_retrieve(&retrieved),
            "## x2 (summary, 12 tokens)\nasked for tests\n\n## b3:ff: error -32002: no blob b3:ff"
        );
        let found: SearchResult = serde_json::from_value(json!({"hits": [
            {"id": "x3", "sessionId": "s-1", "header": "ran pytest", "snippet": "pytest", "score": 1.0}
        ]}))
        .unwrap();
        assert_eq!(render_search(&found), "x3 [s-1] ran pytest");
        assert_eq!(
            render_search(&SearchResult { hits: Vec::new() }),
            "No matches."
        );
    }
}

//! Answers the model's context-tool calls through the `Service`, as the text
//! the model reads (`Service::answer_context_call`: the same text
//! `ctx/callContextTool` gives an editor). A failed call is text too: one
//! bad call does not end the turn.

use ctxproxy_core::message::ToolCall;
use ctxproxy_service::service::Service;

/// The answer to each call, in order.
pub async fn answer_all(
    service: &Service,
    session: &str,
    calls: &[ToolCall],
) -> Vec<(ToolCall, String)> {
    let mut out = Vec::with_capacity(calls.len());
    for call in calls {
        let text = service
            .answer_context_call(session, &call.name, &call.arguments)
            .await;
        out.push((call.clone(), text));
    }
    out
}

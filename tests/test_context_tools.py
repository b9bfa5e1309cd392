"""The context tools answer with one text whichever edge a model reaches
them through: what the proxy puts in front of the model in its internal
round is what `ctx/callContextTool` answers an editor's chat loop for the
same call in the same session, found or failed."""

import json

from pygls.exceptions import JsonRpcException

import ctxlib
import proxylib
from proxylib import ToolCall, Turn

# Answers, failed items, no match, bad arguments (a field's type, a
# misspelt key) and a tool that is not a context tool.
CALLS = [
    ToolCall("c_found", "context_retrieve", {"ids": ["x1.1", "x99"], "format": "full"}),
    ToolCall("c_search", "context_search", {"query": "47113"}),
    ToolCall("c_nothing", "context_search", {"query": "zqxjvw"}),
    ToolCall("c_bad_type", "context_retrieve", {"ids": "x1"}),
    ToolCall("c_bad_key", "context_retrieve", {"ids": ["x1"], "max_tokens": 50}),
]


def ask(proxy, messages: list[dict]) -> tuple[str, str]:
    """One chat completion through the proxy: its text and its session."""
    body = {"model": "gpt-scripted", "messages": messages}
    status, headers, raw = proxylib.raw_request(
        proxy.url + "/v1/chat/completions", "POST", json.dumps(body).encode(),
        {"content-type": "application/json", "authorization": "Bearer k"})
    assert status == 200, raw
    return json.loads(raw)["choices"][0]["message"]["content"], headers["x-ctxproxy-session"]


async def test_call_context_tool_answers_what_the_proxy_gives_the_model(proxy, upstream, store):
    # The first exchange is stored when its reply is: the calls come in the second.
    history = [{"role": "user", "content": "Note for later: the staging database listens on port 47113."}]
    upstream.push(Turn(text="Noted."), Turn(tool_calls=CALLS), Turn(text="Done."))
    assert ask(proxy, history)[0] == "Noted."
    history += [{"role": "assistant", "content": "Noted."},
                {"role": "user", "content": "Which port does the staging database listen on?"}]
    text, session = ask(proxy, history)
    assert text == "Done."
    _, _, second = upstream.model_calls()
    proxied = {m["tool_call_id"]: m["content"] for m in second.json["messages"] if m.get("role") == "tool"}
    assert list(proxied) == [c.id for c in CALLS], second.json["messages"]
    proxy.__exit__(None, None, None)

    ctx = await ctxlib.start(store)
    try:
        for call in CALLS:
            params = {"sessionId": session, "name": call.name, "arguments": call.arguments}
            try:
                text = (await ctx.req("ctx/callContextTool", params))["text"]
            except JsonRpcException as e:
                assert e.code == -32602, (call, e.code, e.message)
                text = e.message
            assert text == proxied[call.id], call
        unknown = await ctx.err("ctx/callContextTool", {"sessionId": session, "name": "shell", "arguments": {}})
        assert (unknown.code, unknown.message) == (
            -32602, "unknown tool `shell`: the context tools are context_retrieve and context_search")
    finally:
        await ctxlib.stop(ctx)

    assert proxied["c_found"].startswith("## x1.1 (full, "), proxied["c_found"]
    assert "Note for later: the staging database listens on port 47113." in proxied["c_found"]
    assert proxied["c_found"].endswith("## x99: error -32002: unknown id `x99`")
    assert proxied["c_search"].startswith(f"x1 [{session}] "), proxied["c_search"]
    assert proxied["c_nothing"] == "No matches."
    assert proxied["c_bad_type"].startswith("context_retrieve failed: arguments: ids: invalid type")
    assert proxied["c_bad_key"] == ("context_retrieve failed: arguments: "
                                    "unknown field `max_tokens`, did you mean `maxTokens`?")

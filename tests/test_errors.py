"""4. Errors: malformed input gets the right JSON-RPC error, the server keeps
answering, and a failed request stores nothing."""

import asyncio
import json

import pytest

import ctxlib


async def _orphan(ctx, timeout=5):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not ctx.client.orphan_responses:
        assert loop.time() < end, "no response with id null arrived"
        await asyncio.sleep(0.02)
    return ctx.client.orphan_responses.pop(0)


async def _alive(ctx):
    assert "sessions" in await ctx.req("ctx/stats", {}, timeout=10), "server stopped answering"


async def test_malformed_json_gets_parse_error_and_server_goes_on(ctx):
    ctx.write_raw(b'{"jsonrpc": "2.0", "id": 77, "method": "ctx/stats", "params": {')
    resp = await _orphan(ctx)
    assert resp["error"]["code"] == -32700, resp
    assert resp.get("id") is None
    await _alive(ctx)
    # Not JSON at all, then a request with a wrong Content-Length is not needed: garbage bytes.
    ctx.write_raw(b"\xff\xfe not json \x00")
    resp = await _orphan(ctx)
    assert resp["error"]["code"] == -32700, resp
    await _alive(ctx)


async def test_invalid_request_object(ctx):
    # Valid JSON, not a JSON-RPC request.
    ctx.write_raw(json.dumps({"jsonrpc": "2.0", "id": None, "params": {}}).encode())
    resp = await _orphan(ctx)
    assert resp["error"]["code"] == -32600, resp
    await _alive(ctx)


async def test_unknown_method(ctx):
    e = await ctx.err("ctx/doesNotExist", {})
    assert e.code == -32601, (e.code, e.message)
    await _alive(ctx)


# (method, params, field the message must name); {SID} is replaced by a real session id.
BAD_PARAMS = [
    ("ctx/append", {"sessionId": "{SID}"}, "messages"),
    ("ctx/append", {"messages": []}, "sessionId"),
    ("ctx/append", {"sessionId": "{SID}", "messages": "hello"}, "messages"),
    ("ctx/append", {"sessionId": "{SID}", "messages": [{"content": "no role"}]}, "messages[0].role"),
    ("ctx/append", {"sessionId": "{SID}", "messages": [{"role": 5, "content": "x"}]}, "messages[0].role"),
    ("ctx/append", {"sessionId": "{SID}", "messages": [{"role": "wizard", "content": "x"}]}, "messages[0].role"),
    ("ctx/append", {"sessionId": "{SID}", "messages": [{"role": "user", "content": "ok"}, {"role": "user", "content": 7}]},
     "messages[1].content"),
    ("ctx/append", {"sessionId": "{SID}", "messages": [{"role": "user", "content": "ok"},
                                                      {"role": "assistant", "content": "", "toolCalls": [{"name": "x"}]}]},
     "messages[1].toolCalls[0].id"),
    ("ctx/append", {"sessionId": "{SID}", "messages": [{"role": "user", "content": "x", "kind": "shout"}]}, "messages[0].kind"),
    # OpenAI's spellings are refused, not dropped: the calls would be lost.
    ("ctx/append", {"sessionId": "{SID}", "messages": [{"role": "user", "content": "ok"},
                                                      {"role": "assistant", "content": "", "tool_calls": []}]},
     "messages[1].tool_calls"),
    ("ctx/append", {"sessionId": "{SID}", "messages": [{"role": "user", "content": "ok"},
                                                      {"role": "assistant", "content": "", "toolCalls": [
                                                          {"id": "c1", "function": {"name": "x"}}]}]},
     "messages[1].toolCalls[0].function"),
    ("ctx/append", {"sessionId": 42, "messages": []}, "sessionId"),
    ("ctx/openSession", {"title": 3}, "title"),
    ("ctx/openSession", {"parent": {"atExchange": 1}}, "parent.sessionId"),
    ("ctx/retrieve", {"sessionId": "{SID}", "ids": "x1"}, "ids"),
    ("ctx/retrieve", {"sessionId": "{SID}"}, "ids"),
    ("ctx/retrieve", {"sessionId": "{SID}", "ids": ["x1"], "format": "poem"}, "format"),
    ("ctx/retrieve", {"sessionId": "{SID}", "ids": ["x1"], "lines": [5, 2]}, "lines"),
    ("ctx/retrieve", {"sessionId": "{SID}", "ids": ["x1"], "lines": "1-2"}, "lines"),
    ("ctx/retrieve", {"sessionId": "{SID}", "ids": ["x1"], "maxTokens": -1}, "maxTokens"),
    ("ctx/assemble", {"sessionId": "{SID}", "budget": "big"}, "budget"),
    ("ctx/assemble", {"sessionId": "{SID}", "budget": -5}, "budget"),
    ("ctx/assemble", {"sessionId": "{SID}", "format": "xml"}, "format"),
    ("ctx/assemble", {"sessionId": "{SID}", "encoding": "gpt2"}, "encoding"),
    ("ctx/assemble", {"sessionId": "{SID}", "order": "random"}, "order"),
    ("ctx/assemble", {"sessionId": "{SID}", "input": {"role": "user", "content": 1}}, "input.content"),
    ("ctx/search", {"sessionId": "{SID}"}, "query"),
    ("ctx/search", {"query": "x", "limit": "ten"}, "limit"),
    ("ctx/explain", {"sessionId": "{SID}"}, "promptId"),
    ("ctx/explain", {"sessionId": "{SID}", "promptId": "x1"}, "promptId"),
    ("ctx/housekeeping", {"sessionId": "{SID}", "exchangeId": "p1"}, "exchangeId"),
    ("ctx/housekeeping", {"sessionId": "{SID}", "exchangeId": "x1", "keyDecisions": "one"}, "keyDecisions"),
    ("ctx/listExchanges", {"sessionId": "{SID}", "limit": "all"}, "limit"),
    ("ctx/listExchanges", {"sessionId": "{SID}", "limit": 10001}, "limit"),
    ("ctx/listSessions", {"workspace": 1}, "workspace"),
]


def _fill(v, sid):
    if isinstance(v, str):
        return v.replace("{SID}", sid)
    if isinstance(v, dict):
        return {k: _fill(x, sid) for k, x in v.items()}
    if isinstance(v, list):
        return [_fill(x, sid) for x in v]
    return v


def _names(message: str, field: str) -> bool:
    """The message names `field` (`messages[1].toolCalls[0].id`): the whole path, or for a
    missing field its parent path and its own name (`messages[1].toolCalls[0]: missing field `id``)."""
    if field in message:
        return True
    parent, _, leaf = field.rpartition(".")
    return leaf in message and (not parent or parent in message)


async def test_bad_params_name_the_field(ctx):
    sid = await ctx.open_session()
    await ctx.append(sid, [{"role": "user", "content": "hi"}])
    before = await ctx.req("ctx/stats", {})
    failures = []
    for method, params, field in BAD_PARAMS:
        p = _fill(params, sid)
        try:
            e = await ctx.err(method, p)
        except ctxlib.RpcError as ex:
            failures.append(str(ex))
            continue
        if e.code != -32602 or not _names(e.message, field):
            failures.append(f"{method} {json.dumps(p)} -> {e.code} {e.message!r}; expected -32602 naming {field!r}")
    await _alive(ctx)
    after = await ctx.req("ctx/stats", {})
    assert (after["sessions"], after["exchanges"], after["blobs"]) == (before["sessions"], before["exchanges"], before["blobs"])
    assert not failures, f"{len(failures)} of {len(BAD_PARAMS)} bad requests answered wrongly:\n" + "\n".join(failures)


async def test_unknown_session(ctx):
    failures = []
    for method, params in [
        ("ctx/append", {"sessionId": "s-nope", "messages": [{"role": "user", "content": "x"}]}),
        ("ctx/assemble", {"sessionId": "s-nope"}),
        ("ctx/retrieve", {"sessionId": "s-nope", "ids": ["x1"]}),
        ("ctx/search", {"sessionId": "s-nope", "query": "x"}),
        ("ctx/explain", {"sessionId": "s-nope", "promptId": "p1"}),
        ("ctx/housekeeping", {"sessionId": "s-nope", "exchangeId": "x1", "header": "h"}),
        ("ctx/listExchanges", {"sessionId": "s-nope"}),
        ("ctx/openSession", {"parent": {"sessionId": "s-nope"}}),
    ]:
        e = await ctx.err(method, params)
        if e.code != -32001:
            failures.append(f"{method}: {e.code} {e.message!r}")
    assert not failures, failures
    assert (await ctx.req("ctx/stats", {}))["exchanges"] == 0
    await _alive(ctx)


async def test_bad_ids_fail_only_their_own_item(ctx):
    sid = await ctx.open_session()
    r = await ctx.append(sid, ctxlib.tool_exchange("look", "line one\nline two\n"))
    blob = r["blobs"][0]["id"]
    ids = ["x1.1", "x9", "x1.99", "b3:000000000000", "b3:00", "p1", "nonsense", "x1", blob]
    items = await ctx.retrieve(sid, ids)
    ok = {i["id"] for i in items if "error" not in i}
    assert ok == {"x1.1", "x1", blob}, items
    for it in items:
        if it["id"] not in ok:
            assert it["error"]["code"] in (-32002,), it
            assert it["error"]["message"], it
    # An explain / housekeeping on an unknown id of a known session is -32002 too.
    e = await ctx.err("ctx/explain", {"sessionId": sid, "promptId": "p9"})
    assert e.code == -32002, (e.code, e.message)
    e = await ctx.err("ctx/housekeeping", {"sessionId": sid, "exchangeId": "x9", "header": "h"})
    assert e.code == -32002, (e.code, e.message)


async def test_payload_limit(store):
    async with ctxlib.running(store, {"maxPayloadBytes": 2000}) as ctx:
        sid = await ctx.open_session()
        assert (await ctx.append(sid, [{"role": "user", "content": "a" * 500}]))["exchanges"][0]["id"] == "x1"
        e = await ctx.err("ctx/append", {"sessionId": sid, "messages": ctxlib.tool_exchange("big", "z" * 5000)})
        assert e.code == -32005, (e.code, e.message)
        e = await ctx.err("ctx/assemble", {"sessionId": sid, "input": {"role": "user", "content": "q" * 5000}})
        assert e.code == -32005, (e.code, e.message)
        xs = await ctx.list_exchanges(sid)
        assert [x["id"] for x in xs] == ["x1"], xs
        st = await ctx.req("ctx/stats", {})
        assert st["blobs"] == 0, st
        assert (await ctx.append(sid, [{"role": "user", "content": "small again"}]))["exchanges"][0]["id"] == "x2"


async def test_failed_append_stores_nothing(ctx):
    sid = await ctx.open_session()
    await ctx.append(sid, [{"role": "user", "content": "first"}])
    before = await ctx.req("ctx/stats", {})
    events_before = len(ctx.events)
    # Messages 1 and 2 are fine (and 2 would make a blob); message 3 is invalid.
    bad = [
        {"role": "user", "content": "second"},
        {"role": "assistant", "content": "", "toolCalls": [{"id": "c1", "name": "cat", "arguments": {}}]},
        {"role": "tool", "toolCallId": "c1", "name": "cat", "content": "tool output that must not be stored"},
        {"role": "robot", "content": "invalid"},
    ]
    e = await ctx.err("ctx/append", {"sessionId": sid, "messages": bad})
    assert e.code == -32602 and "messages[3].role" in e.message, (e.code, e.message)
    after = await ctx.req("ctx/stats", {})
    for k in ("sessions", "exchanges", "blobs", "messages"):
        if k in before:
            assert after[k] == before[k], f"{k}: {before[k]} -> {after[k]} after a rejected append"
    assert [x["id"] for x in await ctx.list_exchanges(sid)] == ["x1"]
    (it,) = await ctx.retrieve(sid, ["x2.1"])
    assert "error" in it, it
    hits = (await ctx.req("ctx/search", {"sessionId": sid, "query": "stored"}))["hits"]
    assert hits == [], hits
    await asyncio.sleep(0.2)
    assert [e for e in ctx.events[events_before:] if e.get("kind") in ("exchangeStored", "blobStored")] == []
    # The next good append is x2.
    assert (await ctx.append(sid, [{"role": "user", "content": "second"}]))["exchanges"] == [{"id": "x2", "seq": 2}]


async def test_everything_at_once_then_still_serving(ctx):
    """Bad requests and good ones interleaved without waiting (garbage bytes are
    test_malformed_json_gets_parse_error_and_server_goes_on)."""
    sid = await ctx.open_session()
    futs = []
    for i in range(50):
        futs.append(ctx.send("ctx/append", {"sessionId": sid, "messages": [{"role": "user", "content": f"ok{i}"}]}))
        futs.append(ctx.send("ctx/append", {"sessionId": sid, "messages": [{"role": "nope"}]}))
        futs.append(ctx.send("ctx/nothing", {}))
    res = await asyncio.gather(*futs, return_exceptions=True)
    oks = res[0::3]
    assert all(isinstance(r, dict) for r in oks), [r for r in oks if not isinstance(r, dict)][:3]
    assert [r["exchanges"][0]["id"] for r in oks] == [f"x{i}" for i in range(1, 51)]
    assert all(getattr(r, "code", None) == -32602 for r in res[1::3])
    assert all(getattr(r, "code", None) == -32601 for r in res[2::3])
    await _alive(ctx)
    assert len(await ctx.list_exchanges(sid)) == 50


BAD_INIT = [
    ({"budget": "x"}, "budget"),
    ({"budget": 0}, "budget"),
    ({"encoding": "gpt2"}, "encoding"),
    ({"order": "sideways"}, "order"),
    ({"layers": {"headerMax": "x"}}, "layers.headerMax"),
    ({"layers": {"recentFull": -1}}, "layers.recentFull"),
    ({"digest": {"inlineMaxTokens": "many"}}, "digest.inlineMaxTokens"),
    ({"redactSecrets": "yes"}, "redactSecrets"),
    ({"maxPayloadBytes": -1}, "maxPayloadBytes"),
]


@pytest.mark.parametrize("options,field", BAD_INIT, ids=[f for _, f in BAD_INIT])
async def test_bad_initialization_options_name_the_field(store, options, field):
    ctx = await ctxlib.start(store, initialize=False)
    try:
        from lsprotocol import types
        from pygls.exceptions import JsonRpcException
        with pytest.raises(JsonRpcException) as ei:
            await asyncio.wait_for(ctx.client.initialize_session(types.InitializeParams(
                capabilities=types.ClientCapabilities(), initialization_options=options)), 20)
        assert _names(ei.value.message, field), ei.value.message
    finally:
        ctx.client.capabilities = None
        await ctxlib.stop(ctx, graceful=False)


async def test_a_blob_is_reachable_only_from_the_lineage_that_stored_it(ctx):
    """A session reaches the tool outputs its own lineage stored (itself, the sessions it forked
    from or was called by); another session's `b3:` id is an unknown id to it."""
    owner = await ctx.open_session()
    r = await ctx.append(owner, ctxlib.tool_exchange("look", "owner's output\nline two\n"))
    blob = r["blobs"][0]["id"]
    fork = await ctx.open_session(parent={"sessionId": owner, "atExchange": 1})
    child = await ctx.open_session(parent={"sessionId": owner}, child={"query": "Check the output."})
    stranger = await ctx.open_session()
    await ctx.append(stranger, [{"role": "user", "content": "unrelated"}, {"role": "assistant", "content": "ok"}])
    for sid in (owner, fork, child):
        [item] = await ctx.retrieve(sid, [blob])
        assert "error" not in item and "owner's output" in item["text"], (sid, item)
    [item] = await ctx.retrieve(stranger, [blob])
    assert item["error"]["code"] == -32002 and "owner's output" not in json.dumps(item), item
    # The stranger's own x1.2 is its own message, never the owner's.
    [item] = await ctx.retrieve(stranger, ["x1.2"])
    assert "owner's output" not in json.dumps(item), item
    # A parent does not reach into what a session forked from it stores.
    r = await ctx.append(fork, ctxlib.tool_exchange("peek", "the fork's own output\n"))
    [item] = await ctx.retrieve(owner, [r["blobs"][0]["id"]])
    assert item["error"]["code"] == -32002, item

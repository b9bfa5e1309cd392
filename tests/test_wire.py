"""The wire never takes the server down or deafens it: bad ids, frames over the limit, frames
with a wrong Content-Length or none, unknown params keys, and retrieve's per-item errors."""

import json

import pytest

import ctxlib
from test_errors import _alive, _orphan


@pytest.mark.parametrize("bad_id", [True, 1.5, {"a": 1}, 18446744073709551616, 9223372036854775808],
                         ids=["true", "float", "object", "above-u64", "above-i64"])
async def test_an_id_that_is_not_a_string_or_integer_gets_32600_and_the_server_goes_on(ctx, bad_id):
    ctx.write_raw(json.dumps({"jsonrpc": "2.0", "id": bad_id, "method": "ctx/stats", "params": {}}).encode())
    resp = await _orphan(ctx)
    assert resp["error"]["code"] == -32600, resp
    assert resp["id"] is None, resp
    assert "id" in resp["error"]["message"], resp
    await _alive(ctx)
    assert ctx.proc.returncode is None


async def test_a_frame_over_the_limit_is_skipped_without_allocating_it(store):
    async with ctxlib.running(store, {"maxPayloadBytes": 1000}) as ctx:
        # 1e12 bytes announced: refused from the header alone; the body that follows is drained
        # as far as it goes, so announce a modest frame after it to check the server still reads.
        big = b"x" * 5_000_000
        ctx.write_raw(big, content_length=len(big))
        resp = await _orphan(ctx, timeout=30)
        assert resp["error"]["code"] == -32005, resp
        assert "frame limit" in resp["error"]["message"], resp
        await _alive(ctx)
    async with ctxlib.running(store) as ctx:
        ctx.proc.stdin.write(b"Content-Length: 1000000000000\r\n\r\n")
        resp = await _orphan(ctx)
        assert resp["error"]["code"] == -32005, resp
        assert ctx.proc.returncode is None


async def test_a_frame_a_few_bytes_short_does_not_deafen_the_server(ctx):
    body = json.dumps({"jsonrpc": "2.0", "id": 901, "method": "ctx/stats", "params": {}}).encode()
    ctx.write_raw(body, content_length=len(body) - 4)
    resp = await _orphan(ctx)
    assert resp["error"]["code"] == -32700, resp
    for _ in range(3):
        await _alive(ctx)


async def test_a_header_block_without_content_length_does_not_deafen_the_server(ctx):
    body = json.dumps({"jsonrpc": "2.0", "id": 902, "method": "ctx/stats", "params": {}}).encode()
    ctx.proc.stdin.write(b"Content-Type: application/json\r\n\r\n" + body)
    resp = await _orphan(ctx)
    assert resp["error"]["code"] == -32700, resp
    assert "Content-Length" in resp["error"]["message"], resp
    for _ in range(3):
        await _alive(ctx)


# (method, params, the key refused, the spelling suggested or None)
UNKNOWN_KEYS = [
    ("ctx/search", {"session_id": "{SID}", "query": "x"}, "session_id", "sessionId"),
    ("ctx/assemble", {"sessionId": "{SID}", "Budget": 50}, "Budget", "budget"),
    ("ctx/retrieve", {"sessionId": "{SID}", "ids": ["x1"], "maxtokens": 5}, "maxtokens", "maxTokens"),
    ("ctx/append", {"sessionId": "{SID}", "messages": [], "extra": 1}, "extra", None),
    ("ctx/openSession", {"titel": "t"}, "titel", "title"),
    ("ctx/openSession", {"parent": {"sessionID": "{SID}"}}, "sessionID", "sessionId"),
    ("ctx/explain", {"sessionId": "{SID}", "promptID": "p1"}, "promptID", "promptId"),
    ("ctx/housekeeping", {"sessionId": "{SID}", "exchangeId": "x1", "headr": "h"}, "headr", "header"),
    ("ctx/listSessions", {"workspaces": "w"}, "workspaces", "workspace"),
    ("ctx/listExchanges", {"sessionId": "{SID}", "limits": 3}, "limits", "limit"),
    ("ctx/stats", {"verbose": True}, "verbose", None),
]


async def test_unknown_params_keys_are_refused_naming_the_key_and_the_right_spelling(ctx):
    sid = await ctx.open_session()
    await ctx.append(sid, [{"role": "user", "content": "hi"}])
    failures = []
    for method, params, key, suggestion in UNKNOWN_KEYS:
        p = json.loads(json.dumps(params).replace("{SID}", sid))
        e = await ctx.err(method, p)
        ok = e.code == -32602 and f"`{key}`" in e.message
        if suggestion:
            ok = ok and f"did you mean `{suggestion}`?" in e.message
        if not ok:
            failures.append(f"{method} {p} -> {e.code} {e.message!r}")
    assert not failures, "\n".join(failures)
    await _alive(ctx)


async def test_misspelt_initialization_options_are_refused_with_the_right_spelling(store):
    from lsprotocol import types
    from pygls.exceptions import JsonRpcException
    import asyncio
    ctx = await ctxlib.start(store, initialize=False)
    try:
        with pytest.raises(JsonRpcException) as ei:
            await asyncio.wait_for(ctx.client.initialize_session(types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                initialization_options={"layers": {"recentfull": 1}})), 20)
        assert "`recentfull`, did you mean `recentFull`?" in str(ei.value), str(ei.value)
    finally:
        await ctxlib.stop(ctx, graceful=False)


# retrieve's per-item errors reach the model: one clear sentence each.
ITEM_ERRORS = [
    ("b3:zzzz", "`b3:zzzz` is not an id: expected x<N>, x<N>.<M>, p<N> or b3:<8 to 64 hex characters>, each optionally after its session's id and `/` (s-k3v9qa/x12)"),
    ("p1", "`p1` is a prompt, not an item to retrieve: ctx/explain shows a prompt"),
    ("x99", "unknown id `x99`"),
    ("x0", "`x0`: sequence numbers start at 1"),
]


async def test_retrieve_item_errors_are_one_clear_sentence(ctx):
    sid = await ctx.open_session()
    await ctx.append(sid, [{"role": "user", "content": "hi"}])
    items = await ctx.retrieve(sid, [i for i, _ in ITEM_ERRORS])
    got = [(i["id"], i["error"]["message"]) for i in items]
    assert got == ITEM_ERRORS, got
    for _, message in got:
        assert message.count("`") % 2 == 0 and "unknown id `" not in message[1:], message

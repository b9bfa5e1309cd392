"""1. Lifecycle and a round trip through every method; ctx/event notifications."""

import asyncio
import re

import blake3
from lsprotocol import types

import ctxlib

TOOL_OUT = "src/lib.rs:10: fn zanzibar_quokka() {}\nsrc/lib.rs:42: zanzibar_quokka();\n"
EXCHANGE = [
    {"role": "user", "content": "Where is zanzibar_quokka defined?", "kind": "query", "at": "2026-11-21T10:00:00Z"},
    {"role": "assistant", "content": "Searching.",
     "toolCalls": [{"id": "call_1", "name": "grep", "arguments": {"pattern": "zanzibar_quokka", "path": "src"}}],
     "at": "2026-11-21T10:00:01Z"},
    {"role": "tool", "toolCallId": "call_1", "name": "grep", "content": TOOL_OUT, "at": "2026-11-21T10:00:02Z"},
    {"role": "assistant", "content": "It is defined at src/lib.rs:10.", "at": "2026-11-21T10:00:03Z"},
]
LAYERS = {"system", "currentContext", "recent", "headers", "summaries", "references", "input"}


async def test_initialize_reports_server_and_shutdown_exits_cleanly(store):
    # Three times: a server that only sometimes exits is caught more surely.
    for attempt in range(3):
        ctx = await ctxlib.start(store)
        info = ctx.init_result.server_info
        assert info is not None and info.name == "ctxproxy"
        assert "sessions" in await ctx.req("ctx/stats", {})
        assert store.exists(), "store file not created at --store path"
        try:
            assert await ctx.req("shutdown", None) is None
            ctx.client.exit(None)
            # stdin stays open: the `exit` notification alone must end the process.
            try:
                await asyncio.wait_for(ctx.proc.wait(), 3)
            except asyncio.TimeoutError:
                raise AssertionError(f"run {attempt + 1}: server still running 3s after shutdown + exit "
                                     "(stdin still open)") from None
            assert ctx.proc.returncode == 0, f"server exited with {ctx.proc.returncode} after shutdown/exit"
        finally:
            await ctxlib.stop(ctx, graceful=False)


async def test_every_method_round_trip(ctx):
    sid = await ctx.open_session(workspace="/work/demo", title="demo session")

    # -- append
    r = await ctx.append(sid, EXCHANGE)
    assert r["exchanges"] == [{"id": "x1", "seq": 1}], r
    assert len(r["blobs"]) == 1, r
    blob = r["blobs"][0]
    assert re.fullmatch(r"b3:[0-9a-f]{12}", blob["id"]), blob
    assert blob["id"] == "b3:" + blake3.blake3(TOOL_OUT.encode()).hexdigest()[:12], "blob id is not BLAKE3 of the raw bytes"
    assert blob["messageId"] == "x1.3"
    assert blob["bytes"] == len(TOOL_OUT.encode())
    assert blob["tokens"] > 0 and blob["digestTokens"] > 0
    assert "duplicateOf" not in blob or blob["duplicateOf"] in (None,)

    stored = await ctx.wait_event(lambda e: e.get("kind") == "exchangeStored")
    assert stored["sessionId"] == sid and stored.get("exchangeId") == "x1", stored
    bs = await ctx.wait_event(lambda e: e.get("kind") == "blobStored")
    assert bs["sessionId"] == sid and bs.get("blobId") == blob["id"], bs

    # -- a second exchange: the same output again is a duplicate blob
    r2 = await ctx.append(sid, ctxlib.tool_exchange("Again please", TOOL_OUT, call_id="call_2", tool="grep"))
    assert r2["exchanges"] == [{"id": "x2", "seq": 2}], r2
    assert r2["blobs"][0]["id"] == blob["id"]
    assert r2["blobs"][0]["messageId"] == "x2.3"
    assert r2["blobs"][0].get("duplicateOf"), f"same bytes stored twice without duplicateOf: {r2['blobs'][0]}"

    # -- retrieve: exchange, message, blob (by short id, by 8-char prefix, by full hash)
    full_hash = blake3.blake3(TOOL_OUT.encode()).hexdigest()
    items = await ctx.retrieve(sid, ["x1", "x1.1", "x1.2", "x1.3", blob["id"], "b3:" + full_hash[:8], "b3:" + full_hash])
    x1, m1, m2, m3, b, b8, b64 = items
    for it in items:
        assert "error" not in it, it
        assert {"id", "kind", "format", "text", "tokens", "truncated"} <= it.keys(), it
    assert x1["kind"] == "exchange" and "zanzibar_quokka" in x1["text"]
    assert m1["role"] == "user" and m1["text"] == EXCHANGE[0]["content"]  # item kind: test_message_item_kind
    assert m2["role"] == "assistant" and m2["toolCalls"] == EXCHANGE[1]["toolCalls"]
    assert m3["role"] == "tool" and m3["toolCallId"] == "call_1" and m3["name"] == "grep"
    assert m3["text"] == TOOL_OUT and m3.get("blobId") == blob["id"]
    for bb in (b, b8, b64):
        assert bb["kind"] == "blob" and bb["text"] == TOOL_OUT, bb

    # header / summary formats are capped
    hdr, summ = (await ctx.retrieve(sid, ["x1"], format="header"))[0], (await ctx.retrieve(sid, ["x1"], format="summary"))[0]
    assert hdr["format"] == "header" and 0 < hdr["tokens"] <= 12, hdr
    assert summ["format"] == "summary" and 0 < summ["tokens"] <= 120, summ

    # lines / grep on a blob
    ln = await ctx.retrieve_one(sid, blob["id"], lines=[2, 2])
    assert ln["text"].strip() == "2: src/lib.rs:42: zanzibar_quokka();", ln
    gr = await ctx.retrieve_one(sid, blob["id"], grep="fn ")
    assert gr["text"].strip() == "1: src/lib.rs:10: fn zanzibar_quokka() {}", gr

    # -- assemble
    a = await ctx.req("ctx/assemble", {"sessionId": sid, "input": {"role": "user", "content": "and where is it called?"},
                                       "system": "You are a coding assistant.", "budget": 4000})
    assert a["promptId"] == "p1", a.get("promptId")
    assert isinstance(a["messages"], list) and a["messages"]
    assert a["tokens"]["total"] <= 4000
    assert LAYERS <= set(a["tokens"]["layers"]), a["tokens"]
    # One short exchange: the whole history is cheaper than the layers. It is sent as it was,
    # with no L0 and no context tools (nothing to retrieve); the input comes last.
    assert a["shape"] == "whole" and a["reason"].startswith("the whole history: "), a.get("reason")
    assert a["tools"] == [] and a["tokens"]["layers"]["currentContext"] == 0
    roles = [m["role"] for m in a["messages"]]
    assert roles[:5] == ["system", "user", "assistant", "tool", "assistant"] and roles[-1] == "user", roles
    assert not any("## Current context" in str(m["content"]) for m in a["messages"])
    assert a["messages"][1]["content"].strip() == EXCHANGE[0]["content"]
    assert a["messages"][-1]["content"].strip() == "and where is it called?"
    assert isinstance(a["trimmed"], list)
    # Layered (wholeHistory off): the context tools, the input, then the current context (L0) last.
    ctx.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"ctx": {"wholeHistory": False}}))
    lay = await ctx.req("ctx/assemble", {"sessionId": sid, "input": {"role": "user", "content": "and where is it called?"},
                                         "system": "You are a coding assistant.", "budget": 4000})
    assert lay["shape"] == "layered" and lay.get("reason") is None, lay.get("reason")
    names = {t.get("function", t).get("name") for t in lay["tools"]}
    assert {"context_retrieve", "context_search"} <= names, lay["tools"]
    assert "and where is it called?" in str(lay["messages"][-2]), "the input is not before L0"
    assert "## Current context" in str(lay["messages"][-1]), "prompt does not end with L0"
    ev = await ctx.wait_event(lambda e: e.get("kind") == "contextAssembled")
    assert ev["sessionId"] == sid and ev.get("promptId") == "p1", ev

    # -- explain
    ex = await ctx.req("ctx/explain", {"sessionId": sid, "promptId": "p1"})
    assert ex["messages"] == a["messages"], "explain does not return what assemble sent"
    assert ex["tools"] == a["tools"]
    assert "layers" in ex, ex.keys()

    # -- search (a word from the tool output)
    hits = (await ctx.req("ctx/search", {"sessionId": sid, "query": "zanzibar_quokka"}))["hits"]
    assert hits and {h["id"] for h in hits} <= {"x1", "x2"} and hits[0]["sessionId"] == sid, hits
    assert all({"id", "sessionId", "header", "score"} <= h.keys() for h in hits)

    # -- housekeeping replaces the header
    assert await ctx.req("ctx/housekeeping", {"sessionId": sid, "exchangeId": "x1", "header": "located zanzibar_quokka",
                                              "summary": "User asked where zanzibar_quokka is; it is at src/lib.rs:10.",
                                              "keyDecisions": ["none"], "codeChanges": [], "openQuestions": ["callers?"],
                                              "currentContext": "Exploring src/lib.rs."}) == {}
    hdr = await ctx.retrieve_one(sid, "x1", format="header")
    assert hdr["text"] == "located zanzibar_quokka", hdr
    summ = await ctx.retrieve_one(sid, "x1", format="summary")
    assert "src/lib.rs:10" in summ["text"], summ
    await ctx.wait_event(lambda e: e.get("kind") == "summaryUpdated")

    # -- listSessions / listExchanges / stats
    sessions = (await ctx.req("ctx/listSessions", {}))["sessions"]
    (s,) = [s for s in sessions if s["sessionId"] == sid]
    assert s["title"] == "demo session" and s["workspace"] == "/work/demo" and s["exchanges"] == 2, s
    assert "updatedAt" in s and not s.get("parent")
    assert (await ctx.req("ctx/listSessions", {"workspace": "/elsewhere"}))["sessions"] == []
    xs = await ctx.list_exchanges(sid)
    assert [x["id"] for x in xs] == ["x1", "x2"]
    assert xs[0]["header"] == "located zanzibar_quokka" and xs[0]["at"] and xs[0]["tokens"] > 0, xs[0]
    assert [x["id"] for x in await ctx.list_exchanges(sid, **{"from": 2})] == ["x2"]
    st = await ctx.req("ctx/stats", {})
    assert st["sessions"] == 1 and st["exchanges"] == 2 and st["blobs"] == 1, st
    for key in ("rawBytes", "storedBytes", "duplicateHits"):
        assert key in st, st
    assert st["duplicateHits"] >= 1


async def test_empty_params_as_list_and_null(ctx):
    # Lua and some clients send [] or nothing for {}.
    assert "sessions" in await ctx.req("ctx/stats", [])
    assert "sessions" in await ctx.req("ctx/stats", None)
    assert "sessions" in await ctx.req("ctx/listSessions", [])


async def test_message_item_kind(ctx):
    """A retrieve item's `kind` says what the item is (exchange|message|blob), also for a
    user message that was appended with its own `kind: query|feedback`."""
    sid = await ctx.open_session()
    await ctx.append(sid, [{"role": "user", "content": "q", "kind": "query"},
                           {"role": "assistant", "content": "a"},
                           {"role": "user", "content": "no, the other one", "kind": "feedback"}])
    items = await ctx.retrieve(sid, ["x1.1", "x1.2", "x2.1"])
    assert [i["kind"] for i in items] == ["message", "message", "message"], \
        [{k: i.get(k) for k in ("id", "kind", "role")} for i in items]
    # The message's own kind travels as messageKind.
    assert [i.get("messageKind") for i in items] == ["query", None, "feedback"], items


async def test_did_change_configuration(ctx):
    sid = await ctx.open_session()
    assert (await ctx.append(sid, [{"role": "user", "content": "y" * 500}]))["exchanges"][0]["id"] == "x1"
    ctx.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"ctx": {"maxPayloadBytes": 100}}))
    await ctx.req("ctx/stats", {})
    e = await ctx.err("ctx/append", {"sessionId": sid, "messages": [{"role": "user", "content": "y" * 500}]})
    assert e.code == -32005, (e.code, e.message)
    # A bad value is refused with a message naming the field; the old config stays.
    ctx.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"ctx": {"budget": "lots"}}))
    await ctx.req("ctx/stats", {})
    for _ in range(50):
        if ctx.client.messages:
            break
        await asyncio.sleep(0.02)
    assert any("budget" in m.message for m in ctx.client.messages), [m.message for m in ctx.client.messages]
    e = await ctx.err("ctx/append", {"sessionId": sid, "messages": [{"role": "user", "content": "y" * 500}]})
    assert e.code == -32005


async def test_list_exchanges_paging(ctx):
    sid = await ctx.open_session()
    futs = [ctx.send("ctx/append", {"sessionId": sid, "messages": [{"role": "user", "content": f"m{i}"}]}) for i in range(230)]
    await asyncio.gather(*futs)
    assert [x["id"] for x in await ctx.list_exchanges(sid)] == [f"x{i}" for i in range(1, 201)], "default limit is 200"
    assert [x["id"] for x in await ctx.list_exchanges(sid, **{"from": 201})] == [f"x{i}" for i in range(201, 231)]
    assert [x["id"] for x in await ctx.list_exchanges(sid, **{"from": 100, "limit": 3})] == ["x100", "x101", "x102"]
    assert await ctx.list_exchanges(sid, **{"from": 500}) == []
    assert len(await ctx.list_exchanges(sid, limit=10000)) == 230


async def test_ids_are_scoped_as_the_contract_says(ctx):
    """Prompt and exchange ids are per session; a blob id reaches only the lineage that stored it
    (docs/PROTOCOL.md), not another session of the same workspace."""
    a = await ctx.open_session(workspace="/ws/one")
    b = await ctx.open_session(workspace="/ws/one")
    out = "shared output across sessions\n"
    r = await ctx.append(a, ctxlib.tool_exchange("a", out))
    await ctx.append(b, [{"role": "user", "content": "b"}])
    blob = r["blobs"][0]["id"]
    (it,) = await ctx.retrieve(a, [blob])
    assert it.get("text") == out, it
    (it,) = await ctx.retrieve(b, [blob])
    assert it["error"]["code"] == -32002, f"blob {blob} of session a retrievable from session b: {it}"
    assert (await ctx.req("ctx/assemble", {"sessionId": a}))["promptId"] == "p1"
    assert (await ctx.req("ctx/assemble", {"sessionId": b}))["promptId"] == "p1"
    assert (await ctx.req("ctx/assemble", {"sessionId": a}))["promptId"] == "p2"
    (x,) = await ctx.retrieve(b, ["x1.1"])
    assert x.get("text") == "b"


async def test_housekeeping_header_is_capped(ctx):
    sid = await ctx.open_session()
    await ctx.append(sid, [{"role": "user", "content": "hi"}])
    long = " ".join(f"word{i}" for i in range(60))
    try:
        await ctx.req("ctx/housekeeping", {"sessionId": sid, "exchangeId": "x1", "header": long, "summary": long * 10})
    except ctxlib.JsonRpcException as e:  # refusing an over-long header is fine too
        assert e.code == -32602 and "header" in e.message, (e.code, e.message)
        return
    h = await ctx.retrieve_one(sid, "x1", format="header")
    s = await ctx.retrieve_one(sid, "x1", format="summary")
    assert h["tokens"] <= 12 and s["tokens"] <= 120, (h["tokens"], s["tokens"])

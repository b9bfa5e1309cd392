"""7. Forks: a child session shares the parent's history up to atExchange, then diverges."""

import ctxlib


async def _texts(ctx, sid, n):
    return [i.get("text") for i in await ctx.retrieve(sid, [f"x{k}.1" for k in range(1, n + 1)])]


async def test_fork_shares_then_diverges(ctx):
    parent = await ctx.open_session(title="parent", workspace="/w")
    for i in range(1, 4):
        await ctx.append(parent, ctxlib.tool_exchange(f"parent ask {i}", f"parent output {i}\n", call_id=f"c{i}"))

    child = await ctx.open_session(title="child", workspace="/w", parent={"sessionId": parent, "atExchange": "x2"})
    assert child != parent
    assert [x["id"] for x in await ctx.list_exchanges(child)] == ["x1", "x2"]
    assert await _texts(ctx, child, 2) == ["parent ask 1", "parent ask 2"]
    (x3,) = await ctx.retrieve(child, ["x3"])
    assert x3.get("error", {}).get("code") == -32002, x3
    # Shared blobs retrieve from the child too.
    (b,) = await ctx.retrieve(child, ["x2.3"])
    assert b["text"] == "parent output 2\n" and b.get("blobId"), b
    (bb,) = await ctx.retrieve(child, [b["blobId"]])
    assert bb["text"] == "parent output 2\n"

    r = await ctx.append(child, [{"role": "user", "content": "child ask 3"}, {"role": "assistant", "content": "child answer"}])
    assert r["exchanges"] == [{"id": "x3", "seq": 3}], r
    r = await ctx.append(parent, [{"role": "user", "content": "parent ask 4"}])
    assert r["exchanges"] == [{"id": "x4", "seq": 4}], r

    assert await _texts(ctx, child, 3) == ["parent ask 1", "parent ask 2", "child ask 3"]
    assert await _texts(ctx, parent, 4) == ["parent ask 1", "parent ask 2", "parent ask 3", "parent ask 4"]
    assert [x["id"] for x in await ctx.list_exchanges(child)] == ["x1", "x2", "x3"]

    # The child's prompt holds the shared history and its own turn, not the parent's x3/x4.
    a = await ctx.req("ctx/assemble", {"sessionId": child, "budget": 16000, "format": "text"})
    assert "child ask 3" in a["text"] and "parent ask 1" in a["text"]
    assert "parent ask 3" not in a["text"] and "parent ask 4" not in a["text"]
    # Housekeeping on the child does not rewrite the parent's shared exchange.
    await ctx.req("ctx/housekeeping", {"sessionId": child, "exchangeId": "x2", "header": "child view of x2"})
    assert (await ctx.retrieve_one(child, "x2", format="header"))["text"] == "child view of x2"
    assert (await ctx.retrieve_one(parent, "x2", format="header"))["text"] != "child view of x2"

    sessions = {s["sessionId"]: s for s in (await ctx.req("ctx/listSessions", {}))["sessions"]}
    assert sessions[child]["parent"]["sessionId"] == parent, sessions[child]
    assert sessions[child]["parent"].get("atExchange") in (2, "x2"), sessions[child]
    assert sessions[child]["exchanges"] == 3 and sessions[parent]["exchanges"] == 4
    assert not sessions[parent].get("parent")

    # Search scoped to the child finds shared and own exchanges only.
    hits = (await ctx.req("ctx/search", {"sessionId": child, "query": "ask"}))["hits"]
    assert hits and all(h["sessionId"] == child for h in hits), hits
    assert {h["id"] for h in hits} <= {"x1", "x2", "x3"}


async def test_fork_without_at_exchange_shares_everything_and_fork_of_fork(ctx):
    parent = await ctx.open_session()
    for i in range(3):
        await ctx.append(parent, [{"role": "user", "content": f"p{i}"}])
    child = await ctx.open_session(parent={"sessionId": parent})
    assert await _texts(ctx, child, 3) == ["p0", "p1", "p2"]
    grandchild = await ctx.open_session(parent={"sessionId": child, "atExchange": 1})
    assert [x["id"] for x in await ctx.list_exchanges(grandchild)] == ["x1"]
    await ctx.append(grandchild, [{"role": "user", "content": "g"}])
    assert await _texts(ctx, grandchild, 2) == ["p0", "g"]
    e = await ctx.err("ctx/openSession", {"parent": {"sessionId": parent, "atExchange": "x9"}})
    assert e.code in (-32002, -32602), (e.code, e.message)

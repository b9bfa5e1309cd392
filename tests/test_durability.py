"""3. Durability: what was acknowledged survives kill -9."""

import asyncio

import ctxlib


async def _check_store(store, sid, at_least, texts_prefix="m", answers=False):
    async with ctxlib.running(store) as ctx:
        xs = await ctx.list_exchanges(sid, limit=10000)
        ids = [x["id"] for x in xs]
        assert len(ids) >= at_least, f"{at_least} exchanges acknowledged before kill -9, {len(ids)} after restart"
        assert ids == [f"x{i}" for i in range(1, len(ids) + 1)], f"gaps after restart: {ids[:10]}..."
        items = await ctx.retrieve(sid, [f"x{i}.1" for i in range(1, len(ids) + 1)])
        wrong = [(it["id"], it.get("text"), it.get("error")) for i, it in enumerate(items) if it.get("text") != f"{texts_prefix}{i}"]
        assert not wrong, f"restarted store holds wrong messages: {wrong[:5]}"
        if answers:  # an append is all or nothing: no exchange without its answer
            items = await ctx.retrieve(sid, [f"x{i}.2" for i in range(1, len(ids) + 1)])
            wrong = [(it["id"], it.get("text"), it.get("error")) for i, it in enumerate(items) if it.get("text") != f"answer {i}"]
            assert not wrong, f"half-written appends after kill -9: {wrong[:5]}"
        # The store is usable after the crash: append continues the sequence.
        r = await ctx.append(sid, [{"role": "user", "content": "after restart"}])
        assert r["exchanges"] == [{"id": f"x{len(ids) + 1}", "seq": len(ids) + 1}], r
        sessions = (await ctx.req("ctx/listSessions", {}))["sessions"]
        assert [s["exchanges"] for s in sessions if s["sessionId"] == sid] == [len(ids) + 1]
        return len(ids)


async def test_burst_then_kill9_keeps_every_acknowledged_exchange(store):
    n = 200
    ctx = await ctxlib.start(store)
    sid = await ctx.open_session(title="durability")
    futures = [ctx.send("ctx/append", {"sessionId": sid, "messages": [{"role": "user", "content": f"m{i}"}]})
               for i in range(n)]
    await asyncio.wait_for(asyncio.gather(*futures), 60)
    await ctxlib.kill9(ctx)  # right after the last answer
    assert ctx.proc.returncode == -9
    assert await _check_store(store, sid, n) == n + 0


async def test_kill9_mid_burst_loses_nothing_acknowledged(store):
    n = 400
    ctx = await ctxlib.start(store)
    sid = await ctx.open_session(title="durability mid-burst")
    acked = 0
    futures = [ctx.send("ctx/append", {"sessionId": sid, "messages": [
        {"role": "user", "content": f"m{i}"},
        {"role": "assistant", "content": f"answer {i}"},
    ]}) for i in range(n)]
    # Kill as soon as the 100th answer is in; later ones may or may not have landed.
    for f in futures[:100]:
        await asyncio.wait_for(f, 60)
    acked = sum(1 for f in futures if f.done() and not f.exception())
    await ctxlib.kill9(ctx)
    for f in futures:  # the rest fail with the server gone; consume them
        if not f.done():
            f.cancel()
    await asyncio.gather(*futures, return_exceptions=True)
    got = await _check_store(store, sid, acked, answers=True)
    print(f"acknowledged {acked}, found {got} after kill -9")


async def test_kill9_mid_burst_with_blobs(store):
    """Every tool output whose exchange survived a kill -9 retrieves intact (the blob
    is never referenced before it is written)."""
    n = 120
    outs = [f"output {i}\n" + ("".join(f"{i}:{j} some tool output line {j * i}\n" for j in range(600))) for i in range(n)]
    ctx = await ctxlib.start(store)
    sid = await ctx.open_session()
    futures = [ctx.send("ctx/append", {"sessionId": sid, "messages": ctxlib.tool_exchange(f"m{i}", outs[i], call_id=f"c{i}")})
               for i in range(n)]
    for f in futures[:30]:
        await asyncio.wait_for(f, 60)
    acked = sum(1 for f in futures if f.done() and not f.exception())
    await ctxlib.kill9(ctx)
    await asyncio.gather(*futures, return_exceptions=True)
    async with ctxlib.running(store) as ctx:
        xs = await ctx.list_exchanges(sid, limit=10000)
        assert len(xs) >= acked and [x["id"] for x in xs] == [f"x{i}" for i in range(1, len(xs) + 1)]
        items = await ctx.retrieve(sid, [f"x{i}.3" for i in range(1, len(xs) + 1)])
        bad = [it["id"] for i, it in enumerate(items) if it.get("text") != outs[i] or not it.get("blobId")]
        assert not bad, f"tool outputs damaged after kill -9: {bad[:5]}"
        blobs = await ctx.retrieve(sid, [it["blobId"] for it in items])
        bad = [b["id"] for i, b in enumerate(blobs) if b.get("text") != outs[i]]
        assert not bad, f"blobs unreadable after kill -9: {bad[:5]}"
        print(f"acknowledged {acked}, found {len(xs)} after kill -9")

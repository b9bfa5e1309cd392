"""Two editor windows (two servers) on one store: nothing acknowledged is lost,
nothing is duplicated or corrupted."""

import asyncio

import ctxlib

N = 150


async def _burst(ctx, sid, tag):
    futs = [ctx.send("ctx/append", {"sessionId": sid, "messages": [
        {"role": "user", "content": f"{tag}-{i}"}, {"role": "assistant", "content": f"{tag}-answer-{i}"}]})
        for i in range(N)]
    return await asyncio.gather(*futs, return_exceptions=True)


async def test_two_servers_one_store(store):
    a = await ctxlib.start(store)
    b = await ctxlib.start(store)
    try:
        sa = await a.open_session(title="window a")
        sb = await b.open_session(title="window b")
        shared = await a.open_session(title="shared")
        res = await asyncio.gather(_burst(a, sa, "a"), _burst(b, sb, "b"), _burst(a, shared, "sa"), _burst(b, shared, "sb"))
    finally:
        await ctxlib.stop(a)
        await ctxlib.stop(b)

    unexpected = [r for rs in res for r in rs if isinstance(r, Exception) and getattr(r, "code", None) != -32004]
    assert not unexpected, f"errors other than -32004 (store busy): {unexpected[:5]}"
    acked = [{f"{tag}-{i}" for i, r in enumerate(rs) if isinstance(r, dict)}
             for tag, rs in zip(("a", "b", "sa", "sb"), res)]
    print("acknowledged:", [len(x) for x in acked])

    async with ctxlib.running(store) as ctx:
        sessions = {s["sessionId"]: s for s in (await ctx.req("ctx/listSessions", {}))["sessions"]}
        assert {sa, sb, shared} <= set(sessions)
        for sid, tags, acks in ((sa, ("a",), acked[0]), (sb, ("b",), acked[1]), (shared, ("sa", "sb"), acked[2] | acked[3])):
            xs = await ctx.list_exchanges(sid, limit=10000)
            assert [x["id"] for x in xs] == [f"x{i}" for i in range(1, len(xs) + 1)]
            items = await ctx.retrieve(sid, [f"x{i}.{k}" for i in range(1, len(xs) + 1) for k in (1, 2)])
            users = [it.get("text") for it in items[0::2]]
            answers = [it.get("text") for it in items[1::2]]
            assert len(users) == len(set(users)), f"{sid}: duplicated exchanges"
            assert set(users) >= acks, f"{sid}: acknowledged but missing: {sorted(acks - set(users))[:5]}"
            assert all(ans == u.replace(u.split("-")[0] + "-", u.split("-")[0] + "-answer-", 1)
                       for u, ans in zip(users, answers)), f"{sid}: an exchange holds another's answer"
            assert sessions[sid]["exchanges"] == len(xs)
            # Each window's own appends kept their relative order.
            for tag in tags:
                seq = [int(u.rsplit("-", 1)[1]) for u in users if u.startswith(tag + "-")]
                assert seq == sorted(seq), f"{sid}/{tag}: out of order"


async def _ask_then_answer(ctx, sid, tag, rounds):
    """Appends a question, then its answer naming the question's exchange; returns
    (exchange, tag-i) for every answer accepted, and how many were refused with -32007."""
    from pygls.exceptions import JsonRpcException
    placed, refused = [], 0
    for i in range(rounds):
        q = await ctx.append(sid, [{"role": "user", "content": f"question {tag}-{i}"}])
        x = q["exchanges"][0]["id"]
        try:
            await ctx.req("ctx/append", {"sessionId": sid, "exchange": x,
                                         "messages": [{"role": "assistant", "content": f"answer {tag}-{i}"}]})
            placed.append((x, f"{tag}-{i}"))
        except JsonRpcException as e:
            assert e.code == -32007 and f"exchange: {x} is not the exchange this append goes to" in e.message, e
            refused += 1
        await asyncio.sleep(0)
    return placed, refused


async def test_two_writers_on_one_session_never_attach_an_answer_to_the_other_question(store):
    a = await ctxlib.start(store)
    b = await ctxlib.start(store)
    try:
        sid = await a.open_session(title="shared")
        (pa, ra), (pb, rb) = await asyncio.gather(_ask_then_answer(a, sid, "a", 150), _ask_then_answer(b, sid, "b", 150))
        for x, tag in pa + pb:
            [item] = await a.retrieve(sid, [x])
            text = item["text"]
            assert f"question {tag}" in text and f"answer {tag}" in text, (x, tag, text)
            other = "b" if tag.startswith("a") else "a"
            assert f"answer {other}-" not in text, (x, tag, text)
        assert len(pa) + ra == 150 and len(pb) + rb == 150
    finally:
        await ctxlib.stop(a)
        await ctxlib.stop(b)


async def test_an_append_naming_its_exchange_is_checked(ctx):
    sid = await ctx.open_session()
    assert (await ctx.req("ctx/append", {"sessionId": sid, "exchange": "x1",
                                         "messages": [{"role": "user", "content": "q1"}]}))["exchanges"][0]["id"] == "x1"
    await ctx.req("ctx/append", {"sessionId": sid, "exchange": "x1", "messages": [{"role": "assistant", "content": "a1"}]})
    e = await ctx.err("ctx/append", {"sessionId": sid, "exchange": "x1", "messages": [{"role": "user", "content": "q2"}]})
    assert e.code == -32007 and "x1 is not the exchange this append goes to (x2" in e.message, e.message
    e = await ctx.err("ctx/append", {"sessionId": sid, "exchange": "x7", "messages": [{"role": "assistant", "content": "a"}]})
    assert e.code == -32007, e.message
    e = await ctx.err("ctx/append", {"sessionId": sid, "exchange": "x2", "messages": [
        {"role": "user", "content": "q2"}, {"role": "user", "content": "q3"}]})
    assert e.code == -32602 and "one exchange" in e.message, e.message
    e = await ctx.err("ctx/append", {"sessionId": sid, "exchange": "p1", "messages": [{"role": "user", "content": "q"}]})
    assert e.code == -32602 and "exchange" in e.message, e.message
    assert len(await ctx.list_exchanges(sid)) == 1

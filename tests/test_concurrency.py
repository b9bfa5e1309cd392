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

"""2. Order: 1,000 pipelined ctx/append requests land as x1..x1000 in send order."""

import asyncio
import time

N = 1000


async def test_pipelined_appends_keep_order(ctx):
    sid = await ctx.open_session(title="order")
    t0 = time.monotonic()
    # All requests are written before the first answer is awaited.
    futures = [ctx.send("ctx/append", {"sessionId": sid, "messages": [{"role": "user", "content": f"m{i}"}]})
               for i in range(N)]
    results = await asyncio.wait_for(asyncio.gather(*futures), 120)
    elapsed = time.monotonic() - t0
    print(f"{N} pipelined appends answered in {elapsed:.2f}s")

    # Each answer names the exchange its own request created, in send order.
    got = [r["exchanges"] for r in results]
    bad = [(i, g) for i, g in enumerate(got) if g != [{"id": f"x{i + 1}", "seq": i + 1}]]
    assert not bad, f"{len(bad)} answers out of order, first: {bad[:5]}"

    xs = await ctx.list_exchanges(sid, limit=N)
    assert [x["id"] for x in xs] == [f"x{i}" for i in range(1, N + 1)]

    items = await ctx.retrieve(sid, [f"x{i}.1" for i in range(1, N + 1)])
    wrong = [(it["id"], it.get("text"), it.get("error")) for i, it in enumerate(items) if it.get("text") != f"m{i}"]
    assert not wrong, f"{len(wrong)} exchanges hold the wrong message, first: {wrong[:5]}"
    assert all(it["role"] == "user" for it in items)

    # exchangeStored events arrive once per exchange, in order.
    await ctx.wait_event(lambda e: e.get("kind") == "exchangeStored" and e.get("exchangeId") == f"x{N}", timeout=20)
    stored = [e["exchangeId"] for e in ctx.events if e.get("kind") == "exchangeStored" and e.get("sessionId") == sid]
    assert stored == [f"x{i}" for i in range(1, N + 1)], f"exchangeStored events out of order: {stored[:10]}..."


async def _interleaved(ctx, n=200):
    """append #i, retrieve x{i}.1, listExchanges (and every 20th a search), all
    written before any answer is awaited; returns [(i, append, retrieve, list, search?)]."""
    sid = await ctx.open_session()
    futs = []
    for i in range(n):
        futs.append(ctx.send("ctx/append", {"sessionId": sid, "messages": [{"role": "user", "content": f"word{i} m{i}"}]}))
        futs.append(ctx.send("ctx/retrieve", {"sessionId": sid, "ids": [f"x{i + 1}.1"]}))
        futs.append(ctx.send("ctx/listExchanges", {"sessionId": sid, "limit": 10000}))
        if i % 20 == 0:
            futs.append(ctx.send("ctx/search", {"sessionId": sid, "query": f"word{i}"}))
    res = await asyncio.wait_for(asyncio.gather(*futs), 120)
    out, k = [], 0
    for i in range(n):
        app, ret, lst = res[k:k + 3]
        k += 3
        srch = None
        if i % 20 == 0:
            srch = res[k]
            k += 1
        out.append((i, app, ret, lst, srch))
    return out


async def test_pipelined_reads_see_earlier_writes(ctx):
    """A retrieve/listExchanges/search written right after an append (without waiting
    for its answer) sees that append."""
    stale = []
    for i, app, ret, lst, srch in await _interleaved(ctx):
        item = ret["items"][0]
        if item.get("text") != f"word{i} m{i}":
            stale.append(f"retrieve x{i + 1}.1 after its append: {item}")
        if len(lst["exchanges"]) < i + 1:
            stale.append(f"listExchanges after append #{i + 1}: {len(lst['exchanges'])} exchanges")
        if srch is not None and f"x{i + 1}" not in [h["id"] for h in srch["hits"]]:
            stale.append(f"search word{i} after its append: {srch['hits']}")
    assert not stale, f"{len(stale)} stale reads, first: " + "\n".join(stale[:8])


async def test_pipelined_reads_do_not_see_later_writes(ctx):
    """LSP lets a server run requests in parallel only where that cannot change an
    answer, so a read answers as if run at its place in the stream: a listExchanges
    written between append #i and append #i+1 lists exactly i exchanges."""
    ahead = [f"listExchanges between append #{i + 1} and #{i + 2}: {len(lst['exchanges'])} exchanges"
             for i, app, ret, lst, srch in await _interleaved(ctx) if len(lst["exchanges"]) != i + 1]
    assert not ahead, f"{len(ahead)} of 200 reads saw later appends, e.g.: " + "; ".join(ahead[:4])

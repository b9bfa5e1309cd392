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

"""Many clients on one store, through separate `ctxproxy serve` processes, for a while.

Each client appends (a question, a tool call and a tool output of a few KB, an answer),
assembles, retrieves and searches, mixed at random; half the clients share one session. The
script reports per method p50/p99 latency over the first and the last tenth of the run, and each
server's RSS at the start and at the end; then it checks that every acknowledged append is in
the store and counts errors (there must be none: busy retries are handled inside the server).

    python3 tests/load/load.py --clients 20 --seconds 300 [--json]

tests/test_load.py runs a short one in CI and asserts nothing lost and no error (not timings)."""

import argparse
import asyncio
import json
import pathlib
import random
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import ctxlib  # noqa: E402

METHODS = ("ctx/append", "ctx/assemble", "ctx/retrieve", "ctx/search")


def rss_kib(pid: int) -> int:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def percentile(xs: list[float], p: float) -> float:
    if not xs:
        return 0.0
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round((len(xs) - 1) * p))]


async def client(n: int, ctx, session: str, until: float, rng: random.Random, timings: list, acked: list,
                 errors: list):
    mine: list[str] = []
    i = 0
    while time.monotonic() < until:
        op = rng.choices(METHODS, weights=(4, 3, 2, 1))[0]
        i += 1
        marker = f"c{n}-m{i}"
        if op == "ctx/append":
            output = "".join(f"{marker} line {k} {rng.getrandbits(64):x}\n" for k in range(rng.randrange(40, 120)))
            params = {"sessionId": session,
                      "messages": ctxlib.tool_exchange(f"question {marker}", output, call_id=f"call-{marker}")}
        elif op == "ctx/assemble":
            params = {"sessionId": session, "input": {"role": "user", "content": f"next {marker}"}, "budget": 8000}
        elif op == "ctx/retrieve":
            params = {"sessionId": session, "ids": [rng.choice(mine) if mine else "x1"], "maxTokens": 200}
        else:
            params = {"sessionId": session, "query": f"line {rng.randrange(100)}", "limit": 5}
        start = time.monotonic()
        try:
            reply = await ctx.req(op, params, timeout=120)
        except Exception as e:  # noqa: BLE001 - every error is a finding
            if op == "ctx/retrieve" and not mine:
                continue
            errors.append(f"client {n} {op}: {e}")
            continue
        timings.append((start, op, time.monotonic() - start))
        if op == "ctx/append":
            x = reply["exchanges"][0]["id"]
            mine.append(x)
            acked.append((session, x, marker))
        elif op == "ctx/retrieve" and mine:
            for item in reply["items"]:
                if "error" in item:
                    errors.append(f"client {n} retrieve {item['id']}: {item['error']}")


async def run(clients: int, seconds: float, store: pathlib.Path | None = None, seed: int = 7) -> dict:
    tmp = None
    if store is None:
        tmp = tempfile.TemporaryDirectory(prefix="ctxproxy-load-")
        store = pathlib.Path(tmp.name) / "store.db"
    ctxs = [await ctxlib.start(store) for _ in range(clients)]
    shared = await ctxs[0].open_session(title="shared")
    sessions = [shared if n % 2 else await ctxs[n].open_session(title=f"client {n}") for n in range(clients)]
    rss_start = {n: rss_kib(c.proc.pid) for n, c in enumerate(ctxs)}
    timings, acked, errors = [], [], []
    t0 = time.monotonic()
    until = t0 + seconds
    await asyncio.gather(*(client(n, c, sessions[n], until, random.Random(seed + n), timings, acked, errors)
                           for n, c in enumerate(ctxs)))
    rss_end = {n: rss_kib(c.proc.pid) for n, c in enumerate(ctxs)}
    # Nothing acknowledged is lost: every acknowledged append's exchange holds its marker.
    lost = []
    for session, x, marker in acked:
        [item] = await ctxs[0].retrieve(session, [x])
        if f"question {marker}" not in item.get("text", ""):
            lost.append((session, x, marker))
    for c in ctxs:
        await ctxlib.stop(c)
    if tmp:
        tmp.cleanup()
    window = seconds / 10

    def figures(lo, hi):
        return {op: {"n": len(xs), "p50_ms": round(percentile(xs, 0.5) * 1000, 2),
                     "p99_ms": round(percentile(xs, 0.99) * 1000, 2)}
                for op in METHODS
                for xs in [[d for s, o, d in timings if o == op and lo <= s - t0 < hi]]}

    return {
        "clients": clients, "seconds": seconds, "requests": len(timings), "acknowledged_appends": len(acked),
        "lost": lost, "errors": errors,
        "first_tenth": figures(0, window), "last_tenth": figures(seconds - window, seconds + 1),
        "rss_kib_start": {"max": max(rss_start.values()), "mean": sum(rss_start.values()) // clients},
        "rss_kib_end": {"max": max(rss_end.values()), "mean": sum(rss_end.values()) // clients},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--store", type=pathlib.Path, help="store to load (default: a fresh temp store)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    out = asyncio.run(run(a.clients, a.seconds, a.store))
    if a.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{out['clients']} clients, {out['seconds']:.0f} s: {out['requests']} requests, "
              f"{out['acknowledged_appends']} appends acknowledged, {len(out['lost'])} lost, {len(out['errors'])} errors")
        for name in ("first_tenth", "last_tenth"):
            print(f"{name}: " + ", ".join(f"{op} n={f['n']} p50={f['p50_ms']}ms p99={f['p99_ms']}ms"
                                          for op, f in out[name].items()))
        print(f"RSS KiB start {out['rss_kib_start']}, end {out['rss_kib_end']}")
        for e in out["errors"][:20]:
            print("error:", e)
    sys.exit(1 if out["lost"] or out["errors"] else 0)


if __name__ == "__main__":
    main()

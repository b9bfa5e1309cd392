"""Many assistants through `ctxproxy proxy` replicas on one store, for a while.

Each client has an API key of its own (its tenant) and holds conversations of a few turns, each
request resending the whole history (Chat Completions) to a replica picked at random, as a load
balancer without affinity would; the model is a scripted upstream on loopback that answers at
once. At the end the store is read: every turn a client got a reply for is stored once, in order,
in one session of that client's tenant; nothing else is. The script reports the requests' wait
(the upstream answers in well under a millisecond: the wait is what the proxy and the store add,
sending the history included) p50 / p99, first and last tenth of the run.

    python3 tests/load/proxy_load.py --clients 20 --seconds 300 --replicas 2 [--json]

tests/test_load.py runs a short one in CI and asserts what the store holds (not timings)."""

import argparse
import concurrent.futures
import contextlib
import json
import pathlib
import random
import sqlite3
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import proxylib  # noqa: E402

# Turns of a conversation before the client starts a new one.
TURNS = 8


def percentile(xs: list[float], p: float) -> float:
    if not xs:
        return 0.0
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round((len(xs) - 1) * p))]


def answer(rec: proxylib.Recorded) -> proxylib.Turn:
    asked = [m for m in rec.json["messages"] if m["role"] == "user"][-1]["content"]
    return proxylib.Turn(text=f"answer to: {asked}")


def chat(url: str, key: str, messages: list[dict]) -> str:
    request = urllib.request.Request(
        url + "/v1/chat/completions",
        data=json.dumps({"model": "gpt-scripted", "messages": messages}).encode(),
        headers={"content-type": "application/json", "authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=120) as r:
        return json.load(r)["choices"][0]["message"]["content"]


def client(n: int, urls: list[str], until: float, rng: random.Random, timings: list, conversations: list,
           errors: list):
    """Conversations of `TURNS` turns until `until`; each one is kept as the client saw it."""
    key = f"sk-load-client-{n:03d}-0123456789abcdef"
    c = 0
    while time.monotonic() < until:
        history = [{"role": "system", "content": f"You are client {n}'s assistant."}]
        for t in range(TURNS):
            if time.monotonic() >= until:
                break
            history.append({"role": "user", "content": f"client {n} conversation {c} turn {t}: what next?"})
            started = time.monotonic()
            try:
                reply = chat(rng.choice(urls), key, history)
            except Exception as e:  # noqa: BLE001 - every failure is reported
                errors.append(f"client {n} conversation {c} turn {t}: {e}")
                history.pop()
                break
            timings.append((started, time.monotonic() - started))
            history.append({"role": "assistant", "content": reply})
        if len(history) > 1:
            conversations.append((key, [(m["role"], m["content"]) for m in history[1:]]))
        c += 1


def stored(store: pathlib.Path) -> list[tuple[str, list[tuple[str, str]]]]:
    """Each session's tenant and messages, in order."""
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        tenants = dict(db.execute("SELECT id, tenant FROM sessions"))
        out: dict[str, list] = {}
        for session, role, content in db.execute(
                "SELECT session_id, role, content FROM messages ORDER BY session_id, seq, idx"):
            out.setdefault(session, []).append((role, content))
        return [(tenants[s], m) for s, m in out.items()]
    finally:
        db.close()


def run(clients: int, seconds: float, replicas: int, store: pathlib.Path | None = None, seed: int = 7) -> dict:
    with tempfile.TemporaryDirectory(prefix="ctxproxy-load-") as tmp:
        return _run(clients, seconds, replicas, store or pathlib.Path(tmp) / "store.db", seed)


def _run(clients: int, seconds: float, replicas: int, store: pathlib.Path, seed: int) -> dict:
    with contextlib.ExitStack() as stack:
        upstream = stack.enter_context(proxylib.ScriptedUpstream())
        # Answers enough for any run: each entry answers one request.
        upstream.push(*[answer] * (clients * int(seconds * 200 + 100)))
        proxies = [stack.enter_context(proxylib.Proxy(store, upstream.url, upstream.url)) for _ in range(replicas)]
        urls = [p.url for p in proxies]
        timings: list = []
        conversations: list = []
        errors: list = []
        t0 = time.monotonic()
        until = t0 + seconds
        with concurrent.futures.ThreadPoolExecutor(clients) as pool:
            for n in range(clients):
                pool.submit(client, n, urls, until, random.Random(seed + n), timings, conversations, errors)
        # The proxies stop here (SIGTERM: the store checkpointed).
    held = stored(store)
    # Every conversation the client saw is one stored session of one tenant, each message once.
    lost = []
    remaining = [messages for _, messages in held]
    for key, messages in conversations:
        match = [i for i, m in enumerate(remaining) if m == messages]
        if not match:
            lost.append((key, messages[-1] if messages else None))
            continue
        del remaining[match[0]]
    tenant_of_session = {}
    for tenant, messages in held:
        first = messages[0][1] if messages else ""
        tenant_of_session.setdefault(first.split(" conversation ")[0], set()).add(tenant)
    crossing = {c: t for c, t in tenant_of_session.items() if len(t) != 1}
    tenants = [next(iter(t)) for t in tenant_of_session.values() if len(t) == 1]
    window = seconds / 10

    def figures(lo, hi):
        xs = [d for s, d in timings if lo <= s - t0 < hi]
        return {"n": len(xs), "p50_ms": round(percentile(xs, 0.5) * 1000, 2),
                "p99_ms": round(percentile(xs, 0.99) * 1000, 2)}

    return {
        "clients": clients, "seconds": seconds, "replicas": replicas, "requests": len(timings),
        "conversations": len(conversations), "sessions": len(held),
        "lost": lost, "extra_sessions": len(remaining), "errors": errors,
        "tenants_crossed": crossing, "shared_tenants": len(tenants) - len(set(tenants)),
        "wait": figures(0, seconds + 1), "first_tenth": figures(0, window),
        "last_tenth": figures(seconds - window, seconds + 1),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--store", type=pathlib.Path, help="store to load (default: a fresh temp store)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    out = run(a.clients, a.seconds, a.replicas, a.store)
    if a.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{out['clients']} clients, {out['replicas']} replicas, {out['seconds']:.0f} s: {out['requests']} "
              f"requests, {out['conversations']} conversations in {out['sessions']} sessions; "
              f"{len(out['lost'])} lost, {out['extra_sessions']} sessions no client held, {len(out['errors'])} errors, "
              f"{len(out['tenants_crossed'])} conversations across tenants, {out['shared_tenants']} tenants shared")
        for name in ("wait", "first_tenth", "last_tenth"):
            f = out[name]
            print(f"{name}: n={f['n']} p50={f['p50_ms']}ms p99={f['p99_ms']}ms")
        for e in out["errors"][:20]:
            print("error:", e)
    bad = out["lost"] or out["extra_sessions"] or out["errors"] or out["tenants_crossed"] or out["shared_tenants"]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

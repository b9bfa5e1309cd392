"""Seeded fuzzing of the wire: framing (junk, short Content-Length, missing or invalid headers,
bodies that are not JSON or not JSON-RPC, ids of every type) and every method's params (wrong
types, missing and unknown keys, odd values). Cases go to one server in pipelined batches; after
every batch the server must answer a valid `ctx/stats`, and it must be alive at the end.

CTXPROXY_FUZZ_CASES (default 10000) and CTXPROXY_FUZZ_SEED (default 20261123) set the run; a
release run uses e.g. CTXPROXY_FUZZ_CASES=1000000 (see tests/README.md)."""

import asyncio
import json
import os
import random

import ctxlib

CASES = int(os.environ.get("CTXPROXY_FUZZ_CASES", "10000"))
SEED = int(os.environ.get("CTXPROXY_FUZZ_SEED", "20261123"))
BATCH = 100

METHODS = ["ctx/openSession", "ctx/append", "ctx/assemble", "ctx/retrieve", "ctx/search", "ctx/explain",
           "ctx/housekeeping", "ctx/listSessions", "ctx/listExchanges", "ctx/stats", "ctx/path", "ctx/nope",
           "workspace/didChangeConfiguration", "initialize", "$/cancelRequest"]


def templates(sid: str) -> dict[str, dict]:
    """A valid params object per method: the fuzzer mutates these."""
    msg = {"role": "user", "content": "fix the build", "kind": "query"}
    call = {"role": "assistant", "content": "", "toolCalls": [{"id": "c1", "name": "run", "arguments": {"cmd": "ls"}}]}
    tool = {"role": "tool", "toolCallId": "c1", "content": "a\nb\nerror: x"}
    return {
        "ctx/openSession": {"workspace": "/w", "title": "t", "parent": {"sessionId": sid, "atExchange": "x1"}},
        "ctx/append": {"sessionId": sid, "messages": [msg, call, tool], "supersedes": ["x1", "x1-x2"]},
        "ctx/assemble": {"sessionId": sid, "input": msg, "system": "s", "budget": 4000, "encoding": "o200k_base",
                         "format": "openai", "order": "cache-stable"},
        "ctx/retrieve": {"sessionId": sid, "ids": ["x1", "x1.2", "b3:00000000", "p1"], "format": "full",
                         "lines": [1, 2], "grep": "error", "maxTokens": 50},
        "ctx/search": {"sessionId": sid, "workspace": "/w", "query": "build error", "limit": 5},
        "ctx/explain": {"sessionId": sid, "promptId": "p1"},
        "ctx/housekeeping": {"sessionId": sid, "exchangeId": "x1", "header": "h", "summary": "s",
                             "keyDecisions": ["k"], "codeChanges": ["c"], "openQuestions": ["q"],
                             "currentContext": "cc", "supersedes": ["x1"]},
        "ctx/listSessions": {"workspace": "/w"},
        "ctx/listExchanges": {"sessionId": sid, "from": 1, "limit": 10},
        "ctx/stats": {},
        "ctx/path": {"sessionId": sid, "exchangeId": "x1"},
        "ctx/nope": {},
        "workspace/didChangeConfiguration": {"settings": {"ctx": {"budget": 16000, "layers": {"recentFull": 5}}}},
        "initialize": {"capabilities": {}},
        "$/cancelRequest": {"id": 1},
    }


def random_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(12 if depth < 3 else 8)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 1, 2**31, 2**32, 2**53, 2**63, 2**64, -(2**63) - 1, 10**30])
    if kind == 3:
        return rng.choice([0.5, -1e308, 1e308, 3.0])
    if kind == 4:
        return ""
    if kind == 5:
        return "".join(rng.choice("xp.b3:0123456789abcdef-") for _ in range(rng.randrange(1, 12)))
    if kind == 6:
        return "".join(chr(rng.randrange(1, 0x2FFF)) for _ in range(rng.randrange(1, 40)))
    if kind == 7:
        return rng.choice(["user", "assistant", "tool", "system", "x1", "x1.1", "p1", "b3:", "*", "((", "\u0000"])
    if kind in (8, 9):
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
    return {rng.choice(["role", "content", "id", "a", "sessionId", "Budget", "text", "type"]):
            random_value(rng, depth + 1) for _ in range(rng.randrange(0, 4))}


def mutate(rng: random.Random, value):
    """A copy of `value` with one random change somewhere inside it."""
    if isinstance(value, dict) and value and rng.random() < 0.7:
        key = rng.choice(list(value))
        out = dict(value)
        r = rng.random()
        if r < 0.25:
            del out[key]
        elif r < 0.4:
            out[key + rng.choice(["_", "s", "X"])] = out.pop(key)
        else:
            out[key] = mutate(rng, out[key])
        return out
    if isinstance(value, list) and value and rng.random() < 0.7:
        out = list(value)
        i = rng.randrange(len(out))
        out[i] = mutate(rng, out[i])
        return out
    return random_value(rng)


def case_bytes(rng: random.Random, n: int, sid: str) -> bytes:
    """One fuzz case: a frame (or junk) as bytes. Never announces more bytes than it gives, so the
    next frame is reachable (a longer claim just waits for input, as it should)."""
    kind = rng.random()
    if kind < 0.6:
        method = rng.choice(METHODS)
        params = templates(sid)[method]
        for _ in range(rng.randrange(1, 4)):
            params = mutate(rng, params)
        msg = {"jsonrpc": "2.0", "id": f"f{n}", "method": method, "params": params}
        if rng.random() < 0.1:
            msg["id"] = random_value(rng)
        if rng.random() < 0.05:
            del msg["jsonrpc"]
        body = json.dumps(msg).encode()
    elif kind < 0.7:
        body = json.dumps(random_value(rng)).encode()
    elif kind < 0.8:
        body = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 200)))
    else:
        body = json.dumps({"jsonrpc": "2.0", "id": n, "method": "ctx/stats", "params": {}}).encode()
    body = body.replace(b"Content-Length", b"Content-Lenght").replace(b"content-length", b"content-lenght")
    header_kind = rng.random()
    if header_kind < 0.7:
        return b"Content-Length: %d\r\n\r\n" % len(body) + body
    if header_kind < 0.8:  # short by a few bytes: the rest is junk before the next header
        return b"Content-Length: %d\r\n\r\n" % max(0, len(body) - rng.randrange(1, 8)) + body
    if header_kind < 0.85:
        return b"Content-Type: application/json\r\n\r\n" + body
    if header_kind < 0.9:
        return rng.choice([b"Content-Length: -3\r\n\r\n", b"Content-Length: 1e3\r\n\r\n",
                           b"Content-Length:\r\n\r\n"]) + body
    if header_kind < 0.95:
        return b"garbage line\r\n" + b"Content-Length: %d\r\n\r\n" % len(body) + body
    return b"Content-Length: %d\r\nContent-Type: x\r\n\r\n" % len(body) + body


async def read_frames(stdout: asyncio.StreamReader, sink: asyncio.Queue):
    while True:
        header = await stdout.readuntil(b"\r\n\r\n")
        length = int(header.split(b":", 1)[1].split(b"\r\n", 1)[0])
        await sink.put(json.loads(await stdout.readexactly(length)))


async def test_fuzzed_frames_and_params_never_stop_the_server(tmp_path):
    proc = await asyncio.create_subprocess_exec(
        *ctxlib.server_command(tmp_path / "store.db"), stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    replies: asyncio.Queue = asyncio.Queue()
    reader = asyncio.create_task(read_frames(proc.stdout, replies))

    def send(msg: dict):
        body = json.dumps(msg).encode()
        proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    seen = {"replies": 0, "errors": 0}

    async def answer(id_):
        while True:
            r = await asyncio.wait_for(replies.get(), 60)
            seen["replies"] += 1
            seen["errors"] += "error" in r
            if r.get("id") == id_:
                return r

    try:
        send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {"capabilities": {}}})
        assert "result" in await answer("init")
        send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        send({"jsonrpc": "2.0", "id": "open", "method": "ctx/openSession", "params": {}})
        sid = (await answer("open"))["result"]["sessionId"]
        send({"jsonrpc": "2.0", "id": "seed", "method": "ctx/append",
              "params": {"sessionId": sid, "messages": templates(sid)["ctx/append"]["messages"]}})
        assert "result" in await answer("seed")
        rng = random.Random(SEED)
        for start in range(0, CASES, BATCH):
            for n in range(start, min(CASES, start + BATCH)):
                proc.stdin.write(case_bytes(rng, n, sid))
            check = f"check{start}"
            send({"jsonrpc": "2.0", "id": check, "method": "ctx/stats", "params": {}})
            await proc.stdin.drain()
            reply = await answer(check)
            assert "sessions" in reply.get("result", {}), (start, reply)
            assert proc.returncode is None, f"server exited with {proc.returncode} in batch at {start}"
        # Every case is answered (a result or an error), bar notifications and bodies lost to a
        # short Content-Length before them.
        print(f"fuzz: {CASES} cases, seed {SEED}: {seen['replies']} replies, {seen['errors']} errors")
        assert seen["replies"] > CASES * 0.8, seen
    finally:
        reader.cancel()
        if proc.returncode is None:
            proc.kill()
        await proc.wait()

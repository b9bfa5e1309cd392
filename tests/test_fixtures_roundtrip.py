"""5. Every recorded session in fixtures/sessions round-trips: each message
retrieves exactly as appended, each blob retrieves to the exact tool output."""

import json

import pytest

import ctxlib

FIXTURES = ctxlib.session_fixtures()
SECRETS = ctxlib.known_secrets()


def test_fixtures_present():
    assert any(p.name == "minimal.jsonl" for p in FIXTURES), f"fixtures/sessions/minimal.jsonl missing: {FIXTURES}"


def _same(sent, got) -> bool:
    """Equal, or equal up to [secret:KIND] masks (compared on canonical JSON)."""
    if sent == got:
        return True
    a = sent if isinstance(sent, str) else json.dumps(sent, sort_keys=True, ensure_ascii=False)
    b = got if isinstance(got, str) else json.dumps(got, sort_keys=True, ensure_ascii=False)
    if "[secret:" not in b:
        return False
    if any(s in b for s in SECRETS):
        return False
    return ctxlib.masked_equal(a, b)


def _content(m):
    c = m.get("content")
    if c is None:
        return ""
    if isinstance(c, list):
        return "".join(p["text"] for p in c)
    return c


def _calls(m):
    return [{"id": c["id"], "name": c["name"], "arguments": c.get("arguments", {})} for c in m.get("toolCalls") or []]


@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
async def test_session_round_trip(ctx, path):
    # Each session of the file in turn (a fork from its parent, a child call from its caller), each
    # checked on its own exchanges.
    ids = {}
    for session in ctxlib.recorded_sessions(path):
        sid = await ctxlib.open_recorded(ctx, session, ids, title=f"{path.stem} {session['name']}",
                                         workspace="/fixtures")
        await _round_trip(ctx, path, sid, session["lines"], ctxlib.first_own_seq(session))


async def _round_trip(ctx, path, sid, lines, first_seq):
    sent = {}      # message id -> message as appended
    blobs = []     # (blob report, message id)
    seq = first_seq
    n = 0
    for lineno, line in enumerate(lines, 1):
        expected_x = []
        for m in line["messages"]:
            if m["role"] == "user":
                seq += 1
                n = 0
                expected_x.append({"id": f"x{seq}", "seq": seq})
            n += 1
            sent[f"x{seq}.{n}"] = m
        r = await ctx.req("ctx/append", {"sessionId": sid, "messages": line["messages"],
                                         **({"supersedes": line["supersedes"]} if "supersedes" in line else {})})
        assert r["exchanges"] == expected_x, f"{path.name}:{lineno}: exchanges {r['exchanges']} != {expected_x}"
        for b in r["blobs"]:
            assert b["messageId"] in sent and sent[b["messageId"]]["role"] == "tool", f"{path.name}:{lineno}: {b}"
            blobs.append(b)

    xs = await ctx.list_exchanges(sid, limit=10000)
    assert [x["id"] for x in xs] == [f"x{i}" for i in range(1, seq + 1)]

    ids = list(sent)
    items = []
    for i in range(0, len(ids), 200):
        items += await ctx.retrieve(sid, ids[i:i + 200])
    blob_of = {b["messageId"]: b["id"] for b in blobs}
    problems, masked = [], 0
    for it in items:
        mid, m = it["id"], sent[it["id"]]
        if "error" in it:
            problems.append(f"{mid}: {it['error']}")
            continue
        # (the item's own `kind` field is checked in test_lifecycle.py::test_message_item_kind)
        checks = {
            "role": (m["role"], it.get("role")),
            "content": (_content(m), it.get("text")),
            "toolCalls": (_calls(m), it.get("toolCalls") or []),
            "toolCallId": (m.get("toolCallId"), it.get("toolCallId")),
            "name": (m.get("name"), it.get("name")),
            "agent": (m.get("agent"), it.get("agent")),
            "at": (m.get("at"), it.get("at")),
            "messageKind": (m.get("kind"), it.get("messageKind")),  # a user message's query|feedback
        }
        for field, (want, got) in checks.items():
            if not _same(want, got):
                problems.append(f"{mid}.{field}: sent {json.dumps(want)[:200]} got {json.dumps(got)[:200]}")
        if "[secret:" in (it.get("text") or ""):
            masked += 1
        if mid in blob_of and it.get("blobId") != blob_of[mid]:
            problems.append(f"{mid}: blobId {it.get('blobId')!r}, append reported {blob_of[mid]!r}")

    # Every blob id the append reported retrieves to the exact tool output.
    bitems = await ctx.retrieve(sid, [b["id"] for b in blobs]) if blobs else []
    for b, it in zip(blobs, bitems):
        want = _content(sent[b["messageId"]])
        if "error" in it:
            problems.append(f"blob {b['id']} ({b['messageId']}): {it['error']}")
        elif it.get("kind") != "blob" or not _same(want, it.get("text")):
            problems.append(f"blob {b['id']} ({b['messageId']}): text differs from the tool output "
                            f"(want {len(want)} chars, got {len(it.get('text') or '')})")
        elif "[secret:" not in it["text"] and b["bytes"] != len(want.encode()):
            problems.append(f"blob {b['id']}: bytes {b['bytes']} != {len(want.encode())}")
    # Every exchange's header and summary are within their caps (12 and 120 tokens).
    xids = [f"x{i}" for i in range(first_seq + 1, seq + 1)]
    for fmt, cap in (("header", 12), ("summary", 120)):
        for it in await ctx.retrieve(sid, xids, format=fmt):
            if "error" in it or it.get("format") != fmt or not it.get("text") or it["tokens"] > cap:
                problems.append(f"{it['id']} {fmt}: {it.get('error') or (it.get('tokens'), it.get('text', '')[:120])}")
    print(f"{path.name}: {len(items)} messages, {len(blobs)} blobs, {masked} masked messages")
    assert not problems, f"{len(problems)} mismatches in {path.name}:\n" + "\n".join(problems[:40])

"""Superseded exchanges (reasoning steps that replace state): `supersedes` on ctx/append and ctx/housekeeping, the prompt
showing them as headers at most, explain / show-prompt saying by what, retrieve and search still
finding them, and every bad entry refused naming its field."""

import subprocess

import ctxlib
import pytest
from lsprotocol.types import ErrorCodes

# Each step writes a long answer, so that in full it is far more than its header.
STEPS = [
    ("DECOMPOSE the cubic x^3 - 6x^2 + 11x - 6 into subproblems", "decomposition"),
    ("ANALYZE the rational roots of the cubic", "rational-roots"),
    ("ANALYZE the derivative 3x^2 - 12x + 11", "derivative"),
    ("EVALUATE whether x = 1 is a root", "evaluation"),
]


def step(ask: str, tag: str, words: int = 120) -> list[dict]:
    body = " ".join(f"{tag}-{i}" for i in range(words))
    return [{"role": "user", "content": ask}, {"role": "assistant", "content": f"{ask}: {body}"}]


async def reasoning_session(ctx) -> str:
    sid = await ctx.open_session(title="mcts")
    for ask, tag in STEPS:
        await ctx.append(sid, step(ask, tag))
    return sid


def items(reply: dict) -> dict[str, str]:
    return {i["id"]: i["format"] for layer in reply["layers"] for i in layer["items"]}


async def test_append_with_supersedes_shows_superseded_exchanges_as_headers_only(ctx, store):
    sid = await reasoning_session(ctx)
    r = await ctx.req("ctx/append", {"sessionId": sid, "supersedes": ["x2-x3", "x4"],
                                     "messages": step("SYNTHESIZE the analyses into one approach", "synthesis")})
    assert r["exchanges"] == [{"id": "x5", "seq": 5}], r

    a = await ctx.req("ctx/assemble", {"sessionId": sid, "budget": 16000, "format": "text"})
    shown = items(a)
    assert shown["x1"] == "full" and shown["x5"] == "full", shown
    assert all(shown[x] == "header" for x in ("x2", "x3", "x4")), shown
    # Not one word of a superseded answer is in the prompt; the superseder's are.
    assert "rational-roots-7" not in a["text"] and "derivative-7" not in a["text"]
    assert "evaluation-7" not in a["text"] and "synthesis-7" in a["text"]
    reasons = {t["id"]: t["reason"] for t in a["trimmed"]}
    assert reasons == {"x2": "superseded by x5", "x3": "superseded by x5", "x4": "superseded by x5"}, a["trimmed"]
    assert a["superseded"] == [{"ids": "x2-x4", "by": "x5"}], a["superseded"]

    # The record says the same, and show-prompt prints it.
    e = await ctx.req("ctx/explain", {"sessionId": sid, "promptId": a["promptId"]})
    assert e["superseded"] == [{"ids": "x2-x4", "by": "x5"}]
    out = subprocess.run([str(ctxlib.binary()), "show-prompt", sid, a["promptId"], "--store", str(store)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "x2-x4 superseded by x5" in out.stdout, out.stdout
    assert "x3 full -> header: superseded by x5" in out.stdout, out.stdout

    # Superseded exchanges stay retrievable and searchable, and say by what.
    (x3,) = await ctx.retrieve(sid, ["x3"])
    assert "derivative-7" in x3["text"] and x3["supersededBy"] == "x5", x3
    (x1,) = await ctx.retrieve(sid, ["x1"])
    assert "supersededBy" not in x1
    listed = {x["id"]: x.get("supersededBy") for x in await ctx.list_exchanges(sid)}
    assert listed == {"x1": None, "x2": "x5", "x3": "x5", "x4": "x5", "x5": None}, listed
    hits = (await ctx.req("ctx/search", {"sessionId": sid, "query": "derivative"}))["hits"]
    assert "x3" in [h["id"] for h in hits], hits


async def test_supersedes_applies_to_the_exchange_an_append_continues(ctx):
    sid = await reasoning_session(ctx)
    await ctx.append(sid, [{"role": "user", "content": "REFINE the approach"}])
    r = await ctx.req("ctx/append", {"sessionId": sid, "supersedes": ["x1"],
                                     "messages": [{"role": "assistant", "content": "Refined approach: factor."}]})
    assert r["exchanges"] == [{"id": "x5", "seq": 5}], r
    assert (await ctx.retrieve_one(sid, "x1"))["supersededBy"] == "x5"


async def test_an_exchange_keeps_its_first_superseder(ctx):
    sid = await reasoning_session(ctx)
    await ctx.req("ctx/append", {"sessionId": sid, "supersedes": ["x2"], "messages": step("REFINE", "refine")})
    await ctx.req("ctx/append", {"sessionId": sid, "supersedes": ["x2-x3"], "messages": step("SYNTHESIZE", "syn")})
    listed = {x["id"]: x.get("supersededBy") for x in await ctx.list_exchanges(sid)}
    assert listed["x2"] == "x5" and listed["x3"] == "x6", listed


async def test_housekeeping_supersedes_for_a_stored_exchange(ctx):
    sid = await reasoning_session(ctx)
    await ctx.req("ctx/housekeeping", {"sessionId": sid, "exchangeId": "x4", "supersedes": ["x2-x3"]})
    a = await ctx.req("ctx/assemble", {"sessionId": sid, "budget": 16000})
    assert a["superseded"] == [{"ids": "x2-x3", "by": "x4"}], a
    assert {items(a)[x] for x in ("x2", "x3")} == {"header"}
    err = await ctx.err("ctx/housekeeping", {"sessionId": sid, "exchangeId": "x3", "supersedes": ["x3"]})
    assert err.code == ErrorCodes.InvalidParams and "supersedes[0]" in err.message and "x3" in err.message, err


async def test_a_fork_keeps_a_supersession_only_when_its_superseder_is_shared(ctx):
    sid = await reasoning_session(ctx)
    await ctx.req("ctx/append", {"sessionId": sid, "supersedes": ["x1"], "messages": step("REFINE", "r")})
    await ctx.req("ctx/housekeeping", {"sessionId": sid, "exchangeId": "x3", "supersedes": ["x2"]})
    fork = await ctx.open_session(parent={"sessionId": sid, "atExchange": 4})
    listed = {x["id"]: x.get("supersededBy") for x in await ctx.list_exchanges(fork)}
    assert listed == {"x1": None, "x2": "x3", "x3": None, "x4": None}, listed


@pytest.mark.parametrize("supersedes, message", [
    (["x1", "x9-x3"], 'supersedes[1]: expected x<K> or x<K>-x<M>, got "x9-x3"'),
    (["x0"], 'supersedes[0]: expected x<K> or x<K>-x<M>, got "x0"'),
    (["3"], 'supersedes[0]: expected x<K> or x<K>-x<M>, got "3"'),
    (["x1", "x5"], "supersedes[1]: x5 is not earlier than x5"),
    (["x2-x7"], "supersedes[0]: x2-x7 is not earlier than x5"),
    ("x1", "supersedes: invalid type"),
    ([3], "supersedes[0]: invalid type"),
])
async def test_bad_supersedes_are_refused_naming_the_entry(ctx, supersedes, message):
    sid = await reasoning_session(ctx)
    err = await ctx.err("ctx/append", {"sessionId": sid, "supersedes": supersedes,
                                       "messages": step("SYNTHESIZE", "s")})
    assert err.code == ErrorCodes.InvalidParams, err
    assert message in err.message, err.message
    # Nothing was stored, and the server goes on.
    assert len(await ctx.list_exchanges(sid)) == 4


async def test_supersedes_needs_one_exchange(ctx):
    sid = await reasoning_session(ctx)
    err = await ctx.err("ctx/append", {"sessionId": sid, "supersedes": ["x1"],
                                       "messages": step("one", "a") + step("two", "b")})
    assert err.code == ErrorCodes.InvalidParams
    assert "supersedes: an append that supersedes must hold one exchange's messages" in err.message

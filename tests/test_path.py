"""`ctx/path` and `ctxproxy path`: the chain from the root session through each fork point to a
node, each session with the exchanges of the path it made, shared ones under their maker."""

import json
import subprocess

import ctxlib
from lsprotocol.types import ErrorCodes


def step(ask: str) -> list[dict]:
    return [{"role": "user", "content": ask}, {"role": "assistant", "content": f"Done: {ask}."}]


async def tree(ctx) -> tuple[str, str, str]:
    """main x1-x4; b1 forks main at x2 (x3, x4 own; x4 supersedes x3); b2 forks b1 at x3."""
    main = await ctx.open_session(title="main")
    for ask in ["decompose the cubic", "analyze rational roots", "analyze the derivative", "evaluate x = 1"]:
        await ctx.append(main, step(ask))
    b1 = await ctx.open_session(title="b1", parent={"sessionId": main, "atExchange": 2})
    await ctx.append(b1, step("evaluate x = 2"))
    await ctx.req("ctx/append", {"sessionId": b1, "supersedes": ["x3"], "messages": step("refine: factor it")})
    b2 = await ctx.open_session(title="b2", parent={"sessionId": b1, "atExchange": 3})
    await ctx.append(b2, step("synthesize the roots"))
    return main, b1, b2


def shape(path: dict) -> list:
    return [(s["title"], s.get("parent", {}).get("atExchange"), s.get("parent", {}).get("kind"),
             [(x["id"], x.get("supersededBy")) for x in s["exchanges"]]) for s in path["sessions"]]


async def test_path_over_a_fork_chain_via_lsp_and_cli(ctx, store):
    main, b1, b2 = await tree(ctx)
    p = await ctx.req("ctx/path", {"sessionId": b2})
    assert shape(p) == [
        ("main", None, None, [("x1", None), ("x2", None)]),
        ("b1", 2, "fork", [("x3", None)]),
        ("b2", 3, "fork", [("x4", None)]),
    ], p
    assert [s["sessionId"] for s in p["sessions"]] == [main, b1, b2]
    assert p["sessions"][1]["parent"]["sessionId"] == main and p["sessions"][2]["parent"]["sessionId"] == b1
    assert [x["header"] for x in p["sessions"][0]["exchanges"]][0].lower().startswith("decompose")
    # A fork is a branch of the same call, as deep as the session it branches
    # from; only a child call is one level deeper (test_child_sessions.py).
    assert [s["depth"] for s in p["sessions"]] == [0, 0, 0]

    # b1's newest exchange supersedes its x3, both on the path.
    p = await ctx.req("ctx/path", {"sessionId": b1})
    assert shape(p) == [
        ("main", None, None, [("x1", None), ("x2", None)]),
        ("b1", 2, "fork", [("x3", "x4"), ("x4", None)]),
    ], p
    # A node inside the shared part ends the path in the ancestor that made it.
    p = await ctx.req("ctx/path", {"sessionId": b1, "exchangeId": "x1"})
    assert shape(p) == [("main", None, None, [("x1", None)]), ("b1", 2, "fork", [])], p
    # The root alone.
    p = await ctx.req("ctx/path", {"sessionId": main, "exchangeId": "x3"})
    assert shape(p) == [("main", None, None, [("x1", None), ("x2", None), ("x3", None)])], p

    run = lambda *a: subprocess.run([str(ctxlib.binary()), "path", *a, "--store", str(store)],
                                    capture_output=True, text=True, timeout=60)
    out = run(b2, "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == await ctx.req("ctx/path", {"sessionId": b2})
    out = run(b1, "x4")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith(f"{main}  main  depth 0"), lines
    assert lines[3] == f"{b1}  b1  depth 0, fork of {main} at x2", lines
    assert lines[4].startswith("  x3") and lines[4].endswith("[superseded by x4]"), lines
    assert lines[5].startswith("  x4") and "superseded" not in lines[5], lines
    assert len(lines) == 6, lines


async def test_path_errors_name_the_field(ctx, store):
    main, b1, _ = await tree(ctx)
    err = await ctx.err("ctx/path", {"sessionId": b1, "exchangeId": "x9"})
    assert err.code == -32002 and "x9" in err.message, err
    err = await ctx.err("ctx/path", {"sessionId": b1, "exchangeId": "p1"})
    assert err.code == ErrorCodes.InvalidParams and err.message.startswith("exchangeId: expected x<N>"), err
    err = await ctx.err("ctx/path", {"sessionId": "s-nope"})
    assert err.code == -32001, err
    err = await ctx.err("ctx/path", {"session": b1})
    assert err.code == ErrorCodes.InvalidParams and "sessionId" in err.message, err
    out = subprocess.run([str(ctxlib.binary()), "path", b1, "x9", "--store", str(store)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "x9" in out.stderr, out

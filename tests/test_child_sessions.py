"""Recursive calls: child sessions opened with a query and a context, their depth and
lineage in L0, the one-shot prompt at maxDepth, the state envelope and `stateChanged`; and the
recorded recursive session (fixtures/tools/rlm_session.py) replayed by hand over LSP."""

import json
import pathlib
import re
import subprocess
import sys

import pytest
from lsprotocol import types

import ctxlib
import proxylib

ROOT_ASK = "Which public functions of textwrap and shlex raise ValueError, and on what input?"
QUERY = "In textwrap.py, which functions or methods raise ValueError, and for which arguments?"


async def _root_with_exchanges(ctx, n=2):
    root = await ctx.open_session(title="root", workspace="/w")
    await ctx.append(root, ctxlib.tool_exchange(ROOT_ASK, "textwrap.py\nshlex.py\n", call_id="c1"))
    for i in range(2, n + 1):
        await ctx.append(root, [{"role": "user", "content": f"step {i}: read more"},
                                {"role": "assistant", "content": f"Read part {i}."}])
    return root


CONTEXT = "def wrap(text, width=70): ...\n"


def _child(parent, query=QUERY, context=CONTEXT, **parent_fields):
    return {"parent": {"sessionId": parent, **parent_fields}, "child": {"query": query, "context": context}}


async def _sessions(ctx):
    return {s["sessionId"]: s for s in (await ctx.req("ctx/listSessions", {}))["sessions"]}


async def test_a_child_starts_fresh_one_deeper_and_a_fork_still_copies(ctx):
    root = await _root_with_exchanges(ctx)
    child = await ctx.open_session(title="textwrap part", **_child(root))
    assert await ctx.list_exchanges(child) == [], "a child inherits none of its parent's history"
    (x1,) = await ctx.retrieve(child, ["x1"])
    assert x1.get("error", {}).get("code") == -32002, x1
    early = await ctx.open_session(**_child(root, atExchange="x1"))
    fork = await ctx.open_session(parent={"sessionId": child})
    fork_of_root = await ctx.open_session(parent={"sessionId": root, "atExchange": 1})
    assert [x["id"] for x in await ctx.list_exchanges(fork_of_root)] == ["x1"]

    s = await _sessions(ctx)
    assert s[root]["depth"] == 0 and "parent" not in s[root]
    assert s[child]["depth"] == 1
    assert s[child]["parent"] == {"sessionId": root, "atExchange": 2, "kind": "child"}, "default: the newest exchange"
    assert s[early]["parent"] == {"sessionId": root, "atExchange": 1, "kind": "child"}
    assert s[fork]["depth"] == 1 and s[fork]["parent"]["kind"] == "fork", "a fork is as deep as its parent"
    assert s[fork_of_root]["depth"] == 0 and s[fork_of_root]["parent"] == {"sessionId": root, "atExchange": 1, "kind": "fork"}


async def test_errors_name_the_field_and_the_server_goes_on(ctx):
    root = await _root_with_exchanges(ctx, 1)
    cases = [
        (_child(root, query="  "), "child.query: expected a non-empty string"),
        ({"parent": {"sessionId": root}, "child": {"query": 7}}, "child.query"),
        ({"child": {"query": QUERY}}, "child: a child call needs `parent`"),
        ({"parent": {"sessionId": root}, "child": {"query": QUERY, "depth": 3}}, "child: unknown field `depth`"),
        (_child(root, atExchange="x5"), "parent.atExchange: session " + root + " has 1 exchanges, cannot call at x5"),
    ]
    for params, expect in cases:
        e = await ctx.err("ctx/openSession", params)
        assert e.code == -32602 and expect in e.message, (params, e.code, e.message)
    c1 = await ctx.open_session(**_child(root))
    c1a = await ctx.open_session(**_child(c1))
    e = await ctx.err("ctx/openSession", _child(c1a))
    assert e.code == -32602, e
    assert e.message.endswith(f"parent.sessionId: session {c1a} is at depth 2; "
                              "a session at depth 2 = maxDepth 2 makes no further calls"), e.message
    # A fork of the session at maxDepth is allowed: it makes no call.
    await ctx.open_session(parent={"sessionId": c1a})
    assert len(await _sessions(ctx)) == 4


async def test_a_childs_l0_carries_its_lineage_within_the_cap(ctx):
    root = await _root_with_exchanges(ctx)
    child = await ctx.open_session(**_child(root))
    a = await ctx.req("ctx/assemble", {"sessionId": child, "format": "text", "budget": 16000})
    assert a["shape"] == "layered" and "reason" not in a
    l0 = a["text"][a["text"].index("## Current context"):]
    assert re.search(rf"Call: depth 1 of max 2 · iteration 1 · called by {root} after x2 · "
                     r"tools context_retrieve, context_search · budget 16000 tokens", l0), l0
    assert f"Query: {QUERY}" in l0, l0
    assert "Parent objective: step 2: read more" in l0, "the parent's objective when it called"
    # A child without its own exchanges shows no history of its parent.
    assert "Read part 2." not in a["text"] and "textwrap.py\nshlex.py" not in a["text"]
    assert not any(r["items"] for r in a["layers"] if r["layer"] not in ("currentContext",)), a["layers"]

    def configure(settings):
        ctx.client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"ctx": settings}))

    configure({"layers": {"currentContextMax": 300}})
    wide = await ctx.req("ctx/assemble", {"sessionId": child, "format": "text"})
    assert f"Call context: {len(CONTEXT)} characters, starting \"def wrap(text, width=70): ...\"" in wide["text"]

    # The lineage is fitted into layers.currentContextMax with the rest of L0.
    ctx.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"ctx": {"layers": {"currentContextMax": 40}}}))
    small = await ctx.req("ctx/assemble", {"sessionId": child, "format": "text"})
    (report,) = [r for r in small["layers"] if r["layer"] == "currentContext"]
    assert report["tokens"] <= 40 + 8, report
    assert "Call: depth 1 of max 2" in small["text"], "the call line weighs most"

    # A root's L0 has no lineage.
    r = await ctx.req("ctx/assemble", {"sessionId": root, "format": "text"})
    assert "Call:" not in r["text"] and "Parent objective" not in r["text"]


async def test_one_shot_at_max_depth_cuts_the_context_and_the_record_says_why(ctx, store):
    root = await _root_with_exchanges(ctx)
    c1 = await ctx.open_session(**_child(root))
    context = "".join(f"line {i}: value error when width <= 0 in wrap {i}\n" for i in range(600))
    c1a = await ctx.open_session(**_child(c1, query="Under which condition is the placeholder too large?",
                                          context=context))
    a = await ctx.req("ctx/assemble", {"sessionId": c1a, "format": "openai", "system": "You answer in one line."})
    assert a["shape"] == "oneShot", a["shape"]
    m = re.fullmatch(r"depth 2 = maxDepth 2: one-shot prompt, context cut from ([\d,]+) to ([\d,]+) tokens", a["reason"])
    assert m, a["reason"]
    passed, kept = (int(g.replace(",", "")) for g in m.groups())
    assert passed > 2000 and kept <= 2000 and kept > 1900, (passed, kept)
    roles = [msg["role"] for msg in a["messages"]]
    assert roles == ["system", "user"], roles
    call = a["messages"][1]["content"]
    assert call.startswith("Under which condition is the placeholder too large?\n\nContext:\nline 0: value error")
    assert "line 599" not in call
    layers = {r["layer"]: r for r in a["layers"]}
    assert [i["id"] for i in layers["currentContext"]["items"]] == ["call"]
    assert not any(layers[n]["items"] for n in ("headers", "summaries", "references", "recent"))
    assert a["tokens"]["layers"]["currentContext"] <= a["budget"]

    # Its own exchanges do not turn it into a loop: still one shot, no history layers.
    await ctx.append(c1a, [{"role": "user", "content": "Under which condition?"},
                           {"role": "assistant", "content": "When the placeholder is longer than width."}])
    b = await ctx.req("ctx/assemble", {"sessionId": c1a, "budget": 1200, "input": {"role": "user", "content": "again?"}})
    assert b["shape"] == "oneShot" and [msg["role"] for msg in b["messages"]] == ["user", "user"]
    # The budget governs the call and its context; the input and the tools are counted apart.
    assert b["tokens"]["layers"]["currentContext"] <= 1200 < b["tokens"]["total"]
    assert "context cut from" in b["reason"]

    # The record keeps the shape, the reason and the state; explain and show-prompt read it.
    explained = await ctx.req("ctx/explain", {"sessionId": c1a, "promptId": a["promptId"]})
    assert (explained["shape"], explained["reason"], explained["state"]) == (a["shape"], a["reason"], a["state"])
    shown = proxylib.cli("show-prompt", c1a, a["promptId"], store=store).stdout
    assert f"shape: oneShot ({a['reason']})" in shown, shown
    assert f"state: depth 2 of max 2, iteration 1, called by {c1}" in shown, shown
    # A child above maxDepth assembles as layered.
    c = await ctx.req("ctx/assemble", {"sessionId": c1})
    assert c["shape"] == "layered"


async def test_max_depth_is_configured(store):
    async with ctxlib.running(store, {"maxDepth": 3}) as ctx:
        root = await _root_with_exchanges(ctx, 1)
        c1 = await ctx.open_session(**_child(root))
        c1a = await ctx.open_session(**_child(c1))
        a = await ctx.req("ctx/assemble", {"sessionId": c1a, "format": "text"})
        assert a["shape"] == "layered" and a["state"]["call"]["maxDepth"] == 3
        assert "Call: depth 2 of max 3" in a["text"]
        c1b = await ctx.open_session(**_child(c1a))
        assert (await ctx.req("ctx/assemble", {"sessionId": c1b}))["shape"] == "oneShot"
        e = await ctx.err("ctx/openSession", _child(c1b))
        assert "depth 3 = maxDepth 3 makes no further calls" in e.message
    with pytest.raises(Exception, match="maxDepth: must be at least 1"):
        async with ctxlib.running(store, {"maxDepth": 0}):
            pass


async def test_the_state_envelope_is_typed_and_capped_as_l0(store):
    # Layered from the first prompt: the root's six short reads would be sent whole.
    async with ctxlib.running(store, {"layers": {"currentContextMax": 60}, "wholeHistory": False}) as ctx:
        root = await ctx.open_session()
        for i in range(1, 7):
            await ctx.append(root, ctxlib.tool_exchange(
                f"read src/module_{i}.rs and explain `parse_{i}()`", f"fn parse_{i}() {{}}\n",
                call_id=f"c{i}", tool="read_file", args={"path": f"src/module_{i}.rs"}))
        child = await ctx.open_session(**_child(root))
        a = await ctx.req("ctx/assemble", {"sessionId": root, "budget": 9000})
        b = await ctx.req("ctx/assemble", {"sessionId": child, "budget": 9000})
        s = a["state"]
        assert s["call"] == {"sessionId": root, "depth": 0, "maxDepth": 2, "iteration": 1,
                             "tools": ["context_retrieve", "context_search"],
                             "budget": {"total": 9000, "used": a["tokens"]["total"]}}, s["call"]
        assert set(s["context"]) >= {"turn", "phase", "objective", "story", "done", "files", "symbols",
                                     "concepts", "explained", "next"}
        assert s["context"]["turn"] == 6
        # Capped: items left out from the end (the story first) to fit 60 tokens of JSON.
        assert s["dropped"] > 0, s
        assert len(json.dumps(s["context"], separators=(",", ":"))) < 60 * 6, s["context"]
        assert b["state"]["call"]["parentSessionId"] == root and b["state"]["call"]["depth"] == 1
        async with ctxlib.running(store.parent / "other.db", {"wholeHistory": False}) as wide:
            root2 = await wide.open_session()
            for i in range(1, 7):
                await wide.append(root2, ctxlib.tool_exchange(
                    f"read src/module_{i}.rs and explain `parse_{i}()`", f"fn parse_{i}() {{}}\n",
                    call_id=f"c{i}", tool="read_file", args={"path": f"src/module_{i}.rs"}))
            w = (await wide.req("ctx/assemble", {"sessionId": root2, "budget": 9000}))["state"]
        assert w["dropped"] < s["dropped"]
        assert sum(len(v) for v in w["context"].values() if isinstance(v, list)) > \
            sum(len(v) for v in s["context"].values() if isinstance(v, list))


async def test_state_changed_only_when_the_state_changes(ctx):
    root = await _root_with_exchanges(ctx, 1)

    def changes():
        return [e for e in ctx.events if e.get("kind") == "stateChanged"]

    a = await ctx.req("ctx/assemble", {"sessionId": root})
    await ctx.wait_event(lambda e: e.get("kind") == "stateChanged" and e.get("promptId") == a["promptId"])
    (first,) = changes()
    assert first["sessionId"] == root and first["state"] == a["state"]
    # Another prompt: only the iteration and the budget used move; no event.
    b = await ctx.req("ctx/assemble", {"sessionId": root, "input": {"role": "user", "content": "and?"}})
    assert b["state"]["call"]["iteration"] == 2 and b["state"] != a["state"]
    # An exchange that only tells the story (its turn and story line) is no change either.
    c = await ctx.req("ctx/assemble", {"sessionId": root})
    await ctx.wait_event(lambda e: e.get("kind") == "contextAssembled" and e.get("promptId") == c["promptId"])
    assert len(changes()) == 1, changes()
    # A new file read and a failing run change files and phase: an event.
    await ctx.append(root, ctxlib.tool_exchange("run the tests of lib/newer.py", "FAILED lib/newer.py::test_x\n[exit status 1]",
                                                call_id="c9"))
    d = await ctx.req("ctx/assemble", {"sessionId": root})
    ev = await ctx.wait_event(lambda e: e.get("kind") == "stateChanged" and e.get("promptId") == d["promptId"])
    assert ev["state"] == d["state"]
    assert d["state"]["context"] != c["state"]["context"]
    # A budget total that changes is a change.
    e = await ctx.req("ctx/assemble", {"sessionId": root, "budget": 9000})
    await ctx.wait_event(lambda x: x.get("kind") == "stateChanged" and x.get("promptId") == e["promptId"])


async def test_state_changed_after_a_restart_compares_with_the_record(store):
    # Layered throughout: after a restart a whole-shaped session's next prompt is layered, and
    # its tools (part of the state) change.
    layered = {"wholeHistory": False}
    async with ctxlib.running(store, layered) as ctx:
        root = await _root_with_exchanges(ctx, 1)
        await ctx.req("ctx/assemble", {"sessionId": root})
    async with ctxlib.running(store, layered) as ctx:
        p2 = await ctx.req("ctx/assemble", {"sessionId": root})
        await ctx.wait_event(lambda e: e.get("kind") == "contextAssembled" and e.get("promptId") == p2["promptId"])
        assert p2["promptId"] == "p2"
        assert not [e for e in ctx.events if e.get("kind") == "stateChanged"], "p1's record has the same state"


def _recorded_session(tmp_path: pathlib.Path) -> list[dict]:
    out = tmp_path / "rlm-recursive.jsonl"
    subprocess.run([sys.executable, str(ctxlib.REPO / "fixtures" / "tools" / "rlm_session.py"), str(out)],
                   check=True, capture_output=True, timeout=120)
    return ctxlib.read_jsonl(out)


async def test_the_recorded_recursive_session_replays_by_hand(ctx, tmp_path):
    """Each `session` line opens a child with `ctx/openSession`; before each exchange its first
    message is the input of an assemble, as replay does."""
    ids, depth, shapes = {"main": await ctx.open_session(title="main")}, {"main": 0}, {}
    for line in _recorded_session(tmp_path):
        if "session" in line:
            decl = line["session"]
            call = decl["child"]
            ids[decl["name"]] = await ctx.open_session(
                title=decl.get("title", ""),
                parent={"sessionId": ids[call["from"]], "atExchange": call["atExchange"]},
                child={"query": call["query"], **({"context": call["context"]} if "context" in call else {})})
            depth[decl["name"]] = depth[call["from"]] + 1
            continue
        name = line.get("in", "main")
        a = await ctx.req("ctx/assemble", {"sessionId": ids[name], "input": line["messages"][0], "format": "text"})
        assert a["state"]["call"]["depth"] == depth[name]
        shapes.setdefault(name, set()).add(a["shape"])
        if a["shape"] == "oneShot":
            assert a["reason"].startswith("depth 2 = maxDepth 2: one-shot prompt, context")
        elif name != "main":
            assert f"Call: depth {depth[name]} of max 2" in a["text"], a["text"][-600:]
        await ctx.append(ids[name], line["messages"])
    assert depth == {"main": 0, "c1": 1, "c1a": 2, "c2": 1}
    # main is six short iterations: its whole history costs less than the layers.
    assert shapes == {"main": {"whole"}, "c1": {"layered"}, "c2": {"layered"}, "c1a": {"oneShot"}}
    s = await _sessions(ctx)
    assert s[ids["c1a"]]["parent"] == {"sessionId": ids["c1"], "atExchange": 1, "kind": "child"}
    assert s[ids["c2"]]["parent"] == {"sessionId": ids["main"], "atExchange": 2, "kind": "child"}
    assert [s[ids[n]]["depth"] for n in ("main", "c1", "c1a", "c2")] == [0, 1, 2, 1]

    listed = proxylib.cli("sessions", store=ctx.store).stdout
    assert f"[depth 2, called by {ids['c1']} after x1]" in listed, listed


async def test_a_calls_query_and_context_are_kept_with_secrets_masked(ctx):
    root = await _root_with_exchanges(ctx)
    c1 = await ctx.open_session(**_child(root))
    key = "AKIA" + "Q3EGRZ7TYXNV4K2M"
    context = f"[default]\naws_access_key_id = {key}\nregion = eu-west-1\n"
    c1a = await ctx.open_session(**_child(c1, query=f"Is {key} the key in use?", context=context))
    a = await ctx.req("ctx/assemble", {"sessionId": c1a, "format": "text"})
    assert a["shape"] == "oneShot"
    assert key not in a["text"] and "[secret:" in a["text"], a["text"]
    assert "region = eu-west-1" in a["text"], "the rest of the context is kept as sent"
    ctx.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"ctx": {"maxPayloadBytes": 1000}}))
    e = await ctx.err("ctx/openSession", _child(c1, context="x" * 2000))
    assert e.code == -32005 and "maxPayloadBytes" in e.message, (e.code, e.message)

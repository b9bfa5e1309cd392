"""9. ctx/assemble: budget, -32003, determinism, explain, and the shape of each format."""

import json

import bpe_openai
import pytest

import ctxlib

ENCODINGS = {name: bpe_openai.get_encoding(name) for name in ("o200k_base", "cl100k_base")}


def _content_tokens(result, encoding):
    """Tokens of every string value of the returned messages, system and tools: a
    lower bound of what the model is sent, counted independently of the server."""
    enc = ENCODINGS[encoding]
    return sum(len(enc.encode(s)) for part in ("messages", "system", "tools")
               for s in _values(result.get(part)))


def _values(v):
    if isinstance(v, str):
        yield v
    elif isinstance(v, dict):
        for x in v.values():
            yield from _values(x)
    elif isinstance(v, list):
        for x in v:
            yield from _values(x)

FIXTURE = ctxlib.SESSIONS / "coding-strsim.jsonl"
SYSTEM = "You are a careful Rust coding assistant."
INPUT = {"role": "user", "content": "Where did we change the jaro function, and what did the tests say?"}
LAYERS = {"system", "currentContext", "recent", "headers", "summaries", "asks", "references", "recall", "input"}


def _history(tokens):
    """What the budget governs: every layer but the request's own system prompt and input."""
    return sum(v for k, v in tokens["layers"].items() if k not in ("system", "input"))


async def _load(ctx, path=FIXTURE):
    if not path.exists():
        path = ctxlib.SESSIONS / "minimal.jsonl"
    sid = await ctx.open_session(title=path.stem)
    for line in ctxlib.read_jsonl(path):
        await ctx.append(sid, line["messages"])
    # End on a tool exchange so the recent layer carries a tool call and its result.
    await ctx.append(sid, ctxlib.tool_exchange("Run the tests once more", "test result: ok. 42 passed; 0 failed\n",
                                               call_id="call_last", tool="run_command", args={"command": "cargo test"}))
    return sid


async def test_budget_is_never_exceeded(ctx):
    sid = await _load(ctx)
    problems = []
    for enc in ("o200k_base", "cl100k_base"):
        for order in ("cache-stable", "seed003"):
            for budget in (1500, 3000, 6000, 12000, 24000, 64000):
                p = {"sessionId": sid, "system": SYSTEM, "input": INPUT, "budget": budget, "encoding": enc, "order": order}
                try:
                    a = await ctx.req("ctx/assemble", p)
                except ctxlib.JsonRpcException as e:
                    if not (e.code == -32003 and budget < 3000):
                        problems.append(f"{enc} {order} {budget}: error {e.code} {e.message}")
                    continue
                t = a["tokens"]
                if _history(t) > budget:
                    problems.append(f"{enc} {order} {budget}: history {_history(t)} over budget")
                mine = _content_tokens(a, enc)
                if mine > t["total"]:
                    problems.append(f"{enc} {order} {budget}: the returned text alone is {mine} tokens "
                                    f"(server says total {t['total']})")
                if a.get("budget") != budget:
                    problems.append(f"{enc} {order} {budget}: result budget {a.get('budget')}")
                if not LAYERS <= set(t["layers"]):
                    problems.append(f"{enc} {order} {budget}: layers {sorted(t['layers'])}")
                if sum(t["layers"].values()) > t["total"]:
                    problems.append(f"{enc} {order} {budget}: layers sum {sum(t['layers'].values())} > total {t['total']}")
                for tr in a["trimmed"]:
                    if not {"id", "from", "to", "reason"} <= set(tr):
                        problems.append(f"{enc} {order} {budget}: trimmed entry {tr}")
                print(f"{enc:12} {order:12} budget {budget:6} total {t['total']:6} trimmed {len(a['trimmed'])}")
    assert not problems, "\n".join(problems)


async def test_small_budget_is_32003(ctx):
    sid = await _load(ctx)
    for budget in (1, 20, 100):
        e = await ctx.err("ctx/assemble", {"sessionId": sid, "system": SYSTEM * 20, "input": INPUT, "budget": budget})
        assert e.code == -32003, (budget, e.code, e.message)
    # Still serving, and the failed attempts did not take prompt ids... or at least p-ids keep increasing.
    a = await ctx.req("ctx/assemble", {"sessionId": sid, "budget": 16000})
    assert a["promptId"].startswith("p")


async def test_tight_budget_trims_and_reports(ctx):
    sid = await _load(ctx)
    a = await ctx.req("ctx/assemble", {"sessionId": sid, "system": SYSTEM, "input": INPUT, "budget": 2000})
    assert _history(a["tokens"]) <= 2000
    assert a["trimmed"], "the whole strsim session fit in 2000 tokens without trimming anything?"
    ev = await ctx.wait_event(lambda e: e.get("kind") == "layerTrimmed")
    assert ev.get("promptId") == a["promptId"], ev


async def test_same_state_same_params_same_prompt(store):
    params = lambda sid, fmt: {"sessionId": sid, "system": SYSTEM, "input": INPUT, "budget": 8000, "format": fmt}
    first = {}
    async with ctxlib.running(store) as ctx:
        sid = await _load(ctx)
        for fmt in ("openai", "anthropic", "text"):
            a = await ctx.req("ctx/assemble", params(sid, fmt))
            b = await ctx.req("ctx/assemble", params(sid, fmt))
            assert a["promptId"] != b["promptId"]
            for key in ("messages", "tools", "system", "text"):
                assert json.dumps(a.get(key)) == json.dumps(b.get(key)), f"{fmt}: {key} differs between two identical assembles"
            assert a["tokens"] == b["tokens"]
            first[fmt] = a
    # Same store after a restart: still byte-identical.
    async with ctxlib.running(store) as ctx:
        for fmt in ("openai", "anthropic", "text"):
            c = await ctx.req("ctx/assemble", params(sid, fmt))
            for key in ("messages", "tools", "system", "text"):
                assert json.dumps(first[fmt].get(key)) == json.dumps(c.get(key)), f"{fmt}: {key} differs after restart"


async def test_explain_returns_what_was_sent(ctx):
    sid = await _load(ctx)
    newest = f"x{len(await ctx.list_exchanges(sid, limit=10000))}"
    prompts = []
    for fmt in ("openai", "anthropic", "text"):
        prompts.append(await ctx.req("ctx/assemble", {"sessionId": sid, "system": SYSTEM, "input": INPUT,
                                                      "budget": 4000, "format": fmt}))
    for a in prompts:
        ex = await ctx.req("ctx/explain", {"sessionId": sid, "promptId": a["promptId"]})
        assert ex["messages"] == a["messages"], f"{a['promptId']}: explain messages differ from what assemble returned"
        assert ex["tools"] == a["tools"]
        assert "layers" in ex, sorted(ex)
        items = [d for d in _dicts(ex["layers"]) if "id" in d]
        assert items, f"explain layers hold no items: {json.dumps(ex['layers'])[:500]}"
        bad = [d for d in items if not {"format", "tokens"} <= set(d)]
        assert not bad, f"explain items without format/tokens: {bad[:3]}"
        ids = {d["id"] for d in items}
        assert any(i == newest or i.startswith(newest + ".") for i in ids), \
            f"the newest exchange {newest} is in no layer: {sorted(ids)[:30]}"
        assert ex.get("trimmed", a["trimmed"]) == a["trimmed"]
    e = await ctx.err("ctx/explain", {"sessionId": sid, "promptId": "p99"})
    assert e.code == -32002


def _dicts(v):
    if isinstance(v, dict):
        yield v
        for x in v.values():
            yield from _dicts(x)
    elif isinstance(v, list):
        for x in v:
            yield from _dicts(x)


def _check_openai(a):
    msgs = a["messages"]
    problems = []
    pending = None  # tool_call ids of the last assistant message still awaiting a tool reply
    for i, m in enumerate(msgs):
        role = m.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            problems.append(f"[{i}] role {role!r}")
        if role == "tool":
            if pending is None:
                problems.append(f"[{i}] tool message not after an assistant message with tool_calls")
            elif m.get("tool_call_id") not in pending:
                problems.append(f"[{i}] tool_call_id {m.get('tool_call_id')!r} not in {sorted(pending)}")
            else:
                pending.discard(m["tool_call_id"])
            if not isinstance(m.get("content"), str):
                problems.append(f"[{i}] tool content is not a string")
            continue
        if pending:
            problems.append(f"[{i}] tool_calls {sorted(pending)} got no tool message")
        pending = None
        if role == "assistant" and m.get("tool_calls"):
            pending = set()
            for c in m["tool_calls"]:
                if c.get("type") != "function" or not isinstance(c.get("function", {}).get("arguments"), str):
                    problems.append(f"[{i}] tool_call shape {c}")
                    continue
                json.loads(c["function"]["arguments"])
                pending.add(c["id"])
        elif not isinstance(m.get("content"), str):
            problems.append(f"[{i}] content is not a string: {m.get('content')!r:.80}")
    if pending:
        problems.append("last tool_calls got no tool message")
    for t in a["tools"]:
        if t.get("type") != "function" or not {"name", "parameters"} <= set(t.get("function", {})):
            problems.append(f"tool shape {json.dumps(t)[:200]}")
    n_tool = sum(1 for m in msgs if m.get("role") == "tool")
    return problems, n_tool


def _check_anthropic(a):
    problems = []
    if not isinstance(a.get("system"), str):
        problems.append(f"system is {type(a.get('system')).__name__}, not a string")
    msgs = a["messages"]
    if msgs and msgs[0].get("role") != "user":
        problems.append("first message is not from the user")
    prev_role, prev_uses, n_results = None, set(), 0
    for i, m in enumerate(msgs):
        role = m.get("role")
        if role not in ("user", "assistant"):
            problems.append(f"[{i}] role {role!r}")
        if role == prev_role:
            problems.append(f"[{i}] two {role} messages in a row")
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list) or not blocks:
            problems.append(f"[{i}] empty or bad content")
            blocks = []
        uses, results = set(), set()
        for b in blocks:
            t = b.get("type")
            if t == "text":
                if not isinstance(b.get("text"), str) or not b["text"]:
                    problems.append(f"[{i}] empty text block")
            elif t == "tool_use":
                if role != "assistant" or not isinstance(b.get("input"), dict) or not b.get("id") or not b.get("name"):
                    problems.append(f"[{i}] bad tool_use {json.dumps(b)[:200]}")
                uses.add(b.get("id"))
            elif t == "tool_result":
                if role != "user":
                    problems.append(f"[{i}] tool_result in a {role} message")
                results.add(b.get("tool_use_id"))
                n_results += 1
            else:
                problems.append(f"[{i}] block type {t!r}")
        if results - prev_uses:
            problems.append(f"[{i}] tool_result for {sorted(results - prev_uses)} without a tool_use just before")
        if prev_uses - results:
            problems.append(f"[{i}] tool_use {sorted(prev_uses - results)} has no tool_result in the next message")
        prev_role, prev_uses = role, uses
    for t in a["tools"]:
        if not {"name", "input_schema"} <= set(t):
            problems.append(f"tool shape {json.dumps(t)[:200]}")
    return problems, n_results


@pytest.mark.parametrize("order", ["cache-stable", "seed003"])
async def test_format_shapes(ctx, order):
    sid = await _load(ctx)
    for budget in (4000, 32000):
        base = {"sessionId": sid, "system": SYSTEM, "input": INPUT, "budget": budget, "order": order}
        o = await ctx.req("ctx/assemble", {**base, "format": "openai"})
        problems, n_tool = _check_openai(o)
        assert not problems, f"openai @{budget}:\n" + "\n".join(problems[:20])
        assert o["messages"][0]["role"] == "system" and SYSTEM in o["messages"][0]["content"]
        # Cache-stable: the input, then the recall block if any, then L0 last (the input stays
        # in the next prompt's cached prefix). seed003: L0 first, the recall block, the input last.
        at = (-3 if o.get("recall") else -2) if order == "cache-stable" else -1
        assert INPUT["content"] in o["messages"][at]["content"] and o["messages"][at]["role"] == "user"
        if order == "cache-stable":
            assert o["messages"][-1]["content"].startswith("## Current context"), o["messages"][-1]
        if budget >= 32000:
            assert n_tool >= 1, "no tool message in the openai prompt although the last exchange has one"

        an = await ctx.req("ctx/assemble", {**base, "format": "anthropic"})
        problems, n_results = _check_anthropic(an)
        assert not problems, f"anthropic @{budget}:\n" + "\n".join(problems[:20])
        assert SYSTEM in an["system"]
        last = an["messages"][-1]
        assert last["role"] == "user" and INPUT["content"] in json.dumps(last["content"])
        if budget >= 32000:
            assert n_results >= 1, "no tool_result block in the anthropic prompt"

        t = await ctx.req("ctx/assemble", {**base, "format": "text"})
        assert isinstance(t.get("text"), str) and SYSTEM in t["text"] and INPUT["content"] in t["text"]
        for r in (o, an, t):
            assert _history(r["tokens"]) <= budget
            assert _content_tokens(r, "o200k_base") <= r["tokens"]["total"], \
                f"{r['format'] if 'format' in r else ''}: returned text counts more tokens than tokens.total"


async def test_budget_from_initialization_options(store):
    async with ctxlib.running(store, {"budget": 2500, "layers": {"recentFull": 2}}) as ctx:
        sid = await _load(ctx)
        a = await ctx.req("ctx/assemble", {"sessionId": sid})
        assert a["tokens"]["total"] <= 2500 and a.get("budget") == 2500, (a["tokens"], a.get("budget"))


async def test_empty_session_and_no_input(ctx):
    sid = await ctx.open_session()
    a = await ctx.req("ctx/assemble", {"sessionId": sid, "budget": 2000})
    assert a["tokens"]["total"] <= 2000
    a = await ctx.req("ctx/assemble", {"sessionId": sid, "budget": 2000, "input": {"role": "user", "content": "hello"}})
    assert "hello" in json.dumps(a["messages"])
    # assemble does not store the input
    assert await ctx.list_exchanges(sid) == []


async def test_a_large_system_prompt_is_counted_apart_from_the_budget(ctx):
    """The budget governs the history: a system prompt larger than the whole budget is sent as it
    is, counted in the total, and neither refused nor squeezing the history."""
    sid = await _load(ctx)
    system = "You are a coding assistant. " + " ".join(
        f"Rule {i}: read a file before editing it and say why." for i in range(1500))
    small = await ctx.req("ctx/assemble", {"sessionId": sid, "input": INPUT})
    large = await ctx.req("ctx/assemble", {"sessionId": sid, "input": INPUT, "system": system})
    assert large["tokens"]["layers"]["system"] > large["budget"] == 16000
    assert large["tokens"]["total"] == small["tokens"]["total"] + large["tokens"]["layers"]["system"]
    assert _history(large["tokens"]) == _history(small["tokens"]) <= large["budget"]


def _said(i):
    return f"Sitting {i}: we picked supplier number {1000 + i} and the colour Fern-{i}."


async def _talk(ctx, n):
    """A conversation of `n` exchanges without tools: a short message and a longer reply."""
    sid = await ctx.open_session(title="talk")
    for i in range(1, n + 1):
        reply = " ".join(f"Noted point {k} about sitting {i}." for k in range(40))
        await ctx.append(sid, [{"role": "user", "content": _said(i)}, {"role": "assistant", "content": reply}])
    return sid


async def test_what_the_person_said_is_in_view_past_the_tail(store):
    """Past the tail, the person's own messages are in the prompt verbatim under their exchange ids,
    and the layer is the same text from one prompt to the next until the tail is compacted."""
    async with ctxlib.running(store, {"budget": 4000}) as ctx:
        sid = await _talk(ctx, 90)
        a = await ctx.req("ctx/assemble", {"sessionId": sid, "format": "text"})
        asks = next(l for l in a["layers"] if l["layer"] == "asks")
        assert asks["items"] and a["tokens"]["layers"]["asks"] == asks["tokens"] > 0, asks
        recent = {i["id"] for l in a["layers"] if l["layer"] == "recent" for i in l["items"]}
        for item in asks["items"]:
            i = int(item["id"][1:])
            assert item["id"] not in recent
            assert f"{item['id']} {_said(i)}\n" in a["text"], item
        layer = a["text"][a["text"].index("## What the person said"):]
        layer = layer[:layer.index("### ")]
        await ctx.append(sid, [{"role": "user", "content": _said(91)}, {"role": "assistant", "content": "Noted."}])
        b = await ctx.req("ctx/assemble", {"sessionId": sid, "format": "text"})
        if b["layers"][[l["layer"] for l in b["layers"]].index("recent")]["items"][0] == \
                next(l for l in a["layers"] if l["layer"] == "recent")["items"][0]:
            assert layer in b["text"]


async def test_what_the_person_said_can_be_turned_off(store):
    async with ctxlib.running(store, {"budget": 4000, "layers": {"asksTokens": 0}}) as ctx:
        sid = await _talk(ctx, 90)
        a = await ctx.req("ctx/assemble", {"sessionId": sid, "format": "text"})
        assert a["tokens"]["layers"]["asks"] == 0 and "## What the person said" not in a["text"]

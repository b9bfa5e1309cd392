"""Awkward content round-trips byte for byte: unicode, control characters,
CRLF, empty and large outputs, odd tool-call arguments."""

import json

import blake3
import pytest

import ctxlib

CASES = {
    "empty": "",
    "whitespace": "  \n\t\n   ",
    "crlf": "line one\r\nline two\r\n\r\nend",
    "lone_cr": "progress 10%\rprogress 50%\rprogress 100%\n",
    "unicode": "naïve café — 日本語のテキスト — emoji 🦀🧪👩‍👩‍👧 — RTL עברית — combining e\u0301\n",
    "controls": "bell\x07 esc\x1b[31mred\x1b[0m tab\t vt\x0b ff\x0c del\x7f\n",
    "nul": "before\x00after\n",
    "surrogate_pairs": "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𐍈 \U0010FFFF\n",
    "json_like": '{"jsonrpc": "2.0", "id": 1, "method": "ctx/append"}\nContent-Length: 12\r\n\r\n',
    "no_trailing_newline": "last line without newline",
    "long_line": "x" * 50_000,
    "many_lines": "".join(f"{i}: line {i} of the output\n" for i in range(5_000)),
    "secret_lookalikes": "sha256:11f6ad8ec52a2984abaafd7c3b516503785c2072 uuid b9d676ad-2a4a-4b72-953a-0e2240de0d1f\n",
}
ARGS = {"path": "ü/😀.rs", "n": 3, "f": 1.5, "b": True, "none": None, "list": [1, "two", {"three": []}],
        "nested": {"deep": {"deeper": ["\u0000", "\n"]}}, "empty": {}}


@pytest.mark.parametrize("name", list(CASES))
async def test_tool_output_round_trip(ctx, name):
    text = CASES[name]
    sid = await ctx.open_session()
    msgs = [
        {"role": "user", "content": f"case {name}: {text[:2000]}"},
        {"role": "assistant", "content": text[:5000], "toolCalls": [{"id": "c1", "name": "tool_ü", "arguments": ARGS}]},
        {"role": "tool", "toolCallId": "c1", "name": "tool_ü", "content": text},
    ]
    r = await ctx.append(sid, msgs)
    items = await ctx.retrieve(sid, ["x1.1", "x1.2", "x1.3"])
    for m, it in zip(msgs, items):
        assert "error" not in it, it
        assert it["text"] == m["content"], f"{it['id']}: {len(m['content'])} chars sent, {len(it['text'])} back; " \
                                           f"first difference at {_diff(m['content'], it['text'])}"
    assert items[1]["toolCalls"] == [{"id": "c1", "name": "tool_ü", "arguments": ARGS}], items[1]["toolCalls"]
    blobs = r["blobs"]
    if text:  # an empty output may or may not become a blob
        assert blobs, "tool output stored without a blob"
    for b in blobs:
        assert b["id"] == "b3:" + blake3.blake3(text.encode()).hexdigest()[:12]
        assert b["bytes"] == len(text.encode())
        (bi,) = await ctx.retrieve(sid, [b["id"]])
        assert bi.get("text") == text, f"blob: first difference at {_diff(text, bi.get('text') or '')}"
    # lines of a multi-line output are numbered from 1 and exact.
    if name == "many_lines":
        bi = await ctx.retrieve_one(sid, blobs[0]["id"], lines=[4_999, 5_000])
        assert bi["text"].splitlines() == ["4999: 4998: line 4998 of the output", "5000: 4999: line 4999 of the output"]
        capped = await ctx.retrieve_one(sid, blobs[0]["id"], maxTokens=100)
        assert capped["truncated"] is True and capped["tokens"] <= 100, {k: capped[k] for k in ("tokens", "truncated")}
        whole = await ctx.retrieve_one(sid, blobs[0]["id"])
        assert whole["truncated"] is False


def _diff(a: str, b: str):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i, repr(a[max(0, i - 10):i + 10]), repr(b[max(0, i - 10):i + 10])
    return min(len(a), len(b)), "length"


async def test_content_parts_and_null_content(ctx):
    sid = await ctx.open_session()
    await ctx.append(sid, [
        {"role": "user", "content": [{"type": "text", "text": "part one, "}, {"type": "text", "text": "part two"}]},
        {"role": "assistant", "content": None, "toolCalls": [{"id": "c", "name": "t", "arguments": "{\"raw\": 1}"}]},
        {"role": "tool", "toolCallId": "c", "content": "ok"},
    ])
    a, b, c = await ctx.retrieve(sid, ["x1.1", "x1.2", "x1.3"])
    assert a["text"] == "part one, part two"
    assert b["text"] == "" and b["toolCalls"][0]["arguments"] in ({"raw": 1}, "{\"raw\": 1}")
    assert c["text"] == "ok" and c["toolCallId"] == "c"

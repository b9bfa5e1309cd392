"""Binary tool output (bytes that are not UTF-8, NUL bytes) is sent as
`{"base64": …}`, stored as the original bytes, retrieved byte for byte
(`encoding: "base64"`), and digested as `binary, N bytes, <type>`."""

import base64
import gzip
import json

import blake3
import pytest

import ctxlib


def ctxproxy_slice() -> bytes:
    """200,000 bytes of the ctxproxy binary itself: an ELF file."""
    data = ctxlib.binary().read_bytes()
    assert len(data) > 200_000
    return data[:200_000]


def gzip_of_text() -> bytes:
    text = "".join(f"{i}: a line of a log that compresses\n" for i in range(20_000))
    return gzip.compress(text.encode(), mtime=0)


@pytest.mark.parametrize(
    "name, data, command, headline",
    [
        ("elf", ctxproxy_slice, "head -c 200000 target/debug/ctxproxy",
         "head -c 200000 target/debug/ctxproxy: binary, 200000 bytes, ELF executable or object"),
        ("gzip", gzip_of_text, "cat log.gz", None),
    ],
)
async def test_binary_round_trip_and_digest(ctx, name, data, command, headline):
    data = data()
    assert b"\0" in data[:8000] or not _is_utf8(data)
    sid = await ctx.open_session()
    r = await ctx.append(sid, [
        {"role": "user", "content": f"what is in the {name} output?"},
        {"role": "assistant", "content": "Looking.",
         "toolCalls": [{"id": "c1", "name": "run_command", "arguments": {"command": command}}]},
        {"role": "tool", "toolCallId": "c1", "name": "run_command",
         "content": {"base64": base64.b64encode(data).decode()}},
    ])
    (blob,) = r["blobs"]
    assert blob["id"] == "b3:" + blake3.blake3(data).hexdigest()[:12]
    assert blob["bytes"] == len(data)

    # The blob and the message come back exactly, as base64.
    for id_ in (blob["id"], "x1.3"):
        item = await ctx.retrieve_one(sid, id_)
        assert item["encoding"] == "base64", item.keys()
        back = base64.b64decode(item["text"], validate=True)
        assert back == data, f"{id_}: {len(data)} bytes sent, {len(back)} back"

    # A token cap returns a prefix that still decodes.
    capped = await ctx.retrieve_one(sid, blob["id"], maxTokens=50)
    assert capped["truncated"] is True and capped["encoding"] == "base64"
    prefix = base64.b64decode(capped["text"], validate=True)
    assert prefix and data.startswith(prefix)

    # lines and grep are for text: a clear per-item error, the server goes on.
    (bad,) = await ctx.retrieve(sid, [blob["id"]], grep="ELF")
    assert bad["error"]["code"] == -32602
    assert "binary" in bad["error"]["message"] and "base64" in bad["error"]["message"]

    # The model sees what it is, not the bytes.
    (digest_msg,) = [i for i in await ctx.retrieve(sid, ["x1"]) if i["kind"] == "exchange"]
    text = digest_msg["text"]
    want = headline or f"log.gz: binary, {len(data)} bytes, gzip compressed data"
    assert want in text, text
    assert "\ufffd" not in text
    assert f"[{blob['id']} · {len(data)} bytes · binary" in text


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


async def test_utf8_base64_content_is_text(ctx):
    """Bytes that are UTF-8 given as base64 are text like any other."""
    text = "naïve café\nerror: something failed\n"
    sid = await ctx.open_session()
    await ctx.append(sid, [
        {"role": "user", "content": "run it"},
        {"role": "assistant", "content": "", "toolCalls": [{"id": "c1", "name": "run_command", "arguments": {}}]},
        {"role": "tool", "toolCallId": "c1", "content": {"base64": base64.b64encode(text.encode()).decode()}},
    ])
    item = await ctx.retrieve_one(sid, "x1.3")
    assert item["text"] == text and "encoding" not in item


@pytest.mark.parametrize(
    "content, role, expect",
    [
        ({"base64": "not base64!"}, "tool", "messages[2].content: base64: not standard padded base64"),
        ({"base64": 12}, "tool", "messages[2].content: base64: expected a string"),
        ({"b64": "AAAA"}, "tool", "messages[2].content: unknown field `b64`"),
        ({"base64": "AAAA"}, "assistant", "messages[2].content: only a tool message's content may be"),
    ],
)
async def test_bad_base64_content_is_refused_naming_the_field(ctx, content, role, expect):
    sid = await ctx.open_session()
    third = {"role": role, "content": content}
    if role == "tool":
        third["toolCallId"] = "c1"
    e = await ctx.err("ctx/append", {"sessionId": sid, "messages": [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "toolCalls": [{"id": "c1", "name": "run_command", "arguments": {}}]},
        third,
    ]})
    assert e.code == -32602, e
    assert expect in str(e), str(e)
    # Nothing was stored, and the server answers the next request.
    assert await ctx.list_exchanges(sid) == []

"""6. Secrets in tool output and messages are masked everywhere: retrieve,
blobs, search, listExchanges, every assemble format, explain, the store files."""

import json
import re

import pytest

import ctxlib

SECRET_FILES = sorted(ctxlib.SECRETS_DIR.glob("*.out"))
SECRETS = ctxlib.known_secrets()
KEEP = ctxlib.must_not_mask()


def _cmd(path):
    """(tool name, arguments) from the .cmd beside a .out file."""
    cmd = path.with_suffix(".cmd")
    tool, args = "run_command", {"command": f"cat {path.name}"}
    if cmd.exists():
        for line in cmd.read_text().splitlines():
            if line.startswith("tool:"):
                tool = line.split(":", 1)[1].strip()
            elif line.startswith("args:"):
                args = json.loads(line.split(":", 1)[1])
    return tool, args


def _leaks(blob_of_text: str) -> list[str]:
    return [s for s in SECRETS if s in blob_of_text]


@pytest.fixture
def secret_session_messages():
    if not SECRET_FILES or not SECRETS:
        pytest.fail("fixtures/tool-outputs/secrets/*.out or secrets.expected missing")
    lines = []
    for i, f in enumerate(SECRET_FILES, 1):
        tool, args = _cmd(f)
        lines.append([
            {"role": "user", "content": f"Show me {f.stem} please"},
            {"role": "assistant", "content": "Reading it.", "toolCalls": [{"id": f"call_{i}", "name": tool, "arguments": args}]},
            {"role": "tool", "toolCallId": f"call_{i}", "name": tool, "content": f.read_text(encoding="utf-8")},
            {"role": "assistant", "content": f"That is {f.stem}: it holds credentials, be careful."},
        ])
    # Secrets typed by the user and echoed in tool-call arguments are masked too.
    lines.append([
        {"role": "user", "content": f"My GitHub token is {SECRETS[4]} and the AWS key is {SECRETS[0]}; set them."},
        {"role": "assistant", "content": "Setting it.",
         "toolCalls": [{"id": "call_x", "name": "run_command", "arguments": {"command": f"export GITHUB_TOKEN={SECRETS[4]}"}}]},
        {"role": "tool", "toolCallId": "call_x", "name": "run_command", "content": ""},
        {"role": "assistant", "content": "Done."},
    ])
    return lines


async def test_no_secret_survives_anywhere(ctx, store, secret_session_messages):
    sid = await ctx.open_session(title="secrets", workspace="/secrets")
    outputs = []   # every response, as JSON text
    blob_ids, message_ids = [], []
    for line in secret_session_messages:
        r = await ctx.append(sid, line)
        outputs.append(json.dumps(r))
        x = r["exchanges"][0]["id"]
        message_ids += [f"{x}.{n}" for n in range(1, len(line) + 1)]
        blob_ids += [b["id"] for b in r["blobs"]]
    assert blob_ids, "no blobs made for the secret-bearing tool outputs"

    xs = [x["id"] for x in await ctx.list_exchanges(sid)]
    retrieved = await ctx.retrieve(sid, message_ids + blob_ids + xs)
    errors = [i for i in retrieved if "error" in i]
    assert not errors, errors
    outputs.append(json.dumps(retrieved))
    for fmt in ("header", "summary", "full"):
        outputs.append(json.dumps(await ctx.retrieve(sid, xs, format=fmt)))
    outputs.append(json.dumps(await ctx.retrieve(sid, blob_ids, lines=[1, 1000])))
    outputs.append(json.dumps(await ctx.retrieve(sid, blob_ids, grep="[A-Za-z]")))
    outputs.append(json.dumps(await ctx.req("ctx/listExchanges", {"sessionId": sid})))
    # Search for fragments of secrets and for words around them.
    for q in ["AKIA", "ghp", "token", "password", "secret", "key", "PRIVATE", "sk", "production", "printenv", "glpat"]:
        outputs.append(json.dumps(await ctx.req("ctx/search", {"query": q, "limit": 50})))
    for s in SECRETS[:12]:
        for q in (s, s[:10]):
            try:
                outputs.append(json.dumps(await ctx.req("ctx/search", {"query": q, "limit": 50})))
            except Exception as e:  # a query may be rejected; it must not leak either
                outputs.append(str(e))
    prompt_ids = []
    for fmt in ("openai", "anthropic", "text"):
        for order in ("cache-stable", "seed003"):
            a = await ctx.req("ctx/assemble", {"sessionId": sid, "format": fmt, "order": order, "budget": 60000,
                                               "input": {"role": "user", "content": "Which credentials did we see?"}})
            prompt_ids.append(a["promptId"])
            outputs.append(json.dumps(a))
    for p in prompt_ids:
        outputs.append(json.dumps(await ctx.req("ctx/explain", {"sessionId": sid, "promptId": p})))
    outputs.append(json.dumps(ctx.events))

    leaks = {}
    for text in outputs:
        # JSON escaping: compare on decoded strings too.
        decoded = "\n".join(ctxlib.walk_strings(json.loads(text))) if text.startswith(("{", "[")) else text
        for s in _leaks(text) + _leaks(decoded):
            leaks.setdefault(s, text[:160])
    assert not leaks, f"{len(leaks)} of {len(SECRETS)} secrets leaked: " + json.dumps(leaks, indent=1)[:3000]

    # Masks are there, and what must not be masked (hashes, ids, blob ids...) is kept.
    blob_texts = "\n".join(i["text"] for i in retrieved if i.get("kind") == "blob")
    assert re.search(r"\[secret:[A-Za-z0-9_.:-]+\]", blob_texts), "no [secret:KIND] mask in the stored tool outputs"
    kept = [k for k in KEEP if k in "\n".join(f.read_text() for f in SECRET_FILES)]
    lost = [k for k in kept if k not in blob_texts]
    assert not lost, f"masked what must not be masked: {lost}"

    # Nothing in the store's files holds a secret in the clear (db, WAL, blob files).
    await ctx.req("ctx/stats", {})
    on_disk = {}
    for f in store.parent.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            for s in SECRETS:
                if s.encode() in data:
                    on_disk.setdefault(s, str(f.relative_to(store.parent)))
    assert not on_disk, f"secrets written to disk in the clear: {on_disk}"


async def test_redaction_can_be_turned_off(store):
    text = f"token={SECRETS[4]}\n"
    async with ctxlib.running(store, {"redactSecrets": False}) as ctx:
        sid = await ctx.open_session()
        r = await ctx.append(sid, ctxlib.tool_exchange("show", text))
        (b,) = await ctx.retrieve(sid, [r["blobs"][0]["id"]])
        assert b["text"] == text, b

"""Helpers for the end-to-end tests: start the real `ctxproxy serve` binary and
drive it with pytest-lsp's LanguageClient (pygls) over stdio.

Results of `ctx/*` requests and params of `ctx/event` notifications are kept as
plain JSON values (dicts/lists), not pygls' namedtuples, so tests can compare
them with what was sent byte for byte.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pathlib
import re
import signal
from typing import Any, Callable, Iterable

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import default_converter
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCResponseMessage
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import register_lsp_features

REPO = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
SESSIONS = FIXTURES / "sessions"
SECRETS_DIR = FIXTURES / "tool-outputs" / "secrets"

# Seconds one request may take before a test fails instead of hanging.
REQUEST_TIMEOUT = float(os.environ.get("CTXPROXY_E2E_TIMEOUT", "60"))


def binary() -> pathlib.Path:
    p = pathlib.Path(os.environ.get("CTXPROXY_BIN", "target/debug/ctxproxy"))
    if not p.is_absolute():
        p = REPO / p
    return p


def server_command(store: pathlib.Path) -> list[str]:
    return [str(binary()), "serve", "--stdio", "--store", str(store)]


# ---------------------------------------------------------------- the client

def _plain_converter():
    """pygls' converter, except that generic responses and notifications keep
    their JSON values as dicts and lists."""
    c = default_converter()
    c.register_structure_hook(JsonRPCResponseMessage, lambda obj, cls: cls(**obj))
    c.register_structure_hook(JsonRPCNotification, lambda obj, cls: cls(**obj))
    return c


def make_client() -> LanguageClient:
    client = LanguageClient(converter_factory=_plain_converter)
    register_lsp_features(client)
    client.ctx_events = []          # every ctx/event params, in arrival order
    client.orphan_responses = []    # responses with id null (parse errors...)

    @client.feature("ctx/event")
    def _on_event(params):
        client.ctx_events.append(params)

    proto = client.protocol
    original = proto.structure_message

    def structure_message(data):
        if isinstance(data, dict) and "jsonrpc" in data and "method" not in data and data.get("id") is None:
            client.orphan_responses.append(json.loads(json.dumps(data)))
        return original(data)

    proto.structure_message = structure_message
    return client


class RpcError(AssertionError):
    pass


class Ctx:
    """One running server and the LSP client connected to it."""

    def __init__(self, client: LanguageClient, store: pathlib.Path):
        self.client = client
        self.store = store
        self.init_result: types.InitializeResult | None = None

    # -- plumbing
    @property
    def proc(self) -> asyncio.subprocess.Process:
        return self.client._server

    @property
    def events(self) -> list[dict]:
        return self.client.ctx_events

    async def req(self, method: str, params: Any = None, timeout: float = REQUEST_TIMEOUT) -> Any:
        return await asyncio.wait_for(self.client.protocol.send_request_async(method, params), timeout)

    def send(self, method: str, params: Any = None) -> asyncio.Future:
        """Writes the request now (no await) and returns a future for its answer."""
        fut = self.client.protocol.send_request(method, params)
        return asyncio.wrap_future(fut)

    async def err(self, method: str, params: Any = None, timeout: float = REQUEST_TIMEOUT) -> JsonRpcException:
        try:
            result = await self.req(method, params, timeout)
        except JsonRpcException as e:
            return e
        raise RpcError(f"{method} {json.dumps(params)[:300]} succeeded with {json.dumps(result)[:500]}; expected an error")

    def write_raw(self, body: bytes, content_length: int | None = None) -> None:
        n = len(body) if content_length is None else content_length
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % n + body)

    async def wait_event(self, pred: Callable[[dict], bool], timeout: float = 10) -> dict:
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while True:
            for e in self.events:
                if pred(e):
                    return e
            if loop.time() > end:
                kinds = [e.get("kind") for e in self.events]
                raise AssertionError(f"no matching ctx/event within {timeout}s; got kinds {kinds}")
            await asyncio.sleep(0.02)

    # -- ctx/ shortcuts
    async def open_session(self, **params) -> str:
        r = await self.req("ctx/openSession", params)
        assert isinstance(r.get("sessionId"), str) and r["sessionId"], r
        return r["sessionId"]

    async def append(self, session: str, messages: list[dict]) -> dict:
        return await self.req("ctx/append", {"sessionId": session, "messages": messages})

    async def retrieve(self, session: str, ids: list[str], **kw) -> list[dict]:
        r = await self.req("ctx/retrieve", {"sessionId": session, "ids": ids, **kw})
        items = r["items"]
        assert [i["id"] for i in items] == ids, f"retrieve items out of order or missing: {[i['id'] for i in items]} vs {ids}"
        return items

    async def retrieve_one(self, session: str, id_: str, **kw) -> dict:
        (item,) = await self.retrieve(session, [id_], **kw)
        assert "error" not in item, f"retrieve {id_} failed: {item}"
        return item

    async def list_exchanges(self, session: str, **kw) -> list[dict]:
        return (await self.req("ctx/listExchanges", {"sessionId": session, **kw}))["exchanges"]


async def start(store: pathlib.Path, options: dict | None = None, *, initialize: bool = True,
                prefix: list[str] = ()) -> Ctx:
    """`prefix` runs the server through another command (`setpriv ...` to run it as another user)."""
    config = ClientServerConfig(server_command=[*prefix, *server_command(store)], client_factory=make_client)
    client = await config.start()
    ctx = Ctx(client, store)
    if initialize:
        ctx.init_result = await asyncio.wait_for(
            client.initialize_session(
                types.InitializeParams(
                    capabilities=types.ClientCapabilities(),
                    initialization_options=options,
                )
            ),
            REQUEST_TIMEOUT,
        )
    return ctx


async def stop(ctx: Ctx, *, graceful: bool = True) -> int | None:
    """shutdown + exit if the server is alive; then, if it is still running, close its
    stdin, and at last kill it. Returns its exit code. (Whether `exit` alone ends the
    server is checked by test_lifecycle.py, not here, so one bug does not slow every test.)"""
    proc = ctx.proc
    if graceful and proc.returncode is None and ctx.client.capabilities is not None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(ctx.client.protocol.send_request_async("shutdown", None), 5)
        with contextlib.suppress(Exception):
            ctx.client.exit(None)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(proc.wait(), 1)
    if proc.returncode is None:
        with contextlib.suppress(Exception):
            proc.stdin.close()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(proc.wait(), 2)
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(ctx.client.stop(), 5)
    return proc.returncode


async def kill9(ctx: Ctx) -> None:
    ctx.proc.send_signal(signal.SIGKILL)
    await ctx.proc.wait()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(ctx.client.stop(), 5)


@contextlib.asynccontextmanager
async def running(store: pathlib.Path, options: dict | None = None):
    ctx = await start(store, options)
    try:
        yield ctx
    finally:
        await stop(ctx)


# ---------------------------------------------------------------- data

def read_jsonl(path: pathlib.Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def session_fixtures() -> list[pathlib.Path]:
    return sorted(SESSIONS.glob("*.jsonl"))


def recorded_sessions(path: pathlib.Path) -> list[dict]:
    """A recorded file of one or more sessions (fixtures/README.md, "Several sessions in one file"):
    each session, `main` first, as {name, title, fork?, child?, lines: its own exchange lines}."""
    sessions = [{"name": "main", "lines": []}]
    for line in read_jsonl(path):
        if "session" in line:
            sessions.append({**line["session"], "lines": []})
        else:
            next(s for s in sessions if s["name"] == line.get("in", "main"))["lines"].append(line)
    return sessions


async def open_recorded(ctx: "Ctx", session: dict, ids: dict[str, str], **params) -> str:
    """Opens a session of a recorded file: a fork from its parent (`ids`: name -> session id), a child
    call with its query and context, `main` on its own."""
    if "fork" in session:
        link = session["fork"]
        params["parent"] = {"sessionId": ids[link["from"]], "atExchange": link["atExchange"]}
    elif "child" in session:
        link = session["child"]
        params["parent"] = {"sessionId": ids[link["from"]], "atExchange": link["atExchange"]}
        params["child"] = {k: link[k] for k in ("query", "context") if k in link}
    sid = await ctx.open_session(**params)
    ids[session["name"]] = sid
    return sid


def first_own_seq(session: dict) -> int:
    """The number of exchanges a session of a recorded file holds before its own: a fork's shared ones."""
    return session["fork"]["atExchange"] if "fork" in session else 0


def known_secrets() -> list[str]:
    p = SECRETS_DIR / "secrets.expected"
    if not p.exists():
        return []
    return [l for l in p.read_text(encoding="utf-8").splitlines() if l.strip()]


def must_not_mask() -> list[str]:
    p = SECRETS_DIR / "must-not-mask.expected"
    if not p.exists():
        return []
    return [l for l in p.read_text(encoding="utf-8").splitlines() if l.strip()]


MASK = re.compile(r"\[secret:[A-Za-z0-9_.:-]*\]")


def masked_equal(original: str, stored: str) -> bool:
    """True if `stored` is `original` with zero or more spans replaced by
    `[secret:KIND]` masks (each mask standing for a non-empty span)."""
    if stored == original:
        return True
    parts = MASK.split(stored)
    if len(parts) == 1:
        return False
    pattern = "(.+?)".join(re.escape(p) for p in parts)
    return re.fullmatch(pattern, original, flags=re.S) is not None


def walk_strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from walk_strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from walk_strings(v)


def tool_exchange(user: str, tool_output: str, *, call_id: str = "call_1", tool: str = "run_command",
                  args: dict | None = None, answer: str = "Done.") -> list[dict]:
    """user -> assistant with one tool call -> tool result -> assistant."""
    return [
        {"role": "user", "content": user},
        {"role": "assistant", "content": "Running it.",
         "toolCalls": [{"id": call_id, "name": tool, "arguments": args or {"command": "cat x"}}]},
        {"role": "tool", "toolCallId": call_id, "name": tool, "content": tool_output},
        {"role": "assistant", "content": answer},
    ]

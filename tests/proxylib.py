"""Helpers for the `ctxproxy proxy` end-to-end tests.

- `ScriptedUpstream`: a model API on loopback (stdlib `http.server` in a
  thread) standing in for OpenAI, Anthropic and Gemini. It records every
  request it receives (method, path, headers, body) and answers the model
  calls (`POST /v1/chat/completions`, `POST /v1/responses`, `POST /v1/messages`,
  `POST /v1beta/models/M:generateContent` and `:streamGenerateContent`) from a script, in the
  shape the request asked for: JSON, or SSE framed exactly as each API
  streams it, with a pause between events. `/v1/messages/count_tokens` and
  `GET /v1/models` are answered too; any other path gets a 404 in the API's
  error shape (and is recorded, so a test can see what a client asked for).
- `Proxy`: the real `ctxproxy proxy` binary as a subprocess on
  `--listen 127.0.0.1:0`, its port read from the contract's stderr line, its
  stderr kept for the tests to grep.
- `cli(...)`: runs another `ctxproxy` subcommand (show-prompt, sessions, ...).

A script entry is a `Turn` (the model's answer: text, tool calls, usage), a
`Fail` (an error status and body), a `Stall` (a stream that starts, then
waits for the reader to go away), a `Cut` (a stream that stops short of its
end) or a function of the recorded request that
returns one of those, for answers that depend on what was sent (a
`context_retrieve` of an id the assembled prompt shows).
"""

from __future__ import annotations

import collections
import dataclasses
import http.server
import itertools
import json
import os
import pathlib
import re
import signal
import socketserver
import subprocess
import threading
import time
from typing import Any, Callable, Union

import ctxlib

# Seconds a held stream waits for its reader before going on (Turn.hold).
HOLD_TIMEOUT = 10.0

# Seconds to wait for the proxy to say it is listening.
START_TIMEOUT = 30.0

LISTENING = re.compile(r"ctxproxy proxy listening on http://([0-9.]+):(\d+)")

CONTEXT_TOOLS = ("context_retrieve", "context_search")


# ------------------------------------------------------------------ the script

@dataclasses.dataclass
class ToolCall:
    id: str
    name: str
    # A string: the free-text input of a custom tool (Responses only).
    arguments: dict | str


@dataclasses.dataclass
class Turn:
    """One answer of the model. `text` comes first, then `tool_calls`.
    `thinking` is a thinking block with its `signature` (Anthropic), a
    thought part and the `thoughtSignature` of the first call (Gemini), or a
    reasoning item with the signature as its encrypted content (Responses)."""

    text: str = ""
    tool_calls: list[ToolCall] = dataclasses.field(default_factory=list)
    input_tokens: int = 100
    output_tokens: int = 10
    # Of the input, read from the provider's cache (every API) and written
    # to it (Anthropic). Anthropic states them beside `input_tokens`; the
    # other APIs count them in it.
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    thinking: str | None = None
    signature: str = "sig-EqQBCgIYAhIM"
    # Seconds between two streamed events.
    delay: float = 0.01
    # Text is streamed in pieces of this many characters.
    piece: int = 7
    # Streamed only: after the event that holds `hold_after` (its text),
    # wait until `hold` is set (by a reader that saw that text) or
    # HOLD_TIMEOUT passes, then send the rest. A proxy that buffers the
    # stream never lets its client see that text early: `hold_released`
    # then stays False.
    hold: "threading.Event | None" = None
    hold_after: str = ""
    hold_released: bool | None = None
    # Answer with the whole JSON reply even when the request asked for a
    # stream (as some compatible servers do).
    whole: bool = False


@dataclasses.dataclass
class Fail:
    status: int
    body: Any  # a JSON value, or bytes sent as they are
    headers: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Stall:
    """Stream `text`, then keep the stream open (a keep-alive every `every`
    seconds) until the reader disconnects or `timeout` passes."""

    text: str = "partial answer"
    every: float = 0.05
    timeout: float = 20.0


@dataclasses.dataclass
class StreamError:
    """Anthropic only: a stream that starts (`text` streamed) and then
    breaks off with an `error` event, as the API does when it overloads
    mid-answer."""

    text: str = "partial answer"
    error: dict = dataclasses.field(default_factory=lambda: {
        "type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})


@dataclasses.dataclass
class Cut:
    """A stream that starts (`text` streamed) and stops short of its end
    (`[DONE]` / `message_stop`) in one of three ways (`how`): "mid_event",
    half of an event's `data:` line and then the chunked body ends cleanly;
    "no_end", the chunked body ends cleanly after a whole event; "close",
    the connection closes without the chunked body's last chunk."""

    text: str = "partial answer"
    how: str = "no_end"


Entry = Union[Turn, Fail, Stall, StreamError, Cut, Callable[["Recorded"], Union[Turn, Fail, Stall]]]


@dataclasses.dataclass
class Recorded:
    method: str
    path: str  # without the query
    query: str
    headers: dict[str, str]  # lowercased names; a repeated header keeps its last value
    raw_headers: list[tuple[str, str]]
    body: bytes
    # The answer the upstream sent (status), filled in when it is known.
    status: int | None = None

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


# Ids the upstream gives its messages, unique across a test run.
_ids = itertools.count(1)


def openai_error(status: int, message: str, type_: str, code: str | None = None) -> Fail:
    return Fail(status, {"error": {"message": message, "type": type_, "param": None, "code": code}})


def anthropic_error(status: int, type_: str, message: str) -> Fail:
    return Fail(status, {"type": "error", "error": {"type": type_, "message": message},
                         "request_id": f"req_scripted{next(_ids)}"})


# ------------------------------------------------------------- rendering: OpenAI

def _openai_message(turn: Turn) -> dict:
    msg: dict[str, Any] = {"role": "assistant", "content": turn.text or None, "refusal": None,
                           "annotations": []}
    if turn.tool_calls:
        msg["tool_calls"] = [
            {"id": c.id, "type": "function",
             "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
            for c in turn.tool_calls
        ]
    return msg


def _openai_usage(turn: Turn) -> dict:
    return {"prompt_tokens": turn.input_tokens, "completion_tokens": turn.output_tokens,
            "total_tokens": turn.input_tokens + turn.output_tokens,
            "prompt_tokens_details": {"cached_tokens": turn.cached_tokens, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                          "accepted_prediction_tokens": 0,
                                          "rejected_prediction_tokens": 0}}


def openai_completion(turn: Turn, model: str) -> dict:
    return {
        "id": f"chatcmpl-scripted{next(_ids)}", "object": "chat.completion",
        "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": _openai_message(turn), "logprobs": None,
                     "finish_reason": "tool_calls" if turn.tool_calls else "stop"}],
        "usage": _openai_usage(turn), "service_tier": "default",
        "system_fingerprint": "fp_scripted",
    }


def openai_chunks(turn: Turn, model: str, include_usage: bool) -> list[dict]:
    """The chunks OpenAI streams for `turn`: a role chunk, content pieces,
    each tool call's head then its argument pieces, the finish chunk, and
    (with `stream_options.include_usage`) a last chunk with no choices and the
    usage; every chunk carries `usage: null` before it in that case."""
    base = {"id": f"chatcmpl-scripted{next(_ids)}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": model, "service_tier": "default",
            "system_fingerprint": "fp_scripted"}

    def chunk(delta: dict, finish: str | None = None) -> dict:
        c = dict(base, choices=[{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}])
        if include_usage:
            c["usage"] = None
        return c

    out = [chunk({"role": "assistant", "content": "", "refusal": None})]
    for i in range(0, len(turn.text), turn.piece):
        out.append(chunk({"content": turn.text[i:i + turn.piece]}))
    for index, call in enumerate(turn.tool_calls):
        args = json.dumps(call.arguments)
        out.append(chunk({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                                          "function": {"name": call.name, "arguments": ""}}]}))
        for i in range(0, len(args), turn.piece):
            out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": args[i:i + turn.piece]}}]}))
    out.append(chunk({}, "tool_calls" if turn.tool_calls else "stop"))
    if include_usage:
        out.append(dict(base, choices=[], usage=_openai_usage(turn)))
    return out


# ---------------------------------------------------------- rendering: Anthropic

def _anthropic_blocks(turn: Turn) -> list[dict]:
    blocks: list[dict] = []
    if turn.thinking is not None:
        blocks.append({"type": "thinking", "thinking": turn.thinking, "signature": turn.signature})
    if turn.text:
        blocks.append({"type": "text", "text": turn.text})
    for c in turn.tool_calls:
        blocks.append({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments})
    return blocks


def _anthropic_usage(turn: Turn) -> dict:
    return {"input_tokens": turn.input_tokens, "cache_creation_input_tokens": turn.cache_write_tokens,
            "cache_read_input_tokens": turn.cached_tokens, "output_tokens": turn.output_tokens,
            "service_tier": "standard"}


def anthropic_message(turn: Turn, model: str) -> dict:
    return {
        "id": f"msg_scripted{next(_ids)}", "type": "message", "role": "assistant", "model": model,
        "content": _anthropic_blocks(turn),
        "stop_reason": "tool_use" if turn.tool_calls else "end_turn", "stop_sequence": None,
        "usage": _anthropic_usage(turn),
    }


def anthropic_events(turn: Turn, model: str) -> list[tuple[str, dict]]:
    """The events Anthropic streams for `turn`, in order."""
    head = anthropic_message(turn, model)
    head["content"] = []
    head["stop_reason"] = None
    head["usage"] = dict(_anthropic_usage(turn), output_tokens=1)
    ev: list[tuple[str, dict]] = [("message_start", {"type": "message_start", "message": head})]
    for index, block in enumerate(_anthropic_blocks(turn)):
        if block["type"] == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": block["thinking"][i:i + turn.piece]}
                      for i in range(0, len(block["thinking"]), turn.piece)]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif block["type"] == "text":
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": block["text"][i:i + turn.piece]}
                      for i in range(0, len(block["text"]), turn.piece)]
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            args = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": ""}] + [
                {"type": "input_json_delta", "partial_json": args[i:i + turn.piece]}
                for i in range(0, len(args), turn.piece)]
        ev.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}))
        if index == 0:
            ev.append(("ping", {"type": "ping"}))
        for d in deltas:
            ev.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}))
        ev.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    ev.append(("message_delta", {"type": "message_delta",
                                 "delta": {"stop_reason": "tool_use" if turn.tool_calls else "end_turn",
                                           "stop_sequence": None},
                                 "usage": {"output_tokens": turn.output_tokens}}))
    ev.append(("message_stop", {"type": "message_stop"}))
    return ev


# ------------------------------------------------------------- rendering: Gemini

def gemini_error(status: int, message: str, status_name: str) -> Fail:
    return Fail(status, {"error": {"code": status, "message": message, "status": status_name}})


def _gemini_usage(turn: Turn) -> dict:
    usage = {"promptTokenCount": turn.input_tokens, "candidatesTokenCount": turn.output_tokens,
             "totalTokenCount": turn.input_tokens + turn.output_tokens}
    if turn.cached_tokens:
        usage["cachedContentTokenCount"] = turn.cached_tokens
    return usage


def _gemini_call_parts(turn: Turn) -> list[dict]:
    """A call without an id (`ToolCall.id` empty) is sent without one, as the API may."""
    parts = []
    for i, c in enumerate(turn.tool_calls):
        call = {"name": c.name, "args": c.arguments}
        if c.id:
            call["id"] = c.id
        part = {"functionCall": call}
        if i == 0 and turn.thinking is not None:
            part["thoughtSignature"] = turn.signature
        parts.append(part)
    return parts


def gemini_response(turn: Turn, model: str) -> dict:
    parts = [{"text": turn.thinking, "thought": True}] if turn.thinking is not None else []
    parts += ([{"text": turn.text}] if turn.text else []) + _gemini_call_parts(turn)
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": _gemini_usage(turn), "modelVersion": model,
            "responseId": f"scripted{next(_ids)}"}


def gemini_chunks(turn: Turn, model: str) -> list[dict]:
    """The chunks `streamGenerateContent` sends for `turn`: the thought, text
    pieces, the calls whole, each chunk a whole response with the usage so
    far; the last carries the `finishReason`."""
    response_id = f"scripted{next(_ids)}"
    parts = [[{"text": turn.thinking, "thought": True}]] if turn.thinking is not None else []
    parts += [[{"text": turn.text[i:i + turn.piece]}] for i in range(0, len(turn.text), turn.piece)]
    parts += [[p] for p in _gemini_call_parts(turn)] or [[{"text": ""}]]
    out = []
    for n, p in enumerate(parts):
        candidate = {"content": {"role": "model", "parts": p}, "index": 0}
        if n == len(parts) - 1:
            candidate["finishReason"] = "STOP"
        out.append({"candidates": [candidate], "usageMetadata": _gemini_usage(turn),
                    "modelVersion": model, "responseId": response_id})
    return out


def _is_gemini_call(path: str) -> bool:
    return path.endswith(":generateContent") or path.endswith(":streamGenerateContent")


# ------------------------------------------------- rendering: OpenAI Responses

def _responses_items(turn: Turn) -> list[dict]:
    """`turn` as Responses output items: `thinking` as a reasoning item (its
    `signature` the encrypted content), the text as a message, each tool
    call a `function_call`, or a `custom_tool_call` when its arguments are a
    string (the free-text input of a custom tool such as Codex's apply_patch)."""
    n = next(_ids)
    items: list[dict] = []
    if turn.thinking is not None:
        items.append({"type": "reasoning", "id": f"rs_scripted{n}", "encrypted_content": turn.signature,
                      "summary": [{"type": "summary_text", "text": turn.thinking}]})
    if turn.text:
        items.append({"type": "message", "id": f"msg_scripted{n}", "status": "completed", "role": "assistant",
                      "content": [{"type": "output_text", "text": turn.text, "annotations": []}]})
    for i, c in enumerate(turn.tool_calls):
        if isinstance(c.arguments, str):
            items.append({"type": "custom_tool_call", "id": f"ctc_scripted{n}_{i}", "status": "completed",
                          "call_id": c.id, "name": c.name, "input": c.arguments})
        else:
            items.append({"type": "function_call", "id": f"fc_scripted{n}_{i}", "status": "completed",
                          "call_id": c.id, "name": c.name, "arguments": json.dumps(c.arguments)})
    return items


def _responses_usage(turn: Turn) -> dict:
    return {"input_tokens": turn.input_tokens, "input_tokens_details": {"cached_tokens": turn.cached_tokens},
            "output_tokens": turn.output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": turn.input_tokens + turn.output_tokens}


def responses_response(turn: Turn, model: str) -> dict:
    return {"id": f"resp_scripted{next(_ids)}", "object": "response", "created_at": int(time.time()),
            "status": "completed", "model": model, "output": _responses_items(turn), "error": None,
            "incomplete_details": None, "instructions": None, "metadata": {}, "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": [], "temperature": 1.0, "top_p": 1.0,
            "usage": _responses_usage(turn)}


def responses_events(turn: Turn, model: str) -> list[tuple[str, dict]]:
    """The events the Responses API streams for `turn`: created, in_progress,
    each item added, its deltas and done, then completed; each with its
    `sequence_number`."""
    done = responses_response(turn, model)
    head = dict(done, status="in_progress", output=[], usage=None)
    ev: list[dict] = [{"type": "response.created", "response": head},
                      {"type": "response.in_progress", "response": head}]

    def pieces(text: str) -> list[str]:
        return [text[i:i + turn.piece] for i in range(0, len(text), turn.piece)]

    for index, item in enumerate(done["output"]):
        at = {"output_index": index, "item_id": item["id"]}
        kind = item["type"]
        if kind == "message":
            text = item["content"][0]["text"]
            part = {"type": "output_text", "text": "", "annotations": []}
            ev.append({"type": "response.output_item.added", "output_index": index, "item": dict(item, content=[], status="in_progress")})
            ev.append({"type": "response.content_part.added", **at, "content_index": 0, "part": part})
            ev += [{"type": "response.output_text.delta", **at, "content_index": 0, "delta": d} for d in pieces(text)]
            ev.append({"type": "response.output_text.done", **at, "content_index": 0, "text": text})
            ev.append({"type": "response.content_part.done", **at, "content_index": 0, "part": dict(part, text=text)})
        elif kind in ("function_call", "custom_tool_call"):
            field, event = (("arguments", "response.function_call_arguments") if kind == "function_call"
                            else ("input", "response.custom_tool_call_input"))
            ev.append({"type": "response.output_item.added", "output_index": index,
                       "item": dict(item, status="in_progress", **{field: ""})})
            ev += [{"type": f"{event}.delta", **at, "delta": d} for d in pieces(item[field])]
            ev.append({"type": f"{event}.done", **at, field: item[field]})
        else:
            ev.append({"type": "response.output_item.added", "output_index": index, "item": item})
        ev.append({"type": "response.output_item.done", "output_index": index, "item": item})
    ev.append({"type": "response.completed", "response": done})
    return [(e["type"], dict(e, sequence_number=n)) for n, e in enumerate(ev)]


# ------------------------------------------------------------------ the server

class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    upstream: "ScriptedUpstream"


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args):  # quiet
        pass

    def _read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    return body
                body += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("content-length") or 0)
        return self.rfile.read(n) if n else b""

    def _handle(self):
        path, _, query = self.path.partition("?")
        rec = Recorded(self.command, path, query,
                       {k.lower(): v for k, v in self.headers.items()},
                       [(k, v) for k, v in self.headers.items()], self._read_body())
        self.server.upstream._record(rec)
        # Connections are kept alive between requests, as the real APIs do
        # (a client that pools them must not see them closed under it).
        try:
            self.server.upstream._answer(self, rec)
        except (BrokenPipeError, ConnectionResetError):
            self.server.upstream._disconnected(rec)
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _handle

    # -- writing
    def send_json(self, rec: Recorded, status: int, body: Any, headers: dict | None = None):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        rec.status = status
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def start_stream(self, rec: Recorded):
        rec.status = 200
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()

    def write_chunk(self, data: bytes):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_stream(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class ScriptedUpstream:
    """A model API on loopback; use as a context manager."""

    def __init__(self):
        self.script: collections.deque[Entry] = collections.deque()
        self.requests: list[Recorded] = []
        # Requests whose reader went away while the upstream was answering.
        self.disconnects: list[Recorded] = []
        # Checks a scripted answer made of the request it answered, that failed.
        self.script_errors: list[str] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.upstream = self
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()

    def push(self, *entries: Entry) -> "ScriptedUpstream":
        self.script.extend(entries)
        return self

    # -- what was received
    def model_calls(self) -> list[Recorded]:
        """The requests that asked the model for an answer."""
        return [r for r in self.requests if r.method == "POST" and _is_model_call(r.path)]

    def _record(self, rec: Recorded):
        with self._lock:
            self.requests.append(rec)

    def _disconnected(self, rec: Recorded):
        with self._lock:
            self.disconnects.append(rec)

    def _next(self, rec: Recorded) -> Turn | Fail | Stall | StreamError | Cut:
        with self._lock:
            entry = self.script.popleft() if self.script else None
        if entry is None:
            return Fail(500, {"error": {"message": f"scripted upstream: no answer left for {rec.method} {rec.path}",
                                        "type": "server_error", "param": None, "code": None}})
        if not callable(entry):
            return entry
        try:
            return entry(rec)
        except Exception as e:  # a script's check of the request failed: say so in the answer
            self.script_errors.append(f"{type(e).__name__}: {e}")
            return Fail(500, {"error": {"message": f"scripted upstream: the request failed the script's check: "
                                                   f"{type(e).__name__}: {e}",
                                        "type": "server_error", "param": None, "code": None}})

    # -- answering
    def _answer(self, h: _Handler, rec: Recorded):
        if rec.path.endswith("/messages/count_tokens"):
            body = rec.json or {}
            h.send_json(rec, 200, {"input_tokens": max(1, len(json.dumps(body.get("messages", []))) // 4
                                                       + len(json.dumps(body.get("system", ""))) // 4
                                                       + len(json.dumps(body.get("tools", []))) // 4)})
            return
        if rec.method == "GET" and rec.path.endswith("/models"):
            if "anthropic-version" in rec.headers:
                h.send_json(rec, 200, {"data": [{"type": "model", "id": "claude-scripted", "display_name": "Scripted",
                                                 "created_at": "2026-01-01T00:00:00Z"}],
                                       "has_more": False, "first_id": "claude-scripted", "last_id": "claude-scripted"})
            else:
                h.send_json(rec, 200, {"object": "list", "data": [
                    {"id": "gpt-scripted", "object": "model", "created": 1700000000, "owned_by": "scripted"}]})
            return
        if not (rec.method == "POST" and _is_model_call(rec.path)):
            h.send_json(rec, 404, {"error": {"message": f"scripted upstream: no route {rec.method} {rec.path}",
                                             "type": "invalid_request_error", "param": None, "code": "not_found"}})
            return
        anthropic = rec.path.endswith("/messages")
        gemini = _is_gemini_call(rec.path)
        responses = rec.path.endswith("/responses")
        try:
            body = rec.json
        except ValueError:
            h.send_json(rec, 400, {"error": {"message": "scripted upstream: body is not JSON",
                                             "type": "invalid_request_error", "param": None, "code": None}})
            return
        entry = self._next(rec)
        if isinstance(entry, Fail):
            h.send_json(rec, entry.status, entry.body, entry.headers)
            return
        model = body.get("model", "scripted")
        if isinstance(entry, Stall):
            self._stall(h, rec, entry, anthropic, model)
            return
        if isinstance(entry, Cut):
            self._cut(h, rec, entry, anthropic, model)
            return
        if isinstance(entry, StreamError):
            self._start_partial(h, rec, entry.text, anthropic, model)
            h.write_chunk(f"event: error\ndata: {json.dumps(entry.error)}\n\n".encode())
            h.end_stream()
            return
        if gemini:
            model = rec.path.rpartition("/")[2].partition(":")[0]
            if rec.path.endswith(":generateContent") or entry.whole:
                h.send_json(rec, 200, gemini_response(entry, model))
                return
        elif not body.get("stream") or entry.whole:
            whole = (responses_response if responses else anthropic_message if anthropic else openai_completion)
            h.send_json(rec, 200, whole(entry, model))
            return
        h.start_stream(rec)
        if gemini:
            frames = [f"data: {json.dumps(data)}\n\n" for data in gemini_chunks(entry, model)]
        elif responses:
            frames = [f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in responses_events(entry, model)]
        elif anthropic:
            frames = [f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in anthropic_events(entry, model)]
        else:
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            frames = [f"data: {json.dumps(data)}\n\n" for data in openai_chunks(entry, model, include_usage)]
            frames.append("data: [DONE]\n\n")
        held = entry.hold is None
        for frame in frames:
            h.write_chunk(frame.encode())
            time.sleep(entry.delay)
            if not held and entry.hold_after and json.dumps(entry.hold_after)[1:-1] in frame:
                held = True
                entry.hold_released = entry.hold.wait(HOLD_TIMEOUT)
        h.end_stream()

    def _start_partial(self, h: _Handler, rec: Recorded, text: str, anthropic: bool, model: str):
        """Starts a stream and sends `text` in it, no further: Anthropic's
        message_start, the text block's start, ping and its deltas (never its
        stop); OpenAI's chunks before the finish chunk."""
        turn = Turn(text=text)
        h.start_stream(rec)
        if anthropic:
            for name, data in anthropic_events(turn, model)[: 3 + len(range(0, len(text), turn.piece))]:
                h.write_chunk(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        else:
            for data in openai_chunks(turn, model, False)[:-1]:
                h.write_chunk(f"data: {json.dumps(data)}\n\n".encode())

    def _stall(self, h: _Handler, rec: Recorded, stall: Stall, anthropic: bool, model: str):
        self._start_partial(h, rec, stall.text, anthropic, model)
        keepalive = b'event: ping\ndata: {"type": "ping"}\n\n' if anthropic else b": keep-alive\n\n"
        deadline = time.monotonic() + stall.timeout
        while time.monotonic() < deadline:
            time.sleep(stall.every)
            h.write_chunk(keepalive)  # raises once the reader is gone
        h.end_stream()

    def _cut(self, h: _Handler, rec: Recorded, cut: Cut, anthropic: bool, model: str):
        self._start_partial(h, rec, cut.text, anthropic, model)
        if cut.how == "mid_event":
            h.write_chunk(b'event: content_block_delta\ndata: {"type": "content_block_delta", "ind'
                          if anthropic else b'data: {"id": "chatcmpl-cut", "choices": [{"ind')
        if cut.how == "close":
            h.close_connection = True
        else:
            h.end_stream()


def _is_model_call(path: str) -> bool:
    return (path.endswith("/chat/completions") or path.endswith("/messages") or path.endswith("/responses")
            or _is_gemini_call(path))


# ------------------------------------------------------------------- the proxy

# The contract tests' settings: layered from the first prompt. Their scripted sessions are short,
# and a short history is sent whole, without the context tools they exercise
# (`wholeHistory`, docs/PROTOCOL.md); the tests of the whole shape pass `config=None`.
LAYERED = {"wholeHistory": False}


class Proxy:
    """`ctxproxy proxy` on an OS-chosen loopback port."""

    def __init__(self, store: pathlib.Path, openai_upstream: str, anthropic_upstream: str,
                 extra: list[str] = (), env: dict | None = None, config: dict | None = LAYERED,
                 listen: str = "127.0.0.1:0"):
        self.store = store
        settings = ["--config", json.dumps(config)] if config is not None else []
        self.cmd = [str(ctxlib.binary()), "proxy", "--listen", listen, "--store", str(store),
                    "--openai-upstream", openai_upstream, "--anthropic-upstream", anthropic_upstream,
                    *settings, *extra]
        self.env = env
        self.stderr_lines: list[str] = []
        self.proc: subprocess.Popen | None = None
        self.url = ""

    def __enter__(self):
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=self.env)
        ready = threading.Event()

        def pump():
            for raw in self.proc.stderr:
                line = raw.decode("utf-8", "replace")
                self.stderr_lines.append(line)
                m = LISTENING.search(line)
                if m and not ready.is_set():
                    self.url = f"http://{m.group(1)}:{m.group(2)}"
                    ready.set()
            ready.set()

        threading.Thread(target=pump, daemon=True).start()
        if not ready.wait(START_TIMEOUT) or not self.url:
            self.__exit__(None, None, None)
            raise AssertionError(f"ctxproxy proxy did not say it was listening: {' '.join(self.cmd)}\n"
                                 f"exit {self.proc.poll()}, stderr:\n{self.stderr}")
        return self

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    @property
    def stderr(self) -> str:
        return "".join(self.stderr_lines)

    @property
    def host_port(self) -> str:
        return self.url.removeprefix("http://")


def cli(*args: str, store: pathlib.Path, check: bool = True) -> subprocess.CompletedProcess:
    """Run `ctxproxy ARGS --store STORE`; with `check`, a non-zero exit fails
    the test with its output."""
    p = subprocess.run([str(ctxlib.binary()), *args, "--store", str(store)],
                       capture_output=True, text=True, timeout=60)
    if check and p.returncode != 0:
        raise AssertionError(f"ctxproxy {' '.join(args)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


def sessions(store: pathlib.Path) -> str:
    return cli("sessions", store=store).stdout


def recorded_exchange(store: pathlib.Path, session: str, exchange: str = "x1", timeout: float = 15) -> str:
    """`ctxproxy inspect SESSION EXCHANGE --full`, once the exchange is stored: a streamed reply
    is recorded after the client has read its last event."""
    deadline = time.monotonic() + timeout
    while True:
        p = cli("inspect", session, exchange, "--full", store=store, check=False)
        if p.returncode == 0 or time.monotonic() > deadline:
            assert p.returncode == 0, f"{session} {exchange} was not stored: {p.stderr}"
            return p.stdout
        time.sleep(0.05)


def raw_request(url: str, method: str = "GET", body: bytes | None = None,
                headers: dict | None = None, timeout: float = 30) -> tuple[int, dict, bytes]:
    """One HTTP request with the standard library; any status is returned,
    not raised."""
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def files_containing(root: pathlib.Path, needle: bytes) -> list[pathlib.Path]:
    """Every file under `root` whose bytes contain `needle`."""
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


def env_without_proxies() -> dict:
    """This process's environment without HTTP proxy variables, so loopback
    requests from child processes are never sent elsewhere."""
    return {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}


# ------------------------------------------------ recorded sessions, as clients send them

def fixture_exchanges(name: str) -> list[list[dict]]:
    """The exchanges of `fixtures/sessions/NAME.jsonl` (replay format)."""
    lines = (ctxlib.SESSIONS / f"{name}.jsonl").read_text().splitlines()
    return [json.loads(line)["messages"] for line in lines if line.strip()]


def replay_steps(exchanges: list[list[dict]]):
    """Each model call of a recorded session, in order: the messages the
    client adds to its history before the call (a user input, tool results)
    and the assistant message the model answers with. A client replaying it
    sends its whole history each time and appends the answer as received."""
    pending: list[dict] = []
    for exchange in exchanges:
        for m in exchange:
            if m["role"] == "assistant":
                yield pending, m
                pending = []
            else:
                pending.append(m)


def turn_of(assistant: dict) -> Turn:
    """A recorded assistant message as the scripted model's answer."""
    return Turn(text=assistant["content"],
                tool_calls=[ToolCall(c["id"], c["name"], c["arguments"]) for c in assistant.get("toolCalls", [])],
                delay=0)


def to_openai(messages: list[dict]) -> list[dict]:
    """Replay-format messages as OpenAI Chat Completions messages."""
    out = []
    for m in messages:
        if m["role"] == "tool":
            out.append({"role": "tool", "tool_call_id": m["toolCallId"], "content": m["content"]})
        elif m["role"] == "assistant" and m.get("toolCalls"):
            out.append({"role": "assistant", "content": m["content"] or None, "tool_calls": [
                {"id": c["id"], "type": "function",
                 "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
                for c in m["toolCalls"]]})
        else:
            out.append({"role": m["role"], "content": m["content"]})
    return out


def to_anthropic(messages: list[dict]) -> list[dict]:
    """Replay-format messages as Anthropic Messages: tool calls become
    `tool_use` blocks, tool results `tool_result` blocks of one user message."""
    out: list[dict] = []
    for m in messages:
        if m["role"] == "tool":
            block = {"type": "tool_result", "tool_use_id": m["toolCallId"], "content": m["content"]}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif m["role"] == "assistant":
            blocks = [{"type": "text", "text": m["content"]}] if m["content"] else []
            blocks += [{"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["arguments"]}
                       for c in m.get("toolCalls", [])]
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": "user", "content": m["content"]})
    return out


def tool_names(body: dict) -> list[str]:
    """The names of a request's tools, OpenAI or Anthropic shape."""
    return [t["function"]["name"] if "function" in t else t.get("name") for t in body.get("tools") or []]


def context_tool_defs(body: dict) -> list[dict]:
    return [t for t, n in zip(body.get("tools") or [], tool_names(body)) if n in CONTEXT_TOOLS]


def history_bytes(body: dict) -> int:
    """Bytes of a request's conversation: messages and system prompt."""
    return len(json.dumps(body.get("messages", []))) + len(json.dumps(body.get("system", "")))


def user_texts(body: dict) -> list[str]:
    """Each text a request's user messages carry (a string content, or each
    text part / text block), without the trailing newline ctxproxy's
    rendering ends a message with."""
    out = []
    for m in body.get("messages", []):
        if m.get("role") != "user":
            continue
        c = m.get("content")
        parts = [c] if isinstance(c, str) else [
            p.get("text", "") for p in c or [] if isinstance(p, dict) and p.get("type") == "text"]
        out += [t.removesuffix("\n") for t in parts]
    return out


def sent_key(rec: Recorded) -> str | None:
    """The API key a request carries: `x-api-key`, or a bearer token (the
    anthropic SDK sends its key either way, the openai SDK as a bearer)."""
    return rec.headers.get("x-api-key") or rec.headers.get("authorization", "").removeprefix("Bearer ") or None


def shown_prompt(store: pathlib.Path, session: str, prompt: str) -> dict:
    """`ctxproxy show-prompt SESSION PROMPT --json`: the prompt record."""
    return json.loads(cli("show-prompt", session, prompt, "--json", store=store).stdout)


def without_cache_control(v: Any) -> Any:
    """`v` less every `cache_control` marker (the proxy places them on the
    request it forwards, after the prompt is recorded)."""
    if isinstance(v, dict):
        return {k: without_cache_control(x) for k, x in v.items() if k != "cache_control"}
    if isinstance(v, list):
        return [without_cache_control(x) for x in v]
    return v


def breakpoints(body: dict) -> int:
    """How many cache_control markers an Anthropic request carries (system,
    tools, messages); the API takes at most 4."""
    def count(v) -> int:
        if isinstance(v, dict):
            return ("cache_control" in v) + sum(count(x) for x in v.values())
        if isinstance(v, list):
            return sum(count(x) for x in v)
        return 0
    return count(body.get("system")) + count(body.get("tools")) + count(body.get("messages"))


# ------------------------------------------------------------ memory

def status_kib(pid: int, field: str) -> int:
    """A figure of /proc/PID/status in KiB (`VmRSS`: resident now; `VmHWM`:
    the peak since the process started or its peak was last reset)."""
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


def reset_peak(pid: int):
    """Sets the process's VmHWM back to its VmRSS (Linux 4.0+), so the next
    VmHWM is the peak of what comes after."""
    pathlib.Path(f"/proc/{pid}/clear_refs").write_text("5")


def many_messages_body(api: str, seed: int, count: int = 100_000) -> bytes:
    """A request body in `api`'s shape ("openai" or "anthropic") of `count`
    short messages, user and assistant in turn, their words drawn with
    `seed` (about 40 bytes a message: 4 MB for 100,000); the last is the
    user's question."""
    import random
    rng = random.Random(seed)
    words = ["fix", "the", "test", "read", "file", "ok", "done", "why", "build", "run", "log", "diff"]
    messages = [{"role": "user" if i % 2 == 0 else "assistant",
                 "content": f"{rng.choice(words)} {i}"} for i in range(count)]
    messages[-1] = {"role": "user", "content": f"last question of {seed}"}
    body = {"model": "memory-scripted", "messages": messages}
    if api == "anthropic":
        body["max_tokens"] = 1024
    return json.dumps(body, separators=(",", ":")).encode()

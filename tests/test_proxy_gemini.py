"""`ctxproxy proxy` speaking the Gemini API (`generateContent`,
`streamGenerateContent?alt=sse`) to a plain HTTP client, with the scripted
upstream (tests/proxylib.py) standing in for the model. Both ends are
checked: what the client reads and what the upstream received."""

from __future__ import annotations

import json
import re
import secrets

import pytest

import proxylib
from proxylib import ToolCall, Turn

KEY = f"AIzaSyCtxtest{secrets.token_hex(12)}"
MODEL = "gemini-scripted"
SYSTEM = {"parts": [{"text": "You are Gemini CLI, a careful coding assistant."}]}
WRITE = {"name": "write_file", "description": "Write a file of the workspace.",
         "parametersJsonSchema": {"type": "object", "properties": {"file_path": {"type": "string"},
                                                                   "content": {"type": "string"}}}}
FACT = "the staging database listens on port 47113"
HISTORY = [
    {"role": "user", "parts": [{"text": f"Note for later: {FACT}."}]},
    {"role": "model", "parts": [{"text": "Noted."}]},
    {"role": "user", "parts": [{"text": "Which port does the staging database listen on?"}]},
]


@pytest.fixture
def proxy(store, upstream):
    with proxylib.Proxy(store, upstream.url, upstream.url, extra=["--gemini-upstream", upstream.url]) as p:
        yield p


def body(contents: list, **extra) -> dict:
    return {"contents": contents, "systemInstruction": SYSTEM,
            "tools": [{"functionDeclarations": [WRITE]}],
            "generationConfig": {"temperature": 1, "thinkingConfig": {"includeThoughts": True}}, **extra}


def call(proxy, body: dict, stream: bool = False, key: str = KEY, query: str = "",
         headers: dict | None = None) -> tuple[int, dict, bytes]:
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    sep = "&" if "?" in method else "?"
    url = f"{proxy.url}/v1beta/models/{MODEL}:{method}" + (sep + query if query else "")
    raw = json.dumps(body).encode() if isinstance(body, dict) else body
    return proxylib.raw_request(url, "POST", raw, {"content-type": "application/json", "x-goog-api-key": key,
                                                   **(headers or {})})


def chunks(raw: bytes) -> list[dict]:
    """The `data:` lines of a Gemini stream, each a whole response; the
    stream has no event names, no `[DONE]` and nothing but `data:` lines and
    blank ones (the google-genai SDKs stop reading at anything else, a
    keep-alive comment too)."""
    text = raw.decode()
    assert "[DONE]" not in text, text
    assert all(line.startswith("data: ") or not line.strip() for line in text.splitlines()), text
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]


def parts_of(responses: list[dict]) -> list[dict]:
    return [p for r in responses for p in r["candidates"][0]["content"]["parts"]]


def declared(body: dict) -> list[str]:
    return [d["name"] for t in body.get("tools", []) for d in t.get("functionDeclarations", [])]


def reply_ids(headers: dict) -> tuple[str, str]:
    session, prompt = headers.get("x-ctxproxy-session"), headers.get("x-ctxproxy-prompt")
    assert session and re.fullmatch(r"s-\S+", session), f"x-ctxproxy-session: {session!r}"
    assert prompt and re.fullmatch(r"p\d+", prompt), f"x-ctxproxy-prompt: {prompt!r}"
    return session, prompt


def retrieve_first_exchange(rec: proxylib.Recorded) -> Turn:
    assert "context_retrieve" in declared(rec.json), "context_retrieve is not offered"
    return Turn(text="Let me check my notes.", thinking="Check x1.",
                tool_calls=[ToolCall("ctx_1", "context_retrieve", {"ids": ["x1"], "format": "full"})],
                input_tokens=50, output_tokens=5)


def answer_from_function_response(rec: proxylib.Recorded) -> Turn:
    model_turn, last = rec.json["contents"][-2:]
    call = model_turn["parts"][-1]
    assert call["functionCall"]["name"] == "context_retrieve", model_turn
    assert call["thoughtSignature"] == Turn().signature, "the call goes back with its signature"
    [part] = last["parts"]
    assert last["role"] == "user" and part["functionResponse"]["id"] == "ctx_1", last
    assert "47113" in part["functionResponse"]["response"]["output"], part
    return Turn(text="Port 47113.", input_tokens=60, output_tokens=7)


# ------------------------------------------------------------------ replies

def test_whole_reply_keeps_the_clients_request(proxy, upstream, store):
    upstream.push(Turn(text="Hello from upstream.", input_tokens=12, output_tokens=3))
    status, headers, raw = call(proxy, body([{"role": "user", "parts": [{"text": "Say hello."}]}]))
    assert status == 200, raw
    reply = json.loads(raw)
    assert parts_of([reply]) == [{"text": "Hello from upstream."}]
    assert reply["candidates"][0]["finishReason"] == "STOP"
    assert reply["usageMetadata"]["promptTokenCount"] == 12
    session, prompt = reply_ids(headers)

    [sent] = upstream.model_calls()
    assert sent.path == f"/v1beta/models/{MODEL}:generateContent"
    assert sent.headers["x-goog-api-key"] == KEY
    forwarded = sent.json
    assert forwarded["systemInstruction"] == SYSTEM
    assert forwarded["generationConfig"] == {"temperature": 1, "thinkingConfig": {"includeThoughts": True}}
    assert forwarded["tools"][0]["functionDeclarations"][0] == WRITE, "the client's declarations come first"
    assert declared(forwarded) == ["write_file", "context_retrieve", "context_search"]
    newest = forwarded["contents"][-1]
    assert newest["role"] == "user" and "Say hello." in json.dumps(newest["parts"]), "the newest input is forwarded"
    shown = proxylib.shown_prompt(store, session, prompt)
    assert shown["messages"] == forwarded["contents"], "show-prompt shows exactly what was forwarded"
    assert "Hello from upstream." in proxylib.recorded_exchange(store, session)


def test_streamed_reply_with_a_thought_and_a_client_call(proxy, upstream, store):
    upstream.push(Turn(text="Writing it now.", thinking="The file is small.",
                       tool_calls=[ToolCall("write_1", "write_file", {"file_path": "hello.txt", "content": "hi"})],
                       input_tokens=20, output_tokens=8))
    status, headers, raw = call(proxy, body([{"role": "user", "parts": [{"text": "create hello.txt"}]}]),
                                stream=True)
    assert status == 200, raw
    assert headers["content-type"].startswith("text/event-stream")
    responses = chunks(raw)
    parts = parts_of(responses)
    assert {"text": "The file is small.", "thought": True} in parts, "thoughts reach the client"
    assert "".join(p["text"] for p in parts if "text" in p and not p.get("thought")) == "Writing it now."
    [call_part] = [p for p in parts if "functionCall" in p]
    assert call_part == {"functionCall": {"id": "write_1", "name": "write_file",
                                          "args": {"file_path": "hello.txt", "content": "hi"}},
                         "thoughtSignature": Turn().signature}
    assert [r["candidates"][0].get("finishReason") for r in responses][-1] == "STOP"
    assert all("finishReason" not in r["candidates"][0] for r in responses[:-1])
    assert responses[-1]["usageMetadata"]["totalTokenCount"] == 28
    session, _ = reply_ids(headers)
    recorded = proxylib.recorded_exchange(store, session)
    assert "Writing it now." in recorded and "write_file" in recorded
    assert "The file is small." not in recorded, "a thought is not recorded as the reply"


def test_a_call_without_an_id_is_named_as_the_record_holds_it(proxy, upstream, store):
    upstream.push(Turn(tool_calls=[ToolCall("", "write_file", {"file_path": "a.txt", "content": "a"})]),
                  Turn(text="Done."))
    first = [{"role": "user", "parts": [{"text": "create a.txt"}]}]
    status, headers, raw = call(proxy, body(first), stream=True)
    assert status == 200, raw
    [call_part] = [p for p in parts_of(chunks(raw)) if "functionCall" in p]
    named = call_part["functionCall"]["id"]
    assert named.startswith("write_file_"), call_part
    session, _ = reply_ids(headers)
    # The client answers by that id; the session goes on, nothing forked.
    second = first + [{"role": "model", "parts": [call_part]},
                      {"role": "user", "parts": [{"functionResponse": {"id": named, "name": "write_file",
                                                                       "response": {"output": "ok"}}}]}]
    status, headers, raw = call(proxy, body(second), stream=True)
    assert status == 200, raw
    assert reply_ids(headers)[0] == session
    assert proxylib.sessions(store).count("s-") == 1, "no fork"
    assert named in json.dumps(upstream.model_calls()[-1].json["contents"])


def test_a_whole_reply_to_a_streamed_request_reaches_the_client_as_a_stream(proxy, upstream, store):
    upstream.push(Turn(text="Whole, not streamed.", whole=True))
    status, headers, raw = call(proxy, body([{"role": "user", "parts": [{"text": "hi"}]}]), stream=True)
    assert status == 200, raw
    responses = chunks(raw)
    assert "".join(p.get("text", "") for p in parts_of(responses)) == "Whole, not streamed."
    assert responses[-1]["candidates"][0]["finishReason"] == "STOP"
    session, _ = reply_ids(headers)
    assert "Whole, not streamed." in proxylib.recorded_exchange(store, session)


def test_a_short_session_is_forwarded_as_sent(store, upstream):
    """The whole shape: the client's own contents, signatures and all."""
    contents = [
        {"role": "user", "parts": [{"text": "<session_context>ctx</session_context>"}, {"text": "create hi.txt"}]},
        {"role": "model", "parts": [{"functionCall": {"id": "w_1", "name": "write_file", "args": {"file_path": "hi.txt"}},
                                     "thoughtSignature": "c2lnbmF0dXJl"}]},
        {"role": "user", "parts": [{"functionResponse": {"id": "w_1", "name": "write_file", "response": {"output": "ok"}}}]},
    ]
    upstream.push(Turn(text="Done."))
    with proxylib.Proxy(store, upstream.url, upstream.url, config=None,
                        extra=["--gemini-upstream", upstream.url]) as p:
        status, _, raw = call(p, body(contents), stream=True)
    assert status == 200, raw
    [sent] = upstream.model_calls()
    assert sent.json["contents"] == contents


# ------------------------------------------------------------ context tools

@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_context_retrieve_is_answered_inside_the_proxy(proxy, upstream, store, stream):
    upstream.push(retrieve_first_exchange, answer_from_function_response)
    status, headers, raw = call(proxy, body(HISTORY), stream=stream)
    assert status == 200, raw
    assert b"context_retrieve" not in raw, "no context call reaches the client"
    session, _ = reply_ids(headers)
    responses = chunks(raw) if stream else [json.loads(raw)]
    text = "".join(p.get("text", "") for p in parts_of(responses) if not p.get("thought"))
    assert text == "Let me check my notes.Port 47113."
    usage = responses[-1]["usageMetadata"]
    assert (usage["promptTokenCount"], usage["candidatesTokenCount"]) == (110, 12), "usage summed over the rounds"
    first, second = upstream.model_calls()
    assert first.json["tools"] == second.json["tools"]
    assert first.path == second.path and second.headers["x-goog-api-key"] == KEY
    recorded = proxylib.recorded_exchange(store, session, "x2")
    assert "Port 47113." in recorded and "context_retrieve" not in recorded


# ------------------------------------------------------------ sessions

def test_a_second_turn_continues_the_session_and_a_repeated_response_is_read_once(proxy, upstream, store):
    """No session header: the session is keyed on the system instruction and
    the first user content. The second request repeats the first's history,
    with the function response sent twice (Gemini CLI did so on a resume)."""
    upstream.push(Turn(tool_calls=[ToolCall("w_1", "write_file", {"file_path": "hello.txt", "content": "hi"})]),
                  Turn(text="Created hello.txt."))
    first = [{"role": "user", "parts": [{"text": "create hello.txt containing hi"}]}]
    status, headers, raw = call(proxy, body(first), stream=True)
    assert status == 200, raw
    session, _ = reply_ids(headers)
    response = {"functionResponse": {"id": "w_1", "name": "write_file", "response": {"output": "Created."}}}
    model = {"role": "model", "parts": [p for p in parts_of(chunks(raw)) if "functionCall" in p]}
    second = first + [model, {"role": "user", "parts": [response, response]}]
    status, headers, raw = call(proxy, body(second), stream=True)
    assert status == 200, raw
    assert reply_ids(headers)[0] == session, "the second turn lands in the same session"
    forwarded = upstream.model_calls()[-1].json["contents"]
    responses = [p for c in forwarded for p in c["parts"] if "functionResponse" in p]
    assert len(responses) == 1, forwarded
    recorded = proxylib.recorded_exchange(store, session)
    assert recorded.count("Created.") == 1 and "Created hello.txt." in recorded
    assert proxylib.sessions(store).count("s-") == 1


# ------------------------------------------------------------ errors and keys

def test_malformed_body_is_a_400_in_gemini_shape(proxy, upstream):
    bad = body([{"role": "user", "parts": [{"text": "hi"}]}, {"role": "model", "parts": [{"functionCall": {}}]}])
    status, _, raw = call(proxy, bad)
    assert status == 400
    assert json.loads(raw) == {"error": {
        "code": 400, "status": "INVALID_ARGUMENT",
        "message": "contents[1].parts[0].functionCall.name: expected a string, got null"}}
    status, _, raw = call(proxy, b"{oops", stream=True)
    assert status == 400 and json.loads(raw)["error"]["status"] == "INVALID_ARGUMENT"
    assert upstream.model_calls() == []


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_upstream_error_is_passed_through(proxy, upstream, stream):
    error = proxylib.gemini_error(429, "Resource has been exhausted", "RESOURCE_EXHAUSTED")
    upstream.push(error)
    status, _, raw = call(proxy, body(HISTORY), stream=stream)
    assert (status, json.loads(raw)) == (429, error.body)


def test_other_methods_are_forwarded_unchanged(proxy, upstream):
    count = json.dumps({"contents": HISTORY}).encode()
    status, _, _ = proxylib.raw_request(f"{proxy.url}/v1beta/models/{MODEL}:countTokens", "POST", count,
                                        {"x-goog-api-key": KEY, "content-type": "application/json"})
    proxylib.raw_request(f"{proxy.url}/v1beta/models/{MODEL}", headers={"x-goog-api-key": KEY})
    counted, got = upstream.requests
    assert (counted.method, counted.path, counted.body) == ("POST", f"/v1beta/models/{MODEL}:countTokens", count)
    assert counted.headers["x-goog-api-key"] == KEY
    assert (got.method, got.path) == ("GET", f"/v1beta/models/{MODEL}")
    assert upstream.model_calls() == []


def test_key_is_never_stored_logged_or_shown(store, upstream):
    env = proxylib.env_without_proxies() | {"RUST_LOG": "trace"}
    bodies = []
    with proxylib.Proxy(store, upstream.url, upstream.url, env=env,
                        extra=["--gemini-upstream", upstream.url]) as p:
        upstream.push(Turn(text="ok"), proxylib.gemini_error(429, "slow down", "RESOURCE_EXHAUSTED"),
                      retrieve_first_exchange, answer_from_function_response)
        assert call(p, body([{"role": "user", "parts": [{"text": "hello"}]}]))[0] == 200
        bodies.append(call(p, body([{"role": "user", "parts": [{"text": "again"}]}]), query=f"key={KEY}")[2])
        assert call(p, body(HISTORY), stream=True, key="", query=f"key={KEY}")[0] == 200
        bodies.append(call(p, b"{oops", query=f"key={KEY}")[2])
        logs = p.stderr
    assert [r.query for r in upstream.model_calls()][1:] == [f"key={KEY}", f"alt=sse&key={KEY}", f"alt=sse&key={KEY}"]
    # Unreachable: the error names the upstream, not the query that holds the key.
    with proxylib.Proxy(store, upstream.url, upstream.url, env=env,
                        extra=["--gemini-upstream", "http://127.0.0.1:9"]) as p:
        status, _, raw = call(p, body(HISTORY), query=f"key={KEY}")
        assert status == 502 and json.loads(raw)["error"]["status"] == "UNAVAILABLE"
        assert "127.0.0.1:9" in json.loads(raw)["error"]["message"]
        bodies.append(raw)
        logs += p.stderr
    assert proxylib.files_containing(store.parent, KEY[6:].encode()) == []
    assert KEY[6:] not in logs
    for b in bodies:
        assert b and KEY[6:].encode() not in b, b

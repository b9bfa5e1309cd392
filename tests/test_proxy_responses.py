"""`ctxproxy proxy` serving the OpenAI Responses API (`POST /v1/responses`),
driven by the official `openai` Python SDK, streamed and not, with the
scripted upstream (tests/proxylib.py) standing in for the model.

Each test checks both ends: what the SDK hands the caller (output items,
usage, the reply headers) and what the upstream received (input items,
the client's fields and tools kept, the context tools in the flat shape)."""

from __future__ import annotations

import json
import re
import secrets

import openai
import pytest

import proxylib
from proxylib import ToolCall, Turn

KEY = f"sk-proj-ctxtest{secrets.token_hex(12)}"
MODEL = "gpt-scripted"
SYSTEM = "You are a careful coding agent. Answer briefly."
DEVELOPER = {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": SYSTEM}]}
EXEC = {"type": "function", "name": "exec_command", "description": "Runs a command.", "strict": False,
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}
APPLY_PATCH = {"type": "custom", "name": "apply_patch", "description": "Edits files with a patch.",
               "format": {"type": "grammar", "syntax": "lark", "definition": "start: /(.|\\n)+/"}}
PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"

FACT = "the staging database listens on port 47113"
HISTORY = [
    DEVELOPER,
    {"role": "user", "content": f"Note for later: {FACT}."},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Noted."}]},
    {"role": "user", "content": "Which port does the staging database listen on?"},
]


def client(proxy) -> openai.OpenAI:
    return openai.OpenAI(base_url=proxy.url + "/v1", api_key=KEY, max_retries=0, timeout=60)


def user(text: str) -> dict:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def reply_ids(headers) -> tuple[str, str]:
    session, prompt = headers.get("x-ctxproxy-session"), headers.get("x-ctxproxy-prompt")
    assert session and re.fullmatch(r"s-\S+", session), f"x-ctxproxy-session: {session!r}"
    assert prompt and re.fullmatch(r"p\d+", prompt), f"x-ctxproxy-prompt: {prompt!r}"
    return session, prompt


def flat_names(body: dict) -> list[str]:
    return [t.get("name") for t in body.get("tools") or []]


def items(response) -> list[dict]:
    """A response's output items as a client sends them back in `input`."""
    return [o.model_dump(exclude_none=True) for o in response.output]


def stream_all(proxy, **kw) -> tuple[list, object, dict]:
    """A streamed response through the SDK's stream helper: its events, the
    final response and the reply headers."""
    with client(proxy).responses.with_streaming_response.create(stream=True, **kw) as raw:
        headers = dict(raw.headers)
        events = list(raw.parse())
    [done] = [e for e in events if e.type == "response.completed"]
    return events, done.response, headers


# ------------------------------------------------------------------ replies

def test_a_whole_reply_keeps_the_clients_request(proxy, upstream):
    upstream.push(Turn(text="Hello from upstream.", input_tokens=12, output_tokens=3))
    raw = client(proxy).responses.with_raw_response.create(
        model=MODEL, input=[DEVELOPER, user("Say hello.")], tools=[EXEC, APPLY_PATCH],
        tool_choice="auto", reasoning={"effort": "low"}, store=False,
        include=["reasoning.encrypted_content"], text={"verbosity": "low"})
    reply = raw.parse()
    assert reply.output_text == "Hello from upstream."
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (12, 3)
    reply_ids(raw.headers)

    [sent] = upstream.model_calls()
    assert sent.path == "/v1/responses"
    body = sent.json
    assert body["model"] == MODEL and body["store"] is False and body["reasoning"] == {"effort": "low"}
    assert body["include"] == ["reasoning.encrypted_content"] and body["text"] == {"verbosity": "low"}
    assert body["input"][0] == DEVELOPER, "the client's developer message leads, as sent"
    assert "Say hello." in json.dumps(body["input"][-1])
    assert body["tools"][:2] == [EXEC, APPLY_PATCH], "the client's tools are forwarded as sent, first"
    context = [t for t in body["tools"] if t["name"] in proxylib.CONTEXT_TOOLS]
    assert [t["name"] for t in context] == list(proxylib.CONTEXT_TOOLS)
    assert all(t["type"] == "function" and "function" not in t and t["parameters"] for t in context), \
        "the context tools are in the Responses API's flat shape"
    assert body["prompt_cache_key"].startswith("ctxproxy-s-")


def test_a_plain_string_input_and_instructions(proxy, upstream, store):
    upstream.push(Turn(text="Hi."))
    raw = client(proxy).responses.with_raw_response.create(model=MODEL, instructions=SYSTEM, input="Say hi.")
    assert raw.parse().output_text == "Hi."
    session, _ = reply_ids(raw.headers)
    [sent] = upstream.model_calls()
    assert sent.json["instructions"] == SYSTEM
    assert "Say hi." in json.dumps(sent.json["input"])
    assert "Say hi." in proxylib.recorded_exchange(store, session)


def test_a_streamed_reply_with_a_client_tool_call(proxy, upstream):
    upstream.push(Turn(text="Running it.", tool_calls=[ToolCall("call_run_1", "exec_command", {"cmd": "ls"})],
                       thinking="**Planning** the listing", signature="gAAAA-opaque-1"))
    events, final, headers = stream_all(proxy, model=MODEL, input=[DEVELOPER, user("List the files.")],
                                        tools=[EXEC])
    reply_ids(headers)
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == "Running it."
    out = items(final)
    assert [o["type"] for o in out] == ["reasoning", "message", "function_call"]
    assert out[0]["encrypted_content"] == "gAAAA-opaque-1"
    assert (out[2]["call_id"], out[2]["name"], json.loads(out[2]["arguments"])) == ("call_run_1", "exec_command", {"cmd": "ls"})
    assert final.usage.input_tokens == 100


# ------------------------------------------------------------ context tools

def retrieve_first_exchange(rec: proxylib.Recorded) -> Turn:
    assert "context_retrieve" in flat_names(rec.json), "context_retrieve is not offered"
    return Turn(tool_calls=[ToolCall("call_ctx_1", "context_retrieve", {"ids": ["x1"], "format": "full"})],
                thinking="I need the note.", signature="gAAAA-ctx", input_tokens=50, output_tokens=5)


def answer_from_tool_result(rec: proxylib.Recorded) -> Turn:
    *_, reasoning, call, last = rec.json["input"]
    assert reasoning["type"] == "reasoning" and reasoning["encrypted_content"] == "gAAAA-ctx", \
        "the round's reasoning goes back with its call"
    assert call["type"] == "function_call" and call["name"] == "context_retrieve"
    assert last["type"] == "function_call_output" and last["call_id"] == "call_ctx_1", last
    assert "47113" in last["output"], last
    return Turn(text="Port 47113.", input_tokens=60, output_tokens=7)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_context_retrieve_is_answered_inside_the_proxy(proxy, upstream, store, stream):
    upstream.push(retrieve_first_exchange, answer_from_tool_result)
    kw = dict(model=MODEL, input=HISTORY, tools=[EXEC])
    if stream:
        events, reply, headers = stream_all(proxy, **kw)
        assert [e.type for e in events].count("response.created") == 1
        assert [e.type for e in events].count("response.completed") == 1
        assert not [e for e in events if "function_call" in e.type], "no context call event reaches the client"
        assert [e.sequence_number for e in events] == list(range(len(events)))
    else:
        raw = client(proxy).responses.with_raw_response.create(**kw)
        reply, headers = raw.parse(), raw.headers
    session, _ = reply_ids(headers)
    assert upstream.script_errors == []
    assert reply.output_text == "Port 47113."
    assert [o["type"] for o in items(reply)] == ["message"], "neither the call nor its reasoning reach the client"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (110, 12), "usage is summed over the rounds"
    assert len(upstream.model_calls()) == 2
    assert "Port 47113." in proxylib.recorded_exchange(store, session, "x2")


# ------------------------------------------------------------ sessions

def test_a_session_continues_across_requests_with_custom_tool_calls(proxy, upstream, store):
    """Codex's loop: the model patches a file with the custom apply_patch tool, the client
    sends the call and its output back with the rest of its history; one session holds both."""
    upstream.push(Turn(tool_calls=[ToolCall("call_patch_1", "apply_patch", PATCH)],
                       thinking="**Planning** the file", signature="gAAAA-opaque-1"),
                  Turn(text="Created hello.txt."))
    oa = client(proxy)
    history = [DEVELOPER, user("create hello.txt containing hi")]
    first = oa.responses.with_raw_response.create(model=MODEL, input=history, tools=[EXEC, APPLY_PATCH],
                                                  prompt_cache_key="thread-1")
    out = items(first.parse())
    assert [o["type"] for o in out] == ["reasoning", "custom_tool_call"] and out[1]["input"] == PATCH
    history += out + [{"type": "custom_tool_call_output", "call_id": "call_patch_1", "output": "Success."}]
    second = oa.responses.with_raw_response.create(model=MODEL, input=history, tools=[EXEC, APPLY_PATCH],
                                                   prompt_cache_key="thread-1")
    assert second.parse().output_text == "Created hello.txt."
    s1, _ = reply_ids(first.headers)
    s2, p2 = reply_ids(second.headers)
    assert s1 == s2, "the second request continues the first one's session"
    forwarded = upstream.model_calls()[1].json["input"]
    kinds = [i["type"] for i in forwarded]
    at = kinds.index("custom_tool_call")
    assert forwarded[at - 1]["encrypted_content"] == "gAAAA-opaque-1", "the reasoning stands before its call"
    assert forwarded[at]["input"] == PATCH, "the patch goes back with its lines"
    output = forwarded[at + 1]
    assert (output["type"], output["call_id"], output["output"].strip()) == (
        "custom_tool_call_output", "call_patch_1", "Success.")
    assert forwarded[0] == DEVELOPER and forwarded.count(DEVELOPER) == 1
    recorded = proxylib.recorded_exchange(store, s1)
    assert "create hello.txt containing hi" in recorded and "Success." in recorded
    assert "Created hello.txt." in recorded
    assert len([line for line in proxylib.sessions(store).splitlines() if line.startswith("s-")]) == 1
    # The key the client sent reaches the upstream, and nowhere else.
    assert all(c.headers["authorization"] == f"Bearer {KEY}" for c in upstream.model_calls())
    assert proxylib.files_containing(store.parent, KEY.encode()) == []
    assert KEY not in proxy.stderr


def test_a_session_id_header_names_the_session(proxy, upstream):
    """opencode's `x-session-id` names the conversation: the same history under another id is
    another session."""
    upstream.push(Turn(text="a"), Turn(text="b"), Turn(text="b"))
    oa = client(proxy)

    def ask(history, session_id):
        raw = oa.responses.with_raw_response.create(model=MODEL, input=history,
                                                    extra_headers={"x-session-id": session_id})
        return raw.headers["x-ctxproxy-session"]

    first = ask([user("Question 1.")], "ses_1")
    history = [user("Question 1."), {"type": "message", "role": "assistant", "content": "a"}, user("Question 2.")]
    assert ask(history, "ses_1") == first
    assert ask(history, "ses_2") != first


# ------------------------------------------------------------ passthrough, errors, secrets

def test_previous_response_id_is_forwarded_untouched(proxy, upstream):
    upstream.push(Turn(text="From the stored history."))
    body = {"model": MODEL, "previous_response_id": "resp_earlier",
            "input": [{"type": "function_call_output", "call_id": "call_1", "output": "done"}], "tools": [EXEC]}
    raw = client(proxy).responses.with_raw_response.create(**body)
    assert raw.parse().output_text == "From the stored history."
    [sent] = upstream.model_calls()
    assert sent.json == body, "the history lives upstream: nothing is rewritten, no context tool added"
    assert raw.headers.get("x-ctxproxy-prompt") is None, "no prompt was assembled"
    assert "previous_response_id" in proxy.stderr and "forwarded as sent" in proxy.stderr


def test_malformed_bodies_are_400s_in_the_apis_shape(proxy, upstream):
    cases = {
        b"{not json": "body",
        b'{"model": "m", "input": 7}': "input",
        b'{"model": "m", "input": [{"role": "user", "content": "a"}, {"type": "function_call", "name": "f"}]}':
            "input[1].call_id",
        b'{"model": "m", "input": "a", "instructions": ["x"]}': "instructions",
    }
    for body, param in cases.items():
        status, _, data = proxylib.raw_request(proxy.url + "/v1/responses", "POST", body,
                                               {"content-type": "application/json", "authorization": f"Bearer {KEY}"})
        assert status == 400, data
        err = json.loads(data)["error"]
        assert err["type"] == "invalid_request_error" and err["param"] == param and param in err["message"]
        assert err.keys() == {"message", "type", "param", "code"}
    with pytest.raises(openai.BadRequestError) as e:
        client(proxy).responses.create(model=MODEL, input=[{"type": "function_call_output", "output": "x"}])
    assert e.value.body["param"] == "input[0].call_id"
    assert upstream.model_calls() == [], "nothing malformed is forwarded"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_an_upstream_error_reaches_the_sdk(proxy, upstream, stream):
    upstream.push(proxylib.openai_error(429, "Rate limit reached.", "rate_limit_error", "rate_limit_exceeded"))
    with pytest.raises(openai.RateLimitError) as e:
        client(proxy).responses.create(model=MODEL, input="hi", stream=stream)
    assert e.value.body["code"] == "rate_limit_exceeded"


def test_an_unreachable_upstream_is_a_502_in_the_apis_shape(store, upstream):
    with proxylib.Proxy(store, "http://127.0.0.1:9", upstream.url) as p:
        with pytest.raises(openai.APIStatusError) as e:
            client(p).responses.create(model=MODEL, input="hi")
    assert e.value.status_code == 502
    assert e.value.body["type"] == "upstream_error" and "127.0.0.1:9" in e.value.body["message"]


AWS_ID = "AKIA" + "Q3EGRZ7TYXNV4K2M"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "Q3EGRZ7TYX"


@pytest.mark.parametrize("whole", [True, False])
def test_secrets_in_the_input_are_masked_upstream_and_in_the_store(store, upstream, whole):
    upstream.push(Turn(text="Deployed."))
    config = None if whole else proxylib.LAYERED
    with proxylib.Proxy(store, upstream.url, upstream.url, config=config) as p:
        client(p).responses.create(
            model=MODEL, instructions=f"{SYSTEM} Deploy with aws_secret_access_key = {AWS_SECRET}",
            input=[user(f"My key id is {AWS_ID}; deploy."),
                   {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{}"},
                   {"type": "function_call_output", "call_id": "c1", "output": f"AWS_ACCESS_KEY_ID={AWS_ID}"},
                   user("Go on.")])
    [sent] = upstream.model_calls()
    assert ("context_retrieve" not in flat_names(sent.json)) == whole
    for secret in (AWS_ID, AWS_SECRET):
        assert secret not in sent.body.decode(), "forwarded unmasked"
        assert proxylib.files_containing(store.parent, secret.encode()) == []
    assert "[secret:aws-access-key]" in json.dumps(sent.json["input"])
    assert "[secret:aws-secret-key]" in sent.json["instructions"]


def test_a_websocket_upgrade_is_refused_with_a_426_and_not_forwarded(proxy, upstream):
    status, _, data = proxylib.raw_request(proxy.url + "/v1/responses", "GET", headers={
        "connection": "Upgrade", "upgrade": "websocket", "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ=="})
    assert status == 426, data
    assert "POST /v1/responses" in json.loads(data)["error"]["message"]
    assert upstream.requests == []

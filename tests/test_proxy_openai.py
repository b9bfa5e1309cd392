"""`ctxproxy proxy` driven by the official `openai` Python SDK, streaming and
not, with the scripted upstream (tests/proxylib.py) standing in for the model.

Each test checks both ends: what the SDK hands the caller (text, tool calls
with their ids, usage, the reply headers) and what the upstream received (the
assembled prompt, the client's fields kept, the context tools)."""

from __future__ import annotations

import http.client
import json
import re
import secrets
import signal
import socket
import threading
import time

import openai
import pytest

import proxylib
from proxylib import ToolCall, Turn

KEY = f"sk-proj-ctxtest{secrets.token_hex(12)}"
MODEL = "gpt-scripted"
SYSTEM = "You are a careful coding assistant. Answer briefly."
READ_FILE = {"type": "function", "function": {
    "name": "read_file", "description": "Read a file of the workspace.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}

# A 1x1 PNG.
PNG_1PX = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

# The first exchange of the history the context tests send: a fact the model
# then pulls back by id.
FACT = "the staging database listens on port 47113"
HISTORY = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": f"Note for later: {FACT}."},
    {"role": "assistant", "content": "Noted."},
    {"role": "user", "content": "Which port does the staging database listen on?"},
]


def client(proxy, **kw) -> openai.OpenAI:
    return openai.OpenAI(base_url=proxy.url + "/v1", api_key=KEY, max_retries=0, timeout=60, **kw)


def reply_ids(raw) -> tuple[str, str]:
    """The session and prompt a reply names in its headers."""
    session, prompt = raw.headers.get("x-ctxproxy-session"), raw.headers.get("x-ctxproxy-prompt")
    assert session and re.fullmatch(r"s-\S+", session), f"x-ctxproxy-session: {session!r}"
    assert prompt and re.fullmatch(r"p\d+", prompt), f"x-ctxproxy-prompt: {prompt!r}"
    return session, prompt


def assert_system_kept(body: dict):
    """The forwarded prompt opens with the client's system prompt."""
    first = body["messages"][0]
    assert first["role"] == "system", first
    text = first["content"] if isinstance(first["content"], str) else "".join(p.get("text", "") for p in first["content"])
    assert text.startswith(SYSTEM), text[:200]


def collect(stream) -> dict:
    """Everything a streamed completion gave the caller, put together as the
    SDK's users do: text, tool calls by index, finish reasons, usage, ids."""
    text, calls, finishes, usage, ids, roles = "", {}, [], None, set(), 0
    for chunk in stream:
        ids.add(chunk.id)
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            d = choice.delta
            roles += d.role is not None
            text += d.content or ""
            for tc in d.tool_calls or []:
                c = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
                c["id"] = tc.id or c["id"]
                if tc.function:
                    c["name"] += tc.function.name or ""
                    c["arguments"] += tc.function.arguments or ""
            if choice.finish_reason:
                finishes.append(choice.finish_reason)
    return {"text": text, "calls": [calls[i] for i in sorted(calls)], "finishes": finishes,
            "usage": usage, "ids": ids, "roles": roles}


def retrieve_first_exchange(rec: proxylib.Recorded) -> Turn:
    """The model's first round: it calls context_retrieve on x1 (the
    exchange that holds FACT), which the proxy must answer itself."""
    assert "context_retrieve" in proxylib.tool_names(rec.json), "context_retrieve is not offered"
    return Turn(tool_calls=[ToolCall("call_ctx_1", "context_retrieve", {"ids": ["x1"], "format": "full"})],
                input_tokens=50, output_tokens=5)


def answer_from_tool_result(rec: proxylib.Recorded) -> Turn:
    """The model's second round: it answers from the retrieve result, which
    must be the last message, a tool message for call_ctx_1 holding FACT."""
    last = rec.json["messages"][-1]
    assert last.get("role") == "tool" and last.get("tool_call_id") == "call_ctx_1", last
    assert "47113" in json.dumps(last["content"]), last
    return Turn(text="Port 47113.", input_tokens=60, output_tokens=7)


# ------------------------------------------------------------------ replies

def test_text_reply_keeps_the_clients_request(proxy, upstream, store):
    upstream.push(Turn(text="Hello from upstream.", input_tokens=12, output_tokens=3))
    raw = client(proxy).chat.completions.with_raw_response.create(
        model=MODEL, temperature=0.25, max_tokens=77, tools=[READ_FILE], tool_choice="auto",
        metadata={"purpose": "test"},
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Say hello."}])
    reply = raw.parse()
    assert reply.choices[0].message.content == "Hello from upstream."
    assert reply.choices[0].finish_reason == "stop"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (12, 3)
    session, prompt = reply_ids(raw)

    [sent] = upstream.model_calls()
    assert sent.path == "/v1/chat/completions"
    body = sent.json
    assert body["model"] == MODEL and body["temperature"] == 0.25 and body["max_tokens"] == 77
    assert body["tool_choice"] == "auto" and body["metadata"] == {"purpose": "test"}
    assert_system_kept(body)
    assert "Say hello." in proxylib.user_texts(body), "the newest input is forwarded"
    assert READ_FILE in body["tools"], "the client's tool is forwarded as sent"
    assert sorted(n for n in proxylib.tool_names(body) if n in proxylib.CONTEXT_TOOLS) == list(proxylib.CONTEXT_TOOLS)
    assert body.get("prompt_cache_key"), "a prompt_cache_key is set when the client sent none"
    assert sent.headers["authorization"] == f"Bearer {KEY}", "the client's key reaches the upstream"

    shown = proxylib.cli("show-prompt", session, prompt, store=store).stdout
    assert "Say hello." in shown
    assert proxylib.shown_prompt(store, session, prompt)["messages"] == body["messages"], \
        "show-prompt shows exactly what was forwarded"
    assert session in proxylib.sessions(store)


def test_streamed_text_and_client_tool_call(proxy, upstream):
    upstream.push(Turn(text="Let me read it.", tool_calls=[ToolCall("call_abc123", "read_file", {"path": "src/lib.rs"})],
                       input_tokens=40, output_tokens=9))
    raw = client(proxy).chat.completions.with_raw_response.create(
        model=MODEL, stream=True, stream_options={"include_usage": True}, tools=[READ_FILE],
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Read src/lib.rs"}])
    reply_ids(raw)
    got = collect(raw.parse())
    assert got["text"] == "Let me read it."
    assert got["calls"] == [{"id": "call_abc123", "name": "read_file", "arguments": '{"path": "src/lib.rs"}'}]
    assert got["finishes"] == ["tool_calls"]
    assert (got["usage"].prompt_tokens, got["usage"].completion_tokens) == (40, 9)

    [sent] = upstream.model_calls()
    assert sent.json["stream"] is True, "a streamed request stays streamed upstream"
    assert sent.json["stream_options"] == {"include_usage": True}


def test_stream_is_forwarded_as_it_arrives(proxy, upstream):
    """The upstream holds the rest of its answer until the client has seen
    the first piece: a proxy that buffered the stream (or made it a whole
    request while it waits) would never let the client see it early."""
    hold = threading.Event()
    turn = Turn(text="First piece. Then the rest of the answer.", piece=13, hold=hold, hold_after="First piece. ")
    upstream.push(turn)
    text = ""
    for chunk in client(proxy).chat.completions.create(
            model=MODEL, stream=True, messages=[{"role": "user", "content": "Answer in pieces."}]):
        text += "".join(c.delta.content or "" for c in chunk.choices)
        if text.startswith("First piece."):
            hold.set()
    assert turn.hold_released, "the first piece reached the client while the upstream was still streaming"
    assert text == turn.text


def test_image_parts_reach_the_upstream_verbatim(proxy, upstream):
    upstream.push(Turn(text="A red dot."))
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + PNG_1PX, "detail": "low"}}
    client(proxy).chat.completions.create(model=MODEL, messages=[
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": [{"type": "text", "text": "What is in this image?"}, image]}])
    parts = [p for m in upstream.model_calls()[0].json["messages"] if isinstance(m["content"], list)
             for p in m["content"]]
    assert image in parts, "the recent region keeps what ctxproxy cannot digest, verbatim"


def test_an_edited_history_forks_the_session(proxy, upstream, store):
    upstream.push(Turn(text="a"), Turn(text="b"), Turn(text="c"))
    oa = client(proxy)
    opening = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Plan the refactor."}]
    ask = lambda msgs: reply_ids(oa.chat.completions.with_raw_response.create(model=MODEL, messages=msgs))[0]  # noqa: E731
    s1 = ask(opening)
    s2 = ask(opening + [{"role": "assistant", "content": "a"}, {"role": "user", "content": "Start with the parser."}])
    s3 = ask(opening + [{"role": "assistant", "content": "a"}, {"role": "user", "content": "No: start with the lexer."}])
    assert s1 == s2 and s3 != s1, "the edited turn starts a fork"
    assert "Plan the refactor." in proxylib.cli("inspect", s3, "x1", "--full", store=store).stdout
    assert "Start with the parser." not in proxylib.cli("inspect", s3, "x2", "--full", store=store, check=False).stdout


def test_after_a_restart_a_history_with_a_secret_continues_its_session(store, upstream):
    """After a restart the proxy knows a conversation by what the store kept, its secret masked:
    the same history continues the session, and an edited one forks it at the last whole
    exchange before the edit."""
    secret = "AKIA" + "Q3EGRZ7TYXNV4K2M"
    history = [{"role": "user", "content": f"connect with key {secret}"}]
    named = {"x-ctxproxy-session": "restart"}
    upstream.push(Turn(text="a"), Turn(text="b"), Turn(text="c"), Turn(text="d"))
    ask = lambda oa, msgs: reply_ids(oa.chat.completions.with_raw_response.create(  # noqa: E731
        model=MODEL, messages=msgs, extra_headers=named))
    with proxylib.Proxy(store, upstream.url, upstream.url) as p:
        first = []
        for turn in range(2):
            first.append(ask(client(p), history)[0])
            history += [{"role": "assistant", "content": "ab"[turn]}, {"role": "user", "content": f"step {turn}"}]
        assert first[0] == first[1]
    assert proxylib.files_containing(store.parent, secret.encode()) == [], "the store keeps it masked"
    with proxylib.Proxy(store, upstream.url, upstream.url) as p:
        assert ask(client(p), history) == (first[0], "p3"), "the stored history is recognised"
        edited = history[:2] + [{"role": "user", "content": "a different second question"}]
        fork, prompt = ask(client(p), edited)
    assert fork != first[0] and prompt == "p1"
    assert proxylib.sessions(store).count("name:restart") == 2
    shown = proxylib.cli("inspect", fork, "x1", "--full", store=store).stdout
    assert "connect with" in shown, "the fork holds the exchange before the edit"
    assert "step 0" not in proxylib.cli("inspect", fork, "x2", "--full", store=store).stdout


def test_client_prompt_cache_key_is_kept_and_ours_is_stable(proxy, upstream):
    upstream.push(Turn(text="a"), Turn(text="b"), Turn(text="c"))
    oa = client(proxy)
    msgs = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "First question."}]
    oa.chat.completions.create(model=MODEL, messages=msgs)
    msgs2 = msgs + [{"role": "assistant", "content": "a"}, {"role": "user", "content": "Second question."}]
    oa.chat.completions.create(model=MODEL, messages=msgs2)
    oa.chat.completions.create(model=MODEL, messages=msgs2, prompt_cache_key="client-own-key")
    first, second, third = (r.json for r in upstream.model_calls())
    assert first["prompt_cache_key"] and first["prompt_cache_key"] == second["prompt_cache_key"]
    assert third["prompt_cache_key"] == "client-own-key"


# ------------------------------------------------------------ context tools

@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_context_retrieve_is_answered_inside_the_proxy(proxy, upstream, store, stream):
    upstream.push(retrieve_first_exchange, answer_from_tool_result)
    oa = client(proxy)
    kw = {"stream": True, "stream_options": {"include_usage": True}} if stream else {}
    raw = oa.chat.completions.with_raw_response.create(model=MODEL, messages=HISTORY, tools=[READ_FILE], **kw)
    session, prompt = reply_ids(raw)
    if stream:
        got = collect(raw.parse())
        assert got["text"] == "Port 47113."
        assert got["calls"] == [], "no context tool call reaches the client"
        assert got["finishes"] == ["stop"], "one final chunk"
        assert got["roles"] == 1, "one message: the continuation is spliced into it"
        assert len(got["ids"]) == 1, f"one message id across the rounds, got {got['ids']}"
        usage = got["usage"]
    else:
        reply = raw.parse()
        msg = reply.choices[0].message
        assert msg.content == "Port 47113." and not msg.tool_calls
        assert reply.choices[0].finish_reason == "stop"
        usage = reply.usage
    assert (usage.prompt_tokens, usage.completion_tokens) == (110, 12), "usage is summed over the rounds"

    first, second = upstream.model_calls()
    assert first.json["tools"] == second.json["tools"], "the tool list does not change within a turn"
    assert second.json.get("stream", False) is stream, "the internal round keeps the client's streaming mode"
    assert not upstream.script, "both scripted rounds were used"
    assert "Port 47113." in proxylib.cli("inspect", session, "x2", "--full", store=store).stdout


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_context_call_mixed_with_a_client_call_never_reaches_the_client(proxy, upstream, stream):
    """The model calls context_retrieve and the client's read_file in one
    turn: the client gets its own call (id kept, index 0) and no context
    call; its next request, carrying that turn and the tool result, goes on
    in the same session."""
    upstream.push(Turn(text="Checking.", tool_calls=[
        ToolCall("call_ctx_mixed", "context_retrieve", {"ids": ["x1"]}),
        ToolCall("call_read_1", "read_file", {"path": "src/lib.rs"})]), Turn(text="Done."))
    oa = client(proxy)
    kw = {"stream": True} if stream else {}
    raw = oa.chat.completions.with_raw_response.create(model=MODEL, messages=HISTORY, tools=[READ_FILE], **kw)
    session = reply_ids(raw)[0]
    if stream:
        got = collect(raw.parse())
        calls, text = got["calls"], got["text"]
        assert got["finishes"] == ["tool_calls"]
    else:
        msg = raw.parse().choices[0].message
        calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments} for c in msg.tool_calls or []]
        text = msg.content
    assert calls == [{"id": "call_read_1", "name": "read_file", "arguments": '{"path": "src/lib.rs"}'}]
    assert text == "Checking."
    follow = HISTORY + [
        {"role": "assistant", "content": "Checking.", "tool_calls": [
            {"id": "call_read_1", "type": "function", "function": {"name": "read_file", "arguments": calls[0]["arguments"]}}]},
        {"role": "tool", "tool_call_id": "call_read_1", "content": "pub fn levenshtein() {}"}]
    raw2 = oa.chat.completions.with_raw_response.create(model=MODEL, messages=follow, tools=[READ_FILE])
    assert raw2.parse().choices[0].message.content == "Done."
    assert reply_ids(raw2)[0] == session, "the turn the client echoes back is the one recorded"


def test_keepalive_comments_while_an_internal_round_runs(proxy, upstream):
    """The second round's answer starts late; meanwhile the client's stream
    gets SSE comments (the upstream sends none), so it does not time out, and
    the request stays streamed upstream."""
    def slow_answer(rec):
        time.sleep(3)
        return answer_from_tool_result(rec)

    upstream.push(retrieve_first_exchange, slow_answer)
    body = json.dumps({"model": MODEL, "stream": True, "messages": HISTORY})
    conn = http.client.HTTPConnection(proxy.host_port, timeout=30)
    conn.request("POST", "/v1/chat/completions", body,
                 {"content-type": "application/json", "authorization": f"Bearer {KEY}"})
    resp = conn.getresponse()
    assert resp.status == 200
    stream = resp.read().decode()
    conn.close()
    before_answer = stream[:stream.index("Port 47")]
    assert re.search(r"^:", before_answer, re.M), before_answer
    assert stream.rstrip().endswith("data: [DONE]")
    assert all(r.json["stream"] is True for r in upstream.model_calls())


def test_context_tools_stay_byte_identical_across_turns(proxy, upstream):
    upstream.push(Turn(text="one"), Turn(text="two"), Turn(text="three"))
    oa = client(proxy)
    msgs = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Turn one."}]
    oa.chat.completions.create(model=MODEL, messages=msgs, tools=[READ_FILE])
    msgs += [{"role": "assistant", "content": "one"}, {"role": "user", "content": "Turn two."}]
    # The client drops its own tools on this turn: ours stay.
    oa.chat.completions.create(model=MODEL, messages=msgs)
    msgs += [{"role": "assistant", "content": "two"}, {"role": "user", "content": "Turn three."}]
    oa.chat.completions.create(model=MODEL, messages=msgs, tools=[READ_FILE])
    raw_defs = [json.dumps(proxylib.context_tool_defs(r.json)) for r in upstream.model_calls()]
    assert len(raw_defs) == 3 and raw_defs[0] != "[]"
    assert raw_defs[0] == raw_defs[1] == raw_defs[2]


def test_long_replayed_session_forwards_much_less_than_its_history(proxy, upstream, store):
    """A recorded 46-exchange coding session replayed as a client runs it:
    every model call sends the whole history, the scripted model answers with
    the recorded assistant message, the client appends it and the tool
    results. The upstream gets the assembled prompt: from the middle of the
    session on, far less than the history."""
    oa = client(proxy)
    history = [{"role": "system", "content": SYSTEM}]
    sessions = set()
    sent_sizes, forwarded_sizes = [], []
    for added, answer in proxylib.replay_steps(proxylib.fixture_exchanges("coding-strsim")):
        upstream.push(proxylib.turn_of(answer))
        history += proxylib.to_openai(added)
        raw = oa.chat.completions.with_raw_response.create(
            model=MODEL, messages=history, tools=[READ_FILE], extra_headers={"x-ctxproxy-budget": "4000"})
        got = raw.parse().choices[0].message
        assert (got.content or "") == answer["content"]
        assert [c.id for c in got.tool_calls or []] == [c["id"] for c in answer.get("toolCalls", [])]
        session, prompt = reply_ids(raw)
        sessions.add(session)
        sent_sizes.append(proxylib.history_bytes({"messages": history}))
        forwarded_sizes.append(proxylib.history_bytes(upstream.model_calls()[-1].json))
        history += proxylib.to_openai([answer])
    assert len(sessions) == 1, f"one session for one conversation, got {sessions}"
    calls = upstream.model_calls()
    assert len(calls) == len(sent_sizes) > 46
    defs = {json.dumps(proxylib.context_tool_defs(c.json)) for c in calls}
    assert len(defs) == 1, "context tools byte-identical on every turn"
    assert forwarded_sizes[-1] * 4 < sent_sizes[-1], (forwarded_sizes[-1], sent_sizes[-1])
    assert sum(forwarded_sizes) * 2 < sum(sent_sizes), (sum(forwarded_sizes), sum(sent_sizes))
    last = calls[-1].json
    assert_system_kept(last)
    assert READ_FILE in last["tools"]
    assert proxylib.shown_prompt(store, session, prompt)["messages"] == last["messages"], \
        "show-prompt shows exactly what was forwarded"


def test_named_session_header(proxy, upstream):
    """x-ctxproxy-session names the session: the same conversation under two
    names is two sessions, and a conversation that goes on under its name
    stays in its session with a new prompt."""
    upstream.push(Turn(text="a"), Turn(text="b"), Turn(text="c"), Turn(text="d"))
    oa = client(proxy)
    opening = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Hello one."}]
    later = opening + [{"role": "assistant", "content": "a"}, {"role": "user", "content": "And two."}]
    ask = lambda msgs, name=None: reply_ids(oa.chat.completions.with_raw_response.create(  # noqa: E731
        model=MODEL, messages=msgs, extra_headers={"x-ctxproxy-session": name} if name else {}))
    (s1, p1), (s2, p2) = ask(opening, "named-a"), ask(later, "named-a")
    (s3, _), (s4, _) = ask(opening, "named-b"), ask(opening)
    assert s1 == s2 and p1 != p2
    assert len({s1, s3, s4}) == 3, (s1, s3, s4)


def test_a_tool_result_larger_than_the_budget_reaches_the_model_as_its_digest(proxy, upstream):
    """A file read bigger than the whole budget is the newest message: it is
    stored like any tool output and the model gets its digest and blob id,
    not a 400 and not the raw text."""
    upstream.push(Turn(text="read it"))
    big = "".join(f"line {i}: value_{i:05d} = compute(alpha_{i}, beta_{i})\n" for i in range(3000))
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Read big.py."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_big", "type": "function",
                                                                "function": {"name": "read_file", "arguments": '{"path": "big.py"}'}}]},
        {"role": "tool", "tool_call_id": "call_big", "content": big},
    ]
    got = client(proxy).chat.completions.create(model=MODEL, messages=messages, tools=[READ_FILE],
                                                extra_headers={"x-ctxproxy-budget": "4000"})
    assert got.choices[0].message.content == "read it"
    [sent] = upstream.model_calls()
    tool_messages = [m for m in sent.json["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["call_big"], sent.json["messages"]
    shown = tool_messages[0]["content"]
    assert "b3:" in shown and len(shown) < len(big) / 10, shown[:300]


def test_a_stored_output_is_retrieved_only_by_its_own_session(proxy, upstream):
    """A session's `context_retrieve` reaches what its own lineage stored: another session's
    `b3:` id, even known, is an unknown id to it."""
    upstream.push(Turn(text="read it"))
    big = "".join(f"line {i}: owner_value_{i:05d} = compute(alpha_{i})\n" for i in range(3000))
    oa = client(proxy)
    oa.chat.completions.create(model=MODEL, tools=[READ_FILE], extra_headers={"x-ctxproxy-session": "owner"},
                               messages=[{"role": "user", "content": "Read big.py."},
                                         {"role": "assistant", "content": None, "tool_calls": [{
                                             "id": "call_big", "type": "function",
                                             "function": {"name": "read_file", "arguments": '{"path": "big.py"}'}}]},
                                         {"role": "tool", "tool_call_id": "call_big", "content": big}])
    blob = re.search(r"b3:[0-9a-f]+", json.dumps(upstream.model_calls()[0].json["messages"])).group(0)

    def retrieve_it(rec):
        return Turn(tool_calls=[ToolCall("call_steal", "context_retrieve", {"ids": [blob]})])

    def answer(rec):
        result = rec.json["messages"][-1]
        assert result["role"] == "tool" and result["tool_call_id"] == "call_steal", result
        assert "owner_value_00001" not in result["content"], "another session's output was retrieved"
        assert "unknown id" in result["content"], result["content"]
        return Turn(text="not mine")

    upstream.push(retrieve_it, answer)
    reply = oa.chat.completions.create(model=MODEL, extra_headers={"x-ctxproxy-session": "stranger"},
                                       messages=[{"role": "user", "content": f"What does {blob} hold?"}])
    assert not upstream.script_errors, upstream.script_errors
    assert reply.choices[0].message.content == "not mine"


# ----------------------------------------------------------------- errors

def test_malformed_body_is_a_400_in_openai_shape(proxy, upstream):
    for body in (b"{not json", b'{"model": "m", "messages": "not a list"}'):
        status, _, data = proxylib.raw_request(proxy.url + "/v1/chat/completions", "POST", body,
                                               {"content-type": "application/json", "authorization": f"Bearer {KEY}"})
        assert status == 400, data
        err = json.loads(data)["error"]
        assert err["type"] == "invalid_request_error" and err["message"]
        assert {"param", "code"} <= err.keys()
    assert upstream.model_calls() == [], "nothing malformed is forwarded"
    assert proxylib.raw_request(proxy.url + "/healthz")[0] == 200, "the proxy keeps running"


def test_upstream_down_is_a_502_naming_it(store, upstream):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    with proxylib.Proxy(store, dead, upstream.url) as p:
        with pytest.raises(openai.APIStatusError) as e:
            client(p).chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert e.value.status_code == 502
    # The SDK hands over the body's "error" object.
    assert dead in e.value.body["message"] and KEY not in json.dumps(e.value.body)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("status, type_, exc", [
    (429, "requests", openai.RateLimitError),
    (500, "server_error", openai.InternalServerError),
])
def test_upstream_error_is_passed_through(proxy, upstream, store, stream, status, type_, exc):
    fail = proxylib.openai_error(status, f"scripted {status}: try later", type_, "scripted_code")
    fail.headers = {"retry-after": "7"}
    upstream.push(fail)
    with pytest.raises(exc) as e:
        r = client(proxy).chat.completions.create(
            model=MODEL, stream=stream, messages=[{"role": "user", "content": "hi"}])
        if stream:
            list(r)
    assert e.value.status_code == status
    assert e.value.body == fail.body["error"], "the upstream's own body, not one of ours"
    assert e.value.response.headers.get("retry-after") == "7"
    # The failed request opened its session and stored no exchange in it.
    [line] = [l for l in proxylib.sessions(store).splitlines() if l.startswith("s-")]
    assert line.split()[1] == "0", line


def test_client_disconnect_mid_stream_records_nothing_half_written(proxy, upstream, store):
    marker = "HALFWRITTEN-" + secrets.token_hex(6)
    upstream.push(proxylib.Stall(text=marker))
    body = json.dumps({"model": MODEL, "stream": True,
                       "messages": [{"role": "user", "content": "Stream me something long."}]})
    conn = http.client.HTTPConnection(proxy.host_port, timeout=30)
    conn.request("POST", "/v1/chat/completions", body,
                 {"content-type": "application/json", "authorization": f"Bearer {KEY}"})
    resp = conn.getresponse()
    assert resp.status == 200
    seen = b""
    while marker[:7].encode() not in seen:
        seen += resp.read1(4096)
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()
    deadline = time.monotonic() + 15
    while not upstream.disconnects and time.monotonic() < deadline:
        time.sleep(0.05)
    assert upstream.disconnects, "the upstream request is cancelled when the client goes away"

    # The proxy goes on, and the store holds no trace of the half answer.
    assert proxy.proc.poll() is None, f"the proxy died (exit {proxy.proc.poll()}):\n{proxy.stderr}"
    upstream.push(Turn(text="fine"))
    assert client(proxy).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Another."}]).choices[0].message.content == "fine"
    assert proxylib.files_containing(store.parent, marker.encode()) == []
    for line in proxylib.sessions(store).splitlines():
        sid = next((w for w in line.split() if w.startswith("s-")), None)
        if sid:
            shown = proxylib.cli("inspect", sid, "x1", "--full", store=store, check=False).stdout
            assert marker not in shown


# ------------------------------------------------------------ keys, headers, passthrough

def test_key_is_never_stored_logged_or_shown(store, upstream):
    env = proxylib.env_without_proxies() | {"RUST_LOG": "trace"}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    bodies = []
    with proxylib.Proxy(store, upstream.url, upstream.url, env=env) as p:
        oa = client(p)
        upstream.push(Turn(text="ok"), proxylib.openai_error(429, "slow down", "requests"), retrieve_first_exchange,
                      answer_from_tool_result)
        oa.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": f"My key is not {KEY[:6]}"}])
        with pytest.raises(openai.RateLimitError) as e:
            oa.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "again"}])
        bodies.append(e.value.response.text)
        list(oa.chat.completions.create(model=MODEL, messages=HISTORY, stream=True))
        bodies.append(proxylib.raw_request(p.url + "/v1/chat/completions", "POST", b"{oops",
                                           {"authorization": f"Bearer {KEY}"})[2].decode())
        logs = p.stderr
    with proxylib.Proxy(store, dead, dead, env=env) as p:
        bodies.append(proxylib.raw_request(p.url + "/v1/chat/completions", "POST",
                                           json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "x"}]}).encode(),
                                           {"authorization": f"Bearer {KEY}", "content-type": "application/json"})[2].decode())
        logs += p.stderr
    assert len(upstream.model_calls()) == 4
    assert proxylib.files_containing(store.parent, KEY.encode()) == []
    assert proxylib.files_containing(store.parent, KEY[8:].encode()) == []
    assert KEY[8:] not in logs
    for b in bodies:
        assert b and KEY[8:] not in b, b


def test_unknown_path_is_forwarded_with_the_clients_headers(proxy, upstream):
    oa = client(proxy, organization="org-scripted", project="proj_scripted")
    models = oa.models.list(extra_headers={"x-custom-trace": "t-1"})
    assert [m.id for m in models.data] == ["gpt-scripted"]
    [sent] = [r for r in upstream.requests if r.path == "/v1/models"]
    assert sent.method == "GET"
    assert sent.headers["openai-project"] == "proj_scripted"
    assert sent.headers["openai-organization"] == "org-scripted"
    assert sent.headers["x-custom-trace"] == "t-1"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.headers["host"] != proxy.host_port, "host is the upstream's, not the proxy's"

    status, _, body = proxylib.raw_request(proxy.url + "/v1/no/such/thing", headers={"authorization": f"Bearer {KEY}"})
    assert status == 404 and json.loads(body)["error"]["code"] == "not_found", "the upstream's status and body"


def test_headers_the_clients_connection_header_names_stay_on_its_hop(proxy, upstream):
    """Hop-by-hop headers (RFC 9110 §7.6.1): the standard set and every header named in the
    client's `Connection` header are not forwarded; end-to-end ones are."""
    upstream.push(Turn(text="one hop"))
    conn = http.client.HTTPConnection(proxy.host_port, timeout=30)
    conn.request("POST", "/v1/chat/completions",
                 json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}),
                 {"content-type": "application/json", "authorization": f"Bearer {KEY}",
                  "connection": "keep-alive, X-Hop-Secret", "x-hop-secret": "this hop only",
                  "keep-alive": "timeout=5", "x-end-to-end": "kept"})
    resp = conn.getresponse()
    assert resp.status == 200 and json.loads(resp.read())["choices"][0]["message"]["content"] == "one hop"
    conn.close()
    [sent] = upstream.model_calls()
    assert "x-hop-secret" not in sent.headers and "keep-alive" not in sent.headers, sent.headers
    assert sent.headers["x-end-to-end"] == "kept"


def test_paths_without_v1_are_accepted(proxy, upstream):
    upstream.push(Turn(text="no prefix"))
    oa = openai.OpenAI(base_url=proxy.url, api_key=KEY, max_retries=0)
    reply = oa.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "no prefix"
    assert "context_retrieve" in proxylib.tool_names(upstream.model_calls()[0].json)


def test_a_short_session_is_sent_whole_until_an_output_lives_in_its_blob(store, upstream):
    """The default settings: a short history costs less whole than layered, so it is forwarded as
    the client sent it, without the context tools. Once a tool output is too long to show whole,
    the prompt is layered and the context tools come, and stay."""
    upstream.push(Turn(text="It says: buy milk."), Turn(text="3,000 steps."), Turn(text="Step 2999."))
    history = [{"role": "system", "content": SYSTEM},
               {"role": "user", "content": "What is in notes.txt?"},
               {"role": "assistant", "content": None, "tool_calls": [{
                   "id": "call_n", "type": "function",
                   "function": {"name": "read_file", "arguments": json.dumps({"path": "notes.txt"})}}]},
               {"role": "tool", "tool_call_id": "call_n", "content": "buy milk"}]
    with proxylib.Proxy(store, upstream.url, upstream.url, config=None) as p:
        oa = client(p)
        reply = oa.chat.completions.create(model=MODEL, messages=history)
        history.append({"role": "assistant", "content": reply.choices[0].message.content})
        log = "".join(f"2026-11-24 step {i} finished in {i % 97} ms\n" for i in range(3000))
        history += [{"role": "user", "content": "And run.log?"},
                    {"role": "assistant", "content": None, "tool_calls": [{
                        "id": "call_l", "type": "function",
                        "function": {"name": "read_file", "arguments": json.dumps({"path": "run.log"})}}]},
                    {"role": "tool", "tool_call_id": "call_l", "content": log}]
        reply = oa.chat.completions.create(model=MODEL, messages=history)
        history += [{"role": "assistant", "content": reply.choices[0].message.content},
                    {"role": "user", "content": "The slowest step?"}]
        oa.chat.completions.create(model=MODEL, messages=history)
    first, second, third = upstream.model_calls()
    # Whole: the client's messages, and no tools at all (the client sent none).
    assert "tools" not in first.json, first.json.get("tools")
    assert [m["role"] for m in first.json["messages"]] == ["system", "user", "assistant", "tool"]
    assert first.json["messages"][-1]["content"].strip() == "buy milk"
    # Layered once the log lives in its blob: its digest, and the context tools from then on.
    for call in (second, third):
        assert proxylib.tool_names(call.json) == list(proxylib.CONTEXT_TOOLS), call.json.get("tools")
        assert "step 2999 finished" not in json.dumps(call.json["messages"])
    assert second.json["tools"] == third.json["tools"]


def test_passthrough_mode_forwards_the_request_untouched(proxy, upstream, store):
    upstream.push(Turn(text="untouched"))
    msgs = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Compare me."}]
    raw = client(proxy).chat.completions.with_raw_response.create(
        model=MODEL, messages=msgs, tools=[READ_FILE], extra_headers={"x-ctxproxy-mode": "passthrough"})
    assert raw.parse().choices[0].message.content == "untouched"
    [sent] = upstream.model_calls()
    assert sent.json == {"model": MODEL, "messages": msgs, "tools": [READ_FILE]}
    session = raw.headers.get("x-ctxproxy-session")
    assert session and session in proxylib.sessions(store), "a passthrough exchange is still recorded"


def test_healthz(proxy):
    status, headers, body = proxylib.raw_request(proxy.url + "/healthz")
    assert status == 200 and json.loads(body) == {"ok": True}


def test_token_is_required_when_given(store, upstream):
    token = "tok-" + secrets.token_hex(8)
    with proxylib.Proxy(store, upstream.url, upstream.url, extra=["--token", token]) as p:
        with pytest.raises(openai.APIStatusError) as e:
            client(p).chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
        assert e.value.status_code == 401 and token not in e.value.response.text
        assert upstream.requests == [], "nothing reaches the upstream without the token"
        upstream.push(Turn(text="let in"))
        reply = client(p, default_headers={"x-ctxproxy-token": token}).chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content == "let in"


# ------------------------------------------------------------ streams that do not end as streams end

@pytest.mark.parametrize("how", ["mid_event", "no_end", "close"])
def test_a_cut_stream_raises_and_its_retry_continues_the_session(proxy, upstream, store, how):
    """An upstream stream that stops before `[DONE]` reaches the client as an error the SDK raises,
    never as a finished reply; nothing of it is stored, so the client's retry of the same request
    continues the session instead of forking it."""
    marker = "CUTSHORT-" + secrets.token_hex(6)
    upstream.push(Turn(text="Noted."), proxylib.Cut(text=marker, how=how), Turn(text="The whole answer."))
    oa = client(proxy)
    history = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Plan the parser."}]
    first = oa.chat.completions.with_raw_response.create(model=MODEL, messages=history)
    session, _ = reply_ids(first)
    history += [{"role": "assistant", "content": "Noted."}, {"role": "user", "content": "Now write it."}]
    with pytest.raises(openai.APIError):
        collect(oa.chat.completions.create(model=MODEL, stream=True, messages=history))
    assert proxylib.files_containing(store.parent, marker.encode()) == []

    raw = oa.chat.completions.with_raw_response.create(model=MODEL, stream=True, messages=history)
    assert collect(raw.parse())["text"] == "The whole answer."
    assert reply_ids(raw)[0] == session, "the retry continues the session"
    assert proxylib.sessions(store).count("s-") == 1, proxylib.sessions(store)


def test_a_whole_reply_to_a_streamed_request_reaches_the_client_as_a_stream(proxy, upstream, store):
    """An upstream that answers a streamed request with its whole JSON reply: the client gets that
    reply as the API's stream (text, tool call, finish reason, usage) and the reply is stored."""
    upstream.push(Turn(text="Reading it whole.", tool_calls=[ToolCall("call_w1", "read_file", {"path": "a.rs"})],
                       input_tokens=21, output_tokens=4, whole=True))
    raw = client(proxy).chat.completions.with_raw_response.create(
        model=MODEL, stream=True, stream_options={"include_usage": True}, tools=[READ_FILE],
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Read a.rs"}])
    session, _ = reply_ids(raw)
    got = collect(raw.parse())
    assert got["text"] == "Reading it whole."
    assert got["calls"] == [{"id": "call_w1", "name": "read_file", "arguments": '{"path": "a.rs"}'}]
    assert got["finishes"] == ["tool_calls"]
    assert (got["usage"].prompt_tokens, got["usage"].completion_tokens) == (21, 4)
    stored = proxylib.recorded_exchange(store, session)
    assert "Reading it whole." in stored and "read_file" in stored, stored


# ------------------------------------------------------------ timeouts

def test_a_client_sending_its_headers_a_byte_at_a_time_is_cut_off(store, upstream):
    """`--header-timeout`: a client that trickles its request's headers is disconnected, even with
    a token required (its token is never read)."""
    with proxylib.Proxy(store, upstream.url, upstream.url, extra=["--token", "t0k", "--header-timeout", "1"]) as p:
        host, port = p.host_port.split(":")
        sock = socket.create_connection((host, int(port)), timeout=30)
        request = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Padding: " + b"a" * 10_000
        cut_off_after = None
        for sent, byte in enumerate(request):
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                cut_off_after = sent
                break
            time.sleep(0.01)
        sock.close()
        assert cut_off_after is not None, "the connection stayed open through 100 s of trickled headers"
        assert cut_off_after < len(request)


def test_a_body_slower_than_the_body_timeout_is_a_408(store, upstream):
    with proxylib.Proxy(store, upstream.url, upstream.url, extra=["--body-timeout", "1"]) as p:
        conn = http.client.HTTPConnection(p.host_port, timeout=30)
        conn.putrequest("POST", "/v1/chat/completions")
        conn.putheader("content-type", "application/json")
        conn.putheader("authorization", f"Bearer {KEY}")
        conn.putheader("content-length", "100000")
        conn.endheaders()
        conn.sock.settimeout(0.2)
        status = None
        for _ in range(1000):  # a byte every ~0.2 s at most, never the whole body
            try:
                conn.sock.sendall(b" ")
                reply = conn.sock.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                break
            status = reply.split(b"\r\n", 1)[0]
            body = reply.split(b"\r\n\r\n", 1)[1]
            break
        conn.close()
    assert status is not None and b" 408 " in status, status
    assert json.loads(body)["error"]["param"] == "body", body
    assert upstream.model_calls() == []


def test_an_upstream_silent_longer_than_its_idle_timeout_is_an_error_the_sdk_raises(store, upstream):
    upstream.push(proxylib.Stall(text="Starting to answer", every=60, timeout=60))
    with proxylib.Proxy(store, upstream.url, upstream.url, extra=["--upstream-idle-timeout", "1"]) as p:
        with pytest.raises(openai.APIError) as e:
            collect(client(p).chat.completions.create(
                model=MODEL, stream=True, messages=[{"role": "user", "content": "Answer slowly."}]))
    assert "upstream" in str(e.value).lower(), e.value
    assert proxylib.files_containing(store.parent, b"Starting to answer") == []


def test_sigterm_with_a_hung_upstream_exits_by_its_deadline_and_stores_nothing(store, upstream):
    """`--shutdown-timeout`: the requests in flight get that long to finish; a stream the upstream
    never ends is cancelled then, and nothing of its turn is stored."""
    marker = "HUNG-" + secrets.token_hex(6)
    upstream.push(proxylib.Stall(text=marker, every=60, timeout=60))
    p = proxylib.Proxy(store, upstream.url, upstream.url, extra=["--shutdown-timeout", "1"])
    with p:
        body = json.dumps({"model": MODEL, "stream": True,
                           "messages": [{"role": "user", "content": "Stream me something."}]})
        conn = http.client.HTTPConnection(p.host_port, timeout=30)
        conn.request("POST", "/v1/chat/completions", body,
                     {"content-type": "application/json", "authorization": f"Bearer {KEY}"})
        resp = conn.getresponse()
        seen = b""
        while marker[:7].encode() not in seen:
            seen += resp.read1(4096)
        p.proc.send_signal(signal.SIGTERM)
        code = p.proc.wait(30)  # far beyond the deadline: a proxy that waits for the upstream fails here
        conn.close()
    assert code == 0, p.stderr
    assert "cancelled" in p.stderr, p.stderr
    assert proxylib.files_containing(store.parent, marker.encode()) == []

"""`ctxproxy proxy` driven by the official `anthropic` Python SDK, streaming
and not, with the scripted upstream (tests/proxylib.py) standing in for the
model. Both ends are checked: what the SDK hands the caller and what the
upstream received."""

from __future__ import annotations

import http.client
import json
import re
import secrets
import socket
import threading
import time

import anthropic
import pytest

import proxylib
from proxylib import ToolCall, Turn

KEY = f"sk-ant-api03-ctxtest{secrets.token_hex(12)}"
MODEL = "claude-scripted"
SYSTEM = "You are a careful coding assistant. Answer briefly."
WRITE = {"name": "write_file", "description": "Write a file of the workspace.",
         "input_schema": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                          "required": ["path", "content"]}}
DEFERRED = {"name": "rare_tool", "description": "Rarely needed.", "defer_loading": True,
            "input_schema": {"type": "object", "properties": {}}}

# A 1x1 PNG.
PNG_1PX = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

FACT = "the staging database listens on port 47113"
HISTORY = [
    {"role": "user", "content": f"Note for later: {FACT}."},
    {"role": "assistant", "content": [{"type": "text", "text": "Noted."}]},
    {"role": "user", "content": "Which port does the staging database listen on?"},
]


def client(proxy, **kw) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=proxy.url, api_key=KEY, max_retries=0, timeout=60, **kw)


def reply_ids(headers) -> tuple[str, str]:
    session, prompt = headers.get("x-ctxproxy-session"), headers.get("x-ctxproxy-prompt")
    assert session and re.fullmatch(r"s-\S+", session), f"x-ctxproxy-session: {session!r}"
    assert prompt and re.fullmatch(r"p\d+", prompt), f"x-ctxproxy-prompt: {prompt!r}"
    return session, prompt


def system_text(body: dict) -> str:
    s = body.get("system", "")
    return s if isinstance(s, str) else "".join(b.get("text", "") for b in s)


def retrieve_first_exchange(rec: proxylib.Recorded) -> Turn:
    assert "context_retrieve" in proxylib.tool_names(rec.json), "context_retrieve is not offered"
    return Turn(text="Let me check my notes.",
                tool_calls=[ToolCall("toolu_ctx_1", "context_retrieve", {"ids": ["x1"], "format": "full"})],
                input_tokens=50, output_tokens=5)


def answer_from_tool_result(rec: proxylib.Recorded) -> Turn:
    last = rec.json["messages"][-1]
    assert last["role"] == "user", last
    results = [b for b in last["content"] if b.get("type") == "tool_result"]
    assert [r["tool_use_id"] for r in results] == ["toolu_ctx_1"], last
    assert "47113" in json.dumps(results[0]["content"]), results
    return Turn(text="Port 47113.", input_tokens=60, output_tokens=7)


# ------------------------------------------------------------------ replies

def test_text_reply_keeps_the_clients_request(proxy, upstream, store):
    upstream.push(Turn(text="Hello from upstream.", input_tokens=12, output_tokens=3))
    raw = client(proxy).messages.with_raw_response.create(
        model=MODEL, max_tokens=77, system=SYSTEM, tools=[WRITE],
        tool_choice={"type": "auto"}, metadata={"user_id": "u-1"},
        messages=[{"role": "user", "content": "Say hello."}],
        extra_headers={"anthropic-beta": "interleaved-thinking-2025-05-14"},
        extra_body={"temperature": 0.25, "top_k": 5})
    msg = raw.parse()
    assert [b.type for b in msg.content] == ["text"] and msg.content[0].text == "Hello from upstream."
    assert msg.stop_reason == "end_turn"
    assert (msg.usage.input_tokens, msg.usage.output_tokens) == (12, 3)
    session, prompt = reply_ids(raw.headers)

    [sent] = upstream.model_calls()
    assert sent.path == "/v1/messages"
    body = sent.json
    assert body["model"] == MODEL and body["max_tokens"] == 77
    assert body["temperature"] == 0.25 and body["top_k"] == 5
    assert body["tool_choice"] == {"type": "auto"} and body["metadata"] == {"user_id": "u-1"}
    assert system_text(body).startswith(SYSTEM)
    assert body["messages"][-1]["role"] == "user"
    assert "Say hello." in proxylib.user_texts(body), "the newest input is forwarded"
    assert any({k: v for k, v in t.items() if k != "cache_control"} == WRITE for t in body["tools"])
    assert {"context_retrieve", "context_search"} <= set(proxylib.tool_names(body))
    assert 1 <= proxylib.breakpoints(body) <= 4, "ctxproxy places cache breakpoints, at most 4"
    assert proxylib.sent_key(sent) == KEY
    assert sent.headers["anthropic-version"] and sent.headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"

    assert "Say hello." in proxylib.cli("show-prompt", session, prompt, store=store).stdout
    shown = proxylib.shown_prompt(store, session, prompt)
    assert shown["messages"] == proxylib.without_cache_control(body["messages"]), \
        "show-prompt shows exactly what was forwarded (less the breakpoints placed after)"


def test_system_as_blocks_and_client_breakpoints_are_kept(proxy, upstream):
    upstream.push(Turn(text="ok"))
    system = [{"type": "text", "text": SYSTEM}, {"type": "text", "text": "Project rules: no unsafe.",
                                                  "cache_control": {"type": "ephemeral"}}]
    client(proxy).messages.create(model=MODEL, max_tokens=50, system=system, tools=[WRITE, DEFERRED],
                                  messages=[{"role": "user", "content": "Hi."}])
    body = upstream.model_calls()[0].json
    assert body["system"][:2] == system, "the client's system blocks, its breakpoint included"
    assert proxylib.breakpoints(body) <= 4
    deferred = [t for t in body["tools"] if t.get("name") == "rare_tool"]
    assert deferred and "cache_control" not in deferred[0], "no breakpoint on a defer_loading tool"


@pytest.mark.parametrize("thinking_first", [True, False], ids=["thinking", "plain"])
def test_streamed_text_and_client_tool_use(proxy, upstream, thinking_first):
    upstream.push(Turn(text="Writing it.", thinking="The user wants a file." if thinking_first else None,
                       tool_calls=[ToolCall("toolu_01abc", "write_file", {"path": "a.txt", "content": "A"})],
                       input_tokens=40, output_tokens=9))
    an = client(proxy)
    with an.messages.with_streaming_response.create(
            model=MODEL, max_tokens=100, system=SYSTEM, tools=[WRITE], stream=True,
            messages=[{"role": "user", "content": "Write a.txt"}]) as raw:
        reply_ids(raw.headers)
        events = [json.loads(line[5:]) for line in raw.iter_lines() if line.startswith("data:")]
    types = [e["type"] for e in events]
    assert types[0] == "message_start" and types[-1] == "message_stop"
    assert types.count("message_start") == 1 and types.count("message_delta") == 1
    blocks = [e["content_block"] for e in events if e["type"] == "content_block_start"]
    assert [b["type"] for b in blocks] == (["thinking"] if thinking_first else []) + ["text", "tool_use"]
    assert blocks[-1]["id"] == "toolu_01abc" and blocks[-1]["name"] == "write_file"
    if thinking_first:
        sig = [e["delta"]["signature"] for e in events if e.get("delta", {}).get("type") == "signature_delta"]
        assert sig == ["sig-EqQBCgIYAhIM"], "the signature arrives verbatim"
    [sent] = upstream.model_calls()
    assert sent.json["stream"] is True

    # The same through the SDK's own stream helper.
    upstream.push(Turn(text="Again.", tool_calls=[ToolCall("toolu_02def", "write_file", {"path": "b", "content": "B"})],
                       input_tokens=30, output_tokens=4))
    with an.messages.stream(model=MODEL, max_tokens=100, system=SYSTEM, tools=[WRITE],
                            messages=[{"role": "user", "content": "Write b"}]) as s:
        final = s.get_final_message()
    assert [b.type for b in final.content] == ["text", "tool_use"]
    assert final.content[1].id == "toolu_02def" and final.content[1].input == {"path": "b", "content": "B"}
    assert (final.usage.input_tokens, final.usage.output_tokens) == (30, 4)


def test_a_short_session_is_sent_whole_until_an_output_lives_in_its_blob(store, upstream):
    """The default settings, streamed: a short history is forwarded as the client sent it (system,
    tool_use and tool_result blocks) without the context tools; once a tool output is too long to
    show whole, the prompt is layered and the context tools come, and stay."""
    upstream.push(Turn(text="It says: buy milk."), Turn(text="3,000 steps."), Turn(text="Step 2999."))
    history = [{"role": "user", "content": "What is in notes.txt?"},
               {"role": "assistant", "content": [
                   {"type": "tool_use", "id": "toolu_n", "name": "read_file", "input": {"path": "notes.txt"}}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_n", "content": "buy milk"}]}]
    log = "".join(f"2026-11-24 step {i} finished in {i % 97} ms\n" for i in range(3000))

    def ask(an) -> str:
        with an.messages.stream(model=MODEL, max_tokens=50, system=SYSTEM, messages=history) as s:
            return s.get_final_message().content[0].text

    with proxylib.Proxy(store, upstream.url, upstream.url, config=None) as p:
        an = client(p)
        history.append({"role": "assistant", "content": [{"type": "text", "text": ask(an)}]})
        history += [{"role": "user", "content": "And run.log?"},
                    {"role": "assistant", "content": [
                        {"type": "tool_use", "id": "toolu_l", "name": "read_file", "input": {"path": "run.log"}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_l", "content": log}]}]
        history.append({"role": "assistant", "content": [{"type": "text", "text": ask(an)}]})
        history.append({"role": "user", "content": "The slowest step?"})
        assert ask(an) == "Step 2999."
    first, second, third = upstream.model_calls()
    # Whole: the system prompt, the call and its result as blocks, no tools at all.
    assert "tools" not in first.json, first.json.get("tools")
    assert system_text(first.json) == SYSTEM
    assert [m["role"] for m in first.json["messages"]] == ["user", "assistant", "user"]
    assert [b["type"] for b in first.json["messages"][1]["content"]] == ["tool_use"]
    assert first.json["messages"][2]["content"][0]["type"] == "tool_result"
    assert "buy milk" in json.dumps(first.json["messages"][2])
    # Layered once the log lives in its blob: its digest, and the context tools from then on.
    for call in (second, third):
        assert proxylib.tool_names(call.json) == list(proxylib.CONTEXT_TOOLS), call.json.get("tools")
        assert "step 2999 finished" not in json.dumps(call.json["messages"])
    assert second.json["tools"] == third.json["tools"]


def test_stream_is_forwarded_as_it_arrives(proxy, upstream):
    """See the OpenAI test: the upstream holds the rest of its answer until
    the client has seen the first piece."""
    hold = threading.Event()
    turn = Turn(text="First piece. Then the rest of the answer.", piece=13, hold=hold, hold_after="First piece. ")
    upstream.push(turn)
    text = ""
    with client(proxy).messages.stream(model=MODEL, max_tokens=50,
                                       messages=[{"role": "user", "content": "Answer in pieces."}]) as s:
        for piece in s.text_stream:
            text += piece
            if text.startswith("First piece."):
                hold.set()
    assert turn.hold_released, "the first piece reached the client while the upstream was still streaming"
    assert text == turn.text


def test_image_blocks_reach_the_upstream_verbatim(proxy, upstream):
    upstream.push(Turn(text="A red dot."))
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_1PX}}
    client(proxy).messages.create(model=MODEL, max_tokens=20, system=SYSTEM, messages=[
        {"role": "user", "content": [image, {"type": "text", "text": "What is in this image?"}]}])
    blocks = [b for m in upstream.model_calls()[0].json["messages"] if isinstance(m["content"], list)
              for b in m["content"]]
    assert image in [{k: v for k, v in b.items() if k != "cache_control"} for b in blocks], \
        "the recent region keeps what ctxproxy cannot digest, verbatim"


def test_system_role_message_in_messages_is_accepted(proxy, upstream):
    """Claude Code 2.1 with its current models (beta per-turn-control) sends
    its environment notes as a `system`-role message inside `messages`, here
    as it does: after the first user message. The proxy must take it and
    the model must get its text."""
    upstream.push(Turn(text="ok"))
    notes = "# Environment\nPrimary working directory: /work/demo"
    client(proxy).messages.create(
        model=MODEL, max_tokens=20, system=SYSTEM,
        messages=[{"role": "user", "content": [{"type": "text", "text": "Say hello."}]},
                  {"role": "system", "content": [{"type": "text", "text": notes}]}],
        extra_headers={"anthropic-beta": "per-turn-control-2026-07-01"})
    [sent] = upstream.model_calls()
    texts = [b.get("text", "") for m in sent.json["messages"]
             for b in (m["content"] if isinstance(m["content"], list) else [{"text": m["content"]}])]
    assert any(notes in t for t in texts), ("the system message's text reaches the model", texts)
    assert sent.headers["anthropic-beta"] == "per-turn-control-2026-07-01"


@pytest.mark.parametrize("config", [proxylib.LAYERED, None], ids=["layered", "whole"])
def test_thinking_blocks_in_history_are_forwarded_verbatim(store, upstream, config):
    upstream.push(Turn(text="ok"))
    thinking = {"type": "thinking", "thinking": "Consider the ledger first.", "signature": "EqQBCkYIBRgCKkD-verbatim=="}
    redacted = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}
    history = [
        {"role": "user", "content": "Fix the ledger."},
        {"role": "assistant", "content": [thinking, redacted, {"type": "text", "text": "Reading it."},
                                          {"type": "tool_use", "id": "toolu_t1", "name": "write_file",
                                           "input": {"path": "l", "content": "x"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_t1", "content": "written"}]},
    ]
    with proxylib.Proxy(store, upstream.url, upstream.url, config=config) as p:
        client(p).messages.create(model=MODEL, max_tokens=50, system=SYSTEM, tools=[WRITE], messages=history,
                                  thinking={"type": "enabled", "budget_tokens": 1024})
    body = upstream.model_calls()[0].json
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    blocks = [proxylib.without_cache_control(b) for m in body["messages"] if isinstance(m["content"], list)
              for b in m["content"]]
    assert blocks.count(thinking) == 1 and blocks.count(redacted) == 1, \
        "thinking blocks and signatures kept verbatim, once"
    assert blocks.index(thinking) < blocks.index(redacted) < next(
        i for i, b in enumerate(blocks) if b.get("type") == "tool_use"), "in their place, before the tool call"


# ------------------------------------------------------------ context tools

@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_context_retrieve_is_answered_inside_the_proxy(proxy, upstream, store, stream):
    upstream.push(retrieve_first_exchange, answer_from_tool_result)
    an = client(proxy)
    if stream:
        with an.messages.with_streaming_response.create(model=MODEL, max_tokens=100, system=SYSTEM, tools=[WRITE],
                                                        messages=HISTORY, stream=True) as raw:
            session, _ = reply_ids(raw.headers)
            lines = list(raw.iter_lines())
        events = [json.loads(line[5:]) for line in lines if line.startswith("data:")]
        types = [e["type"] for e in events]
        assert types.count("message_start") == 1 and types.count("message_stop") == 1
        assert types.count("message_delta") == 1, "one final message_delta"
        blocks = [e["content_block"] for e in events if e["type"] == "content_block_start"]
        assert all(b["type"] != "tool_use" for b in blocks), f"no context tool block reaches the client: {blocks}"
        indexes = [e["index"] for e in events if e["type"] == "content_block_start"]
        assert indexes == list(range(len(indexes))), f"block indexes renumbered: {indexes}"
        text = "".join(e["delta"].get("text", "") for e in events if e["type"] == "content_block_delta")
        assert text.endswith("Port 47113.")
        assert "context_retrieve" not in "\n".join(lines)
        delta = next(e for e in events if e["type"] == "message_delta")
        assert delta["delta"]["stop_reason"] == "end_turn"
        assert delta["usage"]["output_tokens"] == 12, "output tokens summed over the rounds"
        if delta["usage"].get("input_tokens") is not None:
            assert delta["usage"]["input_tokens"] == 110, "input tokens summed over the rounds"
    else:
        raw = an.messages.with_raw_response.create(model=MODEL, max_tokens=100, system=SYSTEM, tools=[WRITE],
                                                   messages=HISTORY)
        session, _ = reply_ids(raw.headers)
        msg = raw.parse()
        assert all(b.type == "text" for b in msg.content), msg.content
        assert "".join(b.text for b in msg.content).endswith("Port 47113.")
        assert msg.stop_reason == "end_turn"
        assert (msg.usage.input_tokens, msg.usage.output_tokens) == (110, 12), "usage summed over the rounds"
    first, second = upstream.model_calls()
    assert first.json["tools"] == second.json["tools"]
    assert second.json.get("stream", False) is stream
    assert proxylib.breakpoints(first.json) <= 4 and proxylib.breakpoints(second.json) <= 4
    assert "Port 47113." in proxylib.cli("inspect", session, "x2", "--full", store=store).stdout


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_context_call_mixed_with_a_client_call_never_reaches_the_client(proxy, upstream, stream):
    """The model calls context_retrieve and the client's write_file in one
    turn: the client gets text and its own tool_use (id kept, blocks indexed
    0, 1) and no context call; its next request, carrying that turn and the
    tool result, goes on in the same session."""
    upstream.push(Turn(text="Checking.", tool_calls=[
        ToolCall("toolu_ctx_mixed", "context_retrieve", {"ids": ["x1"]}),
        ToolCall("toolu_write_1", "write_file", {"path": "a.txt", "content": "A"})]), Turn(text="Done."))
    an = client(proxy)
    if stream:
        with an.messages.with_streaming_response.create(model=MODEL, max_tokens=100, system=SYSTEM, tools=[WRITE],
                                                        messages=HISTORY, stream=True) as raw:
            session = reply_ids(raw.headers)[0]
            events = [json.loads(line[5:]) for line in raw.iter_lines() if line.startswith("data:")]
        starts = [(e["index"], e["content_block"]["type"]) for e in events if e["type"] == "content_block_start"]
        assert starts == [(0, "text"), (1, "tool_use")], starts
        tool = next(e["content_block"] for e in events if e["type"] == "content_block_start"
                    and e["content_block"]["type"] == "tool_use")
        assert tool["id"] == "toolu_write_1"
        assert next(e for e in events if e["type"] == "message_delta")["delta"]["stop_reason"] == "tool_use"
    else:
        raw = an.messages.with_raw_response.create(model=MODEL, max_tokens=100, system=SYSTEM, tools=[WRITE],
                                                   messages=HISTORY)
        session = reply_ids(raw.headers)[0]
        msg = raw.parse()
        assert [(b.type, getattr(b, "id", None)) for b in msg.content] == [("text", None), ("tool_use", "toolu_write_1")]
        assert msg.stop_reason == "tool_use"
    follow = HISTORY + [
        {"role": "assistant", "content": [{"type": "text", "text": "Checking."},
                                          {"type": "tool_use", "id": "toolu_write_1", "name": "write_file",
                                           "input": {"path": "a.txt", "content": "A"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_write_1", "content": "written"}]}]
    raw2 = an.messages.with_raw_response.create(model=MODEL, max_tokens=100, system=SYSTEM, tools=[WRITE],
                                                messages=follow)
    assert raw2.parse().content[0].text == "Done."
    assert reply_ids(raw2.headers)[0] == session, "the turn the client echoes back is the one recorded"


def test_keepalive_pings_while_an_internal_round_runs(proxy, upstream):
    """The second round's answer starts late; meanwhile the client's stream
    gets pings, so it does not time out."""
    def slow_answer(rec):
        time.sleep(3)
        return answer_from_tool_result(rec)

    upstream.push(retrieve_first_exchange, slow_answer)
    body = json.dumps({"model": MODEL, "max_tokens": 100, "stream": True, "system": SYSTEM, "messages": HISTORY})
    conn = http.client.HTTPConnection(proxy.host_port, timeout=30)
    conn.request("POST", "/v1/messages", body, {"content-type": "application/json", "x-api-key": KEY,
                                                 "anthropic-version": "2023-06-01"})
    resp = conn.getresponse()
    assert resp.status == 200
    stream = resp.read().decode()
    conn.close()
    # Between the first round's last text piece and the second round's
    # first block (whose own ping, sent by the upstream, does not count) the
    # internal round ran: a ping event or an SSE comment from the proxy must
    # be there.
    answer_block = stream.rindex("event: content_block_start", 0, stream.index("Port 47"))
    between = stream[stream.index("y notes"):answer_block]
    assert "event: ping" in between or "\n:" in between, between


def test_long_replayed_session_forwards_much_less_than_its_history(proxy, upstream, store):
    """The recorded coding session replayed in Anthropic shape (see the
    OpenAI test): one session, context tools byte-identical, at most 4
    breakpoints, far less forwarded than the history."""
    an = client(proxy)
    history: list[dict] = []
    sent_sizes, forwarded_sizes, sessions = [], [], set()
    for added, answer in proxylib.replay_steps(proxylib.fixture_exchanges("coding-strsim")):
        upstream.push(proxylib.turn_of(answer))
        history += proxylib.to_anthropic(added)
        raw = an.messages.with_raw_response.create(model=MODEL, max_tokens=100, system=SYSTEM, messages=history,
                                                   tools=[WRITE], extra_headers={"x-ctxproxy-budget": "4000"})
        got = raw.parse()
        assert [b.id for b in got.content if b.type == "tool_use"] == [c["id"] for c in answer.get("toolCalls", [])]
        session, prompt = reply_ids(raw.headers)
        sessions.add(session)
        sent_sizes.append(proxylib.history_bytes({"messages": history, "system": SYSTEM}))
        forwarded_sizes.append(proxylib.history_bytes(upstream.model_calls()[-1].json))
        history += proxylib.to_anthropic([answer])
    assert len(sessions) == 1, sessions
    calls = upstream.model_calls()
    assert len({json.dumps(proxylib.context_tool_defs(c.json)) for c in calls}) == 1
    assert all(proxylib.breakpoints(c.json) <= 4 for c in calls)
    assert forwarded_sizes[-1] * 4 < sent_sizes[-1], (forwarded_sizes[-1], sent_sizes[-1])
    assert sum(forwarded_sizes) * 2 < sum(sent_sizes)
    assert proxylib.shown_prompt(store, session, prompt)["messages"] == \
        proxylib.without_cache_control(calls[-1].json["messages"]), "show-prompt shows exactly what was forwarded"


def test_count_tokens_answers_for_the_assembled_prompt(proxy, upstream, store):
    """Claude Code counts the conversation it is about to send. Once the
    session holds the history, the count is for the assembled prompt (far
    fewer tokens than the history), and counting records nothing."""
    exchanges = proxylib.fixture_exchanges("coding-strsim")
    history = [m for ex in exchanges[:-1] for m in proxylib.to_anthropic(ex)] + proxylib.to_anthropic(exchanges[-1][:1])
    an = client(proxy)
    h = {"x-ctxproxy-budget": "4000"}
    upstream.push(Turn(text="ok"))
    an.messages.create(model=MODEL, max_tokens=10, system=SYSTEM, messages=history, extra_headers=h)
    before = proxylib.sessions(store)
    history += [{"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
                {"role": "user", "content": "And what should we do next?"}]
    via_proxy = an.messages.count_tokens(model=MODEL, system=SYSTEM, messages=history, extra_headers=h).input_tokens
    direct = anthropic.Anthropic(base_url=upstream.url, api_key=KEY, max_retries=0).messages.count_tokens(
        model=MODEL, system=SYSTEM, messages=history).input_tokens
    assert 0 < via_proxy * 3 < direct, (via_proxy, direct)
    [counted] = [r for r in upstream.requests if r.path == "/v1/messages/count_tokens"][:1]
    assert "And what should we do next?" in proxylib.user_texts(counted.json)
    assert len(upstream.model_calls()) == 1, "counting asks no model for an answer"
    assert proxylib.sessions(store) == before, "counting records nothing"


def test_session_from_claude_code_headers(proxy, upstream):
    """Claude Code's X-Claude-Code-Session-Id, or the session_id in its
    metadata.user_id, names the session: the same opening under two ids is
    two sessions; a conversation that goes on under its id stays in one."""
    upstream.push(*(Turn(text="a") for _ in range(5)))
    an = client(proxy)
    opening = [{"role": "user", "content": "One."}]
    later = opening + [{"role": "assistant", "content": [{"type": "text", "text": "a"}]},
                       {"role": "user", "content": "Two."}]

    def ask(msgs, header=None, metadata=None):
        kw = {"metadata": metadata} if metadata else {}
        raw = an.messages.with_raw_response.create(
            model=MODEL, max_tokens=10, messages=msgs,
            extra_headers={"x-claude-code-session-id": header} if header else {}, **kw)
        return reply_ids(raw.headers)[0]

    by_header = ask(opening, header="3c480776-e572-47ae-8a56-bf9b9428e6c4")
    assert ask(later, header="3c480776-e572-47ae-8a56-bf9b9428e6c4") == by_header
    other_header = ask(opening, header="0d7a2c51-0000-4000-8000-000000000001")
    meta = {"user_id": json.dumps({"device_id": "d", "account_uuid": "", "session_id": "sess-from-metadata"})}
    by_metadata = ask(opening, metadata=meta)
    assert ask(later, metadata=meta) == by_metadata
    assert len({by_header, other_header, by_metadata}) == 3
    assert upstream.model_calls()[-1].json["metadata"] == meta, "metadata is forwarded unchanged"


# ----------------------------------------------------------------- errors

def test_malformed_body_is_a_400_in_anthropic_shape(proxy, upstream):
    for body in (b"{not json", b'{"model": "m", "max_tokens": 5, "messages": {"role": "user"}}'):
        status, _, data = proxylib.raw_request(proxy.url + "/v1/messages", "POST", body,
                                               {"content-type": "application/json", "x-api-key": KEY})
        assert status == 400, data
        err = json.loads(data)
        assert err["type"] == "error" and err["error"]["type"] == "invalid_request_error" and err["error"]["message"]
        assert KEY not in data.decode()
    assert upstream.model_calls() == []


def test_upstream_down_is_a_502_naming_it(store, upstream):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    with proxylib.Proxy(store, upstream.url, dead) as p:
        with pytest.raises(anthropic.APIStatusError) as e:
            client(p).messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    assert e.value.status_code == 502
    assert e.value.body["type"] == "error" and dead in e.value.body["error"]["message"]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("status, type_", [(429, "rate_limit_error"), (500, "api_error"), (529, "overloaded_error")])
def test_upstream_error_is_passed_through(proxy, upstream, stream, status, type_):
    fail = proxylib.anthropic_error(status, type_, f"scripted {status}")
    fail.headers = {"retry-after": "3", "request-id": fail.body["request_id"]}
    upstream.push(fail)
    with pytest.raises(anthropic.APIStatusError) as e:
        r = client(proxy).messages.create(model=MODEL, max_tokens=5, stream=stream,
                                          messages=[{"role": "user", "content": "hi"}])
        if stream:
            list(r)
    assert e.value.status_code == status
    assert e.value.body == fail.body
    assert e.value.response.headers.get("retry-after") == "3"


def test_error_event_mid_stream_reaches_the_client(proxy, upstream, store):
    """An upstream that overloads mid-answer sends an error event after its
    200: the client gets that event as sent, and no half answer is stored."""
    marker = "BROKENOFF-" + secrets.token_hex(6)
    error = proxylib.StreamError(text=marker)
    upstream.push(error)
    with client(proxy).messages.with_streaming_response.create(
            model=MODEL, max_tokens=100, stream=True,
            messages=[{"role": "user", "content": "Start answering."}]) as raw:
        assert raw.status_code == 200
        lines = list(raw.iter_lines())
    events = [json.loads(line[5:]) for line in lines if line.startswith("data:")]
    assert events[-1] == error.error, "the upstream's error event, as it sent it"
    assert "event: error" in lines
    assert "message_stop" not in [e["type"] for e in events]
    assert proxylib.files_containing(store.parent, marker.encode()) == []


def test_client_disconnect_mid_stream_records_nothing_half_written(proxy, upstream, store):
    marker = "HALFWRITTEN-" + secrets.token_hex(6)
    upstream.push(proxylib.Stall(text=marker))
    body = json.dumps({"model": MODEL, "max_tokens": 100, "stream": True,
                       "messages": [{"role": "user", "content": "Stream me something long."}]})
    conn = http.client.HTTPConnection(proxy.host_port, timeout=30)
    conn.request("POST", "/v1/messages", body, {"content-type": "application/json", "x-api-key": KEY,
                                                 "anthropic-version": "2023-06-01"})
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
    upstream.push(Turn(text="fine"))
    msg = client(proxy).messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "Next."}])
    assert msg.content[0].text == "fine"
    assert proxylib.files_containing(store.parent, marker.encode()) == []


# ------------------------------------------------------------ keys, headers, passthrough

def test_key_is_never_stored_logged_or_shown(store, upstream):
    env = proxylib.env_without_proxies() | {"RUST_LOG": "trace"}
    bodies = []
    with proxylib.Proxy(store, upstream.url, upstream.url, env=env) as p:
        an = client(p)
        upstream.push(Turn(text="ok"), proxylib.anthropic_error(429, "rate_limit_error", "slow"),
                      retrieve_first_exchange, answer_from_tool_result)
        an.messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "hello"}])
        with pytest.raises(anthropic.RateLimitError) as e:
            an.messages.create(model=MODEL, max_tokens=5, messages=[{"role": "user", "content": "again"}])
        bodies.append(e.value.response.text)
        with an.messages.stream(model=MODEL, max_tokens=50, messages=HISTORY) as s:
            s.get_final_message()
        an.messages.count_tokens(model=MODEL, messages=HISTORY)
        bodies.append(proxylib.raw_request(p.url + "/v1/messages", "POST", b"{oops", {"x-api-key": KEY})[2].decode())
        logs = p.stderr
    assert proxylib.files_containing(store.parent, KEY[7:].encode()) == []
    assert KEY[7:] not in logs
    for b in bodies:
        assert b and KEY[7:] not in b, b


def test_unknown_path_is_forwarded_with_the_clients_headers(proxy, upstream):
    an = client(proxy)
    page = an.models.list(extra_headers={"anthropic-beta": "some-beta-2026-01-01"})
    assert [m.id for m in page.data] == ["claude-scripted"]
    [sent] = [r for r in upstream.requests if r.path == "/v1/models"]
    assert proxylib.sent_key(sent) == KEY and sent.headers["anthropic-beta"] == "some-beta-2026-01-01"


def test_passthrough_mode_forwards_the_request_untouched(proxy, upstream, store):
    upstream.push(Turn(text="untouched"))
    msgs = [{"role": "user", "content": "Compare me."}]
    raw = client(proxy).messages.with_raw_response.create(
        model=MODEL, max_tokens=9, system=SYSTEM, messages=msgs, extra_headers={"x-ctxproxy-mode": "passthrough"})
    assert raw.parse().content[0].text == "untouched"
    [sent] = upstream.model_calls()
    assert sent.json == {"model": MODEL, "max_tokens": 9, "system": SYSTEM, "messages": msgs}
    session = raw.headers.get("x-ctxproxy-session")
    assert session and session in proxylib.sessions(store)


def test_a_sub_agent_under_the_same_session_id_is_a_child_call(proxy, upstream, store):
    """A request under the main conversation's session id with a system
    prompt of its own (Claude Code's Task sub-agents) opens a child session of
    the main one (depth 1, its first user message the query); its later
    requests continue that child, and the main conversation goes on in its own."""
    upstream.push(*(Turn(text=t) for t in ("Main one.", "Searching.", "It is in config/db.toml.", "Main two.")))
    an = client(proxy)
    header = {"x-claude-code-session-id": "7f1e0c2a-1111-4000-8000-00000000abcd"}
    sub_system = "You are a search sub-agent. Report file paths only."
    task = "Find where the staging database port is configured."

    def ask(system, msgs):
        raw = an.messages.with_raw_response.create(model=MODEL, max_tokens=20, system=system, messages=msgs,
                                                   extra_headers=header)
        return reply_ids(raw.headers)

    main_opening = [{"role": "user", "content": f"Note for later: {FACT}."}]
    main, _ = ask(SYSTEM, main_opening)
    sub, p1 = ask(sub_system, [{"role": "user", "content": task}])
    assert sub != main
    l0 = json.dumps(upstream.model_calls()[-1].json["messages"], ensure_ascii=False)
    assert f"Call: depth 1 of max 2 · iteration 1 · called by {main} after x1" in l0, l0
    assert f"Query: {task}" in l0, l0
    sub_again, p2 = ask(sub_system, [{"role": "user", "content": task},
                                     {"role": "assistant", "content": [{"type": "text", "text": "Searching."}]},
                                     {"role": "user", "content": "Only the path, please."}])
    assert (sub_again, p2) == (sub, "p2"), "the sub-agent's next request continues its child session"
    main_again, _ = ask(SYSTEM, main_opening + [{"role": "assistant", "content": [{"type": "text", "text": "Main one."}]},
                                                {"role": "user", "content": "Which port was it?"}])
    assert main_again == main
    record = proxylib.shown_prompt(store, sub, p1)
    assert record["state"]["call"]["depth"] == 1 and record["state"]["call"]["parentSessionId"] == main, record["state"]
    assert proxylib.shown_prompt(store, main, "p2")["state"]["call"]["depth"] == 0


def test_after_a_restart_a_new_sub_agent_is_still_a_child_call(store, upstream):
    """The main branch's system prompt is read back from its newest prompt record."""
    upstream.push(*(Turn(text=t) for t in ("Main one.", "Found it.")))
    header = {"x-claude-code-session-id": "7f1e0c2a-2222-4000-8000-00000000abcd"}

    def ask(p, system, msgs):
        raw = client(p).messages.with_raw_response.create(model=MODEL, max_tokens=20, system=system,
                                                          messages=msgs, extra_headers=header)
        return reply_ids(raw.headers)[0]

    with proxylib.Proxy(store, upstream.url, upstream.url) as p:
        main = ask(p, SYSTEM, [{"role": "user", "content": f"Note for later: {FACT}."}])
    with proxylib.Proxy(store, upstream.url, upstream.url) as p:
        sub = ask(p, "You are a search sub-agent.", [{"role": "user", "content": "Find the port setting."}])
    assert sub != main
    state = proxylib.shown_prompt(store, sub, "p1")["state"]
    assert (state["call"]["depth"], state["call"].get("parentSessionId")) == (1, main), state


# ------------------------------------------------------------ streams that do not end as streams end

@pytest.mark.parametrize("how", ["mid_event", "no_end", "close"])
def test_a_cut_stream_raises_and_its_retry_continues_the_session(proxy, upstream, store, how):
    """An upstream stream that stops before `message_stop` reaches the client as an `error` event the
    SDK raises, never as a finished message; nothing of it is stored, so the client's retry of the
    same request continues the session instead of forking it."""
    marker = "CUTSHORT-" + secrets.token_hex(6)
    upstream.push(Turn(text="Noted."), proxylib.Cut(text=marker, how=how), Turn(text="The whole answer."))
    an = client(proxy)
    history = [{"role": "user", "content": "Plan the parser."}]
    first = an.messages.with_raw_response.create(model=MODEL, max_tokens=100, system=SYSTEM, messages=history)
    session, _ = reply_ids(first.headers)
    history += [{"role": "assistant", "content": "Noted."}, {"role": "user", "content": "Now write it."}]
    with pytest.raises(anthropic.APIError):
        with an.messages.stream(model=MODEL, max_tokens=100, system=SYSTEM, messages=history) as s:
            s.get_final_message()
    assert proxylib.files_containing(store.parent, marker.encode()) == []

    with an.messages.with_streaming_response.create(model=MODEL, max_tokens=100, system=SYSTEM, stream=True,
                                                    messages=history) as raw:
        assert reply_ids(raw.headers)[0] == session, "the retry continues the session"
        events = [json.loads(line[5:]) for line in raw.iter_lines() if line.startswith("data:")]
    assert "".join(e["delta"].get("text", "") for e in events if e["type"] == "content_block_delta") \
        == "The whole answer."
    assert proxylib.sessions(store).count("s-") == 1, proxylib.sessions(store)


def test_a_whole_reply_to_a_streamed_request_reaches_the_client_as_a_stream(proxy, upstream, store):
    """An upstream that answers a streamed request with its whole JSON message: the client gets it
    as the API's events (the SDK's stream helper puts the message together) and it is stored."""
    upstream.push(Turn(text="Writing it whole.", thinking="A short plan.",
                       tool_calls=[ToolCall("toolu_w1", "write_file", {"path": "a.txt", "content": "A"})],
                       input_tokens=21, output_tokens=4, whole=True))
    with client(proxy).messages.stream(model=MODEL, max_tokens=100, system=SYSTEM, tools=[WRITE],
                                       messages=[{"role": "user", "content": "Write a.txt"}]) as s:
        final = s.get_final_message()
        session, _ = reply_ids(s.response.headers)
    assert [b.type for b in final.content] == ["thinking", "text", "tool_use"]
    assert final.content[0].signature == "sig-EqQBCgIYAhIM"
    assert final.content[1].text == "Writing it whole."
    assert final.content[2].id == "toolu_w1" and final.content[2].input == {"path": "a.txt", "content": "A"}
    assert final.stop_reason == "tool_use"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (21, 4)
    stored = proxylib.recorded_exchange(store, session)
    assert "Writing it whole." in stored and "write_file" in stored, stored


# ------------------------------------------------------------ the whole shape, as sent

def texts(messages: list[dict]) -> list[tuple[str, list[str]]]:
    """Each message's role and texts (a string content, or each text block's text)."""
    return [(m["role"], [m["content"]] if isinstance(m["content"], str)
             else [b.get("text", "") for b in m["content"] if b.get("type") == "text"]) for m in messages]


def test_a_session_sent_whole_is_forwarded_byte_for_byte(store, upstream):
    """While a session is sent whole, each message reaches the upstream exactly as the client sent
    it: leading whitespace kept, no newline added, a prefill `{` as it is."""
    upstream.push(Turn(text="  Indented answer."), Turn(text='"ok": true}'))
    history = [{"role": "user", "content": "  Two spaces first, no newline last"}]
    with proxylib.Proxy(store, upstream.url, upstream.url, config=None) as p:
        an = client(p)
        an.messages.create(model=MODEL, max_tokens=50, system=SYSTEM, messages=history)
        history += [{"role": "assistant", "content": [{"type": "text", "text": "  Indented answer."}]},
                    {"role": "user", "content": [{"type": "text", "text": "\tA tab first.\n\n"}]},
                    {"role": "assistant", "content": "{"}]
        an.messages.create(model=MODEL, max_tokens=50, system=SYSTEM, messages=history)
    first, second = upstream.model_calls()
    assert "tools" not in second.json, "the session is still sent whole"
    assert texts(first.json["messages"]) == texts(history[:1])
    assert texts(second.json["messages"]) == texts(history)


def test_a_session_sent_whole_stays_whole_after_a_restart(store, upstream):
    """The choice between the whole history and the layers survives a restart on the same store:
    a short session sent whole goes on being sent whole, without the context tools."""
    upstream.push(Turn(text="Noted."), Turn(text="47113."))
    history = [{"role": "user", "content": "Remember: the staging port is 47113."}]
    with proxylib.Proxy(store, upstream.url, upstream.url, config=None) as p:
        client(p).messages.create(model=MODEL, max_tokens=50, system=SYSTEM, messages=history)
    history += [{"role": "assistant", "content": [{"type": "text", "text": "Noted."}]},
                {"role": "user", "content": "Which port?"}]
    with proxylib.Proxy(store, upstream.url, upstream.url, config=None) as p:
        client(p).messages.create(model=MODEL, max_tokens=50, system=SYSTEM, messages=history)
    first, second = upstream.model_calls()
    assert "tools" not in first.json and "tools" not in second.json, second.json.get("tools")
    assert texts(second.json["messages"]) == texts(history)
    assert proxylib.sessions(store).count("s-") == 1, proxylib.sessions(store)


# ------------------------------------------------------------ secrets, forwarding side

AWS_ID = "AKIA" + "Q3EGRZ7TYXNV4K2M"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "Q3EGRZ7TYX"
SECRET_SYSTEM = f"{SYSTEM} Deploy with AWS_ACCESS_KEY_ID={AWS_ID} aws_secret_access_key = {AWS_SECRET}"


@pytest.mark.parametrize("whole", [True, False])
def test_secrets_in_the_system_prompt_are_masked_upstream_and_in_the_record(store, upstream, whole):
    """What ctxproxy forwards is masked as what it stores is: the system prompt included, in the
    whole shape and the layered one, and the prompt record keeps the masked text."""
    upstream.push(Turn(text="Deployed."))
    config = None if whole else proxylib.LAYERED
    with proxylib.Proxy(store, upstream.url, upstream.url, config=config) as p:
        raw = client(p).messages.with_raw_response.create(
            model=MODEL, max_tokens=50, system=[{"type": "text", "text": SECRET_SYSTEM}],
            messages=[{"role": "user", "content": f"My key id is {AWS_ID}; deploy."}])
        session, prompt = reply_ids(raw.headers)
    [sent] = upstream.model_calls()
    assert ("tools" not in sent.json) == whole
    for secret in (AWS_ID, AWS_SECRET):
        assert secret not in sent.body.decode(), "forwarded unmasked"
        assert proxylib.files_containing(store.parent, secret.encode()) == []
    assert "[secret:aws-access-key]" in system_text(sent.json)
    assert "[secret:aws-secret-key]" in system_text(sent.json)
    shown = proxylib.shown_prompt(store, session, prompt)
    assert AWS_ID not in json.dumps(shown) and "[secret:aws-access-key]" in shown["system"]


def test_with_redact_secrets_off_the_system_prompt_is_forwarded_as_sent(store, upstream):
    upstream.push(Turn(text="Deployed."))
    with proxylib.Proxy(store, upstream.url, upstream.url, config={"redactSecrets": False}) as p:
        client(p).messages.create(model=MODEL, max_tokens=50, system=SECRET_SYSTEM,
                                  messages=[{"role": "user", "content": "Deploy."}])
    [sent] = upstream.model_calls()
    assert system_text(sent.json) == SECRET_SYSTEM


# ------------------------------------------------------------ what is sent is counted

CLAUDE_CODE_SYSTEM = "You are Claude Code, Anthropic's CLI for coding. " + " ".join(
    f"Rule {i}: keep each edit small, run the tests after it, and say what changed." for i in range(300))
CLAUDE_CODE_TOOLS = [
    {"name": f"tool_{i}", "description": f"Tool {i}: reads, edits or runs something in the workspace. " * 6,
     "input_schema": {"type": "object", "required": ["path"], "properties": {
         "path": {"type": "string", "description": "A workspace path."},
         "limit": {"type": "integer", "description": "How many lines at most."}}}}
    for i in range(20)]


def test_the_clients_tool_definitions_are_counted_exactly_in_the_record(proxy, upstream, store):
    """A Claude Code-shaped request (a long system prompt, 20 tools, a short history): the prompt
    record counts the client's tool definitions as forwarded, with the real tokenizer, apart
    (`clientToolsTokens`) and in its total, which is then everything sent."""
    import bpe_openai
    o200k = bpe_openai.get_encoding("o200k_base")
    upstream.push(Turn(text="With tools."), Turn(text="Without tools."))
    an = client(proxy)
    messages = [{"role": "user", "content": "Fix the failing test in src/lib.rs."}]
    records = []
    for tools, session in ((CLAUDE_CODE_TOOLS, "with-tools"), (None, "without-tools")):
        raw = an.messages.with_raw_response.create(
            model=MODEL, max_tokens=50, system=CLAUDE_CODE_SYSTEM, messages=messages,
            extra_headers={"x-ctxproxy-session": session}, **({"tools": tools} if tools else {}))
        records.append(proxylib.shown_prompt(store, *reply_ids(raw.headers)))
    with_tools, without_tools = records
    sent = upstream.model_calls()[0].json
    client_tools = [proxylib.without_cache_control(t) for t in sent["tools"]
                    if t["name"] not in proxylib.CONTEXT_TOOLS]
    assert [t["name"] for t in client_tools] == [t["name"] for t in CLAUDE_CODE_TOOLS]
    forwarded = json.dumps(client_tools, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    assert with_tools["clientToolsTokens"] == len(o200k.encode_ordinary(forwarded))
    assert without_tools["clientToolsTokens"] == 0
    assert with_tools["tokens"]["total"] == without_tools["tokens"]["total"] + with_tools["clientToolsTokens"], \
        "the total is everything sent: the same request without the tools, plus them"
    shown = proxylib.cli("show-prompt", *reply_ids_of(with_tools), store=store).stdout
    assert f"{with_tools['tokens']['total']} tokens" in shown
    assert f"client tools: {with_tools['clientToolsTokens']} tokens" in shown


def reply_ids_of(record: dict) -> tuple[str, str]:
    return record["sessionId"], record["promptId"]

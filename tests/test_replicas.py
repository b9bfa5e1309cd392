"""Two `ctxproxy proxy` processes on one SQLite store, as two replicas behind a load balancer: any
replica serves any request of a conversation, and each turn is recorded exactly once, however
the requests are spread. What a process keeps of a conversation is a cache the store corrects.
Many clients spread at random over two replicas: tests/test_load.py (tests/load/proxy_load.py)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import pathlib
import sqlite3
import threading
import urllib.request

import proxylib
from proxylib import Turn

KEY = {"authorization": "Bearer sk-replicas-test-0123456789abcdef"}


def answer_to_last_question(rec: proxylib.Recorded) -> Turn:
    """The scripted model's answer names the question it answers, so a test can tell turns apart
    whatever order concurrent requests reach the upstream in."""
    asked = [m for m in rec.json["messages"] if m["role"] == "user"][-1]["content"]
    return Turn(text=f"answer to: {asked}")


def chat(proxy: proxylib.Proxy, messages: list[dict]) -> dict:
    body = {"model": "gpt-scripted", "messages": messages}
    headers = {"content-type": "application/json", **KEY}
    request = urllib.request.Request(proxy.url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers=headers)
    with urllib.request.urlopen(request, timeout=60) as r:
        return json.load(r)


def stored_messages(store: pathlib.Path) -> dict[str, list[tuple[str, str]]]:
    """Each proxied session's messages as stored, in order: (role, content)."""
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        out: dict[str, list[tuple[str, str]]] = {}
        for session, role, content in db.execute(
                "SELECT m.session_id, m.role, m.content FROM messages m JOIN sessions s ON s.id = m.session_id "
                "WHERE s.edge = 'proxy' ORDER BY m.session_id, m.seq, m.idx"):
            out.setdefault(session, []).append((role, content))
        return out
    finally:
        db.close()


def converse(replicas: list[proxylib.Proxy], questions: list[str], pick) -> list[dict]:
    """One client's conversation: each request resends the whole history, to the replica `pick`
    chooses for that turn; returns the history."""
    history: list[dict] = [{"role": "system", "content": "You are a careful assistant."}]
    for turn, question in enumerate(questions):
        history.append({"role": "user", "content": question})
        reply = chat(replicas[pick(turn)], history)
        history.append({"role": "assistant", "content": reply["choices"][0]["message"]["content"]})
    return history


@contextlib.contextmanager
def replicas(store: pathlib.Path, upstream: proxylib.ScriptedUpstream, n: int = 2):
    with contextlib.ExitStack() as stack:
        yield [stack.enter_context(proxylib.Proxy(store, upstream.url, upstream.url)) for _ in range(n)]


def expected(history: list[dict]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in history[1:]]


def test_a_conversation_alternating_between_two_replicas_is_one_session_with_each_turn_once(store, upstream):
    questions = [f"question {i}: what does step {i} of the build do?" for i in range(12)]
    upstream.push(*[answer_to_last_question] * len(questions))
    with replicas(store, upstream) as (a, b):
        history = converse([a, b], questions, pick=lambda turn: turn % 2)
    stored = stored_messages(store)
    assert len(stored) == 1, f"one conversation, {len(stored)} sessions: {list(stored)}"
    [messages] = stored.values()
    assert messages == expected(history)


def test_both_replicas_restarted_the_conversation_continues_in_its_session(store, upstream):
    first = [f"first sitting, question {i}" for i in range(3)]
    upstream.push(*[answer_to_last_question] * 6)
    with replicas(store, upstream) as (a, b):
        history = converse([a, b], first, pick=lambda turn: turn % 2)
    with replicas(store, upstream) as (a, b):
        history.append({"role": "user", "content": "after the restart, question 3"})
        reply = chat(b, history)
        history.append({"role": "assistant", "content": reply["choices"][0]["message"]["content"]})
        history.append({"role": "user", "content": "after the restart, question 4"})
        reply = chat(a, history)
        history.append({"role": "assistant", "content": reply["choices"][0]["message"]["content"]})
    stored = stored_messages(store)
    assert list(stored.values()) == [expected(history)]


def test_a_retry_on_the_other_replica_after_a_failed_turn_continues_the_session(store, upstream):
    """The first replica's upstream call fails: nothing of that turn is kept, and the client's
    retry on the second replica is the same conversation's turn, stored once."""
    upstream.push(answer_to_last_question, proxylib.Fail(529, {"error": {"message": "overloaded"}}),
                  answer_to_last_question)
    with replicas(store, upstream) as (a, b):
        history = converse([a, b], ["set up the workspace"], pick=lambda _: 0)
        history.append({"role": "user", "content": "now run the tests"})
        body = {"model": "gpt-scripted", "messages": history}
        status, _, _ = proxylib.raw_request(a.url + "/v1/chat/completions", "POST", json.dumps(body).encode(),
                                            {"content-type": "application/json", **KEY})
        assert status == 529
        reply = chat(b, history)
        history.append({"role": "assistant", "content": reply["choices"][0]["message"]["content"]})
    assert list(stored_messages(store).values()) == [expected(history)]


def test_concurrent_requests_of_one_conversation_on_two_replicas_store_each_message_once(store, upstream):
    """The same request sent to both replicas at once (a client's retry racing its first try), and
    the model answers each differently: the history they share is stored once, and each answer
    is kept, the one recorded second on a branch of its own (as one process does)."""
    numbered = iter(range(100))

    def numbered_answer(rec: proxylib.Recorded) -> Turn:
        return Turn(text=f"{answer_to_last_question(rec).text} (answer {next(numbered)})")

    upstream.push(*[numbered_answer] * 3)
    with replicas(store, upstream) as (a, b):
        history = converse([a, b], ["first question"], pick=lambda _: 0)
        history.append({"role": "user", "content": "second question"})
        barrier = threading.Barrier(2)

        def send(replica):
            barrier.wait()
            return chat(replica, history)

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            replies = list(pool.map(send, [a, b]))
    shared = expected(history)
    answers = [("assistant", r["choices"][0]["message"]["content"]) for r in replies]
    assert answers[0] != answers[1]
    assert sorted(stored_messages(store).values()) == sorted([shared + [answers[0]], shared + [answers[1]]])


def test_a_replica_killed_mid_stream_leaves_no_half_turn_and_the_retry_continues_on_the_other(store, upstream):
    upstream.push(answer_to_last_question, proxylib.Stall(text="half an answer"), answer_to_last_question)
    with replicas(store, upstream) as (a, b):
        history = converse([a, b], ["build the parser"], pick=lambda _: 0)
        history.append({"role": "user", "content": "now test the parser"})
        body = {"model": "gpt-scripted", "messages": history, "stream": True}
        request = urllib.request.Request(a.url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                         headers={"content-type": "application/json", **KEY})
        with urllib.request.urlopen(request, timeout=60) as streamed:
            seen = b""
            while b"half" not in seen:
                seen += streamed.read1(4096)
            a.proc.kill()
            a.proc.wait()
        reply = chat(b, history)
        history.append({"role": "assistant", "content": reply["choices"][0]["message"]["content"]})
    assert list(stored_messages(store).values()) == [expected(history)]

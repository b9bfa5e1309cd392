"""docs/TEAM.md's gateway, run as the page says: its nginx configuration in front of two `ctxproxy
proxy` replicas on one store with a tokens file, two people talking through it with the `openai`
SDK while one replica, then the other, is stopped. Each person's conversation is one session of
their own tenant holding each turn once."""

from __future__ import annotations

import contextlib
import pathlib
import re
import secrets
import socket
import sqlite3
import subprocess
import time

import openai
import pytest

import ctxlib
import proxylib
from test_replicas import answer_to_last_question

TEAM_MD = ctxlib.REPO / "docs" / "TEAM.md"
PEOPLE = ("ana", "bo")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nginx_conf(replica_ports: tuple[int, int], port: int) -> str:
    """The page's nginx configuration with this test's ports; every address it names is replaced,
    so the page and the test cannot drift apart unnoticed."""
    [conf] = re.findall(r"```nginx\n(.*?)```", TEAM_MD.read_text(), re.S)
    for doc, ours in (("server 127.0.0.1:8801 ", f"server 127.0.0.1:{replica_ports[0]} "),
                      ("server 127.0.0.1:8802 ", f"server 127.0.0.1:{replica_ports[1]} "),
                      ("listen 8787;", f"listen 127.0.0.1:{port};")):
        assert conf.count(doc) == 1, f"docs/TEAM.md's nginx block no longer has {doc!r}"
        conf = conf.replace(doc, ours)
    return conf


@contextlib.contextmanager
def nginx(conf: str, prefix: pathlib.Path, port: int):
    prefix.mkdir()
    (prefix / "nginx.conf").write_text(conf)
    proc = subprocess.Popen(
        ["nginx", "-p", str(prefix), "-c", str(prefix / "nginx.conf"),
         "-g", f"daemon off; pid {prefix / 'nginx.pid'}; error_log {prefix / 'error.log'};"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            assert proc.poll() is None, f"nginx stopped: {proc.stderr.read().decode()}"
            assert time.monotonic() < deadline, "nginx did not listen"
            time.sleep(0.05)
        yield
    finally:
        proc.terminate()
        proc.wait(10)


def stored_by_tenant(store: pathlib.Path) -> dict[str, list[list[tuple[str, str]]]]:
    """Each tenant's proxied sessions, each as its messages in order: (role, content)."""
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        sessions: dict[str, dict[str, list]] = {}
        for tenant, session, role, content in db.execute(
                "SELECT s.tenant, m.session_id, m.role, m.content FROM messages m "
                "JOIN sessions s ON s.id = m.session_id WHERE s.edge = 'proxy' "
                "ORDER BY m.session_id, m.seq, m.idx"):
            sessions.setdefault(tenant, {}).setdefault(session, []).append((role, content))
        return {tenant: list(by_id.values()) for tenant, by_id in sessions.items()}
    finally:
        db.close()


@pytest.fixture
def tokens() -> dict[str, str]:
    return {name: secrets.token_hex(16) for name in PEOPLE}


def test_two_people_through_nginx_and_two_replicas_each_get_one_session_of_their_own(
        store, upstream, tokens, tmp_path):
    tokens_file = tmp_path / "team.tokens"
    tokens_file.write_text("".join(f"{name} {token}\n" for name, token in tokens.items()))
    ports = (free_port(), free_port())
    gateway = free_port()

    def replica(i: int) -> proxylib.Proxy:
        return proxylib.Proxy(store, upstream.url, upstream.url, listen=f"127.0.0.1:{ports[i]}",
                              extra=["--tokens", str(tokens_file)], env=proxylib.env_without_proxies())

    clients = {name: openai.OpenAI(base_url=f"http://127.0.0.1:{gateway}/v1", api_key=f"sk-{name}-own-key",
                                   max_retries=0, default_headers={"x-ctxproxy-token": token})
               for name, token in tokens.items()}
    histories = {name: [{"role": "system", "content": "You are a careful assistant."}] for name in PEOPLE}

    def turns(phase: str, n: int = 3):
        upstream.push(*[answer_to_last_question] * (n * len(PEOPLE)))
        for i in range(n):
            for name in PEOPLE:
                histories[name].append({"role": "user", "content": f"{name}, {phase}, question {i}"})
                reply = clients[name].chat.completions.create(model="gpt-scripted", messages=histories[name])
                histories[name].append({"role": "assistant", "content": reply.choices[0].message.content})

    with nginx(nginx_conf(ports, gateway), tmp_path / "nginx", gateway):
        with replica(0), replica(1):
            turns("both replicas up")
            with pytest.raises(openai.AuthenticationError):
                openai.OpenAI(base_url=f"http://127.0.0.1:{gateway}/v1", api_key="sk-x", max_retries=0
                              ).chat.completions.create(model="gpt-scripted",
                                                        messages=[{"role": "user", "content": "hi"}])
        # Whichever replica the hash gave each person, each person's requests have to move once:
        # the first replica alone, then the second alone (after nginx's fail_timeout for it).
        with replica(0):
            turns("the first replica alone")
        time.sleep(5.5)
        with replica(1):
            turns("the second replica alone")

    stored = stored_by_tenant(store)
    assert sorted(stored) == sorted(PEOPLE), stored.keys()
    for name in PEOPLE:
        expected = [(m["role"], m["content"]) for m in histories[name][1:]]
        assert stored[name] == [expected], name
    listing = proxylib.cli("sessions", "--tenant", "ana", store=store).stdout
    assert "tenant ana" in listing and "tenant bo" not in listing, listing
    assert len([line for line in listing.splitlines() if line.startswith("s-")]) == 1, listing

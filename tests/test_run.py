"""`ctxproxy run COMMAND`: one run of a client through a proxy of its own. The client here is a
Python program on the official OpenAI SDK, which finds the proxy only through the `OPENAI_BASE_URL`
that `run` sets; the model is the scripted upstream on loopback. What `run` owes its user: the
client's arguments, standard input, output and exit status pass through, its session is recorded
in the store, and at the end it says what each session was sent and forwarded. Gemini CLI and Codex
(which reads no base-URL variable) are run this way here; Claude Code and Qwen Code:
tests/test_proxy_assistants.py."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys
import textwrap

import ctxlib
import proxylib
import test_proxy_assistants as assistants
from proxylib import Turn

CLIENT = textwrap.dedent("""\
    import os, sys
    import openai

    question = sys.stdin.readline().strip()
    client = openai.OpenAI(api_key="sk-dummy", max_retries=0, timeout=60)
    history = [{"role": "user", "content": question}]
    for follow_up in sys.argv[1:]:
        reply = client.chat.completions.create(model="test-model", messages=history)
        print(reply.choices[0].message.content)
        history += [{"role": "assistant", "content": reply.choices[0].message.content},
                    {"role": "user", "content": follow_up}]
    print("base url:", os.environ["OPENAI_BASE_URL"])
    sys.exit(3)
    """)


def run(store: pathlib.Path, upstream_url: str, *command: str, env: dict | None = None,
        **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(ctxlib.binary()), "run", "--store", str(store),
                           "--openai-upstream", upstream_url, "--anthropic-upstream", upstream_url,
                           *command],
                          capture_output=True, text=True, timeout=120,
                          env=env or proxylib.env_without_proxies(), **kw)


def test_a_client_run_through_the_proxy_keeps_its_io_and_status_and_is_reported(tmp_path, store, upstream):
    client = tmp_path / "client.py"
    client.write_text(CLIENT)
    upstream.push(Turn(text="The port is 8443."), Turn(text="Yes, 8443 over TLS."))
    p = run(store, upstream.url, "--", sys.executable, str(client), "and then?", "thanks",
            input="Which port does the service use?\n")
    assert p.returncode == 3, p.stderr
    lines = p.stdout.splitlines()
    assert lines[:2] == ["The port is 8443.", "Yes, 8443 over TLS."]
    assert re.fullmatch(r"base url: http://127\.0\.0\.1:\d+/v1", lines[2]), lines
    calls = upstream.model_calls()
    assert len(calls) == 2
    assert "Which port does the service use?" in str(calls[0].json["messages"])

    [row] = [line for line in proxylib.sessions(store).splitlines() if line.startswith("s-")]
    session = row.split()[0]
    reported = re.search(rf"session {session}: 2 request\(s\), the client sent (\d+) tokens, "
                         rf"ctxproxy forwarded (\d+)", p.stderr)
    assert reported, p.stderr
    sent, forwarded = map(int, reported.groups())
    assert sent > 0 and forwarded > 0
    shown = proxylib.cli("show-prompt", session, "p2", store=store).stdout
    assert "Which port does the service use?" in shown
    assert re.search(r"1 session\(s\): sent \d+ tokens, forwarded \d+", p.stderr), p.stderr


def test_a_run_without_model_requests_says_so(tmp_path, store, upstream):
    p = run(store, upstream.url, "--", sys.executable, "-c", "print('no model here')")
    assert p.returncode == 0, p.stderr
    assert p.stdout == "no model here\n"
    assert "no model request went through the proxy" in p.stderr


def test_a_command_that_cannot_start_exits_127_and_names_it(tmp_path, store, upstream):
    p = run(store, upstream.url, "--", "no-such-assistant-here", "--flag")
    assert p.returncode == 127
    assert "cannot start `no-such-assistant-here`" in p.stderr


def test_gemini_cli_run_by_ctxproxy_run_writes_a_file_and_is_recorded(tmp_path, store, upstream):
    """The environment has only the key: `run` points Gemini CLI at the proxy, and leaves its
    settings as they were."""
    gemini = assistants.node_tool("CTXPROXY_GEMINI", "gemini")
    work = tmp_path / "work"
    work.mkdir()
    target = work / "hello.txt"
    home = tmp_path / "home"
    env = assistants.gemini_env(home)
    settings = (home / ".gemini" / "settings.json").read_text()
    upstream.push(*assistants.two_turn_script("write_file", {"file_path": str(target),
                                                             "content": assistants.GREETING})[:2])
    p = subprocess.run([str(ctxlib.binary()), "run", "--store", str(store), "--gemini-upstream", upstream.url,
                        gemini, "-m", "test-model", "-p", assistants.TASK, "--yolo", "-o", "json", "--skip-trust"],
                       cwd=work, env=env, capture_output=True, text=True, timeout=assistants.RUN_TIMEOUT,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, f"ctxproxy run gemini exited {p.returncode}\n{p.stdout}\n{p.stderr}"
    assert assistants.gemini_text(p) == assistants.DONE
    assert target.read_text() == assistants.GREETING
    calls = upstream.model_calls()
    assert [c.path for c in calls] == ["/v1beta/models/test-model:streamGenerateContent"] * 2
    assert all(c.headers["x-goog-api-key"] == assistants.GEMINI_KEY for c in calls)
    [session] = assistants.run_reported_sessions(p)
    assert re.search(rf"session {session}: 2 request\(s\)", p.stderr), p.stderr
    assert assistants.TASK in proxylib.cli("show-prompt", session, "p2", store=store).stdout
    # Gemini CLI writes its settings back itself (reformatted): the same settings, and the
    # proxy's address in none of its files.
    assert json.loads((home / ".gemini" / "settings.json").read_text()) == json.loads(settings)
    assert proxylib.files_containing(home, b"http://127.0.0.1") == []
    assert proxylib.files_containing(store.parent, assistants.GEMINI_KEY.encode()) == []


def test_codex_run_by_ctxproxy_run_goes_through_the_proxy_and_resumes(tmp_path, store, upstream):
    """Codex with no config of its own (its built-in OpenAI provider): `run` points it at the
    proxy with `-c openai_base_url=...`; both turns of its thread are one recorded session.
    Codex asks for a WebSocket first: the proxy's 426 sends it to HTTP at once."""
    from test_proxy_assistants import codex_messages, node_tool, offline_env

    codex = node_tool("CTXPROXY_CODEX", "codex")
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    env = offline_env(tmp_path / "home", CODEX_HOME=str(codex_home))
    upstream.push(Turn(text="Hi there."), Turn(text="Hi again."))
    runs = []
    for args in (["say hi"], ["resume", "--last", "once more"]):
        p = run(store, upstream.url, codex, "exec", "--skip-git-repo-check", "--json", *args,
                cwd=tmp_path, env=env, stdin=subprocess.DEVNULL)
        assert p.returncode == 0, f"ctxproxy run codex exited {p.returncode}\n{p.stdout}\n{p.stderr}"
        runs.append((codex_messages(p), re.findall(r"^ctxproxy: session (s-\S+): ", p.stderr, re.M)))
    ((thread, first), [s1]), ((resumed, second), [s2]) = runs
    assert (first, second) == (["Hi there."], ["Hi again."])
    assert resumed == thread and s1 == s2, "the resumed thread continued the session"
    assert [(r.method, r.path) for r in upstream.requests] == [("POST", "/v1/responses")] * 2, \
        "only the model calls reached the upstream: no WebSocket attempt"
    assert "once more" in json.dumps(upstream.model_calls()[1].json["input"])
    assert f"codex:{thread}" in proxylib.sessions(store)

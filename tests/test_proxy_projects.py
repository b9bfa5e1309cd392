"""A proxied session's project (its workspace): the `x-ctxproxy-project` header, else the proxy's
own (`ctxproxy proxy --project DIR`, the directory `ctxproxy run` starts in), else the working
directory the assistant states (here in Claude Code's and Codex's words), else none. `ctxproxy
sessions` lists sessions under their projects, `--project P` one project's."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass

import pytest

import proxylib
from proxylib import Turn

ANTHROPIC_HEADERS = {"x-api-key": "sk-ant-api03-projecttest0123456789", "anthropic-version": "2023-06-01"}


def claude_code_body(task: str, cwd: str | None) -> dict:
    """A Messages request shaped as Claude Code sends it: its environment notes open the first
    user message (fixtures/stated-cwd/claude-code.txt)."""
    blocks = [{"type": "text", "text": task}]
    if cwd is not None:
        notes = ("<system-reminder>\n# Environment\nYou have been invoked in the following environment: \n"
                 f" - Primary working directory: {cwd}\n - Is a git repository: false\n - Platform: linux\n"
                 "</system-reminder>")
        blocks.insert(0, {"type": "text", "text": notes})
    return {"model": "claude-sonnet-4-5", "max_tokens": 256,
            "system": [{"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."}],
            "messages": [{"role": "user", "content": blocks}]}


def codex_body(task: str, cwd: str) -> dict:
    """A Responses request shaped as Codex sends it: developer messages, then its
    <environment_context> as a user message (fixtures/stated-cwd/codex.txt)."""
    def message(role: str, text: str) -> dict:
        return {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}
    context = (f"<environment_context>\n  <cwd>{cwd}</cwd>\n  <shell>bash</shell>\n"
               "  <current_date>2026-12-06</current_date>\n</environment_context>")
    return {"model": "gpt-scripted", "stream": False, "store": False,
            "input": [message("developer", "You are Codex, a coding agent."), message("user", context),
                      message("user", task)]}


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    json: dict


def post(url: str, body: dict, headers: dict) -> Reply:
    request = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return Reply(r.status, {k.lower(): v for k, v in r.headers.items()}, json.load(r))
    except urllib.error.HTTPError as e:
        return Reply(e.code, {k.lower(): v for k, v in e.headers.items()}, json.load(e))


def send_claude_code(proxy, body: dict, headers: dict | None = None) -> Reply:
    return post(proxy.url + "/v1/messages", body, {**ANTHROPIC_HEADERS, **(headers or {})})


def session_of(reply: Reply) -> str:
    assert reply.status == 200, reply.json
    return reply.headers["x-ctxproxy-session"]


def listed(store: pathlib.Path, project: str | None = None, tenant: str | None = None) -> list[str]:
    """The sessions `ctxproxy sessions [--project P] [--tenant T]` lists."""
    args = ["sessions", *(["--project", project] if project else []), *(["--tenant", tenant] if tenant else [])]
    return re.findall(r"^(s-\S+)", proxylib.cli(*args, store=store).stdout, re.M)


def grouped(store: pathlib.Path) -> dict[str, list[str]]:
    """`ctxproxy sessions` read back: each project ("" for none) with its sessions, whoever's."""
    groups: dict[str, list[str]] = {}
    current = None
    for line in proxylib.sessions(store).splitlines():
        line = line.split(" · tenant ")[0]
        if line.startswith("project "):
            current = line.removeprefix("project ")
        elif line == "(no project)":
            current = ""
        elif m := re.match(r"(s-\S+)", line):
            assert current is not None, "a session before any project heading"
            groups.setdefault(current, []).append(m.group(1))
    return groups


def test_stated_working_directories_the_header_and_none_each_decide_a_project(tmp_path, store, upstream, proxy):
    work = tmp_path / "work"
    work.mkdir()
    upstream.push(*[Turn(text="Done.") for _ in range(4)])

    # Claude Code's words, and Codex's with a trailing slash: both the same project.
    claude = session_of(send_claude_code(proxy, claude_code_body("Create hello.txt.", str(work))))
    codex = session_of(post(proxy.url + "/v1/responses", codex_body("Create bye.txt.", f"{work}/"),
                            {"authorization": "Bearer sk-proj-projecttest0123"}))
    # The header wins over what the request states.
    named = session_of(send_claude_code(proxy, claude_code_body("Fix the invoice totals.", str(work)),
                                        {"x-ctxproxy-project": "  billing service "}))
    # Nothing stated, no header: no project.
    plain = session_of(send_claude_code(proxy, claude_code_body("What is 2 + 2?", None)))

    assert len({claude, codex, named, plain}) == 4, "four conversations, four sessions"
    assert sorted(listed(store, str(work))) == sorted([claude, codex])
    # A directory given relative to where `sessions` runs is the same project.
    p = subprocess.run([str(proxylib.ctxlib.binary()), "sessions", "--project", "work", "--store", str(store)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert sorted(re.findall(r"^(s-\S+)", p.stdout, re.M)) == sorted([claude, codex]), p.stdout + p.stderr
    assert listed(store, "billing service") == [named]
    groups = {project: sorted(sessions) for project, sessions in grouped(store).items()}
    assert groups == {str(work): sorted([claude, codex]), "billing service": [named], "": [plain]}


@pytest.mark.parametrize("value, says", [
    ("   ", "empty"),
    ("p" * 513, "513 bytes, at most 512"),
], ids=["blank", "too-long"])
def test_a_project_header_that_cannot_be_one_is_a_400_naming_it(store, upstream, proxy, value, says):
    reply = send_claude_code(proxy, claude_code_body("Hi.", None), {"x-ctxproxy-project": value})
    assert reply.status == 400, reply.json
    message = reply.json["error"]["message"]
    assert "x-ctxproxy-project" in message and says in message, message
    assert upstream.model_calls() == [], "nothing forwarded"


def test_the_proxy_s_project_comes_after_the_header_and_before_what_is_stated(tmp_path, store, upstream):
    served = tmp_path / "served"
    served.mkdir()
    upstream.push(Turn(text="Done."), Turn(text="Done."))
    with proxylib.Proxy(store, upstream.url, upstream.url, extra=["--project", f"{served}/"]) as proxy:
        stated = session_of(send_claude_code(proxy, claude_code_body("Hi.", "/home/me/elsewhere")))
        named = session_of(send_claude_code(proxy, claude_code_body("Hello.", None),
                                            {"x-ctxproxy-project": "named"}))
    assert listed(store, str(served)) == [stated]
    assert listed(store, "named") == [named]
    assert listed(store, "/home/me/elsewhere") == []


def test_ctxproxy_run_s_sessions_belong_to_the_directory_it_starts_in(tmp_path, store, upstream):
    work = tmp_path / "work"
    work.mkdir()
    upstream.push(Turn(text="Done."))
    # The command sends one Messages request, stating nothing, to the proxy `run` points it at.
    send = ("import json, os, urllib.request\n"
            f"body = json.dumps({json.dumps(claude_code_body('Hi.', None))}).encode()\n"
            "req = urllib.request.Request(os.environ['ANTHROPIC_BASE_URL'] + '/v1/messages', data=body,\n"
            f"    headers={{'content-type': 'application/json', **{ANTHROPIC_HEADERS!r}}})\n"
            "print(urllib.request.urlopen(req, timeout=60).headers['x-ctxproxy-session'])\n")
    p = subprocess.run([str(proxylib.ctxlib.binary()), "run", "--store", str(store), "--anthropic-upstream",
                        upstream.url, "--config", json.dumps(proxylib.LAYERED), "--", sys.executable, "-c", send],
                       cwd=work, env=proxylib.env_without_proxies(), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    session = p.stdout.strip()
    assert listed(store, str(work)) == [session]


def test_a_sub_agent_s_call_and_a_fork_keep_the_project_of_the_session_they_branch_from(tmp_path, store, upstream,
                                                                                      proxy):
    work = tmp_path / "work"
    work.mkdir()
    upstream.push(*[Turn(text="Done.") for _ in range(4)])
    same_id = {"x-claude-code-session-id": "0b7f3c1e-project-test"}

    def turn(body: dict, ask: str) -> dict:
        return {**body, "messages": body["messages"] + [
            {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
            {"role": "user", "content": [{"type": "text", "text": ask}]}]}

    first = claude_code_body("Refactor the parser.", str(work))
    main = session_of(send_claude_code(proxy, first, same_id))
    # A sub-agent: the same session id, a system prompt of its own, stating another directory.
    agent_body = claude_code_body("Find the parser's tests.", "/home/me/elsewhere")
    agent_body["system"] = [{"type": "text", "text": "You are a search agent."}]
    agent = session_of(send_claude_code(proxy, agent_body, same_id))
    assert session_of(send_claude_code(proxy, turn(first, "And the lexer?"), same_id)) == main
    # The second turn asked again another way: a fork of the main session after x1, sent
    # under another project.
    fork = session_of(send_claude_code(proxy, turn(first, "And the tests?"),
                                       {**same_id, "x-ctxproxy-project": "elsewhere"}))

    listing = proxylib.sessions(store)
    assert len({main, agent, fork}) == 3, listing
    assert f"called by {main}" in listing and f"fork of {main} at x1" in listing, listing
    assert sorted(listed(store, str(work))) == sorted([main, agent, fork]), listing
    assert listed(store, "elsewhere") == [] and listed(store, "/home/me/elsewhere") == []


DECISION = "We settled it: invoice totals round half-even, to the penny, per line."


def forwarded_text(call) -> str:
    """Everything a forwarded model call carried, as one string."""
    return json.dumps(call.json)


def test_a_second_conversation_of_the_project_gets_the_first_one_s_memory(tmp_path, store, upstream, proxy):
    work, other = tmp_path / "work", tmp_path / "other"
    work.mkdir()
    other.mkdir()
    upstream.push(*[Turn(text="Noted.") for _ in range(6)])
    # The first conversation, in Claude Code's words: the person states a decision.
    first = session_of(send_claude_code(proxy, claude_code_body(DECISION, str(work))))
    # A new conversation of the same project, through Codex's words: the decision is in what the
    # model gets, under an id naming the first session.
    # (One credential for both, as through a team's gateway key: a tenant is a credential.)
    second = session_of(post(proxy.url + "/v1/responses",
                             codex_body("How do invoice totals round again?", str(work)),
                             {"authorization": f"Bearer {ANTHROPIC_HEADERS['x-api-key']}"}))
    assert second != first
    text = forwarded_text(upstream.model_calls()[-1])
    assert DECISION in text and f"{first}/x1" in text, text[:3000]
    # Another project, and a conversation stating no project: nothing of it.
    stranger = session_of(send_claude_code(proxy, claude_code_body("How do invoice totals round?", str(other))))
    assert DECISION not in forwarded_text(upstream.model_calls()[-1]) and first not in forwarded_text(
        upstream.model_calls()[-1])
    loner = session_of(send_claude_code(proxy, claude_code_body("How do invoice totals round?", None)))
    assert DECISION not in forwarded_text(upstream.model_calls()[-1])
    assert len({first, second, stranger, loner}) == 4
    # Forgotten: a new conversation of the project gets nothing of it.
    proxylib.cli("forget", "--project", str(work), store=store)
    session_of(send_claude_code(proxy, claude_code_body("And how do totals round?", str(work))))
    assert DECISION not in forwarded_text(upstream.model_calls()[-1])


def test_memory_off_keeps_each_conversation_to_itself(tmp_path, store, upstream):
    work = tmp_path / "work"
    work.mkdir()
    upstream.push(Turn(text="Noted."), Turn(text="Noted."))
    with proxylib.Proxy(store, upstream.url, upstream.url,
                        config={**proxylib.LAYERED, "memory": False}) as proxy:
        session_of(send_claude_code(proxy, claude_code_body(DECISION, str(work))))
        session_of(send_claude_code(proxy, claude_code_body("How do invoice totals round again?", str(work))))
    assert DECISION not in forwarded_text(upstream.model_calls()[-1])


def test_another_key_is_another_tenant_and_sees_nothing_of_the_project(tmp_path, store, upstream, proxy):
    work = tmp_path / "work"
    work.mkdir()
    upstream.push(*[Turn(text="Noted.") for _ in range(4)])
    mine = {"x-api-key": "sk-ant-api03-tenant-one-0123456789", "x-ctxproxy-session": "shared-name"}
    theirs = {"x-api-key": "sk-ant-api03-tenant-two-0123456789", "x-ctxproxy-session": "shared-name"}
    first = session_of(send_claude_code(proxy, claude_code_body(DECISION, str(work)), mine))
    # The same project and the same session name, another key: another conversation, and
    # nothing of the first one reaches its prompt.
    other = session_of(send_claude_code(proxy, claude_code_body("How do invoice totals round again?",
                                                                str(work)), theirs))
    assert other != first
    text = forwarded_text(upstream.model_calls()[-1])
    assert DECISION not in text and first not in text, text[:2000]
    # The first key's next conversation of the project gets it.
    session_of(send_claude_code(proxy, claude_code_body("How do invoice totals round again?", str(work)),
                                {"x-api-key": mine["x-api-key"]}))
    text = forwarded_text(upstream.model_calls()[-1])
    assert DECISION in text, text[:4000]
    # The credential is never stored: only a keyed hash of it names the tenant.
    data = b"".join(p.read_bytes() for p in store.parent.glob("store.db*"))
    assert b"tenant-one" not in data and b"tenant-two" not in data


def dashboard(proxy, path: str, token: str) -> tuple[int, dict]:
    status, _, body = proxylib.raw_request(f"{proxy.url}/dashboard/api/{path}",
                                           headers={"x-ctxproxy-token": token})
    return status, json.loads(body)


def test_with_a_token_each_a_person_s_sessions_are_kept_apart_under_their_name(tmp_path, store, upstream):
    """`--tokens FILE`: each person's token admits them, and their name is their tenant: the same
    API key, project and session name for two people are two conversations, neither sees the
    other's in a prompt or on the dashboard, and `sessions --tenant` lists one person's."""
    work = tmp_path / "work"
    work.mkdir()
    tokens = tmp_path / "team.tokens"
    tokens.write_text("# name token\nana ana-token-0123456789\nbo  bo-token-01234567890\n")
    upstream.push(*[Turn(text="Noted.") for _ in range(4)])
    shared = {"x-ctxproxy-session": "standup"}
    ana = {**shared, "x-ctxproxy-token": "ana-token-0123456789"}
    bo = {**shared, "x-ctxproxy-token": "bo-token-01234567890"}
    with proxylib.Proxy(store, upstream.url, upstream.url, extra=["--tokens", str(tokens)]) as proxy:
        refused = send_claude_code(proxy, claude_code_body("hello", str(work)), shared)
        assert refused.status == 401, refused.json
        first = session_of(send_claude_code(proxy, claude_code_body(DECISION, str(work)), ana))
        other = session_of(send_claude_code(proxy, claude_code_body("How do invoice totals round again?",
                                                                    str(work)), bo))
        assert other != first
        assert DECISION not in forwarded_text(upstream.model_calls()[-1])
        session_of(send_claude_code(proxy, claude_code_body("How do invoice totals round again?", str(work)),
                                    {"x-ctxproxy-token": ana["x-ctxproxy-token"]}))
        assert DECISION in forwarded_text(upstream.model_calls()[-1])
        # The dashboard shows each person their own sessions only.
        status, overview = dashboard(proxy, "overview", ana["x-ctxproxy-token"])
        assert status == 200 and first in {s["session"] for s in overview["sessions"]}
        assert other not in {s["session"] for s in overview["sessions"]}
        assert {r["session"] for r in overview["recent"]} <= {s["session"] for s in overview["sessions"]}
        status, _ = dashboard(proxy, f"sessions/{other}", ana["x-ctxproxy-token"])
        assert status == 404
        status, _ = dashboard(proxy, f"sessions/{other}", bo["x-ctxproxy-token"])
        assert status == 200
    assert listed(store, tenant="bo") == [other]
    assert first in listed(store, tenant="ana") and other not in listed(store, tenant="ana")
    assert "tenant ana" in proxylib.sessions(store)


@pytest.mark.parametrize("text, says", [
    ("ana\n", "team.tokens:1: expected `name token`"),
    ("ana short\n", "team.tokens:1: ana's token is 5 characters: at least 16"),
    ("# nobody yet\n", "no `name token` line"),
])
def test_a_bad_tokens_file_stops_the_proxy_naming_the_line(tmp_path, store, text, says):
    tokens = tmp_path / "team.tokens"
    tokens.write_text(text)
    p = subprocess.run([str(proxylib.ctxlib.binary()), "proxy", "--listen", "127.0.0.1:0", "--store", str(store),
                        "--tokens", str(tokens)], capture_output=True, text=True, timeout=30)
    assert p.returncode != 0 and says in p.stderr, p.stderr

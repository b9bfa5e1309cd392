"""Real assistants, installed from their registries, run headless through
`ctxproxy proxy` (or `ctxproxy run`) with the scripted upstream behind it:
Claude Code (`claude -p`, npm `@anthropic-ai/claude-code`), Aider
(`aider --message`, PyPI `aider-chat`), Qwen Code (`qwen`, npm
`@qwen-code/qwen-code`), Continue's CLI (`cn -p`, npm `@continuedev/cli`),
opencode (`opencode run`, npm `opencode-ai`), Gemini CLI (`gemini -p`, npm
`@google/gemini-cli`) and Codex (`codex exec`, npm `@openai/codex`, over the
Responses API). Each completes a short task: the scripted model asks for a
file to be written, the assistant writes it, the model ends with a text.
Claude Code, Qwen Code, Continue, opencode, Gemini CLI and Codex then resume
the conversation for a second turn. Claude Code and Gemini CLI run with their
default model and a named one; Continue and opencode over Chat Completions and
over the Responses API. Everything runs offline on loopback.

`.ci/run` installs them into tests/.tools (npm into a local prefix, Aider into
its own venv). A test is skipped, naming what is missing, only when its tool
is not installed; CTXPROXY_CLAUDE / CTXPROXY_AIDER / CTXPROXY_QWEN /
CTXPROXY_CN / CTXPROXY_OPENCODE / CTXPROXY_GEMINI / CTXPROXY_CODEX point at other installs.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import types

import pytest

import proxylib
from proxylib import ToolCall, Turn

TOOLS = pathlib.Path(__file__).resolve().parent / ".tools"
ANTHROPIC_KEY = "sk-ant-api03-claudecodetest0123456789abcdef"
OPENAI_KEY = "sk-proj-aidertest0123456789abcdef"
QWEN_KEY = "sk-proj-qwencodetest0123456789abcdef"
CN_KEY = "sk-proj-continuetest0123456789abcdef"
OPENCODE_KEY = "sk-proj-opencodetest0123456789abcdef"
CODEX_KEY = "sk-proj-codextest0123456789abcdef"
# Seconds an assistant may run before the test fails instead of hanging.
RUN_TIMEOUT = 180


def find_tool(env_var: str, installed: pathlib.Path, name: str) -> str:
    path = os.environ.get(env_var) or (str(installed) if installed.exists() else shutil.which(name))
    if not path:
        pytest.skip(f"{name} is not installed: not at {installed}, not on PATH, {env_var} unset "
                    "(.ci/run installs it)")
    return path


def session_rows(store: pathlib.Path) -> list[tuple[str, int, int]]:
    """(session, exchanges, prompts) for each session `ctxproxy sessions` lists."""
    rows = []
    for line in proxylib.sessions(store).splitlines():
        m = re.match(r"(s-\S+)\s+(\d+)\s+(\d+)", line)
        if m:
            rows.append((m.group(1), int(m.group(2)), int(m.group(3))))
    return rows


def offline_env(home: pathlib.Path, **extra: str) -> dict:
    home.mkdir(parents=True, exist_ok=True)
    env = proxylib.env_without_proxies()
    for k in list(env):
        if k.startswith(("ANTHROPIC_", "OPENAI_", "CLAUDE", "AIDER_", "QWEN_", "CONTINUE_", "OPENCODE_", "CODEX_")):
            del env[k]
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), **extra)
    return env


# ------------------------------------------------------------------- Claude Code

def claude_env(home: pathlib.Path, base_url: str) -> dict:
    # Claude Code's documented switches for no telemetry, no auto-update and
    # no other non-essential traffic: only the model API is called.
    return offline_env(home, ANTHROPIC_BASE_URL=base_url, ANTHROPIC_API_KEY=ANTHROPIC_KEY,
                       DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1", DISABLE_ERROR_REPORTING="1",
                       CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")


# Claude Code's model alias `sonnet` (its current family) sends the
# per-turn-control beta: its environment notes arrive as a `system`-role
# message inside `messages`. The dated claude-sonnet-4-5 does not.
@pytest.mark.parametrize("model, internal_round", [
    ("sonnet", False), ("claude-sonnet-4-5", False), ("claude-sonnet-4-5", True),
], ids=["sonnet-alias", "sonnet-4-5", "sonnet-4-5-context-search-round"])
def test_claude_code_writes_a_file_through_the_proxy(tmp_path, store, upstream, proxy, model, internal_round):
    claude = find_tool("CTXPROXY_CLAUDE", TOOLS / "node" / "node_modules" / ".bin" / "claude", "claude")
    work = tmp_path / "work"
    work.mkdir()
    target = work / "hello.txt"
    script = [
        Turn(text="I'll create the file.",
             tool_calls=[ToolCall("toolu_01WriteHello", "Write", {"file_path": str(target), "content": "hello via ctxproxy\n"})]),
        Turn(text="Created hello.txt with the greeting."),
    ]
    if internal_round:
        # The model first searches the stored context; the proxy answers that
        # itself and Claude Code never sees it.
        script.insert(0, Turn(tool_calls=[ToolCall("toolu_01Search", "context_search", {"query": "hello"})]))
    upstream.push(*script)
    p = subprocess.run([claude, "-p", "Create hello.txt containing a greeting.", "--model", model,
                        "--allowedTools", "Write", "--output-format", "json"],
                       cwd=work, env=claude_env(tmp_path / "home", proxy.url),
                       capture_output=True, text=True, timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, f"claude exited {p.returncode}\n{p.stdout}\n{p.stderr}\nproxy:\n{proxy.stderr}"
    result = json.loads(p.stdout)
    assert result["result"] == "Created hello.txt with the greeting." and not result["is_error"]
    assert target.read_text() == "hello via ctxproxy\n"
    assert "context_search" not in p.stdout

    calls = upstream.model_calls()
    assert len(calls) == len(script)
    for c in calls:
        assert c.headers.get("x-claude-code-session-id"), "Claude Code's session header reaches the upstream"
        assert {"Write", "context_retrieve", "context_search"} <= set(proxylib.tool_names(c.json))
        assert c.json["stream"] is True
        assert proxylib.breakpoints(c.json) <= 4, "Claude Code's own breakpoints and ours stay within the API's 4"
        deferred = [t for t in c.json["tools"] if t.get("defer_loading")]
        assert all("cache_control" not in t for t in deferred), "no breakpoint on a defer_loading tool"
    assert len({json.dumps(proxylib.context_tool_defs(c.json)) for c in calls}) == 1
    # The tool result Claude Code sent back is in the prompt the upstream got.
    assert "File created successfully" in json.dumps(calls[-1].json["messages"])

    [(session, exchanges, prompts)] = session_rows(store)
    assert exchanges >= 1 and prompts >= 2, "one prompt per request Claude Code sent"
    shown = proxylib.cli("show-prompt", session, f"p{prompts}", store=store).stdout
    assert "File created successfully" in shown
    assert proxylib.files_containing(store.parent, ANTHROPIC_KEY.encode()) == []


def test_claude_code_run_by_ctxproxy_run_writes_a_file_and_is_reported(tmp_path, store, upstream):
    """`ctxproxy run claude …`: no proxy started by hand, no base URL set; run points Claude Code
    at a proxy of its own, passes its output and status through, and reports the session."""
    claude = find_tool("CTXPROXY_CLAUDE", TOOLS / "node" / "node_modules" / ".bin" / "claude", "claude")
    work = tmp_path / "work"
    work.mkdir()
    target = work / "hello.txt"
    upstream.push(
        Turn(text="I'll create the file.",
             tool_calls=[ToolCall("toolu_01WriteHello", "Write", {"file_path": str(target), "content": "hi\n"})]),
        Turn(text="Created hello.txt."))
    env = claude_env(tmp_path / "home", "unused")
    del env["ANTHROPIC_BASE_URL"]
    p = subprocess.run([str(proxylib.ctxlib.binary()), "run", "--store", str(store),
                        "--anthropic-upstream", upstream.url, "--openai-upstream", upstream.url,
                        claude, "-p", "Create hello.txt containing hi.", "--allowedTools", "Write",
                        "--output-format", "json"],
                       cwd=work, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, f"ctxproxy run claude exited {p.returncode}\n{p.stdout}\n{p.stderr}"
    assert json.loads(p.stdout)["result"] == "Created hello.txt."
    assert target.read_text() == "hi\n"
    [(session, _, prompts)] = session_rows(store)
    assert prompts >= 2
    assert re.search(rf"session {session}: {prompts} request\(s\), the client sent \d+ tokens", p.stderr), p.stderr


def test_claude_code_continue_adds_its_turn_to_the_session(tmp_path, store, upstream, proxy):
    """`claude -p --continue` resends the first run's history under the same session id: the
    new turn is appended to the session that holds the first, not a fork of it."""
    claude = find_tool("CTXPROXY_CLAUDE", TOOLS / "node" / "node_modules" / ".bin" / "claude", "claude")
    work = tmp_path / "work"
    work.mkdir()
    target = work / "hello.txt"
    upstream.push(
        Turn(text="I'll create the file.",
             tool_calls=[ToolCall("toolu_01WriteHello", "Write", {"file_path": str(target), "content": "hi\n"})]),
        Turn(text="Created hello.txt."),
        Turn(text="It says hi."))
    env = claude_env(tmp_path / "home", proxy.url)
    results = []
    for args in (["-p", "Create hello.txt containing hi."], ["-p", "What does it say?", "--continue"]):
        p = subprocess.run([claude, *args, "--model", "claude-sonnet-4-5", "--allowedTools", "Write",
                            "--output-format", "json"],
                           cwd=work, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                           stdin=subprocess.DEVNULL)
        assert p.returncode == 0, f"claude exited {p.returncode}\n{p.stdout}\n{p.stderr}\nproxy:\n{proxy.stderr}"
        results.append(json.loads(p.stdout)["result"])
    assert results == ["Created hello.txt.", "It says hi."]
    calls = upstream.model_calls()
    assert len(calls) == 3
    resumed = json.dumps(calls[2].json["messages"])
    assert "toolu_01WriteHello" in resumed and "File created successfully" in resumed
    [(session, exchanges, prompts)] = session_rows(store)
    assert (exchanges, prompts) == (2, 3), proxylib.sessions(store)
    assert "What does it say?" in proxylib.cli("show-prompt", session, "p3", store=store).stdout


# ------------------------------------------------------------------------ Aider

def test_aider_edits_a_file_through_the_proxy(tmp_path, store, upstream, proxy):
    aider = find_tool("CTXPROXY_AIDER", TOOLS / "aider" / "bin" / "aider", "aider")
    work = tmp_path / "work"
    work.mkdir()
    (work / "hello.py").write_text("")
    upstream.push(
        # First the model looks in the stored context (answered by the proxy),
        # then it answers in Aider's "whole" edit format: the file's path, then
        # its new content in a fence.
        Turn(tool_calls=[ToolCall("call_ctx_search", "context_search", {"query": "hello"})]),
        Turn(text="Here is the file.\n\nhello.py\n```\nprint(\"hello via ctxproxy\")\n```\n"),
    )
    env = offline_env(tmp_path / "home", LITELLM_LOCAL_MODEL_COST_MAP="True")
    # Aider fetches litellm's model list from GitHub unless its cache holds a
    # fresh, non-empty one (aider/models.py, ModelInfoManager): give it ours.
    caches = tmp_path / "home" / ".aider" / "caches"
    caches.mkdir(parents=True)
    (caches / "model_prices_and_context_window.json").write_text(json.dumps({"openai/gpt-scripted": {
        "max_input_tokens": 128000, "max_output_tokens": 4096, "input_cost_per_token": 0,
        "output_cost_per_token": 0, "litellm_provider": "openai", "mode": "chat"}}))
    p = subprocess.run([aider, "--openai-api-base", proxy.url + "/v1", "--openai-api-key", OPENAI_KEY,
                        "--model", "openai/gpt-scripted", "--edit-format", "whole",
                        "--message", "Make hello.py print a greeting.", "--yes-always", "--no-git",
                        "--no-check-update", "--analytics-disable", "--no-show-model-warnings", "--no-pretty",
                        "--no-fancy-input", "--map-tokens", "0", "--no-detect-urls", "--no-restore-chat-history",
                        "hello.py"],
                       cwd=work, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 0, f"aider exited {p.returncode}\n{p.stdout}\n{p.stderr}\nproxy:\n{proxy.stderr}"
    assert (work / "hello.py").read_text() == 'print("hello via ctxproxy")\n', p.stdout
    assert "context_search" not in p.stdout
    assert "raw.githubusercontent.com" not in p.stdout, "aider stayed offline"

    calls = upstream.model_calls()
    assert len(calls) == 2
    for c in calls:
        assert c.path == "/v1/chat/completions" and c.json["model"] == "gpt-scripted"
        assert c.json["stream"] is True and c.json.get("temperature") == 0
        assert {"context_retrieve", "context_search"} <= set(proxylib.tool_names(c.json))
        assert c.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    assert calls[0].json["tools"] == calls[1].json["tools"]
    assert "Make hello.py print a greeting." in json.dumps(calls[0].json["messages"])

    [(session, exchanges, prompts)] = session_rows(store)
    assert exchanges >= 1 and prompts >= 1
    assert "Make hello.py print a greeting." in proxylib.cli("show-prompt", session, f"p{prompts}", store=store).stdout
    assert proxylib.files_containing(store.parent, OPENAI_KEY.encode()) == []


# --------------------------------------------- Qwen Code, Continue and opencode: two turns
# Each writes the file in a first run, then a second run resumes the conversation (the
# assistant's own resume flag) and asks about it: three model calls, one conversation.

TASK = "Create hello.txt containing a greeting."
SECOND = "What does hello.txt say now?"
GREETING = "hello via ctxproxy\n"
DONE = "Created hello.txt."
ANSWER = "It says hello via ctxproxy."


def two_turn_script(write_tool: str, args: dict) -> list[Turn]:
    return [Turn(tool_calls=[ToolCall("call_write_hello", write_tool, args)]), Turn(text=DONE), Turn(text=ANSWER)]


def node_tool(env_var: str, name: str) -> str:
    return find_tool(env_var, TOOLS / "node" / "node_modules" / ".bin" / name, name)


def run_reported_sessions(p: subprocess.CompletedProcess) -> list[str]:
    """The sessions `ctxproxy run` reported on stderr when its command exited."""
    return re.findall(r"^ctxproxy: session (s-\S+): ", p.stderr, re.M)


# -------------------------------------------------------------------- Qwen Code

QWEN_SETTINGS = {
    "security": {"auth": {"selectedType": "openai"}},
    # No update check, usage statistics or telemetry: only the model API is called.
    "general": {"enableAutoUpdate": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    # After a turn Qwen Code 0.15 runs a "managed memory extraction subagent" that calls the
    # model again; its settings schema turns it off with memory.enableManagedAutoMemory.
    "memory": {"enableManagedAutoMemory": False},
}

@pytest.fixture(scope="module")
def qwen_two_turns(tmp_path_factory):
    """Qwen Code run twice by `ctxproxy run` on one store: the task, then `--continue` with a
    question. The environment has only the key and the model: `run` sets OPENAI_BASE_URL."""
    qwen = node_tool("CTXPROXY_QWEN", "qwen")
    tmp = tmp_path_factory.mktemp("qwen")
    work = tmp / "work"
    work.mkdir()
    store = tmp / "store" / "store.db"
    store.parent.mkdir()
    home = tmp / "home"
    (home / ".qwen").mkdir(parents=True)
    (home / ".qwen" / "settings.json").write_text(json.dumps(QWEN_SETTINGS))
    env = offline_env(home, OPENAI_API_KEY=QWEN_KEY, OPENAI_MODEL="test-model")
    target = work / "hello.txt"
    with proxylib.ScriptedUpstream() as upstream:
        upstream.push(*two_turn_script("write_file", {"file_path": str(target), "content": GREETING}))
        runs = []
        for args in ([TASK], [SECOND, "--continue"]):
            runs.append(subprocess.run(
                [str(proxylib.ctxlib.binary()), "run", "--store", str(store), "--openai-upstream", upstream.url,
                 "--anthropic-upstream", upstream.url, qwen, *args, "--yolo", "--output-format", "json"],
                cwd=work, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL))
            if runs[-1].returncode != 0:
                break
        yield types.SimpleNamespace(runs=runs, requests=list(upstream.requests), calls=upstream.model_calls(),
                                    store=store, target=target)


def qwen_result(p: subprocess.CompletedProcess) -> dict:
    [result] = [e for e in json.loads(p.stdout) if e.get("type") == "result"]
    return result


def test_qwen_code_run_by_ctxproxy_run_writes_a_file_then_continues(qwen_two_turns):
    r = qwen_two_turns
    for p in r.runs:
        assert p.returncode == 0, f"ctxproxy run qwen exited {p.returncode}\n{p.stdout}\n{p.stderr}"
    first, second = (qwen_result(p) for p in r.runs)
    assert (first["result"], first["is_error"]) == (DONE, False)
    assert (second["result"], second["is_error"]) == (ANSWER, False)
    assert second["session_id"] == first["session_id"], "qwen resumed its own conversation"
    assert r.target.read_text() == GREETING

    calls = r.calls
    assert len(calls) == 3, "one call per answer: no memory extraction, no other side call"
    assert len(r.requests) == 3, "nothing but model calls reached the upstream"
    for c in calls:
        assert c.path == "/v1/chat/completions" and c.json["model"] == "test-model"
        assert c.json["stream"] is True
        assert c.headers["authorization"] == f"Bearer {QWEN_KEY}"
        assert "write_file" in proxylib.tool_names(c.json)
    # The resumed turn carries the first turn: the task, the write and its result.
    resumed = json.dumps(calls[2].json["messages"])
    assert TASK in resumed and "call_write_hello" in resumed and "Successfully created" in resumed

    # Qwen Code sends no session header, and its resumed history starts with its environment
    # notes written anew (the folder listing now shows hello.txt): the second turn still
    # continues the conversation it repeats, in the session each run reported.
    [s1], [s2] = (run_reported_sessions(p) for p in r.runs)
    assert s2 == s1, f"the resumed turn went to {s2}, not {s1}:\n{proxylib.sessions(r.store)}"
    [(session, exchanges, prompts)] = session_rows(r.store)
    assert (session, prompts) == (s1, 3), "one prompt per request, all in one session"
    shown = proxylib.cli("show-prompt", session, "p3", store=r.store).stdout
    assert SECOND in shown and "Successfully created" in shown
    assert proxylib.files_containing(r.store.parent, QWEN_KEY.encode()) == []


# --------------------------------------------------------------- Continue's `cn`

# Continue sends the Responses API for a model named gpt-5*, Chat Completions for any other.
@pytest.mark.parametrize("model, path, history", [
    ("test-model", "/v1/chat/completions", "messages"),
    ("gpt-5", "/v1/responses", "input"),
], ids=["chat-completions", "responses"])
def test_continue_cli_writes_a_file_then_resumes_through_the_proxy(tmp_path, store, upstream, proxy,
                                                                   model, path, history):
    cn = node_tool("CTXPROXY_CN", "cn")
    work = tmp_path / "work"
    work.mkdir()
    target = work / "hello.txt"
    home = tmp_path / "home"
    env = offline_env(home, CONTINUE_GLOBAL_DIR=str(home / ".continue"), CONTINUE_CLI_ENABLE_TELEMETRY="0")
    config = tmp_path / "config.yaml"
    config.write_text(f"name: ctxproxy-test\nversion: 0.0.1\nschema: v1\nmodels:\n"
                      f"  - name: scripted\n    provider: openai\n    model: {model}\n"
                      f"    apiBase: {proxy.url}/v1\n    apiKey: {CN_KEY}\n    capabilities: [tool_use]\n")
    upstream.push(*two_turn_script("Write", {"filepath": str(target), "content": GREETING}))
    outs = []
    for args in ([TASK], [SECOND, "--resume"]):
        p = subprocess.run([cn, "-p", *args, "--config", str(config), "--auto"], cwd=work, env=env,
                           capture_output=True, text=True, timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)
        assert p.returncode == 0, f"cn exited {p.returncode}\n{p.stdout}\n{p.stderr}\nproxy:\n{proxy.stderr}"
        outs.append(p.stdout.strip())
    assert outs == [DONE, ANSWER]
    assert target.read_text() == GREETING

    calls = upstream.model_calls()
    assert len(calls) == 3 and len(upstream.requests) == 3
    for c in calls:
        assert c.path == path and c.json["model"] == model
        assert c.json["stream"] is True
        assert c.headers["authorization"] == f"Bearer {CN_KEY}"
        assert {"Write", "context_retrieve", "context_search"} <= set(proxylib.tool_names(c.json))
    resumed = json.dumps(calls[2].json[history])
    assert TASK in resumed and "call_write_hello" in resumed and SECOND in resumed

    # One session: the resumed turn continued it.
    [(session, exchanges, prompts)] = session_rows(store)
    assert (exchanges, prompts) == (2, 3)
    shown = proxylib.cli("show-prompt", session, "p3", store=store).stdout
    assert SECOND in shown
    assert proxylib.files_containing(store.parent, CN_KEY.encode()) == []


# --------------------------------------------------------------------- opencode

# opencode's provider package decides the API: Chat Completions, or the Responses API
# (`@ai-sdk/openai`); both are bundled in the opencode binary.
@pytest.mark.parametrize("package, path, history", [
    ("@ai-sdk/openai-compatible", "/v1/chat/completions", "messages"),
    ("@ai-sdk/openai", "/v1/responses", "input"),
], ids=["chat-completions", "responses"])
def test_opencode_writes_a_file_then_continues_through_the_proxy(tmp_path, store, upstream, proxy,
                                                                 package, path, history):
    opencode = node_tool("CTXPROXY_OPENCODE", "opencode")
    work = tmp_path / "work"
    work.mkdir()
    target = work / "hello.txt"
    home = tmp_path / "home"
    config_dir = home / ".config" / "opencode"
    config_dir.mkdir(parents=True)
    (config_dir / "opencode.json").write_text(json.dumps({
        "$schema": "https://opencode.ai/config.json", "autoupdate": False, "share": "disabled",
        "provider": {"scripted": {"npm": package, "name": "Scripted",
                                  "options": {"baseURL": proxy.url + "/v1", "apiKey": OPENCODE_KEY},
                                  "models": {"test-model": {"name": "Test model", "tool_call": True}}}},
        "model": "scripted/test-model", "small_model": "scripted/test-model"}))
    # OPENCODE_DISABLE_MODELS_FETCH: no models.dev catalogue. At every start opencode also
    # installs @opencode-ai/plugin into its config directory with its bundled npm and waits
    # for it; with npm offline that fails (a warning, about 3 s) and the run goes on. PWD: the
    # directory `opencode run` works in is $PWD, not the process's cwd.
    env = offline_env(home, XDG_DATA_HOME=str(home / ".local" / "share"), XDG_CACHE_HOME=str(home / ".cache"),
                      XDG_STATE_HOME=str(home / ".local" / "state"), OPENCODE_DISABLE_MODELS_FETCH="1",
                      OPENCODE_DISABLE_AUTOUPDATE="1", OPENCODE_DISABLE_SHARE="1", npm_config_offline="true",
                      PWD=str(work))
    main = two_turn_script("write", {"filePath": str(target), "content": GREETING})

    def answer(rec: proxylib.Recorded) -> Turn:
        # The first turn's title request (to small_model, without opencode's tools) runs
        # alongside the main one.
        if "write" not in proxylib.tool_names(rec.json):
            return Turn(text="Greeting file")
        return main.pop(0)

    upstream.push(*[answer] * 4)
    texts, session_id = [], None
    for args in ([TASK], [SECOND, "--session", "SESSION"]):
        args = [session_id if a == "SESSION" else a for a in args]
        p = subprocess.run([opencode, "run", "--auto", "--format", "json", "-m", "scripted/test-model", *args],
                           cwd=work, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                           stdin=subprocess.DEVNULL)
        assert p.returncode == 0, f"opencode exited {p.returncode}\n{p.stdout}\n{p.stderr}\nproxy:\n{proxy.stderr}"
        events = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
        texts.append([e["part"]["text"] for e in events if e["type"] == "text"])
        assert {e["sessionID"] for e in events} == {session_id or events[0]["sessionID"]}
        session_id = events[0]["sessionID"]
    assert texts == [[DONE], [ANSWER]]
    assert target.read_text() == GREETING
    assert not (config_dir / "node_modules").exists(), "opencode downloaded nothing"

    calls = upstream.model_calls()
    assert len(calls) == 4 and len(upstream.requests) == 4 and not main
    [title] = [c for c in calls if "write" not in proxylib.tool_names(c.json)]
    assert "You are a title generator." in json.dumps(title.json[history][0])
    turns = [c for c in calls if c is not title]
    for c in calls:
        assert c.path == path and c.json["model"] == "test-model"
        assert c.json["stream"] is True
        assert c.headers["authorization"] == f"Bearer {OPENCODE_KEY}"
        assert c.headers["x-session-id"] == session_id
    for c in turns:
        assert {"write", "context_retrieve", "context_search"} <= set(proxylib.tool_names(c.json))
    resumed = json.dumps(turns[2].json[history])
    assert TASK in resumed and "call_write_hello" in resumed and SECOND in resumed

    # The title request is a conversation of its own; the main one continued across the runs.
    rows = session_rows(store)
    assert sorted(prompts for _, _, prompts in rows) == [1, 3], proxylib.sessions(store)
    [(session, exchanges, _)] = [row for row in rows if row[2] == 3]
    assert exchanges == 2
    assert SECOND in proxylib.cli("show-prompt", session, "p3", store=store).stdout
    assert proxylib.files_containing(store.parent, OPENCODE_KEY.encode()) == []


# ------------------------------------------------------------------- Gemini CLI

GEMINI_KEY = "AIzaSyGeminiclitest0123456789abcdefgh"
# The API key, no trust prompt, no usage statistics: only the model API is called.
GEMINI_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "telemetry": {"enabled": False},
}
# Gemini CLI opens a conversation with a session context holding the workspace's directory tree,
# and `--resume` writes it anew: with hello.txt in the tree, the resumed history's first message
# and so its key differ, and the proxy still finds the conversation it repeats.


def gemini_env(home: pathlib.Path, **extra: str) -> dict:
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(GEMINI_SETTINGS))
    env = offline_env(home)
    for k in list(env):
        if k.startswith(("GEMINI_", "GOOGLE_")):
            del env[k]
    return env | {"GEMINI_API_KEY": GEMINI_KEY, **extra}


def gemini_text(p: subprocess.CompletedProcess) -> str:
    return json.loads(p.stdout)["response"]


def routed(script: list) -> proxylib.Entry:
    """Gemini CLI's answer: its router call (no model named: a JSON answer picks flash or pro)
    gets the router's choice, every other call the script's next turn."""
    def answer(rec: proxylib.Recorded) -> Turn:
        if "responseJsonSchema" in rec.json.get("generationConfig", {}):
            return Turn(text=json.dumps({"reasoning": "One file to write.", "model_choice": "flash"}))
        return script.pop(0)
    return answer


# model None: Gemini CLI's default, which routes each turn with a call of its own first.
@pytest.mark.parametrize("model, internal_round", [
    ("test-model", False), ("test-model", True), (None, False),
], ids=["plain", "context-search-round", "default-model"])
def test_gemini_cli_writes_a_file_then_resumes_through_the_proxy(tmp_path, store, upstream, model,
                                                                 internal_round):
    gemini = node_tool("CTXPROXY_GEMINI", "gemini")
    work = tmp_path / "work"
    work.mkdir()
    target = work / "hello.txt"
    with proxylib.Proxy(store, upstream.url, upstream.url, extra=["--gemini-upstream", upstream.url]) as proxy:
        env = gemini_env(tmp_path / "home", GOOGLE_GEMINI_BASE_URL=proxy.url)
        script = two_turn_script("write_file", {"file_path": str(target), "content": GREETING})
        if internal_round:
            # The model first searches the stored context, with a thought and its signature; the
            # proxy answers that itself and Gemini CLI never sees it.
            script.insert(0, Turn(thinking="Look for earlier notes.",
                                  tool_calls=[ToolCall("ctx_search_1", "context_search", {"query": "hello"})]))
        upstream.push(*([routed(script)] * 8 if model is None else script))
        named = ["-m", model] if model else []
        outs = []
        for args in (["-p", TASK], ["--resume", "latest", "-p", SECOND]):
            p = subprocess.run([gemini, *named, *args, "--yolo", "-o", "json", "--skip-trust"],
                               cwd=work, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                               stdin=subprocess.DEVNULL)
            assert p.returncode == 0, f"gemini exited {p.returncode}\n{p.stdout}\n{p.stderr}\nproxy:\n{proxy.stderr}"
            assert "context_search" not in p.stdout
            outs.append(gemini_text(p))
    assert outs == [DONE, ANSWER]
    assert target.read_text() == GREETING

    requests = upstream.model_calls()
    assert len(upstream.requests) == len(requests), [r.path for r in upstream.requests]
    routers = [c for c in requests if c.path.endswith(":generateContent")]
    assert len(routers) == (0 if model else 2), "one router call a turn, when no model is named"
    calls = [c for c in requests if c not in routers]
    assert len(calls) == 3 + internal_round, [r.path for r in requests]
    if internal_round:
        searched, answered = calls[1].json["contents"][-2:]
        assert searched["parts"][-1]["thoughtSignature"] == Turn().signature
        assert answered["parts"][0]["functionResponse"]["id"] == "ctx_search_1"
    for c in routers:
        assert c.headers["x-goog-api-key"] == GEMINI_KEY and "tools" not in c.json
    for c in calls:
        assert re.fullmatch(r"/v1beta/models/%s:streamGenerateContent" % (model or "gemini-[0-9.]+-[a-z-]+"), c.path)
        assert c.query == "alt=sse" and c.headers["x-goog-api-key"] == GEMINI_KEY
        names = [d["name"] for t in c.json["tools"] for d in t.get("functionDeclarations", [])]
        assert {"write_file", "context_retrieve", "context_search"} <= set(names)
    resumed = json.dumps(calls[-1].json["contents"])
    assert TASK in resumed and "call_write_hello" in resumed and SECOND in resumed
    assert "ctx_search_1" not in resumed, "the client's history holds no context call"

    # One session: the resumed turn continued it. Each router call is a one-shot conversation of
    # its own.
    rows = session_rows(store)
    assert sorted(prompts for _, _, prompts in rows) == [1] * len(routers) + [3], proxylib.sessions(store)
    [(session, exchanges, _)] = [row for row in rows if row[2] == 3]
    assert exchanges == 2
    assert SECOND in proxylib.cli("show-prompt", session, "p3", store=store).stdout
    assert proxylib.files_containing(store.parent, GEMINI_KEY.encode()) == []


# ------------------------------------------------------------------------ Codex

# A patch that adds hello.txt, in the grammar of Codex's apply_patch (a custom tool: free text).
CODEX_PATCH = f"*** Begin Patch\n*** Add File: hello.txt\n+{GREETING}*** End Patch\n"


def codex_config(base_url: str) -> str:
    """Codex's config.toml for a provider on `base_url` over the Responses API. The model is
    one Codex knows (gpt-5.5): it then offers apply_patch and looks up no model metadata."""
    return (f'model = "gpt-5.5"\nmodel_provider = "scripted"\napproval_policy = "never"\n'
            f'sandbox_mode = "danger-full-access"\n\n[model_providers.scripted]\nname = "scripted"\n'
            f'base_url = "{base_url}/v1"\nenv_key = "SCRIPTED_API_KEY"\nwire_api = "responses"\n\n'
            f'[analytics]\nenabled = false\n')


def codex_messages(p: subprocess.CompletedProcess) -> tuple[str, list[str]]:
    """The thread a `codex exec --json` run reports and its agent messages."""
    events = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    [thread] = [e["thread_id"] for e in events if e["type"] == "thread.started"]
    return thread, [e["item"]["text"] for e in events
                    if e["type"] == "item.completed" and e["item"]["type"] == "agent_message"]


def test_codex_patches_a_file_then_resumes_through_the_proxy(tmp_path, store, upstream, proxy):
    codex = node_tool("CTXPROXY_CODEX", "codex")
    work = tmp_path / "work"
    work.mkdir()
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(codex_config(proxy.url))
    env = offline_env(tmp_path / "home", CODEX_HOME=str(codex_home), SCRIPTED_API_KEY=CODEX_KEY)
    upstream.push(Turn(tool_calls=[ToolCall("call_patch_hello", "apply_patch", CODEX_PATCH)],
                       thinking="**Planning** the file", signature="gAAAA-opaque-1"),
                  Turn(text=DONE), Turn(text=ANSWER))
    runs = []
    for args in ([TASK], ["resume", "--last", SECOND]):
        p = subprocess.run([codex, "exec", "--skip-git-repo-check", "--json", *args], cwd=work, env=env,
                           capture_output=True, text=True, timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)
        assert p.returncode == 0, f"codex exited {p.returncode}\n{p.stdout}\n{p.stderr}\nproxy:\n{proxy.stderr}"
        runs.append(codex_messages(p))
    (thread, first), (resumed_thread, second) = runs
    assert (first, second) == ([DONE], [ANSWER])
    assert resumed_thread == thread, "codex resumed its own thread"
    assert (work / "hello.txt").read_text() == GREETING

    calls = upstream.model_calls()
    assert len(calls) == 3 and len(upstream.requests) == 3, "nothing but model calls reached the upstream"
    for c in calls:
        assert c.path == "/v1/responses" and c.json["model"] == "gpt-5.5" and c.json["stream"] is True
        assert c.headers["authorization"] == f"Bearer {CODEX_KEY}"
        assert c.headers["session-id"] == thread and c.json["prompt_cache_key"] == thread
        tools = {t.get("name") for t in c.json["tools"]}
        assert {"exec_command", "apply_patch", "context_retrieve", "context_search"} <= tools
        assert c.json["input"][0]["role"] == "developer", "Codex's own instructions lead, as it sent them"
    # Codex sends the patch back with its reasoning and output; they reach the model so.
    after = calls[1].json["input"]
    at = [i["type"] for i in after].index("custom_tool_call")
    assert after[at - 1]["encrypted_content"] == "gAAAA-opaque-1"
    assert after[at]["input"] == CODEX_PATCH and after[at + 1]["type"] == "custom_tool_call_output"
    resumed = json.dumps(calls[2].json["input"])
    assert TASK in resumed and "call_patch_hello" in resumed and SECOND in resumed

    # Both turns are one ctxproxy session, named by Codex's thread id.
    [(session, exchanges, prompts)] = session_rows(store)
    assert prompts == 3 and f"codex:{thread}" in proxylib.sessions(store)
    assert SECOND in proxylib.cli("show-prompt", session, "p3", store=store).stdout
    assert proxylib.files_containing(store.parent, CODEX_KEY.encode()) == []

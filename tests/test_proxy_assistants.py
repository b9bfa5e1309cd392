"""Real assistants, installed from their registries, run headless through
`ctxproxy proxy` with the scripted upstream behind it: Claude Code
(`claude -p`, npm `@anthropic-ai/claude-code`) and Aider (`aider --message`,
PyPI `aider-chat`). Each completes a short task: the scripted model asks for
a file to be written, the assistant writes it, the model ends with a text.
Everything runs offline on loopback.

`.ci/run` installs both into tests/.tools (npm into a local prefix, Aider into
its own venv). A test is skipped, naming what is missing, only when its tool
is not installed; CTXPROXY_CLAUDE / CTXPROXY_AIDER point at other installs.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess

import pytest

import proxylib
from proxylib import ToolCall, Turn

TOOLS = pathlib.Path(__file__).resolve().parent / ".tools"
ANTHROPIC_KEY = "sk-ant-api03-claudecodetest0123456789abcdef"
OPENAI_KEY = "sk-proj-aidertest0123456789abcdef"
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
        if k.startswith(("ANTHROPIC_", "OPENAI_", "CLAUDE", "AIDER_")):
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

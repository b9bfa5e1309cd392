"""What the proxy shows of its work: `GET /metrics` (parsed by
prometheus_client's parser, as Prometheus would read it), `GET /dashboard`
(opened in headless Chromium), `show-prompt`'s provider usage, and the
token that guards them.

The scripted upstream reports usage on every reply, cached tokens included,
in each API's own fields; the metrics must sum exactly what it reported,
internal context-tool rounds included, streamed and whole, on all four APIs."""

from __future__ import annotations

import json
import pathlib
import re
import shutil
import subprocess
import urllib.parse

import anthropic
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

import proxylib
from proxylib import ToolCall, Turn

MODEL = "scripted-model"
KEY = "sk-ant-metrics-test-key-0123456789"
CHROMIUM = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(b)), None)

HISTORY = [
    {"role": "user", "content": "Note for later: the release train leaves on Thursday at 16:00."},
    {"role": "assistant", "content": "Noted."},
    {"role": "user", "content": "When does the release train leave?"},
]


@pytest.fixture
def upstream():
    with proxylib.ScriptedUpstream() as up:
        yield up


def open_proxy(store: pathlib.Path, upstream, *extra: str) -> proxylib.Proxy:
    return proxylib.Proxy(store, upstream.url, upstream.url,
                          extra=["--gemini-upstream", upstream.url, *extra])


def metrics(proxy, **query) -> dict[tuple[str, tuple], float]:
    """Every sample of `/metrics`, by name and sorted labels."""
    url = proxy.url + "/metrics" + ("?" + urllib.parse.urlencode(query) if query else "")
    status, headers, body = proxylib.raw_request(url)
    assert status == 200, body
    assert headers["content-type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def summed(samples: dict, name: str, **labels) -> float:
    return sum(v for (n, ls), v in samples.items()
               if n == name and all(dict(ls).get(k) == want for k, want in labels.items()))


# --------------------------------------------------------------- one request each API

def rounds() -> list[Turn]:
    """A context-tool round, then the answer: two upstream calls, each with
    its own usage."""
    return [
        Turn(tool_calls=[ToolCall("call_ctx_1", "context_search", {"query": "release train"})],
             input_tokens=1200, cached_tokens=1000, cache_write_tokens=0, output_tokens=17),
        Turn(text="Thursday at 16:00.", input_tokens=1350, cached_tokens=1100,
             cache_write_tokens=150, output_tokens=9),
    ]


def expected_usage(api: str, turns: list[Turn]) -> tuple[int, int, int]:
    """Input, cached input and output as the metrics count them: cached
    tokens are part of the input; Anthropic states input, cache reads and
    cache writes apart, so its input is their sum."""
    if api == "anthropic":
        inp = sum(t.input_tokens + t.cached_tokens + t.cache_write_tokens for t in turns)
    else:
        inp = sum(t.input_tokens for t in turns)
    return inp, sum(t.cached_tokens for t in turns), sum(t.output_tokens for t in turns)


def send(api: str, proxy, stream: bool, headers: dict | None = None) -> str:
    """One request of the conversation in `api`'s shape; returns the reply's text."""
    headers = headers or {}
    if api == "openai":
        c = openai.OpenAI(base_url=proxy.url + "/v1", api_key=KEY, max_retries=0, default_headers=headers)
        if stream:
            chunks = c.chat.completions.create(model=MODEL, messages=HISTORY, stream=True)
            return "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
        return c.chat.completions.create(model=MODEL, messages=HISTORY).choices[0].message.content
    if api == "anthropic":
        c = anthropic.Anthropic(base_url=proxy.url, api_key=KEY, max_retries=0, default_headers=headers)
        if stream:
            with c.messages.stream(model=MODEL, max_tokens=100, messages=HISTORY) as s:
                return s.get_final_text()
        reply = c.messages.create(model=MODEL, max_tokens=100, messages=HISTORY)
        return "".join(b.text for b in reply.content if b.type == "text")
    if api == "responses":
        c = openai.OpenAI(base_url=proxy.url + "/v1", api_key=KEY, max_retries=0, default_headers=headers)
        if stream:
            text = ""
            for event in c.responses.create(model=MODEL, input=HISTORY, stream=True):
                if event.type == "response.output_text.delta":
                    text += event.delta
            return text
        return c.responses.create(model=MODEL, input=HISTORY).output_text
    assert api == "gemini"
    contents = [{"role": "model" if m["role"] == "assistant" else "user", "parts": [{"text": m["content"]}]}
                for m in HISTORY]
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    status, _, body = proxylib.raw_request(
        f"{proxy.url}/v1beta/models/{MODEL}:{method}", "POST", json.dumps({"contents": contents}).encode(),
        {"content-type": "application/json", "x-goog-api-key": KEY, **headers})
    assert status == 200, body
    if not stream:
        return "".join(p.get("text", "") for p in json.loads(body)["candidates"][0]["content"]["parts"])
    chunks = [json.loads(line[5:]) for line in body.decode().splitlines() if line.startswith("data:")]
    return "".join(p.get("text", "") for c in chunks for cand in c.get("candidates", [])
                   for p in cand.get("content", {}).get("parts", []))


API_LABEL = {"openai": "openai", "anthropic": "anthropic", "responses": "responses", "gemini": "gemini"}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("api", ["openai", "anthropic", "responses", "gemini"])
def test_metrics_sum_exactly_what_the_upstream_reported(api, stream, upstream, tmp_path):
    store = tmp_path / "store.db"
    with open_proxy(store, upstream) as p:
        before = metrics(p)
        assert summed(before, "ctxproxy_requests_total") == 0
        turns = rounds()
        upstream.push(*turns)
        assert send(api, p, stream) == "Thursday at 16:00."
        assert len(upstream.model_calls()) == 2, "the context round and the answer"
        after = metrics(p)

    inp, cached, out = expected_usage(api, turns)
    label = {"api": API_LABEL[api], "model": MODEL}
    assert summed(after, "ctxproxy_requests_total", outcome="ok", **label) == 1
    assert summed(after, "ctxproxy_upstream_input_tokens_total", **label) == inp
    assert summed(after, "ctxproxy_upstream_cached_input_tokens_total", **label) == cached
    assert summed(after, "ctxproxy_upstream_output_tokens_total", **label) == out
    assert summed(after, "ctxproxy_client_tokens_total", **label) > 0
    assert summed(after, "ctxproxy_forwarded_tokens_total", **label) > 0
    assert summed(after, "ctxproxy_added_seconds_count", **label) == 1
    assert summed(after, "ctxproxy_added_seconds_sum", **label) > 0
    # No label names a key, a session or any content.
    for (name, labels), _ in after.items():
        assert set(dict(labels)) <= {"api", "model", "outcome", "le"}, (name, labels)
        assert not any(KEY in v or "release" in v for _, v in labels)

    # The prompt's record shows what the provider counted beside ctxproxy's own count.
    session = re.search(r"\bs-[a-z0-9]+", proxylib.sessions(store)).group(0)
    shown = proxylib.cli("show-prompt", session, "p1", store=store).stdout
    assert f"provider usage: {inp} input ({cached} cached" in shown
    assert f"{out} output" in shown
    assert "2 round(s)" in shown


def test_an_upstream_error_is_counted_as_one(upstream, tmp_path):
    with open_proxy(tmp_path / "store.db", upstream) as p:
        upstream.push(proxylib.openai_error(429, "slow down", "rate_limit_exceeded"))
        c = openai.OpenAI(base_url=p.url + "/v1", api_key=KEY, max_retries=0)
        with pytest.raises(openai.RateLimitError):
            c.chat.completions.create(model=MODEL, messages=HISTORY)
        m = metrics(p)
    assert summed(m, "ctxproxy_requests_total", outcome="upstream_error") == 1
    assert summed(m, "ctxproxy_requests_total", outcome="ok") == 0
    assert summed(m, "ctxproxy_upstream_input_tokens_total") == 0


# ----------------------------------------------------------------------- the token

def test_the_token_guards_metrics_and_the_dashboard(upstream, tmp_path):
    token = "dash-token-7f3a"
    with open_proxy(tmp_path / "store.db", upstream, "--token", token) as p:
        for path in ("/metrics", "/dashboard", "/dashboard/api/overview"):
            status, _, body = proxylib.raw_request(p.url + path)
            assert status == 401, (path, body)
            assert b"x-ctxproxy-token" in body
            assert proxylib.raw_request(p.url + path + "?token=wrong")[0] == 401
            assert proxylib.raw_request(p.url + path, headers={"x-ctxproxy-token": token})[0] == 200
            assert proxylib.raw_request(p.url + path + "?token=" + token)[0] == 200


def test_without_a_token_on_loopback_they_are_open(upstream, tmp_path):
    with open_proxy(tmp_path / "store.db", upstream) as p:
        status, headers, body = proxylib.raw_request(p.url + "/dashboard")
        assert status == 200 and headers["content-type"].startswith("text/html")
        # One page, no fetch beyond the proxy itself.
        assert b"http://" not in body and b"https://" not in body
        assert proxylib.raw_request(p.url + "/metrics")[0] == 200
        assert upstream.requests == [], "nothing forwarded"


# ------------------------------------------------------------------- the dashboard

def chromium(tmp: pathlib.Path, *args) -> subprocess.CompletedProcess:
    argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            f"--user-data-dir={tmp / 'profile'}", "--no-first-run", "--disable-background-networking",
            "--virtual-time-budget=5000", *map(str, args)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)


@pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (apt-get install chromium)")
def test_the_dashboard_shows_every_session_and_its_newest_prompt(upstream, tmp_path):
    token = "dash-token-in-browser"
    with open_proxy(tmp_path / "store.db", upstream, "--token", token) as p:
        ours = {"x-ctxproxy-token": token}
        upstream.push(*rounds())
        send("openai", p, stream=True, headers=ours)
        upstream.push(Turn(text="Thursday.", input_tokens=900, cached_tokens=640, output_tokens=4))
        send("anthropic", p, stream=False, headers=ours)
        overview = json.loads(proxylib.raw_request(
            p.url + "/dashboard/api/overview", headers={"x-ctxproxy-token": token})[2])
        sessions = {s["session"]: s for s in overview["sessions"]}
        assert len(sessions) == 2
        assert overview["totals"]["requests"] == 2
        assert overview["totals"]["upstreamCachedInputTokens"] == 2100 + 640

        base = f"{p.url}/dashboard?token={token}"
        dom = chromium(tmp_path, "--dump-dom", base).stdout
        for s in sessions.values():
            assert f'data-session="{s["session"]}"' in dom
            assert f'{s["usage"]["input"]:,}' in dom, "the provider's input, as reported"
        assert "cache hit rate" in dom and "<svg" in dom
        chromium(tmp_path, f"--screenshot={tmp_path / 'dashboard.png'}", "--window-size=1400,1100", base)
        assert (tmp_path / "dashboard.png").stat().st_size > 10_000

        anthropic_session = next(s for s in sessions.values() if s["usage"]["output"] == 4)["session"]
        dom = chromium(tmp_path, "--dump-dom", f"{base}#session/{anthropic_session}").stdout
        assert 'id="newest-prompt"' in dom and ">p1<" in dom
        dom = chromium(tmp_path, "--dump-dom", f"{base}#prompt/{anthropic_session}/p1").stdout
        assert 'id="layers"' in dom
        assert "When does the release train leave?" in dom, "what the model saw"
        assert "640" in dom, "the provider's cached tokens for this prompt"


# ------------------------------------------------------------------------- traces

class Collector:
    """An OTLP/HTTP collector on loopback that keeps every JSON export."""

    def __init__(self):
        import http.server
        import threading
        bodies = self.bodies = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers["content-length"]))
                bodies.append((self.path, self.headers.get("content-type"), json.loads(body)))
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def spans(self) -> list[dict]:
        return [s for _, _, b in self.bodies for rs in b["resourceSpans"]
                for ss in rs["scopeSpans"] for s in ss["spans"]]


def test_traces_give_one_span_per_request_and_no_content(upstream, tmp_path):
    collector = Collector()
    env = dict(proxylib.env_without_proxies(), OTEL_EXPORTER_OTLP_ENDPOINT=collector.url,
               OTEL_EXPORTER_OTLP_PROTOCOL="http/json")
    with proxylib.Proxy(tmp_path / "store.db", upstream.url, upstream.url, env=env) as p:
        upstream.push(*rounds())
        send("openai", p, stream=False)
        upstream.push(Turn(text="Thursday.", input_tokens=900, cached_tokens=640, cache_write_tokens=60,
                           output_tokens=4))
        send("anthropic", p, stream=True)
    # The proxy exports what is batched when it stops.
    collector.server.shutdown()
    assert {path for path, _, _ in collector.bodies} == {"/v1/traces"}
    spans = sorted(collector.spans(), key=lambda s: int(s["startTimeUnixNano"]))
    assert [s["name"] for s in spans] == [f"chat {MODEL}"] * 2
    assert all(s["kind"] == 3 for s in spans), "client spans"

    def attrs(span):
        return {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}

    first, second = attrs(spans[0]), attrs(spans[1])
    assert first["gen_ai.provider.name"] == "openai" and second["gen_ai.provider.name"] == "anthropic"
    assert first["gen_ai.request.model"] == MODEL
    assert int(first["gen_ai.usage.input_tokens"]) == 1200 + 1350
    assert int(first["gen_ai.usage.output_tokens"]) == 17 + 9
    assert int(first["ctxproxy.rounds"]) == 2
    assert int(second["gen_ai.usage.input_tokens"]) == 900 + 640 + 60
    assert int(second["gen_ai.usage.cache_read.input_tokens"]) == 640
    exported = json.dumps(collector.bodies)
    assert "release train" not in exported and KEY not in exported, "never any content"

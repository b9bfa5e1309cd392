"""What one large body costs the proxy's memory, and that it is given back.

A seeded body of 100,000 short messages (4 MB, 50,000 exchanges to store;
`proxylib.many_messages_body`) sent to a proxy that has served one small
request: its resident memory may grow by at most 20 times the body while the
body is handled (VmHWM, reset before the body, against VmRSS before), and
once the proxy is idle it must come back within 6 times the body of where
it was (polled for up to 10 s): what stays is what is kept on purpose (the
conversation's message fingerprints, the store's caches), not the request's
working memory. Measured on the release build before and after in
docs/PERFORMANCE.md, "Memory of a body of 100,000 messages"."""

from __future__ import annotations

import time

import pytest

import proxylib

PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}
HEADERS = {"content-type": "application/json", "authorization": "Bearer sk-memory",
           "x-api-key": "sk-memory", "anthropic-version": "2023-06-01"}

# Peak growth while the body is handled, in bodies.
PEAK_BODIES = 20
# Growth that may stay once idle, in bodies.
KEPT_BODIES = 6
# Seconds of idleness within which the memory must be given back.
IDLE = 10.0


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_a_body_of_100000_short_messages_costs_a_bounded_multiple_of_itself_and_is_given_back(
        store, upstream, api):
    body = proxylib.many_messages_body(api, seed=7)
    upstream.push(proxylib.Turn(text="warmed up", delay=0), proxylib.Turn(text="ok", delay=0))
    url_path = PATHS[api]
    with proxylib.Proxy(store, upstream.url, upstream.url, config=None) as p:
        pid = p.proc.pid
        # A small request first: the tokenizer's tables and the store's caches are loaded then.
        small = proxylib.many_messages_body(api, seed=7, count=1)
        status, _, reply = proxylib.raw_request(p.url + url_path, "POST", small, HEADERS)
        assert status == 200, reply
        before = proxylib.status_kib(pid, "VmRSS") * 1024
        proxylib.reset_peak(pid)
        status, _, reply = proxylib.raw_request(p.url + url_path, "POST", body, HEADERS, timeout=600)
        assert status == 200, reply[:500]
        peak = proxylib.status_kib(pid, "VmHWM") * 1024
        kept = KEPT_BODIES * len(body)
        deadline = time.monotonic() + IDLE
        rss = proxylib.status_kib(pid, "VmRSS") * 1024
        while rss - before > kept and time.monotonic() < deadline:
            time.sleep(0.25)
            rss = proxylib.status_kib(pid, "VmRSS") * 1024
    mb = 1 << 20
    assert peak - before <= PEAK_BODIES * len(body), (
        f"peak {before / mb:.0f} -> {peak / mb:.0f} MiB for a {len(body) / mb:.1f} MiB body "
        f"({(peak - before) / len(body):.0f} times it)")
    assert rss - before <= kept, (
        f"after {IDLE:g} s idle {before / mb:.0f} -> {rss / mb:.0f} MiB for a {len(body) / mb:.1f} MiB body "
        f"({(rss - before) / len(body):.0f} times it)")

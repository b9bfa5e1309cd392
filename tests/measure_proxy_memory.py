"""What one large body costs the proxy's memory, and what it gives back.

Starts `ctxproxy proxy` (the binary CTXPROXY_BIN names) on a fresh store,
warms it with one small request, then sends SESSIONS bodies of 100,000
short messages (`proxylib.many_messages_body`, one seed per body, so each is
a conversation of its own) one after the other. For each body it prints the
peak growth (VmHWM, reset before the body, less VmRSS before the first
body), VmRSS when the reply came and VmRSS after IDLE seconds of idleness.

    CTXPROXY_BIN=target/release/ctxproxy python3 tests/measure_proxy_memory.py [openai|anthropic] [SESSIONS] [IDLE]
"""

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import proxylib  # noqa: E402

PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}
HEADERS = {"content-type": "application/json", "authorization": "Bearer sk-memory",
           "x-api-key": "sk-memory", "anthropic-version": "2023-06-01"}


def mib(kib: int) -> float:
    return kib / 1024


def main():
    api = sys.argv[1] if len(sys.argv) > 1 else "openai"
    sessions = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    idle = float(sys.argv[3]) if len(sys.argv) > 3 else 10.0
    url_path = PATHS[api]
    with tempfile.TemporaryDirectory() as d, proxylib.ScriptedUpstream() as upstream:
        upstream.push(*[proxylib.Turn(text="ok", delay=0) for _ in range(sessions + 1)])
        with proxylib.Proxy(Path(d) / "store.db", upstream.url, upstream.url, config=None) as p:
            pid = p.proc.pid
            small = proxylib.many_messages_body(api, 0, count=1)
            status, _, reply = proxylib.raw_request(p.url + url_path, "POST", small, HEADERS)
            assert status == 200, reply
            base = proxylib.status_kib(pid, "VmRSS")
            print(f"{api}: VmRSS after a small request {mib(base):.0f} MiB")
            for s in range(1, sessions + 1):
                body = proxylib.many_messages_body(api, s)
                proxylib.reset_peak(pid)
                started = time.monotonic()
                status, _, reply = proxylib.raw_request(p.url + url_path, "POST", body, HEADERS, timeout=900)
                took = time.monotonic() - started
                assert status == 200, reply[:500]
                peak = proxylib.status_kib(pid, "VmHWM")
                after = proxylib.status_kib(pid, "VmRSS")
                time.sleep(idle)
                rested = proxylib.status_kib(pid, "VmRSS")
                print(f"body {s} ({len(body) / 1e6:.1f} MB, {took:.1f} s): peak +{mib(peak - base):.0f} MiB "
                      f"({(peak - base) * 1024 / len(body):.0f}x the body), at the reply +{mib(after - base):.0f} MiB, "
                      f"after {idle:g} s idle +{mib(rested - base):.0f} MiB ({mib(rested):.0f} MiB)")


if __name__ == "__main__":
    main()

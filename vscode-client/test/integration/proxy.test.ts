// The extension's ProxyProcess runs the real `ctxproxy proxy`: ready line, /healthz, a clean stop, and
// a clear error when the binary refuses its arguments.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { ProxyProcess, proxyArgs } from "../../src/proxyProcess";
import { sidecarBinary } from "../sidecarProcess";

test("the proxy starts beside the sidecar, answers /healthz on the address it printed, and stops", async () => {
  const storeDir = mkdtempSync(join(tmpdir(), "ctxproxy-proxy-"));
  const log: string[] = [];
  const proxy = new ProxyProcess((line) => log.push(line));
  try {
    const settings: Record<string, unknown> = { "proxy.enabled": true, "proxy.listen": "127.0.0.1:0" };
    const args = proxyArgs((key) => settings[key], { storePath: join(storeDir, "store.db") })!;
    const url = await proxy.start(sidecarBinary(), args);
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(proxy.url, url);
    const health = await fetch(`${url}/healthz`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { ok: true });
  } finally {
    await proxy.stop();
    rmSync(storeDir, { recursive: true, force: true });
  }
  assert.equal(proxy.url, undefined);
  assert.ok(log.some((line) => line.startsWith("proxy exited")), log.join("\n"));
});

test("a proxy that cannot start says why", async () => {
  const proxy = new ProxyProcess(() => {});
  await assert.rejects(
    proxy.start(sidecarBinary(), ["proxy", "--listen", "not-an-address"]),
    /exited \(status \d+\) before it was ready: .*not-an-address/s,
  );
});

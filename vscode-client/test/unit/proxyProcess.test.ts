// The proxy's command line from the settings, and its ready line.
import assert from "node:assert/strict";
import { test } from "node:test";
import { proxyArgs, readyUrl } from "../../src/proxyProcess";

test("the proxy runs only when enabled, with the listen address, upstreams and the sidecar's settings", () => {
  const settings: Record<string, unknown> = { "proxy.enabled": false };
  const read = (key: string) => settings[key];
  assert.equal(proxyArgs(read, { budget: 8000 }), undefined);
  settings["proxy.enabled"] = true;
  assert.deepEqual(proxyArgs(read, {}), ["proxy", "--listen", "127.0.0.1:8787"]);
  settings["proxy.listen"] = " 127.0.0.1:0 ";
  settings["proxy.openaiUpstream"] = "http://127.0.0.1:9000";
  settings["proxy.anthropicUpstream"] = "";
  assert.deepEqual(proxyArgs(read, { budget: 8000, storePath: "/tmp/s.db" }), [
    "proxy",
    "--listen",
    "127.0.0.1:0",
    "--openai-upstream",
    "http://127.0.0.1:9000",
    "--config",
    '{"budget":8000,"storePath":"/tmp/s.db"}',
  ]);
});

test("the ready line gives the address; other lines give none", () => {
  assert.equal(readyUrl("ctxproxy proxy listening on http://127.0.0.1:40123"), "http://127.0.0.1:40123");
  assert.equal(readyUrl("ctxproxy proxy listening on http://127.0.0.1:40123\r"), "http://127.0.0.1:40123");
  assert.equal(readyUrl("warming up the tokenizer"), undefined);
  assert.equal(readyUrl("xctxproxy proxy listening on http://a"), undefined);
});

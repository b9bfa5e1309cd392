// Small pure pieces of the extension's shell: settings, binary lookup, document addresses, prompt history.
import assert from "node:assert/strict";
import { test } from "node:test";
import { PromptHistory } from "../../src/promptHistory";
import { parseRetrieveUriPath, retrieveUriPath } from "../../src/retrieveUri";
import { resolveServerPath } from "../../src/serverPath";
import { serverConfig } from "../../src/settings";

test("settings map onto the protocol's configuration; an empty store path is left to the server", () => {
  const settings: Record<string, unknown> = {
    storePath: "",
    budget: 8000,
    encoding: "cl100k_base",
    order: "seed003",
    "layers.recentFull": 3,
    "layers.maxHeaders": 50,
    "layers.maxReferences": 10,
    "digest.inlineMaxTokens": 200,
    wholeHistory: false,
    redactSecrets: false,
    maxPayloadBytes: 1024,
  };
  assert.deepEqual(serverConfig((key) => settings[key]), {
    budget: 8000,
    encoding: "cl100k_base",
    order: "seed003",
    layers: { recentFull: 3, maxHeaders: 50, maxReferences: 10 },
    digest: { inlineMaxTokens: 200 },
    wholeHistory: false,
    redactSecrets: false,
    maxPayloadBytes: 1024,
  });
  assert.deepEqual(serverConfig((key) => (key === "storePath" ? "/s.db" : undefined)), { storePath: "/s.db" });
});

test("the binary is the setting, else on PATH, else bundled", () => {
  const executables = new Set(["/usr/bin/ctxproxy", "/ext/server/ctxproxy"]);
  const isExecutable = (file: string) => executables.has(file);
  const base = { configured: "", pathEnv: "/bin:/usr/bin", extensionDir: "/ext", isExecutable };
  assert.equal(resolveServerPath({ ...base, configured: "/opt/ctxproxy" }), "/opt/ctxproxy");
  assert.equal(resolveServerPath(base), "/usr/bin/ctxproxy");
  assert.equal(resolveServerPath({ ...base, pathEnv: "/bin" }), "/ext/server/ctxproxy");
  assert.equal(resolveServerPath({ ...base, pathEnv: "/bin", extensionDir: "/none" }), undefined);
});

test("retrieved documents round-trip their address, message ids included", () => {
  for (const target of [
    { sessionId: "s-7k2m9q", id: "x12", format: "full" as const },
    { sessionId: "s-7k2m9q", id: "x12.3", format: "summary" as const },
    { sessionId: "s-1", id: "b3:0123456789ab", format: "header" as const },
  ]) {
    assert.deepEqual(parseRetrieveUriPath(retrieveUriPath(target)), target);
  }
  assert.equal(parseRetrieveUriPath("/s-1/x1.raw"), undefined);
});

test("prompt history remembers the last prompt assembled, whatever its session", () => {
  const history = new PromptHistory();
  assert.equal(history.last(), undefined);
  history.record({ sessionId: "s-1", promptId: "p3" });
  history.record({ sessionId: "s-2", promptId: "p1" });
  assert.deepEqual(history.last(), { sessionId: "s-2", promptId: "p1" });
});

// Small pure pieces of the extension's shell: settings, binary lookup, document addresses, prompt history.
import assert from "node:assert/strict";
import { test } from "node:test";
import { PromptHistory } from "../../src/promptHistory";
import { parseRetrieveUriPath, retrieveUriPath } from "../../src/retrieveUri";
import { bundleTarget, resolveServer, resolveServerPath, vsceTarget } from "../../src/serverPath";
import { serverConfig, userValue } from "../../src/settings";

test("settings map onto the protocol's configuration; an empty store path is left to the server", () => {
  const settings: Record<string, unknown> = {
    storePath: "",
    budget: 8000,
    encoding: "cl100k_base",
    order: "seed003",
    "layers.recentFull": 3,
    "layers.maxHeaders": 50,
    "layers.maxReferences": 10,
    "layers.dialogueTokens": 9000,
    "digest.inlineMaxTokens": 200,
    wholeHistory: false,
    redactSecrets: false,
    maxPayloadBytes: 1024,
  };
  assert.deepEqual(serverConfig((key) => settings[key]), {
    budget: 8000,
    encoding: "cl100k_base",
    order: "seed003",
    layers: { recentFull: 3, maxHeaders: 50, maxReferences: 10, dialogueTokens: 9000 },
    digest: { inlineMaxTokens: 200 },
    wholeHistory: false,
    redactSecrets: false,
    maxPayloadBytes: 1024,
  });
  assert.deepEqual(serverConfig((key) => (key === "storePath" ? "/s.db" : undefined)), { storePath: "/s.db" });
});

test("a setting is sent only when the user set it, the narrowest scope first", () => {
  assert.equal(userValue({ defaultValue: 3000 }), undefined);
  assert.equal(userValue({ defaultValue: 3000, globalValue: 4000 }), 4000);
  assert.equal(userValue({ globalValue: 4000, workspaceValue: 5000 }), 5000);
  assert.equal(userValue({ globalValue: 4000, workspaceValue: 5000, workspaceFolderValue: 6000 }), 6000);
  assert.equal(userValue(undefined), undefined);
});

test("the binary is the setting when set, else the bundled one, else the one on PATH", () => {
  const executables = new Set(["/usr/bin/ctxproxy", "/ext/server/ctxproxy"]);
  const isExecutable = (file: string) => executables.has(file);
  const base = {
    configured: "",
    pathEnv: "/bin:/usr/bin",
    extensionDir: "/ext",
    target: "linux-x64",
    isExecutable,
    readText: () => undefined,
  };
  // An explicit setting wins over both, even when nothing is at that path (the sidecar's start reports it).
  assert.deepEqual(resolveServer({ ...base, configured: "/opt/ctxproxy" }), { path: "/opt/ctxproxy", from: "setting" });
  assert.deepEqual(resolveServer({ ...base, configured: "  " }), { path: "/ext/server/ctxproxy", from: "bundled" });
  // Bundled before PATH.
  assert.deepEqual(resolveServer(base), { path: "/ext/server/ctxproxy", from: "bundled" });
  // No bundle: PATH, in its order.
  assert.deepEqual(resolveServer({ ...base, extensionDir: "/none" }), { path: "/usr/bin/ctxproxy", from: "PATH" });
  assert.equal(resolveServerPath({ ...base, extensionDir: "/none", pathEnv: "/bin" }), undefined);
  assert.equal(resolveServerPath({ ...base, extensionDir: "/none", pathEnv: "" }), undefined);
});

test("a bundled binary is used on the platform it was packaged for, or when nothing says which", () => {
  const executables = new Set(["/usr/bin/ctxproxy", "/ext/server/ctxproxy"]);
  const manifest = (text: string | undefined) => ({
    configured: "",
    pathEnv: "/usr/bin",
    extensionDir: "/ext",
    target: "linux-x64",
    isExecutable: (file: string) => executables.has(file),
    readText: (file: string) => (file === "/ext/server/platform.json" ? text : undefined),
  });
  assert.equal(resolveServerPath(manifest('{"target":"linux-x64"}')), "/ext/server/ctxproxy");
  assert.equal(resolveServerPath(manifest(undefined)), "/ext/server/ctxproxy");
  assert.equal(resolveServerPath(manifest("not json")), "/ext/server/ctxproxy");
  // Packaged for another platform (a universal .vsix built elsewhere): skipped for PATH.
  assert.deepEqual(resolveServer(manifest('{"target":"darwin-arm64"}')), { path: "/usr/bin/ctxproxy", from: "PATH" });
  assert.deepEqual(resolveServer({ ...manifest('{"target":"linux-x64"}'), target: undefined }), {
    path: "/usr/bin/ctxproxy",
    from: "PATH",
  });
  assert.equal(bundleTarget('{"target":"win32-x64"}', "win32-x64"), "same");
  assert.equal(bundleTarget("{}", "win32-x64"), "unknown");
});

test("platforms map onto vsce targets", () => {
  assert.equal(vsceTarget("linux", "x64"), "linux-x64");
  assert.equal(vsceTarget("linux", "arm64"), "linux-arm64");
  assert.equal(vsceTarget("linux", "arm"), "linux-armhf");
  assert.equal(vsceTarget("darwin", "arm64"), "darwin-arm64");
  assert.equal(vsceTarget("darwin", "x64"), "darwin-x64");
  assert.equal(vsceTarget("win32", "x64"), "win32-x64");
  assert.equal(vsceTarget("win32", "arm"), undefined);
  assert.equal(vsceTarget("freebsd", "x64"), undefined);
  assert.equal(vsceTarget("linux", "ia32"), undefined);
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

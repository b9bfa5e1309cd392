// A second ctxproxy sidecar on the e2e run's store, to read ctx/explain independently of the extension.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { createMessageConnection, StreamMessageReader, StreamMessageWriter } = require("vscode-jsonrpc/node");

export async function startSidecarOnStore(binary, storePath) {
  const child = spawn(binary, ["serve", "--stdio"], { stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise((done) => child.on("exit", done));
  const connection = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  connection.listen();
  await connection.sendRequest("initialize", {
    processId: process.pid,
    rootUri: null,
    capabilities: {},
    initializationOptions: { storePath },
  });
  await connection.sendNotification("initialized", {});
  return {
    request: (method, params) => connection.sendRequest(method, params),
    async stop() {
      await connection.sendRequest("shutdown").catch(() => undefined);
      await connection.sendNotification("exit").catch(() => undefined);
      const timer = setTimeout(() => child.kill("SIGKILL"), 3000);
      await exited;
      clearTimeout(timer);
      connection.dispose();
    },
  };
}

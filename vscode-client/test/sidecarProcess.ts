// Starts the real `ctxproxy serve` for a test and speaks LSP to it with vscode-jsonrpc, as the
// extension's language client does. The binary is CTXPROXY_BIN, else ../target/debug/ctxproxy.
import { ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createMessageConnection, MessageConnection, StreamMessageReader, StreamMessageWriter } from "vscode-jsonrpc/node";
import { CtxEvent, METHODS } from "../src/protocol";
import { Sidecar } from "../src/sidecar";

export function sidecarBinary(): string {
  const binary = process.env.CTXPROXY_BIN ?? resolve(__dirname, "../../../target/debug/ctxproxy");
  if (!existsSync(binary)) {
    throw new Error(
      `ctxproxy binary not found at ${binary}. Build it from the repository root with ` +
        "`cargo build -p ctxproxy`, or point CTXPROXY_BIN at a built binary.",
    );
  }
  return binary;
}

export interface RunningSidecar {
  sidecar: Sidecar;
  connection: MessageConnection;
  events: CtxEvent[];
  initializeResult: unknown;
  storeDir: string;
  stop(): Promise<void>;
}

export async function startSidecar(config: Record<string, unknown> = {}): Promise<RunningSidecar> {
  const storeDir = mkdtempSync(join(tmpdir(), "ctxproxy-test-"));
  const binary = sidecarBinary();
  const child: ChildProcess = spawn(binary, ["serve", "--stdio"], { stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (chunk) => (stderr += chunk));
  const exited = new Promise<number | null>((done) => child.on("exit", (code) => done(code)));
  const connection = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
  const events: CtxEvent[] = [];
  connection.onNotification(METHODS.event, (event: CtxEvent) => events.push(event));
  connection.listen();
  let initializeResult: unknown;
  try {
    initializeResult = await connection.sendRequest("initialize", {
      processId: process.pid,
      rootUri: null,
      capabilities: {},
      initializationOptions: { storePath: join(storeDir, "store.db"), ...config },
    });
    await connection.sendNotification("initialized", {});
  } catch (error) {
    child.kill();
    throw new Error(
      `${binary} serve did not answer initialize (${(error as Error).message}). Is it an old build? ` +
        `Rebuild it with \`cargo build -p ctxproxy\`, or point CTXPROXY_BIN at a current one.\n${stderr}`,
    );
  }
  return {
    sidecar: new Sidecar(connection),
    connection,
    events,
    initializeResult,
    storeDir,
    async stop() {
      await connection.sendRequest("shutdown").catch(() => undefined);
      await connection.sendNotification("exit").catch(() => undefined);
      const timer = setTimeout(() => child.kill("SIGKILL"), 3000);
      await exited;
      clearTimeout(timer);
      connection.dispose();
      rmSync(storeDir, { recursive: true, force: true });
    },
  };
}

/** Waits until the sidecar has sent an event that matches. */
export async function waitForEvent(events: CtxEvent[], matches: (event: CtxEvent) => boolean, timeoutMs = 3000): Promise<CtxEvent> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = events.find(matches);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`no matching ctx/event within ${timeoutMs} ms; got ${JSON.stringify(events.map((e) => e.kind))}`);
    await new Promise((wake) => setTimeout(wake, 20));
  }
}

// Runs `ctxproxy proxy`, the OpenAI/Anthropic-compatible front door, beside the LSP sidecar when the
// ctxproxy.proxy.* settings ask for it: the same binary and the same settings (so the same store), one
// child process, its stderr logged, its address read from the ready line. No vscode import.
import { ChildProcess, spawn } from "node:child_process";
import { SettingReader } from "./settings";

/** What `ctxproxy proxy` prints to stderr once it accepts requests (docs: proxy.md, "Start"). */
const READY = /^ctxproxy proxy listening on (http:\/\/\S+)\s*$/;

/** How long the proxy may take to print its ready line. */
const START_TIMEOUT_MS = 30_000;

/** The `ctxproxy proxy` arguments the settings ask for, or undefined when the proxy is off. */
export function proxyArgs(read: SettingReader, serverConfig: Record<string, unknown>): string[] | undefined {
  if (read("proxy.enabled") !== true) return undefined;
  const listen = read("proxy.listen");
  const args = ["proxy", "--listen", typeof listen === "string" && listen.trim() !== "" ? listen.trim() : "127.0.0.1:8787"];
  for (const [setting, flag] of [
    ["proxy.openaiUpstream", "--openai-upstream"],
    ["proxy.anthropicUpstream", "--anthropic-upstream"],
  ]) {
    const value = read(setting);
    if (typeof value === "string" && value.trim() !== "") args.push(flag, value.trim());
  }
  if (Object.keys(serverConfig).length > 0) args.push("--config", JSON.stringify(serverConfig));
  return args;
}

/** The base URL of a ready line, else undefined. */
export function readyUrl(line: string): string | undefined {
  return READY.exec(line)?.[1];
}

/** One running `ctxproxy proxy`: started by `start`, ended by `stop`. */
export class ProxyProcess {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  /** The address it listens on, once it said so. */
  url: string | undefined;

  constructor(private readonly log: (line: string) => void) {}

  /** Starts `command args` and resolves with its address once it printed the ready line. */
  start(command: string, args: string[]): Promise<string> {
    if (this.child) throw new Error("the proxy is already running");
    this.log(`starting ${command} ${args.map((a) => (/\s|"/.test(a) ? `'${a}'` : a)).join(" ")}`);
    const child = spawn(command, args, { stdio: ["ignore", "ignore", "pipe"] });
    this.child = child;
    this.exited = new Promise((done) => child.once("exit", () => done()));
    return new Promise<string>((resolve, reject) => {
      let pending = "";
      // The last lines it printed: why it stopped, when it stops early.
      const said: string[] = [];
      let settled = false;
      const settle = (error: Error | undefined, url?: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (error) reject(error);
        else resolve(url!);
      };
      const timer = setTimeout(
        () => settle(new Error(`the proxy printed no ready line within ${START_TIMEOUT_MS / 1000} s`)),
        START_TIMEOUT_MS,
      );
      child.stderr!.setEncoding("utf8");
      child.stderr!.on("data", (chunk: string) => {
        pending += chunk;
        let newline: number;
        while ((newline = pending.indexOf("\n")) >= 0) {
          const line = pending.slice(0, newline).replace(/\r$/, "");
          pending = pending.slice(newline + 1);
          this.log(`proxy: ${line}`);
          if (line.trim() !== "") said.push(line.trim());
          if (said.length > 5) said.shift();
          const url = readyUrl(line);
          if (url) {
            this.url = url;
            settle(undefined, url);
          }
        }
      });
      child.once("error", (error) => settle(new Error(`the proxy could not start: ${error.message}`)));
      child.once("exit", (code, signal) => {
        this.child = undefined;
        this.url = undefined;
        const how = signal ? `signal ${signal}` : `status ${code}`;
        this.log(`proxy exited (${how})`);
        const why = [...said, pending.trim()].filter((l) => l !== "").join(" / ");
        settle(new Error(`the proxy exited (${how}) before it was ready${why ? `: ${why}` : ""}`));
      });
    });
  }

  /** Ends the process (SIGTERM) and waits for it to exit. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    child.kill("SIGTERM");
    await this.exited;
  }
}

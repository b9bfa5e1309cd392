// Keeps `ctxproxy proxy` running while ctxproxy.proxy.enabled is on, with the sidecar's binary and
// settings, and restarts it when they change; the command "ctxproxy: Copy Proxy Address" hands its
// address to the user for their assistant's base URL.
import * as vscode from "vscode";
import { ProxyProcess, proxyArgs } from "./proxyProcess";
import { readServerConfig } from "./serverConnection";
import { resolveServerPath } from "./serverPath";

export class ProxyConnection implements vscode.Disposable {
  private readonly process: ProxyProcess;
  private readonly disposables: vscode.Disposable[] = [];
  private restarting: Promise<void> = Promise.resolve();

  constructor(
    private readonly extensionDir: string,
    private readonly output: vscode.OutputChannel,
  ) {
    this.process = new ProxyProcess((line) => output.appendLine(line));
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((change) => {
        if (change.affectsConfiguration("ctxproxy")) void this.restart();
      }),
    );
  }

  /** The proxy's address while it runs. */
  get url(): string | undefined {
    return this.process.url;
  }

  /** Stops a running proxy, then starts it again if the settings ask for one. */
  restart(): Promise<void> {
    this.restarting = this.restarting.then(() => this.process.stop()).then(() => this.start());
    return this.restarting;
  }

  private async start(): Promise<void> {
    const settings = vscode.workspace.getConfiguration("ctxproxy");
    const args = proxyArgs((key) => settings.get(key), readServerConfig());
    if (!args) return;
    const command = resolveServerPath({
      configured: settings.get<string>("serverPath") ?? "",
      pathEnv: process.env.PATH ?? "",
      extensionDir: this.extensionDir,
    });
    if (!command) {
      this.output.appendLine("ctxproxy: the proxy is on but no ctxproxy binary was found (bundled, on PATH or ctxproxy.serverPath)");
      return;
    }
    try {
      const url = await this.process.start(command, args);
      this.output.appendLine(`proxy ready: point your assistant's base URL at ${url}`);
    } catch (error) {
      const message = `ctxproxy: the proxy did not start: ${error instanceof Error ? error.message : String(error)}`;
      this.output.appendLine(message);
      void vscode.window.showErrorMessage(message);
    }
  }

  async dispose(): Promise<void> {
    for (const disposable of this.disposables) disposable.dispose();
    await this.restarting;
    await this.process.stop();
  }
}

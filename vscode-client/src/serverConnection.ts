// Starts `ctxproxy serve` over stdio with vscode-languageclient, keeps its configuration in step with
// the ctxproxy.* settings, restarts it after a crash with a notice, and hands out a Sidecar whose
// requests go to whichever client is current.
import * as vscode from "vscode";
import {
  CloseAction,
  CloseHandlerResult,
  ErrorAction,
  ErrorHandler,
  ErrorHandlerResult,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  TransportKind,
} from "vscode-languageclient/node";
import { CtxEvent, METHODS } from "./protocol";
import { resolveServer } from "./serverPath";
import { CONFIG_SECTION, serverConfig, userValue } from "./settings";
import { RequestSender, Sidecar } from "./sidecar";

const MAX_RESTARTS = 5;
const RESTART_WINDOW_MS = 3 * 60 * 1000;

export function readServerConfig(): Record<string, unknown> {
  const settings = vscode.workspace.getConfiguration("ctxproxy");
  return serverConfig((key) => userValue(settings.inspect(key)));
}

export class ServerConnection implements vscode.Disposable {
  readonly sidecar: Sidecar;
  private client: LanguageClient | undefined;
  private clientEvents: vscode.Disposable | undefined;
  private readonly events = new vscode.EventEmitter<CtxEvent>();
  readonly onEvent = this.events.event;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly extensionDir: string,
    private readonly output: vscode.OutputChannel,
  ) {
    const sender: RequestSender = {
      sendRequest: async <R>(method: string, params: unknown): Promise<R> => {
        // While the client (re)starts, its sendRequest waits for the server to be initialized.
        if (!this.client) throw new Error("the ctxproxy sidecar is not running (see the ctxproxy output channel)");
        return this.client.sendRequest<R>(method, params);
      },
    };
    this.sidecar = new Sidecar(sender);
    this.disposables.push(
      this.events,
      vscode.workspace.onDidChangeConfiguration((change) => {
        if (change.affectsConfiguration("ctxproxy.serverPath")) void this.restart();
        else if (change.affectsConfiguration("ctxproxy")) void this.pushConfiguration();
      }),
    );
  }

  async start(): Promise<void> {
    const binary = resolveServer({
      configured: vscode.workspace.getConfiguration("ctxproxy").get<string>("serverPath") ?? "",
      pathEnv: process.env.PATH ?? "",
      extensionDir: this.extensionDir,
    });
    if (!binary) {
      const message =
        "ctxproxy: no sidecar binary found. Install the .vsix for your platform (it bundles one), put ctxproxy on PATH (`cargo install --locked` from the repository), or set ctxproxy.serverPath.";
      this.output.appendLine(message);
      void vscode.window.showErrorMessage(message, "Open Settings").then((choice) => {
        if (choice) void vscode.commands.executeCommand("workbench.action.openSettings", "ctxproxy.serverPath");
      });
      return;
    }
    const command = binary.path;
    this.output.appendLine(`starting ${command} serve (${binary.from === "setting" ? "ctxproxy.serverPath" : binary.from})`);
    const serverOptions: ServerOptions = { command, args: ["serve"], transport: TransportKind.stdio };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [],
      outputChannel: this.output,
      initializationOptions: readServerConfig(),
      errorHandler: this.crashHandler(),
    };
    const client = new LanguageClient("ctxproxy", "ctxproxy sidecar", serverOptions, clientOptions);
    this.clientEvents = client.onNotification(METHODS.event, (event: CtxEvent) => this.events.fire(event));
    this.client = client;
    try {
      await client.start();
      this.output.appendLine("sidecar ready");
    } catch (error) {
      const message = `ctxproxy: the sidecar failed to start: ${error instanceof Error ? error.message : String(error)}`;
      this.output.appendLine(message);
      void vscode.window.showErrorMessage(message);
    }
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  private async pushConfiguration(): Promise<void> {
    if (!this.client?.isRunning()) return;
    const config = readServerConfig();
    this.output.appendLine(`configuration changed: ${JSON.stringify(config)}`);
    await this.client.sendNotification("workspace/didChangeConfiguration", { settings: { [CONFIG_SECTION]: config } });
  }

  private crashHandler(): ErrorHandler {
    const restarts: number[] = [];
    return {
      error: (): ErrorHandlerResult => ({ action: ErrorAction.Continue }),
      closed: (): CloseHandlerResult => {
        const now = Date.now();
        while (restarts.length > 0 && now - restarts[0] > RESTART_WINDOW_MS) restarts.shift();
        if (restarts.length >= MAX_RESTARTS) {
          const message = `ctxproxy: the sidecar stopped ${MAX_RESTARTS} times in 3 minutes; not restarting it. Run "ctxproxy: Restart Sidecar" once it is fixed.`;
          this.output.appendLine(message);
          void vscode.window.showErrorMessage(message);
          return { action: CloseAction.DoNotRestart, handled: true };
        }
        restarts.push(now);
        this.output.appendLine("the sidecar stopped; restarting it");
        void vscode.window.showWarningMessage("ctxproxy: the sidecar stopped; restarting it.");
        return { action: CloseAction.Restart, handled: true };
      },
    };
  }

  private async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.clientEvents?.dispose();
    this.clientEvents = undefined;
    if (client?.isRunning()) await client.stop();
  }

  async dispose(): Promise<void> {
    await this.stop();
    for (const disposable of this.disposables) disposable.dispose();
  }
}

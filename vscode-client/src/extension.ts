// Wires the extension together: the sidecar connection, the views, the commands, the @ctx participant,
// and the API for other extensions.
import * as vscode from "vscode";
import { CtxproxyApi, ctxproxyApi } from "./api";
import { ChatSession, registerChatParticipant } from "./chatParticipant";
import { PromptHistory } from "./promptHistory";
import { PromptPanel } from "./promptPanel";
import { ProxyConnection } from "./proxyConnection";
import { promptStatusFromEvent } from "./promptStatus";
import { replayFile } from "./replayCommand";
import { openRetrieved, RetrievedDocuments } from "./retrievedDocuments";
import { RETRIEVE_SCHEME } from "./retrieveUri";
import { searchArchive } from "./searchCommand";
import { ServerConnection } from "./serverConnection";
import { ExchangeItem } from "./sessionItems";
import { SessionsView } from "./sessionsView";
import { PromptStatusBar } from "./statusBar";

export async function activate(context: vscode.ExtensionContext): Promise<CtxproxyApi> {
  const output = vscode.window.createOutputChannel("ctxproxy");
  const connection = new ServerConnection(context.extensionPath, output);
  const proxy = new ProxyConnection(context.extensionPath, output);
  const sidecar = connection.sidecar;
  const history = new PromptHistory();
  const sessionsView = new SessionsView(sidecar);
  const promptPanel = new PromptPanel(sidecar, history);
  const statusBar = new PromptStatusBar();
  const chatSession = new ChatSession(context.workspaceState, sidecar);

  const reportFailure = (what: string) => (error: unknown) => {
    const message = `ctxproxy: ${what} failed: ${error instanceof Error ? error.message : String(error)}`;
    output.appendLine(message);
    void vscode.window.showErrorMessage(message);
  };
  const command = (id: string, run: (...args: any[]) => Promise<unknown> | unknown) =>
    vscode.commands.registerCommand(id, (...args: unknown[]) =>
      Promise.resolve()
        .then(() => run(...args))
        .catch(reportFailure(id)),
    );
  const openExchange = (format: "full" | "summary") => (node: ExchangeItem | string, id?: string) =>
    typeof node === "string" ? openRetrieved(node, id ?? "", format) : openRetrieved(node.sessionId, node.exchangeId, format);

  context.subscriptions.push(
    output,
    connection,
    promptPanel,
    statusBar,
    connection.onEvent((event) => {
      const status = promptStatusFromEvent(event);
      if (status) {
        statusBar.show(status);
        if (status.promptId) history.record({ sessionId: status.sessionId, promptId: status.promptId });
      }
      if (event.kind === "exchangeStored") sessionsView.refresh();
    }),
    vscode.window.registerTreeDataProvider("ctxproxy.sessions", sessionsView),
    vscode.workspace.registerTextDocumentContentProvider(RETRIEVE_SCHEME, new RetrievedDocuments(sidecar)),
    command("ctxproxy.showPrompt", (sessionId?: unknown, promptId?: unknown) =>
      promptPanel.show(
        typeof sessionId === "string"
          ? { sessionId, promptId: typeof promptId === "string" ? promptId : undefined }
          : isSessionNode(sessionId)
            ? { sessionId: sessionId.sessionId }
            : undefined,
      ),
    ),
    command("ctxproxy.search", () => searchArchive(sidecar)),
    command("ctxproxy.replayFile", async (target?: string | vscode.Uri) => {
      const result = await replayFile(sidecar, history, target);
      sessionsView.refresh();
      return result;
    }),
    command("ctxproxy.newSession", async () => {
      const sessionId = await chatSession.startNew();
      sessionsView.refresh();
      void vscode.window.showInformationMessage(`ctxproxy: @ctx now appends to ${sessionId}.`);
    }),
    command("ctxproxy.refreshSessions", () => sessionsView.refresh()),
    command("ctxproxy.openFull", openExchange("full")),
    command("ctxproxy.openSummary", openExchange("summary")),
    command("ctxproxy.restartServer", () => connection.restart()),
    proxy,
    command("ctxproxy.copyProxyAddress", async () => {
      if (!proxy.url) {
        void vscode.window.showInformationMessage(
          "ctxproxy: the proxy is not running. Turn on ctxproxy.proxy.enabled to serve OpenAI and Anthropic clients.",
        );
        return;
      }
      await vscode.env.clipboard.writeText(proxy.url);
      void vscode.window.showInformationMessage(`ctxproxy: copied ${proxy.url}; use it as your assistant's base URL.`);
    }),
    registerChatParticipant(sidecar, chatSession, history),
  );

  await connection.start();
  void proxy.restart();
  return ctxproxyApi(sidecar, history);
}

function isSessionNode(value: unknown): value is { kind: "session"; sessionId: string } {
  return typeof value === "object" && value !== null && (value as { kind?: unknown }).kind === "session";
}

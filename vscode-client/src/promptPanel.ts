// The "What the Model Saw" webview: one prompt from ctx/explain, chosen by the caller or picked from
// the session's prompts (newest first, with their tokens), above a chart of every prompt of the session.
import * as vscode from "vscode";
import { promptView, PromptView } from "./explainModel";
import { PromptHistory } from "./promptHistory";
import { renderPromptHtml } from "./promptHtml";
import { sessionChart } from "./sessionChart";
import { loadSessionPrompts, promptPicks } from "./sessionPrompts";
import { Sidecar } from "./sidecar";

export class PromptPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;

  constructor(
    private readonly sidecar: Sidecar,
    private readonly history: PromptHistory,
  ) {}

  /** Shows a prompt of a session; without a session, the last one's; without a prompt, asks which. */
  async show(ref?: { sessionId?: string; promptId?: string }): Promise<void> {
    const sessionId = ref?.sessionId ?? this.history.last()?.sessionId ?? (await this.pickSession());
    if (!sessionId) return;
    const prompts = await this.sessionPrompts(sessionId);
    if (prompts.length === 0) {
      void vscode.window.showInformationMessage(`ctxproxy: session ${sessionId} has no prompt yet (one is recorded at each ctx/assemble).`);
      return;
    }
    const promptId = ref?.promptId ?? (await this.pickPrompt(sessionId, prompts));
    if (!promptId) return;
    // A prompt older than the ones loaded for the chart is read on its own.
    const view =
      prompts.find((prompt) => prompt.promptId === promptId) ??
      promptView(await this.sidecar.explain({ sessionId, promptId }), { sessionId, promptId });
    const { exchanges } = await this.sidecar.listExchanges({ sessionId, limit: 10000 });
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel("ctxproxy.prompt", "", vscode.ViewColumn.Active, { enableScripts: false });
      this.panel.onDidDispose(() => (this.panel = undefined));
    }
    this.panel.title = `Model saw ${view.promptId}`;
    this.panel.webview.html = renderPromptHtml(view, { cspSource: this.panel.webview.cspSource }, sessionChart(sessionId, prompts, exchanges));
    this.panel.reveal();
  }

  /** The session's recorded prompts, oldest first: the server numbers them p1 to p<prompts>. */
  private async sessionPrompts(sessionId: string): Promise<PromptView[]> {
    const { sessions } = await this.sidecar.listSessions({});
    const session = sessions.find((s) => s.sessionId === sessionId);
    if (!session) throw new Error(`no session ${sessionId} in the store`);
    return loadSessionPrompts(this.sidecar, sessionId, session.prompts);
  }

  private async pickPrompt(sessionId: string, prompts: PromptView[]): Promise<string | undefined> {
    const picked = await vscode.window.showQuickPick(promptPicks(prompts), {
      title: `Show what the model saw: ${sessionId}`,
      placeHolder: "Which prompt? (newest first)",
      matchOnDescription: true,
    });
    return picked?.promptId;
  }

  private async pickSession(): Promise<string | undefined> {
    const { sessions } = await this.sidecar.listSessions({});
    const picked = await vscode.window.showQuickPick(
      sessions.map((session) => ({ label: session.title || session.sessionId, description: session.sessionId })),
      { title: "Session", placeHolder: "Which session's prompt?" },
    );
    return picked?.description;
  }

  dispose(): void {
    this.panel?.dispose();
  }
}

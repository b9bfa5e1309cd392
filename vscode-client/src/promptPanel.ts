// The "What the Model Saw" webview: shows one prompt from ctx/explain, chosen by the caller or picked
// from the prompts this window has seen assembled.
import * as vscode from "vscode";
import { promptView } from "./explainModel";
import { PromptHistory, PromptRef } from "./promptHistory";
import { renderPromptHtml } from "./promptHtml";
import { Sidecar } from "./sidecar";

export class PromptPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;

  constructor(
    private readonly sidecar: Sidecar,
    private readonly history: PromptHistory,
  ) {}

  /** Shows ref; without one, asks which prompt (the last one first). */
  async show(ref?: Partial<PromptRef>): Promise<void> {
    const chosen = ref?.sessionId && ref.promptId ? (ref as PromptRef) : await this.choose(ref?.sessionId);
    if (!chosen) return;
    const explain = await this.sidecar.explain(chosen);
    const view = promptView(explain, chosen);
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel("ctxproxy.prompt", "", vscode.ViewColumn.Active, { enableScripts: false });
      this.panel.onDidDispose(() => (this.panel = undefined));
    }
    this.panel.title = `Model saw ${view.promptId}`;
    this.panel.webview.html = renderPromptHtml(view, { cspSource: this.panel.webview.cspSource });
    this.panel.reveal();
  }

  private async choose(sessionId?: string): Promise<PromptRef | undefined> {
    const session = sessionId ?? this.history.last()?.sessionId ?? (await this.pickSession());
    if (!session) return undefined;
    const promptIds = this.history.promptIds(session);
    if (promptIds.length === 0) {
      const promptId = await vscode.window.showInputBox({
        title: `Prompt of ${session}`,
        prompt: "Prompt id (p1 is the first prompt of the session)",
        placeHolder: "p1",
        validateInput: (value) => (/^p\d+$/.test(value.trim()) ? undefined : "A prompt id looks like p12"),
      });
      return promptId ? { sessionId: session, promptId: promptId.trim() } : undefined;
    }
    const picked = await vscode.window.showQuickPick(
      promptIds.map((promptId, index) => ({
        label: promptId,
        description: index === 0 ? `last prompt of ${session}` : session,
      })),
      { title: "Show what the model saw", placeHolder: "Prompt" },
    );
    return picked ? { sessionId: session, promptId: picked.label } : undefined;
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

// The status bar entry: tokens of the last prompt against the budget, and prefix reuse.
import * as vscode from "vscode";
import { PromptStatus, renderPromptStatus } from "./promptStatus";

export class PromptStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("ctxproxy.prompt", vscode.StatusBarAlignment.Right, 100);

  constructor() {
    this.item.name = "ctxproxy prompt";
    this.item.command = "ctxproxy.showPrompt";
    this.show(undefined);
    this.item.show();
  }

  show(status: PromptStatus | undefined): void {
    const { text, tooltip } = renderPromptStatus(status);
    this.item.text = text;
    this.item.tooltip = tooltip;
    this.item.command = status?.promptId
      ? { command: "ctxproxy.showPrompt", title: "Show", arguments: [status.sessionId, status.promptId] }
      : "ctxproxy.showPrompt";
  }

  dispose(): void {
    this.item.dispose();
  }
}

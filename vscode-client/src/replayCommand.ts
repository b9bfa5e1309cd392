// "ctxproxy: Replay Session File": replays a recorded .jsonl session (the active editor's, a path
// given as argument, or one picked in a dialog) into a new session, assembling a prompt per exchange.
import * as path from "path";
import * as vscode from "vscode";
import { PromptHistory } from "./promptHistory";
import { parseSessionJsonl, replaySession, ReplayResult } from "./replay";
import { Sidecar } from "./sidecar";

export async function replayFile(
  sidecar: Sidecar,
  history: PromptHistory,
  target?: string | vscode.Uri,
): Promise<ReplayResult | undefined> {
  const uri = await chooseFile(target);
  if (!uri) return undefined;
  const text = new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
  const file = parseSessionJsonl(text);
  const title = path.basename(uri.path);
  const budget = vscode.workspace.getConfiguration("ctxproxy").get<number>("budget");
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `ctxproxy: replaying ${title}` },
    () =>
      replaySession(sidecar, file, {
        title,
        workspace: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
        budget,
      }),
  );
  for (const prompt of result.prompts) history.record({ sessionId: prompt.sessionId, promptId: prompt.promptId });
  const sessions = Object.values(result.sessions).join(", ");
  void vscode.window.showInformationMessage(
    `ctxproxy: replayed ${file.exchanges.length} exchanges of ${title} into ${sessions}.`,
  );
  return result;
}

async function chooseFile(target?: string | vscode.Uri): Promise<vscode.Uri | undefined> {
  if (target instanceof vscode.Uri) return target;
  if (typeof target === "string") return vscode.Uri.file(target);
  const active = vscode.window.activeTextEditor?.document.uri;
  if (active && active.path.endsWith(".jsonl")) return active;
  const picked = await vscode.window.showOpenDialog({
    title: "Recorded session to replay",
    canSelectMany: false,
    filters: { "Recorded sessions": ["jsonl"] },
  });
  return picked?.[0];
}

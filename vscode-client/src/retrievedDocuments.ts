// Read-only documents under the ctxproxy: scheme: an id as the model reads it when it retrieves it
// (ctx/callContextTool renders the answer).
import * as vscode from "vscode";
import { answerContextTool } from "./contextTools";
import { RetrieveFormat } from "./protocol";
import { parseRetrieveUriPath, RETRIEVE_SCHEME, retrieveUriPath } from "./retrieveUri";
import { Sidecar } from "./sidecar";

export class RetrievedDocuments implements vscode.TextDocumentContentProvider {
  constructor(private readonly sidecar: Sidecar) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const target = parseRetrieveUriPath(uri.path);
    if (!target) return `Not a ctxproxy address: ${uri.toString()}`;
    const args = { ids: [target.id], format: target.format };
    return answerContextTool(this.sidecar, target.sessionId, "context_retrieve", args);
  }
}

export async function openRetrieved(sessionId: string, id: string, format: RetrieveFormat): Promise<void> {
  const uri = vscode.Uri.from({ scheme: RETRIEVE_SCHEME, path: retrieveUriPath({ sessionId, id, format }) });
  const document = await vscode.workspace.openTextDocument(uri);
  await vscode.window.showTextDocument(document, { preview: true });
}

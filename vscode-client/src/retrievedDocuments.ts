// Read-only documents under the ctxproxy: scheme, filled through ctx/retrieve.
import * as vscode from "vscode";
import { renderRetrieveResult } from "./contextTools";
import { RetrieveFormat } from "./protocol";
import { parseRetrieveUriPath, RETRIEVE_SCHEME, retrieveUriPath } from "./retrieveUri";
import { Sidecar } from "./sidecar";

export class RetrievedDocuments implements vscode.TextDocumentContentProvider {
  constructor(private readonly sidecar: Sidecar) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const target = parseRetrieveUriPath(uri.path);
    if (!target) return `Not a ctxproxy address: ${uri.toString()}`;
    const result = await this.sidecar.retrieve({ sessionId: target.sessionId, ids: [target.id], format: target.format });
    return renderRetrieveResult(result);
  }
}

export async function openRetrieved(sessionId: string, id: string, format: RetrieveFormat): Promise<void> {
  const uri = vscode.Uri.from({ scheme: RETRIEVE_SCHEME, path: retrieveUriPath({ sessionId, id, format }) });
  const document = await vscode.workspace.openTextDocument(uri);
  await vscode.window.showTextDocument(document, { preview: true });
}

// "ctxproxy: Search the Archive": a query in an input box, hits (ctx/search) in a quick pick, the
// chosen exchange opened in full.
import * as vscode from "vscode";
import { openRetrieved } from "./retrievedDocuments";
import { Sidecar } from "./sidecar";

const SEARCH_LIMIT = 50;

export async function searchArchive(sidecar: Sidecar): Promise<void> {
  const query = await vscode.window.showInputBox({ title: "Search the ctxproxy archive", placeHolder: "words to find" });
  if (!query?.trim()) return;
  const { hits } = await sidecar.search({ query: query.trim(), limit: SEARCH_LIMIT });
  if (hits.length === 0) {
    void vscode.window.showInformationMessage(`ctxproxy: nothing matches "${query}".`);
    return;
  }
  const picked = await vscode.window.showQuickPick(
    hits.map((hit) => ({
      label: `${hit.id} ${hit.header}`,
      description: hit.sessionId,
      detail: `score ${Number(hit.score.toPrecision(3))}`,
      hit,
    })),
    { title: `ctxproxy: ${hits.length} hits for "${query}"`, matchOnDescription: true },
  );
  if (picked) await openRetrieved(picked.hit.sessionId, picked.hit.id, "full");
}

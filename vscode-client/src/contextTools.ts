// Answers the model's context_retrieve and context_search calls through the sidecar, and renders the
// answers as the text the model reads. No vscode import.
import { RetrieveParams, RetrieveResult, SearchResult } from "./protocol";
import { Sidecar } from "./sidecar";

export const CONTEXT_RETRIEVE = "context_retrieve";
export const CONTEXT_SEARCH = "context_search";

export type ContextToolSidecar = Pick<Sidecar, "retrieve" | "search">;

export function renderRetrieveResult(result: RetrieveResult): string {
  if (result.items.length === 0) return "No items.";
  return result.items
    .map((item) => {
      if ("error" in item) return `## ${item.id}: error ${item.error.code}: ${item.error.message}`;
      const notes = [item.format, `${item.tokens} tokens`, ...(item.truncated ? ["truncated"] : [])];
      return `## ${item.id} (${notes.join(", ")})\n${item.text}`;
    })
    .join("\n\n");
}

export function renderSearchResult(result: SearchResult): string {
  if (result.hits.length === 0) return "No matches.";
  return result.hits
    .map((hit) => `${hit.id} [${hit.sessionId}] ${hit.header}` + (hit.snippet ? `\n  …${hit.snippet}…` : ""))
    .join("\n");
}

/** Runs one tool call. Failures become text for the model, so one bad call does not end the turn. */
export async function answerContextTool(
  sidecar: ContextToolSidecar,
  sessionId: string,
  name: string,
  input: object,
): Promise<string> {
  const args = input as Record<string, unknown>;
  try {
    if (name === CONTEXT_RETRIEVE) {
      const params = { ...args, sessionId } as RetrieveParams;
      return renderRetrieveResult(await sidecar.retrieve(params));
    }
    if (name === CONTEXT_SEARCH) {
      const query = String(args.query ?? "");
      const limit = typeof args.limit === "number" ? args.limit : undefined;
      return renderSearchResult(await sidecar.search({ sessionId, query, limit }));
    }
    return `Unknown tool ${name}: the tools are ${CONTEXT_RETRIEVE} and ${CONTEXT_SEARCH}.`;
  } catch (error) {
    return `${name} failed: ${error instanceof Error ? error.message : String(error)}`;
  }
}

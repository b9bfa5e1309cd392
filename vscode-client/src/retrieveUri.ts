// Addresses of the read-only documents that show a retrieved item: ctxproxy:/<sessionId>/<id>.<format>.
// No vscode import.
import { RetrieveFormat } from "./protocol";

export const RETRIEVE_SCHEME = "ctxproxy";

export interface RetrieveTarget {
  sessionId: string;
  id: string;
  format: RetrieveFormat;
}

export function retrieveUriPath(target: RetrieveTarget): string {
  return `/${target.sessionId}/${target.id}.${target.format}`;
}

export function parseRetrieveUriPath(uriPath: string): RetrieveTarget | undefined {
  const match = /^\/([^/]+)\/(.+)\.(header|summary|full)$/.exec(uriPath);
  if (!match) return undefined;
  return { sessionId: match[1], id: match[2], format: match[3] as RetrieveFormat };
}

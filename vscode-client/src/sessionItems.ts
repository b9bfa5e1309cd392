// What the Sessions view shows for a session and for an exchange. No vscode import.
import { ExchangeHeader, SessionInfo } from "./protocol";
import { formatTokens } from "./tokenFigures";

export interface SessionItem {
  kind: "session";
  sessionId: string;
  label: string;
  description: string;
  tooltip: string;
}

export interface ExchangeItem {
  kind: "exchange";
  sessionId: string;
  exchangeId: string;
  label: string;
  description: string;
  tooltip: string;
}

export function sessionItem(session: SessionInfo): SessionItem {
  const title = session.title?.trim() || session.sessionId;
  const count = `${session.exchanges} exchange${session.exchanges === 1 ? "" : "s"}`;
  return {
    kind: "session",
    sessionId: session.sessionId,
    label: title,
    description: `${count} · ${session.sessionId}`,
    tooltip: [title, session.sessionId, count, session.workspace, `updated ${session.updatedAt}`]
      .filter(Boolean)
      .join("\n"),
  };
}

export function exchangeItem(sessionId: string, exchange: ExchangeHeader): ExchangeItem {
  const header = exchange.header?.trim() || "(no header)";
  return {
    kind: "exchange",
    sessionId,
    exchangeId: exchange.id,
    label: `${exchange.id} ${header}`,
    description: `${formatTokens(exchange.tokens)} tok`,
    tooltip: [`${exchange.id}: ${header}`, `${exchange.tokens} tokens`, exchange.at].filter(Boolean).join("\n"),
  };
}

/** Newest sessions first, as people look for the one they just worked in. */
export function sortSessions(sessions: SessionInfo[]): SessionInfo[] {
  return [...sessions].sort((a, b) => (b.updatedAt ?? "").localeCompare(a.updatedAt ?? ""));
}

// What the Sessions view shows for a project, a session and an exchange. No vscode import.
import { ExchangeHeader, SessionInfo } from "./protocol";
import { formatTokens } from "./tokenFigures";

/** A project (a session's workspace) and the sessions listed under it. */
export interface ProjectItem {
  kind: "project";
  project: string;
  label: string;
  description: string;
  tooltip: string;
  sessions: SessionInfo[];
}

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
  const depth = session.depth ? `depth ${session.depth}` : "";
  const parent = session.parent;
  const origin = !parent
    ? ""
    : parent.kind === "child"
      ? `called by ${parent.sessionId} after x${parent.atExchange}`
      : `forked from ${parent.sessionId} at x${parent.atExchange}`;
  return {
    kind: "session",
    sessionId: session.sessionId,
    label: title,
    description: [depth, count, session.sessionId].filter(Boolean).join(" · "),
    tooltip: [title, session.sessionId, count, depth, origin, session.workspace, `updated ${session.updatedAt}`]
      .filter(Boolean)
      .join("\n"),
  };
}

/** Sessions as a call tree: child calls under the session that made them, in the order they were
 * called; roots, forks and children whose caller is not listed at the top, newest first. */
export interface SessionTree {
  roots: SessionInfo[];
  children: Map<string, SessionInfo[]>;
}

export function sessionTree(sessions: SessionInfo[]): SessionTree {
  const listed = new Set(sessions.map((s) => s.sessionId));
  const children = new Map<string, SessionInfo[]>();
  const roots: SessionInfo[] = [];
  for (const s of sessions) {
    const caller = s.parent?.kind === "child" && listed.has(s.parent.sessionId) ? s.parent.sessionId : undefined;
    if (caller === undefined) {
      roots.push(s);
    } else {
      children.set(caller, [...(children.get(caller) ?? []), s]);
    }
  }
  for (const list of children.values()) {
    list.sort((a, b) => (a.createdAt ?? "").localeCompare(b.createdAt ?? ""));
  }
  return { roots: sortSessions(roots), children };
}

/** Sessions under their projects: the project of the newest session first, each project's sessions
 * in the order given. A project is shown by its last path segment (or its name), in full beside it;
 * sessions without one go under "(no project)". */
export function projectItems(sessions: SessionInfo[]): ProjectItem[] {
  const groups = new Map<string, SessionInfo[]>();
  for (const s of sortSessions(sessions)) {
    const project = s.workspace ?? "";
    groups.set(project, [...(groups.get(project) ?? []), s]);
  }
  return [...groups].map(([project, list]) => {
    const name = project.split(/[\\/]/).filter(Boolean).pop() ?? project;
    const count = `${list.length} session${list.length === 1 ? "" : "s"}`;
    return {
      kind: "project",
      project,
      label: project === "" ? "(no project)" : name,
      description: project === name ? count : [project, count].filter(Boolean).join(" · "),
      tooltip: [project || "sessions without a project", count].join("\n"),
      sessions: list,
    };
  });
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

// The Sessions tree: projects, the sessions of each (ctx/listSessions) and, under a session, the
// child calls it made (sessionTree) then its exchange headers (ctx/listExchanges). Clicking an
// exchange opens it in full.
import * as vscode from "vscode";
import {
  ExchangeItem,
  exchangeItem,
  ProjectItem,
  projectItems,
  SessionItem,
  sessionItem,
  SessionTree,
  sessionTree,
} from "./sessionItems";
import { Sidecar } from "./sidecar";

export type SessionsNode = ProjectItem | SessionItem | ExchangeItem;

const MAX_EXCHANGES = 10000;

export class SessionsView implements vscode.TreeDataProvider<SessionsNode> {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;

  /** The call tree of the last listing, for a session's child calls. */
  private tree: SessionTree = { roots: [], children: new Map() };

  constructor(private readonly sidecar: Sidecar) {}

  refresh(): void {
    this.changed.fire();
  }

  getTreeItem(node: SessionsNode): vscode.TreeItem {
    if (node.kind === "project") {
      const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.Expanded);
      item.id = `project:${node.project}`;
      item.description = node.description;
      item.tooltip = node.tooltip;
      item.contextValue = "project";
      item.iconPath = new vscode.ThemeIcon("folder");
      return item;
    }
    if (node.kind === "session") {
      const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.Collapsed);
      item.id = node.sessionId;
      item.description = node.description;
      item.tooltip = node.tooltip;
      item.contextValue = "session";
      item.iconPath = new vscode.ThemeIcon("comment-discussion");
      return item;
    }
    const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.None);
    item.id = `${node.sessionId}/${node.exchangeId}`;
    item.description = node.description;
    item.tooltip = node.tooltip;
    item.contextValue = "exchange";
    item.iconPath = new vscode.ThemeIcon("comment");
    item.command = { command: "ctxproxy.openFull", title: "Open Full", arguments: [node] };
    return item;
  }

  async getChildren(node?: SessionsNode): Promise<SessionsNode[]> {
    if (!node) {
      const { sessions } = await this.sidecar.listSessions({});
      this.tree = sessionTree(sessions);
      return projectItems(this.tree.roots);
    }
    if (node.kind === "project") {
      return node.sessions.map(sessionItem);
    }
    if (node.kind === "session") {
      const calls = (this.tree.children.get(node.sessionId) ?? []).map(sessionItem);
      const { exchanges } = await this.sidecar.listExchanges({ sessionId: node.sessionId, limit: MAX_EXCHANGES });
      return [...calls, ...exchanges.map((exchange) => exchangeItem(node.sessionId, exchange))];
    }
    return [];
  }
}

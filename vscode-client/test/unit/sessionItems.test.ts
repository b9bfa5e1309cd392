import assert from "node:assert/strict";
import { test } from "node:test";
import { exchangeItem, projectItems, sessionItem, sessionTree, sortSessions } from "../../src/sessionItems";
import { SessionInfo } from "../../src/protocol";

const session: SessionInfo = { sessionId: "s-1", title: "fix config", workspace: "/w", exchanges: 3, prompts: 3, createdAt: "2026-11-21T09:00:00Z", updatedAt: "2026-11-21T10:00:00Z", depth: 0 };

test("a session shows its title, exchange count and id", () => {
  const item = sessionItem(session);
  assert.equal(item.label, "fix config");
  assert.equal(item.description, "3 exchanges · s-1");
  assert.match(item.tooltip, /\/w/);
  assert.equal(sessionItem({ ...session, title: "", exchanges: 1 }).label, "s-1");
  assert.equal(sessionItem({ ...session, exchanges: 1 }).description, "1 exchange · s-1");
});

test("an exchange shows its id, header and tokens", () => {
  const item = exchangeItem("s-1", { id: "x2", header: "cargo test: 1 failed", at: "2026-11-21T10:00:00Z", tokens: 1534, fullTokens: 1534, outcome: "completed" });
  assert.deepEqual(
    { label: item.label, description: item.description, id: item.exchangeId, session: item.sessionId },
    { label: "x2 cargo test: 1 failed", description: "1.5k tok", id: "x2", session: "s-1" },
  );
});

test("sessions sort newest first", () => {
  const older = { ...session, sessionId: "s-0", updatedAt: "2026-11-20T10:00:00Z" };
  assert.deepEqual(sortSessions([older, session]).map((s) => s.sessionId), ["s-1", "s-0"]);
});

test("child calls go under their caller with their depth; forks and orphans stay at the top", () => {
  const child = (id: string, caller: string, depth: number, createdAt: string): SessionInfo => ({
    ...session,
    sessionId: id,
    title: `call ${id}`,
    depth,
    createdAt,
    parent: { sessionId: caller, atExchange: 1, kind: "child" },
  });
  const c2 = child("c2", "s-1", 1, "2026-11-21T09:30:00Z");
  const c1 = child("c1", "s-1", 1, "2026-11-21T09:10:00Z");
  const c1a = child("c1a", "c1", 2, "2026-11-21T09:20:00Z");
  const orphan = child("c9", "gone", 1, "2026-11-21T09:40:00Z");
  const fork: SessionInfo = { ...session, sessionId: "f-1", parent: { sessionId: "s-1", atExchange: 2, kind: "fork" } };
  const tree = sessionTree([c2, c1a, session, c1, orphan, fork]);
  assert.deepEqual(tree.roots.map((s) => s.sessionId).sort(), ["c9", "f-1", "s-1"]);
  assert.deepEqual(tree.children.get("s-1")?.map((s) => s.sessionId), ["c1", "c2"]);
  assert.deepEqual(tree.children.get("c1")?.map((s) => s.sessionId), ["c1a"]);
  const item = sessionItem(c1a);
  assert.equal(item.description, "depth 2 · 3 exchanges · c1a");
  assert.match(item.tooltip, /called by c1 after x1/);
  assert.match(sessionItem(fork).tooltip, /forked from s-1 at x2/);
});

test("sessions go under their projects, the most recently active project first", () => {
  const at = (id: string, workspace: string, updatedAt: string): SessionInfo => ({ ...session, sessionId: id, workspace, updatedAt });
  const projects = projectItems([
    at("s-a1", "/home/me/app", "2026-11-21T08:00:00Z"),
    at("s-none", "", "2026-11-21T09:00:00Z"),
    at("s-b", "billing", "2026-11-21T07:00:00Z"),
    at("s-a2", "/home/me/app/", "2026-11-21T06:00:00Z"),
    at("s-a3", "/home/me/app", "2026-11-21T10:00:00Z"),
  ]);
  assert.deepEqual(
    projects.map((p) => [p.label, p.description, p.sessions.map((s) => s.sessionId)]),
    [
      ["app", "/home/me/app · 2 sessions", ["s-a3", "s-a1"]],
      ["(no project)", "1 session", ["s-none"]],
      ["billing", "1 session", ["s-b"]],
      ["app", "/home/me/app/ · 1 session", ["s-a2"]],
    ],
  );
});

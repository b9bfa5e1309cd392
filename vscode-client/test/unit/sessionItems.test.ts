import assert from "node:assert/strict";
import { test } from "node:test";
import { exchangeItem, sessionItem, sortSessions } from "../../src/sessionItems";

const session = { sessionId: "s-1", title: "fix config", workspace: "/w", exchanges: 3, prompts: 3, createdAt: "2026-11-21T09:00:00Z", updatedAt: "2026-11-21T10:00:00Z" };

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

import assert from "node:assert/strict";
import { test } from "node:test";
import { promptStatusFromEvent, renderPromptStatus } from "../../src/promptStatus";
import { CtxEvent } from "../../src/protocol";
import { formatTokens } from "../../src/tokenFigures";

test("token figures read like 950, 1.2k, 16k, 128k", () => {
  assert.deepEqual([950, 1234, 16000, 128000].map(formatTokens), ["950", "1.2k", "16k", "128k"]);
});

test("a full contextAssembled event shows tokens against budget and prefix reuse", () => {
  const status = promptStatusFromEvent({
    kind: "contextAssembled",
    sessionId: "s-1",
    promptId: "p4",
    tokens: 3200,
    budget: 16000,
    prefixReused: 2400,
    layers: {},
  });
  const text = renderPromptStatus(status);
  assert.equal(text.text, "$(layers) 3.2k/16k · prefix 75%");
  assert.match(text.tooltip, /p4 in s-1/);
  assert.match(text.tooltip, /3200 of 16000 budget tokens \(20%\)/);
});

test("tokens given as {total} and prefixReused as a ratio or a flag are understood", () => {
  // Shapes the Rust types no longer send, which the status bar still reads.
  const ratio = promptStatusFromEvent({ kind: "contextAssembled", sessionId: "s", tokens: { total: 900 }, prefixReused: 0.5 } as unknown as CtxEvent);
  assert.equal(renderPromptStatus(ratio).text, "$(layers) 900 · prefix 50%");
  const flag = promptStatusFromEvent({ kind: "contextAssembled", sessionId: "s", promptId: "p1", prefixReused: false } as unknown as CtxEvent);
  assert.equal(renderPromptStatus(flag).text, "$(layers) new prefix");
});

test("missing fields show what there is; other kinds are ignored", () => {
  const bare = promptStatusFromEvent({ kind: "contextAssembled", sessionId: "s", promptId: "p2" } as unknown as CtxEvent);
  assert.equal(renderPromptStatus(bare).text, "$(layers) p2");
  assert.equal(promptStatusFromEvent({ kind: "exchangeStored", sessionId: "s", exchangeId: "x1", messages: 2 }), undefined);
  assert.equal(renderPromptStatus(undefined).text, "$(layers) ctx");
});

import assert from "node:assert/strict";
import { test } from "node:test";
import { promptView } from "../../src/explainModel";
import { effectiveCost, newestExchangeShown, OUTSIDE_LAYERS, sessionChart } from "../../src/sessionChart";
import { niceStep, renderSessionChart } from "../../src/sessionChartHtml";
import { loadSessionPrompts, MAX_PROMPTS, promptPicks } from "../../src/sessionPrompts";
import { Sidecar } from "../../src/sidecar";

/** A prompt record as ctx/explain returns it: `recent` names the exchanges it shows in full. */
function explain(seq: number, recent: string[], layers: Record<string, number>, total: number, prefixReused: number) {
  return {
    promptId: `p${seq}`,
    sessionId: "s-1",
    budget: 1000,
    createdAt: `2026-11-21T10:0${seq}:00Z`,
    prefixReused,
    tokens: { total, layers },
    layers: [
      { layer: "recent", tokens: layers.recent ?? 0, items: recent.map((id) => ({ id, format: "full", tokens: 1 })) },
      { layer: "input", tokens: layers.input ?? 0, items: [{ id: "input", format: "text", tokens: layers.input ?? 0 }] },
    ],
    trimmed: [],
  };
}

const records = [
  explain(1, [], { system: 10, input: 20 }, 250, 0),
  explain(2, ["x1"], { system: 10, recent: 300, input: 30 }, 560, 240),
  explain(3, ["x1", "x2"], { system: 10, recent: 600, input: 25 }, 855, 530),
];
const views = records.map((r) => promptView(r, { sessionId: "s-1", promptId: r.promptId }));
const exchanges = [
  { id: "x1", header: "a", at: "", tokens: 400, fullTokens: 400, outcome: "completed" },
  { id: "x2", header: "b", at: "", tokens: 900, fullTokens: 900, outcome: "completed" },
  { id: "x3", header: "c", at: "", tokens: 50, fullTokens: 50, outcome: "completed" },
];

test("each prompt's layers stack to its total, what no layer holds on top", () => {
  const chart = sessionChart("s-1", views, exchanges);
  assert.equal(chart.budget, 1000);
  for (const prompt of chart.prompts) {
    assert.equal(prompt.layers.reduce((sum, layer) => sum + layer.tokens, 0), prompt.total, prompt.promptId);
  }
  assert.deepEqual(chart.prompts[1].layers.find((l) => l.name === OUTSIDE_LAYERS)?.tokens, 560 - 340);
});

test("cumulative effective cost counts a reused prefix at a tenth, as replay --report does", () => {
  assert.equal(effectiveCost(1000, 800), 200 + 80);
  assert.equal(effectiveCost(100, 500), 10);
  const chart = sessionChart("s-1", views, exchanges);
  assert.deepEqual(
    chart.prompts.map((p) => p.cumulativeCost),
    [250, 250 + 320 + 24, 250 + 320 + 24 + 325 + 53],
  );
});

test("full history is estimated from the exchanges each prompt shows, plus its input", () => {
  assert.deepEqual(views.map(newestExchangeShown), [0, 1, 2]);
  const chart = sessionChart("s-1", views, exchanges);
  // x3 is stored but no prompt shows it yet: it is not in any estimate.
  assert.deepEqual(chart.prompts.map((p) => p.fullHistory), [20 + 3, 400 + 30 + 3, 1300 + 25 + 3]);
  // Each prompt reuses the history the previous one held.
  assert.deepEqual(
    chart.prompts.map((p) => p.fullHistoryCumulativeCost),
    [23, 23 + effectiveCost(433, 0), 23 + effectiveCost(433, 0) + effectiveCost(1328, 400)],
  );
  assert.equal(sessionChart("s-1", views).prompts[0].fullHistory, undefined, "no exchanges, no estimate");
});

test("the chart draws every figure, in data attributes the e2e test reads", () => {
  const chart = sessionChart("s-1", views, exchanges);
  const html = renderSessionChart(chart, "p2");
  assert.match(html, /data-prompts="3"/);
  for (const prompt of chart.prompts) {
    const bar = new RegExp(`<g class="prompt-bar" data-prompt="${prompt.promptId}" data-total="${prompt.total}">(.*?)</g>`).exec(html);
    assert.ok(bar, prompt.promptId);
    const drawn = [...bar[1].matchAll(/data-layer="(\w+)" data-tokens="(\d+)"/g)].map((m) => [m[1], Number(m[2])]);
    assert.deepEqual(drawn, prompt.layers.filter((l) => l.tokens > 0).map((l) => [l.name, l.tokens]));
    assert.match(html, new RegExp(`data-prompt="${prompt.promptId}" data-value="${prompt.cumulativeCost}"`));
    assert.match(html, new RegExp(`data-prompt="${prompt.promptId}" data-value="${prompt.fullHistory}"`));
  }
  assert.match(html, /data-budget="1000"/);
  const small = renderSessionChart({ ...chart, budget: 100_000 });
  assert.doesNotMatch(small, /data-budget/, "a budget far above every prompt is not drawn");
  assert.match(small, /under a quarter of the 100k budget/);
  assert.equal((html.match(/class="current"/g) ?? []).length, 1, "the prompt shown is outlined");
  assert.match(renderSessionChart({ sessionId: "s-1", prompts: [] }), /No prompt/);
});

test("axis steps are 1, 2 or 5 times a power of ten", () => {
  assert.deepEqual([niceStep(0), niceStep(0.3), niceStep(180), niceStep(3700), niceStep(7000)], [1, 0.5, 200, 5000, 10000]);
});

test("the prompt picker lists the session's prompts newest first, with their tokens", () => {
  const picks = promptPicks(views);
  assert.deepEqual(
    picks.map((p) => [p.promptId, p.description]),
    [
      ["p3", "855 tokens · 86% of the 1k budget"],
      ["p2", "560 tokens · 56% of the 1k budget"],
      ["p1", "250 tokens · 25% of the 1k budget"],
    ],
  );
  assert.match(picks[0].detail ?? "", /^newest · assembled 2026-11-21T10:03:00Z · prefix reused 62%$/);
  assert.ok(!(picks[1].detail ?? "").includes("newest"));
});

test("a session's prompts are read p1 to p<prompts>, the newest MAX_PROMPTS of a longer one", async () => {
  const asked: string[] = [];
  const sidecar = new Sidecar({
    sendRequest: async <R>(method: string, params: unknown): Promise<R> => {
      assert.equal(method, "ctx/explain");
      const { promptId } = params as { promptId: string };
      asked.push(promptId);
      return explain(Number(promptId.slice(1)), [], { input: 5 }, 100, 0) as R;
    },
  });
  const three = await loadSessionPrompts(sidecar, "s-1", 3);
  assert.deepEqual(three.map((p) => p.promptId), ["p1", "p2", "p3"]);
  asked.length = 0;
  const many = await loadSessionPrompts(sidecar, "s-1", MAX_PROMPTS + 50);
  assert.equal(many.length, MAX_PROMPTS);
  assert.equal(many[0].promptId, "p51");
  assert.equal(many[many.length - 1].promptId, `p${MAX_PROMPTS + 50}`);
  assert.deepEqual(await loadSessionPrompts(sidecar, "s-1", 0), []);
});

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { promptView } from "../../src/explainModel";
import { escapeHtml } from "../../src/html";
import { renderPromptHtml } from "../../src/promptHtml";

const explain = JSON.parse(readFileSync(join(__dirname, "../../../test/data/explain-p3.json"), "utf8"));
const fallback = { sessionId: "s-other", promptId: "p0" };

test("layers come in packer order with tokens, shares and items", () => {
  const view = promptView(explain, fallback);
  assert.equal(view.promptId, "p3");
  assert.equal(view.sessionId, "s-7k2m9q");
  assert.equal(view.total, 1200);
  assert.equal(view.budget, 16000);
  assert.equal(view.encoding, "o200k_base");
  assert.equal(view.prefixReused, 900);
  assert.deepEqual(
    view.layers.map((l) => [l.name, l.tokens, l.items.length]),
    [
      ["system", 100, 0],
      ["memory", 0, 0],
      ["projectRecent", 0, 0],
      ["currentContext", 150, 1],
      ["recent", 600, 2],
      ["headers", 50, 2],
      ["summaries", 0, 0],
      ["asks", 0, 0],
      ["references", 280, 1],
      ["recall", 0, 0],
      ["projectRecall", 0, 0],
      ["input", 20, 0],
    ],
  );
  assert.equal(view.layers.find((l) => l.name === "recent")?.share, 0.5);
  assert.deepEqual(view.toolNames, ["context_retrieve", "context_search"]);
  assert.deepEqual(view.messages[2].toolCalls, ['call_1 context_retrieve({"ids":["x1"]})']);
  assert.equal(view.messages[3].toolCallId, "call_1");
});

test("layers sent as an object, without per-layer totals, are summed from their items", () => {
  const view = promptView(
    {
      layers: {
        recent: { items: [{ id: "x9", format: "full", tokens: 40 }, { id: "x8", format: "summary", tokens: 10 }] },
        extra: { tokens: 5, items: [] },
      },
    },
    fallback,
  );
  assert.equal(view.promptId, "p0");
  assert.equal(view.layers.find((l) => l.name === "recent")?.tokens, 50);
  assert.equal(view.layers.find((l) => l.name === "extra")?.tokens, 5);
  assert.equal(view.total, 55);
});

test("the HTML has a row per layer with its tokens, the items, the trims and escaped messages", () => {
  const html = renderPromptHtml(promptView(explain, fallback), { cspSource: "vscode-webview:" });
  assert.match(html, /<span id="total-tokens">1200<\/span> tokens of 16000 budget/);
  assert.match(html, /data-layer="recent">\n<td class="layer-name">L1 recent<\/td>\n<td class="layer-tokens">600<\/td>\n<td class="layer-share">50%<\/td>/);
  assert.match(html, /<div class="bar" style="width:50\.0%">/);
  assert.match(html, /o200k_base · prefix reused: 900 tokens \(75%\) · assembled 2026-11-21T10:00:00Z/);
  assert.match(html, /<code class="item-id">b3:0123456789ab<\/code>/);
  assert.match(html, /<td><code>x1<\/code><\/td><td>full → digests<\/td><td>budget<\/td>/);
  assert.match(html, /You are &lt;careful&gt; &amp; brief\./);
  assert.doesNotMatch(html, /<careful>/);
  assert.doesNotMatch(html, /<script/);
  assert.match(html, /default-src 'none'; style-src vscode-webview:/);
});

test("escapeHtml escapes the five special characters", () => {
  assert.equal(escapeHtml(`<a href="x">'&'</a>`), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
});

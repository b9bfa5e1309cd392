// The protocol layer, the replay and the chat loop against the real ctxproxy binary over stdio.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, test } from "node:test";
import { runChatTurn } from "../../src/chatLoop";
import { promptView } from "../../src/explainModel";
import { renderPromptHtml } from "../../src/promptHtml";
import { newestExchangeShown, sessionChart } from "../../src/sessionChart";
import { loadSessionPrompts, promptPicks } from "../../src/sessionPrompts";
import { promptStatusFromEvent } from "../../src/promptStatus";
import { Retrieved, RetrieveResult } from "../../src/protocol";
import { parseSessionJsonl, replaySession, ReplayResult } from "../../src/replay";
import { CONFIG_SECTION, serverConfig } from "../../src/settings";
import { fixtureSessionPath, searchableWord } from "../fixtureSession";
import { ScriptedModel, text, toolCall } from "../scriptedModel";
import { RunningSidecar, startSidecar, waitForEvent } from "../sidecarProcess";

const recorded = parseSessionJsonl(readFileSync(fixtureSessionPath(), "utf8")).exchanges;
let running: RunningSidecar;
let replayed: ReplayResult;

const [CONTEXT_RETRIEVE, CONTEXT_SEARCH] = ["context_retrieve", "context_search"];

function retrievedText(result: RetrieveResult): string {
  const item = result.items[0];
  assert.ok(item && !("error" in item), `retrieve failed: ${JSON.stringify(item)}`);
  return (item as Retrieved).text;
}

before(async () => {
  // Layered from the first prompt: minimal.jsonl is short enough to be sent whole, without the
  // context tools the chat loop's test drives.
  running = await startSidecar({ budget: 16000, wholeHistory: false });
  replayed = await replaySession(running.sidecar, parseSessionJsonl(readFileSync(fixtureSessionPath(), "utf8")), { title: "minimal.jsonl", workspace: "/work/demo" });
});

after(async () => {
  await running?.stop();
});

test("initialize answers with server capabilities", () => {
  assert.equal(typeof running.initializeResult, "object");
  assert.ok((running.initializeResult as { capabilities?: unknown }).capabilities);
});

test("replay assembles one prompt per exchange and stores every exchange", async () => {
  assert.equal(replayed.prompts.length, recorded.length);
  assert.deepEqual(
    replayed.prompts.map((p) => p.promptId),
    recorded.map((_, index) => `p${index + 1}`),
  );
  for (const prompt of replayed.prompts) assert.ok(prompt.tokens.total > 0);

  const { sessions } = await running.sidecar.listSessions({});
  const session = sessions.find((s) => s.sessionId === replayed.sessionId);
  assert.ok(session, "the replayed session is listed");
  assert.equal(session.title, "minimal.jsonl");
  assert.equal(session.exchanges, recorded.length);

  const { exchanges } = await running.sidecar.listExchanges({ sessionId: replayed.sessionId });
  assert.deepEqual(
    exchanges.map((x) => x.id),
    recorded.map((_, index) => `x${index + 1}`),
  );
  for (const exchange of exchanges) {
    assert.ok(exchange.header.length > 0, `${exchange.id} has a header`);
    assert.ok(exchange.tokens > 0, `${exchange.id} has tokens`);
  }
});

test("contextAssembled events carry what the status bar shows", async () => {
  const event = await waitForEvent(running.events, (e) => e.kind === "contextAssembled" && e.sessionId === replayed.sessionId);
  const status = promptStatusFromEvent(event);
  assert.ok(status);
  const missing = ["promptId", "tokens", "budget", "prefixReused"].filter((field) => (event as unknown as Record<string, unknown>)[field] === undefined);
  assert.deepEqual(missing, [], `contextAssembled lacks ${missing.join(", ")}: ${JSON.stringify(event)}`);
});

test("an exchange comes back in full and as a summary", async () => {
  const question = recorded[0].messages[0].content;
  const full = retrievedText(await running.sidecar.retrieve({ sessionId: replayed.sessionId, ids: ["x1"], format: "full" }));
  assert.ok(full.includes(question.slice(0, 30)), `x1 in full holds the question: ${full}`);
  const summary = retrievedText(await running.sidecar.retrieve({ sessionId: replayed.sessionId, ids: ["x1"], format: "summary" }));
  assert.ok(summary.length > 0 && summary.length <= full.length);
  const result = await running.sidecar.retrieve({ sessionId: replayed.sessionId, ids: ["x1", "x999"] });
  assert.ok("error" in result.items[1], "an unknown id fails its own item only");
});

test("explain of the last prompt renders with the same figures as assemble", async () => {
  const last = replayed.prompts[replayed.prompts.length - 1];
  const explain = await running.sidecar.explain({ sessionId: replayed.sessionId, promptId: last.promptId });
  const view = promptView(explain, { sessionId: replayed.sessionId, promptId: last.promptId });
  assert.equal(view.total, last.tokens.total);
  for (const layer of view.layers) {
    const assembled = last.tokens.layers[layer.name as keyof typeof last.tokens.layers];
    if (assembled !== undefined) assert.equal(layer.tokens, assembled, `layer ${layer.name}`);
  }
  assert.ok(view.messages.length >= 2, "the prompt's messages are shown");
  assert.ok(view.layers.some((layer) => layer.items.length > 0), "layers list their items");
  assert.deepEqual([...view.toolNames].sort(), [CONTEXT_RETRIEVE, CONTEXT_SEARCH]);
  const html = renderPromptHtml(view, { cspSource: "vscode-webview:" });
  assert.match(html, new RegExp(`<span id="total-tokens">${last.tokens.total}</span>`));
});

test("the session's prompts load from the server for the picker and chart, with assemble's figures", async () => {
  const { sessions } = await running.sidecar.listSessions({});
  const session = sessions.find((s) => s.sessionId === replayed.sessionId);
  assert.equal(session?.prompts, replayed.prompts.length);
  const prompts = await loadSessionPrompts(running.sidecar, replayed.sessionId, session.prompts);
  assert.deepEqual(
    prompts.map((p) => [p.promptId, p.total]),
    replayed.prompts.map((p) => [p.promptId, p.tokens.total]),
  );
  assert.deepEqual(
    promptPicks(prompts).map((p) => p.label),
    replayed.prompts.map((p) => p.promptId).reverse(),
  );
  const { exchanges } = await running.sidecar.listExchanges({ sessionId: replayed.sessionId });
  const chart = sessionChart(replayed.sessionId, prompts, exchanges);
  // Each prompt is assembled before its exchange is appended: it shows every exchange before it.
  assert.deepEqual(
    prompts.map(newestExchangeShown),
    replayed.prompts.map((_, index) => index),
  );
  for (const prompt of chart.prompts) {
    assert.equal(prompt.layers.reduce((sum, layer) => sum + layer.tokens, 0), prompt.total);
  }
  const html = renderPromptHtml(prompts[prompts.length - 1], { cspSource: "vscode-webview:" }, chart);
  assert.match(html, new RegExp(`id="session-chart" data-prompts="${prompts.length}"`));
});

test("search finds an exchange of the replayed session", async () => {
  const word = searchableWord(recorded[0].messages[0].content);
  const { hits } = await running.sidecar.search({ sessionId: replayed.sessionId, query: word });
  assert.ok(hits.length > 0, `no hit for ${word}`);
  assert.equal(hits[0].sessionId, replayed.sessionId);
});

test("the chat loop retrieves through the sidecar, answers, and appends the whole exchange", async () => {
  const question = recorded[0].messages[0].content;
  const model = new ScriptedModel([
    [text("Let me look at x1."), toolCall("call_a", CONTEXT_RETRIEVE, { ids: ["x1"], format: "full" })],
    [text("x1 answered that already.")],
  ]);
  const turn = await runChatTurn(running.sidecar, model, { sessionId: replayed.sessionId, text: "What did I ask first?" });

  assert.equal(turn.promptId, `p${recorded.length + 1}`);
  assert.equal(turn.toolRounds, 1);
  assert.deepEqual(model.requests[0].tools.map((t) => t.name).sort(), [CONTEXT_RETRIEVE, CONTEXT_SEARCH]);
  const firstPrompt = model.requests[0].messages;
  // The input, then the current context (L0) last.
  const [inputPart, contextPart] = firstPrompt.slice(-2).map((m) => m.parts[0]);
  assert.ok(inputPart.type === "text" && inputPart.value.trim() === "What did I ask first?", "the input comes before L0");
  assert.ok(contextPart.type === "text" && contextPart.value.startsWith("## Current context"), "the prompt ends with L0");
  const toolResult = model.requests[1].messages[model.requests[1].messages.length - 1].parts[0];
  assert.equal(toolResult.type, "toolResult");
  assert.ok(toolResult.type === "toolResult" && toolResult.text.includes(question.slice(0, 30)), "the model got x1");

  const newId = `x${recorded.length + 1}`;
  const { exchanges } = await running.sidecar.listExchanges({ sessionId: replayed.sessionId });
  assert.equal(exchanges[exchanges.length - 1].id, newId);
  const stored = retrievedText(await running.sidecar.retrieve({ sessionId: replayed.sessionId, ids: [newId], format: "full" }));
  assert.ok(stored.includes("What did I ask first?"), stored);
  assert.ok(stored.includes("x1 answered that already."), stored);
  assert.ok(stored.includes(CONTEXT_RETRIEVE), stored);
});

test("ctx/callContextTool answers with the text the model reads, and refuses an unknown tool or bad arguments", async () => {
  const sessionId = replayed.sessionId;
  const { text } = await running.sidecar.callContextTool({ sessionId, name: CONTEXT_RETRIEVE, arguments: { ids: ["x1"], format: "header" } });
  assert.match(text, /^## x1 \(header, \d+ tokens\)\n/);
  await assert.rejects(running.sidecar.callContextTool({ sessionId, name: "shell", arguments: {} }), /unknown tool `shell`: the context tools are context_retrieve and context_search/);
  await assert.rejects(
    running.sidecar.callContextTool({ sessionId, name: CONTEXT_SEARCH, arguments: { query: 3 } }),
    /context_search failed: arguments: query: invalid type: integer `3`, expected a string/,
  );
});

test("changed settings reach the sidecar as workspace/didChangeConfiguration under ctx", async () => {
  const settings: Record<string, unknown> = { budget: 12345, "layers.recentFull": 2 };
  await running.connection.sendNotification("workspace/didChangeConfiguration", {
    settings: { [CONFIG_SECTION]: serverConfig((key) => settings[key]) },
  });
  const prompt = await running.sidecar.assemble({ sessionId: replayed.sessionId, format: "openai" });
  const explain = await running.sidecar.explain({ sessionId: replayed.sessionId, promptId: prompt.promptId });
  assert.equal(promptView(explain, { sessionId: replayed.sessionId, promptId: prompt.promptId }).budget, 12345);
});

import assert from "node:assert/strict";
import { test } from "node:test";
import { ChatSidecar, runChatTurn } from "../../src/chatLoop";
import { renderRetrieveResult, renderSearchResult } from "../../src/contextTools";
import { AppendParams, AssembleParams, RetrieveParams, SearchParams } from "../../src/protocol";
import { ScriptedModel, text, toolCall } from "../scriptedModel";

function fakeSidecar() {
  const calls = { assemble: [] as AssembleParams[], append: [] as AppendParams[], retrieve: [] as RetrieveParams[], search: [] as SearchParams[] };
  const sidecar: ChatSidecar = {
    assemble: async (params) => {
      calls.assemble.push(params);
      return {
        promptId: "p7",
        messages: [
          { role: "system", content: "ctx system" },
          { role: "user", content: params.input?.content ?? "" },
        ],
        tools: [{ type: "function", function: { name: "context_retrieve", description: "r", parameters: {} } }],
        sessionId: params.sessionId,
        budget: 16000,
        encoding: "o200k_base",
        format: "openai",
        order: "cache-stable",
        tokens: { total: 10, layers: {} },
        clientToolsTokens: 0,
        prefixReused: 0,
        trimmed: [],
        layers: [],
        shape: "layered",
      };
    },
    append: async (params) => {
      calls.append.push(params);
      return { exchanges: [{ id: "x4", seq: 4 }], blobs: [] };
    },
    retrieve: async (params) => {
      calls.retrieve.push(params);
      return { items: [{ id: "x1", kind: "exchange", format: "full", text: "load_config in src/config.rs", tokens: 8, truncated: false, at: null, outcome: "completed" }] };
    },
    search: async (params) => {
      calls.search.push(params);
      return { hits: [{ id: "x2", sessionId: "s-1", header: "cargo test", snippet: "test result: ok", score: 1.5 }] };
    },
  };
  return { sidecar, calls };
}

test("a turn with one retrieval: tool answered through the sidecar, whole exchange appended", async () => {
  const { sidecar, calls } = fakeSidecar();
  const model = new ScriptedModel([
    [text("Checking x1."), toolCall("c1", "context_retrieve", { ids: ["x1"], format: "full" })],
    [text("It is "), text("load_config.")],
  ]);
  const streamed: string[] = [];
  const turn = await runChatTurn(sidecar, model, { sessionId: "s-1", text: "Where is config loaded?", onText: (t) => streamed.push(t) });

  assert.equal(turn.promptId, "p7");
  assert.equal(turn.answer, "It is load_config.");
  assert.equal(turn.toolRounds, 1);
  assert.deepEqual(streamed, ["Checking x1.", "It is ", "load_config."]);
  assert.deepEqual(calls.assemble[0].input, { role: "user", content: "Where is config loaded?", kind: "query" });
  assert.equal(calls.assemble[0].format, "openai");
  assert.deepEqual(calls.retrieve, [{ sessionId: "s-1", ids: ["x1"], format: "full" }]);

  assert.equal(model.requests.length, 2);
  assert.deepEqual(model.requests[0].tools.map((t) => t.name), ["context_retrieve"]);
  const second = model.requests[1].messages;
  assert.deepEqual(second[second.length - 1], {
    role: "user",
    parts: [{ type: "toolResult", callId: "c1", text: "## x1 (full, 8 tokens)\nload_config in src/config.rs" }],
  });

  assert.deepEqual(calls.append, [
    {
      sessionId: "s-1",
      messages: [
        { role: "user", content: "Where is config loaded?", kind: "query" },
        { role: "assistant", content: "Checking x1.", toolCalls: [{ id: "c1", name: "context_retrieve", arguments: { ids: ["x1"], format: "full" } }] },
        { role: "tool", toolCallId: "c1", name: "context_retrieve", content: "## x1 (full, 8 tokens)\nload_config in src/config.rs" },
        { role: "assistant", content: "It is load_config." },
      ],
    },
  ]);
});

test("after the last allowed tool round the model is asked without tools", async () => {
  const { sidecar, calls } = fakeSidecar();
  const model = new ScriptedModel([[toolCall("c1", "context_search", { query: "cargo" })], [text("Done.")]]);
  const turn = await runChatTurn(sidecar, model, { sessionId: "s-1", text: "q", maxToolRounds: 1 });
  assert.equal(turn.answer, "Done.");
  assert.deepEqual(calls.search, [{ sessionId: "s-1", query: "cargo", limit: undefined }]);
  assert.deepEqual(model.requests[1].tools, []);
});

test("an unknown tool and a failing retrieval become text for the model", async () => {
  const { sidecar } = fakeSidecar();
  sidecar.retrieve = async () => {
    throw new Error("unknown session");
  };
  const model = new ScriptedModel([[toolCall("c1", "shell", {}), toolCall("c2", "context_retrieve", { ids: ["x9"] })], [text("ok")]]);
  const turn = await runChatTurn(sidecar, model, { sessionId: "s-1", text: "q" });
  const tools = turn.appended.filter((m) => m.role === "tool").map((m) => m.content);
  assert.deepEqual(tools, [
    "Unknown tool shell: the tools are context_retrieve and context_search.",
    "context_retrieve failed: unknown session",
  ]);
});

test("retrieve and search results render as text the model can read", () => {
  assert.equal(
    renderRetrieveResult({
      items: [
        { id: "x1", kind: "exchange", format: "summary", text: "asked about config", tokens: 4, truncated: true, at: null, outcome: "completed" },
        { id: "x99", error: { code: -32002, message: "unknown id" } },
      ],
    }),
    "## x1 (summary, 4 tokens, truncated)\nasked about config\n\n## x99: error -32002: unknown id",
  );
  assert.equal(renderSearchResult({ hits: [] }), "No matches.");
  assert.equal(
    renderSearchResult({ hits: [{ id: "x2", sessionId: "s-1", header: "cargo test", snippet: "test result: ok. 9 passed", score: 2 }] }),
    "x2 [s-1] cargo test\n  …test result: ok. 9 passed…",
  );
  assert.equal(renderSearchResult({ hits: [{ id: "x2", sessionId: "s-1", header: "cargo test", snippet: "", score: 2 }] }), "x2 [s-1] cargo test");
});

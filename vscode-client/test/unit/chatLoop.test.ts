import assert from "node:assert/strict";
import { test } from "node:test";
import { ChatSidecar, runChatTurn } from "../../src/chatLoop";
import { AppendParams, AssembleParams, CallContextToolParams } from "../../src/protocol";
import { ScriptedModel, text, toolCall } from "../scriptedModel";

function fakeSidecar() {
  const calls = { assemble: [] as AssembleParams[], append: [] as AppendParams[], tools: [] as CallContextToolParams[] };
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
    // The server renders the answer (ctx/callContextTool); the loop hands it to the model as it is.
    callContextTool: async (params) => {
      calls.tools.push(params);
      return { text: "## x1 (full, 8 tokens)\nload_config in src/config.rs" };
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
  assert.deepEqual(calls.tools, [{ sessionId: "s-1", name: "context_retrieve", arguments: { ids: ["x1"], format: "full" } }]);

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
  assert.deepEqual(calls.tools, [{ sessionId: "s-1", name: "context_search", arguments: { query: "cargo" } }]);
  assert.deepEqual(model.requests[1].tools, []);
});

test("a call the server refuses becomes its message, as text for the model", async () => {
  const { sidecar } = fakeSidecar();
  const refusals: Record<string, string> = {
    shell: "unknown tool `shell`: the context tools are context_retrieve and context_search",
    context_retrieve: "context_retrieve failed: unknown session `s-1`",
  };
  sidecar.callContextTool = async ({ name }) => {
    throw new Error(refusals[name]);
  };
  const model = new ScriptedModel([[toolCall("c1", "shell", {}), toolCall("c2", "context_retrieve", { ids: ["x9"] })], [text("ok")]]);
  const turn = await runChatTurn(sidecar, model, { sessionId: "s-1", text: "q" });
  const tools = turn.appended.filter((m) => m.role === "tool").map((m) => m.content);
  assert.deepEqual(tools, [refusals.shell, refusals.context_retrieve]);
});

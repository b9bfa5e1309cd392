import assert from "node:assert/strict";
import { test } from "node:test";
import { openAiToLm, openAiToolsToLm, parseToolArguments } from "../../src/lmConvert";
import { OpenAiMessage } from "../../src/protocol";

test("system and user messages become user messages with one text part", () => {
  const messages: OpenAiMessage[] = [
    { role: "system", content: "Be brief." },
    { role: "user", content: [{ type: "text", text: "Hi " }, { type: "text", text: "there" }] },
  ];
  assert.deepEqual(openAiToLm(messages), [
    { role: "user", parts: [{ type: "text", value: "Be brief." }] },
    { role: "user", parts: [{ type: "text", value: "Hi there" }] },
  ]);
});

test("assistant tool calls become tool call parts with parsed input", () => {
  const messages: OpenAiMessage[] = [
    {
      role: "assistant",
      content: "Looking.",
      tool_calls: [{ id: "c1", type: "function", function: { name: "context_retrieve", arguments: '{"ids":["x1"]}' } }],
    },
  ];
  assert.deepEqual(openAiToLm(messages), [
    {
      role: "assistant",
      parts: [
        { type: "text", value: "Looking." },
        { type: "toolCall", callId: "c1", name: "context_retrieve", input: { ids: ["x1"] } },
      ],
    },
  ]);
});

test("consecutive tool results share one user message; an empty assistant text is dropped", () => {
  const messages: OpenAiMessage[] = [
    {
      role: "assistant",
      content: null,
      tool_calls: [
        { id: "c1", type: "function", function: { name: "a", arguments: "{}" } },
        { id: "c2", type: "function", function: { name: "b", arguments: "{}" } },
      ],
    },
    { role: "tool", tool_call_id: "c1", content: "one" },
    { role: "tool", tool_call_id: "c2", content: "two" },
    { role: "user", content: "next" },
  ];
  const lm = openAiToLm(messages);
  assert.equal(lm.length, 3);
  assert.deepEqual(lm[0].parts.map((p) => p.type), ["toolCall", "toolCall"]);
  assert.deepEqual(lm[1], {
    role: "user",
    parts: [
      { type: "toolResult", callId: "c1", text: "one" },
      { type: "toolResult", callId: "c2", text: "two" },
    ],
  });
  assert.deepEqual(lm[2], { role: "user", parts: [{ type: "text", value: "next" }] });
});

test("tool arguments that are not a JSON object are wrapped, not lost", () => {
  assert.deepEqual(parseToolArguments('{"a":1}'), { a: 1 });
  assert.deepEqual(parseToolArguments("[1,2]"), { value: [1, 2] });
  assert.deepEqual(parseToolArguments("{oops"), { unparsed: "{oops" });
});

test("OpenAI function tools become lm tools", () => {
  const tools = openAiToolsToLm([
    { type: "function", function: { name: "context_search", description: "Search", parameters: { type: "object" } } },
    { type: "function", function: { name: "bare" } },
  ]);
  assert.deepEqual(tools, [
    { name: "context_search", description: "Search", inputSchema: { type: "object" } },
    { name: "bare", description: "", inputSchema: undefined },
  ]);
});

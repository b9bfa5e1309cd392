import assert from "node:assert/strict";
import { test } from "node:test";
import { ctxproxyApi } from "../../src/api";
import { PromptHistory } from "../../src/promptHistory";
import { Sidecar } from "../../src/sidecar";

test("the API forwards each call to its ctx/ method and remembers assembled prompts", async () => {
  const sent: [string, unknown][] = [];
  const sidecar = new Sidecar({
    sendRequest: async <R>(method: string, params: unknown) => {
      sent.push([method, params]);
      return (method === "ctx/assemble" ? { promptId: "p2" } : {}) as R;
    },
  });
  const history = new PromptHistory();
  const api = ctxproxyApi(sidecar, history);
  await api.openSession({ title: "t" });
  await api.append({ sessionId: "s-1", messages: [{ role: "user", content: "hi" }] });
  await api.assemble({ sessionId: "s-1", format: "openai" });
  await api.retrieve({ sessionId: "s-1", ids: ["x1"] });
  await api.search({ query: "hi" });
  await api.explain({ sessionId: "s-1", promptId: "p2" });
  assert.deepEqual(
    sent.map(([method]) => method),
    ["ctx/openSession", "ctx/append", "ctx/assemble", "ctx/retrieve", "ctx/search", "ctx/explain"],
  );
  assert.deepEqual(sent[2][1], { sessionId: "s-1", format: "openai" });
  assert.deepEqual(history.last(), { sessionId: "s-1", promptId: "p2" });
});

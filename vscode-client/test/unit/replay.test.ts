import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { parseSessionJsonl } from "../../src/replay";

test("a recorded session parses one exchange per line", () => {
  const exchanges = parseSessionJsonl(readFileSync(join(__dirname, "../../../test/data/minimal.jsonl"), "utf8"));
  assert.equal(exchanges.length, 3);
  assert.equal(exchanges[0].messages[0].role, "user");
  assert.equal(exchanges[1].messages[1].toolCalls?.[0].name, "run");
});

test("a bad line is named in the error", () => {
  assert.throws(() => parseSessionJsonl('{"messages":[{"role":"user","content":"a"}]}\n{nope'), /line 2: not JSON/);
  assert.throws(() => parseSessionJsonl('{"messages":[]}'), /line 1: "messages" must be a non-empty array/);
});

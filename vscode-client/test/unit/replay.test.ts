import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { parseSessionJsonl } from "../../src/replay";

test("a recorded session parses one exchange per line", () => {
  const { exchanges, sessions } = parseSessionJsonl(
    readFileSync(join(__dirname, "../../../test/data/minimal.jsonl"), "utf8"),
  );
  assert.deepEqual(sessions, [{ name: "main" }]);
  assert.equal(exchanges.length, 3);
  assert.equal(exchanges[0].messages[0].role, "user");
  assert.equal(exchanges[1].messages[1].toolCalls?.[0].name, "run");
});

test("a bad line is named in the error", () => {
  assert.throws(() => parseSessionJsonl('{"messages":[{"role":"user","content":"a"}]}\n{nope'), /line 2: not JSON/);
  assert.throws(() => parseSessionJsonl('{"messages":[]}'), /line 1: "messages" must be a non-empty array/);
});

test("a file of several sessions: forks, child calls, in and supersedes", () => {
  const file = parseSessionJsonl(
    [
      '{"messages":[{"role":"user","content":"a"}]}',
      '{"session":{"name":"b1","fork":{"from":"main","atExchange":1}}}',
      '{"in":"b1","supersedes":["x1"],"messages":[{"role":"user","content":"b"}]}',
      '{"session":{"name":"c1","child":{"from":"b1","atExchange":2,"query":"q"}}}',
      '{"in":"c1","messages":[{"role":"user","content":"c"}]}',
    ].join("\n"),
  );
  assert.deepEqual(file.sessions.map((s) => s.name), ["main", "b1", "c1"]);
  assert.deepEqual(
    file.exchanges.map((x) => [x.session, x.supersedes]),
    [["main", []], ["b1", ["x1"]], ["c1", []]],
  );
  assert.deepEqual(file.steps.map((s) => ("open" in s ? `open ${s.open.name}` : s.exchange.session)), [
    "main",
    "open b1",
    "b1",
    "open c1",
    "c1",
  ]);
  assert.throws(() => parseSessionJsonl('{"in":"b9","messages":[{"role":"user","content":"a"}]}'), /line 1: in: no session "b9"/);
  assert.throws(
    () => parseSessionJsonl('{"session":{"name":"b","fork":{"from":"nope","atExchange":0}}}'),
    /line 1: session needs exactly one of fork and child/,
  );
});

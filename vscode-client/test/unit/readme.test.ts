// The README's settings table is the package's: every setting listed once, with its default.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

const root = join(__dirname, "../../..");

// A setting without a default in package.json is sized by the budget on the server: its row says
// `by budget`.
test("the README lists every setting with the default package.json gives it", () => {
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  const properties: Record<string, { default?: unknown }> = manifest.contributes.configuration.properties;
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const rows = new Map<string, string>();
  for (const match of readme.matchAll(/^\| `(ctxproxy\.[\w.]+)` \| `([^`]*)` \|/gm)) rows.set(match[1], match[2]);
  assert.deepEqual([...rows.keys()].sort(), Object.keys(properties).sort());
  for (const [key, property] of Object.entries(properties)) {
    const expected = "default" in property ? JSON.stringify(property.default) : "by budget";
    assert.equal(rows.get(key), expected, key);
  }
});

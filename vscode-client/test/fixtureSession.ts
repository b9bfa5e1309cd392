// The recorded session the integration and e2e tests replay: the shared fixtures' minimal.jsonl when
// it exists, else the small one in test/data.
import { existsSync } from "node:fs";
import { resolve } from "node:path";

export function fixtureSessionPath(): string {
  const shared = resolve(__dirname, "../../../fixtures/sessions/minimal.jsonl");
  return existsSync(shared) ? shared : resolve(__dirname, "../../test/data/minimal.jsonl");
}

/** The longest word of a text: something a full-text search of that text should find. */
export function searchableWord(text: string): string {
  return text.split(/\W+/).reduce((longest, word) => (word.length > longest.length ? word : longest), "");
}

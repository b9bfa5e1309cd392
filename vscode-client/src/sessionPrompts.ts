// A session's recorded prompts, read through ctx/explain (the server keeps p1 to p<prompts>), and the
// quick pick entries that offer them newest first with their tokens. No vscode import.
import { promptView, PromptView } from "./explainModel";
import { Sidecar } from "./sidecar";
import { formatPercent, formatTokens } from "./tokenFigures";

/** The most prompts one view reads: the newest ones of a longer session. */
export const MAX_PROMPTS = 200;

/** The newest `count` prompts of a session (at most MAX_PROMPTS), oldest first. */
export async function loadSessionPrompts(sidecar: Sidecar, sessionId: string, count: number): Promise<PromptView[]> {
  const first = Math.max(1, count - MAX_PROMPTS + 1);
  const ids = Array.from({ length: Math.max(0, count - first + 1) }, (_, index) => `p${first + index}`);
  return Promise.all(
    ids.map(async (promptId) => promptView(await sidecar.explain({ sessionId, promptId }), { sessionId, promptId })),
  );
}

export interface PromptPick {
  label: string;
  description: string;
  detail?: string;
  promptId: string;
}

/** Quick pick entries for `prompts` (oldest first, as loaded): newest first, each with its tokens. */
export function promptPicks(prompts: PromptView[]): PromptPick[] {
  return [...prompts].reverse().map((prompt, index) => {
    const budget = prompt.budget ? ` · ${formatPercent(prompt.total / prompt.budget)} of the ${formatTokens(prompt.budget)} budget` : "";
    const reused =
      prompt.prefixReused !== undefined && prompt.total > 0 ? `prefix reused ${formatPercent(prompt.prefixReused / prompt.total)}` : undefined;
    const detail = [index === 0 ? "newest" : undefined, prompt.createdAt ? `assembled ${prompt.createdAt}` : undefined, reused]
      .filter((part) => part !== undefined)
      .join(" · ");
    return {
      label: prompt.promptId,
      description: `${prompt.total} tokens${budget}`,
      detail: detail || undefined,
      promptId: prompt.promptId,
    };
  });
}

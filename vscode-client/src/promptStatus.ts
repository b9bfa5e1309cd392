// The status bar's view of the last assembled prompt, read from ctx/event contextAssembled. Every field
// past the kind is optional: the bar shows what the event carries. No vscode import.
import { CtxEvent } from "./protocol";
import { formatPercent, formatTokens } from "./tokenFigures";

export interface PromptStatus {
  sessionId: string;
  promptId?: string;
  tokens?: number;
  budget?: number;
  /** true/false, a share of the prompt (0..1), or a count of tokens. */
  prefixReused?: boolean | number;
}

export function promptStatusFromEvent(event: CtxEvent): PromptStatus | undefined {
  if (event.kind !== "contextAssembled") return undefined;
  return {
    sessionId: event.sessionId,
    promptId: typeof event.promptId === "string" ? event.promptId : undefined,
    tokens: readTokens(event.tokens),
    budget: typeof event.budget === "number" ? event.budget : undefined,
    prefixReused:
      typeof event.prefixReused === "boolean" || typeof event.prefixReused === "number"
        ? event.prefixReused
        : undefined,
  };
}

function readTokens(tokens: unknown): number | undefined {
  if (typeof tokens === "number") return tokens;
  if (tokens && typeof tokens === "object" && typeof (tokens as { total?: unknown }).total === "number") {
    return (tokens as { total: number }).total;
  }
  return undefined;
}

/** Share of the prompt that repeats the previous prompt's prefix, when the event lets us tell. */
export function prefixShare(status: PromptStatus): number | undefined {
  const reused = status.prefixReused;
  if (typeof reused !== "number") return undefined;
  if (reused <= 1) return reused;
  return status.tokens ? Math.min(1, reused / status.tokens) : undefined;
}

export interface StatusText {
  text: string;
  tooltip: string;
}

export function renderPromptStatus(status: PromptStatus | undefined): StatusText {
  if (!status) return { text: "$(layers) ctx", tooltip: "ctxproxy: no prompt assembled yet" };
  const figures: string[] = [];
  const tooltip: string[] = [`ctxproxy prompt ${status.promptId ?? "(id not reported)"} in ${status.sessionId}`];
  if (status.tokens !== undefined && status.budget !== undefined) {
    figures.push(`${formatTokens(status.tokens)}/${formatTokens(status.budget)}`);
    tooltip.push(`${status.tokens} of ${status.budget} budget tokens (${formatPercent(status.tokens / status.budget)})`);
  } else if (status.tokens !== undefined) {
    figures.push(formatTokens(status.tokens));
    tooltip.push(`${status.tokens} tokens`);
  }
  const share = prefixShare(status);
  if (share !== undefined) {
    figures.push(`prefix ${formatPercent(share)}`);
    tooltip.push(`prefix reused: ${formatPercent(share)} of the prompt`);
  } else if (typeof status.prefixReused === "boolean") {
    figures.push(status.prefixReused ? "prefix reused" : "new prefix");
    tooltip.push(status.prefixReused ? "prefix reused from the previous prompt" : "prefix differs from the previous prompt");
  }
  const text = figures.length > 0 ? `$(layers) ${figures.join(" · ")}` : `$(layers) ${status.promptId ?? "ctx"}`;
  tooltip.push("Click to show what the model saw");
  return { text, tooltip: tooltip.join("\n") };
}

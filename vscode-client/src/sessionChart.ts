// The per-prompt figures of one session, as `ctxproxy replay --report` charts them: each prompt's
// tokens by layer, the cumulative effective cost (a prefix identical to the previous prompt's start
// counted at a tenth), and what full history would have sent at the same point. Built from the
// session's prompt records (ctx/explain) and its exchanges (ctx/listExchanges); the server computes
// no baseline for a live session, so full history is estimated here: the exchanges up to the newest
// one the prompt shows, as appended (tool output raw), plus the prompt's input. listExchanges counts
// message text only (no tool-call arguments, no per-message overhead), so the estimate is a lower
// bound: 18% under `replay --report`'s full history on coding-strsim, 29% on bfcl-travel-tickets.
// No vscode import.
import { PromptView } from "./explainModel";
import { ExchangeHeader } from "./protocol";

/** The price of a cached token, relative to an uncached one (RunCost::CACHED_PRICE in the server). */
export const CACHED_PRICE = 0.1;
/** Tokens every prompt ends with for the model's reply (REPLY_PRIMER in the server). */
const REPLY_PRIMER = 3;

export interface ChartLayer {
  name: string;
  label: string;
  tokens: number;
}

export interface ChartPrompt {
  promptId: string;
  total: number;
  /** The prompt's layers in packer order, then what it charges outside them (tool definitions). */
  layers: ChartLayer[];
  prefixReused: number;
  /** Effective cost of the session's prompts up to and including this one. */
  cumulativeCost: number;
  /** Full history's prompt at this point (a lower bound); absent without exchanges. */
  fullHistory?: number;
  fullHistoryCumulativeCost?: number;
}

export interface SessionChart {
  sessionId: string;
  budget?: number;
  prompts: ChartPrompt[];
}

export const OUTSIDE_LAYERS = "outsideLayers";

/** Uncached tokens plus cached ones at CACHED_PRICE, as `replay --report` counts a prompt. */
export function effectiveCost(tokens: number, cached: number): number {
  const hit = Math.min(cached, tokens);
  return tokens - hit + CACHED_PRICE * hit;
}

/** The highest exchange sequence number a prompt shows or trimmed (0 when it shows none). */
export function newestExchangeShown(view: PromptView): number {
  const ids = [...view.layers.flatMap((layer) => layer.items.map((item) => item.id)), ...view.trimmed.map((t) => t.id)];
  return ids.reduce((newest, id) => {
    const match = /^x(\d+)$/.exec(id);
    return match ? Math.max(newest, Number(match[1])) : newest;
  }, 0);
}

/** The chart of a session's prompts, given oldest first. */
export function sessionChart(sessionId: string, views: PromptView[], exchanges?: ExchangeHeader[]): SessionChart {
  const exchangeTokens = new Map<number, number>();
  for (const exchange of exchanges ?? []) {
    const match = /^x(\d+)$/.exec(exchange.id);
    if (match) exchangeTokens.set(Number(match[1]), exchange.tokens);
  }
  const historyUpTo = (seq: number) => {
    let sum = 0;
    for (let n = 1; n <= seq; n++) sum += exchangeTokens.get(n) ?? 0;
    return sum;
  };
  let cost = 0;
  let fullCost = 0;
  let previousHistory: number | undefined;
  const prompts = views.map((view): ChartPrompt => {
    const inLayers = view.layers.reduce((sum, layer) => sum + layer.tokens, 0);
    const layers = view.layers.map((layer) => ({ name: layer.name, label: layer.label, tokens: layer.tokens }));
    if (view.total > inLayers) {
      layers.push({ name: OUTSIDE_LAYERS, label: "Tool definitions + reply primer", tokens: view.total - inLayers });
    }
    const prefixReused = view.prefixReused ?? 0;
    cost += effectiveCost(view.total, prefixReused);
    const prompt: ChartPrompt = { promptId: view.promptId, total: view.total, layers, prefixReused, cumulativeCost: cost };
    if (exchanges) {
      const history = historyUpTo(newestExchangeShown(view));
      const input = view.layers.find((layer) => layer.name === "input")?.tokens ?? 0;
      const fullHistory = history + input + REPLY_PRIMER;
      // Full history only appends: everything the previous prompt held before its input is its cached prefix.
      fullCost += effectiveCost(fullHistory, previousHistory ?? 0);
      previousHistory = history;
      prompt.fullHistory = fullHistory;
      prompt.fullHistoryCumulativeCost = fullCost;
    }
    return prompt;
  });
  const budget = views.map((view) => view.budget).find((b) => b !== undefined);
  return { sessionId, budget, prompts };
}

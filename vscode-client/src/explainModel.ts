// Reads a ctx/explain result into the view of one prompt: tokens per layer (in the packer's order),
// the items each layer holds, what was trimmed, and the exact messages. Tolerates the shapes a server
// may reasonably send for layers (an object keyed by layer, or an array of {name|layer, ...}).
// No vscode import.
import { LAYER_NAMES, Trim } from "./protocol";

/** A trim as read: its fields as text, whatever the server sent. */
export type TrimView = { [K in keyof Trim]: string };

export interface LayerItemView {
  id: string;
  format: string;
  tokens: number;
}

export interface LayerView {
  name: string;
  label: string;
  tokens: number;
  /** Share of the prompt's total tokens, 0..1. */
  share: number;
  items: LayerItemView[];
}

export interface MessageView {
  role: string;
  text: string;
  toolCalls: string[];
  toolCallId?: string;
}

export interface PromptView {
  promptId: string;
  sessionId: string;
  total: number;
  budget?: number;
  encoding?: string;
  /** Tokens at the start of this prompt that repeat the previous prompt (cacheable). */
  prefixReused?: number;
  createdAt?: string;
  layers: LayerView[];
  trimmed: TrimView[];
  messages: MessageView[];
  toolNames: string[];
}

export const LAYER_LABELS: Record<string, string> = {
  system: "System",
  currentContext: "L0 current context",
  recent: "L1 recent",
  headers: "L2 headers",
  summaries: "L3 summaries",
  asks: "What the person said",
  references: "L4 references",
  recall: "Recall",
  memory: "Project memory",
  projectRecent: "Project's latest exchanges",
  projectRecall: "Project recall",
  input: "Input",
};

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function num(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

function str(value: unknown): string {
  return typeof value === "string" ? value : value === undefined || value === null ? "" : JSON.stringify(value);
}

export function promptView(explain: Json, fallback: { sessionId: string; promptId: string }): PromptView {
  const tokens = isObject(explain.tokens) ? explain.tokens : {};
  const layerTokens = isObject(tokens.layers) ? tokens.layers : {};
  const layerEntries = readLayerEntries(explain.layers);

  const names = [...LAYER_NAMES] as string[];
  for (const name of [...Object.keys(layerTokens), ...layerEntries.keys()]) {
    if (!names.includes(name)) names.push(name);
  }
  const layers = names.map((name) => {
    const entry = layerEntries.get(name);
    const items = entry?.items ?? [];
    const tokensOfLayer =
      num(layerTokens[name]) ?? entry?.tokens ?? items.reduce((sum, item) => sum + item.tokens, 0);
    return { name, label: LAYER_LABELS[name] ?? name, tokens: tokensOfLayer, share: 0, items };
  });
  const total = num(tokens.total) ?? num(explain.tokens) ?? layers.reduce((sum, layer) => sum + layer.tokens, 0);
  for (const layer of layers) layer.share = total > 0 ? layer.tokens / total : 0;

  return {
    promptId: str(explain.promptId) || fallback.promptId,
    sessionId: str(explain.sessionId) || fallback.sessionId,
    total,
    budget: num(explain.budget),
    encoding: str(explain.encoding) || undefined,
    prefixReused: num(explain.prefixReused),
    createdAt: str(explain.createdAt) || undefined,
    layers,
    trimmed: Array.isArray(explain.trimmed) ? explain.trimmed.map(readTrim) : [],
    messages: Array.isArray(explain.messages) ? explain.messages.map(readMessage) : [],
    toolNames: Array.isArray(explain.tools) ? explain.tools.map(readToolName) : [],
  };
}

function readLayerEntries(layers: unknown): Map<string, { tokens?: number; items: LayerItemView[] }> {
  const entries = new Map<string, { tokens?: number; items: LayerItemView[] }>();
  const add = (name: string, value: unknown) => {
    if (Array.isArray(value)) {
      entries.set(name, { items: value.map(readItem) });
    } else if (isObject(value)) {
      const items = Array.isArray(value.items) ? value.items.map(readItem) : [];
      entries.set(name, { tokens: num(value.tokens), items });
    }
  };
  if (Array.isArray(layers)) {
    for (const layer of layers) {
      if (isObject(layer)) add(str(layer.name ?? layer.layer), layer);
    }
  } else if (isObject(layers)) {
    for (const [name, value] of Object.entries(layers)) add(name, value);
  }
  return entries;
}

function readItem(item: unknown): LayerItemView {
  if (!isObject(item)) return { id: str(item), format: "", tokens: 0 };
  return { id: str(item.id), format: str(item.format), tokens: num(item.tokens) ?? 0 };
}

function readTrim(trim: unknown): TrimView {
  const value = isObject(trim) ? trim : {};
  return { id: str(value.id), from: str(value.from), to: str(value.to), reason: str(value.reason) };
}

function readMessage(message: unknown): MessageView {
  const value = isObject(message) ? message : {};
  const calls = Array.isArray(value.tool_calls) ? value.tool_calls : Array.isArray(value.toolCalls) ? value.toolCalls : [];
  return {
    role: str(value.role),
    text: readContent(value.content),
    toolCalls: calls.map(readCall),
    toolCallId: typeof value.tool_call_id === "string" ? value.tool_call_id : typeof value.toolCallId === "string" ? value.toolCallId : undefined,
  };
}

function readContent(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((part) => (isObject(part) ? str(part.text ?? part.content ?? "") : str(part))).join("");
  }
  return str(content);
}

function readCall(call: unknown): string {
  if (!isObject(call)) return str(call);
  const fn = isObject(call.function) ? call.function : call;
  const args = fn.arguments;
  return `${str(call.id)} ${str(fn.name)}(${typeof args === "string" ? args : JSON.stringify(args ?? {})})`;
}

function readToolName(tool: unknown): string {
  if (!isObject(tool)) return str(tool);
  return str(isObject(tool.function) ? tool.function.name : tool.name);
}

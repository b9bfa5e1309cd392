// Shapes of the ctx/* methods, as written in shared/design/protocol.md. No vscode import.

export interface ToolCall {
  id: string;
  name: string;
  arguments: unknown;
}

export interface Message {
  role: "user" | "assistant" | "tool" | "system";
  content: string;
  kind?: "query" | "feedback";
  toolCalls?: ToolCall[];
  toolCallId?: string;
  name?: string;
  agent?: string;
  at?: string;
}

export interface OpenSessionParams {
  workspace?: string;
  title?: string;
  parent?: { sessionId: string; atExchange?: string };
}
export interface OpenSessionResult {
  sessionId: string;
}

export interface AppendParams {
  sessionId: string;
  messages: Message[];
}
export interface AppendResult {
  exchanges: { id: string; seq: number }[];
  blobs: { id: string; bytes: number; tokens: number; digestTokens: number; duplicateOf?: string }[];
}

export type PromptFormat = "openai" | "anthropic" | "text";
export type Encoding = "o200k_base" | "cl100k_base";

export interface AssembleParams {
  sessionId: string;
  input?: Message;
  system?: string;
  budget?: number;
  encoding?: Encoding;
  format?: PromptFormat;
}

export const LAYER_NAMES = [
  "system",
  "currentContext",
  "recent",
  "headers",
  "summaries",
  "references",
  "input",
] as const;
export type LayerName = (typeof LAYER_NAMES)[number];

export interface Trim {
  id: string;
  from: string;
  to: string;
  reason: string;
}

export interface AssembleResult {
  promptId: string;
  messages: OpenAiMessage[];
  tools: OpenAiTool[];
  tokens: { total: number; layers: Partial<Record<LayerName, number>> };
  trimmed: Trim[];
}

export type RetrieveFormat = "header" | "summary" | "full";

export interface RetrieveParams {
  sessionId: string;
  ids: string[];
  format?: RetrieveFormat;
  lines?: [number, number];
  grep?: string;
  maxTokens?: number;
}
export interface RetrievedItem {
  id: string;
  kind: string;
  format: string;
  text: string;
  tokens: number;
  truncated: boolean;
}
export interface RetrieveError {
  id: string;
  error: { code: number; message: string };
}
export interface RetrieveResult {
  items: (RetrievedItem | RetrieveError)[];
}

export interface SearchParams {
  sessionId?: string;
  workspace?: string;
  query: string;
  limit?: number;
}
export interface SearchHit {
  id: string;
  sessionId: string;
  header: string;
  /** The words around the best match (header, summary, messages or raw tool output). */
  snippet: string;
  score: number;
}
export interface SearchResult {
  hits: SearchHit[];
}

export interface ExplainParams {
  sessionId: string;
  promptId: string;
}
/** What ctx/explain returns. The contract fixes its content, not its exact shape; readers of it
 *  (explainModel.ts) accept the variants a server may reasonably send. */
export type ExplainResult = Record<string, unknown>;

export interface SessionInfo {
  sessionId: string;
  title: string;
  workspace: string;
  exchanges: number;
  /** Prompts assembled for the session: p1 to p<prompts>. */
  prompts: number;
  updatedAt: string;
  parent?: unknown;
}
export interface ListSessionsResult {
  sessions: SessionInfo[];
}

export interface ListExchangesParams {
  sessionId: string;
  from?: number;
  limit?: number;
}
export interface ExchangeHeader {
  id: string;
  header: string;
  at: string;
  tokens: number;
}
export interface ListExchangesResult {
  exchanges: ExchangeHeader[];
}

/** The ctx/event notification. Fields past kind and sessionId depend on the kind. */
export interface CtxEvent {
  kind: string;
  sessionId: string;
  [field: string]: unknown;
}

// OpenAI chat format, as ctx/assemble returns it with format "openai".
export interface OpenAiToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}
export interface OpenAiMessage {
  role: "system" | "user" | "assistant" | "tool";
  content: string | null | { type: string; text?: string }[];
  tool_calls?: OpenAiToolCall[];
  tool_call_id?: string;
  name?: string;
}
export interface OpenAiTool {
  type: "function";
  function: { name: string; description?: string; parameters?: object };
}

export const METHODS = {
  openSession: "ctx/openSession",
  append: "ctx/append",
  assemble: "ctx/assemble",
  retrieve: "ctx/retrieve",
  search: "ctx/search",
  explain: "ctx/explain",
  listSessions: "ctx/listSessions",
  listExchanges: "ctx/listExchanges",
  stats: "ctx/stats",
  event: "ctx/event",
} as const;

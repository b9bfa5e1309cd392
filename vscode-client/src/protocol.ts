// Shapes of the ctx/* methods: params, results and ctx/event, as docs/PROTOCOL.md describes them. They follow
// the Rust wire types in server/service/src/api.rs field by field; server/lsp/tests/protocol_ts.rs fails when
// the two drift (a field added, renamed, dropped, or made optional on one side only). No vscode import.

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

export interface ParentRef {
  sessionId: string;
  /** An exchange number or x<N>; the whole history when absent. */
  atExchange?: number | string | null;
}
export interface OpenSessionParams {
  workspace?: string;
  title?: string;
  parent?: ParentRef;
  /** With parent: a recursive call made by it (fresh history), not a fork. */
  child?: ChildParams;
}
export interface ChildParams {
  query: string;
  context?: string;
}
export interface OpenSessionResult {
  sessionId: string;
}

export interface AppendParams {
  sessionId: string;
  messages: Message[];
  /** The exchange these messages open or continue (x<N>); -32007 when another writer moved on. */
  exchange?: string;
  /** Earlier exchanges ("x3", "x3-x9") the exchange these messages open or continue replaces. */
  supersedes?: string[];
}
export interface ExchangeRef {
  id: string;
  seq: number;
}
export interface BlobRef {
  id: string;
  messageId: string;
  bytes: number;
  tokens: number;
  digestTokens: number;
  duplicateOf?: string;
}
export interface AppendResult {
  exchanges: ExchangeRef[];
  blobs: BlobRef[];
}

export type PromptFormat = "openai" | "anthropic" | "responses" | "text";
export type Encoding = "o200k_base" | "cl100k_base";
export type LayerOrder = "cache-stable" | "seed003";

export interface AssembleParams {
  sessionId: string;
  input?: Message;
  system?: string;
  budget?: number;
  encoding?: Encoding;
  format?: PromptFormat;
  order?: LayerOrder;
}

export const LAYER_NAMES = [
  "system",
  "memory",
  "projectRecent",
  "currentContext",
  "recent",
  "headers",
  "summaries",
  "asks",
  "references",
  "recall",
  "projectRecall",
  "input",
] as const;
export type LayerName = (typeof LAYER_NAMES)[number];

/** How a layer item is shown: an exchange's level, or another form. */
export type ItemFormat =
  | "full"
  | "digests"
  | "summary"
  | "header"
  | "reference"
  | "text"
  | "dropped";

export interface Trim {
  id: string;
  from: ItemFormat;
  to: ItemFormat;
  reason: string;
}
export interface PromptTokens {
  total: number;
  layers: Partial<Record<LayerName, number>>;
}
export interface LayerItem {
  id: string;
  format: ItemFormat;
  tokens: number;
}
export interface LayerReport {
  layer: LayerName;
  tokens: number;
  items: LayerItem[];
}
// Type aliases, not interfaces: readers that take any JSON object (explainModel.ts) accept them.
/** The prompt in the requested format: system for anthropic, text for text. */
export type FormattedPrompt = {
  messages: OpenAiMessage[];
  tools: OpenAiTool[];
  system?: string;
  text?: string;
};
export type AssembleResult = FormattedPrompt & {
  promptId: string;
  sessionId: string;
  budget: number;
  encoding: Encoding;
  format: PromptFormat;
  order: LayerOrder;
  tokens: PromptTokens;
  /** Tokens of the client's own tool definitions (the proxy's requests), sent as they came:
   * counted apart from the layers, and part of `tokens.total`; 0 without them. */
  clientToolsTokens: number;
  prefixReused: number;
  trimmed: Trim[];
  /** The superseded exchanges the prompt covers, as headers at most; absent when none. */
  superseded?: SupersededRange[];
  /** The recall block's hits: lines of earlier exchanges that match the question's words, best
   * first; absent when none. */
  recall?: RecallShown[];
  layers: LayerReport[];
  /** "oneShot" for a child call at maxDepth, "whole" for a short history sent as it was (no
   * L0, no tools), else "layered". */
  shape: PromptShape;
  /** Why the prompt has its shape, when it is not "layered". */
  reason?: string;
  state?: StateEnvelope;
};
/** A hit of the recall block: the exchange, the question words matched (rarest first), its
 * tokens and the passage as shown. */
export interface RecallShown {
  id: string;
  words: string[];
  tokens: number;
  text: string;
}
/** ids ("x3-x9" or "x12") were superseded by `by` ("x10"). */
export interface SupersededRange {
  ids: string;
  by: string;
}

export type PromptShape = "layered" | "whole" | "oneShot";

/** The call a prompt serves and the current context as fields, capped as L0 is. */
export interface StateEnvelope {
  call: CallState;
  context: ContextFields;
  /** List items left out of context to fit the cap. */
  dropped: number;
}
export interface CallState {
  sessionId: string;
  depth: number;
  maxDepth: number;
  /** The prompt's number in its session (p<N>). */
  iteration: number;
  parentSessionId?: string;
  tools: string[];
  budget: CallBudget;
}
export interface CallBudget {
  total: number;
  used: number;
}
export interface ContextFields {
  turn: number;
  phase: string;
  objective: string;
  modelNote?: string;
  story: string[];
  done: string[];
  files: string[];
  symbols: string[];
  concepts: string[];
  explained: string[];
  next: string[];
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
export interface Retrieved {
  id: string;
  kind: "exchange" | "message" | "blob";
  /** The level asked for of an exchange; "full" for a message or a blob. */
  format: RetrieveFormat;
  tokens: number;
  truncated: boolean;
  text: string;
  /** "base64" when text holds bytes that are not UTF-8. */
  encoding?: "base64";
}
export interface BlobDetails {
  blobId: string;
  bytes: number;
  rawTokens: number;
}
export interface ExchangeDetails {
  at: string | null;
  outcome: string;
  supersededBy?: string;
}
export interface MessageDetails {
  role: Message["role"];
  messageKind?: "query" | "feedback";
  toolCalls?: ToolCall[];
  toolCallId?: string;
  name?: string;
  agent?: string;
  at?: string;
  blobId?: string;
}
export type ItemDetails = BlobDetails | ExchangeDetails | MessageDetails;
export interface ItemError {
  code: number;
  message: string;
}
export interface RetrieveFailure {
  id: string;
  error: ItemError;
}
export type RetrievedItem = (Retrieved & ItemDetails) | RetrieveFailure;
export interface RetrieveResult {
  items: RetrievedItem[];
}

export interface SearchParams {
  sessionId?: string;
  /** With sessionId: the other sessions of its project too. */
  project?: boolean;
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

/** A context-tool call the model made, by the tool's name, with its arguments as the model wrote them. */
export interface CallContextToolParams {
  sessionId: string;
  name: string;
  arguments: object;
}
/** The answer as the text the model reads (the text the proxy gives a model for the same call). */
export interface CallContextToolResult {
  text: string;
}

export interface ExplainParams {
  sessionId: string;
  promptId: string;
}
/** What ctx/explain returns: the assemble result as recorded, and when. */
export type ExplainResult = AssembleResult & {
  createdAt: string;
};

export interface HousekeepingParams {
  sessionId: string;
  exchangeId: string;
  header?: string;
  summary?: string;
  keyDecisions?: string[];
  codeChanges?: string[];
  openQuestions?: string[];
  currentContext?: string;
  /** Earlier exchanges exchangeId replaces, as in ctx/append. */
  supersedes?: string[];
}
/** The result of ctx/housekeeping: nothing but success. */
export type Done = Record<string, never>;

export interface ListSessionsParams {
  workspace?: string;
}
export interface ParentInfo {
  sessionId: string;
  /** A fork's last shared exchange; a child's call point. */
  atExchange: number;
  kind: ParentKind;
}
export type ParentKind = "fork" | "child";
export interface SessionInfo {
  sessionId: string;
  title: string;
  workspace: string;
  exchanges: number;
  /** Prompts assembled for the session: p1 to p<prompts>. */
  prompts: number;
  createdAt: string;
  updatedAt: string;
  parent?: ParentInfo;
  /** 0 for a root; a child is one deeper than its parent, a fork as deep. */
  depth: number;
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
  at: string | null;
  tokens: number;
  fullTokens: number;
  outcome: string;
  supersededBy?: string;
}
export interface ListExchangesResult {
  exchanges: ExchangeHeader[];
}

export interface PathParams {
  sessionId: string;
  /** The node (x<N>); default: the session's newest exchange. */
  exchangeId?: string;
}
export interface PathParent {
  sessionId: string;
  atExchange: number;
  kind: "fork" | "child";
}
export interface PathExchange {
  id: string;
  header: string;
  supersededBy?: string;
}
export interface PathSession {
  sessionId: string;
  title: string;
  depth: number;
  parent?: PathParent;
  exchanges: PathExchange[];
}
/** ctx/path: the sessions from the root to the node, root first, each with the exchanges of the path it made. */
export interface PathResult {
  sessions: PathSession[];
}

export interface StatsParams {
  sessionId?: string;
}
export interface StatsResult {
  sessions: number;
  exchanges: number;
  messages: number;
  prompts: number;
  blobs: number;
  blobFiles: number;
  rawBytes: number;
  storedBytes: number;
  appendedBytes: number;
  duplicateHits: number;
  databaseBytes: number;
}

/** The ctx/event notification, one shape per kind. */
export interface ExchangeStoredEvent {
  kind: "exchangeStored";
  sessionId: string;
  exchangeId: string;
  messages: number;
}
export interface BlobStoredEvent {
  kind: "blobStored";
  sessionId: string;
  blobId: string;
  bytes: number;
  duplicate: boolean;
}
export interface SummaryUpdatedEvent {
  kind: "summaryUpdated";
  sessionId: string;
  exchangeId: string;
  source: "extractive" | "model";
}
export interface ContextAssembledEvent {
  kind: "contextAssembled";
  sessionId: string;
  promptId: string;
  tokens: number;
  budget: number;
  prefixReused: number;
  layers: Partial<Record<LayerName, number>>;
}
export interface LayerTrimmedEvent {
  kind: "layerTrimmed";
  sessionId: string;
  promptId: string;
  trimmed: Trim[];
}
export interface StateChangedEvent {
  kind: "stateChanged";
  sessionId: string;
  promptId: string;
  state: StateEnvelope;
}
export type CtxEvent =
  | ExchangeStoredEvent
  | BlobStoredEvent
  | SummaryUpdatedEvent
  | ContextAssembledEvent
  | LayerTrimmedEvent
  | StateChangedEvent;

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
  callContextTool: "ctx/callContextTool",
  explain: "ctx/explain",
  housekeeping: "ctx/housekeeping",
  listSessions: "ctx/listSessions",
  listExchanges: "ctx/listExchanges",
  stats: "ctx/stats",
  path: "ctx/path",
  event: "ctx/event",
} as const;

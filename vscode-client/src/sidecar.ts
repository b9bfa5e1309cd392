// Typed ctx/* requests over anything that can send a JSON-RPC request: vscode-languageclient's
// LanguageClient in the editor, a vscode-jsonrpc MessageConnection in tests. No vscode import.
import {
  AppendParams,
  AppendResult,
  AssembleParams,
  AssembleResult,
  CallContextToolParams,
  CallContextToolResult,
  ExplainParams,
  ExplainResult,
  ListExchangesParams,
  ListExchangesResult,
  ListSessionsResult,
  METHODS,
  OpenSessionParams,
  OpenSessionResult,
  RetrieveParams,
  RetrieveResult,
  SearchParams,
  SearchResult,
} from "./protocol";

export interface RequestSender {
  sendRequest<R>(method: string, params: unknown): Promise<R>;
}

export class Sidecar {
  constructor(private readonly sender: RequestSender) {}

  openSession(params: OpenSessionParams): Promise<OpenSessionResult> {
    return this.sender.sendRequest(METHODS.openSession, params);
  }
  append(params: AppendParams): Promise<AppendResult> {
    return this.sender.sendRequest(METHODS.append, params);
  }
  assemble(params: AssembleParams): Promise<AssembleResult> {
    return this.sender.sendRequest(METHODS.assemble, params);
  }
  retrieve(params: RetrieveParams): Promise<RetrieveResult> {
    return this.sender.sendRequest(METHODS.retrieve, params);
  }
  search(params: SearchParams): Promise<SearchResult> {
    return this.sender.sendRequest(METHODS.search, params);
  }
  callContextTool(params: CallContextToolParams): Promise<CallContextToolResult> {
    return this.sender.sendRequest(METHODS.callContextTool, params);
  }
  explain(params: ExplainParams): Promise<ExplainResult> {
    return this.sender.sendRequest(METHODS.explain, params);
  }
  listSessions(params: { workspace?: string } = {}): Promise<ListSessionsResult> {
    return this.sender.sendRequest(METHODS.listSessions, params);
  }
  listExchanges(params: ListExchangesParams): Promise<ListExchangesResult> {
    return this.sender.sendRequest(METHODS.listExchanges, params);
  }
  stats(): Promise<Record<string, unknown>> {
    return this.sender.sendRequest(METHODS.stats, {});
  }
}

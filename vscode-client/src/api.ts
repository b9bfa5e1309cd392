// What `activate` returns to other extensions: route their context through ctxproxy.
//   const ctx = vscode.extensions.getExtension("ctxproxy.ctxproxy")?.exports as CtxproxyApi;
import {
  AppendParams,
  AppendResult,
  AssembleParams,
  AssembleResult,
  ExplainParams,
  ExplainResult,
  OpenSessionParams,
  OpenSessionResult,
  RetrieveParams,
  RetrieveResult,
  SearchParams,
  SearchResult,
} from "./protocol";
import { PromptHistory } from "./promptHistory";
import { Sidecar } from "./sidecar";

export interface CtxproxyApi {
  openSession(params: OpenSessionParams): Promise<OpenSessionResult>;
  append(params: AppendParams): Promise<AppendResult>;
  assemble(params: AssembleParams): Promise<AssembleResult>;
  retrieve(params: RetrieveParams): Promise<RetrieveResult>;
  search(params: SearchParams): Promise<SearchResult>;
  explain(params: ExplainParams): Promise<ExplainResult>;
}

export function ctxproxyApi(sidecar: Sidecar, history: PromptHistory): CtxproxyApi {
  return {
    openSession: (params) => sidecar.openSession(params),
    append: (params) => sidecar.append(params),
    assemble: async (params) => {
      const result = await sidecar.assemble(params);
      history.record({ sessionId: params.sessionId, promptId: result.promptId });
      return result;
    },
    retrieve: (params) => sidecar.retrieve(params),
    search: (params) => sidecar.search(params),
    explain: (params) => sidecar.explain(params),
  };
}

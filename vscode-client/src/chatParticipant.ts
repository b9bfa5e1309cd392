// The @ctx chat participant: each request runs one chat turn through ctxproxy with the model the user
// picked in the chat view (or the first one vscode.lm offers).
import * as vscode from "vscode";
import { runChatTurn } from "./chatLoop";
import { PromptHistory } from "./promptHistory";
import { Sidecar } from "./sidecar";
import { VscodeChatModel } from "./vscodeModel";

const CHAT_SESSION_KEY = "ctxproxy.chatSessionId";

/** The ctxproxy session that @ctx appends to in this workspace; "New Chat Session" starts another. */
export class ChatSession {
  constructor(
    private readonly state: vscode.Memento,
    private readonly sidecar: Sidecar,
  ) {}

  async current(): Promise<string> {
    const known = this.state.get<string>(CHAT_SESSION_KEY);
    if (known) return known;
    return this.startNew();
  }

  async startNew(): Promise<string> {
    const workspace = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const { sessionId } = await this.sidecar.openSession({ workspace, title: `@ctx chat ${new Date().toISOString()}` });
    await this.state.update(CHAT_SESSION_KEY, sessionId);
    return sessionId;
  }
}

export function registerChatParticipant(
  sidecar: Sidecar,
  session: ChatSession,
  history: PromptHistory,
): vscode.Disposable {
  const handler: vscode.ChatRequestHandler = async (request, _context, stream, token) => {
    const model = request.model ?? (await vscode.lm.selectChatModels())[0];
    if (!model) {
      stream.markdown("No language model is available: install or sign in to a model provider.");
      return {};
    }
    const sessionId = await session.current();
    const budget = vscode.workspace.getConfiguration("ctxproxy").get<number>("budget");
    const turn = await runChatTurn(sidecar, new VscodeChatModel(model, token), {
      sessionId,
      text: request.prompt,
      budget,
      onText: (text) => stream.markdown(text),
      onToolCall: (call) => stream.progress(`${call.name} ${JSON.stringify(call.input)}`),
      isCancelled: () => token.isCancellationRequested,
    });
    history.record({ sessionId, promptId: turn.promptId });
    stream.button({
      command: "ctxproxy.showPrompt",
      title: `Show what the model saw (${turn.promptId})`,
      arguments: [sessionId, turn.promptId],
    });
    return { metadata: { sessionId, promptId: turn.promptId } };
  };
  const participant = vscode.chat.createChatParticipant("ctxproxy.ctx", handler);
  participant.iconPath = new vscode.ThemeIcon("layers");
  return participant;
}

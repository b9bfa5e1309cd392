// One chat turn routed through ctxproxy: assemble a prompt for the user's request, let the model
// answer (pulling older context back through context_retrieve / context_search), and append the whole
// exchange. No vscode import: the model and the sidecar are small interfaces.
import { answerContextTool, ContextToolSidecar } from "./contextTools";
import { LmMessage, LmTextPart, LmTool, LmToolCallPart, openAiToLm, openAiToolsToLm } from "./lmConvert";
import { Message } from "./protocol";
import { Sidecar } from "./sidecar";

export interface ChatModel {
  send(messages: LmMessage[], tools: LmTool[]): AsyncIterable<LmTextPart | LmToolCallPart>;
}

export type ChatSidecar = Pick<Sidecar, "assemble" | "append"> & ContextToolSidecar;

export interface ChatTurnRequest {
  sessionId: string;
  /** The user's request, the input the prompt ends with. */
  text: string;
  system?: string;
  budget?: number;
  /** Rounds of tool calls before the model is asked to answer without tools. */
  maxToolRounds?: number;
  onText?: (text: string) => void;
  onToolCall?: (call: LmToolCallPart) => void;
  isCancelled?: () => boolean;
}

export interface ChatTurnResult {
  promptId: string;
  answer: string;
  toolRounds: number;
  appended: Message[];
}

const DEFAULT_MAX_TOOL_ROUNDS = 5;

export async function runChatTurn(
  sidecar: ChatSidecar,
  model: ChatModel,
  request: ChatTurnRequest,
): Promise<ChatTurnResult> {
  const input: Message = { role: "user", content: request.text, kind: "query" };
  const prompt = await sidecar.assemble({
    sessionId: request.sessionId,
    input,
    system: request.system,
    budget: request.budget,
    format: "openai",
  });
  const conversation = openAiToLm(prompt.messages);
  const tools = openAiToolsToLm(prompt.tools);
  const exchange: Message[] = [input];
  const maxRounds = request.maxToolRounds ?? DEFAULT_MAX_TOOL_ROUNDS;

  let toolRounds = 0;
  let answer = "";
  for (;;) {
    const offered = toolRounds < maxRounds ? tools : [];
    const reply = await collectReply(model.send(conversation, offered), request);
    if (reply.calls.length === 0 || request.isCancelled?.()) {
      answer = reply.text;
      exchange.push({ role: "assistant", content: reply.text });
      break;
    }
    toolRounds += 1;
    conversation.push({
      role: "assistant",
      parts: [...(reply.text ? [{ type: "text" as const, value: reply.text }] : []), ...reply.calls],
    });
    exchange.push({
      role: "assistant",
      content: reply.text,
      toolCalls: reply.calls.map((call) => ({ id: call.callId, name: call.name, arguments: call.input })),
    });
    const results = [];
    for (const call of reply.calls) {
      const text = await answerContextTool(sidecar, request.sessionId, call.name, call.input);
      results.push({ type: "toolResult" as const, callId: call.callId, text });
      exchange.push({ role: "tool", toolCallId: call.callId, name: call.name, content: text });
    }
    conversation.push({ role: "user", parts: results });
  }

  await sidecar.append({ sessionId: request.sessionId, messages: exchange });
  return { promptId: prompt.promptId, answer, toolRounds, appended: exchange };
}

async function collectReply(
  stream: AsyncIterable<LmTextPart | LmToolCallPart>,
  request: ChatTurnRequest,
): Promise<{ text: string; calls: LmToolCallPart[] }> {
  let text = "";
  const calls: LmToolCallPart[] = [];
  for await (const part of stream) {
    if (part.type === "text") {
      text += part.value;
      request.onText?.(part.value);
    } else {
      calls.push(part);
      request.onToolCall?.(part);
    }
    if (request.isCancelled?.()) break;
  }
  return { text, calls };
}

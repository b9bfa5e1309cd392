// Converts between the OpenAI chat shapes that ctx/assemble returns and the shapes of VS Code's
// Language Model API, kept here as plain data (LmMessage, LmTool) so the conversion is tested without
// VS Code. vscodeModel.ts maps these one-to-one onto vscode.LanguageModelChatMessage and friends.
import { OpenAiMessage, OpenAiTool } from "./protocol";

export interface LmTextPart {
  type: "text";
  value: string;
}
export interface LmToolCallPart {
  type: "toolCall";
  callId: string;
  name: string;
  input: object;
}
export interface LmToolResultPart {
  type: "toolResult";
  callId: string;
  text: string;
}
export type LmPart = LmTextPart | LmToolCallPart | LmToolResultPart;

/** VS Code's stable API has two roles: system prompts travel as user messages. */
export interface LmMessage {
  role: "user" | "assistant";
  parts: LmPart[];
}

export interface LmTool {
  name: string;
  description: string;
  inputSchema?: object;
}

export function openAiContentText(content: OpenAiMessage["content"]): string {
  if (content === null || content === undefined) return "";
  if (typeof content === "string") return content;
  return content.map((part) => part.text ?? "").join("");
}

/** Parses a tool call's JSON arguments; the model's input must be an object, so anything else is
 *  wrapped rather than dropped. */
export function parseToolArguments(json: string): object {
  try {
    const value: unknown = JSON.parse(json);
    if (value !== null && typeof value === "object" && !Array.isArray(value)) return value;
    return { value };
  } catch {
    return { unparsed: json };
  }
}

export function openAiToLm(messages: OpenAiMessage[]): LmMessage[] {
  const out: LmMessage[] = [];
  for (const message of messages) {
    const text = openAiContentText(message.content);
    if (message.role === "tool") {
      const result: LmToolResultPart = { type: "toolResult", callId: message.tool_call_id ?? "", text };
      const previous = out[out.length - 1];
      // Consecutive tool results answer one assistant turn: they belong in one user message.
      if (previous && previous.role === "user" && previous.parts.every((p) => p.type === "toolResult")) {
        previous.parts.push(result);
      } else {
        out.push({ role: "user", parts: [result] });
      }
      continue;
    }
    const parts: LmPart[] = text ? [{ type: "text", value: text }] : [];
    if (message.role === "assistant") {
      for (const call of message.tool_calls ?? []) {
        parts.push({
          type: "toolCall",
          callId: call.id,
          name: call.function.name,
          input: parseToolArguments(call.function.arguments),
        });
      }
    }
    if (parts.length === 0) continue;
    out.push({ role: message.role === "assistant" ? "assistant" : "user", parts });
  }
  return out;
}

export function openAiToolsToLm(tools: OpenAiTool[]): LmTool[] {
  return tools.map((tool) => ({
    name: tool.function.name,
    description: tool.function.description ?? "",
    inputSchema: tool.function.parameters,
  }));
}

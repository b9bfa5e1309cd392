// The chat loop's ChatModel over a VS Code language model (vscode.lm).
import * as vscode from "vscode";
import { ChatModel } from "./chatLoop";
import { LmMessage, LmPart, LmTextPart, LmTool, LmToolCallPart } from "./lmConvert";

export class VscodeChatModel implements ChatModel {
  constructor(
    private readonly model: vscode.LanguageModelChat,
    private readonly token: vscode.CancellationToken,
  ) {}

  async *send(messages: LmMessage[], tools: LmTool[]): AsyncIterable<LmTextPart | LmToolCallPart> {
    // Some providers reject an empty tool list: leave it out when there are no tools to offer.
    const options = tools.length > 0 ? { tools } : {};
    const response = await this.model.sendRequest(messages.map(toVscodeMessage), options, this.token);
    for await (const part of response.stream) {
      if (part instanceof vscode.LanguageModelTextPart) {
        yield { type: "text", value: part.value };
      } else if (part instanceof vscode.LanguageModelToolCallPart) {
        yield { type: "toolCall", callId: part.callId, name: part.name, input: part.input };
      }
    }
  }
}

function toVscodeMessage(message: LmMessage): vscode.LanguageModelChatMessage {
  if (message.role === "assistant") {
    return vscode.LanguageModelChatMessage.Assistant(
      message.parts.map(toVscodePart) as (vscode.LanguageModelTextPart | vscode.LanguageModelToolCallPart)[],
    );
  }
  return vscode.LanguageModelChatMessage.User(
    message.parts.map(toVscodePart) as (vscode.LanguageModelTextPart | vscode.LanguageModelToolResultPart)[],
  );
}

function toVscodePart(part: LmPart) {
  switch (part.type) {
    case "text":
      return new vscode.LanguageModelTextPart(part.value);
    case "toolCall":
      return new vscode.LanguageModelToolCallPart(part.callId, part.name, part.input);
    case "toolResult":
      return new vscode.LanguageModelToolResultPart(part.callId, [new vscode.LanguageModelTextPart(part.text)]);
  }
}

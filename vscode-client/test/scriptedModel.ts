// A ChatModel that plays back a script of replies and records every request it was sent.
import { ChatModel } from "../src/chatLoop";
import { LmMessage, LmTextPart, LmTool, LmToolCallPart } from "../src/lmConvert";

export type ScriptedReply = (LmTextPart | LmToolCallPart)[];

export class ScriptedModel implements ChatModel {
  readonly requests: { messages: LmMessage[]; tools: LmTool[] }[] = [];

  constructor(private readonly replies: ScriptedReply[]) {}

  async *send(messages: LmMessage[], tools: LmTool[]): AsyncIterable<LmTextPart | LmToolCallPart> {
    this.requests.push({ messages: structuredClone(messages), tools });
    const reply = this.replies.shift();
    if (!reply) throw new Error("the scripted model ran out of replies");
    for (const part of reply) yield part;
  }
}

export const text = (value: string): LmTextPart => ({ type: "text", value });
export const toolCall = (callId: string, name: string, input: object): LmToolCallPart => ({
  type: "toolCall",
  callId,
  name,
  input,
});

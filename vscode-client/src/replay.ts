// Replays a recorded session into a new session: per exchange, assemble a prompt that ends with its user
// input, then append the exchange. No vscode import. The format is the replay format of fixtures/README.md,
// the one document the Rust parser (server/core/src/recorded.rs) follows too.
import { AssembleResult, Message } from "./protocol";
import { Sidecar } from "./sidecar";

export interface RecordedExchange {
  messages: Message[];
}

export function parseSessionJsonl(text: string): RecordedExchange[] {
  const exchanges: RecordedExchange[] = [];
  text.split("\n").forEach((line, index) => {
    if (line.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new Error(`line ${index + 1}: not JSON (${(error as Error).message})`);
    }
    const messages = (value as { messages?: unknown }).messages;
    if (!Array.isArray(messages) || messages.length === 0) {
      throw new Error(`line ${index + 1}: "messages" must be a non-empty array`);
    }
    exchanges.push({ messages: messages as Message[] });
  });
  return exchanges;
}

export interface ReplayedPrompt {
  promptId: string;
  tokens: AssembleResult["tokens"];
}

export interface ReplayResult {
  sessionId: string;
  prompts: ReplayedPrompt[];
}

export async function replaySession(
  sidecar: Pick<Sidecar, "openSession" | "assemble" | "append">,
  exchanges: RecordedExchange[],
  session: { title: string; workspace?: string; budget?: number },
): Promise<ReplayResult> {
  const { sessionId } = await sidecar.openSession({ title: session.title, workspace: session.workspace });
  const prompts: ReplayedPrompt[] = [];
  for (const exchange of exchanges) {
    const prompt = await sidecar.assemble({
      sessionId,
      input: exchange.messages[0],
      budget: session.budget,
      format: "openai",
    });
    prompts.push({ promptId: prompt.promptId, tokens: prompt.tokens });
    await sidecar.append({ sessionId, messages: exchange.messages });
  }
  return { sessionId, prompts };
}

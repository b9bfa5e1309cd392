// Answers the model's tool calls through the sidecar's ctx/callContextTool: the server reads the
// arguments, runs the call and renders the answer as the text the model reads, the same text the
// proxy gives a model for the same call. No vscode import.
import { Sidecar } from "./sidecar";

export type ContextToolSidecar = Pick<Sidecar, "callContextTool">;

/** Runs one tool call. A failure is text for the model too (the server's message names the tool or the
 * field at fault), so one bad call does not end the turn. */
export async function answerContextTool(
  sidecar: ContextToolSidecar,
  sessionId: string,
  name: string,
  input: object,
): Promise<string> {
  try {
    return (await sidecar.callContextTool({ sessionId, name, arguments: input })).text;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

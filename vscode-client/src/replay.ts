// Replays a recorded session file into new sessions: per exchange, assemble a prompt that ends with its user
// input, then append the exchange (with its `supersedes`). A file may hold several sessions (forks and child
// calls, opened where declared). No vscode import. The format is the replay format of fixtures/README.md, the
// one document the Rust parser (server/core/src/session_file.rs) follows too.
import { AssembleResult, Message, OpenSessionParams } from "./protocol";
import { Sidecar } from "./sidecar";

export interface RecordedExchange {
  messages: Message[];
  /** The session the exchange belongs to ("main" unless the line says `in`). */
  session: string;
  /** Earlier exchanges of its session it replaces ("x3", "x3-x5"). */
  supersedes: string[];
}

interface SessionLink {
  from: string;
  atExchange: number;
}

/** A session the file declares: a fork of `from`, or a child call `from` made. */
export interface RecordedSession {
  name: string;
  title?: string;
  fork?: SessionLink;
  child?: SessionLink & { query: string; context?: string };
}

/** One line: a session opened here, or an exchange. */
export type RecordedStep = { open: RecordedSession } | { exchange: RecordedExchange };

export interface RecordedFile {
  /** "main" first, then each declared session. */
  sessions: RecordedSession[];
  steps: RecordedStep[];
  /** The exchange lines, in file order. */
  exchanges: RecordedExchange[];
}

export function parseSessionJsonl(text: string): RecordedFile {
  const file: RecordedFile = { sessions: [{ name: "main" }], steps: [], exchanges: [] };
  const known = (name: string) => file.sessions.some((s) => s.name === name);
  text.split("\n").forEach((line, index) => {
    if (line.trim() === "") return;
    const fail = (why: string) => new Error(`line ${index + 1}: ${why}`);
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw fail(`not JSON (${(error as Error).message})`);
    }
    const fields = value as { session?: RecordedSession; messages?: unknown; in?: string; supersedes?: string[] };
    if (fields.session) {
      const session = fields.session;
      const link = session.fork ?? session.child;
      if (typeof session.name !== "string" || known(session.name)) {
        throw fail(`session.name must be a new session's name`);
      }
      if (!link || (session.fork && session.child) || !known(link.from)) {
        throw fail(`session needs exactly one of fork and child, from a session declared before`);
      }
      file.sessions.push(session);
      file.steps.push({ open: session });
      return;
    }
    const messages = fields.messages;
    if (!Array.isArray(messages) || messages.length === 0) {
      throw fail(`"messages" must be a non-empty array`);
    }
    const session = fields.in ?? "main";
    if (!known(session)) throw fail(`in: no session "${session}" declared before this line`);
    const exchange = { messages: messages as Message[], session, supersedes: fields.supersedes ?? [] };
    file.exchanges.push(exchange);
    file.steps.push({ exchange });
  });
  return file;
}

export interface ReplayedPrompt {
  sessionId: string;
  promptId: string;
  tokens: AssembleResult["tokens"];
}

export interface ReplayResult {
  /** The main session's id. */
  sessionId: string;
  /** Every session's id by its name in the file. */
  sessions: Record<string, string>;
  prompts: ReplayedPrompt[];
}

/** What opens a child call: `ctx/openSession`'s `child`. */
type ChildCall = { query: string; context?: string };

export async function replaySession(
  sidecar: Pick<Sidecar, "openSession" | "assemble" | "append">,
  file: RecordedFile,
  session: { title: string; workspace?: string; budget?: number },
): Promise<ReplayResult> {
  const { sessionId } = await sidecar.openSession({ title: session.title, workspace: session.workspace });
  const ids: Record<string, string> = { main: sessionId };
  const prompts: ReplayedPrompt[] = [];
  for (const step of file.steps) {
    if ("open" in step) {
      const declared = step.open;
      const link = (declared.fork ?? declared.child) as SessionLink;
      const params: OpenSessionParams & { child?: ChildCall } = {
        title: declared.title ?? `${session.title} ${declared.name}`,
        workspace: session.workspace,
        parent: { sessionId: ids[link.from], atExchange: link.atExchange },
      };
      if (declared.child) params.child = { query: declared.child.query, context: declared.child.context };
      ids[declared.name] = (await sidecar.openSession(params)).sessionId;
      continue;
    }
    const exchange = step.exchange;
    const target = ids[exchange.session];
    const prompt = await sidecar.assemble({
      sessionId: target,
      input: exchange.messages[0],
      budget: session.budget,
      format: "openai",
    });
    prompts.push({ sessionId: target, promptId: prompt.promptId, tokens: prompt.tokens });
    await sidecar.append({
      sessionId: target,
      messages: exchange.messages,
      ...(exchange.supersedes.length > 0 ? { supersedes: exchange.supersedes } : {}),
    });
  }
  return { sessionId, sessions: ids, prompts };
}

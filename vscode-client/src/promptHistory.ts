// Remembers which prompts were assembled, per session, so "Show What the Model Saw" can offer the
// last one and its predecessors. Prompt ids are p<seq>, so the newest id of a session names them all.
// No vscode import.
export interface PromptRef {
  sessionId: string;
  promptId: string;
}

export function promptSeq(promptId: string): number | undefined {
  const match = /^p(\d+)$/.exec(promptId);
  return match ? Number(match[1]) : undefined;
}

export class PromptHistory {
  private newestBySession = new Map<string, number>();
  private lastPrompt: PromptRef | undefined;

  record(ref: PromptRef): void {
    this.lastPrompt = ref;
    const seq = promptSeq(ref.promptId);
    if (seq !== undefined && seq > (this.newestBySession.get(ref.sessionId) ?? 0)) {
      this.newestBySession.set(ref.sessionId, seq);
    }
  }

  last(): PromptRef | undefined {
    return this.lastPrompt;
  }

  /** Prompt ids of a session, newest first. */
  promptIds(sessionId: string): string[] {
    const newest = this.newestBySession.get(sessionId) ?? 0;
    return Array.from({ length: newest }, (_, index) => `p${newest - index}`);
  }
}

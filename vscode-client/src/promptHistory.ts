// Remembers the last prompt assembled in this window, so "Show What the Model Saw" opens on its
// session. The session's other prompts come from the server. No vscode import.
export interface PromptRef {
  sessionId: string;
  promptId: string;
}

export class PromptHistory {
  private lastPrompt: PromptRef | undefined;

  record(ref: PromptRef): void {
    this.lastPrompt = ref;
  }

  last(): PromptRef | undefined {
    return this.lastPrompt;
  }
}

// Maps the extension's ctxproxy.* settings onto the server configuration of protocol.md (sent as
// initializationOptions and in workspace/didChangeConfiguration under "ctx"). No vscode import.

/** Reads one setting by its key under "ctxproxy." (e.g. "layers.recentFull"): the value the user
 * set, undefined when unset, so that the server's defaults (layers sized by the budget) apply. */
export type SettingReader = (key: string) => unknown;

export const CONFIG_SECTION = "ctx";

/** What `WorkspaceConfiguration.inspect` says of a setting. */
export interface InspectedSetting {
  defaultValue?: unknown;
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/** The value the user set, the narrowest scope first; never the default of package.json, which
 * would pin a cap the server sizes by the budget. */
export function userValue(inspected: InspectedSetting | undefined): unknown {
  return inspected?.workspaceFolderValue ?? inspected?.workspaceValue ?? inspected?.globalValue;
}

const LAYER_KEYS = [
  "currentContextMax",
  "recentFull",
  "summaries",
  "summaryMax",
  "headerMax",
  "maxHeaders",
  "maxReferences",
  "tailTokens",
  "dialogueTokens",
  "asksTokens",
  "recallMax",
];

export function serverConfig(read: SettingReader): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  const storePath = read("storePath");
  if (typeof storePath === "string" && storePath.trim() !== "") config.storePath = storePath;
  copyDefined(config, "encoding", read("encoding"));
  copyDefined(config, "budget", read("budget"));
  copyDefined(config, "order", read("order"));
  const layers: Record<string, unknown> = {};
  for (const key of LAYER_KEYS) copyDefined(layers, key, read(`layers.${key}`));
  if (Object.keys(layers).length > 0) config.layers = layers;
  const inlineMaxTokens = read("digest.inlineMaxTokens");
  if (inlineMaxTokens !== undefined) config.digest = { inlineMaxTokens };
  copyDefined(config, "wholeHistory", read("wholeHistory"));
  copyDefined(config, "redactSecrets", read("redactSecrets"));
  copyDefined(config, "maxPayloadBytes", read("maxPayloadBytes"));
  return config;
}

function copyDefined(target: Record<string, unknown>, key: string, value: unknown): void {
  if (value !== undefined && value !== null) target[key] = value;
}

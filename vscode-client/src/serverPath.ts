// Finds the ctxproxy binary: the ctxproxy.serverPath setting, else ctxproxy on PATH, else the binary
// bundled in the extension under server/. No vscode import.
import * as fs from "fs";
import * as path from "path";

export const SERVER_BINARY = process.platform === "win32" ? "ctxproxy.exe" : "ctxproxy";

export interface ServerPathInputs {
  configured: string;
  pathEnv: string;
  extensionDir: string;
  isExecutable?: (file: string) => boolean;
}

export function resolveServerPath(inputs: ServerPathInputs): string | undefined {
  const isExecutable = inputs.isExecutable ?? isExecutableFile;
  if (inputs.configured.trim() !== "") return inputs.configured;
  for (const dir of inputs.pathEnv.split(path.delimiter)) {
    if (dir === "") continue;
    const candidate = path.join(dir, SERVER_BINARY);
    if (isExecutable(candidate)) return candidate;
  }
  const bundled = path.join(inputs.extensionDir, "server", SERVER_BINARY);
  return isExecutable(bundled) ? bundled : undefined;
}

function isExecutableFile(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

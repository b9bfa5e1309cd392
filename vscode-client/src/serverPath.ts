// Finds the ctxproxy binary, in this order (rust-analyzer's):
//   1. the ctxproxy.serverPath setting, when the user set one (a build of their own wins);
//   2. the binary bundled in the extension for this platform, server/ctxproxy (server/ctxproxy.exe on
//      Windows), which `npm run package:bundled` puts in a platform-specific .vsix; a bundle whose
//      server/platform.json names another platform is skipped;
//   3. ctxproxy on PATH.
// No vscode import.
import * as fs from "fs";
import * as path from "path";

export const SERVER_BINARY = process.platform === "win32" ? "ctxproxy.exe" : "ctxproxy";

/** Written beside the bundled binary by the packaging script: `{"target": "linux-x64"}`. */
export const BUNDLE_MANIFEST = "platform.json";

export interface ServerPathInputs {
  configured: string;
  pathEnv: string;
  extensionDir: string;
  /** The running platform as a vsce target (`linux-x64`, undefined: none); default: this process's. */
  target?: string | undefined;
  isExecutable?: (file: string) => boolean;
  /** A file's text, or undefined when it cannot be read; default: fs. */
  readText?: (file: string) => string | undefined;
}

export interface ServerBinary {
  path: string;
  from: "setting" | "bundled" | "PATH";
}

export function resolveServer(inputs: ServerPathInputs): ServerBinary | undefined {
  const isExecutable = inputs.isExecutable ?? isExecutableFile;
  const readText = inputs.readText ?? readTextFile;
  const configured = inputs.configured.trim();
  if (configured !== "") return { path: configured, from: "setting" };
  const serverDir = path.join(inputs.extensionDir, "server");
  const bundled = path.join(serverDir, SERVER_BINARY);
  if (isExecutable(bundled)) {
    const target = "target" in inputs ? inputs.target : vsceTarget(process.platform, process.arch);
    if (bundleTarget(readText(path.join(serverDir, BUNDLE_MANIFEST)), target) !== "other") {
      return { path: bundled, from: "bundled" };
    }
  }
  for (const dir of inputs.pathEnv.split(path.delimiter)) {
    if (dir === "") continue;
    const candidate = path.join(dir, SERVER_BINARY);
    if (isExecutable(candidate)) return { path: candidate, from: "PATH" };
  }
  return undefined;
}

export function resolveServerPath(inputs: ServerPathInputs): string | undefined {
  return resolveServer(inputs)?.path;
}

/**
 * Whether a bundle's manifest matches `target`: "same", "other", or "unknown" when there is no
 * manifest (a binary copied in by hand is trusted) or it cannot be read.
 */
export function bundleTarget(manifest: string | undefined, target: string | undefined): "same" | "other" | "unknown" {
  if (manifest === undefined) return "unknown";
  try {
    const recorded = (JSON.parse(manifest) as { target?: unknown }).target;
    if (typeof recorded !== "string") return "unknown";
    return recorded === target ? "same" : "other";
  } catch {
    return "unknown";
  }
}

/**
 * The vsce `--target` of a Node platform and architecture (`linux` `x64` -> `linux-x64`), or undefined
 * for one the Marketplace has no target for. Alpine (musl) is not told apart from other Linux here.
 */
export function vsceTarget(platform: string, arch: string): string | undefined {
  const platforms = ["win32", "linux", "darwin"];
  const arches: Record<string, string> = { x64: "x64", arm64: "arm64", arm: "armhf" };
  if (!platforms.includes(platform) || !(arch in arches)) return undefined;
  if (arch === "arm" && platform !== "linux") return undefined;
  return `${platform}-${arches[arch]}`;
}

function isExecutableFile(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function readTextFile(file: string): string | undefined {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

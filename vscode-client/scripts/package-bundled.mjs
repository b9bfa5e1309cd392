// Packages a platform-specific .vsix that carries the ctxproxy binary, so the extension needs no
// setting and nothing on PATH (src/serverPath.ts looks for server/ctxproxy after ctxproxy.serverPath).
//
//   node scripts/package-bundled.mjs [--binary PATH] [--target TARGET]
//
// --binary: the ctxproxy binary to ship (default: $CTXPROXY_BIN, else ../target/dist/ctxproxy, built
//   with `cargo build --locked --profile dist -p ctxproxy`, the profile of what is shipped); it must be
//   built for TARGET.
// --target: the vsce target (default: this machine's, e.g. linux-x64); the .vsix is ctxproxy-TARGET.vsix
//   and VS Code installs it only on that platform.
// Offline: builds the extension, copies the binary to server/ with server/platform.json naming the
// target, runs `vsce package --target`, then removes server/ so a later universal `npm run package`
// carries no binary.
import { execFileSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const clientDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const option = (name) => {
  const at = args.indexOf(name);
  if (at < 0) return undefined;
  if (at + 1 >= args.length) fail(`${name} needs a value`);
  return args[at + 1];
};
function fail(message) {
  console.error(`package-bundled: ${message}`);
  process.exit(1);
}
const run = (command, commandArgs) => execFileSync(command, commandArgs, { cwd: clientDir, stdio: "inherit" });

run("npm", ["run", "--silent", "build"]);
const { vsceTarget } = await import(join(clientDir, "out", "src", "serverPath.js"));
const target = option("--target") ?? vsceTarget(process.platform, process.arch);
if (!target) fail(`no vsce target for ${process.platform}-${process.arch}: pass --target`);
const binary = resolve(
  option("--binary") ?? process.env.CTXPROXY_BIN ?? join(clientDir, "..", "target", "dist", "ctxproxy"),
);
if (!existsSync(binary)) fail(`${binary} not found: build it with \`cargo build --locked --profile dist -p ctxproxy\` or pass --binary`);

const serverDir = join(clientDir, "server");
const bundled = join(serverDir, target.startsWith("win32-") ? "ctxproxy.exe" : "ctxproxy");
const vsix = `ctxproxy-${target}.vsix`;
rmSync(serverDir, { recursive: true, force: true });
try {
  mkdirSync(serverDir);
  copyFileSync(binary, bundled);
  chmodSync(bundled, 0o755);
  writeFileSync(join(serverDir, "platform.json"), JSON.stringify({ target }) + "\n");
  console.log(`bundling ${binary} (${(statSync(bundled).size / 1e6).toFixed(1)} MB) for ${target}`);
  run(join(clientDir, "node_modules", ".bin", "vsce"), ["package", "--no-dependencies", "--target", target, "--out", vsix]);
} finally {
  rmSync(serverDir, { recursive: true, force: true });
}
console.log(`${vsix}: install with \`code --install-extension ${vsix}\``);

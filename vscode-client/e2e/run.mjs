// End-to-end test in a real VS Code (code-server 4.100.3 = VS Code 1.100.3) in headless Chromium:
// installs the built .vsix, replays a recorded session through the extension, checks "Show What the
// Model Saw" (its prompt picker, the prompt and the session's chart) against ctx/explain from a second
// sidecar on the same store, opens an exchange from the
// Sessions view, searches the archive, and saves screenshots into e2e/screenshots/.
// The .vsix is the platform-specific one with the binary bundled (`npm run package:bundled`, the binary
// stripped first) and no ctxproxy.serverPath is set: the sidecar the extension starts must be the bundled one.
// Needs `bash e2e/install-deps.sh` first, and the ctxproxy binary (CTXPROXY_BIN or ../target/debug).
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const clientDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const cacheDir = process.env.CTXPROXY_E2E_CACHE ?? join(homedir(), ".cache", "ctxproxy-e2e");
const codeServer = join(cacheDir, "node_modules", ".bin", "code-server");
const runDir = join(clientDir, "e2e", ".run");
const screenshotDir = join(clientDir, "e2e", "screenshots");
const binary = resolve(process.env.CTXPROXY_BIN ?? join(clientDir, "..", "target", "debug", "ctxproxy"));
const started = Date.now();

function step(message) {
  console.log(`[e2e +${((Date.now() - started) / 1000).toFixed(1)}s] ${message}`);
}

function fail(message) {
  console.error(`e2e: ${message}`);
  process.exit(1);
}

if (!existsSync(codeServer)) fail(`code-server not found in ${cacheDir}: run \`bash e2e/install-deps.sh\` first.`);
if (!existsSync("/usr/bin/chromium")) fail("/usr/bin/chromium not found: run `bash e2e/install-deps.sh` first.");
if (!existsSync(binary)) {
  fail(`ctxproxy binary not found at ${binary}: build it with \`cargo build -p ctxproxy\` or set CTXPROXY_BIN.`);
}

step("packaging the extension with the binary bundled");
const bundleDir = join(clientDir, "e2e", ".bundle");
rmSync(bundleDir, { recursive: true, force: true });
mkdirSync(bundleDir, { recursive: true });
const strippedBinary = join(bundleDir, "ctxproxy");
if (spawnSync("strip", ["-o", strippedBinary, binary]).status !== 0) copyFileSync(binary, strippedBinary);
run("node", ["scripts/package-bundled.mjs", "--binary", strippedBinary], { cwd: clientDir });
rmSync(bundleDir, { recursive: true, force: true });
const { vsceTarget } = require(join(clientDir, "out", "src", "serverPath.js"));
const vsix = join(clientDir, `ctxproxy-${vsceTarget(process.platform, process.arch)}.vsix`);
const { fixtureSessionPath, searchableWord } = require(join(clientDir, "out", "test", "fixtureSession.js"));
const { startSidecarOnStore } = await import("./sidecarOnStore.mjs");

rmSync(runDir, { recursive: true, force: true });
rmSync(screenshotDir, { recursive: true, force: true });
mkdirSync(screenshotDir, { recursive: true });
const dirs = {
  userData: join(runDir, "user-data"),
  extensions: join(runDir, "extensions"),
  workspace: join(runDir, "workspace"),
  xdg: join(runDir, "xdg"),
  browser: join(runDir, "browser"),
};
for (const dir of Object.values(dirs)) mkdirSync(dir, { recursive: true });
const storePath = join(runDir, "store.db");
const fixture = fixtureSessionPath();
const fixtureName = "minimal.jsonl";
copyFileSync(fixture, join(dirs.workspace, fixtureName));
const recorded = readFileSync(fixture, "utf8").split("\n").filter((line) => line.trim() !== "").map((line) => JSON.parse(line));

const port = await freePort();
const configFile = join(runDir, "config.yaml");
writeFileSync(configFile, `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);
mkdirSync(join(dirs.userData, "User"), { recursive: true });
writeFileSync(
  join(dirs.userData, "User", "settings.json"),
  JSON.stringify(
    {
      "telemetry.telemetryLevel": "off",
      "workbench.startupEditor": "none",
      "extensions.autoUpdate": false,
      "extensions.autoCheckUpdates": false,
      "update.mode": "none",
      "security.workspace.trust.enabled": false,
      "workbench.tips.enabled": false,
      "chat.commandCenter.enabled": false,
      "git.openRepositoryInParentFolders": "never",
      "ctxproxy.storePath": storePath,
    },
    null,
    2,
  ),
);
const codeServerArgs = [
  "--config", configFile,
  "--user-data-dir", dirs.userData,
  "--extensions-dir", dirs.extensions,
];
const codeServerEnv = {
  ...process.env,
  XDG_CONFIG_HOME: join(dirs.xdg, "config"),
  XDG_DATA_HOME: join(dirs.xdg, "data"),
  XDG_CACHE_HOME: join(dirs.xdg, "cache"),
};

step("installing the .vsix into code-server");
run(codeServer, [...codeServerArgs, "--install-extension", vsix], { env: codeServerEnv });

step(`starting code-server on 127.0.0.1:${port}`);
const server = spawn(
  codeServer,
  [
    ...codeServerArgs,
    "--auth", "none",
    "--bind-addr", `127.0.0.1:${port}`,
    "--disable-telemetry",
    "--disable-update-check",
    "--disable-workspace-trust",
    "--disable-getting-started-override",
    dirs.workspace,
  ],
  { env: codeServerEnv, detached: true, stdio: ["ignore", "pipe", "pipe"] },
);
let serverLog = "";
server.stdout.on("data", (chunk) => (serverLog += chunk));
server.stderr.on("data", (chunk) => (serverLog += chunk));

let context;
let exitCode = 0;
let currentCheck;
let passedChecks = 0;
let failedChecks = 0;

/** Ends the current check (it passed) and starts the next one, if any. */
function begin(name) {
  if (currentCheck) {
    passedChecks += 1;
    step(`ok: ${currentCheck}`);
  }
  currentCheck = name;
  if (name) step(name);
}

try {
  begin("the workbench loads with the extension");
  await waitForHealth(`http://127.0.0.1:${port}/healthz`);
  const { chromium } = require("playwright-core");
  context = await chromium.launchPersistentContext(dirs.browser, {
    executablePath: "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
    env: { ...process.env, HOME: dirs.browser },
  });
  const page = context.pages()[0] ?? (await context.newPage());
  await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(dirs.workspace)}`);
  await page.locator(".monaco-workbench").waitFor({ timeout: 60000 });

  step("workbench is up");
  await page.locator(".statusbar-item", { hasText: "ctx" }).first().waitFor({ timeout: 30000 });
  await shot(page, "01-workbench");

  begin("with no ctxproxy.serverPath, the extension starts the binary bundled in its .vsix");
  await waitFor(() => sidecarPids(server.pid).length === 1, "the bundled sidecar (server/ctxproxy in the extension)", 30000);

  begin(`replaying ${fixtureName} updates the status bar`);
  await page.keyboard.press("Control+P");
  await fillQuickInput(page, fixtureName);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: fixtureName }).first().waitFor();
  await page.keyboard.press("Enter");
  await page.locator(".tab", { hasText: fixtureName }).first().waitFor();
  await runCommand(page, "ctxproxy: Replay Session File");
  const replayToast = page.locator(".notifications-toasts .notification-toast", { hasText: "replayed" }).first();
  await replayToast.waitFor({ timeout: 30000 });
  const replayText = await replayToast.innerText();
  const sessionId = /into (\S+?)\./.exec(replayText)?.[1];
  if (!sessionId) throw new Error(`no session id in the replay notice: ${replayText}`);
  const promptId = `p${recorded.length}`;
  step(`replayed ${recorded.length} exchanges into ${sessionId}`);
  const statusBar = page.locator(".statusbar-item", { hasText: /\d+(\.\d)?k?\/\d+(\.\d)?k/ }).first();
  await statusBar.waitFor({ timeout: 10000 });
  const statusText = (await statusBar.innerText()).trim();
  step(`status bar: ${statusText}`);
  await shot(page, "02-replayed");

  begin("Show What the Model Saw offers the session's prompts, newest first with their tokens");
  await runCommand(page, "ctxproxy: Show What the Model Saw");
  const promptRow = page.locator(".quick-input-list .monaco-list-row", { hasText: promptId }).first();
  await promptRow.waitFor();
  await shot(page, "03-prompt-picker");
  const pickerRows = await page.locator(".quick-input-list .monaco-list-row").evaluateAll((rows) =>
    rows.map((row) => ({
      label: row.querySelector(".label-name")?.textContent?.trim() ?? "",
      description: row.querySelector(".label-description")?.textContent?.trim() ?? "",
    })),
  );
  const expectedIds = recorded.map((_, index) => `p${recorded.length - index}`);
  if (JSON.stringify(pickerRows.map((row) => row.label)) !== JSON.stringify(expectedIds)) {
    throw new Error(`the picker lists ${JSON.stringify(pickerRows)}, expected ${expectedIds.join(", ")}`);
  }
  if (!pickerRows.every((row) => /^\d+ tokens/.test(row.description))) {
    throw new Error(`a picker row has no tokens: ${JSON.stringify(pickerRows)}`);
  }
  step(`picker: ${pickerRows.map((row) => `${row.label} (${row.description})`).join(", ")}`);

  begin("Show What the Model Saw renders the newest prompt and the session's chart");
  await page.keyboard.press("Enter");
  const webview = page.frameLocator("iframe.webview.ready").frameLocator("#active-frame");
  await webview.locator("#layers tbody tr").first().waitFor({ timeout: 30000 });
  const shown = await webview.locator("#layers tbody tr").evaluateAll((rows) =>
    rows.map((row) => ({
      layer: row.getAttribute("data-layer"),
      tokens: Number(row.querySelector(".layer-tokens").textContent),
    })),
  );
  const shownTotal = Number(await webview.locator("#total-tokens").innerText());
  const heading = await webview.locator("h1").innerText();
  const messageCount = await webview.locator("section.message").count();
  await webview.locator("#session-chart svg#session-tokens g.prompt-bar rect").first().waitFor({ timeout: 15000 });
  const chartBars = await webview.locator("#session-tokens g.prompt-bar").evaluateAll((bars) =>
    bars.map((bar) => ({
      promptId: bar.getAttribute("data-prompt"),
      total: Number(bar.getAttribute("data-total")),
      stacked: [...bar.querySelectorAll("rect[data-tokens]")].reduce((sum, rect) => sum + Number(rect.getAttribute("data-tokens")), 0),
      painted: bar.getBoundingClientRect().height,
    })),
  );
  const costPoints = await webview.locator('#session-cost g[data-series="ctxproxy"] circle').count();
  await webview.locator("#session-chart").scrollIntoViewIfNeeded();
  await shot(page, "04-what-the-model-saw");

  begin("the webview's figures equal ctx/explain from a second sidecar on the same store");
  const reference = await startSidecarOnStore(binary, storePath);
  let explain;
  const explained = [];
  try {
    explain = await reference.request("ctx/explain", { sessionId, promptId });
    for (let seq = 1; seq <= recorded.length; seq++) {
      explained.push(await reference.request("ctx/explain", { sessionId, promptId: `p${seq}` }));
    }
  } finally {
    await reference.stop();
  }
  const expectedLayers = explain.tokens?.layers ?? {};
  const problems = [];
  if (!heading.includes(promptId)) problems.push(`heading "${heading}" does not name ${promptId}`);
  if (shownTotal !== explain.tokens?.total) problems.push(`total ${shownTotal} != explain ${explain.tokens?.total}`);
  for (const [layer, tokens] of Object.entries(expectedLayers)) {
    const row = shown.find((r) => r.layer === layer);
    if (!row) problems.push(`no row for layer ${layer}`);
    else if (row.tokens !== tokens) problems.push(`layer ${layer}: shown ${row.tokens}, explain ${tokens}`);
  }
  if (Array.isArray(explain.messages) && messageCount !== explain.messages.length) {
    problems.push(`${messageCount} messages shown, explain has ${explain.messages.length}`);
  }
  const chartTotals = chartBars.map((bar) => `${bar.promptId}=${bar.total}`).join(" ");
  const explainTotals = explained.map((e) => `${e.promptId}=${e.tokens?.total}`).join(" ");
  if (chartTotals !== explainTotals) problems.push(`chart bars ${chartTotals}, explain ${explainTotals}`);
  for (const bar of chartBars) {
    if (bar.stacked !== bar.total) problems.push(`${bar.promptId}: layers stack to ${bar.stacked}, not its total ${bar.total}`);
    if (!(bar.painted > 0)) problems.push(`${bar.promptId}: the bar is not painted`);
  }
  if (costPoints !== recorded.length) problems.push(`${costPoints} points of cumulative cost, expected ${recorded.length}`);
  if (problems.length > 0) throw new Error(`the webview disagrees with ctx/explain:\n  ${problems.join("\n  ")}`);
  step(`webview matches explain: total ${shownTotal}, ${shown.map((r) => `${r.layer}=${r.tokens}`).join(" ")}; chart ${chartTotals}`);

  begin("the Sessions view opens x1 in full");
  await page.locator('.activitybar .action-item a[aria-label^="ctxproxy"]').first().click();
  const sessionRow = page.locator(".monaco-list-row", { hasText: fixtureName }).first();
  await sessionRow.waitFor({ timeout: 15000 });
  for (let attempt = 0; attempt < 5 && (await sessionRow.getAttribute("aria-expanded")) !== "true"; attempt++) {
    await sessionRow.click();
    await page.waitForTimeout(500);
  }
  const exchangeRow = page.locator(".monaco-list-row", { hasText: /^x1 / }).first();
  await exchangeRow.waitFor({ timeout: 15000 });
  await exchangeRow.click();
  await page.locator(".tab", { hasText: "x1.full" }).first().waitFor({ timeout: 15000 });
  const firstWords = String(recorded[0].messages[0].content).split(/\s+/).slice(0, 3).join(" ");
  await page.locator(".editor-instance .view-lines", { hasText: firstWords }).first().waitFor({ timeout: 15000 });
  await shot(page, "05-exchange-from-sessions-view");

  begin("search finds the replayed session");
  const query = searchableWord(String(recorded[0].messages[0].content));
  await runCommand(page, "ctxproxy: Search the Archive");
  await page.locator(".quick-input-widget .quick-input-title", { hasText: "Search the ctxproxy archive" }).waitFor();
  await fillQuickInput(page, query);
  await page.keyboard.press("Enter");
  await page.locator(".quick-input-widget .quick-input-title", { hasText: `for "${query}"` }).waitFor({ timeout: 15000 });
  await page.locator(".quick-input-list .monaco-list-row", { hasText: sessionId }).first().waitFor({ timeout: 15000 });
  await shot(page, "06-search");
  await page.keyboard.press("Escape");

  begin("a killed sidecar comes back with a notice and answers again");
  const killed = sidecarPids(server.pid);
  if (killed.length !== 1) throw new Error(`expected one sidecar process, found ${killed.length}`);
  process.kill(killed[0], "SIGKILL");
  await page.locator(".notifications-toasts .notification-toast", { hasText: "sidecar stopped" }).first().waitFor({ timeout: 15000 });
  await waitFor(() => sidecarPids(server.pid).some((pid) => pid !== killed[0]), "a new sidecar process");
  await runCommand(page, "ctxproxy: Show What the Model Saw");
  await page.locator(".quick-input-list .monaco-list-row", { hasText: promptId }).first().waitFor();
  await page.keyboard.press("Enter");
  await webview.locator("h1", { hasText: promptId }).waitFor({ timeout: 15000 });
  await shot(page, "07-after-sidecar-restart");

  begin(undefined);
  step(`done in ${((Date.now() - started) / 1000).toFixed(1)}s; screenshots in ${screenshotDir}`);
} catch (error) {
  exitCode = 1;
  failedChecks = 1;
  console.error(`e2e failed: ${currentCheck}: ${error instanceof Error ? error.stack : error}`);
  const page = context?.pages()[0];
  if (page) await shot(page, "failure").catch(() => undefined);
  console.error(`code-server log (tail):\n${serverLog.slice(-3000)}`);
} finally {
  await context?.close().catch(() => undefined);
  stopProcessGroup(server);
}
console.log(`e2e: ${passedChecks} passed, ${failedChecks} failed`);
process.exit(exitCode);

async function fillQuickInput(page, text) {
  const input = page.locator(".quick-input-widget input");
  await input.waitFor();
  await input.fill(text);
}

async function runCommand(page, title) {
  await page.keyboard.press("F1");
  await fillQuickInput(page, `>${title}`);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first().waitFor();
  await page.keyboard.press("Enter");
}

async function shot(page, name) {
  const file = join(screenshotDir, `${name}.png`);
  await page.screenshot({ path: file });
  step(`screenshot ${file}`);
}

function run(command, args, options) {
  const result = spawnSync(command, args, { stdio: "inherit", ...options });
  if (result.status !== 0) throw new Error(`${command} ${args.join(" ")} exited with ${result.status}`);
}

async function freePort() {
  return new Promise((done, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => done(port));
    });
  });
}

async function waitForHealth(url) {
  const deadline = Date.now() + 60000;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((wake) => setTimeout(wake, 250));
  }
  throw new Error(`code-server did not answer ${url} within 60 s`);
}

/** The sidecars started inside code-server's process group (by the extension host). */
function sidecarPids(groupId) {
  const ps = spawnSync("ps", ["-eo", "pid=,pgid=,args="], { encoding: "utf8" }).stdout;
  return ps
    .split("\n")
    .map((line) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line))
    // The bundled binary, as installed: <extensions dir>/ctxproxy.ctxproxy-<version>-<target>/server/ctxproxy.
    .filter((match) => match && Number(match[2]) === groupId && match[3].startsWith(dirs.extensions) && match[3].includes("/server/ctxproxy serve"))
    .map((match) => Number(match[1]));
}

async function waitFor(condition, what, timeoutMs = 15000) {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((wake) => setTimeout(wake, 200));
  }
}

function stopProcessGroup(child) {
  try {
    process.kill(-child.pid, "SIGTERM");
  } catch {
    return;
  }
  const deadline = Date.now() + 3000;
  while (Date.now() < deadline) {
    try {
      process.kill(-child.pid, 0);
    } catch {
      return;
    }
    spawnSync("sleep", ["0.1"]);
  }
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // already gone
  }
}

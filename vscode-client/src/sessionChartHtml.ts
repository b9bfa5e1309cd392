// Draws a SessionChart as inline SVG for the "What the Model Saw" webview (no script, no fetch): each
// prompt's layers stacked with full history's estimate and the budget over them, then the cumulative
// effective cost of both. Every mark carries its figure in a data attribute. No vscode import.
import { escapeHtml } from "./html";
import { ChartPrompt, OUTSIDE_LAYERS, SessionChart } from "./sessionChart";
import { formatTokens } from "./tokenFigures";

const WIDTH = 880;
const HEIGHT = 240;
const LEFT = 56;
const RIGHT = 12;
const TOP = 10;
const BOTTOM = 36;

const LAYER_COLORS: Record<string, string> = {
  system: "var(--vscode-charts-foreground, #888)",
  currentContext: "var(--vscode-charts-yellow, #cca700)",
  recent: "var(--vscode-charts-blue, #3794ff)",
  headers: "var(--vscode-charts-green, #89d185)",
  summaries: "var(--vscode-terminal-ansiCyan, #11a8cd)",
  asks: "var(--vscode-terminal-ansiGreen, #0dbc79)",
  references: "var(--vscode-charts-orange, #d18616)",
  recall: "var(--vscode-terminal-ansiMagenta, #bc3fbc)",
  memory: "var(--vscode-terminal-ansiBlue, #2472c8)",
  projectRecent: "var(--vscode-terminal-ansiBrightBlue, #3b8eea)",
  projectRecall: "var(--vscode-terminal-ansiRed, #cd3131)",
  input: "var(--vscode-charts-purple, #b180d7)",
  [OUTSIDE_LAYERS]: "var(--vscode-disabledForeground, #8888)",
};
/** The budget is drawn when the largest figure is at least 1/BUDGET_HEADROOM of it. */
const BUDGET_HEADROOM = 4;
const CTXPROXY_COLOR = "var(--vscode-charts-blue, #3794ff)";
const FULL_HISTORY_COLOR = "var(--vscode-charts-red, #f14c4c)";

interface Scale {
  yMax: number;
  step: number;
  x(index: number): number;
  y(value: number): number;
  band: number;
}

/** 1, 2 or 5 times a power of ten, at least raw. */
export function niceStep(raw: number): number {
  if (!(raw > 0)) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const norm = raw / magnitude;
  return (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * magnitude;
}

function scale(count: number, dataMax: number): Scale {
  const step = niceStep(Math.max(dataMax, 1) / 4);
  const yMax = Math.ceil(Math.max(dataMax, 1) / step) * step;
  const band = (WIDTH - LEFT - RIGHT) / Math.max(count, 1);
  const plot = HEIGHT - TOP - BOTTOM;
  return {
    yMax,
    step,
    band,
    x: (index) => LEFT + band * (index + 0.5),
    y: (value) => TOP + plot * (1 - value / yMax),
  };
}

function axes(s: Scale, prompts: ChartPrompt[], yTitle: string): string {
  const parts: string[] = [];
  for (let v = 0; v <= s.yMax + s.step / 2; v += s.step) {
    const y = s.y(v).toFixed(1);
    parts.push(
      `<line class="grid" x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${y}" y2="${y}"/><text class="tick" x="${LEFT - 6}" y="${(s.y(v) + 4).toFixed(1)}" text-anchor="end">${formatTokens(v)}</text>`,
    );
  }
  const every = Math.max(1, niceStep(prompts.length / 16));
  prompts.forEach((prompt, index) => {
    if (index % every !== 0 && index !== prompts.length - 1) return;
    parts.push(
      `<text class="tick" x="${s.x(index).toFixed(1)}" y="${HEIGHT - BOTTOM + 16}" text-anchor="middle">${escapeHtml(prompt.promptId)}</text>`,
    );
  });
  parts.push(
    `<line class="axis" x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${s.y(0)}" y2="${s.y(0)}"/>`,
    `<text class="axis-title" x="${LEFT + (WIDTH - LEFT - RIGHT) / 2}" y="${HEIGHT - 4}" text-anchor="middle">prompt of the session</text>`,
    `<text class="axis-title" transform="translate(12 ${TOP + (HEIGHT - TOP - BOTTOM) / 2}) rotate(-90)" text-anchor="middle">${escapeHtml(yTitle)}</text>`,
  );
  return parts.join("");
}

function line(s: Scale, prompts: ChartPrompt[], series: string, color: string, value: (p: ChartPrompt) => number | undefined): string {
  const points = prompts
    .map((prompt, index) => [index, value(prompt)] as const)
    .filter((point): point is readonly [number, number] => point[1] !== undefined);
  if (points.length === 0) return "";
  const path = points.map(([index, v]) => `${s.x(index).toFixed(1)},${s.y(v).toFixed(1)}`).join(" ");
  const dots = points
    .map(
      ([index, v]) =>
        `<circle cx="${s.x(index).toFixed(1)}" cy="${s.y(v).toFixed(1)}" r="2.5" fill="${color}" data-prompt="${escapeHtml(prompts[index].promptId)}" data-value="${v}"><title>${escapeHtml(prompts[index].promptId)} · ${series}: ${Math.round(v)}</title></circle>`,
    )
    .join("");
  return `<g class="series" data-series="${series}"><polyline points="${path}" fill="none" stroke="${color}" stroke-width="2"/>${dots}</g>`;
}

function legend(entries: [string, string][]): string {
  return `<div class="chart-legend">${entries
    .map(([label, color]) => `<span><i style="background:${color}"></i>${escapeHtml(label)}</span>`)
    .join("")}</div>`;
}

/** Both charts of a session; `current` is the prompt the view shows, outlined. */
export function renderSessionChart(chart: SessionChart, current?: string): string {
  const prompts = chart.prompts;
  if (prompts.length === 0) return `<p class="muted">No prompt of this session is recorded yet.</p>`;
  const hasFull = prompts.some((p) => p.fullHistory !== undefined);
  const dataMax = Math.max(...prompts.map((p) => Math.max(p.total, p.fullHistory ?? 0)));
  // A budget far above every prompt would flatten the bars: then it is named, not drawn.
  const budgetOnScale = chart.budget !== undefined && chart.budget <= dataMax * BUDGET_HEADROOM;
  const tokens = scale(prompts.length, budgetOnScale ? Math.max(dataMax, chart.budget ?? 0) : dataMax);
  const width = Math.max(1, tokens.band * 0.7);
  const bars = prompts
    .map((prompt, index) => {
      let base = 0;
      const segments = prompt.layers
        .filter((layer) => layer.tokens > 0)
        .map((layer) => {
          const top = tokens.y(base + layer.tokens);
          const height = tokens.y(base) - top;
          base += layer.tokens;
          return `<rect x="${(tokens.x(index) - width / 2).toFixed(1)}" y="${top.toFixed(1)}" width="${width.toFixed(1)}" height="${height.toFixed(1)}" fill="${LAYER_COLORS[layer.name] ?? "#888"}" data-layer="${escapeHtml(layer.name)}" data-tokens="${layer.tokens}"><title>${escapeHtml(prompt.promptId)} · ${escapeHtml(layer.label)}: ${layer.tokens} tokens</title></rect>`;
        })
        .join("");
      const outline =
        prompt.promptId === current
          ? `<rect class="current" x="${(tokens.x(index) - width / 2 - 2).toFixed(1)}" y="${(tokens.y(prompt.total) - 2).toFixed(1)}" width="${(width + 4).toFixed(1)}" height="${(tokens.y(0) - tokens.y(prompt.total) + 2).toFixed(1)}"/>`
          : "";
      return `<g class="prompt-bar" data-prompt="${escapeHtml(prompt.promptId)}" data-total="${prompt.total}">${segments}${outline}</g>`;
    })
    .join("");
  const budget =
    chart.budget !== undefined && budgetOnScale
      ? `<line class="budget" x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${tokens.y(chart.budget).toFixed(1)}" y2="${tokens.y(chart.budget).toFixed(1)}" data-budget="${chart.budget}"/><text class="budget-label" x="${WIDTH - RIGHT}" y="${(tokens.y(chart.budget) - 4).toFixed(1)}" text-anchor="end">budget ${formatTokens(chart.budget)}</text>`
      : "";
  // In packer order (every prompt lists every layer), those that hold tokens in some prompt.
  const layerNames = new Map<string, string>();
  for (const layer of prompts.flatMap((p) => p.layers)) if (!layerNames.has(layer.name)) layerNames.set(layer.name, layer.label);
  for (const name of [...layerNames.keys()]) {
    if (!prompts.some((p) => p.layers.some((layer) => layer.name === name && layer.tokens > 0))) layerNames.delete(name);
  }
  const tokensChart = `<svg id="session-tokens" class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="tokens per prompt">${axes(tokens, prompts, "tokens")}${bars}${budget}${line(tokens, prompts, "full-history", FULL_HISTORY_COLOR, (p) => p.fullHistory)}</svg>`;

  const costMax = Math.max(...prompts.map((p) => Math.max(p.cumulativeCost, p.fullHistoryCumulativeCost ?? 0)));
  const cost = scale(prompts.length, costMax);
  const costChart = `<svg id="session-cost" class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-label="cumulative effective cost">${axes(cost, prompts, "token-equivalents")}${line(cost, prompts, "full-history", FULL_HISTORY_COLOR, (p) => p.fullHistoryCumulativeCost)}${line(cost, prompts, "ctxproxy", CTXPROXY_COLOR, (p) => p.cumulativeCost)}</svg>`;

  const fullLabel = "full history, at least (the exchanges' message text as appended)";
  return `<section id="session-chart" data-prompts="${prompts.length}">
<h3>Tokens per prompt, by layer</h3>
${chart.budget !== undefined && !budgetOnScale ? `<p class="muted" id="budget-off-scale">Every prompt is under a quarter of the ${formatTokens(chart.budget)} budget, which is off the scale.</p>` : ""}
${legend([...[...layerNames].map(([name, label]): [string, string] => [label, LAYER_COLORS[name] ?? "#888"]), ...(hasFull ? [[fullLabel, FULL_HISTORY_COLOR] as [string, string]] : [])])}
${tokensChart}
<h3>Cumulative effective cost</h3>
<p class="muted">Tokens sent so far, a prefix identical to the previous prompt's start counted at a tenth.</p>
${legend([["ctxproxy", CTXPROXY_COLOR], ...(hasFull ? [[fullLabel, FULL_HISTORY_COLOR] as [string, string]] : [])])}
${costChart}
</section>`;
}

export const CHART_STYLE = `
svg.chart { width: 100%; max-width: 900px; height: auto; display: block; }
svg .grid { stroke: var(--vscode-panel-border, #8884); }
svg .axis { stroke: var(--vscode-foreground, #888); opacity: 0.6; }
svg .tick, svg .axis-title, svg .budget-label { fill: var(--vscode-foreground, #888); font-size: 11px; opacity: 0.85; }
svg .budget { stroke: var(--vscode-foreground, #888); stroke-dasharray: 6 4; }
svg rect.current { fill: none; stroke: var(--vscode-focusBorder, #007fd4); stroke-width: 2; }
.chart-legend { display: flex; flex-wrap: wrap; gap: 4px 14px; margin: 4px 0; font-size: 0.9em; }
.chart-legend i { display: inline-block; width: 10px; height: 10px; margin-right: 5px; border-radius: 2px; }
h3 { font-size: 1em; margin: 1em 0 0.2em; }
`;

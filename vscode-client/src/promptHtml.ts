// Renders a PromptView as the HTML of the "What the Model Saw" webview: a layer table with token bars,
// the session's per-prompt chart, the items of each layer, what was trimmed, and the exact messages.
// Static HTML and SVG, no script.
// No vscode import.
import { LayerView, MessageView, PromptView } from "./explainModel";
import { escapeHtml } from "./html";
import { SessionChart } from "./sessionChart";
import { CHART_STYLE, renderSessionChart } from "./sessionChartHtml";
import { formatPercent } from "./tokenFigures";

export interface WebviewSecurity {
  /** The webview's cspSource, allowed for styles. */
  cspSource: string;
}

export function renderPromptHtml(view: PromptView, security: WebviewSecurity, chart?: SessionChart): string {
  const title = `What the model saw: ${view.promptId}`;
  const budget = view.budget !== undefined ? ` of ${view.budget} budget` : "";
  const facts = [
    ...(view.encoding ? [view.encoding] : []),
    ...(view.prefixReused !== undefined
      ? [`prefix reused: ${view.prefixReused} tokens${view.total > 0 ? ` (${formatPercent(view.prefixReused / view.total)})` : ""}`]
      : []),
    ...(view.createdAt ? [`assembled ${view.createdAt}`] : []),
  ];
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src ${security.cspSource} 'unsafe-inline';">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>${escapeHtml(title)}</title>
<style>${STYLE}${CHART_STYLE}</style>
</head>
<body>
<h1>${escapeHtml(title)}</h1>
<p class="summary">Session <code>${escapeHtml(view.sessionId)}</code> · <span id="total-tokens">${view.total}</span> tokens${escapeHtml(budget)} · ${view.messages.length} messages · tools: ${escapeHtml(view.toolNames.join(", ") || "none")}</p>
${facts.length > 0 ? `<p class="summary muted" id="prompt-facts">${escapeHtml(facts.join(" · "))}</p>` : ""}
<h2>Layers</h2>
${renderLayerTable(view.layers, view.total)}
${chart ? `<h2>Every prompt of the session</h2>\n${renderSessionChart(chart, view.promptId)}` : ""}
${view.layers.filter((layer) => layer.items.length > 0).map(renderLayerItems).join("\n")}
<h2>Trimmed</h2>
${renderTrimmed(view)}
<h2>Messages</h2>
${view.messages.map(renderMessage).join("\n")}
</body>
</html>`;
}

function renderLayerTable(layers: LayerView[], total: number): string {
  const rows = layers
    .map(
      (layer) => `<tr class="layer" data-layer="${escapeHtml(layer.name)}">
<td class="layer-name">${escapeHtml(layer.label)}</td>
<td class="layer-tokens">${layer.tokens}</td>
<td class="layer-share">${formatPercent(layer.share)}</td>
<td class="layer-bar"><div class="bar" style="width:${(layer.share * 100).toFixed(1)}%"></div></td>
<td class="layer-items">${layer.items.length}</td>
</tr>`,
    )
    .join("\n");
  return `<table id="layers">
<thead><tr><th>Layer</th><th>Tokens</th><th>Share</th><th class="bar-head"></th><th>Items</th></tr></thead>
<tbody>
${rows}
</tbody>
<tfoot><tr><td>Total</td><td class="total-tokens">${total}</td><td></td><td></td><td></td></tr></tfoot>
</table>`;
}

function renderLayerItems(layer: LayerView): string {
  const items = layer.items
    .map(
      (item) =>
        `<li><code class="item-id">${escapeHtml(item.id)}</code> <span class="muted">${escapeHtml(item.format)} · ${item.tokens} tokens</span></li>`,
    )
    .join("");
  return `<details class="layer-detail" data-layer="${escapeHtml(layer.name)}"><summary>${escapeHtml(layer.label)}: ${layer.items.length} item${layer.items.length === 1 ? "" : "s"}</summary><ul>${items}</ul></details>`;
}

function renderTrimmed(view: PromptView): string {
  if (view.trimmed.length === 0) return `<p class="muted">Nothing was trimmed.</p>`;
  const rows = view.trimmed
    .map(
      (trim) =>
        `<tr><td><code>${escapeHtml(trim.id)}</code></td><td>${escapeHtml(trim.from)} → ${escapeHtml(trim.to)}</td><td>${escapeHtml(trim.reason)}</td></tr>`,
    )
    .join("\n");
  return `<table id="trimmed"><thead><tr><th>Id</th><th>Demoted</th><th>Reason</th></tr></thead><tbody>${rows}</tbody></table>`;
}

function renderMessage(message: MessageView, index: number): string {
  const notes = [
    ...(message.toolCallId ? [`answers ${message.toolCallId}`] : []),
    ...message.toolCalls.map((call) => `calls ${call}`),
  ];
  return `<section class="message role-${escapeHtml(message.role)}">
<div class="message-head"><span class="role">${index + 1}. ${escapeHtml(message.role)}</span>${notes.map((note) => ` <code>${escapeHtml(note)}</code>`).join("")}</div>
<pre>${escapeHtml(message.text)}</pre>
</section>`;
}

const STYLE = `
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); padding: 0 16px 16px; }
h1 { font-size: 1.3em; } h2 { font-size: 1.1em; margin-top: 1.4em; }
table { border-collapse: collapse; width: 100%; max-width: 900px; }
th, td { text-align: left; padding: 3px 8px; border-bottom: 1px solid var(--vscode-panel-border, #8884); }
td.layer-tokens, td.layer-share, td.layer-items, td.total-tokens { text-align: right; font-variant-numeric: tabular-nums; }
td.layer-bar { width: 40%; }
.bar { height: 10px; min-width: 1px; background: var(--vscode-charts-blue, #3794ff); border-radius: 2px; }
tfoot td { font-weight: bold; }
.muted { opacity: 0.7; }
details { margin: 4px 0; } details ul { margin: 4px 0 8px; columns: 3; }
.message { border-left: 3px solid var(--vscode-charts-blue, #3794ff); margin: 10px 0; padding-left: 8px; }
.message.role-system { border-color: var(--vscode-charts-purple, #b180d7); }
.message.role-assistant { border-color: var(--vscode-charts-green, #89d185); }
.message.role-tool { border-color: var(--vscode-charts-orange, #d18616); }
.role { font-weight: bold; text-transform: uppercase; font-size: 0.85em; }
pre { white-space: pre-wrap; word-break: break-word; font-family: var(--vscode-editor-font-family); background: var(--vscode-textCodeBlock-background, #8881); padding: 6px; margin: 4px 0; }
`;

//! The replay report as one self-contained HTML page (`replay --html`): per
//! turn, the prompt tokens of every strategy, their cumulative effective cost
//! and ctxproxy's layers stacked, drawn as inline SVG; then the summary, the
//! facts table and every per-turn figure. It renders the `--json` report and
//! nothing else, so each figure on the page is one of that report's (the JSON
//! is embedded too, for tools). No script runs and nothing is fetched: the
//! page opens offline from a file.

use std::fmt::Write;

use serde_json::Value;

use crate::report::LAYERS;

/// One strategy's figure at every turn, as the JSON report holds it.
struct Series<'a> {
    name: &'a str,
    color: &'static str,
    values: Vec<&'a Value>,
}

/// A chart's plotting area inside its SVG.
struct Frame {
    width: f64,
    height: f64,
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
    turns: usize,
    y_max: f64,
    y_step: f64,
}

const WIDTH: f64 = 1100.0;
const HEIGHT: f64 = 320.0;

/// Colours stay the same across charts, so a strategy is one colour everywhere.
fn strategy_color(name: &str) -> &'static str {
    match name {
        "ctxproxy" => "#2563eb",
        "full-history" => "#dc2626",
        "cline" => "#d97706",
        "sliding-window" => "#7c3aed",
        _ => "#6b7280",
    }
}

fn layer_style(key: &str) -> (&'static str, &'static str) {
    match key {
        "system" => ("system", "#64748b"),
        "currentContext" => ("current context (L0)", "#0891b2"),
        "recent" => ("recent exchanges", "#2563eb"),
        "headers" => ("headers", "#16a34a"),
        "summaries" => ("summaries", "#84cc16"),
        "asks" => ("what the person said", "#0d9488"),
        "references" => ("references", "#f59e0b"),
        "recall" => ("recall", "#e11d48"),
        "memory" => ("project memory", "#7c3aed"),
        "projectRecent" => ("project's latest exchanges", "#a855f7"),
        "projectRecall" => ("project recall", "#be185d"),
        "input" => ("input", "#c026d3"),
        _ => ("other", "#6b7280"),
    }
}

/// What a prompt charges outside its layers, stacked on top of them.
const OUTSIDE_LAYERS: (&str, &str) = ("tool definitions + reply primer", "#cbd5e1");

fn status_label(status: &str) -> &str {
    match status {
        "in-prompt" => "in prompt",
        "one-retrieve-away" => "one retrieve away",
        "answer-words-only" => "answer's words only",
        other => other,
    }
}

/// The page for `report` (the `--json` value); `title` names the replayed file.
pub fn render(report: &Value, title: &str) -> String {
    let turns = report["turns"].as_array().map_or(&[][..], Vec::as_slice);
    let summary = report["summary"].as_array().map_or(&[][..], Vec::as_slice);
    let strategies: Vec<&str> = summary
        .iter()
        .filter_map(|s| s["strategy"].as_str())
        .collect();
    let labels: Vec<&str> = turns
        .iter()
        .map(|t| t["exchange"].as_str().unwrap_or("?"))
        .collect();
    let budget = report["budget"].as_f64();

    let mut out = String::new();
    let _ = write!(
        out,
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ctxproxy replay: {title}</title>
<style>{STYLE}</style>
</head>
<body>
<header>
<h1>ctxproxy replay report <span class="file">{title}</span></h1>
<p class="muted">session <code>{session}</code> · {turns} turns · budget {budget} tokens · {stats}</p>
</header>
"#,
        title = escape(title),
        session = escape(report["sessionId"].as_str().unwrap_or("")),
        turns = turns.len(),
        budget = budget.map_or("-".into(), group),
        stats = session_stats(&report["sessionStats"]),
    );
    key_figures(&mut out, report, summary);

    let tokens = strategy_series(turns, &strategies, "total");
    out.push_str(
        "<section><h2>Prompt tokens per turn</h2>\
<p class=\"muted\">What each strategy sends the model before each exchange. The dashed line is the budget.</p>",
    );
    strategy_legend(&mut out, &tokens);
    line_chart(&mut out, "tokens", &tokens, &labels, budget, "tokens");
    out.push_str("</section>\n");

    let costs = strategy_series(turns, &strategies, "cumulativeEffectiveCost");
    out.push_str(
        "<section><h2>Cumulative effective cost</h2>\
<p class=\"muted\">Tokens sent so far, a cached prefix (identical to the previous prompt's start) counted at a tenth.</p>",
    );
    strategy_legend(&mut out, &costs);
    line_chart(&mut out, "cost", &costs, &labels, None, "token-equivalents");
    out.push_str("</section>\n");

    out.push_str(
        "<section><h2>ctxproxy's prompt by layer</h2>\
<p class=\"muted\">Tokens of each layer of the prompt ctxproxy assembled, stacked up to its total; the dashed line is the budget.</p>",
    );
    legend(
        &mut out,
        LAYERS
            .iter()
            .map(|(k, _)| layer_style(k))
            .chain([OUTSIDE_LAYERS]),
    );
    layer_chart(&mut out, turns, &labels, budget);
    out.push_str("</section>\n");

    summary_table(&mut out, summary);
    facts_table(&mut out, report, &strategies);
    turns_table(&mut out, turns, &strategies);

    let _ = write!(
        out,
        "<footer class=\"muted\">Written by <code>ctxproxy replay --report --html</code>. \
The figures are those of <code>--json</code>, embedded below as <code>#report-data</code>.</footer>\n\
<script type=\"application/json\" id=\"report-data\">{}</script>\n</body>\n</html>\n",
        // `</` inside a script element would end it early.
        report.to_string().replace("</", "<\\/")
    );
    out
}

fn session_stats(stats: &Value) -> String {
    let n = |k: &str| stats[k].as_f64().map_or("-".into(), group);
    format!(
        "{} exchanges · {} blobs ({} duplicate hits) · {} raw bytes stored in {}",
        n("exchanges"),
        n("blobs"),
        n("duplicateHits"),
        n("rawBytes"),
        n("storedBytes")
    )
}

/// The three numbers a reader wants first, ctxproxy against full history.
fn key_figures(out: &mut String, report: &Value, summary: &[Value]) {
    let find = |name: &str| summary.iter().find(|s| s["strategy"] == name);
    let (Some(ours), full) = (find("ctxproxy"), find("full-history")) else {
        return;
    };
    let ratio = |field: &str| {
        full.and_then(|f| f[field].as_f64())
            .zip(ours[field].as_f64())
            .map_or("-".into(), |(f, o)| percent(o / f.max(1.0)))
    };
    let facts = format!(
        "{}/{}",
        ours["factsReachable"].as_u64().unwrap_or(0),
        ours["facts"].as_u64().unwrap_or(0)
    );
    let cards = [
        (
            "prompt tokens vs full history",
            ratio("promptTokens"),
            format!("{} tokens", num(&ours["promptTokens"])),
        ),
        (
            "effective cost vs full history",
            ratio("effectiveCost"),
            format!("{} token-equivalents", num(&ours["effectiveCost"])),
        ),
        (
            "facts reachable",
            facts,
            format!("{} in the prompt itself", num(&ours["factsInPrompt"])),
        ),
        (
            "average prefix reuse",
            report["averagePrefixReuse"]
                .as_f64()
                .map_or("-".into(), percent),
            "turns 2 onwards".into(),
        ),
    ];
    out.push_str("<section class=\"cards\">");
    for (label, figure, detail) in cards {
        let _ = write!(
            out,
            "<div class=\"card\"><div class=\"label\">{}</div><div class=\"figure\">{}</div><div class=\"muted\">{}</div></div>",
            escape(label),
            escape(&figure),
            escape(&detail)
        );
    }
    out.push_str("</section>\n");
}

/// `field` of every turn for each strategy: ctxproxy's at the turn's top
/// level, a baseline's under `baselines`.
fn strategy_series<'a>(turns: &'a [Value], strategies: &[&'a str], field: &str) -> Vec<Series<'a>> {
    strategies
        .iter()
        .map(|&name| Series {
            name,
            color: strategy_color(name),
            values: turns
                .iter()
                .map(|t| {
                    if name == "ctxproxy" {
                        &t[field]
                    } else {
                        &t["baselines"][name][field]
                    }
                })
                .collect(),
        })
        .collect()
}

fn legend<'a>(out: &mut String, entries: impl Iterator<Item = (&'a str, &'a str)>) {
    out.push_str("<div class=\"legend\">");
    for (name, color) in entries {
        let _ = write!(
            out,
            "<span><i style=\"background:{color}\"></i>{}</span>",
            escape(name)
        );
    }
    out.push_str("</div>");
}

/// The strategies' legend; a line drawn exactly over an earlier one says so,
/// or the reader would look for it in vain.
fn strategy_legend(out: &mut String, series: &[Series]) {
    let labels: Vec<String> = series
        .iter()
        .enumerate()
        .map(
            |(i, s)| match series[..i].iter().find(|t| t.values == s.values) {
                Some(same) => format!("{} (same as {}: hidden under it)", s.name, same.name),
                None => s.name.to_string(),
            },
        )
        .collect();
    legend(
        out,
        labels
            .iter()
            .zip(series)
            .map(|(l, s)| (l.as_str(), s.color)),
    );
}

impl Frame {
    fn new(turns: usize, y_data_max: f64) -> Frame {
        let y_step = nice_step(y_data_max.max(1.0) / 5.0);
        Frame {
            width: WIDTH,
            height: HEIGHT,
            left: 70.0,
            right: 20.0,
            top: 14.0,
            bottom: 44.0,
            turns,
            y_max: (y_data_max.max(1.0) / y_step).ceil() * y_step,
            y_step,
        }
    }

    fn plot_width(&self) -> f64 {
        self.width - self.left - self.right
    }

    fn band(&self) -> f64 {
        self.plot_width() / self.turns.max(1) as f64
    }

    /// The centre of turn `i`'s band, so lines and bars line up across charts.
    fn x(&self, i: usize) -> f64 {
        self.left + self.band() * (i as f64 + 0.5)
    }

    fn y(&self, value: f64) -> f64 {
        let plot = self.height - self.top - self.bottom;
        self.top + plot * (1.0 - value / self.y_max)
    }

    /// Opens the SVG and draws the grid, both axes and their labels.
    fn open(&self, out: &mut String, id: &str, labels: &[&str], y_title: &str) {
        let _ = write!(
            out,
            r#"<svg id="chart-{id}" class="chart" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="{y_title} per turn">"#,
            w = self.width,
            h = self.height
        );
        let mut v = 0.0;
        while v <= self.y_max + self.y_step / 2.0 {
            let y = self.y(v);
            let _ = write!(
                out,
                r#"<line class="grid" x1="{l}" x2="{r}" y1="{y:.1}" y2="{y:.1}"/><text class="tick" x="{tx}" y="{ty:.1}" text-anchor="end">{label}</text>"#,
                l = self.left,
                r = self.width - self.right,
                tx = self.left - 8.0,
                ty = y + 4.0,
                label = compact(v, self.y_step)
            );
            v += self.y_step;
        }
        let every = nice_step(labels.len() as f64 / 20.0).max(1.0) as usize;
        for (i, label) in labels.iter().enumerate() {
            if i % every != 0 && i + 1 != labels.len() {
                continue;
            }
            let _ = write!(
                out,
                r#"<text class="tick" x="{x:.1}" y="{y}" text-anchor="middle">{}</text>"#,
                escape(label),
                x = self.x(i),
                y = self.height - self.bottom + 18.0
            );
        }
        let _ = write!(
            out,
            r#"<line class="axis" x1="{l}" x2="{r}" y1="{b:.1}" y2="{b:.1}"/><line class="axis" x1="{l}" x2="{l}" y1="{t}" y2="{b:.1}"/><text class="axis-title" x="{cx}" y="{h}" text-anchor="middle">turn (the exchange the prompt was assembled for)</text><text class="axis-title" transform="translate(14 {cy}) rotate(-90)" text-anchor="middle">{y_title}</text>"#,
            l = self.left,
            r = self.width - self.right,
            t = self.top,
            b = self.y(0.0),
            cx = self.left + self.plot_width() / 2.0,
            h = self.height - 4.0,
            cy = self.top + (self.height - self.top - self.bottom) / 2.0,
        );
    }

    fn budget_line(&self, out: &mut String, budget: Option<f64>) {
        let r = self.width - self.right;
        let _ = match budget {
            Some(b) if b > self.y_max => write!(
                out,
                r#"<text class="budget-label" x="{r}" y="{y}" text-anchor="end">budget {}: above the scale</text>"#,
                group(b),
                y = self.top + 10.0
            ),
            Some(b) => write!(
                out,
                r#"<line class="budget" x1="{l}" x2="{r}" y1="{y:.1}" y2="{y:.1}"/><text class="budget-label" x="{r}" y="{ty:.1}" text-anchor="end">budget {}</text>"#,
                group(b),
                l = self.left,
                y = self.y(b),
                ty = self.y(b) - 5.0
            ),
            None => Ok(()),
        };
    }
}

/// The top of a token chart: the budget when some figure comes within a
/// quarter of it, or the bars of a session far under it would be flat.
fn with_budget(data_max: f64, budget: Option<f64>) -> f64 {
    match budget {
        Some(b) if b <= 4.0 * data_max => data_max.max(b),
        _ => data_max,
    }
}

fn line_chart(
    out: &mut String,
    id: &str,
    series: &[Series],
    labels: &[&str],
    budget: Option<f64>,
    y_title: &str,
) {
    let data_max = series
        .iter()
        .flat_map(|s| s.values.iter().filter_map(|v| v.as_f64()))
        .fold(0.0, f64::max);
    let frame = Frame::new(labels.len(), with_budget(data_max, budget));
    frame.open(out, id, labels, y_title);
    frame.budget_line(out, budget);
    // ctxproxy last, so its line is drawn on top.
    for s in series.iter().rev() {
        let points: Vec<String> = s
            .values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                v.as_f64()
                    .map(|v| format!("{:.1},{:.1}", frame.x(i), frame.y(v)))
            })
            .collect();
        let _ = write!(
            out,
            r#"<g class="series" data-strategy="{name}"><polyline points="{}" stroke="{color}" class="{line}"/>"#,
            points.join(" "),
            name = escape(s.name),
            color = s.color,
            line = if s.name == "ctxproxy" {
                "line main"
            } else {
                "line"
            },
        );
        for (i, v) in s.values.iter().enumerate() {
            let Some(f) = v.as_f64() else { continue };
            let _ = write!(
                out,
                r#"<circle cx="{x:.1}" cy="{y:.1}" r="2.5" fill="{color}" data-turn="{turn}" data-value="{v}"><title>{turn} · {name}: {shown}</title></circle>"#,
                x = frame.x(i),
                y = frame.y(f),
                color = s.color,
                turn = escape(labels[i]),
                name = escape(s.name),
                shown = group(f),
            );
        }
        out.push_str("</g>");
    }
    out.push_str("</svg>\n");
}

fn layer_chart(out: &mut String, turns: &[Value], labels: &[&str], budget: Option<f64>) {
    let data_max = turns
        .iter()
        .filter_map(|t| t["total"].as_f64())
        .fold(0.0, f64::max);
    let frame = Frame::new(labels.len(), with_budget(data_max, budget));
    frame.open(out, "layers", labels, "tokens");
    let width = (frame.band() * 0.72).max(1.0);
    for (i, turn) in turns.iter().enumerate() {
        let _ = write!(out, r#"<g class="turn" data-turn="{}">"#, escape(labels[i]));
        let segments = LAYERS
            .iter()
            .map(|(key, _)| (*key, layer_style(key), &turn["layers"][key]))
            .chain([("outsideLayers", OUTSIDE_LAYERS, &turn["outsideLayers"])]);
        let mut base = 0.0;
        for (key, (label, color), value) in segments {
            let tokens = value.as_f64().unwrap_or(0.0);
            if tokens <= 0.0 {
                continue;
            }
            let _ = write!(
                out,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{width:.1}" height="{h:.1}" fill="{color}" data-layer="{key}" data-tokens="{value}"><title>{turn} · {label}: {shown} tokens</title></rect>"#,
                x = frame.x(i) - width / 2.0,
                y = frame.y(base + tokens),
                h = frame.y(base) - frame.y(base + tokens),
                turn = escape(labels[i]),
                shown = group(tokens),
            );
            base += tokens;
        }
        out.push_str("</g>");
    }
    frame.budget_line(out, budget);
    out.push_str("</svg>\n");
}

fn summary_table(out: &mut String, summary: &[Value]) {
    let full = summary.iter().find(|s| s["strategy"] == "full-history");
    let vs = |s: &Value, field: &str| {
        full.and_then(|f| f[field].as_f64())
            .zip(s[field].as_f64())
            .map_or("-".into(), |(f, o)| percent(o / f.max(1.0)))
    };
    out.push_str(
        "<section><h2>Summary</h2><table id=\"summary\"><thead><tr><th>strategy</th><th>prompt tokens</th>\
<th>vs full</th><th>cached tokens</th><th>effective cost</th><th>vs full</th><th>facts reachable</th>\
<th>in prompt</th></tr></thead><tbody>",
    );
    for s in summary {
        let name = s["strategy"].as_str().unwrap_or("?");
        let _ = write!(
            out,
            r#"<tr data-strategy="{name}"><th><i class="dot" style="background:{color}"></i>{name}</th>{}<td>{}</td>{}{}<td>{}</td>{}{}</tr>"#,
            cell("promptTokens", &s["promptTokens"]),
            vs(s, "promptTokens"),
            cell("cachedTokens", &s["cachedTokens"]),
            cell("effectiveCost", &s["effectiveCost"]),
            vs(s, "effectiveCost"),
            cell("factsReachable", &s["factsReachable"]),
            cell("factsInPrompt", &s["factsInPrompt"]),
            name = escape(name),
            color = strategy_color(name),
        );
    }
    out.push_str("</tbody></table></section>\n");
}

fn facts_table(out: &mut String, report: &Value, strategies: &[&str]) {
    let facts = report["facts"].as_array().map_or(&[][..], Vec::as_slice);
    out.push_str("<section><h2>Facts later questions need</h2>");
    if facts.is_empty() {
        out.push_str("<p class=\"muted\">The session annotates no facts (or the replay ran without <code>--report</code>).</p></section>\n");
        return;
    }
    out.push_str(
        "<p class=\"muted\">In prompt: the fact's text is in the prompt. One retrieve away: an id of the exchange it \
came from is in the prompt, on a line with a word of the question. Answer's words only: such an id is \
there next to words of the fact alone, which a model asking does not know yet. Search: where \
<code>context_search</code> with the question ranks the exchange the fact came from.</p>",
    );
    let figure = |id: &str, key: &str| {
        let n = report[key].as_u64().unwrap_or(0);
        format!("<span id=\"{id}\" data-value=\"{n}\">{n}</span>")
    };
    let _ = write!(
        out,
        "<p>Search ranks the fact's exchange in its top 3 for {} of {} facts, and for {} of the {} \
         the prompt does not hold, where search is the second path.</p>",
        figure("found-by-search", "factsFoundBySearch"),
        facts.len(),
        figure("outside-found", "factsOutsidePromptFoundBySearch"),
        figure("outside-prompt", "factsOutsidePrompt"),
    );
    if report["recallTokens"].as_u64().unwrap_or(0) > 0 {
        let _ = write!(
            out,
            "<p>The recall block (lines of earlier exchanges that match each question) took {} tokens              over the session, {} of them in hits that hold a fact their turn needs.</p>",
            figure("recall-tokens", "recallTokens"),
            figure("recall-with-fact", "recallTokensWithFact"),
        );
    }
    out.push_str(
        "<table id=\"facts\"><thead><tr><th>turn</th><th>fact</th><th>from</th><th>search</th>",
    );
    for s in strategies {
        let _ = write!(out, "<th>{}</th>", escape(s));
    }
    out.push_str("</tr></thead><tbody>");
    for f in facts {
        let _ =
            write!(
            out,
            "<tr class=\"fact\"><td>{}</td><td class=\"fact-text\"><code>{}</code></td><td>{}</td>\
             <td class=\"search-rank\" data-rank=\"{rank}\">{}</td>",
            escape(f["turn"].as_str().unwrap_or("")),
            escape(f["fact"].as_str().unwrap_or("")),
            escape(f["from"].as_str().unwrap_or("")),
            f["searchRank"].as_u64().map_or("not in the top 10".to_string(), |r| format!("#{r}")),
            rank = f["searchRank"].as_u64().map_or(String::new(), |r| r.to_string()),
        );
        for s in strategies {
            let status = f["status"][s].as_str().unwrap_or("-");
            let _ = write!(
                out,
                r#"<td data-strategy="{}" data-status="{status}"><span class="status {status}">{}</span></td>"#,
                escape(s),
                status_label(status),
                status = escape(status),
            );
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></section>\n");
}

/// Every per-turn figure the charts draw, as numbers.
fn turns_table(out: &mut String, turns: &[Value], strategies: &[&str]) {
    out.push_str(
        "<section><details><summary>Every turn's figures</summary><table id=\"turns\"><thead><tr><th>turn</th>",
    );
    for (key, _) in LAYERS {
        let _ = write!(out, "<th>{}</th>", layer_style(key).0);
    }
    let _ = write!(
        out,
        "<th>{}</th><th>prefix reused</th><th>trimmed</th>",
        OUTSIDE_LAYERS.0
    );
    for s in strategies {
        let _ = write!(out, "<th>{} tokens</th>", escape(s));
    }
    for s in strategies {
        let _ = write!(out, "<th>{} cumulative cost</th>", escape(s));
    }
    out.push_str("</tr></thead><tbody>");
    for t in turns {
        let turn = t["exchange"].as_str().unwrap_or("?");
        let _ = write!(out, r#"<tr data-turn="{0}"><th>{0}</th>"#, escape(turn));
        for (key, _) in LAYERS {
            out.push_str(&cell(key, &t["layers"][key]));
        }
        out.push_str(&cell("outsideLayers", &t["outsideLayers"]));
        out.push_str(&cell("prefixReused", &t["prefixReused"]));
        out.push_str(&cell("trimmed", &t["trimmed"]));
        for field in ["total", "cumulativeEffectiveCost"] {
            for s in strategies {
                let value = if *s == "ctxproxy" {
                    &t[field]
                } else {
                    &t["baselines"][s][field]
                };
                out.push_str(&cell(&format!("{s}:{field}"), value));
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></details></section>\n");
}

/// A number cell carrying the exact JSON figure in `data-value`.
fn cell(field: &str, value: &Value) -> String {
    format!(
        r#"<td class="num" data-field="{}" data-value="{value}">{}</td>"#,
        escape(field),
        num(value)
    )
}

fn num(value: &Value) -> String {
    value.as_f64().map_or("-".into(), group)
}

/// A figure rounded to a whole number, with thousands separators.
fn group(value: f64) -> String {
    let digits = format!("{:.0}", value.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if value < -0.5 {
        out.insert(0, '-');
    }
    out
}

fn percent(share: f64) -> String {
    format!("{:.1}%", 100.0 * share)
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 {
        return 1.0;
    }
    let magnitude = 10f64.powf(raw.log10().floor());
    let norm = raw / magnitude;
    let nice = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

/// An axis label: `25k`, `2.5k`, `1.2M`, or `1,500` under a step of a thousand;
/// as precise as the step needs.
fn compact(value: f64, step: f64) -> String {
    let (unit, suffix) = if value == 0.0 {
        return "0".into();
    } else if step >= 1e6 || value >= 1e6 && step >= 1e5 {
        (1e6, "M")
    } else if step >= 1e3 {
        (1e3, "k")
    } else if step >= 1.0 {
        return group(value);
    } else {
        return format!("{value:.1}");
    };
    let scaled = value / unit;
    let decimals = usize::from((step / unit).fract() != 0.0);
    format!("{scaled:.decimals$}{suffix}")
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const STYLE: &str = "
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif; color: #1f2937; background: #f8fafc; margin: 0; padding: 20px 32px 40px; }
header h1 { font-size: 22px; margin: 0 0 4px; }
header .file { font-weight: 400; color: #475569; font-family: ui-monospace, 'DejaVu Sans Mono', monospace; font-size: 18px; margin-left: 8px; }
h2 { font-size: 16px; margin: 0 0 2px; }
section { background: #fff; border: 1px solid #e2e8f0; border-radius: 8px; padding: 14px 18px; margin: 16px 0; max-width: 1120px; }
.muted { color: #64748b; margin: 2px 0 8px; }
code { font-family: ui-monospace, 'DejaVu Sans Mono', monospace; font-size: 12.5px; }
.cards { display: flex; gap: 14px; background: none; border: none; padding: 0; }
.card { flex: 1; background: #fff; border: 1px solid #e2e8f0; border-radius: 8px; padding: 12px 16px; }
.card .label { color: #475569; font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card .figure { font-size: 28px; font-weight: 650; color: #2563eb; margin: 2px 0; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 18px; margin: 6px 0 4px; font-size: 13px; }
.legend i, i.dot { display: inline-block; width: 12px; height: 12px; border-radius: 2px; margin-right: 6px; vertical-align: -1px; }
svg.chart { display: block; max-width: 100%; height: auto; }
svg .grid { stroke: #e2e8f0; }
svg .axis { stroke: #94a3b8; }
svg .tick { fill: #475569; font-size: 11px; }
svg .axis-title { fill: #334155; font-size: 12px; }
svg .line { fill: none; stroke-width: 1.8; }
svg .line.main { stroke-width: 3; }
svg .budget { stroke: #0f172a; stroke-dasharray: 6 4; stroke-width: 1.2; }
svg .budget-label { fill: #0f172a; font-size: 11px; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #e2e8f0; vertical-align: top; }
thead th { color: #475569; font-weight: 600; font-size: 12.5px; }
td.num { text-align: right; }
#summary td, #summary thead th:not(:first-child) { text-align: right; } #summary tbody th { font-weight: 600; }
#facts .fact-text { max-width: 460px; word-break: break-word; }
.status { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; white-space: nowrap; }
.status.in-prompt { background: #dcfce7; color: #166534; }
.status.one-retrieve-away { background: #fef3c7; color: #92400e; }
.status.answer-words-only { background: #ffedd5; color: #9a3412; }
.status.lost { background: #fee2e2; color: #991b1b; }
details summary { cursor: pointer; font-weight: 600; }
#turns { font-size: 12px; margin-top: 8px; }
footer { font-size: 12px; max-width: 1120px; }
";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report() -> Value {
        let turn = |x: u32, total: u32, prefix: u32, full: u32, cost: f64, full_cost: f64| {
            json!({
                "exchange": format!("x{x}"), "total": total, "prefixReused": prefix, "trimmed": 0,
                "outsideLayers": 20,
                "cumulativeEffectiveCost": cost,
                "layers": {"system": 20, "currentContext": 30, "recent": total - 90, "headers": 10,
                           "summaries": 0, "asks": 0, "references": 0, "recall": 0, "memory": 0, "projectRecent": 0, "projectRecall": 0, "input": 10},
                "baselines": {"full-history": {"total": full, "prefixReused": 0, "cumulativeEffectiveCost": full_cost}},
            })
        };
        json!({
            "sessionId": "s-test01", "budget": 1000,
            "turns": [turn(1, 400, 0, 400, 400.0, 400.0), turn(2, 900, 380, 1500, 958.0, 1900.0)],
            "facts": [{"turn": "x2", "fact": "E0308 <mismatched>", "from": "x1",
                       "status": {"ctxproxy": "one-retrieve-away", "full-history": "in-prompt"}}],
            "factsFoundBySearch": 0, "factsOutsidePrompt": 1, "factsOutsidePromptFoundBySearch": 0,
            "recallTokens": 120, "recallTokensWithFact": 45,
            "summary": [
                {"strategy": "ctxproxy", "promptTokens": 1300, "cachedTokens": 380, "effectiveCost": 958.0,
                 "factsReachable": 1, "factsInPrompt": 0, "facts": 1},
                {"strategy": "full-history", "promptTokens": 1900, "cachedTokens": 0, "effectiveCost": 1900.0,
                 "factsReachable": 1, "factsInPrompt": 1, "facts": 1}],
            "averagePrefixReuse": 0.4222,
            "sessionStats": {"exchanges": 2, "blobs": 1, "duplicateHits": 0, "rawBytes": 2048, "storedBytes": 900},
        })
    }

    #[test]
    fn the_page_of_a_small_report() {
        insta::assert_snapshot!(render(&report(), "two-turns.jsonl"));
    }

    #[test]
    fn the_page_fetches_nothing_and_keeps_the_json_inside_its_script() {
        let mut data = report();
        data["facts"][0]["fact"] = json!("</script><img src=http://x>");
        let page = render(&data, "a <b>.jsonl");
        assert!(page.contains("default-src 'none'"));
        assert!(page.contains("a &lt;b&gt;.jsonl"));
        let start = page.find(r#"id="report-data">"#).unwrap() + r#"id="report-data">"#.len();
        assert!(!page[..start].contains("<img"), "the fact is shown escaped");
        let end = start + page[start..].find("</script>").unwrap();
        let embedded: Value =
            serde_json::from_str(&page[start..end].replace("<\\/", "</")).unwrap();
        assert_eq!(embedded, data);
    }

    #[test]
    fn axis_steps_and_labels() {
        assert_eq!(nice_step(3_700.0), 5_000.0);
        assert_eq!(nice_step(0.3), 0.5);
        assert_eq!(nice_step(0.0), 1.0);
        assert_eq!(compact(25_000.0, 5_000.0), "25k");
        assert_eq!(compact(2_500.0, 500.0), "2,500");
        assert_eq!(compact(0.0, 5_000.0), "0");
        assert_eq!(compact(0.5, 0.5), "0.5");
        assert_eq!(compact(1_500_000.0, 500_000.0), "1.5M");
        assert_eq!(compact(40.0, 10.0), "40");
        assert_eq!(group(1_234_567.4), "1,234,567");
        assert_eq!(group(999.0), "999");
    }
}

"""`ctxproxy replay --report --html` in a real browser: headless Chromium loads the page offline,
the charts, tables and facts in its DOM carry exactly the `--json` report's figures, and a
screenshot shows the charts painted in the strategies' colours."""

import json
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

import ctxlib

CHROMIUM = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(b)), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (apt-get install chromium)")

WINDOW = (1400, 2600)
# The colours report_html.rs gives ctxproxy and full history.
CTXPROXY_BLUE = (0x25, 0x63, 0xEB)
FULL_HISTORY_RED = (0xDC, 0x26, 0x26)


def chromium(tmp_path, *args):
    """Headless Chromium with a profile of its own; nothing may be fetched."""
    argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}", "--no-first-run",
            "--host-resolver-rules=MAP * ~NOTFOUND", *map(str, args)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)


@pytest.fixture(scope="module", params=["coding-strsim", "bfcl-travel-tickets"])
def replayed(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(request.param)
    page = tmp / "report.html"
    out = subprocess.run([str(ctxlib.binary()), "replay", ctxlib.SESSIONS / f"{request.param}.jsonl",
                          "--report", "--json", "--html", page],
                         capture_output=True, text=True, check=True)
    return tmp, page, json.loads(out.stdout)


class Dom(HTMLParser):
    """Every element as (tag, attributes, ancestors' attributes); an element's own text is its
    attributes' `_text`, the text inside an element with an id is in `texts`."""

    def __init__(self):
        super().__init__()
        self.elements, self.stack, self.texts = [], [], {}

    def handle_starttag(self, tag, attrs):
        element = (tag, dict(attrs), [a for _, a in self.stack])
        self.elements.append(element)
        if tag not in ("meta", "link", "br", "img", "input", "hr"):
            self.stack.append((tag, element[1]))

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data):
        if self.stack:
            innermost = self.stack[-1][1]
            innermost["_text"] = innermost.get("_text", "") + data
        for _, attrs in self.stack:
            if "id" in attrs:
                self.texts[attrs["id"]] = self.texts.get(attrs["id"], "") + data

    def within(self, tag, **outer):
        """Elements `tag` with an ancestor carrying every attribute in `outer`."""
        return [attrs for t, attrs, up in self.elements if t == tag and any(
            all(a.get(k.replace("_", "-")) == v for k, v in outer.items()) for a in up)]


@pytest.fixture(scope="module")
def dom(replayed):
    tmp, page, _ = replayed
    dumped = chromium(tmp, "--dump-dom", page.as_uri()).stdout
    parsed = Dom()
    parsed.feed(dumped)
    assert parsed.within("svg"), "the page has no chart: " + dumped[:500]
    return parsed


def per_strategy(report, strategy, field):
    return [(t["exchange"], t[field] if strategy == "ctxproxy" else t["baselines"][strategy][field])
            for t in report["turns"]]


def strategies(report):
    return [s["strategy"] for s in report["summary"]]


@pytest.mark.parametrize("chart,field", [("chart-tokens", "total"),
                                         ("chart-cost", "cumulativeEffectiveCost")])
def test_every_point_of_a_line_chart_is_the_json_figure(replayed, dom, chart, field):
    _, _, report = replayed
    assert strategies(report) == ["ctxproxy", "full-history", "cline", "sliding-window"]
    for s in strategies(report):
        points = [(attrs["data-turn"], json.loads(attrs["data-value"]))
                  for tag, attrs, up in dom.elements
                  if tag == "circle" and any(a.get("data-strategy") == s for a in up)
                  and any(a.get("id") == chart for a in up)]
        assert points == per_strategy(report, s, field), f"{chart}: {s}"


def test_the_stacked_bars_are_the_layers_of_every_turn(replayed, dom):
    _, _, report = replayed
    drawn = {}
    for tag, attrs, up in dom.elements:
        if tag == "rect" and "data-layer" in attrs:
            turn = next(a["data-turn"] for a in reversed(up) if "data-turn" in a)
            drawn.setdefault(turn, {})[attrs["data-layer"]] = json.loads(attrs["data-tokens"])
    expected = {t["exchange"]: {k: v for k, v in {**t["layers"], "outsideLayers": t["outsideLayers"]}.items()
                                if v > 0}
                for t in report["turns"]}
    assert drawn == expected
    # Stacked up to the prompt's total: nothing charged is left out of the bar.
    assert [sum(drawn[t["exchange"]].values()) for t in report["turns"]] == \
        [t["total"] for t in report["turns"]]


def test_the_summary_and_turn_tables_hold_the_json_figures(replayed, dom):
    _, _, report = replayed
    for s in report["summary"]:
        cells = {c["data-field"]: json.loads(c["data-value"])
                 for c in dom.within("td", data_strategy=s["strategy"]) if "data-field" in c}
        assert cells == {k: s[k] for k in ("promptTokens", "cachedTokens", "effectiveCost",
                                            "factsReachable", "factsInPrompt")}
        # What a reader sees is the same figure, rounded, with thousands separators.
        shown = {c["data-field"]: c["_text"] for c in dom.within("td", data_strategy=s["strategy"])
                 if "data-field" in c}
        assert shown == {k: f"{round(v):,}" for k, v in cells.items()}
    for t in report["turns"]:
        cells = {c["data-field"]: json.loads(c["data-value"]) for c in dom.within("td", data_turn=t["exchange"])}
        expected = {**t["layers"], "outsideLayers": t["outsideLayers"],
                    "prefixReused": t["prefixReused"], "trimmed": t["trimmed"],
                    "ctxproxy:total": t["total"],
                    "ctxproxy:cumulativeEffectiveCost": t["cumulativeEffectiveCost"]}
        for name, b in t["baselines"].items():
            expected[f"{name}:total"] = b["total"]
            expected[f"{name}:cumulativeEffectiveCost"] = b["cumulativeEffectiveCost"]
        assert cells == expected, t["exchange"]


def test_the_facts_table_gives_every_fact_its_status_under_every_strategy(replayed, dom):
    _, _, report = replayed
    assert report["facts"], "the fixture annotates facts"
    rows = [attrs for tag, attrs, _ in dom.elements if tag == "tr" and attrs.get("class") == "fact"]
    assert len(rows) == len(report["facts"])
    statuses = [(attrs["data-strategy"], attrs["data-status"]) for tag, attrs, up in dom.elements
                if tag == "td" and "data-status" in attrs]
    expected = [(s, f["status"][s]) for f in report["facts"] for s in strategies(report)]
    assert statuses == expected
    ranks = [attrs["data-rank"] for tag, attrs, _ in dom.elements
             if tag == "td" and attrs.get("class") == "search-rank"]
    assert ranks == ["" if f["searchRank"] is None else str(f["searchRank"]) for f in report["facts"]]
    figures = {attrs["id"]: int(attrs["data-value"]) for tag, attrs, _ in dom.elements
               if tag == "span" and attrs.get("id") in ("found-by-search", "outside-found", "outside-prompt")}
    assert figures == {"found-by-search": report["factsFoundBySearch"],
                       "outside-found": report["factsOutsidePromptFoundBySearch"],
                       "outside-prompt": report["factsOutsidePrompt"]}


def test_the_page_embeds_the_json_report_and_fetches_nothing(replayed, dom):
    _, page, report = replayed
    assert json.loads(dom.texts["report-data"]) == report
    html = page.read_text()
    for remote in ("http://", "https://", "//cdn", "<link", "src="):
        assert remote not in html.split('id="report-data"')[0], remote


def test_a_screenshot_shows_the_charts(replayed):
    from PIL import Image  # tests/requirements.txt

    tmp, page, _ = replayed
    png = tmp / "report.png"
    chromium(tmp, f"--screenshot={png}", f"--window-size={WINDOW[0]},{WINDOW[1]}", page.as_uri())
    assert png.stat().st_size > 50_000, "a blank page compresses to a few KB"
    with Image.open(png) as image:
        assert image.size == WINDOW
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
    count = {rgb: n for n, rgb in colours}
    # ctxproxy's line, bars and legend; full history's line.
    assert count.get(CTXPROXY_BLUE, 0) > 2_000
    assert count.get(FULL_HISTORY_RED, 0) > 500

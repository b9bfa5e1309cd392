"""Where `ctx/search`'s scoring puts each fact's source exchange, for scorings other than the
shipped one: the measure the full-text index's split was picked by (docs/ASSEMBLY.md, "What
search misses").

Replays every single-session fixture into a store of its own, then, for every fact a later
question needs, searches the exchanges before that question with the question's words, scored
each way below, and counts the facts whose source ranks in the top 3 (over all facts, and over
those the replay report says the prompt does not hold):

- `split`: the store as it is, header and summary (`exchange_gist`) scored apart from the text
  (`exchange_text`) and the two added, the gist's score times a weight;
- `one table`: the same rows put back into one FTS5 table of (header, summary, body), scored by
  one `bm25` with per-column weights, as the store did before the split.

Headers are the stored final ones, not those each question saw, so the counts differ a little
from `replay --report`'s.

    python3 tests/measure_search_ranking.py target/release/ctxproxy
"""

import json
import re
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "sessions"
STOPWORDS_RS = Path(__file__).resolve().parent.parent / "server/core/src/summary/sentences.rs"
TOP = 3


def stopwords():
    block = STOPWORDS_RS.read_text().split("STOPWORDS: &[&str] = &[")[1].split("];")[0]
    return set(re.findall(r'"([^"]+)"', block))


def fts_query(question, stop):
    """The store's query (`read::fts_query`): telling words, and telling pairs as phrases."""
    words = [w for w in re.split(r"[^\w]", question) if w]
    telling = [w for w in words if w.lower() not in stop] or words
    pairs = [f'"{a} {b}"' for a, b in zip(words, words[1:])
             if a.lower() not in stop and b.lower() not in stop]
    return " OR ".join([f'"{w}"' for w in telling] + pairs) or None


def one_table(store):
    """The store's rows in one (header, summary, body) table, as before the split."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(header, summary, body, tokenize = 'porter unicode61')")
    db.execute("CREATE TABLE e (id INTEGER PRIMARY KEY, seq INTEGER)")
    rows = store.execute("SELECT e.id, e.seq, g.header, g.summary, b.body FROM exchanges e "
                         "JOIN exchange_gist g ON g.rowid = e.id JOIN exchange_text b ON b.rowid = e.id")
    for rowid, seq, header, summary, body in rows:
        db.execute("INSERT INTO t (rowid, header, summary, body) VALUES (?, ?, ?, ?)",
                   (rowid, header, summary, body))
        db.execute("INSERT INTO e VALUES (?, ?)", (rowid, seq))
    return db


def ranked_one_table(db, query, before, weights):
    h, s, b = weights
    rows = db.execute(f"SELECT e.seq, -bm25(t, {h}, {s}, {b}) AS score FROM t JOIN e ON e.id = t.rowid "
                      "WHERE t MATCH ? AND e.seq < ? ORDER BY score DESC, e.seq LIMIT 10", (query, before))
    return [seq for seq, _ in rows]


def ranked_split(store, query, before, gist_weight):
    scores = {}
    for table, score in (("exchange_gist", f"{gist_weight} * -bm25(exchange_gist, 4.0, 2.0)"),
                         ("exchange_text", "-bm25(exchange_text)")):
        rows = store.execute(f"SELECT e.seq, {score} FROM {table} JOIN exchanges e ON e.id = {table}.rowid "
                             f"WHERE {table} MATCH ? AND e.seq < ?", (query, before))
        for seq, value in rows:
            scores[seq] = scores.get(seq, 0.0) + value
    return [seq for seq, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))][:10]


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else "target/release/ctxproxy"
    stop = stopwords()
    scorings = {f"split, gist x{w}": (lambda st, ot, q, n, w=w: ranked_split(st, q, n, w))
                for w in (1, 0.5, 0.2, 0.1)}
    scorings.update({f"one table {w}": (lambda st, ot, q, n, w=w: ranked_one_table(ot, q, n, w))
                     for w in ((4, 2, 1), (4, 2, 0.5), (1, 1, 1), (8, 2, 1))})
    found = {name: [0, 0] for name in scorings}
    total = outside = 0
    with tempfile.TemporaryDirectory() as tmp:
        for fixture in sorted(FIXTURES.glob("*.jsonl")):
            lines = [json.loads(line) for line in fixture.read_text().splitlines() if line.strip()]
            if any("session" in line for line in lines):
                continue  # a file of several sessions: its forks share ids
            path = Path(tmp) / fixture.stem
            subprocess.run([binary, "replay", fixture, "--store", path], check=True, capture_output=True)
            report = json.loads(subprocess.run([binary, "replay", fixture, "--report", "--json"],
                                               check=True, capture_output=True, text=True).stdout)
            in_prompt = {(f["turn"], f["from"], f["fact"]) for f in report["facts"]
                         if f["status"]["ctxproxy"] == "in-prompt"}
            store = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            old = one_table(store)
            for turn, line in enumerate(lines, 1):
                query = fts_query(line["messages"][0]["content"], stop)
                for need in line.get("needs", []):
                    hidden = (f"x{turn}", f"x{need['from']}", need["fact"]) not in in_prompt
                    total += 1
                    outside += hidden
                    for name, rank in scorings.items():
                        hit = query is not None and need["from"] in rank(store, old, query, turn)[:TOP]
                        found[name][0] += hit
                        found[name][1] += hit and hidden
    for name, (hits, hidden_hits) in found.items():
        print(f"{name:24} top {TOP}: {hits}/{total}; not in the prompt {hidden_hits}/{outside}")


if __name__ == "__main__":
    main()

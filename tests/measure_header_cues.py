"""How often the header of a fact's source exchange carries a word a person would ask with.

For every fact that a later question of a shipped fixture needs (`needs` in
fixtures/sessions/*.jsonl), replays the fixture into a store of its own and
checks the final header of the exchange the fact comes from against the
need's cue words (or, without cues, the question's words): a hit when a cue
word and a header word are equal or, both of four letters or more, one
contains the other ("commit" / "commits"). This is the measure the header's
keyword choice was picked by (docs/ASSEMBLY.md, "Choosing a header's words").

    python3 tests/measure_header_cues.py target/release/ctxproxy [--misses]
"""

import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "sessions"
STOP = set(
    "the a an and or of to in on at for with by is was were be what which did does do how it its "
    "this that from as".split()
)


def words(text):
    return {w for w in re.findall(r"[a-z0-9_.\-']+", text.lower()) if w not in STOP and len(w) > 1}


def hit(cues, header):
    return any(
        c == w or (len(c) >= 4 and len(w) >= 4 and (c in w or w in c))
        for c in cues
        for w in words(header)
    )


def main():
    binary, show_misses = sys.argv[1], "--misses" in sys.argv
    total = hits = 0
    with tempfile.TemporaryDirectory() as tmp:
        for fixture in sorted(FIXTURES.glob("*.jsonl")):
            store = os.path.join(tmp, fixture.stem + ".db")
            subprocess.run([binary, "replay", str(fixture), "--store", store], check=True, capture_output=True)
            titles, needs = {}, []
            for line in fixture.read_text().splitlines():
                row = json.loads(line)
                if "session" in row:
                    titles[row["session"]["name"]] = row["session"].get("title")
                    continue
                for need in row.get("needs") or []:
                    needs.append((row.get("in", "main"), need, row["messages"][0]["content"]))
            db = sqlite3.connect(store)
            ids = {title: sid for sid, title in db.execute("SELECT id, title FROM sessions")}
            fixture_hits = 0
            for name, need, question in needs:
                sid = ids[fixture.name] if name == "main" else ids[titles[name]]
                (header,) = db.execute(
                    "SELECT header FROM exchanges WHERE session_id = ? AND seq = ?", (sid, need["from"])
                ).fetchone()
                cues = set().union(*map(words, need["cues"])) if need.get("cues") else words(question)
                if hit(cues, header):
                    fixture_hits += 1
                elif show_misses:
                    print(f"  miss {fixture.stem}/{name} x{need['from']}: cues {sorted(cues)}, header {header!r}")
            if needs:
                print(f"{fixture.stem}: {fixture_hits}/{len(needs)}")
            total, hits = total + len(needs), hits + fixture_hits
    print(f"headers carrying a cue word: {hits}/{total}")


if __name__ == "__main__":
    main()

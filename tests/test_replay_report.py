"""The replay report's facts: where each fact a later question needs stands in the prompt, and
where `ctx/search` with the question's words ranks the exchange it came from (searched before the
question is stored, as a model would)."""

import json

from ctxlib import SESSIONS
from test_store_disk import cli


def exchange(question, answer, tool_output=None, needs=None):
    messages = [{"role": "user", "content": question}]
    if tool_output is not None:
        messages.append({"role": "assistant", "content": "Looking.",
                         "toolCalls": [{"id": "c1", "name": "run_command",
                                        "arguments": {"command": "cat deploy.conf"}}]})
        messages.append({"role": "tool", "toolCallId": "c1", "name": "run_command",
                         "content": tool_output})
    messages.append({"role": "assistant", "content": answer})
    out = {"messages": messages}
    if needs:
        out["needs"] = needs
    return json.dumps(out)


def test_the_report_ranks_each_facts_exchange_by_a_search_with_the_question(tmp_path):
    config = "\n".join(f"listen_port = {8000 + i}\nworker_pool = {i}" for i in range(300))
    lines = [
        exchange("Show me the zanzibar deploy config.", "It sets 300 listeners.", config + "\nlisten_port = 8631\n"),
        *[exchange(f"Rename helper number {i} in utils.", f"Renamed helper {i}.") for i in range(2, 8)],
        exchange("Which port did the zanzibar deploy config end on?", "8631.", needs=[
            {"fact": "listen_port = 8631", "from": 1, "cues": ["port"]},
            {"fact": "Renamed helper 3.", "from": 3, "cues": []},
        ]),
    ]
    session = tmp_path / "s.jsonl"
    session.write_text("\n".join(lines) + "\n")
    report = json.loads(cli("replay", session, "--report", "--json").stdout)
    facts = {f["fact"]: f for f in report["facts"]}
    # The zanzibar question's words are in x1 (question and output): first.
    assert facts["listen_port = 8631"]["searchRank"] == 1, facts
    # Nothing of "which port ... zanzibar deploy config" is in x3.
    assert facts["Renamed helper 3."]["searchRank"] is None, facts
    assert report["factsFoundBySearch"] == 1
    # Search is the second path for the facts the prompt does not hold: the port's, whose digest
    # leaves the last line out.
    outside = [f for f in report["facts"] if f["status"]["ctxproxy"] != "in-prompt"]
    assert [f["fact"] for f in outside] == ["listen_port = 8631"], report["facts"]
    assert (report["factsOutsidePrompt"], report["factsOutsidePromptFoundBySearch"]) == (1, 1)
    text = cli("replay", session, "--report").stdout
    assert "search #1" in text and "search not in the top 10" in text, text
    assert "search with the question ranks the source in its top 3 for 1/2 " \
        "(1/1 of those not in the prompt)" in text, text


def test_a_file_of_several_sessions_replays_each_with_its_forks_and_supersessions(tmp_path):
    def line(ask, **extra):
        return json.dumps({"messages": [{"role": "user", "content": ask},
                                        {"role": "assistant", "content": f"Done: {ask}."}], **extra})
    lines = [
        line("ANALYZE the rational roots"),
        line("ANALYZE the sign changes"),
        json.dumps({"session": {"name": "b1", "title": "other branch", "fork": {"from": "main", "atExchange": 1}}}),
        line("DECOMPOSE into a depressed cubic", **{"in": "b1", "supersedes": ["x1"]}),
        line("SYNTHESIZE what we know", supersedes=["x1-x2"]),
        line("Which roots did the first analysis rule out?",
             needs=[{"fact": "ANALYZE the rational roots", "from": 1, "cues": ["roots"]}]),
    ]
    session = tmp_path / "tree.jsonl"
    session.write_text("\n".join(lines) + "\n")
    store = tmp_path / "s.db"
    report = json.loads(cli("replay", session, "--report", "--json", "--store", store).stdout)
    sessions = {s["name"]: s for s in report["sessions"]}
    assert list(sessions) == ["main", "b1"]
    main, b1 = sessions["main"], sessions["b1"]
    assert (main["depth"], main["exchanges"], main["superseded"]) == (0, 4, ["x1-x2 superseded by x3"]), main
    assert "parent" not in main
    assert b1["parent"] == {"name": "main", "kind": "fork", "atExchange": 1}, b1
    # A fork is as deep as its parent.
    assert (b1["depth"], b1["exchanges"], b1["superseded"]) == (0, 2, ["x1 superseded by x2"]), b1
    # Each session's table holds its own turns; the facts check runs per session.
    assert [t["exchange"] for t in main["turns"]] == ["x1", "x2", "x3", "x4"]
    assert [t["exchange"] for t in b1["turns"]] == ["x2"]
    assert [f["turn"] for f in main["facts"]] == ["x4"] and b1["facts"] == []
    # main's x4 prompt showed x1-x2 as headers only: two demotions, nothing else trimmed.
    assert [t["trimmed"] for t in main["turns"]] == [0, 0, 0, 2], main["turns"]
    text = cli("replay", session, "--report").stdout
    assert "== session main (" in text and ": fork of main at x1, depth 0, 2 exchanges; x1 superseded by x2" in text, text
    # The fork's path goes through main's x1.
    path = json.loads(cli("path", b1["sessionId"], "--json", "--store", store).stdout)
    assert [(s["sessionId"], [x["id"] for x in s["exchanges"]]) for s in path["sessions"]] == [
        (main["sessionId"], ["x1"]), (b1["sessionId"], ["x2"])]
    shown = cli("inspect", main["sessionId"], "x2", "--store", store).stdout
    assert "superseded by x3" in shown, shown


def test_via_proxy_names_every_time_column_and_times_each_call_against_a_direct_call():
    """`replay --via-proxy` as a reader sees it: the text table's columns each named, one value per
    column per call, the totals saying which figure is which; the JSON carries the earlier keys and
    the direct call's, per call and in total."""
    session = SESSIONS / "minimal.jsonl"
    text = cli("replay", session, "--via-proxy").stdout
    table, totals = text.split("\n\n", 1)
    header, *rows = table.splitlines()
    columns = ["call", "exchange", "client sent", "upstream got", "%", "added ms", "store ms",
               "direct ms", "over direct ms"]
    assert [c for c in (h.strip() for h in header.split("  ")) if c] == columns, header
    report = json.loads(cli("replay", session, "--via-proxy", "--json").stdout)
    assert len(rows) == len(report["calls"]) > 0
    assert all(len(r.split()) == len(columns) for r in rows), rows
    assert "time the proxy added (its wait less the upstream's own time)" in totals
    assert "a direct call (the same request straight to the upstream" in totals
    assert "added over a direct call (per call, added less direct; signed)" in totals
    per_call = {"exchange", "sentTokens", "forwardedTokens", "reportedInputTokens", "addedMs", "storeMs",
                "waitMs", "upstreamMs", "directWaitMs", "directUpstreamMs", "directMs", "addedOverDirectMs",
                "beyondStoreOverDirectMs"}
    assert all(set(c) == per_call for c in report["calls"]), report["calls"][0]
    # The upstream states what it counted; the replies the client got carry it back.
    assert all(c["reportedInputTokens"] == c["forwardedTokens"] for c in report["calls"])
    assert report["total"]["reportedInputTokens"] == report["total"]["forwardedTokens"]
    for key in ["added", "beyondStore", "direct", "addedOverDirect", "beyondStoreOverDirect"]:
        assert report["total"][f"{key}MsP50"] <= report["total"][f"{key}MsP99"], key

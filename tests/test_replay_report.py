"""The replay report's facts: where each fact a later question needs stands in the prompt, and
where `ctx/search` with the question's words ranks the exchange it came from (searched before the
question is stored, as a model would)."""

import json

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
    text = cli("replay", session, "--report").stdout
    assert "search #1" in text and "search not in the top 10" in text, text
    assert "search with the question ranks the source in its top 3 for 1/2" in text, text

"""The recall block: lines of earlier exchanges that match the question's distinctive words,
in the prompt with the question (the real binary over stdio, a real store, the real tokenizer)."""

import ctxlib

# A compiler error buried in a long build log, then talk about other things.
BUILD_LOG = "\n".join(
    [f"   Compiling dep{i} v0.{i}.0" for i in range(40)]
    + ["error[E0599]: no method named `frobnicate` found for struct `Widget` in the current scope",
       "  --> src/widget.rs:88:14",
       "   |",
       "88 |         self.frobnicate(cfg)",
       "   |              ^^^^^^^^^^ method not found in `Widget`"]
    + [f"   Compiling tail{i} v1.{i}.0" for i in range(30)]
    + ["error: could not compile `shop` (lib) due to 1 previous error"]
)
# Enough later exchanges, and long enough, that the build leaves the recent tail (shown whole, it
# needs no recall): past the dialogue's share of the budget, three quarters of it.
TOPICS = [f"{thing} {n}" for n in range(4) for thing in (
    "the release notes", "the logo colours", "a typo in README", "the licence year", "the CI badge",
    "the changelog order", "a docs link", "the issue template", "the crate description", "the keywords list")]
NOTES = "I checked every file that mentions it and kept the wording we agreed on last week. " * 30
QUESTION = {"role": "user", "content": "Which file had the frobnicate error on Widget again, and which line?"}


async def _session(ctx, **params):
    sid = await ctx.open_session(title="recall", **params)
    await ctx.append(sid, [{"role": "user", "content": "Set up the shop crate."},
                           {"role": "assistant", "content": "Created src/lib.rs and src/widget.rs."}])
    await ctx.append(sid, ctxlib.tool_exchange("Build it.", BUILD_LOG, call_id="call_build",
                                               tool="run_command", args={"command": "cargo build"}))
    for i, topic in enumerate(TOPICS):
        await ctx.append(sid, [{"role": "user", "content": f"Let's tidy {topic}."},
                               {"role": "assistant", "content": f"Done: {topic} is tidied. " + NOTES}])
    return sid


async def _assemble(ctx, sid, **params):
    return await ctx.req("ctx/assemble", {"sessionId": sid, "format": "text", **params})


async def test_the_question_brings_the_matching_lines_with_their_ids(ctx):
    sid = await _session(ctx)
    a = await _assemble(ctx, sid, input=QUESTION)
    hits = a.get("recall", [])
    assert [h["id"] for h in hits][:1] == ["x2"], hits
    hit = hits[0]
    assert {"frobnicate", "widget"} <= set(hit["words"]), hit
    # The output's own line numbers and blob id, so the model can fetch more.
    assert "src/widget.rs:88:14" in hit["text"] and "b3:" in hit["text"], hit["text"]
    assert " lines 40-43:\n   40 |" in hit["text"], hit["text"]
    layer = next(l for l in a["layers"] if l["layer"] == "recall")
    assert layer["tokens"] == a["tokens"]["layers"]["recall"] > sum(h["tokens"] for h in hits)
    assert hit["text"] in a["text"]
    # ctx/explain says the same, from the prompt record.
    explained = await ctx.req("ctx/explain", {"sessionId": sid, "promptId": a["promptId"]})
    assert explained["recall"] == hits


async def test_every_call_of_one_exchange_gets_the_same_block(ctx):
    sid = await _session(ctx)
    first = await _assemble(ctx, sid, input=QUESTION)
    # The agent's tool loop: the question is appended with a call, its result is the next input.
    await ctx.append(sid, [QUESTION, {"role": "assistant", "content": "Looking.",
                                      "toolCalls": [{"id": "call_rg", "name": "run_command",
                                                     "arguments": {"command": "rg -n frobnicate src"}}]}])
    result = {"role": "tool", "toolCallId": "call_rg", "name": "run_command",
              "content": "src/widget.rs:88:        self.frobnicate(cfg)\n"}
    second = await _assemble(ctx, sid, input=result)
    third = await _assemble(ctx, sid, input=result)
    assert first["recall"] and first["recall"] == second["recall"] == third["recall"]
    # Within the loop the block sits before the exchange it serves, so the calls share it.
    text = second["text"]
    assert text.index("## Recalled for this question") < text.index("Which file had the frobnicate")


async def test_nothing_is_recalled_without_a_distinctive_word(ctx):
    sid = await _session(ctx)
    a = await _assemble(ctx, sid, input={"role": "user", "content": "Thanks, run it again please."})
    assert "recall" not in a
    assert a["tokens"]["layers"]["recall"] == 0
    # A word no earlier exchange holds recalls nothing either.
    b = await _assemble(ctx, sid, input={"role": "user", "content": "What about the zanzibar quux?"})
    assert "recall" not in b


async def test_the_block_keeps_to_its_cap(store):
    async with ctxlib.running(store, {"layers": {"recallMax": 120}}) as ctx:
        sid = await _session(ctx)
        a = await _assemble(ctx, sid, input=QUESTION)
        # A hit takes at most half the block: its passage is cut to fit.
        assert [h["id"] for h in a["recall"]] == ["x2"]
        assert a["recall"][0]["tokens"] <= 60 and a["tokens"]["layers"]["recall"] <= 120
    async with ctxlib.running(store, {"layers": {"recallMax": 0}}) as ctx:
        sid = await _session(ctx)
        a = await _assemble(ctx, sid, input=QUESTION)
        assert "recall" not in a and a["tokens"]["layers"]["recall"] == 0
    async with ctxlib.running(store) as ctx:
        sid = await _session(ctx)
        small = await _assemble(ctx, sid, input=QUESTION, budget=1_000)
        large = await _assemble(ctx, sid, input=QUESTION, budget=8_000)
        # The default cap is a share of the budget: what 1,000 has no room for, 8,000 shows.
        assert "recall" not in small and large["recall"][0]["id"] == "x2"

"""8. Full-text search over the archive."""

import ctxlib


async def test_search_finds_tool_output_words_and_headers(ctx):
    a = await ctx.open_session(workspace="/ws/a", title="a")
    b = await ctx.open_session(workspace="/ws/b", title="b")
    await ctx.append(a, ctxlib.tool_exchange("Run the build", "error[E0425]: cannot find value `frobnicator_qx` in this scope\n"))
    await ctx.append(a, [{"role": "user", "content": "Now tidy the docs"}, {"role": "assistant", "content": "Tidied."}])
    await ctx.append(a, [{"role": "user", "content": "Something unrelated about colours"}])
    await ctx.append(b, ctxlib.tool_exchange("Build b", "warning: unused variable `frobnicator_qx`\n"))

    # A word that appears only in a tool output.
    hits = (await ctx.req("ctx/search", {"sessionId": a, "query": "frobnicator_qx"}))["hits"]
    assert [h["id"] for h in hits] == ["x1"], hits
    assert hits[0]["sessionId"] == a and isinstance(hits[0]["score"], (int, float)) and hits[0]["header"]
    # It carries the words around the match, from the raw tool output.
    assert "cannot find value frobnicator_qx in this scope" in hits[0]["snippet"].replace("`", ""), hits

    # A word only in a header written by housekeeping.
    await ctx.req("ctx/housekeeping", {"sessionId": a, "exchangeId": "x2", "header": "docs polish wombatization"})
    hits = (await ctx.req("ctx/search", {"sessionId": a, "query": "wombatization"}))["hits"]
    assert [h["id"] for h in hits] == ["x2"], hits
    assert hits[0]["header"] == "docs polish wombatization"

    # Across sessions, and scoped by workspace.
    hits = (await ctx.req("ctx/search", {"query": "frobnicator_qx"}))["hits"]
    assert {(h["sessionId"], h["id"]) for h in hits} == {(a, "x1"), (b, "x1")}, hits
    hits = (await ctx.req("ctx/search", {"workspace": "/ws/b", "query": "frobnicator_qx"}))["hits"]
    assert {(h["sessionId"], h["id"]) for h in hits} == {(b, "x1")}, hits
    assert (await ctx.req("ctx/search", {"query": "frobnicator_qx", "limit": 1}))["hits"].__len__() == 1
    assert (await ctx.req("ctx/search", {"sessionId": a, "query": "zzzznotthere"}))["hits"] == []
    # Query syntax characters do not break the search.
    for q in ['"unclosed', "a AND", "(", "*", "E0425:", "NEAR(", "-x", "col:val"]:
        try:
            r = await ctx.req("ctx/search", {"sessionId": a, "query": q})
            assert isinstance(r["hits"], list)
        except ctxlib.JsonRpcException as e:  # a clear bad-params error is fine, a store error is not
            assert e.code == -32602, (q, e.code, e.message)
    hits = (await ctx.req("ctx/search", {"sessionId": a, "query": "E0425"}))["hits"]
    assert [h["id"] for h in hits] == ["x1"], hits

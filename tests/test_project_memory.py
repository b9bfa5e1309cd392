"""Project memory over LSP (the real binary over stdio, a real store): a new session of a project
sees what an earlier session of it found, by the standing section and by recall; a session of
another project, or with memory off, sees nothing of it; `ctxproxy forget` removes it; ids that
name their session retrieve across the project and nowhere else."""

import json
import subprocess

import ctxlib

PROJECT = "/home/dev/inistore"
OTHER = "/home/dev/harbourlane"
LOG = "\n".join(
    [f"cc -c src/part{i}.c" for i in range(30)]
    + ["/usr/bin/ld: libinistore.a(ini.o): undefined reference to `__asan_report_load8'",
       "collect2: error: ld returned 1 exit status",
       "make: *** [Makefile:41: asan] Error 1"]
)
FACT = "undefined reference to `__asan_report_load8'"
DECISION = "We keep the API in size_t; no inline comments in values, ever."
QUESTION = {"role": "user", "content": "Why did the asan build fail to link last time?"}


async def _first_sitting(ctx, workspace: str) -> str:
    sid = await ctx.open_session(title="first sitting", workspace=workspace)
    await ctx.append(sid, ctxlib.tool_exchange("Build the asan target.", LOG, call_id="call_asan",
                                               tool="run_command", args={"command": "make asan"}))
    await ctx.append(sid, [{"role": "user", "content": DECISION},
                           {"role": "assistant", "content": "Agreed: size_t, and no inline comments."}])
    return sid


async def _first_prompt(ctx, sid: str) -> dict:
    return await ctx.req("ctx/assemble", {"sessionId": sid, "format": "text", "input": QUESTION})


def _layer(prompt: dict, name: str) -> dict:
    return next(l for l in prompt["layers"] if l["layer"] == name)


async def test_a_new_session_of_the_project_gets_the_earlier_sessions_fact(ctx):
    first = await _first_sitting(ctx, PROJECT)
    second = await ctx.open_session(title="next day", workspace=PROJECT)
    prompt = await _first_prompt(ctx, second)
    text = prompt["text"]
    # Recall over the project: the sitting's lines that match, under ids naming the first
    # session, one retrieve from the linker's error.
    assert f"{first}/x1 (asan, build):" in text, text
    recalled = _layer(prompt, "projectRecall")
    assert recalled["tokens"] > 0 and recalled["items"][0]["id"] == f"{first}/x1", recalled
    # The standing section: what the person stated, under its id.
    memory = _layer(prompt, "memory")
    assert f"{first}/x2 the person said: {DECISION}" in text, text
    assert memory["tokens"] > 0
    # Memory's ids are followed with the context tools: the prompt is layered and offers them.
    assert prompt["shape"] == "layered", prompt["shape"]
    item = await ctx.retrieve_one(second, f"{first}/x1")
    assert FACT in item["text"]
    # The model's search covers the project, its hits named by session.
    found = await ctx.req("ctx/search", {"sessionId": second, "project": True, "query": "asan link"})
    assert f"{first}/x1" in [h["id"] for h in found["hits"]], found
    alone = await ctx.req("ctx/search", {"sessionId": second, "query": "asan link"})
    assert alone["hits"] == [], alone


async def test_the_standing_section_is_the_same_on_every_prompt_of_a_session(ctx):
    await _first_sitting(ctx, PROJECT)
    second = await ctx.open_session(title="next day", workspace=PROJECT)
    sections = []
    for i in range(3):
        prompt = await _first_prompt(ctx, second) if i == 0 else await ctx.req(
            "ctx/assemble", {"sessionId": second, "format": "text",
                             "input": {"role": "user", "content": f"And item {i}?"}})
        sections.append([m for m in prompt["text"].split("\n\n") if "earlier sessions did" in m])
        await ctx.append(second, [{"role": "user", "content": f"Question {i}"},
                                  {"role": "assistant", "content": f"Answer {i}"}])
    # A session written meanwhile does not change it: only exchanges before this session's own count.
    third = await _first_sitting(ctx, PROJECT)
    assert third
    prompt = await ctx.req("ctx/assemble", {"sessionId": second, "format": "text"})
    sections.append([m for m in prompt["text"].split("\n\n") if "earlier sessions did" in m])
    assert sections[0] and all(s == sections[0] for s in sections), sections


async def test_another_project_and_memory_off_see_nothing(ctx, store):
    first = await _first_sitting(ctx, PROJECT)
    stranger = await ctx.open_session(title="other project", workspace=OTHER)
    prompt = await _first_prompt(ctx, stranger)
    assert first not in prompt["text"] and DECISION not in prompt["text"]
    assert _layer(prompt, "memory")["tokens"] == 0 and _layer(prompt, "projectRecall")["tokens"] == 0
    (item,) = await ctx.retrieve(stranger, [f"{first}/x1"])
    assert "no session" in item["error"]["message"], item
    found = await ctx.req("ctx/search", {"sessionId": stranger, "project": True, "query": "asan link"})
    assert found["hits"] == [], found
    # No project: nothing either.
    loner = await ctx.open_session(title="no project")
    prompt = await _first_prompt(ctx, loner)
    assert first not in prompt["text"]
    await ctxlib.stop(ctx)
    async with ctxlib.running(store, {"memory": False}) as off:
        second = await off.open_session(title="memory off", workspace=PROJECT)
        prompt = await _first_prompt(off, second)
        assert first not in prompt["text"] and DECISION not in prompt["text"]
        assert prompt["shape"] == "whole", prompt["shape"]


async def test_the_client_root_folder_is_the_project_of_a_session_without_one(store, tmp_path):
    root = tmp_path / "app"
    root.mkdir()
    ctx = await ctxlib.start(store)
    try:
        first = await _first_sitting(ctx, str(root))
    finally:
        await ctxlib.stop(ctx)
    from lsprotocol import types
    client = await ctxlib.ClientServerConfig(
        server_command=ctxlib.server_command(store), client_factory=ctxlib.make_client).start()
    ctx = ctxlib.Ctx(client, store)
    try:
        await client.initialize_session(types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="app")]))
        second = await ctx.open_session(title="from the editor")
        listed = await ctx.req("ctx/listSessions", {"workspace": str(root)})
        assert {s["sessionId"] for s in listed["sessions"]} == {first, second}, listed
        prompt = await _first_prompt(ctx, second)
        assert f"{first}/x2 the person said: {DECISION}" in prompt["text"]
    finally:
        await ctxlib.stop(ctx)


async def test_forget_removes_a_projects_memory(ctx, store):
    forgotten = await _first_sitting(ctx, PROJECT)
    kept = await _first_sitting(ctx, OTHER)
    await ctxlib.stop(ctx)
    out = subprocess.run([str(ctxlib.binary()), "forget", "--project", PROJECT, "--store", str(store)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "forgot 1 session(s)" in out.stdout, out.stdout
    async with ctxlib.running(store) as again:
        second = await again.open_session(title="after forget", workspace=PROJECT)
        prompt = await _first_prompt(again, second)
        assert forgotten not in prompt["text"] and DECISION not in prompt["text"]
        listed = await again.req("ctx/listSessions", {})
        assert kept in {s["sessionId"] for s in listed["sessions"]}
    out = subprocess.run([str(ctxlib.binary()), "forget", "--session", "s-nothere", "--store", str(store)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "s-nothere" in out.stderr, (out.stdout, out.stderr)


def test_a_project_replayed_through_the_proxy_carries_memory_to_the_upstream(tmp_path):
    """`replay --via-proxy` on a file of three sittings of one project: each sitting a client of
    its own naming its project, and the facts a later sitting asks of an earlier one reach what
    the upstream gets; with memory off, they do not."""
    cut = subprocess.run(["python3", str(ctxlib.FIXTURES / "tools" / "cut_sittings.py"),
                          str(ctxlib.SESSIONS / "go-tally.jsonl"), "3"], capture_output=True, text=True, check=True)
    sittings = tmp_path / "go-tally-3.jsonl"
    sittings.write_text(cut.stdout)

    def reached(memory: bool) -> int:
        p = subprocess.run([str(ctxlib.binary()), "replay", str(sittings), "--via-proxy", "--json",
                            "--config", f'{{"memory": {str(memory).lower()}}}'],
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)["total"]["factsInUpstreamPrompt"]

    assert reached(True) > reached(False)


def test_two_projects_side_by_side_never_show_each_other(tmp_path):
    """The held-out file of two projects whose sittings alternate (fixtures/held-out/two-projects):
    replayed into one store, no prompt of a session holds an id of another project's session, and
    each project's later sittings do show ids of their own project's earlier ones."""
    import re
    import sqlite3

    store = tmp_path / "store.db"
    p = subprocess.run([str(ctxlib.binary()), "replay", str(ctxlib.FIXTURES / "held-out" / "two-projects.jsonl"),
                        "--store", str(store)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    project = dict(db.execute("SELECT id, workspace FROM sessions"))
    prompts = list(db.execute("SELECT id, prompt_count FROM sessions"))
    db.close()
    assert sorted(set(project.values())) == ["harbourlane", "kestrel"]
    own = 0
    for session, count in prompts:
        for n in range(1, count + 1):
            shown = subprocess.run([str(ctxlib.binary()), "show-prompt", session, f"p{n}", "--json",
                                    "--store", str(store)], capture_output=True, text=True, check=True).stdout
            for named in set(re.findall(r"\b(s-[a-z0-9]{6})/", shown)):
                assert named in project, f"{session} p{n} names {named}, no session of the store"
                assert project[named] == project[session], \
                    f"{session} p{n} ({project[session]}) shows {named} of {project[named]}"
                own += named != session
    assert own > 0, "no prompt showed an earlier sitting of its project"

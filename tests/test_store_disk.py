"""The store on disk: a clean exit leaves everything in store.db, `backup` copies a store while a
server writes, a damaged store is found, named and refuses writes, `doctor` reports and salvages,
and a store this user cannot write still serves reads with an error that names the path."""

import os
import pathlib
import shutil
import sqlite3
import subprocess
import tempfile

import pytest

import ctxlib

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def cli(*args, check=True, prefix=()) -> subprocess.CompletedProcess:
    r = subprocess.run([*prefix, str(ctxlib.binary()), *map(str, args)], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "RUST_BACKTRACE": "0"})
    if check:
        assert r.returncode == 0, (args, r.returncode, r.stdout, r.stderr)
    return r


def sessions(store) -> dict[str, int]:
    """session id -> exchanges, from `ctxproxy sessions` (its rows, not its project headings)."""
    rows = [l.split() for l in cli("sessions", "--store", store).stdout.splitlines() if l.startswith("s-")]
    return {row[0]: int(row[1]) for row in rows}


def alone(store: pathlib.Path, tmp: pathlib.Path) -> pathlib.Path:
    """A copy of store.db alone (no -wal, no -shm), as a user's backup would be."""
    d = tmp / "copy"
    d.mkdir()
    shutil.copy(store, d / "store.db")
    return d / "store.db"


async def test_a_clean_exit_leaves_the_whole_store_in_the_database_file(store, tmp_path):
    async with ctxlib.running(store) as ctx:
        sid = await ctx.open_session()
        for i in range(5):
            await ctx.append(sid, ctxlib.tool_exchange(f"step {i}", "line\n" * 200))
    assert not (store.parent / "store.db-wal").exists() or (store.parent / "store.db-wal").stat().st_size == 0
    assert sessions(alone(store, tmp_path)) == {sid: 5}


def test_a_replay_leaves_the_whole_store_in_the_database_file(tmp_path):
    store = tmp_path / "s" / "store.db"
    cli("replay", ctxlib.REPO / "fixtures/sessions/minimal.jsonl", "--store", store)
    assert list(sessions(alone(store, tmp_path)).values()) == [3]


async def test_backup_while_a_server_appends_is_a_consistent_store(store, tmp_path):
    async with ctxlib.running(store) as ctx:
        sid = await ctx.open_session()
        big = "".join(f"{i:06d} {os.urandom(40).hex()}\n" for i in range(2000))  # a file blob
        await ctx.append(sid, ctxlib.tool_exchange("read it", big))
        pending = [ctx.send("ctx/append", {"sessionId": sid, "messages": ctxlib.tool_exchange(f"q{i}", f"out {i}\n" * 50)})
                   for i in range(200)]
        dest = tmp_path / "backup" / "store.db"
        r = cli("backup", "--store", store, dest)
        assert "blob files" in r.stdout, r.stdout
        for p in pending:
            await p
    got = sessions(dest)
    assert 1 <= got[sid] <= 201, got
    d = cli("doctor", "--store", dest)
    assert "healthy" in d.stdout, d.stdout
    assert any((dest.parent / "blobs").rglob("*")), "the file blob was not copied"
    r = cli("backup", "--store", store, dest, check=False)
    assert r.returncode != 0 and "exists" in r.stderr, r.stderr


def damage(db: pathlib.Path):
    """Garbles three pages, as a bad disk or a torn copy would: the bytes of two of the prompt
    records' overflow pages (which reading those records finds) and the b-tree header of a page of
    the full-text index (which SQLite's structural check finds before the first write). The pages
    are picked by what they hold, so where a store's pages happen to fall does not decide what
    the test meets."""
    con = sqlite3.connect(db)
    page = con.execute("PRAGMA page_size").fetchone()[0]
    pages = lambda name, kind: [n for (n,) in con.execute(
        "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = ? ORDER BY pageno", (name, kind))]
    overflow, index = pages("prompts", "overflow"), pages("exchange_text_data", "leaf")
    con.close()
    middle = len(overflow) // 2
    targets = [(overflow[middle], 100), (overflow[middle + 1], 100), (index[len(index) // 2], 0)]
    with open(db, "r+b") as f:
        for pageno, offset in targets:
            f.seek((pageno - 1) * page + offset)
            f.write(bytes((i * 37 + 11) % 256 for i in range(600)))


async def test_a_damaged_store_is_named_refuses_writes_and_doctor_salvages_it(tmp_path):
    store = tmp_path / "s" / "store.db"
    cli("replay", ctxlib.REPO / "fixtures/sessions/coding-strsim.jsonl", "--store", store)
    [sid] = sessions(store)
    damage(store)

    d = cli("doctor", "--store", store, check=False)
    assert d.returncode == 1 and "damaged" in d.stdout, (d.returncode, d.stdout, d.stderr)

    # Reading every prompt: each one reads back whole or names the damage and the way out.
    failed = []
    for n in range(1, 47):
        r = cli("show-prompt", sid, f"p{n}", "--store", store, check=False)
        if r.returncode != 0:
            failed.append(r.stderr)
            assert "is damaged" in r.stderr and "ctxproxy doctor --store" in r.stderr, r.stderr
    assert failed, "the damage was not met"

    # A server on it answers reads and refuses writes with the store-damaged error.
    async with ctxlib.running(store) as ctx:
        e = await ctx.err("ctx/append", {"sessionId": sid, "messages": [{"role": "user", "content": "more"}]})
        assert e.code == -32006, (e.code, e.message)
        assert str(store) in e.message and "doctor" in e.message, e.message
        assert "sessions" in await ctx.req("ctx/stats", {})

    new = tmp_path / "new" / "store.db"
    s = cli("doctor", "--store", store, "--salvage", new, check=False)
    assert f"salvaged 1 of 1 sessions into {new}" in s.stdout, s.stdout
    assert sessions(new) == {sid: 46}
    assert "healthy" in cli("doctor", "--store", new).stdout


@pytest.mark.skipif(shutil.which("setpriv") is None or os.geteuid() != 0,
                    reason="needs root to run the binary as another user (setpriv)")
async def test_a_store_this_user_cannot_write_serves_reads_and_names_the_path():
    top = pathlib.Path(tempfile.mkdtemp(prefix="ctxproxy-ro-"))
    try:
        top.chmod(0o755)
        store = top / "store.db"
        cli("replay", ctxlib.REPO / "fixtures/sessions/minimal.jsonl", "--store", store)
        for p in top.rglob("*"):
            p.chmod(0o755 if p.is_dir() else 0o644)
        [sid] = sessions(store)
        # The CLI reads it, whether the clean exit removed the emptied
        # write-ahead log or left it behind (with no -shm beside it).
        wal = top / "store.db-wal"
        for leftover in (False, True):
            if leftover:
                wal.touch()
                wal.chmod(0o644)
            r = cli("show-prompt", sid, "p1", "--store", store, prefix=NOBODY)
            assert r.stdout.startswith(f"p1 of {sid}"), (leftover, r.stdout)
        # A server reads it and refuses writes naming the path and the operation.
        ctx = await ctxlib.start(store, prefix=NOBODY)
        try:
            assert (await ctx.req("ctx/stats", {}))["sessions"] == 1
            got = await ctx.retrieve(sid, ["x1"])
            assert got[0]["kind"] == "exchange", got
            e = await ctx.err("ctx/append", {"sessionId": sid, "messages": [{"role": "user", "content": "x"}]})
            assert e.code == -32004, (e.code, e.message)
            assert f"cannot open store {store} for writing" in e.message, e.message
            assert "store unavailable: store unavailable" not in e.message
        finally:
            await ctxlib.stop(ctx)
        # A directory it cannot create names the path too.
        r = cli("replay", ctxlib.REPO / "fixtures/sessions/minimal.jsonl", "--store", top / "sub" / "s.db",
                prefix=NOBODY, check=False)
        assert r.returncode != 0 and f"{top / 'sub'}" in r.stderr and "Permission denied" in r.stderr, r.stderr
    finally:
        shutil.rmtree(top)

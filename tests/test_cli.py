"""The command line: quiet on a closed pipe, clear errors for bad arguments and bad recorded
sessions (FILE:LINE and the field, the store left as it was), a session's own figures, stdin and a
BOM, and a description for every argument in --help."""

import json
import os
import pathlib
import re
import signal
import subprocess

import pytest

import ctxlib
from test_store_disk import cli, sessions

MINIMAL = ctxlib.REPO / "fixtures/sessions/minimal.jsonl"
SUBCOMMANDS = ["serve", "replay", "inspect", "show-prompt", "sessions", "stats", "digest", "bench",
               "backup", "doctor"]


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    store = tmp_path_factory.mktemp("cli") / "store.db"
    cli("replay", ctxlib.REPO / "fixtures/sessions/coding-strsim.jsonl", "--store", store)
    [sid] = sessions(store)
    return store, sid


@pytest.mark.parametrize("args", [
    ["inspect", "{SID}", "x3", "--full"],
    ["show-prompt", "{SID}", "p40"],
    ["show-prompt", "{SID}", "p40", "--json"],
    ["digest", str(ctxlib.REPO / "fixtures/tool-outputs/cargo-test/aho-corasick-failures.out")],
    ["sessions"],
], ids=lambda a: a[0] + ("-json" if "--json" in a else ""))
def test_a_closed_pipe_ends_the_command_quietly(replayed, args):
    store, sid = replayed
    argv = [str(ctxlib.binary()), *[a.replace("{SID}", sid) for a in args]]
    if args[0] != "digest":
        argv += ["--store", str(store)]
    r, w = os.pipe()
    os.close(r)  # the reader is gone before the first byte is written (`| head -0`)
    p = subprocess.run(argv, stdout=w, stderr=subprocess.PIPE, text=True, timeout=60)
    os.close(w)
    assert p.returncode in (0, -signal.SIGPIPE), (p.returncode, p.stderr)
    assert "panicked" not in p.stderr and "Broken pipe" not in p.stderr, p.stderr


@pytest.mark.parametrize("args,says", [
    (["bench", "--sizes", "10", "--assembles", "0"], "--assembles"),
    (["bench", "--sizes", "0"], "--sizes"),
    (["bench", "--batch", "0"], "--batch"),
])
def test_bad_bench_arguments_are_refused_clearly(args, says):
    r = cli(*args, check=False)
    assert r.returncode == 2 and says in r.stderr and "panicked" not in r.stderr, (r.returncode, r.stderr)


def stats(store):
    """The store's figures, less the file's size (freed pages stay in the file)."""
    s = json.loads(cli("stats", "--store", store, "--json").stdout)
    del s["databaseBytes"]
    return s


def minimal_with(tmp_path, name: str, line: int, change) -> "pathlib.Path":
    """minimal.jsonl with its line `line` (0-based) changed by `change(exchange)`."""
    lines = MINIMAL.read_text().splitlines()
    x = json.loads(lines[line])
    change(x)
    lines[line] = json.dumps(x)
    f = tmp_path / name
    f.write_text("\n".join(lines) + "\n")
    return f


def test_a_line_with_a_wrong_type_names_file_line_and_field_and_stores_nothing(tmp_path):
    store = tmp_path / "store.db"
    cli("replay", MINIMAL, "--store", store)
    before = stats(store)
    f = minimal_with(tmp_path, "bad.jsonl", 1, lambda x: x["messages"][0].update(content=42))
    r = cli("replay", f, "--store", store, check=False)
    assert r.returncode == 1, r
    assert f"{f}:2: messages[0].content: expected a string, got 42" in r.stderr, r.stderr
    assert stats(store) == before


def test_a_replay_that_fails_halfway_leaves_the_store_as_it_was(tmp_path):
    store = tmp_path / "store.db"
    cli("replay", MINIMAL, "--store", store)
    before = stats(store)

    def big_read(x):
        x["messages"][1:1] = [
            {"role": "assistant", "content": "", "toolCalls": [
                {"id": "cbig", "name": "read_file", "arguments": {"path": "big.txt"}}]},
            {"role": "tool", "toolCallId": "cbig", "content": "y" * 50_000}]
    f = minimal_with(tmp_path, "halfway.jsonl", 2, big_read)
    r = cli("replay", f, "--store", store, "--config", '{"maxPayloadBytes": 20000}', check=False)
    assert r.returncode == 1 and "appending exchange x3" in r.stderr and "nothing was kept" in r.stderr, r.stderr
    assert stats(store) == before
    assert len(sessions(store)) == 1


def test_a_second_replay_prints_its_own_session_figures(tmp_path):
    store = tmp_path / "store.db"
    outs = [cli("replay", MINIMAL, "--store", store).stdout for _ in range(2)]
    for out in outs:
        assert re.search(r"session s-\w+: 3 exchanges, 2 blobs", out), out
    assert "(2 duplicate hits)" in outs[1], outs[1]


def test_replay_reads_stdin_and_accepts_a_bom(tmp_path):
    data = "\ufeff" + MINIMAL.read_text()
    r = subprocess.run([str(ctxlib.binary()), "replay", "-", "--store", str(tmp_path / "s.db")],
                       input=data, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert re.search(r"session s-\w+: 3 exchanges", r.stdout), r.stdout
    f = tmp_path / "bom.jsonl"
    f.write_text(data)
    cli("replay", f)


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_every_argument_has_a_description_in_help(command):
    text = cli(command, "--help").stdout
    missing = []
    section = None
    for line in text.splitlines():
        if line in ("Arguments:", "Options:"):
            section = line
            continue
        if section and line.startswith("  ") and not line.startswith("        "):
            # "  <NAME>  text" or "  -x, --name <V>  text": a name column, then two spaces, then text.
            if not re.match(r"^\s+\S.*?\S  +\S", line):
                missing.append(line.strip())
    assert not missing, f"{command} --help: no description for {missing}"


def test_replay_config_refuses_a_misspelt_key_with_the_right_spelling():
    r = cli("replay", MINIMAL, "--config", '{"layers": {"recentfull": 1}}', check=False)
    assert r.returncode == 1, r
    assert "--config: layers: unknown field `recentfull`, did you mean `recentFull`?" in r.stderr, r.stderr


def test_digest_prints_what_the_model_would_see_so_it_masks():
    secrets = ctxlib.known_secrets()
    assert secrets
    for f in sorted((ctxlib.REPO / "fixtures/tool-outputs/secrets").glob("*.out")):
        out = cli("digest", f).stdout
        leaked = [s for s in secrets if s in out]
        assert not leaked, (f.name, leaked)
    out = cli("digest", ctxlib.REPO / "fixtures/tool-outputs/secrets/ssh-key-cat.out").stdout
    assert "[secret:private-key]" in out and "BEGIN OPENSSH PRIVATE KEY" not in out.replace("[secret:private-key]", ""), out


def test_replay_html_into_a_missing_directory_fails_before_replaying(tmp_path):
    store = tmp_path / "s.db"
    r = cli("replay", MINIMAL, "--report", "--html", tmp_path / "missing" / "r.html", "--store", store,
            check=False)
    assert r.returncode != 0
    assert f"--html {tmp_path / 'missing' / 'r.html'}: no such directory" in r.stderr
    assert not store.exists(), "nothing was replayed"


def test_digest_of_a_binary_file_names_its_size_and_type(tmp_path):
    # A PNG made here: signature, then bytes that are not UTF-8.
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 40
    f = tmp_path / "logo.png"
    f.write_bytes(png)
    out = cli("digest", f, "--tool", "read_file", "--args", '{"path": "logo.png"}').stdout
    assert out.startswith(f"logo.png: binary, {len(png)} bytes, PNG image\n"), out
    assert "\ufffd" not in out and "IHDR" not in out, out


@pytest.mark.parametrize("args", [
    ["proxy", "--listen", "127.0.0.1:0", "--store", "postgres://ctx@db.example:5432/ctx"],
    ["sessions", "--store", "postgresql://ctx@localhost/ctx"],
    ["doctor", "--store", "postgres://ctx@localhost/ctx"],
    ["replay", str(MINIMAL), "--store", "postgres://ctx@localhost/ctx"],
    ["replay", str(MINIMAL), "--config", '{"storePath": "postgres://ctx@localhost/ctx"}'],
], ids=["proxy", "sessions", "doctor", "replay", "replay-storePath"])
def test_a_store_that_names_a_database_server_is_refused_at_start(tmp_path, args):
    """A database URL given as the store is not taken for a file name (it would
    become a SQLite file at that relative path, in silence)."""
    p = subprocess.run([str(ctxlib.binary()), *args], cwd=tmp_path, capture_output=True,
                       text=True, timeout=60, env=dict(os.environ, CTXPROXY_STORE=str(tmp_path / "unused.db")))
    assert p.returncode != 0
    assert re.search(r"names a postgres(ql)? server, and the store is a SQLite file", p.stderr), p.stderr
    assert list(tmp_path.iterdir()) == [], "no file made"

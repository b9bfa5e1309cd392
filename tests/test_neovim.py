"""10. Another editor: headless Neovim's built-in LSP client drives ctxproxy."""

import json
import os
import shutil
import subprocess

import pytest

import ctxlib

NVIM = shutil.which("nvim")


@pytest.mark.skipif(NVIM is None, reason="nvim not installed (apt-get install -y neovim)")
def test_neovim_drives_ctxproxy(tmp_path):
    out = tmp_path / "nvim-out.json"
    store = tmp_path / "store"
    store.mkdir()
    env = {**os.environ, "CTXPROXY_BIN": str(ctxlib.binary()), "CTXPROXY_STORE_PATH": str(store / "store.db"),
           "CTXPROXY_NVIM_OUT": str(out), "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    script = ctxlib.REPO / "tests" / "nvim" / "drive.lua"
    proc = subprocess.run([NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-c", f"luafile {script}"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)
    assert out.exists(), f"nvim wrote no results (rc {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    r = json.loads(out.read_text())
    assert r["ok"], f"drive.lua failed: {r.get('error')}\nsteps: {json.dumps(r.get('steps'))[:3000]}"
    assert r["server_info"]["name"] == "ctxproxy"

    assert r["append"]["exchanges"] == [{"id": "x1", "seq": 1}]
    (blob,) = r["append"]["blobs"]
    assert blob["messageId"] == "x1.3"

    a = r["assemble"]
    assert a["promptId"] == "p1" and a["tokens"]["total"] <= 8000
    # One short exchange: sent whole (no L0, no context tools), the input last.
    assert a["shape"] == "whole" and a["tools"] == [], a.get("reason")
    assert a["messages"][-1]["role"] == "user" and "And what does it print?" in a["messages"][-1]["content"]

    items = {i["id"]: i for i in r["retrieve"]["items"]}
    assert items["x1.2"]["toolCalls"] == [{"id": "call_1", "name": "read_file", "arguments": {"path": "src/a.rs"}}]
    assert items["x1.3"]["text"] == 'fn main() {\n    println!("nvim");\n}\n'
    assert items[blob["id"]]["text"] == items["x1.3"]["text"]
    assert "It prints nvim." in items["x1"]["text"]
    assert [h["id"] for h in r["search"]["hits"]] == ["x1"]
    assert r["stats"]["exchanges"] == 1
    assert [s["title"] for s in r["sessions"]["sessions"]] == ["from neovim"]
    kinds = {e["kind"] for e in r["events"]}
    assert {"exchangeStored", "blobStored", "contextAssembled"} <= kinds, kinds
    # Whether the server exits on `exit` is test_lifecycle.py's job; here it is only reported.
    print("server exit code seen by nvim after client.stop():", r.get("exit_code"))

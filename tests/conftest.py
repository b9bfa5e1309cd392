import pathlib

import pytest
import pytest_asyncio

import ctxlib


def pytest_sessionstart(session):
    bin_ = ctxlib.binary()
    if not bin_.exists():
        raise pytest.UsageError(
            f"ctxproxy binary not found at {bin_}: build it with `cargo build -p ctxproxy` "
            "or point CTXPROXY_BIN at it"
        )


@pytest.fixture
def store(tmp_path: pathlib.Path) -> pathlib.Path:
    """A fresh store path in a temp dir (the server creates it)."""
    d = tmp_path / "store"
    d.mkdir()
    return d / "store.db"


@pytest_asyncio.fixture
async def ctx(store):
    """A server on a fresh store with default options, initialized."""
    c = await ctxlib.start(store)
    yield c
    await ctxlib.stop(c)


# ------------------------------------------------- `ctxproxy proxy` fixtures

import proxylib  # noqa: E402


@pytest.fixture
def upstream():
    """A scripted model API on loopback, both OpenAI and Anthropic."""
    with proxylib.ScriptedUpstream() as up:
        yield up


@pytest.fixture
def proxy(store, upstream):
    """`ctxproxy proxy` on a fresh store, both upstreams the scripted one."""
    with proxylib.Proxy(store, upstream.url, upstream.url) as p:
        yield p

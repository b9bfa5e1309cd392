"""A short run of tests/load/load.py: 4 clients on one store through 4 server processes for 20 s.
Nothing acknowledged is lost and no request fails (busy retries are the server's business)."""

from load import load


async def test_four_clients_twenty_seconds_lose_nothing_and_see_no_error():
    out = await load.run(clients=4, seconds=20)
    assert out["acknowledged_appends"] > 20, out
    assert not out["lost"], out["lost"][:5]
    assert not out["errors"], out["errors"][:5]

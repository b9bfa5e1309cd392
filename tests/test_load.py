"""A short run of tests/load/load.py: 4 clients on one store through 4 server processes for 20 s.
Nothing acknowledged is lost and no request fails (busy retries are the server's business)."""

from load import load


async def test_four_clients_twenty_seconds_lose_nothing_and_see_no_error():
    out = await load.run(clients=4, seconds=20)
    assert out["acknowledged_appends"] > 20, out
    assert not out["lost"], out["lost"][:5]
    assert not out["errors"], out["errors"][:5]


def test_eight_clients_spread_over_two_proxies_on_one_store_record_every_turn_once():
    """tests/load/proxy_load.py for 20 s: 8 clients, each its own key, every request to one of two
    `ctxproxy proxy` processes on one SQLite store at random."""
    from load import proxy_load
    out = proxy_load.run(clients=8, seconds=20, replicas=2)
    assert out["requests"] > 40, out
    assert not out["errors"], out["errors"][:5]
    assert not out["lost"], out["lost"][:5]
    assert out["extra_sessions"] == 0, out
    assert not out["tenants_crossed"] and out["shared_tenants"] == 0, out

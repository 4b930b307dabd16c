"""The server starts, answers, and keeps data between commands."""


def test_ping_set_get(r):
    assert r.ping() is True
    assert r.set("k", "v") is True
    assert r.get("k") == "v"
    assert r.dbsize() == 1
    r.flushdb()
    assert r.dbsize() == 0


def test_resp3_client(r3):
    r3.set("k", "v")
    assert r3.get("k") == "v"

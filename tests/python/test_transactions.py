"""MULTI, EXEC, DISCARD, WATCH and UNWATCH as redis-py users see them."""

import threading

import pytest
import redis


def test_multi_exec_returns_every_reply(r):
    p = r.pipeline(transaction=True)
    p.set("a", "1").incr("a").get("a")
    assert p.execute() == [True, 2, "2"]


def test_exec_without_multi(r):
    with pytest.raises(redis.ResponseError, match="^EXEC without MULTI$"):
        r.execute_command("EXEC")


def _raw(r):
    """A dedicated connection for commands redis-py would otherwise wrap."""
    return r.connection_pool.make_connection()


def _cmd(conn, *args):
    conn.send_command(*args)
    try:
        return conn.read_response()
    except redis.ResponseError as e:
        return e


def test_discard_drops_queue(r):
    c = _raw(r)
    assert _cmd(c, "MULTI") == "OK"
    assert _cmd(c, "SET", "k", "v") == "QUEUED"
    assert _cmd(c, "DISCARD") == "OK"
    assert r.get("k") is None
    c.disconnect()


def test_nested_multi_is_an_error_that_keeps_the_transaction(r):
    c = _raw(r)
    _cmd(c, "MULTI")
    e = _cmd(c, "MULTI")
    assert isinstance(e, redis.ResponseError) and str(e) == "MULTI calls can not be nested"
    _cmd(c, "SET", "k", "v")
    assert _cmd(c, "EXEC") == ["OK"]
    assert r.get("k") == "v"
    c.disconnect()


def test_watch_inside_multi_is_refused(r):
    c = _raw(r)
    _cmd(c, "MULTI")
    e = _cmd(c, "WATCH", "k")
    assert isinstance(e, redis.ResponseError) and str(e) == "WATCH inside MULTI is not allowed"
    _cmd(c, "DISCARD")
    c.disconnect()


def test_unknown_command_in_multi_aborts_exec(r):
    c = _raw(r)
    _cmd(c, "MULTI")
    e = _cmd(c, "NOSUCHCMD")
    assert isinstance(e, redis.ResponseError)
    _cmd(c, "SET", "k", "v")
    e = _cmd(c, "EXEC")
    assert isinstance(e, redis.ResponseError)
    assert str(e) == "Transaction discarded because of previous errors."
    assert r.get("k") is None
    c.disconnect()


def test_runtime_error_inside_exec_does_not_roll_back(r):
    r.set("s", "notanumber")
    p = r.pipeline(transaction=True)
    p.set("a", "1").incr("s").set("b", "2")
    replies = p.execute(raise_on_error=False)
    assert replies[0] is True and replies[2] is True
    assert isinstance(replies[1], redis.ResponseError)
    assert r.mget("a", "b") == ["1", "2"]


def test_watch_then_unwatch_lets_exec_run(r):
    c = _raw(r)
    _cmd(c, "WATCH", "k")
    r.set("k", "changed")
    assert _cmd(c, "UNWATCH") == "OK"
    _cmd(c, "MULTI")
    _cmd(c, "SET", "k", "mine")
    assert _cmd(c, "EXEC") == ["OK"]
    assert r.get("k") == "mine"
    c.disconnect()


def test_watch_aborts_on_concurrent_writer(r, server):
    r.set("counter", "0")
    other = server.client()
    with r.pipeline() as p:
        p.watch("counter")
        current = int(p.get("counter"))
        t = threading.Thread(target=lambda: other.incr("counter"))
        t.start()
        t.join()
        p.multi()
        p.set("counter", current + 10)
        with pytest.raises(redis.WatchError):
            p.execute()
    assert r.get("counter") == "1"
    other.close()


def test_watch_untouched_key_commits(r):
    with r.pipeline() as p:
        p.watch("w")
        p.multi()
        p.set("w", "1")
        assert p.execute() == [True]


def test_flushall_invalidates_watch(r):
    r.set("k", "v")
    c = _raw(r)
    _cmd(c, "WATCH", "k")
    r.flushall()
    _cmd(c, "MULTI")
    _cmd(c, "SET", "k", "x")
    assert _cmd(c, "EXEC") is None
    c.disconnect()


def test_transaction_is_atomic_to_other_clients(r, server):
    """Concurrent INCR transactions never interleave: the final count is exact."""
    def worker():
        c = server.client()
        for _ in range(200):
            p = c.pipeline(transaction=True)
            p.incr("n").incr("n")
            a, b = p.execute()
            assert b == a + 1
        c.close()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert r.get("n") == "1600"


def test_discard_without_multi(r):
    with pytest.raises(redis.ResponseError, match="^DISCARD without MULTI$"):
        r.execute_command("DISCARD")


def test_watched_key_that_expires_unread_aborts_exec(r):
    import time

    r.set("k", "v", px=100)
    c = _raw(r)
    assert _cmd(c, "WATCH", "k") == "OK"
    _cmd(c, "MULTI")
    _cmd(c, "SET", "other", "1")
    time.sleep(0.3)
    assert _cmd(c, "EXEC") is None
    assert r.get("other") is None
    c.disconnect()


def test_watched_key_expired_by_another_reader_aborts_exec(r, server):
    import time

    r.set("k", "v", px=100)
    c = _raw(r)
    _cmd(c, "WATCH", "k")
    time.sleep(0.3)
    other = server.client()
    assert other.get("k") is None
    other.close()
    _cmd(c, "MULTI")
    _cmd(c, "SET", "other", "1")
    assert _cmd(c, "EXEC") is None
    c.disconnect()


def test_watching_a_missing_key_survives_its_absence(r):
    c = _raw(r)
    _cmd(c, "WATCH", "absent")
    _cmd(c, "MULTI")
    _cmd(c, "SET", "x", "1")
    assert _cmd(c, "EXEC") == ["OK"]
    c.disconnect()


def test_flush_leaves_watches_on_missing_keys_alone(r):
    r.set("present", "1")
    c = _raw(r)
    _cmd(c, "WATCH", "absent")
    r.flushall()
    _cmd(c, "MULTI")
    _cmd(c, "SET", "x", "1")
    assert _cmd(c, "EXEC") == ["OK"]
    c.disconnect()


def test_swapdb_invalidates_watch_on_key_in_either_db(r, server):
    other = server.client(db=1)
    other.set("k", "in-db-1")
    c = _raw(r)
    _cmd(c, "WATCH", "k")
    r.swapdb(0, 1)
    _cmd(c, "MULTI")
    _cmd(c, "SET", "x", "1")
    assert _cmd(c, "EXEC") is None
    c.disconnect()
    other.close()


def test_copy_invalidates_the_destination_watch_only(r, server):
    r.set("src", "v")
    other = server.client()
    c = _raw(r)
    _cmd(c, "WATCH", "src")
    other.copy("src", "dst1")
    _cmd(c, "MULTI")
    _cmd(c, "SET", "x", "1")
    assert _cmd(c, "EXEC") == ["OK"]
    _cmd(c, "WATCH", "dst2")
    other.copy("src", "dst2")
    _cmd(c, "MULTI")
    _cmd(c, "SET", "x", "2")
    assert _cmd(c, "EXEC") is None
    c.disconnect()
    other.close()


def test_bitop_sources_keep_their_watches(r, server):
    r.set("a", "x")
    other = server.client()
    c = _raw(r)
    _cmd(c, "WATCH", "a")
    other.bitop("OR", "dest", "a")
    _cmd(c, "MULTI")
    _cmd(c, "SET", "x", "1")
    assert _cmd(c, "EXEC") == ["OK"]
    c.disconnect()
    other.close()

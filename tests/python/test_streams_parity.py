"""Streams where Keel once answered otherwise than Redis 7.0: which key a
blocked reader is served, which writes wake it, MEMORY USAGE with consumer
groups, XAUTOCLAIM's COUNT bound and XINFO STREAM's radix tree counts."""

import threading
import time

import pytest
import redis


def blocked_count(r):
    return int(r.info("clients")["blocked_clients"])


def wait_blocked(r, n):
    deadline = time.time() + 5
    while blocked_count(r) != n:
        assert time.time() < deadline, f"blocked_clients never reached {n}"
        time.sleep(0.01)


def run_blocked(server, *args):
    """Run a blocking command on its own client in a thread."""
    out = []

    def go():
        c = server.client()
        try:
            out.append(c.execute_command(*args))
        except redis.ResponseError as e:
            out.append(f"ERR: {e}")
        finally:
            c.close()

    t = threading.Thread(target=go)
    t.start()
    return t, out


def blocked_then(server, r, args, action):
    t, out = run_blocked(server, *args)
    wait_blocked(r, 1)
    action()
    t.join(5)
    assert not t.is_alive()
    return out[0]


def multi(r, *cmds):
    p = r.pipeline(transaction=True)
    for c in cmds:
        p.execute_command(*c)
    return p.execute()


def entry(i):
    return (f"{i}-1", {"f": "v"})


def test_xread_served_for_the_first_key_a_transaction_writes(server, r):
    r.execute_command("XADD", "a", "1-1", "f", "v")
    r.execute_command("XADD", "b", "1-1", "f", "v")
    got = blocked_then(
        server, r, ("XREAD", "BLOCK", "0", "STREAMS", "a", "b", "$", "$"),
        lambda: multi(r, ("XADD", "b", "2-1", "f", "v"), ("XADD", "a", "2-1", "f", "v")),
    )
    assert got == [["b", [entry(2)]]]
    # The same with ids given and keys created inside the transaction.
    got = blocked_then(
        server, r, ("XREAD", "COUNT", "5", "BLOCK", "0", "STREAMS", "k1", "k2", "0", "0"),
        lambda: multi(r, ("XADD", "k2", "1-1", "f", "v"), ("XADD", "k1", "1-1", "f", "v")),
    )
    assert got == [["k2", [entry(1)]]]


def test_xreadgroup_served_for_the_first_key_a_transaction_writes(server, r):
    for k in ("a", "b"):
        r.execute_command("XGROUP", "CREATE", k, "g", "$", "MKSTREAM")
    got = blocked_then(
        server, r, ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "a", "b", ">", ">"),
        lambda: multi(r, ("XADD", "b", "1-1", "f", "v"), ("XADD", "a", "1-1", "f", "v")),
    )
    assert got == [["b", [entry(1)]]]
    # Only b's entry was delivered.
    assert r.xpending("a", "g")["pending"] == 0
    assert r.xpending("b", "g")["pending"] == 1


def test_xgroup_setid_back_waits_for_the_next_xadd(server, r):
    r.execute_command("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    r.execute_command("XADD", "s", "1-1", "f", "v")
    r.execute_command("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    t, out = run_blocked(server, "XREADGROUP", "GROUP", "g", "c2", "BLOCK", "0", "STREAMS", "s", ">")
    wait_blocked(r, 1)
    r.execute_command("XGROUP", "SETID", "s", "g", "0")
    # Nor do the other stream writes that add nothing wake it.
    r.execute_command("XACK", "s", "g", "1-1")
    r.execute_command("XGROUP", "CREATECONSUMER", "s", "g", "c3")
    r.execute_command("XSETID", "s", "5-0")
    r.execute_command("XTRIM", "s", "MAXLEN", "5")
    time.sleep(0.2)
    assert out == []
    assert blocked_count(r) == 1
    r.execute_command("XADD", "s", "10-1", "f", "v")
    t.join(5)
    # Served from the id the group was set back to.
    assert out == [[["s", [entry(1), entry(10)]]]]


def test_served_with_an_empty_list_when_the_new_entries_are_gone(server, r, raw):
    r.execute_command("XADD", "s", "1-1", "f", "v")
    got = blocked_then(
        server, r, ("XREAD", "BLOCK", "0", "STREAMS", "s", "$"),
        lambda: r.execute_command("XADD", "s", "MAXLEN", "0", "2-1", "f", "v"),
    )
    assert got == [["s", []]]
    r.execute_command("XGROUP", "CREATE", "s", "g", "$")
    got = blocked_then(
        server, r, ("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "s", ">"),
        lambda: multi(r, ("XADD", "s", "3-1", "f", "v"), ("XDEL", "s", "3-1")),
    )
    assert got == [["s", []]]
    # The consumer was created all the same.
    assert [c["name"] for c in r.xinfo_consumers("s", "g")] == ["c"]
    # Not blocked, the same read answers nil.
    r.execute_command("XADD", "s", "4-1", "f", "v")
    r.execute_command("XDEL", "s", "4-1")
    assert raw.cmd("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">") is None


def test_xinfo_stream_radix_tree_nodes_are_redis_s(r):
    r.config_set("stream-node-max-entries", "1")
    try:
        got = []
        for i in ("1-0", "1-1", "2-0", "256-0", "257-5", "65536-0"):
            r.execute_command("XADD", "s", i, "f", "v")
            got.append(r.xinfo_stream("s")["radix-tree-nodes"])
        assert got == [2, 4, 8, 11, 14, 17]
        r.execute_command("XDEL", "s", "1-1")
        info = r.xinfo_stream("s")
        assert (info["radix-tree-keys"], info["radix-tree-nodes"]) == (5, 15)
    finally:
        r.config_set("stream-node-max-entries", "100")


def test_xdel_on_a_missing_key_answers_0_before_checking_ids(r):
    assert r.execute_command("XDEL", "nokey", "abc") == 0
    r.execute_command("XADD", "s", "1-1", "f", "v")
    with pytest.raises(redis.ResponseError, match="Invalid stream ID"):
        r.execute_command("XDEL", "s", "1-1", "abc")
    assert r.xlen("s") == 1


def test_lag_of_an_emptied_stream_is_known(r):
    r.execute_command("XADD", "s", "1-1", "f", "v")
    r.execute_command("XADD", "s", "2-1", "f", "v")
    r.execute_command("XDEL", "s", "2-1")
    r.execute_command("XGROUP", "CREATE", "s", "g", "0")
    # Fragmented: the lag of a group before the deleted entry is unknown.
    assert r.xinfo_groups("s")[0]["lag"] is None
    r.execute_command("XDEL", "s", "1-1")
    # Emptied: the group is counted as having read every entry added.
    assert r.xinfo_groups("s")[0]["lag"] == 0


def test_memory_usage_counts_consumer_groups(r):
    p = r.pipeline(transaction=False)
    for i in range(1, 2001):
        p.execute_command("XADD", "s", f"{i}-0", "field", f"value{i}")
    p.execute()
    bare = r.memory_usage("s")
    r.execute_command("XGROUP", "CREATE", "s", "g", "0")
    for c in range(4):
        r.execute_command("XREADGROUP", "GROUP", "g", f"consumer-{c}", "COUNT", "500", "STREAMS", "s", ">")
    assert r.xpending("s", "g")["pending"] == 2000
    with_pel = r.memory_usage("s")
    # Each pending entry sits in the group's PEL and its consumer's: tens
    # of bytes at the least (Redis's own estimate is near a kilobyte).
    assert with_pel - bare >= 2000 * 64
    r.execute_command("XGROUP", "CREATE", "s", "g2", "0")
    r.execute_command("XREADGROUP", "GROUP", "g2", "c", "STREAMS", "s", ">")
    assert r.memory_usage("s") - with_pel >= 2000 * 64
    # Acknowledged entries are given back.
    r.execute_command("XGROUP", "DESTROY", "s", "g2")
    r.execute_command("XACK", "s", "g", *[f"{i}-0" for i in range(1, 2001)])
    assert r.memory_usage("s") < bare + 2000 * 16


def test_entries_after_xsetid_below_deleted_ones_share_their_node(r):
    for i in ("1-0", "5-0", "6-0"):
        r.execute_command("XADD", "s", i, "f", "v")
    r.execute_command("XDEL", "s", "5-0", "6-0")
    # XSETID checks the last live entry only.
    r.execute_command("XSETID", "s", "2-0")
    r.execute_command("XADD", "s", "3-0", "f", "v")
    r.execute_command("XADD", "s", "4-0", "f", "v")
    info = r.xinfo_stream("s")
    assert (info["length"], info["radix-tree-keys"], info["last-generated-id"]) == (3, 1, "4-0")
    ids = lambda reply: [e[0] for e in reply]
    assert ids(r.xrange("s", "-", "3-5")) == ["1-0", "3-0"]
    assert ids(r.xrevrange("s", "+", "3-0")) == ["4-0", "3-0"]
    assert r.execute_command("XDEL", "s", "3-0") == 1
    # Such a node survives DUMP and RESTORE.
    r.restore("copy", 0, r.dump("s"))
    assert ids(r.xrange("copy", "-", "+")) == ["1-0", "4-0"]
    assert r.xinfo_stream("copy")["radix-tree-keys"] == 1


def test_xadd_ms_star_past_the_last_sequence_fails_as_redis_does(r):
    r.execute_command("XADD", "s", "5-18446744073709551615", "f", "v")
    # Redis 7.0 reports its generic append failure for this one.
    with pytest.raises(redis.ResponseError, match="^Elements are too large to be stored$"):
        r.execute_command("XADD", "s", "5-*", "f", "v")
    assert r.execute_command("XADD", "s", "6-*", "f", "v") == "6-0"
    with pytest.raises(redis.ResponseError, match="equal or smaller than the target stream top item"):
        r.execute_command("XADD", "s", "4-*", "f", "v")


def test_a_served_xread_without_count_gets_at_most_1000_entries(server, r):
    def add_many():
        p = r.pipeline(transaction=True)
        for i in range(1, 1501):
            p.execute_command("XADD", "s", f"{i}-1", "f", "v")
        p.execute()

    got = blocked_then(server, r, ("XREAD", "BLOCK", "0", "STREAMS", "s", "$"), add_many)
    assert got[0][0] == "s"
    assert len(got[0][1]) == 1000
    # Not blocked, the same read has no such bound.
    assert len(r.execute_command("XREAD", "STREAMS", "s", "0")[0][1]) == 1500


def test_approximate_trim_default_limit_is_capped_at_a_million(r):
    # 100 x stream-node-max-entries, at most 1000000 (not 10000 above it):
    # with nodes of 20000 entries (bytes unbounded) one trim takes them all.
    r.config_set("stream-node-max-entries", "20000")
    r.config_set("stream-node-max-bytes", "0")
    try:
        p = r.pipeline(transaction=False)
        for i in range(1, 30001):
            p.execute_command("XADD", "s", f"{i}-1", "f", "v")
        p.execute()
        assert r.execute_command("XTRIM", "s", "MAXLEN", "~", "0") == 30000
        assert r.xlen("s") == 0
    finally:
        r.config_set("stream-node-max-entries", "100")
        r.config_set("stream-node-max-bytes", "4096")

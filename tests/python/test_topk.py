"""Top-k sketches, RedisBloom's TOPK.* commands: TOPK.RESERVE, TOPK.ADD,
TOPK.INCRBY, TOPK.QUERY, TOPK.COUNT, TOPK.LIST and TOPK.INFO, through
redis-py's r.topk() helper and raw commands for exact error texts; and how a
sketch looks to TYPE, OBJECT, COPY, RENAME, DUMP/RESTORE, SAVE and the AOF.

Debian's redis-server has no RedisBloom, so these run against Keel only; the
expectations come from RedisBloom's sources and from replies RedisBloom 2.4.23
gave (shared/reference/files/redisbloom-2.4.23.txt)."""

import time

import pytest
import redis

from conftest import AGAINST_REDIS, Server
from test_connection import Err, Raw, Status

pytestmark = pytest.mark.skipif(AGAINST_REDIS, reason="needs the RedisBloom module")

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
BAD_INCREMENT = (
    "TopK: increment must be an integer greater or equal to 0"
    + " " * 28
    + "and smaller or equal to 100,000"
)


def err(r, *args):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*args)
    return str(e.value)


def test_reference_replay_gives_redisbloom_replies(r):
    """The commands that built the reference file give RedisBloom's replies,
    decay decisions included: Keel draws them from glibc's rand() sequence."""
    assert r.topk().reserve("topk:k", 5, 100, 7, 0.9)
    p = r.pipeline(transaction=False)
    for i in range(3000):
        p.execute_command("TOPK.ADD", "topk:k", f"t{(i * i) % 41}")
    p.execute()
    assert r.execute_command("TOPK.LIST", "topk:k", "WITHCOUNT") == [
        "t25", 147, "t36", 147, "t16", 147, "t1", 147, "t4", 147,
    ]
    assert r.topk().list("topk:k") == ["t25", "t36", "t16", "t1", "t4"]
    assert r.topk().query("topk:k", "t0", "t1", "t9") == [0, 1, 0]
    info = r.topk().info("topk:k")
    assert (info.k, info.width, info.depth) == (5, 100, 7)
    assert float(info.decay) == 0.9
    assert r.type("topk:k") == "TopK-TYPE"


def test_add_reports_expelled_items(r):
    r.topk().reserve("k", 2, 50, 4, 0.9)
    assert r.topk().add("k", "a", "b") == [None, None]
    # "c" reaches the heap minimum and takes its slot, pushing one item out.
    out = r.topk().add("k", "c", "c")
    assert out[0] in ("a", "b") and out[1] is None
    assert r.topk().query("k", "c") == [1]
    assert r.execute_command("TOPK.COUNT", "k", "c", "zzz") == [2, 0]


def test_incrby_and_its_limits(server, r):
    r.topk().reserve("k", 3, 8, 7, 0.9)
    assert r.topk().incrby("k", ["foo", "bar", "x42"], [3, 2, 30]) == [None, None, None]
    assert r.execute_command("TOPK.LIST", "k", "WITHCOUNT") == ["x42", 30, "foo", 3, "bar", 2]
    c = Raw(server.port)
    try:
        c.send("TOPK.INCRBY", "k", "x", "100001")
        assert c.read() == [Err(BAD_INCREMENT)]
        # The items before a bad increment are added; the reply ends at it.
        c.send("TOPK.INCRBY", "k", "x", "1", "y", "-1")
        assert c.read() == [None, Err(BAD_INCREMENT)]
    finally:
        c.close()
    assert "wrong number of arguments for 'topk.incrby'" in err(r, "TOPK.INCRBY", "k", "x", "1", "y")


def test_reserve_defaults_and_errors(r):
    assert r.execute_command("TOPK.RESERVE", "d", "10") == "OK"
    assert r.execute_command("TOPK.INFO", "d") == ["k", 10, "width", 8, "depth", 7, "decay", "0.90000000000000002"]
    assert err(r, "TOPK.RESERVE", "d", "10") == "TopK: key already exists"
    r.set("s", "x")
    assert err(r, "TOPK.RESERVE", "s", "10") == "TopK: key already exists"
    assert err(r, "TOPK.RESERVE", "n", "0") == "TopK: invalid k"
    assert err(r, "TOPK.RESERVE", "n", "x") == "TopK: invalid k"
    assert err(r, "TOPK.RESERVE", "n", "1", "0", "7", "0.9") == "TopK: invalid width"
    assert err(r, "TOPK.RESERVE", "n", "1", "8", "-1", "0.9") == "TopK: invalid depth"
    msg = "TopK: invalid decay value. must be '<= 1' & '> 0'"
    assert err(r, "TOPK.RESERVE", "n", "1", "8", "7", "0") == msg
    assert err(r, "TOPK.RESERVE", "n", "1", "8", "7", "1.5") == msg
    assert r.execute_command("TOPK.RESERVE", "one", "1", "8", "7", "1") == "OK"
    assert "wrong number of arguments" in err(r, "TOPK.RESERVE", "n", "1", "8")
    # (redis-py drops the ERR code from the message.)
    msg = "Insufficient memory to create topk data structure"
    assert err(r, "TOPK.RESERVE", "n", "1", "4294967295", "4294967295", "0.9") == msg
    assert r.exists("n") == 0


def test_missing_keys_and_wrong_types(r):
    for cmd in (("TOPK.ADD", "nokey", "a"), ("TOPK.INCRBY", "nokey", "a", "1"),
                ("TOPK.QUERY", "nokey", "a"), ("TOPK.COUNT", "nokey", "a"),
                ("TOPK.LIST", "nokey"), ("TOPK.INFO", "nokey")):
        assert err(r, *cmd) == "TopK: key does not exist"
    r.set("s", "x")
    assert err(r, "TOPK.ADD", "s", "a") == WRONGTYPE
    assert err(r, "TOPK.LIST", "s") == WRONGTYPE


def test_list_keyword_is_a_prefix_of_withcount(r):
    r.topk().reserve("k", 3, 8, 7, 0.9)
    r.topk().add("k", "a")
    assert r.execute_command("TOPK.LIST", "k", "with") == ["a", 1]
    assert r.execute_command("TOPK.LIST", "k", "withcount") == ["a", 1]
    assert err(r, "TOPK.LIST", "k", "WITHCOUNTS") == "WITHCOUNT keyword expected"
    assert "wrong number of arguments" in err(r, "TOPK.LIST", "k", "WITHCOUNT", "x")
    # Empty slots are not listed.
    assert r.topk().list("k") == ["a"]


def test_replies_are_simple_strings(server):
    c = Raw(server.port)
    try:
        c.send("TOPK.RESERVE", "simple", "1")
        assert c.read() == Status("OK")
        c.send("TOPK.ADD", "simple", "a")
        assert c.read() == [None]
        c.send("TOPK.LIST", "simple")
        assert c.read() == [Status("a")]
    finally:
        c.close()


def test_sketch_travels_with_its_key(r):
    r.topk().reserve("k", 3, 20, 4, 0.9)
    r.topk().add("k", *["a"] * 5, *["b"] * 3, "c")
    assert r.object("encoding", "k") == "raw"
    assert r.memory_usage("k") > 20 * 4 * 8
    assert r.copy("k", "k2")
    assert r.execute_command("TOPK.LIST", "k2", "WITHCOUNT") == ["a", 5, "b", 3, "c", 1]
    r.rename("k2", "k3")
    assert r.topk().query("k3", "a") == [1]
    payload = r.dump("k")
    r.restore("k4", 0, payload)
    assert r.execute_command("TOPK.LIST", "k4", "WITHCOUNT") == ["a", 5, "b", 3, "c", 1]
    assert list(r.scan_iter(_type="TopK-TYPE")) != []
    assert r.delete("k4") == 1


def test_save_and_aof_keep_the_sketch(tmp_path):
    # A command-form AOF base: the sketch is rewritten as RESTORE of its DUMP,
    # as RedisBloom rewrites it.
    s = Server("--dir", str(tmp_path), "--appendonly", "yes", "--aof-use-rdb-preamble", "no")
    try:
        r = s.client()
        r.topk().reserve("k", 3, 20, 4, 0.9)
        r.topk().add("k", *["a"] * 5, *["b"] * 3, "c")
        assert r.save()
        r.bgrewriteaof()
        for _ in range(200):
            p = r.info("persistence")
            if not p["aof_rewrite_in_progress"] and not p["aof_rewrite_scheduled"]:
                break
            time.sleep(0.05)
        want = r.execute_command("TOPK.LIST", "k", "WITHCOUNT")
    finally:
        s.stop()
    base = [f for f in (tmp_path / "appendonlydir").iterdir() if ".base." in f.name]
    assert len(base) == 1 and b"RESTORE" in base[0].read_bytes()
    s = Server("--dir", str(tmp_path), "--appendonly", "yes")
    try:
        r = s.client()
        assert r.execute_command("TOPK.LIST", "k", "WITHCOUNT") == want
        assert r.execute_command("TOPK.COUNT", "k", "a") == [5]
    finally:
        s.stop()


def test_command_docs_name_the_group(server, r):
    c = Raw(server.port)
    try:
        c.send("COMMAND", "DOCS", "TOPK.ADD")
        name, flat = c.read()
        d = dict(zip(flat[::2], flat[1::2]))
        assert name == b"topk.add" and d[b"group"] == b"topk"
    finally:
        c.close()
    names = [n.lower() for n in r.command_list(category="topk")]
    assert sorted(names) == sorted(
        f"topk.{n}" for n in ("reserve", "add", "incrby", "query", "count", "list", "info")
    )


def test_current_redisbloom_counting(r):
    """Current RedisBloom (followed here) lets a counter holding the item's
    fingerprint grow whatever the heap holds, and an item whose estimate
    reaches the heap minimum takes the minimum's place; older releases held
    such counters at the minimum and needed a count above it."""
    r.execute_command("TOPK.RESERVE", "cur", "1", "1000", "1", "0.9")
    assert r.execute_command("TOPK.ADD", "cur", "a", "a", "a") == [None, None, None]
    assert r.execute_command("TOPK.ADD", "cur", "b", "b", "b") == [None, None, "a"]
    assert r.execute_command("TOPK.LIST", "cur", "WITHCOUNT") == ["b", 3]

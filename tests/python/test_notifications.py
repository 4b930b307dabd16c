"""Keyspace notifications (notify-keyspace-events): the exact messages, in order, that
each command family publishes, seen by a redis-py PubSub psubscribed to every
keyspace and keyevent channel."""

import time

import pytest
import redis

from conftest import running_server

PATTERN = "__key*@*__:*"
SENTINEL = "notifications-test-sentinel"


class Events:
    """A psubscribed PubSub; `take()` returns what arrived since the last call."""

    def __init__(self, server):
        self.client = server.client()
        self.pubsub = self.client.pubsub()
        self.pubsub.psubscribe(PATTERN)
        self.pubsub.subscribe(SENTINEL)
        # Swallow the two confirmations.
        for _ in range(2):
            assert self.pubsub.get_message(timeout=5)["type"] in ("psubscribe", "subscribe")

    def raw(self):
        """Every (channel, data) message up to a sentinel published now: publication
        is ordered, so everything published before it comes first."""
        self.client.publish(SENTINEL, "end")
        out = []
        deadline = time.time() + 10
        while time.time() < deadline:
            m = self.pubsub.get_message(timeout=1)
            if m is None:
                continue
            if m["channel"] == SENTINEL:
                return out
            assert m["type"] == "pmessage", m
            assert m["pattern"] == PATTERN
            out.append((m["channel"], m["data"]))
        raise AssertionError(f"no sentinel; got {out}")

    def take(self):
        """The events as `event key` (`event@db key` outside database 0), checking that
        each keyspace message is followed by its keyevent message."""
        msgs = self.raw()
        out = []
        assert len(msgs) % 2 == 0, msgs
        for (space, event), (kev, key) in zip(msgs[::2], msgs[1::2]):
            db = space[len("__keyspace@"):space.index("__:")]
            assert space == f"__keyspace@{db}__:{key}", msgs
            assert kev == f"__keyevent@{db}__:{event}", msgs
            out.append(f"{event} {key}" if db == "0" else f"{event}@{db} {key}")
        return out

    def close(self):
        self.pubsub.close()
        self.client.close()


@pytest.fixture
def ev(server, r):
    r.config_set("notify-keyspace-events", "KEA")
    e = Events(server)
    try:
        yield e
    finally:
        e.close()
        r.config_set("notify-keyspace-events", "")


def test_config_set_and_get_canonical_form(r):
    try:
        for given, shown in [("KEA", "AKE"), ("Ex", "xE"), ("EKn", "nKE"), ("Agm", "Am"),
                             ("KEg$lshzxetd", "AKE"), ("An", "A"), ("mn", "nm"), ("te", "et"),
                             ("", "")]:
            assert r.config_set("notify-keyspace-events", given)
            assert r.config_get("notify-keyspace-events") == {"notify-keyspace-events": shown}
        with pytest.raises(redis.ResponseError) as e:
            r.config_set("notify-keyspace-events", "KEQ")
        assert "Invalid event class character. Use 'Ag$lshzxeKEtmdn'." in str(e.value)
        with pytest.raises(redis.ResponseError):
            r.config_set("notify-keyspace-events", "K E")
        # A refused value changes nothing.
        assert r.config_get("notify-keyspace-events") == {"notify-keyspace-events": ""}
    finally:
        r.config_set("notify-keyspace-events", "")


def test_config_file_directive():
    with running_server("--notify-keyspace-events", "Kl") as s:
        c = s.client()
        assert c.config_get("notify-keyspace-events") == {"notify-keyspace-events": "lK"}
        e = Events(s)
        c.rpush("l", "a")
        c.set("s", "v")
        assert e.raw() == [("__keyspace@0__:l", "rpush")]
        e.close()
        c.close()


def test_nothing_is_published_when_off(server, r):
    e = Events(server)
    try:
        r.set("k", "v")
        r.delete("k")
        assert e.take() == []
    finally:
        e.close()


def test_only_the_enabled_channels_and_classes(server, r):
    e = Events(server)
    try:
        r.config_set("notify-keyspace-events", "E$")
        r.set("k", "v")
        r.delete("k")
        r.config_set("notify-keyspace-events", "Kg")
        r.set("k", "v")
        r.delete("k")
        assert e.raw() == [("__keyevent@0__:set", "k"), ("__keyspace@0__:k", "del")]
    finally:
        e.close()
        r.config_set("notify-keyspace-events", "")


def test_generic(r, ev):
    r.set("a", "1")
    r.set("b", "2")
    ev.take()
    assert r.delete("a", "missing", "b") == 2
    r.set("a", "1")
    r.unlink("a")
    r.set("a", "1")
    r.expire("a", 100)
    r.expire("a", 50, gt=True)  # Not later: no change, no event.
    r.pexpire("a", 200000)
    r.expireat("a", int(time.time()) + 1000)
    r.persist("a")
    r.persist("a")
    r.expire("a", -1)  # A time in the past deletes the key.
    assert ev.take() == ["del a", "del b", "set a", "del a", "set a", "expire a", "expire a",
                         "expire a", "persist a", "del a"]
    r.set("a", "1")
    r.rename("a", "b")
    r.rename("b", "b")
    r.set("c", "3")
    assert not r.renamenx("b", "c")
    r.renamenx("b", "d")
    r.copy("d", "e")
    r.copy("d", "e", destination_db=2)
    r.move("e", 3)
    assert ev.take() == ["set a", "rename_from a", "rename_to b", "set c", "rename_from b",
                         "rename_to d", "copy_to e", "copy_to@2 e", "move_from e",
                         "move_to@3 e"]
    dump = r.dump("d")
    r.restore("d2", 0, dump)
    r.restore("d2", 0, dump, replace=True)
    r.restore("d2", 1, dump, replace=True, absttl=True)  # In the past: the key goes.
    r.touch("d")
    r.exists("d")
    r.flushdb()
    assert ev.take() == ["restore d2", "restore d2", "del d2"]


def test_strings(r, ev):
    r.set("s", "v")
    r.set("s", "v", ex=100)
    r.set("s", "w", nx=True)
    r.set("s", "w", xx=True, keepttl=True)
    r.set("s", "x", get=True)
    r.setnx("s", "y")
    r.setnx("n", "y")
    r.setex("s", 100, "v")
    r.psetex("s", 100000, "v")
    assert ev.take() == ["set s", "set s", "expire s", "set s", "set s", "set n", "set s",
                         "expire s", "set s", "expire s"]
    r.mset({"m1": "1", "m2": "2"})
    r.msetnx({"m1": "1", "m3": "3"})
    r.msetnx({"m3": "3", "m4": "4"})
    r.incr("i")
    r.decr("i")
    r.incrby("i", 5)
    r.decrby("i", 5)
    r.incrbyfloat("f", 1.5)
    r.append("s", "tail")
    r.append("new", "x")
    r.setrange("s", 2, "zz")
    r.setrange("s", 2, "")
    r.setrange("none", 2, "")
    r.getset("s", "g")
    assert ev.take() == ["set m1", "set m2", "set m3", "set m4", "incrby i", "incrby i",
                         "incrby i", "incrby i", "incrbyfloat f", "append s", "append new",
                         "setrange s", "set s"]
    r.getex("s", ex=100)
    r.getex("s", persist=True)
    r.getex("s", persist=True)
    r.getex("s")
    r.getex("s", exat=1)
    r.getdel("m1")
    r.getdel("m1")
    r.get("m2")
    r.strlen("m2")
    assert ev.take() == ["expire s", "persist s", "del s", "del m1"]


def test_bitmaps(r, ev):
    r.setbit("b", 7, 1)
    r.setbit("b", 7, 1)  # The same bit again: no change, no event.
    r.setbit("b", 100, 0)  # Grows the string: a change.
    r.bitop("OR", "dest", "b")
    r.bitop("AND", "dest", "missing")  # An empty result deletes the destination.
    r.bitop("AND", "dest", "missing")
    r.bitfield("bf").set("u8", 0, 1).execute()
    r.bitfield("bf").set("u8", 0, 1).execute()
    r.bitfield("bf").get("u8", 0).execute()
    r.bitfield("bf").incrby("u8", 0, 1).execute()
    assert ev.take() == ["setbit b", "setbit b", "set dest", "del dest", "setbit bf",
                         "setbit bf"]


def test_lists(r, ev):
    r.lpush("l", "a", "b")
    r.rpush("l", "c")
    r.lpushx("l", "d")
    r.rpushx("l", "e")
    r.lpushx("nolist", "d")
    r.linsert("l", "BEFORE", "c", "x")
    r.linsert("l", "BEFORE", "nope", "x")
    r.lset("l", 0, "z")
    r.lrem("l", 0, "x")
    r.lrem("l", 0, "nope")
    r.ltrim("l", 0, -1)
    r.lpop("l")
    r.rpop("l")
    r.lpop("l", 0)
    assert ev.take() == ["lpush l", "rpush l", "lpush l", "rpush l", "linsert l", "lset l",
                         "lrem l", "ltrim l", "lpop l", "rpop l"]
    r.rpop("l", 5)
    r.rpush("l", "a", "b")
    r.ltrim("l", 5, 10)
    r.rpush("l", "a", "b")
    r.lrem("l", 0, "a")
    r.lrem("l", 0, "b")
    assert ev.take() == ["rpop l", "del l", "rpush l", "ltrim l", "del l", "rpush l",
                         "lrem l", "lrem l", "del l"]
    r.rpush("src", "1", "2")
    r.lmove("src", "dst", "LEFT", "RIGHT")
    r.rpoplpush("src", "dst")
    r.rpoplpush("src", "dst")
    r.lmove("dst", "dst", "LEFT", "RIGHT")
    r.lmpop(2, "none", "dst", direction="LEFT", count=5)
    assert ev.take() == ["rpush src", "rpush dst", "lpop src", "lpush dst", "rpop src",
                         "del src", "rpush dst", "lpop dst", "lpop dst", "del dst"]


def test_blocking_list_pops(server, r, ev):
    r.rpush("l", "a", "b")
    r.blpop(["none", "l"], timeout=1)
    r.brpop(["l"], timeout=1)
    r.rpush("l", "a")
    r.blmove("l", "m", 1, "RIGHT", "LEFT")
    r.brpoplpush("m", "l", 1)
    r.blmpop(1, 1, "l", direction="RIGHT", count=3)
    assert ev.take() == ["rpush l", "lpop l", "rpop l", "del l", "rpush l", "lpush m",
                         "rpop l", "del l", "lpush l", "rpop m", "del m", "rpop l", "del l"]
    # A client served while blocked publishes its pop after the push that woke it.
    served_while_blocked(server, r, ["BLPOP", "q", 5], lambda: r.rpush("q", "x"))
    assert ev.take() == ["rpush q", "lpop q", "del q"]
    served_while_blocked(server, r, ["BLMOVE", "q", "d", "LEFT", "RIGHT", 5],
                         lambda: r.rpush("q", "x", "y"))
    assert ev.take() == ["rpush q", "rpush d", "lpop q"]
    served_while_blocked(server, r, ["BZPOPMIN", "z", 5], lambda: r.zadd("z", {"m": 1}))
    assert ev.take() == ["zadd z", "zpopmin z", "del z"]


def served_while_blocked(server, r, command, wake):
    """Run `command` on a client of its own, wait until it blocks, `wake()` it, and
    return its reply."""
    waiter = server.client()
    conn = waiter.connection_pool.get_connection(command[0])
    conn.send_command(*command)
    deadline = time.time() + 5
    while r.execute_command("CLIENT", "LIST").count(f"cmd={command[0].lower()}") == 0:
        assert time.time() < deadline
        time.sleep(0.01)
    wake()
    reply = conn.read_response()
    waiter.connection_pool.release(conn)
    waiter.close()
    return reply


def test_hashes(r, ev):
    r.hset("h", mapping={"a": "1", "b": "2"})
    r.hset("h", "a", "1")
    r.execute_command("HMSET", "h", "c", "3")
    r.hsetnx("h", "a", "x")
    r.hsetnx("h", "d", "4")
    r.hincrby("h", "n", 2)
    r.hincrbyfloat("h", "f", 1.5)
    r.hdel("h", "nope")
    r.hdel("h", "a", "b")
    r.hdel("h", "c", "d", "n", "f")
    r.hdel("h", "c")
    r.hget("h", "a")
    assert ev.take() == ["hset h", "hset h", "hset h", "hset h", "hincrby h", "hincrbyfloat h",
                         "hdel h", "hdel h", "del h"]


def test_sets(r, ev):
    r.sadd("s", "a", "b", "c")
    r.sadd("s", "a")
    r.srem("s", "nope")
    r.srem("s", "a")
    r.smove("s", "t", "b")
    r.smove("s", "t", "nope")
    r.smove("s", "t", "c")
    r.sadd("t", "x")
    r.smove("t", "t", "x")
    assert ev.take() == ["sadd s", "srem s", "srem s", "sadd t", "srem s", "del s", "sadd t",
                         "sadd t"]
    r.sadd("u", "b")
    r.smove("t", "u", "b")  # Already a member of the destination: no sadd.
    r.spop("t")
    r.spop("t", 0)
    r.spop("t", 10)
    r.spop("t")
    assert ev.take() == ["sadd u", "srem t", "spop t", "spop t", "del t"]
    r.sadd("a", "1", "2")
    r.sadd("b", "2", "3")
    r.sinterstore("i", "a", "b")
    r.sunionstore("n", "a", "b")
    r.sdiffstore("d", "a", "b")
    r.sinterstore("i", "a", "missing")
    r.sinterstore("i", "a", "missing")
    r.sdiffstore("d", "a", "a")
    r.sunionstore("n", "missing")
    assert ev.take() == ["sadd a", "sadd b", "sinterstore i", "sunionstore n", "sdiffstore d",
                         "del i", "del d", "del n"]


def test_zsets(r, ev):
    r.zadd("z", {"a": 1, "b": 2, "c": 3})
    r.zadd("z", {"a": 1})
    r.zadd("z", {"a": 5})
    r.zadd("z", {"a": 1}, incr=True)
    r.zadd("z", {"a": 1}, nx=True)
    r.zincrby("z", 2, "b")
    r.zincrby("z", 2, "new")
    r.zrem("z", "nope")
    r.zrem("z", "new")
    r.zremrangebyscore("z", 100, 200)
    r.zremrangebyscore("z", 0, 0)
    assert ev.take() == ["zadd z", "zadd z", "zincr z", "zincr z", "zincr z", "zrem z"]
    r.zadd("z", {"d": 10, "e": 11, "f": 12})
    r.zremrangebyrank("z", 0, 0)
    r.zremrangebylex("y", "-", "+")
    r.zadd("y", {"a": 0, "b": 0})
    r.zremrangebylex("y", "[a", "[a")
    r.zremrangebylex("y", "-", "+")
    assert ev.take() == ["zadd z", "zremrangebyrank z", "zadd y", "zremrangebylex y",
                         "zremrangebylex y", "del y"]
    r.zpopmin("z")
    r.zpopmax("z", 2)
    r.zpopmin("z", 0)
    r.zmpop(2, ["none", "z"], min=True, count=10)
    r.zmpop(1, ["z"], min=True)
    assert ev.take() == ["zpopmin z", "zpopmax z", "zpopmin z", "del z"]
    r.zadd("z", {"a": 1, "b": 2})
    r.bzpopmin("z", 1)
    r.bzpopmax("z", 1)
    r.zadd("z", {"a": 1})
    r.bzmpop(1, 1, ["z"], max=True)
    assert ev.take() == ["zadd z", "zpopmin z", "zpopmax z", "del z", "zadd z", "zpopmax z",
                         "del z"]
    r.zadd("p", {"a": 1, "b": 2})
    r.zadd("q", {"b": 3, "c": 4})
    r.zunionstore("u", ["p", "q"])
    r.zinterstore("i", ["p", "q"])
    r.zdiffstore("d", ["p", "q"])
    r.zrangestore("rs", "p", 0, -1)
    r.zinterstore("i", ["p", "missing"])
    r.zinterstore("i", ["p", "missing"])
    r.zdiffstore("d", ["p", "p"])
    r.zrangestore("rs", "p", 5, 10)
    r.zunionstore("u", ["missing"])
    r.zrangestore("rs", "missing", 0, -1)
    assert ev.take() == ["zadd p", "zadd q", "zunionstore u", "zinterstore i", "zdiffstore d",
                         "zrangestore rs", "del i", "del d", "del rs", "del u"]


def test_expired_lazily_and_actively(r, ev):
    r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
    try:
        r.set("lazy", "v", px=20)
        r.set("other", "v", px=20)
        time.sleep(0.1)
        # Found expired while looking it up: `expired` before the command's own event.
        assert r.get("lazy") is None
        r.set("other", "again")
        assert ev.take() == ["set lazy", "expire lazy", "set other", "expire other",
                             "expired lazy", "expired other", "set other"]
    finally:
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
    # Nobody reads these: the active cycle removes them.
    r.set("active", "v", px=20)
    r.pexpire("other", 20)
    deadline = time.time() + 5
    got = []
    while time.time() < deadline and len(got) < 5:
        got += ev.take()
        time.sleep(0.05)
    assert got[:3] == ["set active", "expire active", "expire other"]
    assert sorted(got[3:]) == ["expired active", "expired other"]
    assert r.dbsize() == 0


def test_expired_class_alone(server, r):
    r.config_set("notify-keyspace-events", "Ex")
    e = Events(server)
    try:
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        r.set("k", "v", px=10)
        time.sleep(0.05)
        assert r.exists("k") == 0
        assert e.raw() == [("__keyevent@0__:expired", "k")]
    finally:
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
        e.close()
        r.config_set("notify-keyspace-events", "")


def test_multi_and_scripts_publish_as_commands_run(r, ev):
    p = r.pipeline(transaction=True)
    p.set("a", "1")
    p.lpush("l", "x")
    p.delete("a")
    p.execute()
    r.eval("redis.call('SET', KEYS[1], 'v'); redis.call('INCR', KEYS[2]); "
           "redis.call('DEL', KEYS[1])", 2, "s", "n")
    assert ev.take() == ["set a", "lpush l", "del a", "set s", "incrby n", "del s"]


def test_flush_publishes_nothing(r, ev):
    r.set("a", "1")
    r.flushdb()
    r.set("a", "1")
    r.flushall()
    assert ev.take() == ["set a", "set a"]


def test_key_miss_on_reads_only(server, r):
    r.config_set("notify-keyspace-events", "Em")
    e = Events(server)
    try:
        r.set("hit", "v")
        r.get("hit")
        r.get("g")
        r.mget("m1", "hit", "m2")
        r.exists("e", "hit")
        r.type("t")
        r.ttl("ttl")
        r.strlen("len")
        r.hget("h", "f")
        r.lrange("l", 0, -1)
        r.smembers("s")
        r.zscore("z", "m")
        r.zrange("z", 0, -1)
        r.dump("d")
        r.copy("c", "dst")
        r.touch("to")
        r.getdel("gd")
        r.getset("gs", "v")
        r.set("sg", "v", get=True)
        r.object("encoding", "o")
        r.lcs("l1", "l2")
        r.zunionstore("zu", ["zm1", "zm2"])
        r.zrangestore("zr", "zm3", 0, -1)
        r.hscan("hs")
        r.zscan("zs")
        r.sscan("ss")
        # Writes look keys up for writing: no key miss.
        r.lpush("w1", "x")
        r.incr("w2")
        r.delete("w3")
        r.expire("w4", 10)
        assert e.raw() == [
            ("__keyevent@0__:keymiss", k) for k in [
                "g", "m1", "m2", "e", "t", "ttl", "len", "h", "l", "s", "z", "z", "d", "c",
                "to", "gd", "gs", "sg", "l1", "l2", "zm1", "zm2", "zm3", "hs", "zs", "ss"]]
    finally:
        e.close()
        r.config_set("notify-keyspace-events", "")


def test_new_keys(server, r):
    r.config_set("notify-keyspace-events", "KEAn")
    e = Events(server)
    try:
        r.set("s", "1")
        r.set("s", "2")
        r.incr("i")
        r.append("a", "x")
        r.setbit("b", 3, 1)
        r.lpush("l", "x")
        r.lmove("l", "l2", "LEFT", "RIGHT")
        r.hset("h", "f", "v")
        r.sadd("st", "m")
        r.smove("st", "st2", "m")
        r.zadd("z", {"m": 1})
        r.rename("z", "z2")
        r.set("z3", "x")
        r.rename("z2", "z3")
        r.copy("s", "c")
        r.copy("s", "c", replace=True)
        r.move("c", 1)
        r.sunionstore("u", "st2")
        r.sunionstore("u", "st2")
        assert e.take() == [
            "new s", "set s", "set s", "new i", "incrby i", "new a", "append a", "new b",
            "setbit b", "new l", "lpush l", "new l2", "rpush l2", "lpop l", "del l", "new h",
            "hset h", "new st", "sadd st", "srem st", "del st", "new st2", "sadd st2", "new z",
            "zadd z", "new z2", "rename_from z", "rename_to z2", "new z3", "set z3", "new z3",
            "rename_from z2", "rename_to z3", "new c", "copy_to c", "new c", "copy_to c",
            "new@1 c", "move_from c", "move_to@1 c", "new u", "sunionstore u", "sunionstore u"]
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        r.set("x", "1", px=10)
        time.sleep(0.05)
        r.set("x", "2")
        assert e.take() == ["new x", "set x", "expire x", "expired x", "new x", "set x"]
    finally:
        r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")
        e.close()
        r.config_set("notify-keyspace-events", "")

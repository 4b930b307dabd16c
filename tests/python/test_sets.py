"""Set commands: SADD, SREM, SMEMBERS, SISMEMBER, SMISMEMBER, SCARD, SPOP,
SRANDMEMBER, SMOVE, SINTER, SINTERCARD, SINTERSTORE, SUNION, SUNIONSTORE,
SDIFF, SDIFFSTORE and SSCAN, their encodings and their RESP3 replies."""

import socket

import pytest
import redis

from conftest import AGAINST_REDIS, running_server

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
NOT_INT = "value is not an integer or out of range"


def err(r, *args):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*args)
    return str(e.value)


def arity(name):
    return f"wrong number of arguments for '{name}' command"


def resp3_head(server, *args):
    """The first line of the RESP3 reply to `args` (`~2` for a set of two,
    `*2` for an array, `_` for null), read off a plain socket so no client
    library reshapes it."""
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        f = s.makefile("rb")

        def send(*argv):
            out = b"*%d\r\n" % len(argv)
            for a in argv:
                a = str(a).encode()
                out += b"$%d\r\n%s\r\n" % (len(a), a)
            s.sendall(out)

        send("HELLO", "3")
        assert f.readline().startswith(b"%")
        # Skip the HELLO map: 7 pairs of one-line or two-line values.
        s.settimeout(2)
        send("PING")
        while f.readline() != b"+PONG\r\n":
            pass
        send(*args)
        return f.readline().rstrip(b"\r\n").decode()


# SADD / SREM / SCARD / SISMEMBER / SMISMEMBER / SMEMBERS


def test_sadd_srem_scard(r):
    assert r.sadd("s", "a", "b", "c", "a") == 3
    assert r.sadd("s", "c", "d") == 1
    assert r.scard("s") == 4
    assert r.smembers("s") == {"a", "b", "c", "d"}
    assert r.srem("s", "a", "zz", "a") == 1
    assert r.scard("s") == 3
    assert r.srem("missing", "a") == 0
    assert r.scard("missing") == 0
    # The last member gone, the key goes too.
    assert r.srem("s", "b", "c", "d") == 3
    assert r.exists("s") == 0
    assert r.type("s") == "none"


def test_sismember_smismember(r):
    r.sadd("s", "a", "1", "-5")
    assert r.sismember("s", "a") == 1
    assert r.sismember("s", "-5") == 1
    assert r.sismember("s", "b") == 0
    assert r.sismember("missing", "a") == 0
    assert r.execute_command("SMISMEMBER", "s", "a", "x", "1") == [1, 0, 1]
    assert r.execute_command("SMISMEMBER", "missing", "a", "b") == [0, 0]


def test_integer_members_compare_as_text(r):
    r.sadd("s", "1", "2", "10")
    # "01" and "+1" are other strings than "1".
    assert r.sismember("s", "01") == 0
    assert r.sismember("s", "+1") == 0
    assert r.sadd("s", "01") == 1
    assert r.smembers("s") == {"1", "2", "10", "01"}
    assert r.sadd("s", "-9223372036854775808", "9223372036854775807", "9223372036854775808") == 3
    assert r.sismember("s", "9223372036854775808") == 1
    assert r.sismember("s", "-9223372036854775808") == 1


def test_binary_members(rb):
    assert rb.sadd(b"s", b"\x00\xff", b"", b"a b") == 3
    assert rb.smembers(b"s") == {b"\x00\xff", b"", b"a b"}
    assert rb.sismember(b"s", b"") == 1


def test_wrongtype_and_arity(r):
    r.set("str", "x")
    for args in (("SADD", "str", "a"), ("SREM", "str", "a"), ("SMEMBERS", "str"),
                 ("SISMEMBER", "str", "a"), ("SMISMEMBER", "str", "a"), ("SCARD", "str"),
                 ("SPOP", "str"), ("SPOP", "str", "2"), ("SRANDMEMBER", "str"),
                 ("SRANDMEMBER", "str", "2"), ("SINTER", "str"), ("SUNION", "str"),
                 ("SDIFF", "str"), ("SINTERCARD", "1", "str"), ("SINTERSTORE", "d", "str"),
                 ("SUNIONSTORE", "d", "str"), ("SDIFFSTORE", "d", "str"),
                 ("SSCAN", "str", "0"), ("SMOVE", "str", "d", "a")):
        assert err(r, *args) == WRONGTYPE, args
    for args in (("SADD", "s"), ("SREM", "s"), ("SMEMBERS",), ("SMEMBERS", "a", "b"),
                 ("SISMEMBER", "s"), ("SMISMEMBER", "s"), ("SCARD",), ("SPOP",),
                 ("SRANDMEMBER",), ("SMOVE", "a", "b"), ("SINTER",), ("SINTERCARD", "1"),
                 ("SINTERSTORE", "d"), ("SUNION",), ("SUNIONSTORE", "d"), ("SDIFF",),
                 ("SDIFFSTORE", "d"), ("SSCAN", "s")):
        assert err(r, *args) == arity(args[0].lower()), args
    # Nothing was created by the failed writes.
    assert r.keys("*") == ["str"]


# SPOP / SRANDMEMBER


def test_spop(r):
    members = {str(i) for i in range(10)} | {"a", "b"}
    r.sadd("s", *members)
    one = r.spop("s")
    assert one in members
    assert r.sismember("s", one) == 0
    got = r.spop("s", 4)
    assert len(got) == 4 and set(got) <= members and one not in got
    assert r.scard("s") == 7
    rest = r.spop("s", 100)
    assert len(rest) == 7
    assert {one, *got, *rest} == members
    assert r.exists("s") == 0
    assert r.spop("s") is None
    assert r.spop("s", 3) == []
    r.sadd("s", "x")
    assert r.spop("s", 0) == []
    assert r.scard("s") == 1
    assert r.spop("s") == "x"
    assert r.exists("s") == 0


def test_spop_errors(r):
    r.sadd("s", "a")
    positive = "value is out of range, must be positive"
    assert err(r, "SPOP", "s", "-1") == positive
    assert err(r, "SPOP", "s", "x") == positive
    assert err(r, "SPOP", "missing", "-1") == positive
    assert err(r, "SPOP", "s", "1", "2") == "syntax error"


def test_spop_big_set_pops_distinct_members(r):
    r.sadd("s", *[f"m{i}" for i in range(1000)])
    seen = set()
    for n in (1, 10, 500, 300):
        got = r.spop("s", n)
        assert len(got) == n and len(set(got)) == n
        assert not (seen & set(got))
        seen |= set(got)
    assert r.scard("s") == 1000 - len(seen)
    assert set(r.smembers("s")) | seen == {f"m{i}" for i in range(1000)}


def test_srandmember(r):
    assert r.srandmember("missing") is None
    assert r.srandmember("missing", 3) == []
    assert r.srandmember("missing", -3) == []
    members = {"a", "b", "c", "1", "2"}
    r.sadd("s", *members)
    assert r.srandmember("s") in members
    got = r.srandmember("s", 3)
    assert len(got) == 3 and len(set(got)) == 3 and set(got) <= members
    assert sorted(r.srandmember("s", 10)) == sorted(members)
    assert r.srandmember("s", 0) == []
    rep = r.srandmember("s", -20)
    assert len(rep) == 20 and set(rep) <= members
    # Nothing was removed.
    assert r.scard("s") == 5


def test_srandmember_big_set(r):
    r.sadd("s", *range(2000))
    got = r.srandmember("s", 50)
    assert len(set(got)) == 50
    got = r.srandmember("s", 1900)
    assert len(set(got)) == 1900
    rep = r.srandmember("s", -3000)
    assert len(rep) == 3000
    # With 3000 draws from 2000 members some repeat.
    assert len(set(rep)) < 3000


def test_srandmember_errors(r):
    r.sadd("s", "a")
    assert err(r, "SRANDMEMBER", "s", "x") == NOT_INT
    assert err(r, "SRANDMEMBER", "s", "1", "2") == "syntax error"
    assert err(r, "SRANDMEMBER", "s", "-9223372036854775808") == (
        "value is out of range, value must between -9223372036854775807 and 9223372036854775807")


# SMOVE


def test_smove(r):
    r.sadd("src", "a", "b")
    r.sadd("dst", "b")
    assert r.smove("src", "dst", "a") == 1
    assert r.smembers("src") == {"b"}
    assert r.smembers("dst") == {"a", "b"}
    # Already in the destination: still moved out of the source.
    assert r.smove("src", "dst", "b") == 1
    assert r.exists("src") == 0
    assert r.smembers("dst") == {"a", "b"}
    assert r.smove("dst", "dst", "a") == 1
    assert r.smove("dst", "dst", "zz") == 0
    assert r.smove("dst", "new", "zz") == 0
    assert r.exists("new") == 0
    assert r.smove("dst", "new", "a") == 1
    assert r.smembers("new") == {"a"}
    assert r.smove("missing", "new", "a") == 0


def test_smove_types(r):
    r.set("str", "x")
    r.sadd("s", "a")
    # A missing source answers 0 before the destination's type is looked at.
    assert r.smove("missing", "str", "a") == 0
    assert err(r, "SMOVE", "s", "str", "a") == WRONGTYPE
    assert err(r, "SMOVE", "str", "s", "a") == WRONGTYPE
    assert r.smembers("s") == {"a"}


# SINTER / SINTERCARD / SINTERSTORE


def test_sinter(r):
    r.sadd("a", "1", "2", "3", "x", "y")
    r.sadd("b", "2", "3", "4", "y")
    r.sadd("c", "3", "y", "z")
    assert r.sinter("a") == {"1", "2", "3", "x", "y"}
    assert r.sinter("a", "b") == {"2", "3", "y"}
    assert r.sinter("a", "b", "c") == {"3", "y"}
    assert r.sinter("a", "missing") == set()
    assert r.sinter("a", "a") == r.smembers("a")
    r.set("str", "v")
    # WRONGTYPE wins even after a missing key.
    assert err(r, "SINTER", "missing", "str") == WRONGTYPE


def test_sintercard(r):
    r.sadd("a", *range(100))
    r.sadd("b", *range(50, 200))
    assert r.execute_command("SINTERCARD", "2", "a", "b") == 50
    assert r.execute_command("SINTERCARD", "1", "a") == 100
    assert r.execute_command("SINTERCARD", "2", "a", "b", "LIMIT", "10") == 10
    assert r.execute_command("SINTERCARD", "2", "a", "b", "LIMIT", "0") == 50
    assert r.execute_command("SINTERCARD", "2", "a", "b", "limit", "500") == 50
    # The last LIMIT counts.
    assert r.execute_command("SINTERCARD", "2", "a", "b", "LIMIT", "1", "LIMIT", "5") == 5
    assert r.execute_command("SINTERCARD", "2", "a", "missing") == 0
    assert r.execute_command("SINTERCARD", "1", "missing") == 0


def test_sintercard_errors(r):
    r.sadd("a", "x")
    assert err(r, "SINTERCARD", "0", "a") == "numkeys should be greater than 0"
    assert err(r, "SINTERCARD", "-1", "a") == "numkeys should be greater than 0"
    assert err(r, "SINTERCARD", "x", "a") == "numkeys should be greater than 0"
    assert err(r, "SINTERCARD", "3", "a", "b") == "Number of keys can't be greater than number of args"
    assert err(r, "SINTERCARD", "1", "a", "LIMIT", "-1") == "LIMIT can't be negative"
    assert err(r, "SINTERCARD", "1", "a", "LIMIT", "x") == "LIMIT can't be negative"
    assert err(r, "SINTERCARD", "1", "a", "LIMIT") == "syntax error"
    assert err(r, "SINTERCARD", "1", "a", "FOO", "1") == "syntax error"
    r.set("str", "v")
    assert err(r, "SINTERCARD", "2", "missing", "str") == WRONGTYPE


def test_sinterstore(r):
    r.sadd("a", "1", "2", "3", "x")
    r.sadd("b", "2", "3", "x", "y")
    assert r.sinterstore("d", "a", "b") == 3
    assert r.smembers("d") == {"2", "3", "x"}
    # The destination may be a source, and its old type does not matter.
    assert r.sinterstore("a", "a", "b") == 3
    assert r.smembers("a") == {"2", "3", "x"}
    r.set("str", "v", ex=100)
    assert r.sinterstore("str", "a", "b") == 3
    assert r.type("str") == "set"
    assert r.ttl("str") == -1
    # An empty result deletes the destination.
    assert r.sinterstore("d", "a", "missing") == 0
    assert r.exists("d") == 0
    r.sadd("c", "q")
    assert r.sinterstore("d", "a", "c") == 0
    assert r.exists("d") == 0


# SUNION / SUNIONSTORE / SDIFF / SDIFFSTORE


def test_sunion(r):
    r.sadd("a", "1", "2", "x")
    r.sadd("b", "2", "3", "y")
    assert r.sunion("a", "b") == {"1", "2", "3", "x", "y"}
    assert r.sunion("a", "missing") == {"1", "2", "x"}
    assert r.sunion("missing") == set()
    assert r.sunionstore("d", "a", "b", "missing") == 5
    assert r.smembers("d") == {"1", "2", "3", "x", "y"}
    assert r.sunionstore("d", "missing") == 0
    assert r.exists("d") == 0
    r.set("str", "v")
    assert err(r, "SUNION", "missing", "str") == WRONGTYPE
    assert err(r, "SUNIONSTORE", "d", "a", "str") == WRONGTYPE


def test_sdiff(r):
    r.sadd("a", "1", "2", "3", "x", "y")
    r.sadd("b", "2", "x")
    r.sadd("c", "3", "q")
    assert r.sdiff("a") == {"1", "2", "3", "x", "y"}
    assert r.sdiff("a", "b") == {"1", "3", "y"}
    assert r.sdiff("a", "b", "c") == {"1", "y"}
    assert r.sdiff("a", "a") == set()
    assert r.sdiff("missing", "a") == set()
    assert r.sdiff("a", "missing") == r.smembers("a")
    assert r.sdiffstore("d", "a", "b", "c") == 2
    assert r.smembers("d") == {"1", "y"}
    assert r.sdiffstore("d", "b", "a") == 0
    assert r.exists("d") == 0
    r.set("str", "v")
    assert err(r, "SDIFF", "missing", "str") == WRONGTYPE
    assert err(r, "SDIFFSTORE", "d", "a", "str") == WRONGTYPE


def test_store_commands_on_big_sets(r):
    r.sadd("a", *range(0, 3000))
    r.sadd("b", *range(1000, 4000))
    assert r.sinterstore("i", "a", "b") == 2000
    assert r.sunionstore("u", "a", "b") == 4000
    assert r.sdiffstore("d", "a", "b") == 1000
    assert r.smembers("d") == {str(i) for i in range(1000)}
    assert r.sismember("i", "2999") == 1 and r.sismember("i", "999") == 0


# SSCAN


def test_sscan_small_set_returns_everything(r):
    r.sadd("s", "a", "b", "c", "1")
    cursor, members = r.sscan("s", 0)
    assert cursor == 0
    assert set(members) == {"a", "b", "c", "1"}
    cursor, members = r.sscan("s", 0, match="[ab]")
    assert cursor == 0 and set(members) == {"a", "b"}
    assert r.sscan("missing", 0) == (0, [])


def test_sscan_walks_a_big_set(r):
    r.sadd("s", *[f"m{i}" for i in range(500)])
    seen = set()
    cursor = 0
    calls = 0
    while True:
        cursor, members = r.sscan("s", cursor, count=20)
        seen |= set(members)
        calls += 1
        if cursor == 0:
            break
    assert seen == {f"m{i}" for i in range(500)}
    assert calls > 5
    matched = set(r.sscan_iter("s", match="m1?", count=50))
    assert matched == {f"m{i}" for i in range(10, 20)}


def test_sscan_errors(r):
    r.sadd("s", "a")
    assert err(r, "SSCAN", "s", "x") == "invalid cursor"
    assert err(r, "SSCAN", "s", "0", "COUNT", "0") == "syntax error"
    assert err(r, "SSCAN", "s", "0", "COUNT", "x") == NOT_INT
    assert err(r, "SSCAN", "s", "0", "MATCH") == "syntax error"
    assert err(r, "SSCAN", "s", "0", "TYPE", "string") == "syntax error"
    # A missing key answers before the options are read.
    assert r.sscan("missing", 0, count=0) == (0, [])
    r.set("str", "v")
    assert err(r, "SSCAN", "str", "0", "COUNT", "0") == WRONGTYPE


# RESP3


def test_resp3_reply_types(server, r):
    r.sadd("s", "a", "b")
    assert resp3_head(server, "SMEMBERS", "s") == "~2"
    assert resp3_head(server, "SMEMBERS", "missing") == "~0"
    assert resp3_head(server, "SINTER", "s") == "~2"
    assert resp3_head(server, "SUNION", "s", "missing") == "~2"
    assert resp3_head(server, "SDIFF", "s") == "~2"
    assert resp3_head(server, "SPOP", "missing", "2") == "~0"
    # SRANDMEMBER with a count is an array, even when it returns everything.
    assert resp3_head(server, "SRANDMEMBER", "s", "5") == "*2"
    assert resp3_head(server, "SRANDMEMBER", "missing", "2") == "*0"
    assert resp3_head(server, "SRANDMEMBER", "missing") == "_"
    assert resp3_head(server, "SPOP", "missing") == "_"
    assert resp3_head(server, "SMISMEMBER", "s", "a", "z") == "*2"
    assert resp3_head(server, "SSCAN", "s", "0") == "*2"
    assert resp3_head(server, "SPOP", "s", "1") == "~1"


def test_resp3_client_sees_sets(r3):
    r3.sadd("s", "a", "b")
    assert r3.smembers("s") == {"a", "b"}
    assert r3.sinter("s") == {"a", "b"}
    assert sorted(r3.srandmember("s", 2)) == ["a", "b"]


# Encodings (Redis 7.0 has no listpack sets: those checks are Keel and
# Redis 7.2 behaviour)


def test_intset_encoding(r):
    r.sadd("s", *range(512))
    assert r.object("encoding", "s") == "intset"
    r.sadd("s", 512)
    assert r.object("encoding", "s") == "hashtable"
    r.sadd("t", *range(1000))
    assert r.object("encoding", "t") == "hashtable"
    # Removing members never goes back.
    r.srem("t", *range(10, 1000))
    assert r.object("encoding", "t") == "hashtable"
    assert r.scard("t") == 10


@pytest.mark.skipif(AGAINST_REDIS, reason="listpack sets are Redis 7.2 behaviour")
def test_listpack_encoding(r):
    r.sadd("s", "a", "b", "1")
    assert r.object("encoding", "s") == "listpack"
    r.sadd("i", "1", "2")
    assert r.object("encoding", "i") == "intset"
    r.sadd("i", "x")
    assert r.object("encoding", "i") == "listpack"
    assert r.smembers("i") == {"1", "2", "x"}
    r.sadd("s", *[f"m{i}" for i in range(125)])
    assert r.scard("s") == 128
    assert r.object("encoding", "s") == "listpack"
    r.sadd("s", "one-more")
    assert r.object("encoding", "s") == "hashtable"
    r.sadd("long", "x" * 64)
    assert r.object("encoding", "long") == "listpack"
    r.sadd("long", "y" * 65)
    assert r.object("encoding", "long") == "hashtable"
    # Created directly past the limit: a table at once.
    r.sadd("big", *[f"m{i}" for i in range(129)])
    assert r.object("encoding", "big") == "hashtable"
    # Store commands pick the encoding of what they store.
    r.sadd("ints", *range(10))
    r.sinterstore("di", "ints", "ints")
    assert r.object("encoding", "di") == "intset"
    r.sunionstore("du", "ints", "s")
    assert r.object("encoding", "du") == "hashtable"
    r.sdiffstore("dd", "i", "ints")
    assert r.object("encoding", "dd") == "listpack"


@pytest.mark.skipif(AGAINST_REDIS, reason="listpack sets are Redis 7.2 behaviour")
def test_conversions_follow_the_settings():
    with running_server("--set-max-intset-entries", "3", "--set-max-listpack-entries", "5",
                        "--set-max-listpack-value", "4") as srv:
        r = srv.client()
        r.sadd("s", 1, 2, 3)
        assert r.object("encoding", "s") == "intset"
        r.sadd("s", 4)
        assert r.object("encoding", "s") == "hashtable"
        r.sadd("p", "ab", 1)
        assert r.object("encoding", "p") == "listpack"
        r.sadd("p", "abcd", "x", "y")
        assert r.object("encoding", "p") == "listpack"
        r.sadd("p", "z")
        assert r.object("encoding", "p") == "hashtable"
        r.sadd("v", "abcde")
        assert r.object("encoding", "v") == "hashtable"
        r.config_set("set-max-listpack-entries", "1")
        r.sadd("w", "a")
        assert r.object("encoding", "w") == "listpack"
        r.sadd("w", "b")
        assert r.object("encoding", "w") == "hashtable"
        assert r.smembers("w") == {"a", "b"}


def test_memory_usage_grows_with_the_set(r):
    r.sadd("small", "a", "b")
    r.sadd("big", *[f"member-{i}" for i in range(5000)])
    small = r.memory_usage("small")
    big = r.memory_usage("big")
    assert 0 < small < 300
    assert big > 5000 * 10


# WATCH and transactions


def test_store_commands_invalidate_only_the_destination(server, r):
    r.sadd("a", "1", "2")
    r.sadd("b", "2")
    for cmd in (("SINTERSTORE", "d", "a", "b"), ("SUNIONSTORE", "d", "a", "b"),
                ("SDIFFSTORE", "d", "a", "b")):
        watcher = server.client()
        p = watcher.pipeline()
        p.watch("a", "b")
        p.multi()
        p.set("flag", "1")
        r.execute_command(*cmd)
        assert p.execute() == [True]
        p = watcher.pipeline()
        p.watch("d")
        p.multi()
        p.set("flag", "1")
        r.execute_command(*cmd[:2], "missing")
        with pytest.raises(redis.WatchError):
            p.execute()
        watcher.close()


def test_smove_invalidates_the_keys_it_changed(server, r):
    r.sadd("src", "a", "b", "c")
    r.sadd("dst", "b")
    watcher = server.client()
    p = watcher.pipeline()
    p.watch("dst")
    p.multi()
    p.set("flag", "1")
    # "b" is already in dst: only src changes.
    assert r.smove("src", "dst", "b") == 1
    assert p.execute() == [True]
    p = watcher.pipeline()
    p.watch("dst")
    p.multi()
    p.set("flag", "1")
    assert r.smove("src", "dst", "a") == 1
    with pytest.raises(redis.WatchError):
        p.execute()
    watcher.close()


def test_set_commands_in_multi(r):
    p = r.pipeline()
    p.sadd("s", "a", "b", "c")
    p.spop("s")
    p.scard("s")
    p.sismember("s", "zz")
    res = p.execute()
    assert res[0] == 3 and res[1] in {"a", "b", "c"} and res[2] == 2 and res[3] == 0

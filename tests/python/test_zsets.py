"""Sorted sets: replies (RESP2 and RESP3), error texts, score formatting and
encodings as Redis 7.0 gives them."""

import pytest
import redis

from conftest import AGAINST_REDIS, running_server

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
NOT_INT = "value is not an integer or out of range"
NOT_FLOAT = "value is not a valid float"
SYNTAX = "syntax error"


def err(r, *args):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*args)
    return str(e.value)


def raw(r, *args):
    """A command's reply without redis-py's per-command parsing."""
    conn = r.connection_pool.get_connection(args[0])
    try:
        conn.send_command(*args)
        reply = conn.read_response()
        if isinstance(reply, redis.ResponseError):
            raise reply
        return reply
    finally:
        r.connection_pool.release(conn)


def raw_err(r, *args):
    with pytest.raises(redis.ResponseError) as e:
        raw(r, *args)
    return str(e.value)


def arity(name):
    return f"wrong number of arguments for '{name}' command"


# --- ZADD, ZSCORE, ZCARD ----------------------------------------------------


def test_zadd_basic_and_flags(r):
    assert raw(r, "ZADD", "z", "1", "a", "2", "b", "0.5", "c") == 3
    assert raw(r, "ZADD", "z", "1", "a") == 0
    assert raw(r, "ZADD", "z", "CH", "3", "a", "2", "b", "9", "d") == 2
    assert raw(r, "ZADD", "z", "NX", "100", "a", "4", "e") == 1
    assert raw(r, "ZSCORE", "z", "a") == "3"
    assert raw(r, "ZADD", "z", "XX", "CH", "5", "a", "7", "nope") == 1
    assert raw(r, "ZSCORE", "z", "nope") is None
    assert raw(r, "ZADD", "z", "GT", "CH", "1", "a", "6", "b") == 1
    assert raw(r, "ZSCORE", "z", "a") == "5"
    assert raw(r, "ZADD", "z", "LT", "CH", "10", "a", "0", "b") == 1
    assert raw(r, "ZSCORE", "z", "b") == "0"
    assert raw(r, "ZADD", "z", "GT", "1", "new") == 1
    assert raw(r, "ZCARD", "z") == 6
    assert raw(r, "ZCARD", "missing") == 0


def test_zadd_incr(r):
    assert raw(r, "ZADD", "z", "INCR", "1.5", "a") == "1.5"
    assert raw(r, "ZADD", "z", "INCR", "1", "a") == "2.5"
    assert raw(r, "ZADD", "z", "NX", "INCR", "1", "a") is None
    assert raw(r, "ZADD", "z", "XX", "INCR", "1", "b") is None
    assert raw(r, "ZADD", "z", "GT", "INCR", "-1", "a") is None
    assert raw(r, "ZADD", "missing", "XX", "INCR", "1", "a") is None
    assert raw(r, "ZADD", "missing", "XX", "1", "a") == 0
    assert r.exists("missing") == 0
    assert raw(r, "ZADD", "inf", "+inf", "x") == 1
    assert "resulting score is not a number (NaN)" in raw_err(r, "ZADD", "inf", "INCR", "-inf", "x")
    assert raw(r, "ZSCORE", "inf", "x") == "inf"


def test_zadd_errors(r):
    assert "XX and NX options at the same time are not compatible" in err(r, "ZADD", "z", "XX", "NX", "1", "a")
    for opts in (("GT", "LT"), ("GT", "NX"), ("LT", "NX")):
        assert "GT, LT, and/or NX options at the same time are not compatible" in err(r, "ZADD", "z", *opts, "1", "a")
    assert "INCR option supports a single increment-element pair" in err(r, "ZADD", "z", "INCR", "1", "a", "2", "b")
    assert SYNTAX in err(r, "ZADD", "z", "1", "a", "2")
    assert SYNTAX in err(r, "ZADD", "z", "1", "a", "INCR")
    assert NOT_FLOAT in err(r, "ZADD", "z", "nan", "a")
    assert NOT_FLOAT in err(r, "ZADD", "z", "abc", "a")
    assert NOT_FLOAT in err(r, "ZADD", "z", "1", "a", "x", "b")
    assert r.exists("z") == 0
    assert arity("zadd") in err(r, "ZADD", "z", "1")
    assert arity("zadd") in err(r, "ZADD", "z", "CH")
    r.set("s", "v")
    assert WRONGTYPE in err(r, "ZADD", "s", "1", "a")
    assert WRONGTYPE in err(r, "ZSCORE", "s", "a")
    assert WRONGTYPE in err(r, "ZCARD", "s")
    assert arity("zscore") in err(r, "ZSCORE", "s")
    assert arity("zcard") in err(r, "ZCARD")


def test_score_formatting(r, r3):
    r.zadd("z", {"a": 0.1, "b": 1e20, "c": -2.5, "d": 3, "e": 1.5e-7, "f": "-0"})
    assert raw(r, "ZSCORE", "z", "a") == "0.10000000000000001"
    assert raw(r, "ZSCORE", "z", "b") == "1e+20"
    assert raw(r, "ZSCORE", "z", "c") == "-2.5"
    assert raw(r, "ZSCORE", "z", "d") == "3"
    assert raw(r, "ZSCORE", "z", "e") == "1.4999999999999999e-07"
    assert raw(r, "ZSCORE", "z", "f") == "0"
    assert raw(r3, "ZSCORE", "z", "a") == 0.1
    assert raw(r3, "ZSCORE", "z", "missing") is None
    r.zadd("i", {"p": "inf", "n": "-inf"})
    assert raw(r, "ZRANGE", "i", "0", "-1", "WITHSCORES") == ["n", "-inf", "p", "inf"]


# --- pops -------------------------------------------------------------------


def test_zpopmin_zpopmax(r):
    r.zadd("z", {"a": 1, "b": 2, "c": 3, "d": 4})
    assert raw(r, "ZPOPMIN", "z") == ["a", "1"]
    assert raw(r, "ZPOPMAX", "z") == ["d", "4"]
    assert raw(r, "ZPOPMIN", "z", "0") == []
    assert raw(r, "ZPOPMAX", "z", "5") == ["c", "3", "b", "2"]
    assert r.exists("z") == 0
    assert raw(r, "ZPOPMIN", "z") == []
    assert "value is out of range, must be positive" in err(r, "ZPOPMIN", "z", "-1")
    assert "value is out of range, must be positive" in err(r, "ZPOPMAX", "z", "x")
    assert SYNTAX in err(r, "ZPOPMAX", "z", "1", "2")
    r.set("s", "v")
    assert WRONGTYPE in err(r, "ZPOPMIN", "s")
    assert arity("zpopmin") in err(r, "ZPOPMIN")


def test_zpop_resp3_nesting(r3):
    r3.zadd("z", {"a": 1, "b": 2, "c": 3})
    # Without COUNT the pair is flat; with COUNT each pair is its own array.
    assert raw(r3, "ZPOPMIN", "z") == ["a", 1.0]
    assert raw(r3, "ZPOPMAX", "z", "1") == [["c", 3.0]]


def test_zmpop(r, r3):
    r.zadd("y", {"a": 1, "b": 2, "c": 3})
    assert raw(r, "ZMPOP", "2", "x", "y", "MIN") == ["y", [["a", "1"]]]
    assert raw(r, "ZMPOP", "1", "y", "MAX", "COUNT", "10") == ["y", [["c", "3"], ["b", "2"]]]
    assert r.exists("y") == 0
    assert raw(r, "ZMPOP", "1", "y", "MAX") is None
    r.zadd("y", {"a": 1})
    assert raw(r3, "ZMPOP", "1", "y", "min") == ["y", [["a", 1.0]]]
    assert raw(r3, "ZMPOP", "1", "y", "min") is None
    assert "numkeys should be greater than 0" in err(r, "ZMPOP", "0", "y", "MIN")
    assert "numkeys should be greater than 0" in err(r, "ZMPOP", "x", "y", "MIN")
    assert "count should be greater than 0" in err(r, "ZMPOP", "1", "y", "MIN", "COUNT", "0")
    assert "count should be greater than 0" in err(r, "ZMPOP", "1", "y", "MIN", "COUNT", "x")
    assert SYNTAX in err(r, "ZMPOP", "1", "y", "MID")
    assert SYNTAX in err(r, "ZMPOP", "2", "y", "MIN")
    assert SYNTAX in err(r, "ZMPOP", "1", "y", "MIN", "COUNT", "1", "COUNT", "2")
    assert SYNTAX in err(r, "ZMPOP", "1", "y", "MIN", "junk")
    r.set("s", "v")
    assert WRONGTYPE in err(r, "ZMPOP", "1", "s", "MIN")
    assert arity("zmpop") in err(r, "ZMPOP", "1", "y")


# --- ZRANGE -----------------------------------------------------------------


def test_zrange_by_index(r, r3):
    r.zadd("z", {"a": 1, "b": 2, "c": 3, "d": 4})
    assert raw(r, "ZRANGE", "z", "0", "-1") == ["a", "b", "c", "d"]
    assert raw(r, "ZRANGE", "z", "1", "2", "WITHSCORES") == ["b", "2", "c", "3"]
    assert raw(r, "ZRANGE", "z", "-2", "100") == ["c", "d"]
    assert raw(r, "ZRANGE", "z", "3", "1") == []
    assert raw(r, "ZRANGE", "z", "-100", "0") == ["a"]
    assert raw(r, "ZRANGE", "z", "0", "1", "REV") == ["d", "c"]
    assert raw(r, "ZRANGE", "missing", "0", "-1") == []
    assert raw(r3, "ZRANGE", "z", "0", "1", "WITHSCORES") == [["a", 1.0], ["b", 2.0]]
    assert NOT_INT in err(r, "ZRANGE", "z", "a", "b")
    r.set("s", "v")
    assert WRONGTYPE in err(r, "ZRANGE", "s", "0", "-1")
    assert arity("zrange") in err(r, "ZRANGE", "z", "0")


def test_encoding_conversion(r):
    r.zadd("z", {f"m{i}": i for i in range(128)})
    assert r.object("encoding", "z") == "listpack"
    r.zadd("z", {"one-more": 1000})
    assert r.object("encoding", "z") == "skiplist"
    r.zadd("long", {"x" * 64: 1})
    assert r.object("encoding", "long") == "listpack"
    r.zadd("long", {"y" * 65: 1})
    assert r.object("encoding", "long") == "skiplist"
    r.zadd("big", {f"m{i}": i for i in range(200)})
    assert r.object("encoding", "big") == "skiplist"
    assert r.zrange("big", 100, 101) == ["m100", "m101"]
    assert r.zcard("big") == 200


def test_encoding_limits_from_config():
    with running_server("--zset-max-listpack-entries", "2", "--zset-max-listpack-value", "3") as s:
        c = s.client()
        c.zadd("z", {"a": 1, "b": 2})
        assert c.object("encoding", "z") == "listpack"
        c.zadd("z", {"c": 3})
        assert c.object("encoding", "z") == "skiplist"
        assert c.zpopmin("z") == [("a", 1.0)]
        c.zadd("w", {"abcd": 1})
        assert c.object("encoding", "w") == "skiplist"
        c.close()


def test_legacy_range_commands(r, r3):
    r.zadd("z", {"a": 1, "b": 2, "c": 3, "d": 4})
    assert raw(r, "ZREVRANGE", "z", "0", "1", "WITHSCORES") == ["d", "4", "c", "3"]
    assert raw(r, "ZRANGEBYSCORE", "z", "(1", "3") == ["b", "c"]
    assert raw(r, "ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "1", "2", "WITHSCORES") == ["b", "2", "c", "3"]
    assert raw(r, "ZREVRANGEBYSCORE", "z", "3", "(1") == ["c", "b"]
    assert raw(r, "ZREVRANGEBYSCORE", "z", "+inf", "-inf", "LIMIT", "0", "1") == ["d"]
    assert raw(r3, "ZRANGEBYSCORE", "z", "4", "4", "WITHSCORES") == [["d", 4.0]]
    r.zadd("l", {"a": 0, "b": 0, "c": 0, "d": 0})
    assert raw(r, "ZRANGEBYLEX", "l", "[b", "(d") == ["b", "c"]
    assert raw(r, "ZRANGEBYLEX", "l", "-", "+", "LIMIT", "1", "1") == ["b"]
    assert raw(r, "ZREVRANGEBYLEX", "l", "+", "(b") == ["d", "c"]
    assert SYNTAX in err(r, "ZRANGEBYLEX", "l", "-", "+", "WITHSCORES")
    assert SYNTAX in err(r, "ZREVRANGE", "z", "0", "1", "LIMIT", "0", "1")
    assert SYNTAX in err(r, "ZRANGEBYSCORE", "z", "0", "1", "REV")
    assert SYNTAX in err(r, "ZRANGEBYSCORE", "z", "0", "1", "LIMIT", "0")
    assert "min or max is not a float" in err(r, "ZRANGEBYSCORE", "z", "a", "1")
    assert "min or max not valid string range item" in err(r, "ZRANGEBYLEX", "z", "a", "+")
    r.set("s", "v")
    for cmd in ("ZREVRANGE", "ZRANGEBYSCORE", "ZREVRANGEBYSCORE"):
        assert WRONGTYPE in err(r, cmd, "s", "0", "1")
    assert WRONGTYPE in err(r, "ZRANGEBYLEX", "s", "-", "+")
    assert WRONGTYPE in err(r, "ZREVRANGEBYLEX", "s", "+", "-")
    assert arity("zrevrangebylex") in err(r, "ZREVRANGEBYLEX", "s", "+")

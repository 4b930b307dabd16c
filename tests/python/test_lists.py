"""The list family (non-blocking part): replies, errors and encodings as Redis 7.0 gives them."""

import pytest
import redis

from conftest import AGAINST_REDIS, running_server

ARITY = "wrong number of arguments for '{}' command"
NOT_INT = "value is not an integer or out of range"
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
SYNTAX = "syntax error"


def err(r, *args):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*args)
    return str(e.value)


def cmd(r, *args):
    return r.execute_command(*args)


def items(r, key):
    return cmd(r, "LRANGE", key, 0, -1)


# LPUSH / RPUSH / LLEN / LRANGE


def test_push_and_range(r):
    assert cmd(r, "LPUSH", "l", "a", "b", "c") == 3
    assert cmd(r, "RPUSH", "l", "d", "1", "-2") == 6
    assert items(r, "l") == ["c", "b", "a", "d", "1", "-2"]
    assert cmd(r, "LLEN", "l") == 6
    assert cmd(r, "LRANGE", "l", 1, 2) == ["b", "a"]
    assert cmd(r, "LRANGE", "l", -2, -1) == ["1", "-2"]
    assert cmd(r, "LRANGE", "l", -100, 100) == items(r, "l")
    assert cmd(r, "LRANGE", "l", 4, 2) == []
    assert cmd(r, "LRANGE", "l", 6, 10) == []
    assert cmd(r, "LRANGE", "nokey", 0, -1) == []
    assert cmd(r, "LLEN", "nokey") == 0
    assert cmd(r, "TYPE", "l") == "list"


def test_push_keeps_binary_and_integers_exact(rb):
    values = [b"", b"\x00\xff", b"007", b"-0", b"9223372036854775807", b"-9223372036854775808",
              b"9223372036854775808", b"1.5", b"x" * 300]
    assert rb.execute_command("RPUSH", "l", *values) == len(values)
    assert rb.execute_command("LRANGE", "l", 0, -1) == values


def test_push_pop_errors(r):
    assert err(r, "LPUSH", "l") == ARITY.format("lpush")
    assert err(r, "RPUSH", "l") == ARITY.format("rpush")
    assert err(r, "LPOP") == ARITY.format("lpop")
    assert err(r, "RPOP", "l", "1", "2") == ARITY.format("rpop")
    assert err(r, "LPOP", "l", "1", "2") == ARITY.format("lpop")
    assert err(r, "LLEN") == ARITY.format("llen")
    assert err(r, "LRANGE", "l", "0") == ARITY.format("lrange")
    assert err(r, "LRANGE", "l", "a", "1") == NOT_INT
    assert err(r, "LRANGE", "l", "0", "1.5") == NOT_INT
    assert err(r, "LPOP", "l", "-1") == "value is out of range, must be positive"
    assert err(r, "RPOP", "l", "x") == "value is out of range, must be positive"


# LPOP / RPOP


def test_pop_single_and_count(r):
    cmd(r, "RPUSH", "l", "a", "b", "c", "d", "e")
    assert cmd(r, "LPOP", "l") == "a"
    assert cmd(r, "RPOP", "l") == "e"
    assert cmd(r, "LPOP", "l", 2) == ["b", "c"]
    assert cmd(r, "LPOP", "l", 0) == []
    assert cmd(r, "RPOP", "l", 10) == ["d"]
    assert cmd(r, "EXISTS", "l") == 0
    assert cmd(r, "LPOP", "l") is None
    assert cmd(r, "RPOP", "l", 0) is None
    assert cmd(r, "LPOP", "l", 3) is None


def test_pop_nil_shapes_resp2(r):
    conn = r.connection_pool.get_connection("LPOP")
    try:
        for args, expect in [(["LPOP", "nokey"], b"$-1\r\n"), (["LPOP", "nokey", "0"], b"*-1\r\n"),
                             (["RPOP", "nokey", "2"], b"*-1\r\n")]:
            conn.send_command(*args)
            assert conn._sock.recv(100) == expect, args
    finally:
        conn.disconnect()
        r.connection_pool.release(conn)


def test_pop_nil_shapes_resp3(r3):
    r3.execute_command("RPUSH", "l", "a")
    assert r3.execute_command("LPOP", "nokey") is None
    assert r3.execute_command("LPOP", "nokey", 0) is None
    assert r3.execute_command("LPOP", "l", 0) == []
    assert r3.execute_command("RPOP", "l", 5) == ["a"]


def test_pop_keeps_ttl_until_empty(r):
    cmd(r, "RPUSH", "l", "a", "b")
    cmd(r, "EXPIRE", "l", 100)
    cmd(r, "LPOP", "l")
    assert 99 <= cmd(r, "TTL", "l") <= 100
    cmd(r, "LPOP", "l")
    assert cmd(r, "TTL", "l") == -2


# LMOVE / RPOPLPUSH


def test_lmove(r):
    cmd(r, "RPUSH", "src", "a", "b", "c")
    assert cmd(r, "LMOVE", "src", "dst", "LEFT", "RIGHT") == "a"
    assert cmd(r, "LMOVE", "src", "dst", "right", "left") == "c"
    assert items(r, "dst") == ["c", "a"]
    assert cmd(r, "LMOVE", "src", "src", "LEFT", "RIGHT") == "b"
    assert items(r, "src") == ["b"]
    assert cmd(r, "LMOVE", "src", "dst", "LEFT", "LEFT") == "b"
    assert cmd(r, "EXISTS", "src") == 0
    assert items(r, "dst") == ["b", "c", "a"]
    assert cmd(r, "LMOVE", "src", "dst", "LEFT", "LEFT") is None


def test_lmove_rotation_keeps_key_and_ttl(r):
    cmd(r, "RPUSH", "l", "only")
    cmd(r, "EXPIRE", "l", 100)
    assert cmd(r, "LMOVE", "l", "l", "RIGHT", "LEFT") == "only"
    assert items(r, "l") == ["only"]
    assert 99 <= cmd(r, "TTL", "l") <= 100


def test_lmove_errors(r):
    cmd(r, "SET", "s", "v")
    cmd(r, "RPUSH", "l", "a")
    assert err(r, "LMOVE", "l", "d", "MIDDLE", "LEFT") == SYNTAX
    assert err(r, "LMOVE", "nokey", "d", "LEFT", "UP") == SYNTAX
    assert err(r, "LMOVE", "l", "d", "LEFT") == ARITY.format("lmove")
    assert err(r, "LMOVE", "s", "d", "LEFT", "LEFT") == WRONGTYPE
    assert err(r, "LMOVE", "l", "s", "LEFT", "LEFT") == WRONGTYPE
    assert items(r, "l") == ["a"]
    # A missing source answers nil before the destination's type is checked.
    assert cmd(r, "LMOVE", "nokey", "s", "LEFT", "LEFT") is None


# LMPOP


def test_lmpop(r):
    cmd(r, "RPUSH", "b", "1", "2", "3")
    assert cmd(r, "LMPOP", 2, "a", "b", "LEFT") == ["b", ["1"]]
    assert cmd(r, "LMPOP", 2, "a", "b", "RIGHT", "COUNT", 5) == ["b", ["3", "2"]]
    assert cmd(r, "EXISTS", "b") == 0
    assert cmd(r, "LMPOP", 2, "a", "b", "LEFT") is None
    assert cmd(r, "LMPOP", 1, "a", "left", "count", 3) is None


def test_lmpop_resp3(r3):
    r3.execute_command("RPUSH", "k", "x", "y")
    assert r3.execute_command("LMPOP", 1, "k", "LEFT", "COUNT", 1) == ["k", ["x"]]
    assert r3.execute_command("LMPOP", 1, "nokey", "LEFT") is None


def test_lmpop_errors(r):
    cmd(r, "SET", "s", "v")
    cmd(r, "RPUSH", "l", "a")
    numkeys = "numkeys should be greater than 0"
    count = "count should be greater than 0"
    assert err(r, "LMPOP", 0, "l", "LEFT") == numkeys
    assert err(r, "LMPOP", -1, "l", "LEFT") == numkeys
    assert err(r, "LMPOP", "x", "l", "LEFT") == numkeys
    assert err(r, "LMPOP", 2, "l", "LEFT") == SYNTAX
    assert err(r, "LMPOP", 5, "l", "LEFT") == SYNTAX
    assert err(r, "LMPOP", 1, "l", "MIDDLE") == SYNTAX
    assert err(r, "LMPOP", 1, "l", "LEFT", "COUNT") == SYNTAX
    assert err(r, "LMPOP", 1, "l", "LEFT", "COUNT", 1, "COUNT", 1) == SYNTAX
    assert err(r, "LMPOP", 1, "l", "LEFT", "FOO") == SYNTAX
    assert err(r, "LMPOP", 1, "l", "LEFT", "COUNT", 0) == count
    assert err(r, "LMPOP", 1, "l", "LEFT", "COUNT", -3) == count
    assert err(r, "LMPOP", 1, "l", "LEFT", "COUNT", "x") == count
    assert err(r, "LMPOP", 1, "l") == ARITY.format("lmpop")
    assert err(r, "LMPOP", 2, "nokey", "s", "LEFT") == WRONGTYPE
    # The first non-empty list wins before a later key of another type is seen.
    assert cmd(r, "LMPOP", 2, "l", "s", "LEFT") == ["l", ["a"]]


# Type checks


def test_wrong_type(r):
    cmd(r, "SET", "s", "v")
    for args in (["LPUSH", "s", "a"], ["RPUSH", "s", "a"], ["LPOP", "s"], ["RPOP", "s", "1"],
                 ["LPOP", "s", "0"], ["LLEN", "s"], ["LRANGE", "s", "0", "-1"]):
        assert err(r, *args) == WRONGTYPE, args
    assert cmd(r, "GET", "s") == "v"


# Encodings (Redis 7.0 always answers quicklist; Keel follows Redis 7.2)


@pytest.mark.skipif(AGAINST_REDIS, reason="Redis 7.0 reports quicklist for every list")
def test_encoding_converts_past_the_size_limit(r):
    cmd(r, "RPUSH", "small", "a", "b", "1")
    assert cmd(r, "OBJECT", "ENCODING", "small") == "listpack"
    cmd(r, "RPUSH", "big", "x" * 9000)
    assert cmd(r, "OBJECT", "ENCODING", "big") == "quicklist"
    for i in range(100):
        cmd(r, "RPUSH", "grow", "y" * 100)
    assert cmd(r, "OBJECT", "ENCODING", "grow") == "quicklist"
    assert cmd(r, "LLEN", "grow") == 100
    # One way: popping back to a few elements keeps the general form.
    cmd(r, "LPOP", "grow", 98)
    assert cmd(r, "OBJECT", "ENCODING", "grow") == "quicklist"
    assert items(r, "grow") == ["y" * 100] * 2


@pytest.mark.skipif(AGAINST_REDIS, reason="Redis 7.0 reports quicklist for every list")
def test_encoding_follows_list_max_listpack_size(r):
    try:
        cmd(r, "CONFIG", "SET", "list-max-listpack-size", "4")
        cmd(r, "RPUSH", "l", "a", "b", "c", "d")
        assert cmd(r, "OBJECT", "ENCODING", "l") == "listpack"
        cmd(r, "LPUSH", "l", "z")
        assert cmd(r, "OBJECT", "ENCODING", "l") == "quicklist"
        assert items(r, "l") == ["z", "a", "b", "c", "d"]
    finally:
        cmd(r, "CONFIG", "SET", "list-max-listpack-size", "-2")


def test_config_file_sets_the_list_limit():
    with running_server("--list-max-listpack-size", "3") as s:
        c = s.client()
        assert c.config_get("list-max-listpack-size") == {"list-max-listpack-size": "3"}
        c.rpush("l", "a", "b", "c", "d")
        assert c.lrange("l", 0, -1) == ["a", "b", "c", "d"]
        if not AGAINST_REDIS:
            assert c.object("encoding", "l") == "quicklist"
        c.close()


def test_long_list_memory_and_range(r):
    cmd(r, "RPUSH", "big", *[str(i) for i in range(5000)])
    assert cmd(r, "LLEN", "big") == 5000
    assert cmd(r, "LRANGE", "big", 0, 99) == [str(i) for i in range(100)]
    assert cmd(r, "LRANGE", "big", -3, -1) == ["4997", "4998", "4999"]
    assert cmd(r, "MEMORY", "USAGE", "big") > 5000

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


@pytest.fixture(params=["-2", "1"], ids=["compact", "general"])
def lr(request, r):
    """A client whose new lists stay compact (-2) or leave it from their second element (1)."""
    cmd(r, "CONFIG", "SET", "list-max-listpack-size", request.param)
    yield r
    cmd(r, "CONFIG", "SET", "list-max-listpack-size", "-2")


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


# LPUSHX / RPUSHX


def test_pushx(lr):
    assert cmd(lr, "LPUSHX", "l", "a") == 0
    assert cmd(lr, "RPUSHX", "l", "a", "b") == 0
    assert cmd(lr, "EXISTS", "l") == 0
    cmd(lr, "RPUSH", "l", "x")
    assert cmd(lr, "LPUSHX", "l", "a", "b") == 3
    assert cmd(lr, "RPUSHX", "l", "c", "d") == 5
    assert items(lr, "l") == ["b", "a", "x", "c", "d"]
    assert err(lr, "LPUSHX", "l") == ARITY.format("lpushx")
    assert err(lr, "RPUSHX", "l") == ARITY.format("rpushx")


# LINDEX / LSET


def test_lindex(lr):
    cmd(lr, "RPUSH", "l", "a", "b", "c")
    assert cmd(lr, "LINDEX", "l", 0) == "a"
    assert cmd(lr, "LINDEX", "l", -1) == "c"
    assert cmd(lr, "LINDEX", "l", -3) == "a"
    assert cmd(lr, "LINDEX", "l", 3) is None
    assert cmd(lr, "LINDEX", "l", -4) is None
    assert cmd(lr, "LINDEX", "nokey", 0) is None
    assert err(lr, "LINDEX", "l", "x") == NOT_INT
    # The key is looked up first: a missing key is nil even for a bad index.
    assert cmd(lr, "LINDEX", "nokey", "x") is None
    assert err(lr, "LINDEX", "l") == ARITY.format("lindex")


def test_lset(lr):
    cmd(lr, "RPUSH", "l", "a", "b", "c")
    assert cmd(lr, "LSET", "l", 0, "A") is True
    assert cmd(lr, "LSET", "l", -1, "C" * 100) is True
    assert items(lr, "l") == ["A", "b", "C" * 100]
    assert err(lr, "LSET", "l", 3, "x") == "index out of range"
    assert err(lr, "LSET", "l", -4, "x") == "index out of range"
    assert err(lr, "LSET", "nokey", 0, "x") == "no such key"
    assert err(lr, "LSET", "nokey", "x", "x") == "no such key"
    assert err(lr, "LSET", "l", "x", "x") == NOT_INT
    assert err(lr, "LSET", "l", 0) == ARITY.format("lset")


# LINSERT


def test_linsert(lr):
    cmd(lr, "RPUSH", "l", "a", "b", "a")
    assert cmd(lr, "LINSERT", "l", "BEFORE", "a", "x") == 4
    assert cmd(lr, "LINSERT", "l", "after", "a", "y") == 5
    assert cmd(lr, "LINSERT", "l", "AFTER", "zz", "y") == -1
    assert items(lr, "l") == ["x", "a", "y", "b", "a"]
    assert cmd(lr, "LINSERT", "nokey", "BEFORE", "a", "x") == 0
    assert cmd(lr, "EXISTS", "nokey") == 0
    assert err(lr, "LINSERT", "l", "MIDDLE", "a", "x") == SYNTAX
    assert err(lr, "LINSERT", "nokey", "MIDDLE", "a", "x") == SYNTAX
    assert err(lr, "LINSERT", "l", "BEFORE", "a") == ARITY.format("linsert")


# LREM


def test_lrem(lr):
    cmd(lr, "RPUSH", "l", "a", "b", "a", "c", "a", "b", "a")
    assert cmd(lr, "LREM", "l", 2, "a") == 2
    assert items(lr, "l") == ["b", "c", "a", "b", "a"]
    assert cmd(lr, "LREM", "l", -1, "b") == 1
    assert items(lr, "l") == ["b", "c", "a", "a"]
    assert cmd(lr, "LREM", "l", 0, "a") == 2
    assert cmd(lr, "LREM", "l", 0, "zz") == 0
    assert items(lr, "l") == ["b", "c"]
    assert cmd(lr, "LREM", "l", 0, "b") == 1
    assert cmd(lr, "LREM", "l", -5, "c") == 1
    assert cmd(lr, "EXISTS", "l") == 0
    assert cmd(lr, "LREM", "nokey", 0, "a") == 0
    assert err(lr, "LREM", "l", "x", "a") == NOT_INT
    assert err(lr, "LREM", "l", 1) == ARITY.format("lrem")


def test_lrem_integers_match_their_text(lr):
    cmd(lr, "RPUSH", "l", "1", "01", "1", "-1")
    assert cmd(lr, "LREM", "l", 0, "1") == 2
    assert items(lr, "l") == ["01", "-1"]


# LTRIM


def test_ltrim(lr):
    cmd(lr, "RPUSH", "l", *"abcdef")
    assert cmd(lr, "LTRIM", "l", 1, -2) is True
    assert items(lr, "l") == ["b", "c", "d", "e"]
    assert cmd(lr, "LTRIM", "l", -2, 100) is True
    assert items(lr, "l") == ["d", "e"]
    assert cmd(lr, "LTRIM", "l", 5, 1) is True
    assert cmd(lr, "EXISTS", "l") == 0
    cmd(lr, "RPUSH", "l", "a")
    assert cmd(lr, "LTRIM", "l", 1, -1) is True
    assert cmd(lr, "EXISTS", "l") == 0
    assert cmd(lr, "LTRIM", "nokey", 0, 1) is True
    assert err(lr, "LTRIM", "l", "x", 1) == NOT_INT
    assert err(lr, "LTRIM", "l", 0) == ARITY.format("ltrim")


# LPOS


def test_lpos(lr):
    cmd(lr, "RPUSH", "l", "a", "b", "c", "a", "b", "c", "a")
    assert cmd(lr, "LPOS", "l", "a") == 0
    assert cmd(lr, "LPOS", "l", "c") == 2
    assert cmd(lr, "LPOS", "l", "zz") is None
    assert cmd(lr, "LPOS", "l", "a", "RANK", 2) == 3
    assert cmd(lr, "LPOS", "l", "a", "RANK", -1) == 6
    assert cmd(lr, "LPOS", "l", "a", "RANK", -3) == 0
    assert cmd(lr, "LPOS", "l", "a", "RANK", 4) is None
    assert cmd(lr, "LPOS", "l", "a", "COUNT", 0) == [0, 3, 6]
    assert cmd(lr, "LPOS", "l", "a", "COUNT", 2) == [0, 3]
    assert cmd(lr, "LPOS", "l", "a", "COUNT", 0, "RANK", -2) == [3, 0]
    assert cmd(lr, "LPOS", "l", "a", "COUNT", 0, "MAXLEN", 4) == [0, 3]
    assert cmd(lr, "LPOS", "l", "a", "RANK", -1, "COUNT", 0, "MAXLEN", 1) == [6]
    assert cmd(lr, "LPOS", "l", "c", "MAXLEN", 2) is None
    assert cmd(lr, "LPOS", "l", "zz", "COUNT", 0) == []
    assert cmd(lr, "LPOS", "l", "a", "rank", 1, "rank", 2) == 3
    assert cmd(lr, "LPOS", "nokey", "a") is None
    assert cmd(lr, "LPOS", "nokey", "a", "COUNT", 1) == []


def test_lpos_min_rank_is_the_last_match_as_in_redis_7_0(r):
    cmd(r, "RPUSH", "l", "a", "b", "a")
    assert cmd(r, "LPOS", "l", "a", "RANK", "-9223372036854775808") == 2


def test_lpos_errors(r):
    cmd(r, "RPUSH", "l", "a")
    rank0 = ("RANK can't be zero: use 1 to start from the first match, 2 from the second ... "
             "or use negative to start from the end of the list")
    assert err(r, "LPOS", "l", "a", "RANK", 0) == rank0
    assert err(r, "LPOS", "nokey", "a", "RANK", 0) == rank0
    assert err(r, "LPOS", "l", "a", "RANK", "x") == NOT_INT
    assert err(r, "LPOS", "l", "a", "COUNT", -1) == "COUNT can't be negative"
    assert err(r, "LPOS", "l", "a", "COUNT", "x") == "COUNT can't be negative"
    assert err(r, "LPOS", "l", "a", "MAXLEN", -1) == "MAXLEN can't be negative"
    assert err(r, "LPOS", "l", "a", "MAXLEN", "x") == "MAXLEN can't be negative"
    # Options are checked in order.
    assert err(r, "LPOS", "l", "a", "COUNT", -1, "RANK", 0) == "COUNT can't be negative"
    assert err(r, "LPOS", "l", "a", "RANK") == SYNTAX
    assert err(r, "LPOS", "l", "a", "FOO", 1) == SYNTAX
    assert err(r, "LPOS", "l") == ARITY.format("lpos")


def test_lpos_resp3(r3):
    r3.execute_command("RPUSH", "l", "a", "a")
    assert r3.execute_command("LPOS", "l", "a", "COUNT", 0) == [0, 1]
    assert r3.execute_command("LPOS", "l", "b") is None


# RPOPLPUSH


def test_rpoplpush(lr):
    cmd(lr, "RPUSH", "src", "a", "b", "c")
    assert cmd(lr, "RPOPLPUSH", "src", "dst") == "c"
    assert cmd(lr, "RPOPLPUSH", "src", "dst") == "b"
    assert items(lr, "dst") == ["b", "c"]
    assert cmd(lr, "RPOPLPUSH", "dst", "dst") == "c"
    assert items(lr, "dst") == ["c", "b"]
    assert cmd(lr, "RPOPLPUSH", "src", "dst") == "a"
    assert cmd(lr, "EXISTS", "src") == 0
    assert cmd(lr, "RPOPLPUSH", "src", "dst") is None
    cmd(lr, "SET", "s", "v")
    assert err(lr, "RPOPLPUSH", "s", "dst") == WRONGTYPE
    assert err(lr, "RPOPLPUSH", "dst", "s") == WRONGTYPE
    assert cmd(lr, "RPOPLPUSH", "nokey", "s") is None
    assert err(lr, "RPOPLPUSH", "dst") == ARITY.format("rpoplpush")


# Both forms behave the same for the first commands too


def test_core_commands_in_both_forms(lr):
    cmd(lr, "RPUSH", "l", *[str(i) for i in range(10)])
    assert cmd(lr, "LPOP", "l", 3) == ["0", "1", "2"]
    assert cmd(lr, "RPOP", "l", 2) == ["9", "8"]
    assert cmd(lr, "LRANGE", "l", 1, 3) == ["4", "5", "6"]
    assert cmd(lr, "LMOVE", "l", "m", "LEFT", "RIGHT") == "3"
    assert cmd(lr, "LMPOP", 2, "x", "l", "RIGHT", "COUNT", 2) == ["l", ["7", "6"]]
    assert items(lr, "l") == ["4", "5"]
    assert cmd(lr, "LLEN", "l") == 2


# Type checks


def test_wrong_type(r):
    cmd(r, "SET", "s", "v")
    for args in (["LPUSH", "s", "a"], ["RPUSH", "s", "a"], ["LPUSHX", "s", "a"], ["RPUSHX", "s", "a"],
                 ["LPOP", "s"], ["RPOP", "s", "1"], ["LPOP", "s", "0"], ["LLEN", "s"],
                 ["LRANGE", "s", "0", "-1"], ["LINDEX", "s", "0"], ["LINDEX", "s", "x"],
                 ["LSET", "s", "0", "x"], ["LSET", "s", "x", "x"], ["LINSERT", "s", "BEFORE", "a", "b"],
                 ["LREM", "s", "0", "a"], ["LTRIM", "s", "0", "1"], ["LPOS", "s", "a"],
                 ["LPOS", "s", "a", "COUNT", "0"], ["RPOPLPUSH", "s", "d"], ["LMPOP", "1", "s", "LEFT"]):
        assert err(r, *args) == WRONGTYPE, args
    assert cmd(r, "GET", "s") == "v"


def test_other_types_see_lists_as_wrong_type(r):
    cmd(r, "RPUSH", "l", "a")
    assert err(r, "GET", "l") == WRONGTYPE
    assert err(r, "INCR", "l") == WRONGTYPE
    assert cmd(r, "TYPE", "l") == "list"


# Transactions and WATCH


def test_list_commands_in_multi(r):
    cmd(r, "RPUSH", "l", "a", "b")
    p = r.pipeline(transaction=True)
    p.lpush("l", "z")
    p.rpoplpush("l", "m")
    p.lrange("l", 0, -1)
    assert p.execute() == [3, "b", ["z", "a"]]


def test_watch_sees_list_writes(server):
    c1, c2 = server.client(), server.client()
    try:
        c1.flushall()
        c1.rpush("l", "a")
        p = c1.pipeline(transaction=True)
        p.watch("l")
        c2.lpop("l")
        p.multi()
        p.rpush("l", "b")
        with pytest.raises(redis.WatchError):
            p.execute()
    finally:
        c1.close()
        c2.close()


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
        # LINSERT and LSET convert too, as a push of one more element would.
        cmd(r, "RPUSH", "i", "a", "b", "c")
        cmd(r, "LINSERT", "i", "BEFORE", "b", "x")
        assert cmd(r, "OBJECT", "ENCODING", "i") == "listpack"
        cmd(r, "LINSERT", "i", "BEFORE", "b", "y")
        assert cmd(r, "OBJECT", "ENCODING", "i") == "quicklist"
        assert items(r, "i") == ["a", "x", "y", "b", "c"]
        cmd(r, "CONFIG", "SET", "list-max-listpack-size", "-1")
        cmd(r, "RPUSH", "s", "a", "b")
        cmd(r, "LSET", "s", 0, "v" * 5000)
        assert cmd(r, "OBJECT", "ENCODING", "s") == "quicklist"
        assert items(r, "s") == ["v" * 5000, "b"]
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


def test_memory_usage_tracks_list_size(r):
    cmd(r, "RPUSH", "small", "a", "b", "c")
    small = cmd(r, "MEMORY", "USAGE", "small")
    cmd(r, "RPUSH", "big", *["v" * 100 for _ in range(1000)])
    big = cmd(r, "MEMORY", "USAGE", "big")
    assert small < 200
    assert 100_000 <= big < 400_000


def test_used_memory_follows_lists(r):
    before = r.info("memory")["used_memory"]
    for i in range(20):
        cmd(r, "RPUSH", "big", *["w" * 100 for _ in range(1000)])
    grown = r.info("memory")["used_memory"]
    assert grown - before > 1_500_000
    cmd(r, "DEL", "big")
    assert r.info("memory")["used_memory"] < grown - 1_500_000

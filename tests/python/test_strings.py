"""The string family: replies, error texts and TTL handling as Redis 7.0 gives them."""

import time

import pytest
import redis

from conftest import make_list
from rawresp import unparsed as raw

ARITY = "wrong number of arguments for '{}' command"
NOT_INT = "value is not an integer or out of range"
NOT_FLOAT = "value is not a valid float"
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def err(r, *args):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*args)
    return str(e.value)


# SETNX / SETEX / PSETEX / GETSET


def test_setnx(r):
    assert r.setnx("k", "v") is True
    assert r.setnx("k", "w") is False
    assert r.get("k") == "v"
    assert err(r, "SETNX", "k") == ARITY.format("setnx")


def test_setex_psetex(r):
    assert r.execute_command("SETEX", "k", 100, "v") is True
    assert r.get("k") == "v"
    assert r.execute_command("PSETEX", "p", 100000, "v") is True
    assert r.get("p") == "v"
    assert err(r, "SETEX", "k", 0, "v") == "invalid expire time in 'setex' command"
    assert err(r, "SETEX", "k", -5, "v") == "invalid expire time in 'setex' command"
    assert err(r, "PSETEX", "k", 0, "v") == "invalid expire time in 'psetex' command"
    assert err(r, "SETEX", "k", "abc", "v") == NOT_INT
    assert err(r, "SETEX", "k", 10**18, "v") == "invalid expire time in 'setex' command"
    assert err(r, "SETEX", "k", 10) == ARITY.format("setex")


def test_setex_expires(r):
    r.execute_command("PSETEX", "k", 50, "v")
    time.sleep(0.15)
    assert r.get("k") is None


def test_setex_sets_ttl(r):
    r.execute_command("SETEX", "k", 100, "v")
    assert 99_000 < r.execute_command("PTTL", "k") <= 100_000


def test_getset(r):
    assert r.getset("k", "a") is None
    assert r.getset("k", "b") == "a"
    assert r.get("k") == "b"
    assert err(r, "GETSET", "k") == ARITY.format("getset")


def test_getset_clears_ttl(r):
    r.set("k", "a", ex=100)
    assert r.getset("k", "b") == "a"
    assert r.execute_command("TTL", "k") == -1


def test_set_repeated_expiry_options(r):
    # The same expiry option may repeat (last wins); different ones may not.
    assert r.execute_command("SET", "k", "v", "EX", "0", "EX", "100") is True
    assert r.execute_command("SET", "k", "v", "KEEPTTL", "KEEPTTL") is True
    assert err(r, "SET", "k", "v", "EX", "10", "PX", "100") == "syntax error"
    assert err(r, "SET", "k", "v", "EX", "10", "KEEPTTL") == "syntax error"


# GETDEL / GETEX


def test_getdel(r):
    r.set("k", "v")
    assert r.getdel("k") == "v"
    assert r.get("k") is None
    assert r.getdel("k") is None
    assert err(r, "GETDEL") == ARITY.format("getdel")
    assert err(r, "GETDEL", "a", "b") == ARITY.format("getdel")


def test_getex_options(r):
    r.set("k", "v")
    assert r.getex("k") == "v"
    assert r.getex("k", ex=100) == "v"
    assert r.getex("k", px=100000) == "v"
    assert r.getex("k", exat=int(time.time()) + 100) == "v"
    assert r.getex("k", pxat=int(time.time() * 1000) + 100000) == "v"
    assert r.getex("k", persist=True) == "v"
    assert r.getex("missing", ex=10) is None
    # Repeats of one option are fine, mixes are not.
    assert r.execute_command("GETEX", "k", "EX", "10", "EX", "20") == "v"
    assert r.execute_command("GETEX", "k", "PERSIST", "PERSIST") == "v"
    assert err(r, "GETEX", "k", "EX", "10", "PERSIST") == "syntax error"
    assert err(r, "GETEX", "k", "EX", "10", "PX", "10") == "syntax error"
    assert err(r, "GETEX", "k", "KEEPTTL") == "syntax error"
    assert err(r, "GETEX", "k", "EX") == "syntax error"
    assert err(r, "GETEX", "k", "EX", "abc") == NOT_INT
    assert err(r, "GETEX", "k", "EX", "0") == "invalid expire time in 'getex' command"
    assert err(r, "GETEX", "k", "PX", "-1") == "invalid expire time in 'getex' command"
    # The expiry value is only read once the key is found.
    assert r.execute_command("GETEX", "missing", "EX", "abc") is None
    assert err(r, "GETEX") == ARITY.format("getex")


def test_getex_past_absolute_time_deletes(r):
    r.set("k", "v")
    assert r.getex("k", pxat=1000) == "v"
    assert r.get("k") is None


def test_getex_expires(r):
    r.set("k", "v")
    r.getex("k", px=50)
    time.sleep(0.15)
    assert r.get("k") is None


def test_getex_ttl_and_persist(r):
    r.set("k", "v")
    r.getex("k", ex=100)
    assert 99 <= r.execute_command("TTL", "k") <= 100
    r.getex("k", persist=True)
    assert r.execute_command("TTL", "k") == -1


# MGET / MSET / MSETNX


def test_mget_mset(r):
    assert r.execute_command("MSET", "a", "1", "b", "2") is True
    assert r.mget("a", "b", "c") == ["1", "2", None]
    assert r.execute_command("MSET", "a", "x", "a", "y") is True
    assert r.get("a") == "y"
    assert err(r, "MSET", "a", "1", "b") == ARITY.format("mset")
    assert err(r, "MSET", "a") == ARITY.format("mset")
    assert err(r, "MGET") == ARITY.format("mget")


def test_mget_other_type_is_nil(r):
    r.set("s", "v")
    make_list(r, "l")
    assert r.mget("s", "l") == ["v", None]


def test_mset_clears_ttl(r):
    r.set("a", "1", ex=100)
    r.mset({"a": "2"})
    assert r.execute_command("TTL", "a") == -1


def test_msetnx(r):
    assert r.msetnx({"a": "1", "b": "2"}) is True
    assert r.msetnx({"b": "3", "c": "4"}) is False
    assert r.mget("a", "b", "c") == ["1", "2", None]
    assert err(r, "MSETNX", "a", "1", "b") == ARITY.format("msetnx")


# INCR family


def test_incr_decr(r):
    assert r.incr("n") == 1
    assert r.incrby("n", 10) == 11
    assert r.decr("n") == 10
    assert r.decrby("n", 15) == -5
    assert r.get("n") == "-5"
    assert r.incrby("n", -5) == -10
    r.set("big", "9223372036854775806")
    assert r.incr("big") == 9223372036854775807
    assert err(r, "INCR", "big") == "increment or decrement would overflow"
    r.set("small", "-9223372036854775808")
    assert err(r, "DECR", "small") == "increment or decrement would overflow"
    assert err(r, "DECRBY", "x", "-9223372036854775808") == "decrement would overflow"
    assert err(r, "INCRBY", "n", "abc") == NOT_INT
    assert err(r, "INCRBY", "n", "1.5") == NOT_INT
    assert err(r, "INCRBY", "n", "99999999999999999999") == NOT_INT
    assert err(r, "INCR") == ARITY.format("incr")
    assert err(r, "INCRBY", "n") == ARITY.format("incrby")


@pytest.mark.parametrize("value", ["abc", "1.5", " 1", "1 ", "+1", "01", "-0", "", "99999999999999999999"])
def test_incr_non_integer(r, value):
    r.set("k", value)
    assert err(r, "INCR", "k") == NOT_INT
    assert r.get("k") == value


def test_incr_keeps_ttl(r):
    r.set("n", "1", ex=100)
    assert r.incr("n") == 2
    assert r.get("n") == "2"
    assert 99 <= r.execute_command("TTL", "n") <= 100


def test_incr_wrong_type(r):
    make_list(r, "l")
    for cmd in (["INCR", "l"], ["DECR", "l"], ["INCRBY", "l", "1"], ["DECRBY", "l", "1"],
                ["INCRBYFLOAT", "l", "1"], ["APPEND", "l", "x"], ["STRLEN", "l"],
                ["GETRANGE", "l", "0", "1"], ["SETRANGE", "l", "0", "x"], ["GETSET", "l", "x"],
                ["GETDEL", "l"], ["GETEX", "l"]):
        assert err(r, *cmd) == WRONGTYPE, cmd
    assert err(r, "LCS", "l", "x") == "The specified keys must contain string values"


@pytest.mark.parametrize("start,incr,result", [
    ("10.5", "0.1", "10.6"),
    ("0.1", "0.2", "0.3"),
    (None, "3.0e3", "3000"),
    (None, "5.0e-5", "0.00005"),
    (None, "1e-20", "0"),
    (None, "1e30", "1000000000000000000024696061952"),
    (None, "0x10", "16"),
    (None, "+5", "5"),
    (None, ".5", "0.5"),
    ("5.0e3", "2.0e2", "5200"),
    ("1", "-0.9", "0.1"),
    ("3", "-5", "-2"),
    ("-1.5", "1.5", "0"),
    (None, "1.23456789012345678901234", "1.23456789012345679"),
    ("-268622.1661748289", "15.0", "-268607.16617482890001156"),
    ("894899.4014149748", "165993.80892081466", "1060893.21033578946003217"),
])
def test_incrbyfloat_formatting(r, start, incr, result):
    if start is not None:
        r.set("f", start)
    assert raw(r, "INCRBYFLOAT", "f", incr) == result
    assert r.get("f") == result


def test_incrbyfloat_errors(r):
    for bad in ["abc", " 1", "1 ", "1e", "nan", "1e-5000", "1e5000", ""]:
        assert err(r, "INCRBYFLOAT", "f", bad) == NOT_FLOAT, bad
    assert err(r, "INCRBYFLOAT", "f", "inf") == "increment would produce NaN or Infinity"
    r.set("f", "1e4932")
    assert err(r, "INCRBYFLOAT", "f", "1e4932") == "increment would produce NaN or Infinity"
    r.set("s", "hello")
    assert err(r, "INCRBYFLOAT", "s", "1") == NOT_FLOAT
    assert err(r, "INCRBYFLOAT", "f") == ARITY.format("incrbyfloat")


def test_incrbyfloat_resp3_is_bulk(r3):
    assert raw(r3, "INCRBYFLOAT", "f", "1.5") == "1.5"


def test_incrbyfloat_keeps_ttl(r):
    r.set("f", "1", ex=100)
    assert r.incrbyfloat("f", 1.5) == 2.5
    assert 99 <= r.execute_command("TTL", "f") <= 100


# APPEND / STRLEN / GETRANGE / SETRANGE


def test_append_strlen(r):
    assert r.append("k", "hello") == 5
    assert r.append("k", " world") == 11
    assert r.get("k") == "hello world"
    assert r.strlen("k") == 11
    assert r.strlen("missing") == 0
    assert r.append("e", "") == 0
    assert r.get("e") == ""
    r.set("n", "12")
    assert r.append("n", "3") == 3
    assert r.incr("n") == 124
    assert err(r, "APPEND", "k") == ARITY.format("append")
    assert err(r, "STRLEN") == ARITY.format("strlen")


def test_append_keeps_ttl(r):
    r.set("k", "a", ex=100)
    r.append("k", "b")
    assert 99 <= r.execute_command("TTL", "k") <= 100


def test_getrange(r):
    r.set("k", "This is a string")
    assert r.getrange("k", 0, 3) == "This"
    assert r.getrange("k", -3, -1) == "ing"
    assert r.getrange("k", 0, -1) == "This is a string"
    assert r.getrange("k", 10, 100) == "string"
    assert r.getrange("k", 100, 200) == ""
    assert r.getrange("k", 5, 3) == ""
    assert r.getrange("k", -100, -200) == ""
    assert r.getrange("k", -200, -100) == "T"
    assert r.getrange("k", -100, 2) == "Thi"
    assert r.getrange("missing", 0, -1) == ""
    r.set("e", "")
    assert r.getrange("e", 0, -1) == ""
    assert r.execute_command("SUBSTR", "k", 0, 3) == "This"
    assert err(r, "GETRANGE", "k", "a", "1") == NOT_INT
    assert err(r, "GETRANGE", "k", "0", "b") == NOT_INT
    assert err(r, "GETRANGE", "missing", "a", "1") == NOT_INT
    assert err(r, "GETRANGE", "k", "0") == ARITY.format("getrange")
    assert err(r, "SUBSTR", "k", "0") == ARITY.format("substr")


def test_setrange(r):
    r.set("k", "Hello World")
    assert r.setrange("k", 6, "Redis") == 11
    assert r.get("k") == "Hello Redis"
    assert r.setrange("pad", 5, "x") == 6
    assert r.get("pad") == "\x00" * 5 + "x"
    assert r.setrange("k", 0, "") == 11
    assert r.setrange("none", 3, "") == 0
    assert r.get("none") is None
    assert err(r, "SETRANGE", "k", "-1", "x") == "offset is out of range"
    assert err(r, "SETRANGE", "k", "abc", "x") == NOT_INT
    assert err(r, "SETRANGE", "k", "536870911", "xx") == \
        "string exceeds maximum allowed size (proto-max-bulk-len)"
    assert err(r, "SETRANGE", "big", "9223372036854775807", "x") == \
        "string exceeds maximum allowed size (proto-max-bulk-len)"
    assert r.get("big") is None
    # An empty patch never grows the string, so no size check applies.
    assert r.setrange("k", 9223372036854775807, "") == 11
    assert err(r, "SETRANGE", "k", "0") == ARITY.format("setrange")


def test_setrange_keeps_ttl(r):
    r.set("k", "abc", ex=100)
    r.setrange("k", 1, "X")
    assert r.get("k") == "aXc"
    assert 99 <= r.execute_command("TTL", "k") <= 100


def test_size_limit_follows_config():
    from conftest import running_server
    with running_server("--proto-max-bulk-len", "2mb") as s:
        c = s.client()
        assert c.setrange("k", 2 * 1024 * 1024 - 1, "x") == 2 * 1024 * 1024
        with pytest.raises(redis.ResponseError, match="proto-max-bulk-len"):
            c.setrange("k", 2 * 1024 * 1024, "x")
        with pytest.raises(redis.ResponseError, match="proto-max-bulk-len"):
            c.append("k", "y")
        c.close()


# LCS


def test_lcs(r):
    r.mset({"key1": "ohmytext", "key2": "mynewtext"})
    assert r.execute_command("LCS", "key1", "key2") == "mytext"
    assert r.execute_command("LCS", "key1", "key2", "LEN") == 6
    assert r.execute_command("LCS", "key1", "key2", "IDX") == [
        "matches", [[[4, 7], [5, 8]], [[2, 3], [0, 1]]], "len", 6]
    assert r.execute_command("LCS", "key1", "key2", "IDX", "MINMATCHLEN", "4") == [
        "matches", [[[4, 7], [5, 8]]], "len", 6]
    assert r.execute_command("LCS", "key1", "key2", "IDX", "MINMATCHLEN", "4",
                             "WITHMATCHLEN") == ["matches", [[[4, 7], [5, 8], 4]], "len", 6]
    assert r.execute_command("LCS", "key1", "key2", "IDX", "MINMATCHLEN", "-3",
                             "WITHMATCHLEN") == [
        "matches", [[[4, 7], [5, 8], 4], [[2, 3], [0, 1], 2]], "len", 6]
    assert r.execute_command("LCS", "key1", "missing") == ""
    assert r.execute_command("LCS", "missing", "missing", "LEN") == 0
    assert r.execute_command("LCS", "missing", "key1", "IDX") == ["matches", [], "len", 0]
    assert err(r, "LCS", "key1", "key2", "IDX", "LEN") == \
        "If you want both the length and indexes, please just use IDX."
    assert err(r, "LCS", "key1", "key2", "FOO") == "syntax error"
    assert err(r, "LCS", "key1", "key2", "MINMATCHLEN") == "syntax error"
    assert err(r, "LCS", "key1", "key2", "MINMATCHLEN", "x") == NOT_INT
    assert err(r, "LCS", "key1") == ARITY.format("lcs")


def test_lcs_whole_strings(r):
    r.mset({"a": "abcdef", "b": "abcdef"})
    assert r.execute_command("LCS", "a", "b", "IDX", "WITHMATCHLEN") == [
        "matches", [[[0, 5], [0, 5], 6]], "len", 6]
    r.mset({"a": "xaxbxc", "b": "abc"})
    assert r.execute_command("LCS", "a", "b") == "abc"
    assert r.execute_command("LCS", "a", "b", "IDX") == [
        "matches", [[[5, 5], [2, 2]], [[3, 3], [1, 1]], [[1, 1], [0, 0]]], "len", 3]


def test_lcs_resp3_map(r3):
    r3.mset({"key1": "ohmytext", "key2": "mynewtext"})
    assert r3.execute_command("LCS", "key1", "key2", "IDX") == {
        "matches": [[[4, 7], [5, 8]], [[2, 3], [0, 1]]], "len": 6}


def test_binary_safe(rb):
    rb.set(b"k", b"\x00\xff\r\n")
    assert rb.append(b"k", b"\x00") == 5
    assert rb.getrange(b"k", 1, 2) == b"\xff\r"
    assert rb.mget([b"k"]) == [b"\x00\xff\r\n\x00"]
    assert rb.getdel(b"k") == b"\x00\xff\r\n\x00"


def test_multi_key_commands_in_transaction(r):
    p = r.pipeline(transaction=True)
    p.mset({"a": "1", "b": "2", "c": "3"})
    p.mget("a", "b", "c")
    p.incr("a")
    p.execute_command("LCS", "a", "b")
    assert p.execute() == [True, ["1", "2", "3"], 2, "2"]


def test_incrbyfloat_refuses_an_embedded_nul(r):
    with pytest.raises(redis.ResponseError, match="^value is not a valid float$"):
        r.incrbyfloat("f", b"1.5\0")
    r.set("g", b"1.5\0")
    with pytest.raises(redis.ResponseError, match="^value is not a valid float$"):
        r.incrbyfloat("g", 1)
    assert r.exists("f") == 0
    assert r.incrbyfloat("f", "1.5") == 1.5

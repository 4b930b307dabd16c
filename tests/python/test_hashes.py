"""The hash family: replies, error texts and encodings as Redis 7.0 gives them."""

import pytest
import redis

from conftest import AGAINST_REDIS, running_server
from rawresp import unparsed as raw

ARITY = "wrong number of arguments for '{}' command"
NOT_INT = "value is not an integer or out of range"
NOT_FLOAT = "value is not a valid float"
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def err(r, *args):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*args)
    return str(e.value)


# HSET / HMSET / HSETNX / HGET / HMGET


def test_hset_counts_new_fields(r):
    assert r.execute_command("HSET", "h", "a", "1", "b", "2") == 2
    assert r.execute_command("HSET", "h", "a", "3", "c", "4") == 1
    assert r.hget("h", "a") == "3"
    assert r.hget("h", "nope") is None
    assert r.hget("nokey", "a") is None
    assert r.type("h") == "hash"


def test_hset_arity(r):
    assert err(r, "HSET", "h", "a") == ARITY.format("hset")
    assert err(r, "HSET", "h", "a", "1", "b") == ARITY.format("hset")
    assert err(r, "HSET", "h") == ARITY.format("hset")
    assert err(r, "HMSET", "h", "a", "1", "b") == ARITY.format("hmset")
    assert err(r, "HSETNX", "h", "a") == ARITY.format("hsetnx")
    assert err(r, "HGET", "h") == ARITY.format("hget")
    assert r.exists("h") == 0


def test_hmset(r):
    assert r.execute_command("HMSET", "h", "a", "1", "b", "2") in (True, "OK")
    assert r.hmget("h", "a", "zz", "b") == ["1", None, "2"]
    assert r.hmget("nokey", "a", "b") == [None, None]
    assert err(r, "HMGET", "h") == ARITY.format("hmget")


def test_hsetnx(r):
    assert r.hsetnx("h", "a", "1") == 1
    assert r.hsetnx("h", "a", "2") == 0
    assert r.hget("h", "a") == "1"


def test_values_round_trip_as_bytes(rb):
    values = [b"", b"0", b"-1", b"007", b"+5", b"9223372036854775807", b"9223372036854775808",
              b"-9223372036854775808", b"1.5", b"\x00\xff", b"x" * 300]
    for i, v in enumerate(values):
        rb.hset(b"byfield", f"k{i}".encode(), v)
        rb.hset(b"byvalue", v, f"k{i}".encode())
    for i, v in enumerate(values):
        assert rb.hget(b"byfield", f"k{i}".encode()) == v
        assert rb.hget(b"byvalue", v) == f"k{i}".encode()
    assert rb.hlen(b"byvalue") == len(values)
    assert rb.hget(b"byvalue", b"+0") is None
    assert rb.hget(b"byvalue", b"-0") is None
    assert rb.hget(b"byvalue", b"00") is None


# HGETALL / HKEYS / HVALS / HLEN / HEXISTS / HSTRLEN


def test_whole_hash_reads(r):
    r.hset("h", mapping={"a": "1", "b": "two", "c": "3"})
    assert r.hgetall("h") == {"a": "1", "b": "two", "c": "3"}
    assert raw(r, "HGETALL", "h") == ["a", "1", "b", "two", "c", "3"]
    assert r.hkeys("h") == ["a", "b", "c"]
    assert r.hvals("h") == ["1", "two", "3"]
    assert r.hlen("h") == 3
    assert r.hgetall("nokey") == {}
    assert r.hkeys("nokey") == []
    assert r.hvals("nokey") == []
    assert r.hlen("nokey") == 0


def test_hgetall_is_a_map_in_resp3(r3):
    r3.hset("h", mapping={"a": "1", "b": "2"})
    assert raw(r3, "HGETALL", "h") == {"a": "1", "b": "2"}
    assert raw(r3, "HGETALL", "nokey") == {}


def test_hexists_and_hstrlen(r):
    r.hset("h", mapping={"a": "hello", "n": "-123"})
    assert r.hexists("h", "a") is True
    assert r.hexists("h", "zz") is False
    assert r.hexists("nokey", "a") is False
    assert r.hstrlen("h", "a") == 5
    assert r.hstrlen("h", "n") == 4
    assert r.hstrlen("h", "zz") == 0
    assert r.hstrlen("nokey", "a") == 0
    assert err(r, "HSTRLEN", "h") == ARITY.format("hstrlen")


# HDEL


def test_hdel_removes_and_deletes_empty_key(r):
    r.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
    assert r.hdel("h", "a", "zz", "a") == 1
    assert r.hdel("h", "b", "c") == 2
    assert r.exists("h") == 0
    assert r.hdel("h", "a") == 0
    assert err(r, "HDEL", "h") == ARITY.format("hdel")


# HINCRBY / HINCRBYFLOAT


def test_hincrby(r):
    assert r.hincrby("h", "n", 5) == 5
    assert r.hincrby("h", "n", -7) == -2
    assert r.hget("h", "n") == "-2"
    r.hset("h", "max", "9223372036854775807")
    assert err(r, "HINCRBY", "h", "max", "1") == "increment or decrement would overflow"
    r.hset("h", "t", "text")
    assert err(r, "HINCRBY", "h", "t", "1") == "hash value is not an integer"
    r.hset("h", "f", "1.5")
    assert err(r, "HINCRBY", "h", "f", "1") == "hash value is not an integer"
    assert err(r, "HINCRBY", "h", "n", "x") == NOT_INT
    assert err(r, "HINCRBY", "h", "n", "99999999999999999999") == NOT_INT
    assert err(r, "HINCRBY", "h", "n") == ARITY.format("hincrby")
    assert r.hget("h", "max") == "9223372036854775807"


def test_hincrbyfloat(r):
    assert r.hincrbyfloat("h", "f", 10.5) == 10.5
    assert raw(r, "HINCRBYFLOAT", "h", "f", "0.1") == "10.6"
    assert raw(r, "HINCRBYFLOAT", "h", "g", "0.1") == "0.1"
    assert raw(r, "HINCRBYFLOAT", "h", "g", "0.2") == "0.3"
    r.hset("h", "x", "10")
    assert raw(r, "HINCRBYFLOAT", "h", "x", "5.0e3") == "5010"
    assert raw(r, "HINCRBYFLOAT", "h", "x", "0.1") == "5010.10000000000000009"
    assert raw(r, "HINCRBYFLOAT", "h", "y", "1e400").startswith("1000000000")
    r.hset("h", "t", "text")
    assert err(r, "HINCRBYFLOAT", "h", "t", "1") == "hash value is not a float"
    assert err(r, "HINCRBYFLOAT", "h", "f", "abc") == NOT_FLOAT
    assert err(r, "HINCRBYFLOAT", "h", "f", "nan") == NOT_FLOAT
    assert err(r, "HINCRBYFLOAT", "h", "f", "inf") == "value is NaN or Infinity"
    assert err(r, "HINCRBYFLOAT", "nokey", "f", "-inf") == "value is NaN or Infinity"
    r.hset("h", "i", "inf")
    assert err(r, "HINCRBYFLOAT", "h", "i", "1") == "increment would produce NaN or Infinity"
    assert r.exists("nokey") == 0


def test_hincrbyfloat_result_is_a_bulk_string_in_resp3(r3):
    assert raw(r3, "HINCRBYFLOAT", "h", "f", "1.5") == "1.5"


# HRANDFIELD


def test_hrandfield_single(r):
    r.hset("h", mapping={"a": "1", "b": "2", "c": "3"})
    for _ in range(20):
        assert r.hrandfield("h") in ("a", "b", "c")
    assert r.hrandfield("nokey") is None
    assert raw(r, "HRANDFIELD", "nokey", "3") == []
    assert raw(r, "HRANDFIELD", "nokey", "3", "WITHVALUES") == []


def test_hrandfield_counts(r):
    fields = {f"f{i}": str(i) for i in range(20)}
    r.hset("h", mapping=fields)
    assert raw(r, "HRANDFIELD", "h", "0") == []
    assert raw(r, "HRANDFIELD", "h", "0", "WITHVALUES") == []
    for n in (1, 5, 7, 15, 19):
        got = raw(r, "HRANDFIELD", "h", str(n))
        assert len(got) == n and len(set(got)) == n and set(got) <= set(fields)
    assert sorted(raw(r, "HRANDFIELD", "h", "100")) == sorted(fields)
    got = raw(r, "HRANDFIELD", "h", "100", "withvalues")
    assert dict(zip(got[::2], got[1::2])) == fields
    got = raw(r, "HRANDFIELD", "h", "5", "WITHVALUES")
    pairs = list(zip(got[::2], got[1::2]))
    assert len(pairs) == 5 and len({f for f, _ in pairs}) == 5
    assert all(fields[f] == v for f, v in pairs)


def test_hrandfield_negative_count_repeats(r):
    r.hset("h", mapping={"a": "1", "b": "2"})
    got = raw(r, "HRANDFIELD", "h", "-50")
    assert len(got) == 50 and set(got) <= {"a", "b"}
    got = raw(r, "HRANDFIELD", "h", "-30", "WITHVALUES")
    assert len(got) == 60
    assert all({"a": "1", "b": "2"}[f] == v for f, v in zip(got[::2], got[1::2]))


def test_hrandfield_withvalues_pairs_in_resp3(r3):
    r3.hset("h", mapping={"a": "1", "b": "2"})
    got = raw(r3, "HRANDFIELD", "h", "2", "WITHVALUES")
    assert sorted(got) == [["a", "1"], ["b", "2"]]
    got = raw(r3, "HRANDFIELD", "h", "-3", "WITHVALUES")
    assert len(got) == 3 and all(p in (["a", "1"], ["b", "2"]) for p in got)
    assert raw(r3, "HRANDFIELD", "h", "1") in (["a"], ["b"])
    assert raw(r3, "HRANDFIELD", "nokey") is None


def test_hrandfield_errors(r):
    r.hset("h", "a", "1")
    assert err(r, "HRANDFIELD", "h", "x") == NOT_INT
    assert err(r, "HRANDFIELD", "nokey", "x") == NOT_INT
    assert err(r, "HRANDFIELD", "h", "1", "x") == "syntax error"
    assert err(r, "HRANDFIELD", "h", "1", "WITHVALUES", "x") == "syntax error"
    assert err(r, "HRANDFIELD", "h", "-9223372036854775808") == (
        "value is out of range, value must between -9223372036854775807 and 9223372036854775807")
    assert err(r, "HRANDFIELD", "h", "-9223372036854775807", "WITHVALUES") == "value is out of range"
    assert err(r, "HRANDFIELD", "h", "4611686018427387904", "WITHVALUES") == "value is out of range"
    assert err(r, "HRANDFIELD") == ARITY.format("hrandfield")


# HSCAN


def test_hscan_small_hash_in_one_call(r):
    r.hset("h", mapping={"a": "1", "b": "2", "ab": "3"})
    cursor, items = raw(r, "HSCAN", "h", "0")
    assert cursor == "0"
    assert dict(zip(items[::2], items[1::2])) == {"a": "1", "b": "2", "ab": "3"}
    cursor, items = raw(r, "HSCAN", "h", "0", "MATCH", "a*", "COUNT", "1")
    assert cursor == "0" and dict(zip(items[::2], items[1::2])) == {"a": "1", "ab": "3"}
    assert raw(r, "HSCAN", "nokey", "0") == ["0", []]
    # A missing key is answered before the options are read.
    assert raw(r, "HSCAN", "nokey", "0", "COUNT", "0") == ["0", []]


def test_hscan_large_hash_iterates_everything(r):
    fields = {f"field:{i}": str(i) for i in range(1000)}
    r.hset("h", mapping=fields)
    seen = {}
    cursor = "0"
    calls = 0
    while True:
        cursor, items = raw(r, "HSCAN", "h", cursor, "COUNT", "50")
        seen.update(zip(items[::2], items[1::2]))
        calls += 1
        if cursor == "0":
            break
    assert seen == fields
    assert calls > 5
    assert dict(r.hscan_iter("h", match="field:1??")) == {
        f: v for f, v in fields.items() if len(f) == 9 and f.startswith("field:1")}


def test_hscan_sees_fields_present_throughout_while_writing(r):
    r.hset("h", mapping={f"f{i}": "v" for i in range(500)})
    seen = set()
    cursor = "0"
    i = 0
    while True:
        cursor, items = raw(r, "HSCAN", "h", cursor, "COUNT", "20")
        seen.update(items[::2])
        # Remove some fields and add others between calls.
        r.hdel("h", f"f{i}", f"f{i + 250}")
        r.hset("h", f"new{i}", "v")
        i += 1
        if cursor == "0":
            break
    survivors = {f"f{k}" for k in range(500)} - {f"f{k}" for k in range(i)} \
        - {f"f{k + 250}" for k in range(i)}
    assert survivors <= seen


def test_hscan_errors(r):
    r.hset("h", "a", "1")
    assert err(r, "HSCAN", "h", "x") == "invalid cursor"
    assert err(r, "HSCAN", "h", "0", "COUNT", "0") == "syntax error"
    assert err(r, "HSCAN", "h", "0", "COUNT", "x") == NOT_INT
    assert err(r, "HSCAN", "h", "0", "MATCH") == "syntax error"
    assert err(r, "HSCAN", "h", "0", "TYPE", "string") == "syntax error"
    assert err(r, "HSCAN", "h", "0", "NOVALUES") == "syntax error"
    assert err(r, "HSCAN", "h") == ARITY.format("hscan")


# Types and encodings


@pytest.mark.parametrize("cmd", [
    ["HSET", "s", "a", "1"], ["HMSET", "s", "a", "1"], ["HSETNX", "s", "a", "1"], ["HGET", "s", "a"],
    ["HMGET", "s", "a"], ["HGETALL", "s"], ["HKEYS", "s"], ["HVALS", "s"], ["HLEN", "s"],
    ["HEXISTS", "s", "a"], ["HDEL", "s", "a"], ["HINCRBY", "s", "a", "1"],
    ["HINCRBYFLOAT", "s", "a", "1"], ["HSTRLEN", "s", "a"], ["HRANDFIELD", "s"],
    ["HRANDFIELD", "s", "2"], ["HSCAN", "s", "0"],
])
def test_wrongtype(r, cmd):
    r.set("s", "x")
    assert err(r, *cmd) == WRONGTYPE
    assert r.get("s") == "x"


def test_other_commands_on_a_hash_are_wrongtype(r):
    r.hset("h", "a", "1")
    assert err(r, "GET", "h") == WRONGTYPE
    assert err(r, "INCR", "h") == WRONGTYPE


def test_encoding_converts_on_entry_count():
    with running_server("--hash-max-listpack-entries", "4") as s:
        r = s.client()
        r.hset("h", mapping={f"f{i}": "v" for i in range(4)})
        assert r.object("encoding", "h") == "listpack"
        r.hset("h", "f0", "w")
        assert r.object("encoding", "h") == "listpack"
        r.hset("h", "f4", "v")
        assert r.object("encoding", "h") == "hashtable"
        r.hdel("h", "f4", "f3", "f2")
        assert r.object("encoding", "h") == "hashtable"
        assert r.hgetall("h") == {"f0": "w", "f1": "v"}
        r.close()


def test_encoding_converts_on_value_length(r):
    r.config_set("hash-max-listpack-value", "8")
    try:
        r.hset("a", "f", "x" * 8)
        assert r.object("encoding", "a") == "listpack"
        r.hset("a", "g", "x" * 9)
        assert r.object("encoding", "a") == "hashtable"
        r.hset("b", "f" * 9, "1")
        assert r.object("encoding", "b") == "hashtable"
        r.hincrby("c", "f" * 9, 1)
        assert r.object("encoding", "c") == "hashtable"
        # HSETNX of an existing field changes nothing, encoding included.
        r.hset("d", "f", "1")
        assert r.hsetnx("d", "f", "x" * 9) == 0
        assert r.object("encoding", "d") == "listpack"
        assert r.hsetnx("d", "g", "x" * 9) == 1
        assert r.object("encoding", "d") == "hashtable"
    finally:
        r.config_set("hash-max-listpack-value", "64")


def test_large_hset_creates_hashtable_directly(r):
    r.hset("h", mapping={f"f{i}": str(i) for i in range(600)})
    assert r.object("encoding", "h") == "hashtable"
    assert r.hlen("h") == 600
    assert r.hget("h", "f599") == "599"


def test_expired_hash_is_gone(r):
    r.hset("h", "a", "1")
    r.pexpire("h", 1)
    import time
    time.sleep(0.02)
    assert r.hget("h", "a") is None
    assert r.hlen("h") == 0
    assert r.hset("h", "b", "2") == 1
    assert r.ttl("h") == -1


@pytest.mark.skipif(AGAINST_REDIS, reason="Keel's own memory accounting")
def test_small_hash_memory_usage(r):
    r.hset("h", mapping={f"f{i}": f"v{i}" for i in range(1, 6)})
    small = r.memory_usage("h")
    assert small < 140
    # Past hash-max-listpack-entries (512), the general form.
    r.hset("big", mapping={f"f{i}": f"v{i}" for i in range(600)})
    assert r.memory_usage("big") > 600 * 30


def test_transaction_with_hashes(r):
    p = r.pipeline(transaction=True)
    p.hset("h", "a", "1")
    p.hincrby("h", "a", 2)
    p.hincrbyfloat("h", "b", "0.5")
    p.hgetall("h")
    assert p.execute() == [1, 3, 0.5, {"a": "3", "b": "0.5"}]


def test_writes_keep_the_ttl_and_invalidate_watch(server, r):
    r.hset("h", "a", "1")
    r.expire("h", 100)
    assert r.hset("h", "b", "2") == 1
    assert r.hincrby("h", "a", 1) == 2
    assert r.hdel("h", "b") == 1
    assert 0 < r.ttl("h") <= 100
    other = server.client()
    try:
        with r.pipeline(transaction=True) as p:
            p.watch("h")
            other.hsetnx("h", "a", "9")  # refused: not a change, the watch holds
            p.multi()
            p.hget("h", "a")
            assert p.execute() == ["2"]
        with r.pipeline(transaction=True) as p:
            p.watch("h")
            other.hset("h", "c", "3")
            p.multi()
            p.hget("h", "a")
            with pytest.raises(redis.WatchError):
                p.execute()
    finally:
        other.close()


def test_hscan_reply_is_a_flat_array_in_resp3(r3):
    r3.hset("h", mapping={"a": "1"})
    assert raw(r3, "HSCAN", "h", "0") == ["0", ["a", "1"]]
    assert raw(r3, "HKEYS", "h") == ["a"]
    assert raw(r3, "HMGET", "h", "a", "b") == ["1", None]


def test_hrandfield_and_srandmember_count_limits_are_redis(r):
    r.hset("h", mapping={"a": "1", "b": "2"})
    r.sadd("s", "x", "y")
    for cmd, key in (("HRANDFIELD", "h"), ("HRANDFIELD", "nokey"), ("SRANDMEMBER", "s")):
        with pytest.raises(redis.ResponseError, match="must between -9223372036854775807 and"):
            r.execute_command(cmd, key, "-9223372036854775808")
    for key in ("h", "nokey"):
        for bad in ("-4611686018427387904", "4611686018427387904", "-9223372036854775807"):
            with pytest.raises(redis.ResponseError, match="^value is out of range$"):
                r.execute_command("HRANDFIELD", key, bad, "WITHVALUES")
    assert r.execute_command("HRANDFIELD", "nokey", "-4611686018427387903", "WITHVALUES") == []
    assert r.execute_command("SRANDMEMBER", "nokey", "-9223372036854775807") == []
    got = r.execute_command("HRANDFIELD", "h", "-300000", "WITHVALUES")
    assert len(got) == 600000
    assert {(f, v) for f, v in zip(got[0::2], got[1::2])} == {("a", "1"), ("b", "2")}
    got = r.execute_command("SRANDMEMBER", "s", "-300000")
    assert len(got) == 300000 and set(got) == {"x", "y"}


@pytest.mark.skipif(AGAINST_REDIS, reason="Redis streams any count and would exhaust memory")
def test_hrandfield_refuses_a_reply_past_proto_max_bulk_len(r):
    r.hset("h", mapping={"a": "1", "b": "2"})
    r.sadd("s", "x")
    assert len(r.hrandfield("h", -1000)) == 1000
    with pytest.raises(redis.ResponseError, match="reply too large"):
        r.hrandfield("h", -(1 << 62))
    with pytest.raises(redis.ResponseError, match="reply too large"):
        r.srandmember("s", -(1 << 62))


def test_hincrbyfloat_refuses_an_embedded_nul(r):
    with pytest.raises(redis.ResponseError, match="^value is not a valid float$"):
        r.hincrbyfloat("h", "f", b"1.5\0")
    r.hset("h", "g", b"1.5\0")
    with pytest.raises(redis.ResponseError, match="^hash value is not a float$"):
        r.hincrbyfloat("h", "g", 1)
    assert r.hget("h", "g") == "1.5\0"

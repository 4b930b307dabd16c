"""DUMP and RESTORE: payloads, their exact bytes for deterministic encodings, and RESTORE's
options, replies and errors as Redis 7.0 gives them."""

import time

import pytest
import redis
from conftest import AGAINST_REDIS


def cmd_err(r, *args):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*args)
    return str(e.value)


def crc64(data):
    """Redis's CRC-64 (Jones polynomial, reflected), to build payloads by hand."""
    poly = 0x95AC9329AC4BC9B5
    crc = 0
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
    return crc


def payload(body, version=10):
    p = body + version.to_bytes(2, "little")
    return p + crc64(p).to_bytes(8, "little")


OK = (True, "OK", b"OK")

# What Redis 7.0.15 returns for these values (listpack, intset, integer and short strings
# have exactly one encoding, so every server must agree byte for byte).
EXACT = {
    "k": b"\x00\x01v\n\x00\x91\x08\xce\xb2\x198\x8a\xce",
    "n": b"\x00\xc190\n\x00\x9d\x94\xea'\x93\xfc\x08\xb9",
    "h": b"\x10\x11\x11\x00\x00\x00\x04\x00\x81a\x02\x01\x01\x81b\x02\x02\x01\xff\n\x00>@cl\x8f]v\x9a",
    "s": b"\x0b\x0e\x02\x00\x00\x00\x03\x00\x00\x00\x01\x00\x02\x00\x03\x00\n\x00\xa5\x02\\\xe2mnM\x1b",
    "l": b"\x12\x01\x02\x0f\x0f\x00\x00\x00\x03\x00\x81a\x02\x81b\x02\x01\x01\xff\n\x00\xe0\x1b\xabJG\xceY\"",
}


def fill(rb):
    rb.set("k", "v")
    rb.set("n", "12345")
    rb.hset("h", mapping={"a": "1", "b": "2"})
    rb.sadd("s", 1, 2, 3)
    rb.rpush("l", "a", "b", "1")


def test_dump_bytes_match_redis(rb):
    fill(rb)
    for key, want in EXACT.items():
        assert rb.dump(key) == want, key
    assert rb.dump("missing") is None


def test_payload_checksum_is_redis_crc64():
    for want in EXACT.values():
        assert payload(want[:-10]) == want


def contents(rb, key):
    t = rb.type(key)
    if t == b"string":
        return rb.get(key)
    if t == b"hash":
        return rb.hgetall(key)
    if t == b"set":
        return rb.smembers(key)
    if t == b"list":
        return rb.lrange(key, 0, -1)
    if t == b"zset":
        return rb.zrange(key, 0, -1, withscores=True)
    raise AssertionError(t)


def test_every_type_round_trips_with_its_encoding(rb):
    fill(rb)
    rb.set("long", "abc" * 500)
    rb.hset("bighash", mapping={f"f{i}": "x" * (i % 70) for i in range(600)})
    rb.sadd("strset", "a", "b", "c")
    rb.sadd("bigset", *[f"m{i}" for i in range(1000)])
    rb.sadd("bigints", *range(0, 5000, 7))
    rb.rpush("biglist", *[f"element-{i}" for i in range(20000)])
    rb.zadd("z", {"a": 1, "b": 2.5, "c": 0.1, "d": float("-inf")})
    rb.zadd("bigz", {f"m{i}": i / 7 for i in range(300)})
    for key in list(EXACT) + ["long", "bighash", "strset", "bigset", "bigints", "biglist", "z", "bigz"]:
        p = rb.dump(key)
        assert rb.restore(key + ":copy", 0, p) in OK
        assert contents(rb, key + ":copy") == contents(rb, key), key
        assert rb.object("encoding", key + ":copy") == rb.object("encoding", key), key
        assert rb.ttl(key + ":copy") == -1


def test_restore_errors_in_redis_order(r):
    r.set("k", "v")
    p = r.dump("k")
    assert cmd_err(r, "RESTORE", "k", "0", p) == "BUSYKEY Target key name already exists."
    # Options are checked before the key, the key before the TTL, the TTL before the payload.
    assert cmd_err(r, "RESTORE", "k", "0", p, "FOO") == "syntax error"
    assert cmd_err(r, "RESTORE", "k", "abc", "x") == "BUSYKEY Target key name already exists."
    assert cmd_err(r, "RESTORE", "n", "abc", "x") == "value is not an integer or out of range"
    assert cmd_err(r, "RESTORE", "n", "-1", "x") == "Invalid TTL value, must be >= 0"
    assert cmd_err(r, "RESTORE", "n", "0", "x") == "DUMP payload version or checksum are wrong"
    assert cmd_err(r, "RESTORE", "n", "0", "x", "IDLETIME") == "syntax error"
    assert cmd_err(r, "RESTORE", "n", "0", "x", "IDLETIME", "-1") == "Invalid IDLETIME value, must be >= 0"
    assert cmd_err(r, "RESTORE", "n", "0", "x", "IDLETIME", "z") == "value is not an integer or out of range"
    assert cmd_err(r, "RESTORE", "n", "0", "x", "FREQ", "256") == "Invalid FREQ value, must be >= 0 and <= 255"
    assert cmd_err(r, "RESTORE", "n", "0", "x", "FREQ", "-1") == "Invalid FREQ value, must be >= 0 and <= 255"
    assert cmd_err(r, "RESTORE", "n", "0", "x", "IDLETIME", "1", "FREQ", "1") == "syntax error"
    assert cmd_err(r, "RESTORE", "n", "0", "x", "FREQ", "1", "IDLETIME", "1") == "syntax error"
    assert cmd_err(r, "RESTORE", "n", "0") == "wrong number of arguments for 'restore' command"
    assert cmd_err(r, "DUMP") == "wrong number of arguments for 'dump' command"
    assert r.exists("n") == 0


def test_damaged_payloads(rb):
    rb.set("k", "hello world")
    p = rb.dump("k")
    for i in range(len(p)):
        bad = bytearray(p)
        bad[i] ^= 0x04
        assert cmd_err(rb, "RESTORE", "x", "0", bytes(bad)) == "DUMP payload version or checksum are wrong"
    # A newer RDB version is refused even with a correct checksum.
    assert cmd_err(rb, "RESTORE", "x", "0", payload(p[:-10], 11)) == "DUMP payload version or checksum are wrong"
    # A correct checksum over a body that does not parse.
    assert cmd_err(rb, "RESTORE", "x", "0", payload(b"\x00\x0fab")) == "Bad data format"
    # Redis reads a value from the whole payload: one that runs into the footer restores.
    assert rb.restore("y", 0, payload(b"\x00\x05ab")) in OK
    assert rb.get("y") == b"ab\n\x00" + payload(b"\x00\x05ab")[6:7]
    assert cmd_err(rb, "RESTORE", "x", "0", payload(b"\x63\x01a")) == "Bad data format"
    # RDB 11's listpack set is not a type of version 10.
    lp_set = bytes([20, 10, 0, 0, 0, 1, 0, 0x81, ord("a"), 2, 0xFF])
    assert cmd_err(rb, "RESTORE", "x", "0", payload(lp_set)) == "Bad data format"
    # An empty set is refused.
    assert cmd_err(rb, "RESTORE", "x", "0", payload(b"\x02\x00")) == "Bad data format"
    # An older version restores.
    assert rb.restore("x", 0, payload(b"\x00\x02hi", 9)) in OK
    assert rb.get("x") == b"hi"


def test_options_and_ttls(rb):
    rb.set("src", "value")
    p = rb.dump("src")
    rb.set("dst", "old")
    assert rb.restore("dst", 0, p, replace=True) in OK
    assert rb.get("dst") == b"value"
    assert rb.execute_command("RESTORE", "t", "100000", p, "IDLETIME", "10") == b"OK"
    assert 99000 <= rb.pttl("t") <= 100000
    assert 10 <= rb.object("idletime", "t") <= 12
    assert rb.execute_command("RESTORE", "f", "0", p, "FREQ", "5", "REPLACE", "ABSTTL") == b"OK"
    future = int(time.time() * 1000) + 3_600_000
    assert rb.restore("a", future, p, absttl=True) in OK
    assert 3_590_000 <= rb.pttl("a") <= 3_600_000
    # A deadline already past: OK, and no key; with REPLACE the old key is deleted.
    assert rb.restore("past", 1, p, absttl=True) in OK
    assert rb.exists("past") == 0
    assert rb.restore("dst", 1, p, absttl=True, replace=True) in OK
    assert rb.exists("dst") == 0
    # A relative TTL so large that adding the time overflows lands in the past, as in Redis.
    assert rb.restore("huge", 9223372036854775807, p) in OK
    assert rb.exists("huge") == 0
    assert rb.restore("hugeabs", 9223372036854775807, p, absttl=True) in OK
    assert rb.pttl("hugeabs") > 9_000_000_000_000_000_000
    # A past deadline does not bypass BUSYKEY.
    rb.set("busy", "x")
    assert cmd_err(rb, "RESTORE", "busy", "1", p, "ABSTTL") == "BUSYKEY Target key name already exists."


def test_restored_key_is_visible_to_type_commands(r):
    r.zadd("z", {"a": 1, "b": 2})
    p = r.dump("z")
    r.delete("z")
    assert r.restore("z", 0, p) in OK
    assert r.zscore("z", "b") == 2.0
    assert r.type("z") == "zset"


@pytest.mark.skipif(AGAINST_REDIS, reason="Redis without RedisBloom has no Bloom filters to dump")
def test_bloom_filters_dump_and_restore(r):
    r.execute_command("BF.RESERVE", "bf", "0.01", "100")
    for i in range(350):
        r.execute_command("BF.ADD", "bf", f"item{i}")
    p = r.dump("bf")
    # A RedisBloom module value: type 7, then the id of MBbloom-- at encoding version 4.
    assert p[:10] == b"\x07\x81" + bytes.fromhex("3016e5a289bef804")
    assert r.restore("copy", 0, p) in OK
    assert r.execute_command("BF.DEBUG", "copy") == r.execute_command("BF.DEBUG", "bf")
    assert r.execute_command("BF.EXISTS", "copy", "item7") == 1
    assert r.type("copy") == "MBbloom--"

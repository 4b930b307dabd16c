"""Bitmap commands: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD, BITFIELD_RO."""

import pytest
import redis

from conftest import make_list

ARITY = "wrong number of arguments for '{}' command"
NOT_INT = "value is not an integer or out of range"
BAD_OFFSET = "bit offset is not an integer or out of range"
BAD_TYPE = ("Invalid bitfield type. Use something like i16 u8. "
            "Note that u64 is not supported but i64 is.")
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def err(r, *args):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*args)
    return str(e.value)


# SETBIT / GETBIT


def test_setbit_getbit(rb):
    assert rb.setbit(b"k", 7, 1) == 0
    assert rb.get(b"k") == b"\x01"
    assert rb.setbit(b"k", 7, 1) == 1
    assert rb.setbit(b"k", 7, 0) == 1
    assert rb.get(b"k") == b"\x00"
    assert rb.setbit(b"k", 20, 1) == 0
    assert rb.get(b"k") == b"\x00\x00\x08"
    assert rb.getbit(b"k", 20) == 1
    assert rb.getbit(b"k", 21) == 0
    assert rb.getbit(b"k", 100000) == 0
    assert rb.getbit(b"missing", 0) == 0
    # SETBIT that leaves the bit as it was still creates the key.
    assert rb.setbit(b"z", 3, 0) == 0
    assert rb.get(b"z") == b"\x00"


def test_setbit_on_existing_string(r):
    r.set("k", "`")  # 0110 0000
    assert r.setbit("k", 1, 0) == 1
    assert r.setbit("k", 7, 1) == 0
    assert r.get("k") == "!"  # 0010 0001
    assert r.getbit("k", 2) == 1


def test_setbit_errors(r):
    assert err(r, "SETBIT", "k", "-1", "1") == BAD_OFFSET
    assert err(r, "SETBIT", "k", "abc", "1") == BAD_OFFSET
    assert err(r, "SETBIT", "k", "4294967296", "1") == BAD_OFFSET
    assert err(r, "SETBIT", "k", "9223372036854775807", "1") == BAD_OFFSET
    assert err(r, "SETBIT", "k", "0", "2") == "bit is not an integer or out of range"
    assert err(r, "SETBIT", "k", "0", "-1") == "bit is not an integer or out of range"
    assert err(r, "SETBIT", "k", "0", "a") == "bit is not an integer or out of range"
    assert err(r, "GETBIT", "k", "-1") == BAD_OFFSET
    assert err(r, "GETBIT", "k", "4294967296") == BAD_OFFSET
    assert err(r, "GETBIT", "k", "x") == BAD_OFFSET
    assert r.get("k") is None
    assert err(r, "SETBIT", "k", "0") == ARITY.format("setbit")
    assert err(r, "GETBIT", "k") == ARITY.format("getbit")


def test_setbit_limit_follows_config():
    from conftest import running_server
    with running_server("--proto-max-bulk-len", "1mb") as s:
        c = s.client()
        assert c.setbit("k", 8 * 1024 * 1024 - 1, 1) == 0
        assert c.strlen("k") == 1024 * 1024
        with pytest.raises(redis.ResponseError, match="bit offset is not an integer"):
            c.setbit("k", 8 * 1024 * 1024, 1)
        with pytest.raises(redis.ResponseError, match="bit offset is not an integer"):
            c.execute_command("BITFIELD", "k", "SET", "u8", "#1048576", "1")
        c.close()


def test_setbit_keeps_ttl(r):
    r.set("k", "a", ex=100)
    r.setbit("k", 0, 1)
    assert 99 <= r.execute_command("TTL", "k") <= 100


def test_wrong_type(r):
    make_list(r, "l")
    for cmd in (["SETBIT", "l", "0", "1"], ["GETBIT", "l", "0"], ["BITCOUNT", "l"],
                ["BITPOS", "l", "1"], ["BITOP", "AND", "d", "l"],
                ["BITFIELD", "l", "GET", "u8", "0"], ["BITFIELD", "l", "SET", "u8", "0", "1"],
                ["BITFIELD_RO", "l", "GET", "u8", "0"]):
        assert err(r, *cmd) == WRONGTYPE, cmd
    # BITOP's destination may hold any type: it is overwritten.
    r.set("s", "x")
    assert r.bitop("AND", "l", "s") == 1
    assert r.get("l") == "x"


# BITCOUNT


def test_bitcount(r):
    r.set("k", "foobar")
    assert r.bitcount("k") == 26
    assert r.bitcount("k", 0, 0) == 4
    assert r.bitcount("k", 1, 1) == 6
    assert r.bitcount("k", -1, -1) == 4
    assert r.bitcount("k", 1, 1, "BIT") == 1
    assert r.bitcount("k", 5, 30, "bit") == 17
    assert r.bitcount("k", 0, -1, "BYTE") == 26
    assert r.bitcount("k", 10, 20) == 0
    assert r.bitcount("k", -100, -200) == 0
    assert r.bitcount("k", -200, -100) == 4
    assert r.bitcount("k", 3, 1) == 0
    assert r.bitcount("missing") == 0
    assert r.bitcount("missing", 0, 1) == 0
    r.set("e", "")
    assert r.bitcount("e") == 0
    assert r.bitcount("e", 0, -1) == 0


def test_bitcount_errors(r):
    r.set("k", "foobar")
    assert err(r, "BITCOUNT", "k", "0") == "syntax error"
    assert err(r, "BITCOUNT", "k", "0", "1", "BYTE", "x") == "syntax error"
    assert err(r, "BITCOUNT", "k", "0", "1", "WORD") == "syntax error"
    assert err(r, "BITCOUNT", "k", "a", "1") == NOT_INT
    assert err(r, "BITCOUNT", "k", "0", "b") == NOT_INT
    assert err(r, "BITCOUNT", "k", "a", "1", "xx") == NOT_INT
    # A missing key answers 0 before the arguments are looked at.
    assert r.execute_command("BITCOUNT", "missing", "0") == 0
    assert r.execute_command("BITCOUNT", "missing", "a", "b", "c", "d") == 0
    assert err(r, "BITCOUNT") == ARITY.format("bitcount")


# BITPOS


def test_bitpos(rb):
    rb.set(b"k", b"\xff\xf0\x00")
    assert rb.bitpos(b"k", 0) == 12
    assert rb.bitpos(b"k", 1) == 0
    assert rb.bitpos(b"k", 1, 2) == -1
    assert rb.bitpos(b"k", 0, 2) == 16
    assert rb.bitpos(b"k", 1, 1, -1) == 8
    assert rb.bitpos(b"k", 0, 0, 0) == -1
    assert rb.bitpos(b"k", 1, 7, 15, "BIT") == 7
    assert rb.bitpos(b"k", 0, 7, 15, "bit") == 12
    assert rb.bitpos(b"k", 0, 0, 11, "BIT") == -1
    assert rb.bitpos(b"k", 1, 0, -1, "BYTE") == 0
    assert rb.bitpos(b"k", 1, 5, 3) == -1
    rb.set(b"ones", b"\xff\xff")
    assert rb.bitpos(b"ones", 0) == 16
    assert rb.bitpos(b"ones", 0, 0) == 16
    assert rb.bitpos(b"ones", 0, 0, -1) == -1
    assert rb.bitpos(b"ones", 0, 0, -1, "BIT") == -1
    rb.set(b"zeros", b"\x00\x00")
    assert rb.bitpos(b"zeros", 1) == -1
    assert rb.bitpos(b"zeros", 0) == 0
    assert rb.bitpos(b"missing", 1) == -1
    assert rb.bitpos(b"missing", 0) == 0
    rb.set(b"e", b"")
    assert rb.bitpos(b"e", 0) == -1
    assert rb.bitpos(b"e", 1) == -1
    rb.set(b"f", b"f")
    # Both ends negative and reversed still clamp to the first byte here.
    assert rb.bitpos(b"f", 1, -100, -200) == 1


def test_bitpos_errors(r):
    r.set("k", "foobar")
    assert err(r, "BITPOS", "k", "2") == "The bit argument must be 1 or 0."
    assert err(r, "BITPOS", "missing", "2") == "The bit argument must be 1 or 0."
    assert err(r, "BITPOS", "k", "x") == NOT_INT
    assert err(r, "BITPOS", "k", "1", "a") == NOT_INT
    assert err(r, "BITPOS", "k", "1", "0", "b") == NOT_INT
    assert err(r, "BITPOS", "k", "1", "0", "1", "WORD") == "syntax error"
    # The unit is read before the end.
    assert err(r, "BITPOS", "k", "1", "1", "a", "xx") == "syntax error"
    assert err(r, "BITPOS", "k", "1", "0", "1", "BIT", "x") == "syntax error"
    assert r.execute_command("BITPOS", "missing", "0", "1", "2", "3", "4") == 0
    assert err(r, "BITPOS", "k") == ARITY.format("bitpos")


# BITOP


def test_bitop(rb):
    rb.set(b"a", b"\xff\x0f")
    rb.set(b"b", b"\xf0")
    assert rb.bitop("AND", b"d", b"a", b"b") == 2
    assert rb.get(b"d") == b"\xf0\x00"
    assert rb.bitop("or", b"d", b"a", b"b") == 2
    assert rb.get(b"d") == b"\xff\x0f"
    assert rb.bitop("XOR", b"d", b"a", b"b") == 2
    assert rb.get(b"d") == b"\x0f\x0f"
    assert rb.bitop("NOT", b"d", b"a") == 2
    assert rb.get(b"d") == b"\x00\xf0"
    assert rb.bitop("AND", b"d", b"a", b"missing") == 2
    assert rb.get(b"d") == b"\x00\x00"
    assert rb.bitop("OR", b"d", b"a") == 2
    assert rb.get(b"d") == b"\xff\x0f"
    # An empty result deletes the destination.
    assert rb.bitop("OR", b"d", b"missing", b"missing2") == 0
    assert rb.get(b"d") is None
    assert rb.bitop("NOT", b"a", b"a") == 2
    assert rb.get(b"a") == b"\x00\xf0"


def test_bitop_errors(r):
    assert err(r, "BITOP", "NOT", "d", "a", "b") == \
        "BITOP NOT must be called with a single source key."
    assert err(r, "BITOP", "NAND", "d", "a") == "syntax error"
    assert err(r, "BITOP", "AND", "d") == ARITY.format("bitop")


def test_bitop_clears_destination_ttl(r):
    r.set("d", "old", ex=100)
    r.set("a", "x")
    r.bitop("OR", "d", "a")
    assert r.execute_command("TTL", "d") == -1


# BITFIELD


def bf(r, key, *args):
    return r.execute_command("BITFIELD", key, *args)


def test_bitfield_get_set_incrby(r):
    assert bf(r, "k", "SET", "i8", "0", "-5", "GET", "i8", "0", "GET", "u8", "0") == [0, -5, 251]
    assert bf(r, "k", "INCRBY", "u4", "#1", "20") == [15]
    assert bf(r, "k", "GET", "u4", "0", "GET", "u4", "4") == [15, 15]
    assert bf(r, "k", "SET", "u8", "#1", "200", "GET", "u16", "0") == [0, 65480]
    assert bf(r, "k", "GET", "i64", "0", "GET", "u63", "1") == [-15762598695796736, 9207609438158979072]
    assert bf(r, "missing", "GET", "u8", "0", "GET", "i5", "100") == [0, 0]
    assert bf(r, "k") == []
    assert bf(r, "missing") == []


def test_bitfield_wide_values(rb):
    assert rb.execute_command("BITFIELD", b"k", "SET", "i64", "0", "-1") == [0]
    assert rb.get(b"k") == b"\xff" * 8
    assert rb.execute_command("BITFIELD", b"k", "GET", "u63", "0", "GET", "u63", "1") == \
        [9223372036854775807, 9223372036854775807]
    assert rb.execute_command("BITFIELD", b"k", "GET", "i64", "4", "GET", "u8", "60") == \
        [-16, 240]
    assert rb.execute_command("BITFIELD", b"n", "SET", "u63", "3", "9223372036854775807") == [0]
    assert rb.get(b"n") == b"\x1f" + b"\xff" * 7 + b"\xc0"
    assert rb.execute_command("BITFIELD", b"o", "SET", "i1", "0", "1", "GET", "i1", "0",
                              "GET", "u1", "0") == [0, -1, 1]


def test_bitfield_overflow(r):
    assert bf(r, "k", "SET", "u8", "0", "250", "INCRBY", "u8", "0", "10") == [0, 4]
    assert bf(r, "k", "OVERFLOW", "SAT", "INCRBY", "u8", "0", "300") == [255]
    assert bf(r, "k", "OVERFLOW", "sat", "INCRBY", "u8", "0", "-1000") == [0]
    assert bf(r, "k", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "-1", "GET", "u8", "0") == [None, 0]
    assert bf(r, "k", "SET", "u8", "0", "-1", "GET", "u8", "0") == [0, 255]
    assert bf(r, "k", "OVERFLOW", "SAT", "SET", "u8", "0", "-1", "GET", "u8", "0") == [255, 255]
    assert bf(r, "k", "OVERFLOW", "FAIL", "SET", "u8", "0", "256", "GET", "u8", "0") == [None, 255]
    assert bf(r, "s", "SET", "i8", "0", "127", "INCRBY", "i8", "0", "1") == [0, -128]
    assert bf(r, "s", "OVERFLOW", "SAT", "INCRBY", "i8", "0", "-1") == [-128]
    assert bf(r, "s", "OVERFLOW", "SAT", "SET", "i8", "0", "1000") == [-128]
    assert bf(r, "s", "GET", "i8", "0") == [127]
    assert bf(r, "s", "OVERFLOW", "FAIL", "INCRBY", "i8", "0", "1",
               "OVERFLOW", "WRAP", "INCRBY", "i8", "0", "1") == [None, -128]
    assert bf(r, "w", "SET", "i64", "0", "9223372036854775807", "INCRBY", "i64", "0", "1") == \
        [0, -9223372036854775808]
    assert bf(r, "w", "OVERFLOW", "SAT", "INCRBY", "i64", "0", "-1", "INCRBY", "i64", "0", "-5") == \
        [-9223372036854775808, -9223372036854775808]
    # A failed write still creates (and zero-pads) the key.
    assert bf(r, "f", "OVERFLOW", "FAIL", "INCRBY", "u2", "100", "10") == [None]
    assert r.strlen("f") == 13


def test_bitfield_errors(r):
    assert err(r, "BITFIELD", "k", "GET", "u64", "0") == BAD_TYPE
    assert err(r, "BITFIELD", "k", "GET", "i65", "0") == BAD_TYPE
    assert err(r, "BITFIELD", "k", "GET", "i0", "0") == BAD_TYPE
    assert err(r, "BITFIELD", "k", "GET", "x8", "0") == BAD_TYPE
    assert err(r, "BITFIELD", "k", "GET", "u8", "-1") == BAD_OFFSET
    assert err(r, "BITFIELD", "k", "GET", "u8", "#-1") == BAD_OFFSET
    assert err(r, "BITFIELD", "k", "GET", "u8", "abc") == BAD_OFFSET
    assert err(r, "BITFIELD", "k", "SET", "u8", "#9223372036854775807", "1") == BAD_OFFSET
    assert err(r, "BITFIELD", "k", "GET", "u8", "4294967296") == BAD_OFFSET
    assert err(r, "BITFIELD", "k", "SET", "u8", "0", "x") == NOT_INT
    assert err(r, "BITFIELD", "k", "OVERFLOW", "BAD") == "Invalid OVERFLOW type specified"
    assert err(r, "BITFIELD", "k", "OVERFLOW") == "syntax error"
    assert err(r, "BITFIELD", "k", "GET", "u8") == "syntax error"
    assert err(r, "BITFIELD", "k", "SET", "u8", "0") == "syntax error"
    assert err(r, "BITFIELD", "k", "INCRBY", "u8") == "syntax error"
    assert err(r, "BITFIELD", "k", "FOO") == "syntax error"
    # Parsing finishes before anything runs: a bad later op changes nothing.
    assert err(r, "BITFIELD", "k", "SET", "u8", "0", "1", "GET", "u64", "0") == BAD_TYPE
    assert r.get("k") is None
    assert err(r, "BITFIELD") == ARITY.format("bitfield")


def test_bitfield_ro(r):
    r.set("k", "A")
    assert r.execute_command("BITFIELD_RO", "k", "GET", "u8", "0", "GET", "u4", "#1") == [65, 1]
    assert r.execute_command("BITFIELD_RO", "missing", "GET", "i8", "0") == [0]
    assert r.execute_command("BITFIELD_RO", "k") == []
    assert err(r, "BITFIELD_RO", "k", "SET", "u8", "0", "1") == \
        "BITFIELD_RO only supports the GET subcommand"
    assert err(r, "BITFIELD_RO", "k", "INCRBY", "u8", "0", "1") == \
        "BITFIELD_RO only supports the GET subcommand"
    assert err(r, "BITFIELD_RO", "k", "GET", "u64", "0") == BAD_TYPE
    assert r.get("k") == "A"
    assert err(r, "BITFIELD_RO") == ARITY.format("bitfield_ro")


def test_bitfield_keeps_ttl(r):
    r.set("k", "a", ex=100)
    bf(r, "k", "SET", "u8", "8", "1")
    assert 99 <= r.execute_command("TTL", "k") <= 100


def test_bitfield_fail_is_null_in_resp3(r3):
    assert r3.execute_command("BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "9") == [None]


def test_bitmaps_in_transaction(r):
    p = r.pipeline(transaction=True)
    p.setbit("a", 0, 1)
    p.setbit("b", 1, 1)
    p.bitop("OR", "c", "a", "b")
    p.getbit("c", 1)
    p.bitcount("c")
    assert p.execute() == [0, 0, 1, 1, 2]


def test_only_real_bit_changes_count_as_changes(r):
    """rdb_changes_since_last_save after each write, as Redis counts it: a
    write that leaves every bit as it was counts only when it created or grew
    the string."""
    cases = [
        (("SETBIT", "b", "3", "1"), 1),
        (("SETBIT", "b", "3", "1"), 0),
        (("SETBIT", "b", "3", "0"), 1),
        (("SETBIT", "b", "100", "0"), 1),
        (("BITFIELD", "b", "SET", "u8", "0", "0"), 0),
        (("BITFIELD", "b", "INCRBY", "u8", "0", "0"), 0),
        (("BITFIELD", "b", "INCRBY", "u8", "0", "1"), 1),
        (("BITFIELD", "b", "OVERFLOW", "FAIL", "INCRBY", "u8", "0", "255"), 0),
        (("BITFIELD", "c", "SET", "u8", "0", "1", "SET", "u8", "8", "1"), 2),
        (("BITFIELD", "c", "SET", "u8", "0", "3", "SET", "u8", "0", "3"), 1),
        (("BITFIELD", "c", "SET", "u8", "40", "0"), 1),
    ]
    for argv, want in cases:
        before = r.info("persistence")["rdb_changes_since_last_save"]
        r.execute_command(*argv)
        after = r.info("persistence")["rdb_changes_since_last_save"]
        assert after - before == want, argv

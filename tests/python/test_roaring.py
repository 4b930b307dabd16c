"""Roaring bitmaps: redis-roaring's R.* (32-bit) and R64.* (64-bit) commands,
Keel's R.INTERSECT, and how bitmaps look to TYPE, OBJECT ENCODING, MEMORY
USAGE, SCAN TYPE, COPY, RENAME, DUMP/RESTORE, RDB snapshots and AOF rewrites.

Debian's redis-server has no redis-roaring module, so these run against Keel
only; the expectations come from redis-roaring's sources and docs."""

import time

import pytest
import redis

from conftest import AGAINST_REDIS, running_server
from rawresp import Raw

pytestmark = pytest.mark.skipif(
    AGAINST_REDIS, reason="Roaring bitmaps are Keel's own (redis-roaring is a module)")

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
U32 = 4294967295
U64 = 18446744073709551615


def err(r, *args):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*args)
    return str(e.value)


def ints(reply):
    return [int(x) for x in reply]


@pytest.mark.parametrize("p,top", [("R", U32), ("R64", U64)])
def test_bits(r, p, top):
    assert r.execute_command(f"{p}.SETBIT", "k", 5, 1) == 0
    assert r.execute_command(f"{p}.SETBIT", "k", 5, 1) == 1
    assert r.execute_command(f"{p}.SETBIT", "k", top, 1) == 0
    assert r.execute_command(f"{p}.GETBIT", "k", 5) == 1
    assert r.execute_command(f"{p}.GETBIT", "k", 6) == 0
    assert r.execute_command(f"{p}.GETBIT", "missing", 6) == 0
    assert ints(r.execute_command(f"{p}.GETBITS", "k", 4, 5, top)) == [0, 1, 1]
    assert r.execute_command(f"{p}.GETBITS", "missing", 4) == []
    assert r.execute_command(f"{p}.CLEARBITS", "k", 5, 7, "COUNT") == 1
    assert r.execute_command(f"{p}.CLEARBITS", "k", top) == "OK"
    assert r.execute_command(f"{p}.CLEARBITS", "missing", 1) is None
    assert int(r.execute_command(f"{p}.BITCOUNT", "k")) == 0
    assert r.execute_command(f"{p}.SETBIT", "k", 0, 0) == 0


@pytest.mark.parametrize("p", ["R", "R64"])
def test_int_arrays(r, p):
    assert r.execute_command(f"{p}.SETINTARRAY", "k", 9, 3, 1, 3) == "OK"
    assert ints(r.execute_command(f"{p}.GETINTARRAY", "k")) == [1, 3, 9]
    assert r.execute_command(f"{p}.APPENDINTARRAY", "k", 2, 10) == "OK"
    assert ints(r.execute_command(f"{p}.GETINTARRAY", "k")) == [1, 2, 3, 9, 10]
    assert r.execute_command(f"{p}.DELETEINTARRAY", "k", 2, 9, 100) == "OK"
    assert ints(r.execute_command(f"{p}.GETINTARRAY", "k")) == [1, 3, 10]
    # By rank, 0-based and inclusive.
    assert ints(r.execute_command(f"{p}.RANGEINTARRAY", "k", 1, 5)) == [3, 10]
    assert r.execute_command(f"{p}.RANGEINTARRAY", "k", 5, 1) == []
    assert r.execute_command(f"{p}.RANGEINTARRAY", "missing", 0, 1) == []
    assert err(r, f"{p}.RANGEINTARRAY", "k", 0, 100000000) == \
        "Roaring: range too large: maximum 100000000 elements"
    assert r.execute_command(f"{p}.GETINTARRAY", "missing") == []
    # Deleting from a missing key creates an empty bitmap.
    assert r.execute_command(f"{p}.DELETEINTARRAY", "new", 1) == "OK"
    assert r.exists("new") == 1


@pytest.mark.parametrize("p", ["R", "R64"])
def test_bit_arrays(r, p):
    assert r.execute_command(f"{p}.SETBITARRAY", "k", "0110001") == "OK"
    assert ints(r.execute_command(f"{p}.GETINTARRAY", "k")) == [1, 2, 6]
    assert r.execute_command(f"{p}.GETBITARRAY", "k") == "0110001"
    assert r.execute_command(f"{p}.GETBITARRAY", "missing") == ""
    assert err(r, f"{p}.SETBITARRAY", "k", "01x").startswith("invalid bit array")
    r.execute_command(f"{p}.SETBIT", "far", U32, 1)
    assert "proto-max-bulk-len" in err(r, f"{p}.GETBITARRAY", "far")


@pytest.mark.parametrize("p", ["R", "R64"])
def test_ranges_and_full(r, p):
    # The end is exclusive, as redis-roaring's range add is.
    assert r.execute_command(f"{p}.SETRANGE", "k", 1, 4) == "OK"
    assert ints(r.execute_command(f"{p}.GETINTARRAY", "k")) == [1, 2, 3]
    assert r.execute_command(f"{p}.SETRANGE", "e", 7, 7) == "OK"
    assert r.exists("e") == 1 and int(r.execute_command(f"{p}.BITCOUNT", "e")) == 0
    end = "must be >= start" if p == "R" else "must >= start"
    assert err(r, f"{p}.SETRANGE", "k", 5, 4) == f"invalid end: {end}"
    assert err(r, f"{p}.SETFULL", "k") == "Roaring: key already exist"


def test_full_32_bit_universe_is_cheap(r):
    assert r.execute_command("R.SETFULL", "f") == "OK"
    assert int(r.execute_command("R.BITCOUNT", "f")) == 2**32
    assert r.execute_command("R.BITPOS", "f", 0) == -1
    assert r.execute_command("R.SETRANGE", "g", 0, U32) == "OK"
    assert int(r.execute_command("R.BITCOUNT", "g")) == 2**32 - 1
    assert r.execute_command("R.BITPOS", "g", 0) == U32
    assert err(r, "R.GETINTARRAY", "f").startswith("Roaring: range too large")
    assert r.memory_usage("f") < 10_000_000


def test_64_bit_ranges_are_capped(r):
    assert err(r, "R64.SETFULL", "f").startswith("range too large")
    assert err(r, "R64.SETRANGE", "f", 0, U64).startswith("range too large")
    assert r.execute_command("R64.SETRANGE", "g", 2**40, 2**40 + 2**32 + 5) == "OK"
    assert int(r.execute_command("R64.BITCOUNT", "g")) == 2**32 + 5


@pytest.mark.parametrize("p", ["R", "R64"])
def test_queries(r, p):
    r.execute_command(f"{p}.SETINTARRAY", "k", 0, 1, 2, 5, 9)
    assert int(r.execute_command(f"{p}.MIN", "k")) == 0
    assert int(r.execute_command(f"{p}.MAX", "k")) == 9
    assert r.execute_command(f"{p}.MIN", "missing") == -1
    assert r.execute_command(f"{p}.MAX", "missing") == -1
    assert int(r.execute_command(f"{p}.BITPOS", "k", 1)) == 0
    assert int(r.execute_command(f"{p}.BITPOS", "k", 0)) == 3
    assert err(r, f"{p}.BITPOS", "k", 2) == "invalid bit: must be either 0 or 1"
    assert int(r.execute_command(f"{p}.BITCOUNT", "k")) == 5
    assert int(r.execute_command(f"{p}.BITCOUNT", "missing")) == 0
    assert r.execute_command(f"{p}.OPTIMIZE", "k") == "OK"
    assert r.execute_command(f"{p}.OPTIMIZE", "k", "MEM") == "OK"
    assert err(r, f"{p}.OPTIMIZE", "missing") == "Roaring: key does not exist"
    assert r.execute_command(f"{p}.CLEAR", "k") == 5
    assert r.execute_command(f"{p}.CLEAR", "missing") is None
    assert r.execute_command(f"{p}.MIN", "k") == -1


@pytest.mark.parametrize("p", ["R", "R64"])
def test_contains_and_jaccard(r, p):
    r.execute_command(f"{p}.SETINTARRAY", "a", 1, 2, 3, 4)
    r.execute_command(f"{p}.SETINTARRAY", "b", 2, 3)
    r.execute_command(f"{p}.SETINTARRAY", "c", 7)
    assert r.execute_command(f"{p}.CONTAINS", "a", "b") == 1
    assert r.execute_command(f"{p}.CONTAINS", "a", "c") == 0
    assert r.execute_command(f"{p}.CONTAINS", "a", "b", "ALL") == 1
    assert r.execute_command(f"{p}.CONTAINS", "b", "a", "ALL") == 0
    assert r.execute_command(f"{p}.CONTAINS", "a", "a", "ALL_STRICT") == 0
    assert r.execute_command(f"{p}.CONTAINS", "a", "b", "ALL_STRICT") == 1
    assert r.execute_command(f"{p}.CONTAINS", "a", "a", "EQ") == 1
    assert err(r, f"{p}.CONTAINS", "a", "b", "ANY") == "invalid mode argument: ANY"
    assert err(r, f"{p}.CONTAINS", "a", "missing") == "Roaring: key does not exist"
    assert float(r.execute_command(f"{p}.JACCARD", "a", "b")) == 0.5
    assert float(r.execute_command(f"{p}.JACCARD", "a", "a")) == 1
    r.execute_command(f"{p}.SETRANGE", "e1", 0, 0)
    r.execute_command(f"{p}.SETRANGE", "e2", 0, 0)
    assert float(r.execute_command(f"{p}.JACCARD", "e1", "e2")) == -1
    assert err(r, f"{p}.JACCARD", "a", "missing") == "Roaring: key does not exist"


@pytest.mark.parametrize("p", ["R", "R64"])
def test_bitop_and_diff(r, p):
    r.execute_command(f"{p}.SETINTARRAY", "x", 1, 2, 3, 4)
    r.execute_command(f"{p}.SETINTARRAY", "y", 3, 4, 5)
    r.execute_command(f"{p}.SETINTARRAY", "z", 4, 6)

    def op(name, *srcs):
        n = int(r.execute_command(f"{p}.BITOP", name, "d", *srcs))
        got = ints(r.execute_command(f"{p}.GETINTARRAY", "d"))
        assert n == len(got)
        return got

    assert op("AND", "x", "y", "z") == [4]
    assert op("OR", "x", "y", "z") == [1, 2, 3, 4, 5, 6]
    assert op("XOR", "x", "y", "z") == [1, 2, 4, 5, 6]
    assert op("ANDOR", "x", "y", "z") == [3, 4]
    assert op("ONE", "x", "y", "z") == [1, 2, 5, 6]
    assert op("DIFF", "x", "y", "z") == [1, 2]
    assert op("DIFF1", "x", "y", "z") == [5, 6]
    assert op("AND", "x", "missing") == []
    assert op("NOT", "z") == [0, 1, 2, 3, 5]
    assert op("NOT", "z", 8) == [0, 1, 2, 3, 5, 7, 8]
    assert err(r, f"{p}.BITOP", "NAND", "d", "x", "y") == "syntax error"
    assert "wrong number of arguments" in err(r, f"{p}.BITOP", "AND", "d", "x")
    assert r.execute_command(f"{p}.DIFF", "d", "x", "y") == "OK"
    assert ints(r.execute_command(f"{p}.GETINTARRAY", "d")) == [1, 2]
    assert err(r, f"{p}.DIFF", "d", "x", "missing") == "Roaring: key does not exist"


def test_stat(r):
    r.execute_command("R.SETINTARRAY", "k", 1, 2, 3, 4, 5, 6)
    text = r.execute_command("R.STAT", "k")
    assert text.startswith("type: bitmap\ncardinality: 6\nnumber of containers: 1\n")
    assert "max value: 6\nmin value: 1\n" in text
    assert '"cardinality":"6"' in r.execute_command("R.STAT", "k", "JSON")
    r.execute_command("R64.SETINTARRAY", "w", 1, 2**40)
    assert r.execute_command("R.STAT", "w").startswith("type: bitmap64\ncardinality: 2\n")
    assert r.execute_command("R.STAT", "missing") is None


def test_intersect(r):
    r.execute_command("R.SETINTARRAY", "a", *range(0, 1000, 2))
    r.execute_command("R.SETINTARRAY", "b", *range(0, 1000, 3))
    r.execute_command("R.SETINTARRAY", "c", *range(0, 1000, 5), 999)
    want = [x for x in range(1000) if x % 30 == 0]
    assert r.execute_command("R.INTERSECT", "a", "b", "c") == want
    assert r.execute_command("R.INTERSECT", "a", "b", "c", "CARD") == len(want)
    assert r.execute_command("R.INTERSECT", "c", "b", "a", "MIN") == 0
    assert r.execute_command("R.INTERSECT", "a", "b", "c", "LIMIT", 3) == want[:3]
    assert r.execute_command("R.INTERSECT", "a", "missing") == []
    assert r.execute_command("R.INTERSECT", "a", "missing", "MIN") == -1
    r.set("s", "x")
    assert err(r, "R.INTERSECT", "a", "s") == WRONGTYPE
    info = r.execute_command("COMMAND", "INFO", "R.INTERSECT")
    assert "readonly" in str(info)
    assert "movablekeys" in str(info)
    # Only a trailing option is an option: its words are not keys, and a key may be
    # named like one anywhere else.
    getkeys = lambda *a: r.command_getkeys("R.INTERSECT", *a)
    assert getkeys("a", "b", "LIMIT", 5) == ["a", "b"]
    assert getkeys("a", "b", "card") == ["a", "b"]
    assert getkeys("a", "MIN", "b") == ["a", "MIN", "b"]
    assert getkeys("a", "CARD", "5") == ["a", "CARD", "5"]
    r.execute_command("R.SETINTARRAY", "CARD", 0, 30, 60)
    assert r.execute_command("R.INTERSECT", "CARD", "a", "CARD") == 3


def test_wrongtype_and_argument_errors(r):
    r.set("s", "x")
    for args in (("R.SETBIT", "s", 1, 1), ("R.GETBIT", "s", 1), ("R.BITCOUNT", "s"),
                 ("R64.SETBIT", "s", 1, 1), ("R.SETINTARRAY", "s", 1), ("R.STAT", "s")):
        assert err(r, *args) == WRONGTYPE
    r.execute_command("R.SETBIT", "k32", 1, 1)
    assert err(r, "R64.GETBIT", "k32", 1) == WRONGTYPE
    assert err(r, "R.SETBIT", "k", U32 + 1, 1) == \
        "invalid offset: must be an unsigned 32 bit integer"
    assert err(r, "R.SETBIT", "k", -1, 1) == \
        "invalid offset: must be an unsigned 32 bit integer"
    assert err(r, "R64.SETBIT", "k", U64 + 1, 1) == \
        "invalid offset: must be an unsigned 64 bit integer"
    assert err(r, "R.SETBIT", "k", 1, 2) == "invalid value: must be either 0 or 1"
    assert err(r, "R.APPENDINTARRAY", "k", "x") == \
        "invalid value: must be an unsigned 32 bit integer"


def test_type_encoding_memory_scan_copy_rename_dump(r):
    r.execute_command("R.SETINTARRAY", "a", *range(100))
    r.execute_command("R64.SETINTARRAY", "w", 1, 2**40)
    assert r.type("a") == "reroaring"
    assert r.type("w") == "roaring64"
    assert r.object("encoding", "a") == "raw"
    assert r.memory_usage("a") > 0
    assert sorted(r.scan_iter(_type="reroaring")) == ["a"]
    assert sorted(r.scan_iter(_type="roaring64")) == ["w"]
    assert r.copy("a", "a2") == 1
    r.execute_command("R.SETBIT", "a2", 500, 1)
    assert int(r.execute_command("R.BITCOUNT", "a")) == 100
    assert int(r.execute_command("R.BITCOUNT", "a2")) == 101
    assert r.rename("w", "w2") is True
    assert r.move("a2", 1) is True
    r.select(1)
    assert int(r.execute_command("R.BITCOUNT", "a2")) == 101
    r.select(0)
    assert r.exists("a2") == 0
    assert ints(r.execute_command("R64.GETINTARRAY", "w2")) == [1, 2**40]
    rb = redis.Redis(port=r.connection_pool.connection_kwargs["port"])
    payload = rb.dump("a")
    assert rb.restore("a3", 0, payload) == b"OK"
    assert ints(r.execute_command("R.GETINTARRAY", "a3")) == list(range(100))
    payload = rb.dump("w2")
    assert rb.restore("w3", 0, payload) == b"OK"
    assert ints(r.execute_command("R64.GETINTARRAY", "w3")) == [1, 2**40]
    # A damaged payload (checksum recomputed by nobody) is refused.
    with pytest.raises(redis.ResponseError):
        rb.restore("bad", 0, payload[:5] + b"\xff" + payload[6:])
    rb.close()


def fill(r):
    r.execute_command("R.SETINTARRAY", "small", 1, 5, 70000, U32)
    r.execute_command("R.SETRANGE", "runs", 10, 200000)
    r.execute_command("R.APPENDINTARRAY", "runs", 300000, 300002, U32 - 1, U32)
    r.execute_command("R.SETRANGE", "empty", 0, 0)
    r.execute_command("R64.SETINTARRAY", "wide", 0, 2**40, U64)
    r.execute_command("R64.SETRANGE", "wide", 2**33, 2**33 + 100000)
    r.execute_command("R.SETBIT", "ttl", 3, 1)
    r.expire("ttl", 1000)


def state(r):
    out = {}
    for k in ("small", "runs", "empty", "wide", "ttl"):
        t = r.type(k)
        p = "R" if t == "reroaring" else "R64"
        out[k] = (t, r.execute_command(f"{p}.BITCOUNT", k),
                  r.execute_command(f"{p}.GETBITS", k, 0, 5, 199999, 200000, U32 - 1, U32),
                  r.execute_command(f"{p}.RANGEINTARRAY", k, 0, 20),
                  r.execute_command(f"{p}.MAX", k))
    out["ttl_set"] = r.ttl("ttl") > 0
    return out


def test_debug_reload_and_restart(tmp_path):
    with running_server("--dir", str(tmp_path)) as s:
        r = s.client()
        fill(r)
        before = state(r)
        assert r.execute_command("DEBUG", "RELOAD") == "OK"
        assert state(r) == before
        assert r.save() is True
    with running_server("--dir", str(tmp_path)) as s:
        assert state(s.client()) == before


def test_bgrewriteaof_command_form_round_trip(tmp_path):
    args = ("--dir", str(tmp_path), "--appendonly", "yes", "--aof-use-rdb-preamble", "no")
    with running_server(*args) as s:
        r = s.client()
        fill(r)
        before = state(r)
        r.bgrewriteaof()
        deadline = time.time() + 20
        while r.info("persistence")["aof_rewrite_in_progress"] and time.time() < deadline:
            time.sleep(0.05)
        assert r.info("persistence")["aof_last_bgrewrite_status"] == "ok"
    base = [p for p in (tmp_path / "appendonlydir").iterdir() if ".base." in p.name]
    text = base[0].read_bytes()
    assert b"R.SETRANGE" in text and b"R.APPENDINTARRAY" in text and b"R64.SETRANGE" in text
    assert len(text) < 10_000
    with running_server(*args) as s:
        assert state(s.client()) == before


# Each command with its arity and whether it writes, as redis-roaring registers them.
COMMANDS = {
    "R.SETBIT": (4, True), "R64.SETBIT": (4, True),
    "R.GETBIT": (3, False), "R64.GETBIT": (3, False),
    "R.GETBITS": (-3, False), "R64.GETBITS": (-3, False),
    "R.CLEARBITS": (-3, True), "R64.CLEARBITS": (-3, True),
    "R.SETINTARRAY": (-3, True), "R64.SETINTARRAY": (-3, True),
    "R.GETINTARRAY": (2, False), "R64.GETINTARRAY": (2, False),
    "R.RANGEINTARRAY": (4, False), "R64.RANGEINTARRAY": (4, False),
    "R.APPENDINTARRAY": (-3, True), "R64.APPENDINTARRAY": (-3, True),
    "R.DELETEINTARRAY": (-3, True), "R64.DELETEINTARRAY": (-3, True),
    "R.DIFF": (4, True), "R64.DIFF": (4, True),
    "R.SETFULL": (2, True), "R64.SETFULL": (2, True),
    "R.SETRANGE": (4, True), "R64.SETRANGE": (4, True),
    "R.OPTIMIZE": (-2, False), "R64.OPTIMIZE": (-2, False),
    "R.SETBITARRAY": (3, True), "R64.SETBITARRAY": (3, True),
    "R.GETBITARRAY": (2, False), "R64.GETBITARRAY": (2, False),
    "R.BITOP": (-4, True), "R64.BITOP": (-4, True),
    "R.BITCOUNT": (2, False), "R64.BITCOUNT": (2, False),
    "R.BITPOS": (3, False), "R64.BITPOS": (3, False),
    "R.MIN": (2, False), "R64.MIN": (2, False),
    "R.MAX": (2, False), "R64.MAX": (2, False),
    "R.CLEAR": (2, True), "R64.CLEAR": (2, True),
    "R.CONTAINS": (-3, False), "R64.CONTAINS": (-3, False),
    "R.JACCARD": (3, False), "R64.JACCARD": (3, False),
    "R.STAT": (-2, False), "R.INTERSECT": (-2, False),
}


def test_command_table(server, r):
    raw = Raw(server.port)
    try:
        for name, (arity, writes) in COMMANDS.items():
            info = raw.cmd("COMMAND", "INFO", name)[0]
            assert info[0] == name.lower().encode() and info[1] == arity, name
            flags = {str(f) for f in info[2]}
            assert ("write" in flags) == writes and ("readonly" in flags) != writes, name
            cat = "@roaring64" if name.startswith("R64.") else "@roaring"
            assert cat in [str(c) for c in info[6]], (name, info[6])
            assert raw.cmd("COMMAND", "DOCS", name), name
        keys = raw.cmd("COMMAND", "GETKEYS", "R.BITOP", "AND", "d", "a", "b")
        assert keys == [b"d", b"a", b"b"]
        assert raw.cmd("COMMAND", "GETKEYS", "R.INTERSECT", "a", "b") == [b"a", b"b"]
    finally:
        raw.close()


def test_unsigned_replies_are_big_numbers_in_resp3(r3):
    r3.execute_command("R64.SETINTARRAY", "w", 3, U64)
    assert r3.execute_command("R64.GETINTARRAY", "w") == [3, U64]
    assert r3.execute_command("R64.RANGEINTARRAY", "w", 1, 1) == [U64]
    assert r3.execute_command("R64.MAX", "w") == U64
    assert r3.execute_command("R64.BITCOUNT", "w") == 2
    r3.execute_command("R.SETINTARRAY", "k", 1, 2)
    assert r3.execute_command("R.BITCOUNT", "k") == 2
    assert r3.execute_command("R.GETINTARRAY", "k") == [1, 2]

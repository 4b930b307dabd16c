"""Bloom filters, RedisBloom's BF.* commands: BF.RESERVE, BF.ADD, BF.MADD,
BF.INSERT, BF.EXISTS, BF.MEXISTS, BF.INFO, BF.CARD, BF.SCANDUMP, BF.LOADCHUNK
and BF.DEBUG, their RESP2 and RESP3 replies, the bf-* configuration
directives, and how filters look to TYPE, SCAN, COMMAND and MEMORY.

Debian's redis-server has no RedisBloom, so these run against Keel only; the
expectations come from RedisBloom's sources and tests."""

import pytest
import redis

from conftest import AGAINST_REDIS, running_server
from rawresp import Raw, Status

pytestmark = pytest.mark.skipif(AGAINST_REDIS, reason="RedisBloom is a module")

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
RATE_RANGE = "error rate must be in the range (0.000000, 1.000000)"
CAPACITY_RANGE = "capacity must be in the range [1, 1073741824]"
EXPANSION_RANGE = "expansion must be in the range [0, 32768]"
FULL = "non scaling filter is full"


def err(r, *args):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*args)
    return str(e.value)


def arity(name):
    return f"wrong number of arguments for '{name}' command"


def debug(r, key):
    return r.execute_command("BF.DEBUG", key)


def info(r, key):
    flat = r.execute_command("BF.INFO", key)
    return dict(zip(flat[::2], flat[1::2]))


def test_golden_debug_sequence(r):
    assert r.execute_command("BF.RESERVE", "k", "0.01", "10") == "OK"
    for i in range(100):
        r.execute_command("BF.ADD", "k", str(i))
    # 99, not 100: one item was a false positive and was not counted.
    assert debug(r, "k") == [
        "size:99",
        "bytes:16 bits:128 hashes:8 hashwidth:64 capacity:10 size:10 ratio:0.005",
        "bytes:32 bits:256 hashes:9 hashwidth:64 capacity:20 size:20 ratio:0.0025",
        "bytes:72 bits:576 hashes:10 hashwidth:64 capacity:40 size:40 ratio:0.00125",
        "bytes:160 bits:1280 hashes:11 hashwidth:64 capacity:80 size:29 ratio:0.000625",
    ]
    assert r.execute_command("BF.CARD", "k") == 99
    assert info(r, "k") == {
        "Capacity": 150,
        "Size": 32 + 64 * 4 + 16 + 32 + 72 + 160,
        "Number of filters": 4,
        "Number of items inserted": 99,
        "Expansion rate": 2,
    }


def test_add_and_exists(r):
    assert r.execute_command("BF.EXISTS", "k", "a") == 0
    assert r.execute_command("BF.ADD", "k", "a") == 1
    assert r.execute_command("BF.ADD", "k", "a") == 0
    assert r.execute_command("BF.EXISTS", "k", "a") == 1
    assert r.execute_command("BF.EXISTS", "k", "b") == 0
    assert r.execute_command("BF.MADD", "k", "b", "a", "c") == [1, 0, 1]
    assert r.execute_command("BF.MEXISTS", "k", "a", "b", "c", "d") == [1, 1, 1, 0]
    assert r.execute_command("BF.MEXISTS", "missing", "a", "b") == [0, 0]
    assert r.execute_command("BF.CARD", "k") == 3
    assert r.execute_command("BF.CARD", "missing") == 0
    # Created with the defaults: 100 items at 1% (0.5% for the first link).
    assert debug(r, "k")[1] == (
        "bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:3 ratio:0.005")
    assert info(r, "k")["Size"] == 240


def test_binary_items(rb):
    item = b"\x00\xff\r\n" * 10
    assert rb.execute_command("BF.ADD", "k", item) == 1
    assert rb.execute_command("BF.EXISTS", "k", item) == 1
    assert rb.execute_command("BF.EXISTS", "k", item[:-1]) == 0
    assert rb.execute_command("BF.ADD", "k", b"") == 1
    assert rb.execute_command("BF.EXISTS", "k", b"") == 1


def test_other_types(r):
    r.set("s", "v")
    assert r.execute_command("BF.EXISTS", "s", "v") == 0
    assert r.execute_command("BF.MEXISTS", "s", "v", "w") == [0, 0]
    for args in (("BF.ADD", "s", "a"), ("BF.MADD", "s", "a"), ("BF.INSERT", "s", "ITEMS", "a"),
                 ("BF.RESERVE", "s", "0.01", "10"), ("BF.CARD", "s"), ("BF.INFO", "s"),
                 ("BF.DEBUG", "s"), ("BF.SCANDUMP", "s", "0"),
                 ("BF.LOADCHUNK", "s", "1", "x"), ("BF.LOADCHUNK", "s", "9", "x")):
        assert err(r, *args) == WRONGTYPE, args
    assert r.get("s") == "v"


def test_missing_key_errors(r):
    for args in (("BF.INFO", "m"), ("BF.INFO", "m", "CAPACITY"), ("BF.DEBUG", "m"),
                 ("BF.SCANDUMP", "m", "0"), ("BF.LOADCHUNK", "m", "9", "x"),
                 ("BF.INSERT", "m", "NOCREATE", "ITEMS", "a")):
        assert err(r, *args) == "not found", args
    assert r.exists("m") == 0


def test_arity_errors_use_the_lower_case_name(r):
    for args in (("BF.ADD", "k"), ("BF.ADD", "k", "a", "b"), ("BF.MADD", "k"),
                 ("BF.EXISTS", "k"), ("BF.EXISTS", "k", "a", "b"), ("BF.MEXISTS", "k"),
                 ("BF.CARD",), ("BF.CARD", "k", "x"), ("BF.INFO",),
                 ("BF.INFO", "k", "CAPACITY", "SIZE"), ("BF.DEBUG",), ("BF.SCANDUMP", "k"),
                 ("BF.LOADCHUNK", "k", "1"), ("BF.RESERVE", "k", "0.01"),
                 ("BF.RESERVE", "k", "0.01", "10", "a", "b", "c", "d"),
                 ("BF.INSERT", "k", "ITEMS")):
        assert err(r, *args) == arity(args[0].lower()), args
    assert err(r, "bf.add", "k") == arity("bf.add")


def test_reserve(r):
    assert r.execute_command("BF.RESERVE", "k", "0.001", "100") == "OK"
    assert info(r, "k")["Size"] == 296
    assert err(r, "BF.RESERVE", "k", "0.01", "10") == "item exists"
    # Keywords are found anywhere, in any case; unknown tokens are skipped.
    assert r.execute_command("BF.RESERVE", "e", "0.01", "10", "junk", "expansion", "4") == "OK"
    assert info(r, "e")["Expansion rate"] == 4
    assert r.execute_command("BF.RESERVE", "z", "0.01", "2", "EXPANSION", "0") == "OK"
    assert r.execute_command("BF.RESERVE", "n", "0.01", "2", "nonscaling") == "OK"
    for key in ("z", "n"):
        assert info(r, key)["Expansion rate"] is None
        assert r.execute_command("BF.MADD", key, "a", "b") == [1, 1]
        assert err(r, "BF.ADD", key, "c") == FULL
        assert r.execute_command("BF.ADD", key, "a") == 0
    # A fixed-size filter runs at the full rate, and rates above 0.25 are capped.
    assert debug(r, "n")[1] == "bytes:8 bits:64 hashes:7 hashwidth:64 capacity:2 size:2 ratio:0.01"
    assert r.execute_command("BF.RESERVE", "c", "0.9", "100", "NONSCALING") == "OK"
    assert debug(r, "c")[1].endswith("ratio:0.25")
    # RedisBloom's own check of its sizing.
    assert r.execute_command("BF.RESERVE", "big", "0.0001", "1000000") == "OK"
    assert debug(r, "big")[1] == (
        "bytes:2576608 bits:20612864 hashes:15 hashwidth:64 capacity:1000000 size:0 ratio:5e-05")


@pytest.mark.parametrize("args,message", [
    (("x", "10"), "bad error rate"),
    (("0", "10"), RATE_RANGE),
    (("1", "10"), RATE_RANGE),
    (("-0.5", "10"), RATE_RANGE),
    (("0.01", "x"), "bad capacity"),
    (("0.01", "0"), CAPACITY_RANGE),
    (("0.01", "-3"), CAPACITY_RANGE),
    (("0.01", "1073741825"), CAPACITY_RANGE),
    (("0.01", "10", "EXPANSION"), "no expansion"),
    (("0.01", "10", "EXPANSION", "x"), "bad expansion"),
    (("0.01", "10", "NONSCALING", "EXPANSION", "2"), "Nonscaling filters cannot expand"),
    (("0.01", "10", "EXPANSION", "32769"), EXPANSION_RANGE),
    (("0.01", "10", "EXPANSION", "-1"), EXPANSION_RANGE),
])
def test_reserve_errors(r, args, message):
    assert err(r, "BF.RESERVE", "k", *args) == message
    assert r.exists("k") == 0


def test_madd_stops_at_a_full_filter(r):
    r.execute_command("BF.RESERVE", "k", "0.01", "3", "NONSCALING")
    reply = r.execute_command("BF.MADD", "k", "a", "b", "c", "d", "d")
    assert reply[:3] == [1, 1, 1]
    assert len(reply) == 4
    assert isinstance(reply[3], redis.ResponseError) and str(reply[3]) == FULL
    assert r.execute_command("BF.CARD", "k") == 3


def test_insert(r):
    reply = r.execute_command("BF.INSERT", "k", "capacity", "3", "error", "0.1", "nonscaling",
                              "items", "a", "b", "a", "c", "d", "e")
    assert reply[:4] == [1, 1, 0, 1]
    assert len(reply) == 5 and str(reply[4]) == FULL
    assert debug(r, "k")[1] == "bytes:8 bits:64 hashes:4 hashwidth:64 capacity:3 size:3 ratio:0.1"
    # Options are ignored once the filter exists.
    assert r.execute_command("BF.INSERT", "k", "CAPACITY", "0", "NOCREATE", "ITEMS", "a") == [0]
    # Keywords are told apart by their first letters.
    assert r.execute_command("BF.INSERT", "e", "Cap", "5", "Er", "0.5", "Ex", "3", "I", "x") == [1]
    assert debug(r, "e")[1].endswith("capacity:5 size:1 ratio:0.25")
    assert info(r, "e")["Expansion rate"] == 3
    # Items may look like options.
    assert r.execute_command("BF.INSERT", "w", "ITEMS", "NOCREATE", "ITEMS") == [1, 1]
    assert r.execute_command("BF.INSERT", "d", "ITEMS", "a") == [1]
    assert info(r, "d")["Capacity"] == 100


@pytest.mark.parametrize("args,message", [
    (("ITEMS",), arity("bf.insert")),
    (("CAPACITY", "10"), arity("bf.insert")),
    (("CAPACITY", "10", "ITEMS"), arity("bf.insert")),
    (("NOCREATE", "ERROR"), arity("bf.insert")),
    (("NOCREATE", "CAPACITY"), arity("bf.insert")),
    (("ERROR", "x", "ITEMS", "a"), "Bad error rate"),
    (("EXPANSION", "x", "ITEMS", "a"), "Bad expansion"),
    (("CAPACITY", "x", "ITEMS", "a"), "Bad capacity"),
    (("BOGUS", "1", "ITEMS", "a"), "Unknown argument received"),
    (("NOCREATE", "ITEMS", "a"), "not found"),
    (("ERROR", "0", "ITEMS", "a"), RATE_RANGE),
    (("CAPACITY", "0", "ITEMS", "a"), CAPACITY_RANGE),
    (("EXPANSION", "-3", "ITEMS", "a"), EXPANSION_RANGE),
])
def test_insert_errors(r, args, message):
    assert err(r, "BF.INSERT", "k", *args) == message
    assert r.exists("k") == 0


def test_info_fields(r):
    r.execute_command("BF.RESERVE", "k", "0.001", "100")
    r.execute_command("BF.MADD", "k", "a", "b")
    assert r.execute_command("BF.INFO", "k") == [
        "Capacity", 100, "Size", 296, "Number of filters", 1,
        "Number of items inserted", 2, "Expansion rate", 2]
    for field, value in (("CAPACITY", 100), ("size", 296), ("Filters", 1), ("ITEMS", 2),
                         ("EXPANSION", 2)):
        assert r.execute_command("BF.INFO", "k", field) == [value]
    assert err(r, "BF.INFO", "k", "BOGUS") == "Invalid information value"
    r.execute_command("BF.RESERVE", "f", "0.01", "100", "NONSCALING")
    assert r.execute_command("BF.INFO", "f", "EXPANSION") == [None]
    assert r.execute_command("BF.INFO", "f")[-1] is None


def test_resp3_shapes(r3):
    assert r3.execute_command("BF.ADD", "k", "a") is True
    assert r3.execute_command("BF.ADD", "k", "a") is False
    assert r3.execute_command("BF.EXISTS", "k", "a") is True
    assert r3.execute_command("BF.EXISTS", "k", "zz") is False
    assert r3.execute_command("BF.MADD", "k", "a", "b") == [False, True]
    assert all(isinstance(b, bool) for b in r3.execute_command("BF.MEXISTS", "k", "a", "q"))
    assert r3.execute_command("BF.INSERT", "k", "ITEMS", "c") == [True]
    assert r3.execute_command("BF.CARD", "k") == 3
    assert r3.execute_command("BF.INFO", "k") == {
        "Capacity": 100, "Size": 240, "Number of filters": 1,
        "Number of items inserted": 3, "Expansion rate": 2}
    assert r3.execute_command("BF.INFO", "k", "items") == {"Number of items inserted": 3}
    assert r3.execute_command("BF.INFO", "k", "capacity") == {"Capacity": 100}
    r3.execute_command("BF.RESERVE", "f", "0.01", "10", "NONSCALING")
    assert r3.execute_command("BF.INFO", "f", "expansion") == {"Expansion rate": None}
    assert r3.execute_command("BF.INFO", "f")["Expansion rate"] is None


def test_resp2_wire_types(raw):
    assert raw.cmd("BF.ADD", "k", "a") == 1
    assert raw.cmd("BF.MADD", "k", "a", "b") == [0, 1]
    lines = raw.cmd("BF.DEBUG", "k")
    assert all(isinstance(line, Status) for line in lines)
    assert lines[0] == "size:2"
    flat = raw.cmd("BF.INFO", "k")
    assert len(flat) == 10 and isinstance(flat[0], Status) and flat[0] == "Capacity"
    assert raw.cmd("BF.INFO", "k", "ITEMS") == [2]


def dump(rb, key):
    """SCANDUMP's (iter, data) pairs, header first, up to the end marker."""
    out = []
    it = 0
    while True:
        it, data = rb.execute_command("BF.SCANDUMP", key, it)
        if it == 0:
            assert data == b""
            return out
        out.append((it, data))


def check_copy(rb, key, copy, probes):
    assert rb.execute_command("BF.DEBUG", copy) == rb.execute_command("BF.DEBUG", key)
    assert rb.execute_command("BF.INFO", copy) == rb.execute_command("BF.INFO", key)
    items = [f"item{i}" for i in range(probes)]
    assert (rb.execute_command("BF.MEXISTS", copy, *items)
            == rb.execute_command("BF.MEXISTS", key, *items))


@pytest.mark.parametrize("reserve,links", [
    (("0.01", "1000"), 1),
    (("0.01", "2", "EXPANSION", "1"), 20),
    (("0.01", "1000", "LAYOUT", "BLOCKED"), 1),
    (("0.01", "2", "EXPANSION", "1", "LAYOUT", "BLOCKED"), 20),
])
def test_scandump_loadchunk_round_trip(rb, reserve, links):
    rb.execute_command("BF.RESERVE", "k", *reserve)
    nlinks = lambda: len(rb.execute_command("BF.DEBUG", "k")) - 1  # noqa: E731
    i = 0
    while i < 300 if links == 1 else nlinks() < links:
        rb.execute_command("BF.ADD", "k", f"item{i}")
        i += 1
    assert nlinks() == links
    chunks = dump(rb, "k")
    header = chunks[0]
    assert header[0] == 1 and len(header[1]) == 20 + 53 * links
    assert len(chunks) == 1 + links
    for it, data in chunks:
        assert rb.execute_command("BF.LOADCHUNK", "copy", it, data) == b"OK"
    assert rb.type("copy") == b"MBbloom--"
    check_copy(rb, "k", "copy", 1000)
    assert rb.execute_command("BF.ADD", "copy", "new") == rb.execute_command("BF.ADD", "k", "new")
    check_copy(rb, "k", "copy", 1000)


def test_scandump_and_loadchunk_errors(rb):
    rb.execute_command("BF.MADD", "k", "a", "b")
    assert err(rb, "BF.SCANDUMP", "k", "x") == "Second argument must be numeric"
    assert rb.execute_command("BF.SCANDUMP", "k", "100000") == [0, b""]
    assert rb.execute_command("BF.SCANDUMP", "k", "-5") == [0, b""]
    assert err(rb, "BF.LOADCHUNK", "k", "x", "data") == "Second argument must be numeric"
    _, header = rb.execute_command("BF.SCANDUMP", "k", "0")
    assert err(rb, "BF.LOADCHUNK", "x", "1", "junk") == "received bad data"
    assert err(rb, "BF.LOADCHUNK", "x", "1", header[:50]) == "received bad data"
    assert rb.exists("x") == 0
    assert rb.execute_command("BF.LOADCHUNK", "x", "1", header) == b"OK"
    # The header again, onto the filter it made: refused, nothing replaced.
    assert err(rb, "BF.LOADCHUNK", "x", "1", header) == "received bad data"
    for it in ("-1", "146", "999999999999"):
        assert err(rb, "BF.LOADCHUNK", "x", it, b"ab") == "received bad data"
    assert rb.execute_command("BF.LOADCHUNK", "x", "145", b"ab") == b"OK"


def test_type_scan_and_object(r):
    r.execute_command("BF.ADD", "bf", "a")
    r.set("s", "v")
    assert r.type("bf") == "MBbloom--"
    assert r.object("encoding", "bf") == "raw"
    cursor, keys = r.scan(0, count=1000, _type="MBbloom--")
    assert cursor == 0 and keys == ["bf"]
    assert r.scan(0, count=1000, _type="mbbloom--")[1] == ["bf"]
    assert r.copy("bf", "dup") == 1
    assert r.execute_command("BF.ADD", "dup", "b") == 1
    assert r.execute_command("BF.EXISTS", "bf", "b") == 0
    assert r.rename("dup", "moved") is True
    assert r.execute_command("BF.EXISTS", "moved", "b") == 1
    assert r.delete("moved") == 1


def test_memory_usage_grows_with_the_filter(r):
    r.execute_command("BF.RESERVE", "small", "0.01", "10")
    r.execute_command("BF.RESERVE", "big", "0.0001", "1000000")
    small = r.memory_usage("small")
    big = r.memory_usage("big")
    assert small < 1000
    assert big > 2_576_608
    before = r.info("memory")["used_memory"]
    r.execute_command("BF.RESERVE", "big2", "0.0001", "1000000")
    assert r.info("memory")["used_memory"] - before > 2_000_000


def test_command_info(r):
    (add,) = r.execute_command("COMMAND INFO", "bf.add")
    name, arity_, flags, first, last, step, cats = add[:7]
    assert (name, arity_, first, last, step) == ("bf.add", 3, 1, 1, 1)
    assert set(flags) == {"write", "denyoom"}
    assert "@bloom" in cats and "@write" in cats
    (exists,) = r.execute_command("COMMAND INFO", "BF.EXISTS")
    assert set(exists[2]) == {"readonly", "fast"}
    assert "@bloom" in exists[6] and "@read" in exists[6]
    for cmd in ("bf.reserve", "bf.madd", "bf.insert", "bf.loadchunk"):
        (spec,) = r.execute_command("COMMAND INFO", cmd)
        assert set(spec[2]) == {"write", "denyoom"}, cmd
    for cmd in ("bf.mexists", "bf.info", "bf.card", "bf.scandump", "bf.debug"):
        (spec,) = r.execute_command("COMMAND INFO", cmd)
        assert "readonly" in spec[2] and "write" not in spec[2], cmd


def test_config_directives(r):
    assert r.config_get("bf-*") == {
        "bf-error-rate": "0.01", "bf-initial-size": "100", "bf-expansion-factor": "2"}
    try:
        assert r.config_set("bf-error-rate", "0.001") is True
        assert r.config_set("bf-initial-size", "7") is True
        assert r.config_set("bf-expansion-factor", "0") is True
        assert r.config_get("bf-error-rate") == {"bf-error-rate": "0.001"}
        reply = r.execute_command("BF.MADD", "k", *map(str, range(8)))
        assert reply[:7] == [1] * 7 and str(reply[7]) == FULL
        assert debug(r, "k")[1].endswith("capacity:7 size:7 ratio:0.001")
        assert info(r, "k")["Expansion rate"] is None
        r.config_set("bf-expansion-factor", "3")
        r.execute_command("BF.RESERVE", "res", "0.01", "10")
        assert info(r, "res")["Expansion rate"] == 3
        for name, bad in (("bf-error-rate", "0"), ("bf-error-rate", "1"),
                          ("bf-initial-size", "0"), ("bf-initial-size", "1073741825"),
                          ("bf-expansion-factor", "-1"), ("bf-expansion-factor", "32769")):
            with pytest.raises(redis.ResponseError, match="must be in the range"):
                r.config_set(name, bad)
        with pytest.raises(redis.ResponseError):
            r.config_set("bf-initial-size", "x")
        assert r.config_get("bf-initial-size") == {"bf-initial-size": "7"}
    finally:
        r.config_set("bf-error-rate", "0.01")
        r.config_set("bf-initial-size", "100")
        r.config_set("bf-expansion-factor", "2")


def test_config_at_startup():
    with running_server("--bf-initial-size", "7", "--bf-error-rate", "0.1") as s:
        c = s.client()
        assert c.config_get("bf-initial-size") == {"bf-initial-size": "7"}
        c.execute_command("BF.ADD", "k", "a")
        assert debug(c, "k")[1].endswith("capacity:7 size:1 ratio:0.05")
        c.close()


def test_transactions_and_dirty(r):
    p = r.pipeline(transaction=True)
    p.execute_command("BF.ADD", "k", "a")
    p.execute_command("BF.EXISTS", "k", "a")
    p.execute_command("BF.CARD", "k")
    assert p.execute() == [1, 1, 1]
    before = r.info("persistence")["rdb_changes_since_last_save"]
    r.execute_command("BF.ADD", "k", "a")
    r.execute_command("BF.EXISTS", "k", "a")
    assert r.info("persistence")["rdb_changes_since_last_save"] == before
    r.execute_command("BF.MADD", "k", "b", "c")
    assert r.info("persistence")["rdb_changes_since_last_save"] == before + 2


def test_blocked_layout(r):
    """Keel's opt-in layout: every probe of an item in one 64-byte block."""
    assert r.execute_command("BF.RESERVE", "b", "0.01", "10000", "LAYOUT", "BLOCKED") == "OK"
    assert r.execute_command("BF.RESERVE", "c", "0.01", "10000") == "OK"
    items = [f"seen:{i}" for i in range(10000)]
    for key in ("b", "c"):
        # A 0 here is an item the filter already (falsely) reported present.
        assert sum(r.execute_command("BF.MADD", key, *items)) >= 9900
        assert r.execute_command("BF.MEXISTS", key, *items) == [1] * 10000
    assert debug(r, "b")[1].endswith(" layout:blocked")
    assert "layout" not in debug(r, "c")[1]
    # Sized so the measured rate stays under the one asked for: the first
    # link of a scaling filter gets half of 1%.
    unseen = [f"unseen:{i}" for i in range(50000)]
    false_positives = sum(r.execute_command("BF.MEXISTS", "b", *unseen))
    assert false_positives <= 0.01 * len(unseen), false_positives
    # It costs a little more memory than RedisBloom's layout for that.
    assert info(r, "c")["Size"] < info(r, "b")["Size"] < 1.2 * info(r, "c")["Size"]
    assert r.execute_command("BF.INSERT", "i", "LAYOUT", "BLOCKED", "ITEMS", "x") == [1]
    assert debug(r, "i")[1].endswith(" layout:blocked")
    assert err(r, "BF.RESERVE", "z", "0.01", "10", "LAYOUT", "sparse") == (
        "layout must be CLASSIC or BLOCKED")
    assert err(r, "BF.RESERVE", "z", "0.01", "10", "LAYOUT") == "no layout"

"""HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST.

Expected counts and raw values come from redis-server 7.0.15
(data/hll_golden.json, written by scripts/hll-golden-from-redis.py), so the
same tests pass against Redis and check Keel byte for byte.
"""

import json
import os

import pytest
import redis

from conftest import Server, make_list

with open(os.path.join(os.path.dirname(__file__), "data", "hll_golden.json")) as f:
    GOLDEN = json.load(f)

NOT_HLL = "WRONGTYPE Key is not a valid HyperLogLog string value."
CORRUPT = "INVALIDOBJ Corrupted HLL object detected"
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
EMPTY = bytes.fromhex("48594c4c" "01000000" "00000000" "00000080" "7fff")


def err(r, *args):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*args)
    return str(e.value)


def elements(prefix, n):
    return [f"{prefix}:{i}" for i in range(n)]


def fill(r, key, items):
    for i in range(0, len(items), 1000):
        r.pfadd(key, *items[i:i + 1000])


@pytest.fixture
def sparse_limit(rb):
    """Restores hll-sparse-max-bytes after a test that changes it."""
    yield
    rb.config_set("hll-sparse-max-bytes", 3000)


def test_pfadd_replies_and_empty_value(rb):
    # Creating the key with no elements is a change; a second time is not.
    assert rb.pfadd(b"h") == 1
    assert rb.get(b"h") == EMPTY
    assert rb.pfadd(b"h") == 0
    assert rb.pfadd(b"h", b"a", b"b") == 1
    assert rb.pfadd(b"h", b"a", b"b") == 0
    assert rb.pfadd(b"h", b"b", b"c") == 1
    assert rb.type(b"h") == b"string"
    assert rb.pfcount(b"h") == 3
    assert rb.pfcount(b"missing") == 0
    assert rb.exists(b"missing") == 0
    assert err(rb, "PFADD") == "wrong number of arguments for 'pfadd' command"
    assert err(rb, "PFCOUNT") == "wrong number of arguments for 'pfcount' command"
    assert err(rb, "PFMERGE") == "wrong number of arguments for 'pfmerge' command"


def test_counts_match_redis(rb):
    for key, want in GOLDEN["counts"].items():
        prefix = key.rstrip("0123456789")
        fill(rb, key, elements(prefix, int(key[len(prefix):])))
        assert rb.pfcount(key) == want, key
        # The second count comes from the cache and is the same.
        assert rb.pfcount(key) == want, key
    for keys, want in GOLDEN["unions"].items():
        words = keys.split()
        if words[0] == "PFMERGE":
            assert rb.execute_command(*words) is True
            assert rb.pfcount(words[1]) == want
        else:
            assert rb.execute_command("PFCOUNT", *words) == want, keys


def test_raw_values_match_redis(rb):
    for n in [0, 1, 3, 10, 100, 1000]:
        key = f"raw{n}"
        rb.pfadd(key, *elements("raw", n))
        assert rb.get(key).hex() == GOLDEN["raw"][f"{key} after PFADD"], key
        # PFCOUNT writes the cardinality it computed back into the header.
        rb.pfcount(key)
        assert rb.get(key).hex() == GOLDEN["raw"][f"{key} after PFCOUNT"], key
    fill(rb, "el5000", elements("el", 5000))
    rb.pfcount("el5000")
    assert rb.get("el5000").hex() == GOLDEN["raw"]["el5000"]
    # Sparse sources merge into a sparse value; a dense one makes it dense.
    assert rb.pfmerge("m1", "raw10", "raw100") is True
    assert rb.get("m1").hex() == GOLDEN["raw"]["PFMERGE m1 raw10 raw100"]
    assert rb.execute_command("PFDEBUG", "ENCODING", "m1") == b"sparse"
    assert rb.pfmerge("m2", "raw10", "el5000") is True
    assert rb.get("m2").hex() == GOLDEN["raw"]["PFMERGE m2 raw10 el5000"]
    assert rb.execute_command("PFDEBUG", "ENCODING", "m2") == b"dense"


def test_pfmerge(rb):
    rb.pfadd("a", "x", "y", "z")
    rb.pfadd("b", "z", "w")
    assert rb.pfmerge("d", "a", "b", "missing") is True
    assert rb.pfcount("d") == 4
    # The destination is a source too.
    assert rb.pfmerge("a", "b") is True
    assert rb.pfcount("a") == 4
    # Only a destination: an empty HLL, its cache marked stale.
    assert rb.pfmerge("e") is True
    assert rb.get("e") == EMPTY
    assert rb.pfcount("e") == 0
    # The destination keeps its TTL.
    rb.expire("d", 100)
    assert rb.pfmerge("d", "a") is True
    assert 0 < rb.ttl("d") <= 100


def test_getreg_matches_redis(r):
    r.pfadd("raw10", *elements("raw", 10))
    fill(r, "el1000", elements("el", 1000))
    for key in ["raw10", "el1000"]:
        regs = r.execute_command("PFDEBUG", "GETREG", key)
        assert len(regs) == 16384
        assert [[i, v] for i, v in enumerate(regs) if v] == GOLDEN["getreg"][key], key
        # GETREG leaves the value dense.
        assert r.execute_command("PFDEBUG", "ENCODING", key) == "dense"


@pytest.mark.parametrize("limit", ["3000", "200"])
def test_promotion_threshold_matches_redis(rb, sparse_limit, limit):
    rb.config_set("hll-sparse-max-bytes", int(limit))
    want = GOLDEN["promotion"][limit]
    n = want["elements"]
    rb.pfadd("p", *[f"p:{i}" for i in range(n - 1)])
    assert rb.execute_command("PFDEBUG", "ENCODING", "p") == b"sparse"
    assert rb.strlen("p") == want["last_sparse_len"]
    assert rb.pfadd("p", f"p:{n - 1}") == 1
    assert rb.execute_command("PFDEBUG", "ENCODING", "p") == b"dense"
    assert rb.strlen("p") == 12304


def test_sparse_limit_config(r, sparse_limit):
    assert r.config_get("hll-sparse-max-bytes") == {"hll-sparse-max-bytes": "3000"}
    r.config_set("hll-sparse-max-bytes", "0")
    assert r.config_get("hll-sparse-max-bytes") == {"hll-sparse-max-bytes": "0"}
    # Nothing fits: the first register set makes the value dense.
    r.pfadd("h", "a")
    assert r.execute_command("PFDEBUG", "ENCODING", "h") == "dense"
    assert r.pfcount("h") == 1
    r.config_set("hll-sparse-max-bytes", "1kb")
    assert r.config_get("hll-sparse-max-bytes") == {"hll-sparse-max-bytes": "1024"}


def test_pfdebug(r):
    assert err(r, "PFDEBUG", "GETREG", "nokey") == "The specified key does not exist"
    # The key is looked up before the subcommand is read.
    assert err(r, "PFDEBUG", "nosuch", "nokey") == "The specified key does not exist"
    r.pfadd("h", "a", "b", "c")
    assert r.execute_command("PFDEBUG", "DECODE", "h") == \
        "Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603"
    assert r.execute_command("PFDEBUG", "encoding", "h") == "sparse"
    assert err(r, "PFDEBUG", "nosuch", "h") == "Unknown PFDEBUG subcommand 'nosuch'"
    assert err(r, "PFDEBUG", "GETREG") == "wrong number of arguments for 'pfdebug' command"
    assert err(r, "PFDEBUG", "GETREG", "h", "x") == \
        "wrong number of arguments for 'pfdebug' command"
    assert r.execute_command("PFDEBUG", "TODENSE", "h") == 1
    assert r.execute_command("PFDEBUG", "TODENSE", "h") == 0
    assert r.execute_command("PFDEBUG", "ENCODING", "h") == "dense"
    assert err(r, "PFDEBUG", "DECODE", "h") == "HLL encoding is not sparse"
    assert r.pfcount("h") == 3
    r.set("s", "x" * 20)
    assert err(r, "PFDEBUG", "ENCODING", "s") == NOT_HLL
    make_list(r, "l")
    assert err(r, "PFDEBUG", "ENCODING", "l") == WRONGTYPE


def test_pfselftest(r):
    assert r.execute_command("PFSELFTEST") == "OK"
    assert err(r, "PFSELFTEST", "x") == "wrong number of arguments for 'pfselftest' command"


def test_values_that_are_not_hlls(rb):
    make_list(rb, "l")
    rb.set("s", "hello")
    rb.set("n", "12345678901234567890")
    rb.set("magic", b"HYLL" + b"\x02" + b"\x00" * 11 + b"\x7f\xff")
    rb.set("short_dense", b"HYLL" + b"\x00" * 12 + b"\x00" * 100)
    for key in ["s", "n", "magic", "short_dense"]:
        before = rb.get(key)
        assert err(rb, "PFADD", key, "a") == NOT_HLL, key
        assert err(rb, "PFCOUNT", key) == NOT_HLL, key
        assert err(rb, "PFCOUNT", "missing", key) == NOT_HLL, key
        assert err(rb, "PFMERGE", "dest", key) == NOT_HLL, key
        assert rb.get(key) == before
    assert rb.exists("dest") == 0
    assert err(rb, "PFADD", "l", "a") == WRONGTYPE
    assert err(rb, "PFCOUNT", "l") == WRONGTYPE
    assert err(rb, "PFMERGE", "l") == WRONGTYPE


def test_corrupt_sparse_values(rb):
    # A sparse body covering fewer or more registers than 16384, or an XZERO
    # cut off by the end of the string.
    header = EMPTY[:16]
    for body in [b"", b"\x7f\xfe", b"\x7f\xff\x00", b"\x7f", b"\x00" * 10]:
        rb.set("c", header + body)
        assert err(rb, "PFCOUNT", "c") == CORRUPT, body
        assert err(rb, "PFCOUNT", "c", "c") == CORRUPT, body
        assert err(rb, "PFMERGE", "d", "c") == CORRUPT, body
        assert rb.exists("d") == 0
        assert err(rb, "PFDEBUG", "GETREG", "c") == CORRUPT, body
    # A cached cardinality that is valid is answered as is, as Redis trusts
    # it, without reading the body.
    rb.set("cached", b"HYLL\x01\x00\x00\x00" + (1234).to_bytes(8, "little") + b"\x7f\xff")
    assert rb.pfcount("cached") == 1234
    rb.set("cached", b"HYLL\x01\x00\x00\x00" + (1234).to_bytes(8, "little") + b"\x7f")
    assert rb.pfcount("cached") == 1234
    assert err(rb, "PFCOUNT", "cached", "cached") == CORRUPT


def test_values_from_redis_load_and_count(rb):
    # A dense and a sparse value as Redis wrote them, set as plain strings.
    dense = bytes.fromhex(GOLDEN["raw"]["el5000"])
    rb.set("d", dense)
    assert rb.pfcount("d") == GOLDEN["counts"]["el5000"]
    sparse = bytes.fromhex(GOLDEN["raw"]["raw100 after PFADD"])
    rb.set("s", sparse)
    assert rb.pfcount("s") == 100
    assert rb.get("s").hex() == GOLDEN["raw"]["raw100 after PFCOUNT"]
    # DUMP / RESTORE carry it as a string.
    payload = rb.dump("d")
    rb.restore("d2", 0, payload)
    assert rb.get("d2") == rb.get("d")
    assert rb.pfcount("d2") == GOLDEN["counts"]["el5000"]


def test_pfcount_cache_write_back_touches_watch(server, r):
    r.pfadd("h", "a", "b")

    def watched_exec(between):
        with r.pipeline() as p:
            p.watch("h")
            between()
            p.multi()
            p.set("x", 1)
            try:
                return p.execute()
            except redis.WatchError:
                return None

    other = server.client()
    try:
        # The cache is stale, so PFCOUNT writes it back: a change to the key.
        assert watched_exec(lambda: other.pfcount("h")) is None
        # Now it is valid: PFCOUNT changes nothing, and several keys never write.
        assert watched_exec(lambda: (other.pfcount("h"), other.pfcount("h", "h"))) == [True]
    finally:
        other.close()


def test_keyspace_events(r):
    r.config_set("notify-keyspace-events", "KEA")
    try:
        p = r.pubsub()
        p.psubscribe("__keyspace@0__:*")
        assert p.get_message(timeout=1)["type"] == "psubscribe"
        r.pfadd("h", "a")
        r.pfadd("h", "a")  # no change, no event
        r.pfcount("h")
        r.pfmerge("m", "h")
        r.set("done", 1)
        events = []
        while True:
            m = p.get_message(timeout=1)
            if m is None:
                break
            events.append((m["channel"], m["data"]))
            if m["channel"] == "__keyspace@0__:done":
                break
        assert events == [
            ("__keyspace@0__:h", "pfadd"),
            ("__keyspace@0__:m", "pfadd"),
            ("__keyspace@0__:done", "set"),
        ]
        p.close()
    finally:
        r.config_set("notify-keyspace-events", "")


def test_pfadd_without_elements_reads_only_the_header(rb):
    # Redis walks a sparse body only to add to it.
    damaged = EMPTY[:16] + b"\x7f"
    rb.set("c", damaged)
    assert rb.pfadd("c") == 0
    assert rb.get("c") == damaged


@pytest.mark.parametrize("appendonly", ["no", "yes"])
def test_values_survive_restart(tmp_path, appendonly):
    # The RDB (SAVE) and the AOF (every command replayed, PFCOUNT's cache
    # write-back and PFDEBUG's conversion included) give back the same bytes.
    args = ("--dir", str(tmp_path), "--appendonly", appendonly, "--appendfsync", "always")
    s = Server(*args)
    try:
        r = s.client(decode_responses=False)
        r.pfadd("s", *elements("s", 50))
        r.pfadd("d", *elements("d", 3000))
        r.pfcount("d")
        r.pfmerge("m", "s", "d")
        r.pfadd("t", "a", "b")
        r.execute_command("PFDEBUG", "TODENSE", "t")
        before = {k: r.get(k) for k in ["s", "d", "m", "t"]}
        assert r.get("d")[15] & 0x80 == 0
        if appendonly == "no":
            r.save()
        s.stop()
        s = Server(*args)
        r = s.client(decode_responses=False)
        assert {k: r.get(k) for k in ["s", "d", "m", "t"]} == before
    finally:
        s.stop()


def test_estimate_past_the_integer_range(rb):
    # Every register at 51: the estimate is infinite. Redis rounds it with
    # llroundl, replies i64::MIN and caches that bit pattern, which has the
    # stale bit set, so the next PFCOUNT computes it again.
    regs = 0
    for i in range(16384):
        regs |= 51 << (6 * i)
    rb.set("full", b"HYLL" + b"\x00" * 11 + b"\x80" + regs.to_bytes(12288, "little"))
    assert rb.pfcount("full") == -(2 ** 63)
    assert rb.getrange("full", 8, 15) == b"\x00" * 7 + b"\x80"
    assert rb.pfcount("full") == -(2 ** 63)


def test_pfadd_on_damaged_sparse_values_answers_as_redis(rb, reference):
    # PFADD walks a sparse body only as far as each element's register, as
    # Redis does: a body covering too few or too many registers is edited
    # where the walk finds the register, and refused where it runs off the end.
    ref = redis.Redis(port=reference)
    header = b"HYLL\x01\x00\x00\x00" + b"\x00" * 8
    bodies = [b"", b"\x7f\xfe", b"\x7f\xff\x00", b"\x00" * 10, b"\x7f\xfe\x7f\xfe", b"\x80" * 20]
    for body in bodies:
        for elements in (["a"], list("abcdef"), [str(i) for i in range(50)]):
            seen = []
            for server in (rb, ref):
                server.set("damaged", header + body)
                try:
                    reply = server.pfadd("damaged", *elements)
                except redis.ResponseError as e:
                    reply = str(e)
                seen.append((reply, server.get("damaged")))
            assert seen[0] == seen[1], (body, elements)
    rb.delete("damaged")

"""T-digests, RedisBloom's TDIGEST.* commands: TDIGEST.CREATE, TDIGEST.ADD,
TDIGEST.RESET, TDIGEST.MERGE, TDIGEST.MIN, TDIGEST.MAX, TDIGEST.QUANTILE,
TDIGEST.CDF, TDIGEST.RANK, TDIGEST.REVRANK, TDIGEST.BYRANK,
TDIGEST.BYREVRANK, TDIGEST.TRIMMED_MEAN and TDIGEST.INFO, through redis-py's
r.tdigest() helper and raw commands for exact replies; and how a digest looks
to TYPE, COPY, DUMP/RESTORE, SAVE and the AOF.

Debian's redis-server has no RedisBloom, so these run against Keel only; the
expectations come from RedisBloom's sources and from replies RedisBloom 2.4.23
gave (shared/reference/files/redisbloom-2.4.23.txt)."""

import math

import pytest
import redis

from conftest import AGAINST_REDIS, Server
from test_connection import Raw

pytestmark = pytest.mark.skipif(AGAINST_REDIS, reason="needs the RedisBloom module")

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def err(r, *args):
    """The error text; redis-py drops a leading ERR code."""
    with pytest.raises(redis.ResponseError) as e:
        plain(r).execute_command(*args)
    return str(e.value)


def plain(r):
    """A client without the reply parsers r.tdigest() installs, to see replies
    as sent."""
    return redis.Redis(connection_pool=r.connection_pool)


def info(r, key):
    flat = plain(r).execute_command("TDIGEST.INFO", key)
    return dict(zip(flat[::2], flat[1::2]))


def fill(r, key, n=5000):
    p = r.pipeline(transaction=False)
    for i in range(n):
        p.execute_command("TDIGEST.ADD", key, str(((i * 7919) % 10007) / 10.0))
    p.execute()


def test_reference_replay_gives_redisbloom_replies(r):
    assert r.execute_command("TDIGEST.CREATE", "td:c", "COMPRESSION", "100") == "OK"
    fill(r, "td:c")
    assert r.execute_command("TDIGEST.INFO", "td:c") == [
        "Compression", 100, "Capacity", 610, "Merged nodes", 50, "Unmerged nodes", 449,
        "Merged weight", 4551, "Unmerged weight", 449, "Observations", 5000,
        "Total compressions", 8, "Memory usage", 9768,
    ]
    q = r.execute_command("TDIGEST.QUANTILE", "td:c", "0", "0.01", "0.5", "0.99", "1")
    assert [float(x) for x in q] == [
        0.0, 10.335714285714287, 500.12604198863295, 990.7775675675675, 1000.6,
    ]
    # Redis 7.0 formats doubles with %.17g.
    assert q[1] == "10.335714285714287" and q[3] == "990.77756756756753"
    c = r.execute_command("TDIGEST.CDF", "td:c", "100", "500")
    assert [float(x) for x in c] == [0.09809512722638315, 0.4998724193951576]
    # The queries merged the buffered points.
    assert info(r, "td:c")["Unmerged nodes"] == 0
    assert r.type("td:c") == "TDIS-TYPE"


def test_helpers_and_empty_digest(r):
    p = plain(r)
    assert r.tdigest().create("h", 100)
    assert p.execute_command("TDIGEST.MIN", "h") == "nan"
    assert p.execute_command("TDIGEST.MAX", "h") == "nan"
    assert p.execute_command("TDIGEST.QUANTILE", "h", "0.5") == ["nan"]
    assert p.execute_command("TDIGEST.CDF", "h", "1") == ["nan"]
    assert p.execute_command("TDIGEST.RANK", "h", "1") == [-2]
    assert p.execute_command("TDIGEST.BYRANK", "h", "1") == ["nan"]
    assert p.execute_command("TDIGEST.TRIMMED_MEAN", "h", "0.1", "0.9") == "nan"
    assert r.tdigest().add("h", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    assert r.tdigest().min("h") == 1.0 and r.tdigest().max("h") == 10.0
    assert r.tdigest().quantile("h", 0.5) == [6.0]
    assert r.tdigest().cdf("h", 5) == [0.45]
    assert r.tdigest().rank("h", 0, 5, 11) == [-1, 4, 10]
    assert r.tdigest().revrank("h", 0, 5, 11) == [10, 5, -1]
    assert r.tdigest().byrank("h", 0, 3, 10) == [1.0, 4.0, math.inf]
    assert r.tdigest().byrevrank("h", 0, 3, 10) == [10.0, 7.0, -math.inf]
    assert r.tdigest().trimmed_mean("h", 0.1, 0.9) == 5.5
    assert r.tdigest().reset("h")
    assert info(r, "h")["Observations"] == 0


def test_create_parsing(r):
    assert r.execute_command("TDIGEST.CREATE", "a") == "OK"
    assert info(r, "a")["Compression"] == 100
    assert err(r, "TDIGEST.CREATE", "a") == "T-Digest: key already exists"
    r.set("s", "x")
    assert err(r, "TDIGEST.CREATE", "s") == WRONGTYPE
    assert err(r, "TDIGEST.CREATE", "b", "FOO", "10") == "T-Digest: wrong keyword"
    assert err(r, "TDIGEST.CREATE", "b", "COMPRESSION", "x") == "T-Digest: error parsing compression parameter"
    assert err(r, "TDIGEST.CREATE", "b", "COMPRESSION", "0") == "T-Digest: compression parameter needs to be a positive integer"
    assert err(r, "TDIGEST.CREATE", "b", "COMPRESSION", "1000000000") == "T-Digest: allocation failed"
    assert "wrong number of arguments" in err(r, "TDIGEST.CREATE", "b", "COMPRESSION")
    assert r.execute_command("TDIGEST.CREATE", "c", "compression", "50") == "OK"
    assert info(r, "c")["Capacity"] == 310


def test_argument_errors(r):
    r.tdigest().create("t", 100)
    assert err(r, "TDIGEST.ADD", "t", "1", "x") == "T-Digest: error parsing val parameter"
    assert err(r, "TDIGEST.ADD", "t", "nan") == "T-Digest: error parsing val parameter"
    assert err(r, "TDIGEST.ADD", "t", "inf") == "T-Digest: val parameter needs to be a finite number"
    # Nothing was added by the failed commands.
    assert info(r, "t")["Observations"] == 0
    r.tdigest().add("t", [1, 2, 3])
    assert err(r, "TDIGEST.QUANTILE", "t", "x") == "T-Digest: error parsing quantile"
    assert err(r, "TDIGEST.QUANTILE", "t", "1.5") == "T-Digest: quantile should be in [0,1]"
    assert err(r, "TDIGEST.CDF", "t", "x") == "T-Digest: error parsing cdf"
    assert err(r, "TDIGEST.RANK", "t", "x") == "T-Digest: error parsing value"
    assert err(r, "TDIGEST.BYRANK", "t", "1.5") == "T-Digest: error parsing rank"
    assert err(r, "TDIGEST.BYREVRANK", "t", "-1") == "T-Digest: rank needs to be non negative"
    assert err(r, "TDIGEST.TRIMMED_MEAN", "t", "x", "1") == "T-Digest: error parsing low_cut_percentile"
    assert err(r, "TDIGEST.TRIMMED_MEAN", "t", "0", "x") == "T-Digest: error parsing high_cut_percentile"
    assert err(r, "TDIGEST.TRIMMED_MEAN", "t", "0", "2") == "T-Digest: low_cut_percentile and high_cut_percentile should be in [0,1]"
    assert err(r, "TDIGEST.TRIMMED_MEAN", "t", "0.5", "0.5") == "T-Digest: low_cut_percentile should be lower than high_cut_percentile"
    for cmd in ("TDIGEST.MIN", "TDIGEST.MAX", "TDIGEST.INFO", "TDIGEST.RESET"):
        assert err(r, cmd, "nokey") == "T-Digest: key does not exist"
    assert err(r, "TDIGEST.ADD", "nokey", "1") == "T-Digest: key does not exist"
    r.set("s", "x")
    assert err(r, "TDIGEST.ADD", "s", "1") == WRONGTYPE


def test_quantiles_out_of_order_are_answered_each(r):
    r.tdigest().create("t", 100)
    r.tdigest().add("t", list(range(1, 101)))
    asc = [float(x) for x in r.execute_command("TDIGEST.QUANTILE", "t", "0.1", "0.5", "0.9")]
    desc = [float(x) for x in r.execute_command("TDIGEST.QUANTILE", "t", "0.9", "0.5", "0.1")]
    assert desc == asc[::-1]


def test_merge_rules(r):
    r.tdigest().create("m1", 100)
    r.tdigest().create("m2", 200)
    r.tdigest().add("m1", [1, 2, 3])
    r.tdigest().add("m2", [4, 5, 6])
    # A new destination takes the largest compression of its inputs.
    assert r.tdigest().merge("to", 2, "m1", "m2")
    assert info(r, "to")["Compression"] == 200
    assert info(r, "to")["Observations"] == 6
    # The sources were merged in place.
    assert info(r, "m1")["Unmerged nodes"] == 0
    # An existing destination keeps its own and adds itself to the inputs...
    assert r.tdigest().merge("to", 1, "m1")
    assert info(r, "to")["Observations"] == 9
    # ... unless OVERRIDE.
    assert r.tdigest().merge("to", 1, "m1", override=True)
    assert info(r, "to")["Observations"] == 3
    assert info(r, "to")["Compression"] == 100
    assert r.tdigest().merge("to", 2, "m1", "m2", compression=50)
    assert info(r, "to")["Compression"] == 50
    assert err(r, "TDIGEST.MERGE", "to", "x", "m1") == "T-Digest: error parsing numkeys"
    assert err(r, "TDIGEST.MERGE", "to", "0", "m1") == "T-Digest: numkeys needs to be a positive integer"
    assert "wrong number of arguments" in err(r, "TDIGEST.MERGE", "to", "3", "m1")
    assert err(r, "TDIGEST.MERGE", "to", "1", "m1", "FOO") == "T-Digest: wrong keyword"
    assert err(r, "TDIGEST.MERGE", "to", "1", "nokey") == "T-Digest: key does not exist"
    assert err(r, "TDIGEST.MERGE", "new", "1", "new") == "T-Digest: key does not exist"
    r.set("s", "x")
    assert err(r, "TDIGEST.MERGE", "s", "1", "m1") == WRONGTYPE


def test_doubles_in_resp3(server):
    c = Raw(server.port)
    try:
        c.send("HELLO", "3")
        c.read()
        c.send("TDIGEST.CREATE", "r3")
        c.read()
        c.send("TDIGEST.MAX", "r3")
        assert c.f.readline() == b",nan\r\n"
        c.send("TDIGEST.ADD", "r3", "2.5")
        c.read()
        c.send("TDIGEST.MAX", "r3")
        assert c.f.readline() == b",2.5\r\n"
    finally:
        c.close()


def test_digest_travels_with_its_key(r):
    r.tdigest().create("d", 100)
    fill(r, "d", 700)
    want = r.execute_command("TDIGEST.QUANTILE", "d", "0.1", "0.5", "0.9")
    assert r.object("encoding", "d") == "raw"
    assert r.memory_usage("d") > 0
    assert r.copy("d", "d2")
    r.rename("d2", "d3")
    assert r.execute_command("TDIGEST.QUANTILE", "d3", "0.1", "0.5", "0.9") == want
    r.restore("d4", 0, r.dump("d"))
    assert r.execute_command("TDIGEST.QUANTILE", "d4", "0.1", "0.5", "0.9") == want
    assert "d" in list(r.scan_iter(_type="TDIS-TYPE"))


def test_save_and_aof_keep_the_digest(tmp_path):
    s = Server("--dir", str(tmp_path), "--appendonly", "yes")
    try:
        r = s.client()
        r.tdigest().create("d", 100)
        fill(r, "d", 1000)
        assert r.save()
        r.bgrewriteaof()
        r.tdigest().add("d", [5000])
        want = plain(r).execute_command("TDIGEST.QUANTILE", "d", "0.1", "0.5", "0.9", "1")
    finally:
        s.stop()
    s = Server("--dir", str(tmp_path), "--appendonly", "yes")
    try:
        r = s.client()
        assert plain(r).execute_command("TDIGEST.QUANTILE", "d", "0.1", "0.5", "0.9", "1") == want
        assert info(r, "d")["Observations"] == 1001
    finally:
        s.stop()


def test_documented_examples(r):
    """The examples of RedisBloom's command reference."""
    p = plain(r)
    r.tdigest().create("s", 1000)
    r.tdigest().add("s", [10, 20, 30, 40, 50, 60])
    assert p.execute_command("TDIGEST.RANK", "s", 0, 10, 20, 30, 40, 50, 60, 70) == [-1, 0, 1, 2, 3, 4, 5, 6]
    assert p.execute_command("TDIGEST.REVRANK", "s", 0, 10, 20, 30, 40, 50, 60, 70) == [6, 5, 4, 3, 2, 1, 0, -1]
    r.tdigest().create("e", 1000)
    r.tdigest().add("e", [1, 2, 2, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 5])
    by = p.execute_command("TDIGEST.BYRANK", "e", *range(16))
    assert [float(x) for x in by] == [1, 2, 2, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 5, math.inf]
    q = p.execute_command("TDIGEST.QUANTILE", "e", 0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1)
    assert [float(x) for x in q] == [1, 2, 3, 3, 4, 4, 4, 5, 5, 5, 5]
    c = p.execute_command("TDIGEST.CDF", "e", 0, 1, 2, 3, 4, 5, 6)
    assert [round(float(x), 6) for x in c] == [0, 0.033333, 0.133333, 0.3, 0.533333, 0.833333, 1]
    r.tdigest().create("m", 100)
    r.tdigest().add("m", list(range(1, 11)))
    assert p.execute_command("TDIGEST.TRIMMED_MEAN", "m", 0.1, 0.6) == "4"
    assert p.execute_command("TDIGEST.TRIMMED_MEAN", "m", 0.3, 0.9) == "6.5"
    assert p.execute_command("TDIGEST.TRIMMED_MEAN", "m", 0, 1) == "5.5"

"""Replication with Redis's own protocol, Keel as the master: a real
redis-server replica (Debian's 7.0) syncs from keel-server, follows its
writes, resumes with a partial resync after its link is killed, and falls
back to a full sync when the backlog no longer holds what it missed. Each
check compares the two servers' datasets key by key, TTLs included."""

import tempfile
import time

import pytest
import redis

from test_faults import Proc


def Node(kind, *args):
    """redis-server or keel-server in a fresh directory, logging to a file."""
    n = Proc(kind, tempfile.mkdtemp(prefix=f"keel-repl-{kind}-"), "--save", "", *args)
    n.r = redis.Redis(port=n.port, decode_responses=True, socket_timeout=10,
                      encoding_errors="backslashreplace")
    return n


@pytest.fixture
def nodes():
    started = []

    def start(kind, *args):
        n = Node(kind, *args)
        started.append(n)
        return n

    yield start
    for n in started:
        n.stop()


def until(check, timeout=15.0, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def fill(r, prefix, n):
    """Every core type and encoding: small and large strings, integers,
    hashes, lists, sets (int and string), sorted sets, a stream with a
    group, HyperLogLog, geo, and keys with TTLs, in two databases."""
    p = r.pipeline(transaction=False)
    for i in range(n):
        p.set(f"{prefix}:s:{i}", f"v{i}")
        p.set(f"{prefix}:int:{i}", i)
        p.set(f"{prefix}:ttl:{i}", "x", ex=1000 + i)
        p.hset(f"{prefix}:h:{i % 7}", f"f{i}", i)
        p.rpush(f"{prefix}:l:{i % 5}", f"e{i}")
        p.sadd(f"{prefix}:si:{i % 3}", i)
        p.sadd(f"{prefix}:ss:{i % 3}", f"m{i}")
        p.zadd(f"{prefix}:z:{i % 4}", {f"m{i}": i / 3})
        p.pfadd(f"{prefix}:hll", f"e{i}")
    p.set(f"{prefix}:big", "x" * 100_000)
    p.hset(f"{prefix}:bighash", mapping={f"f{i}": "y" * 100 for i in range(300)})
    p.zadd(f"{prefix}:bigz", {f"m{i}": i for i in range(300)})
    p.geoadd(f"{prefix}:geo", (13.361389, 38.115556, "Palermo"))
    for i in range(20):
        p.xadd(f"{prefix}:stream", {"n": i}, id=f"{i + 1}-1")
    p.execute()
    r.xgroup_create(f"{prefix}:stream", "g", id="0")
    r.xreadgroup("g", "c", {f"{prefix}:stream": ">"}, count=5)
    r.execute_command("SELECT", 5)
    r.set(f"{prefix}:db5", "five")
    r.execute_command("SELECT", 0)


def content(r, key):
    t = r.type(key)
    if key.endswith(":hll"):
        # The count, not the bytes: each side may pick its own encoding.
        v = r.pfcount(key)
    elif t == "string":
        v = r.get(key)
    elif t == "hash":
        v = sorted(r.hgetall(key).items())
    elif t == "list":
        v = r.lrange(key, 0, -1)
    elif t == "set":
        v = sorted(r.smembers(key))
    elif t == "zset":
        v = r.zrange(key, 0, -1, withscores=True)
    elif t == "stream":
        v = (r.xrange(key), [(g["name"], g["last-delivered-id"], g["pending"])
                             for g in r.xinfo_groups(key)])
    else:
        v = None
    return t, v, r.pttl(key)


def same_entry(a, b):
    # TTLs on the two sides are read a moment apart: they agree to 2 s.
    if a is None or b is None or a[:2] != b[:2]:
        return False
    return (a[2] < 0 and b[2] < 0) or abs(a[2] - b[2]) <= 2000


def dataset(r, db=0):
    r.execute_command("SELECT", db)
    try:
        return {k: content(r, k) for k in sorted(r.keys("*"))}
    finally:
        r.execute_command("SELECT", 0)


def same_data(master, replica):
    for db in (0, 5):
        a, b = dataset(master.r, db), dataset(replica.r, db)
        diff = sorted(k for k in set(a) | set(b) if not same_entry(a.get(k), b.get(k)))
        if diff:
            return False, [(k, a.get(k), b.get(k)) for k in diff[:3]]
    return True, []


def in_sync(master, replica):
    off = master.r.info("replication")["master_repl_offset"]
    info = replica.r.info("replication")
    return info.get("master_link_status") == "up" and info.get("slave_repl_offset") == off


def test_a_redis_replica_syncs_from_keel_and_follows_its_writes(nodes):
    keel = nodes("keel")
    fill(keel.r, "before", 200)
    replica = nodes("redis", "--replicaof", "127.0.0.1", str(keel.port))
    until(lambda: in_sync(keel, replica), what="the first sync")
    assert same_data(keel, replica) == (True, [])
    info = keel.r.info("replication")
    assert info["connected_slaves"] == 1
    assert info["slave0"]["state"] == "online"
    assert info["slave0"]["port"] == replica.port
    assert info["repl_backlog_active"] == 1
    flags = [c["flags"] for c in keel.r.client_list()]
    assert "S" in flags
    # What needs more of replication than Keel has says so.
    for args in (("WAIT", 1, 0), ("FAILOVER",)):
        with pytest.raises(redis.ResponseError) as e:
            keel.r.execute_command(*args)
        assert "not available in this build of Keel" in str(e.value)
    # Writes after the sync: every command, transactions, expiry, deletes.
    fill(keel.r, "after", 100)
    p = keel.r.pipeline(transaction=True)
    p.incrby("after:int:1", 5)
    p.delete("after:s:2")
    p.expire("after:s:3", 500)
    p.execute()
    keel.r.set("gone", "1", px=50)
    time.sleep(0.2)
    keel.r.get("gone")
    until(lambda: in_sync(keel, replica), what="the stream")
    assert same_data(keel, replica) == (True, [])
    assert replica.r.exists("gone") == 0
    # The replica acknowledges the master's offset each second.
    until(lambda: keel.r.info("replication")["slave0"]["offset"]
          == keel.r.info("replication")["master_repl_offset"], what="the ack")


def test_a_killed_link_resumes_with_a_partial_resync(nodes):
    keel = nodes("keel")
    fill(keel.r, "a", 50)
    replica = nodes("redis", "--replicaof", "127.0.0.1", str(keel.port))
    until(lambda: in_sync(keel, replica), what="the first sync")
    replica.r.execute_command("CLIENT", "KILL", "TYPE", "master")
    fill(keel.r, "b", 50)
    until(lambda: in_sync(keel, replica), what="the resync")
    assert "Successful partial resynchronization with master" in replica.log_text()
    assert same_data(keel, replica) == (True, [])


def test_an_overrun_backlog_means_a_full_sync(nodes):
    keel = nodes("keel", "--repl-backlog-size", "16384")
    fill(keel.r, "a", 20)
    replica = nodes("redis", "--replicaof", "127.0.0.1", str(keel.port))
    until(lambda: in_sync(keel, replica), what="the first sync")
    # Stop the replica's link so it misses more than the backlog holds.
    replica.r.execute_command("CONFIG", "SET", "repl-timeout", "60")
    replica.r.execute_command("REPLICAOF", "NO", "ONE")
    fill(keel.r, "b", 300)
    assert keel.r.info("replication")["repl_backlog_histlen"] == 16384
    replica.r.execute_command("REPLICAOF", "127.0.0.1", keel.port)
    until(lambda: in_sync(keel, replica), what="the full resync")
    log = replica.log_text()
    assert "Partial resynchronization not possible" in log
    assert same_data(keel, replica) == (True, [])


def test_psync_and_replconf_answer_as_redis_does(nodes):
    keel = nodes("keel")
    ref = nodes("redis")
    for n in (keel, ref):
        c = redis.Redis(port=n.port, decode_responses=True)
        assert c.execute_command("REPLCONF", "listening-port", "1234") == "OK"
        assert c.execute_command("REPLCONF", "capa", "eof", "capa", "psync2") == "OK"
        with pytest.raises(redis.ResponseError) as e:
            c.execute_command("REPLCONF", "listening-port")
        assert str(e.value) == "syntax error"
        with pytest.raises(redis.ResponseError) as e:
            c.execute_command("REPLCONF", "nonsense", "1")
        assert str(e.value) == "Unrecognized REPLCONF option: nonsense"
        with pytest.raises(redis.ResponseError) as e:
            c.execute_command("PSYNC", "?", "notanumber")
        assert str(e.value) == "value is not an integer or out of range"


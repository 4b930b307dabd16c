"""Replication with Redis's own protocol, both ways: a real redis-server
(Debian's 7.0) replica of keel-server, a keel-server replica of redis-server,
and Keel of Keel. The replica syncs, follows the master's writes, resumes
with a partial resync after its link is killed, and falls back to a full
sync when the backlog no longer holds what it missed. Each check compares
the two servers' datasets key by key, TTLs included."""

import socket
import tempfile
import threading
import time

import pytest
import redis

from test_faults import Proc


def Node(kind, *args, port=None, dir=None):
    """redis-server or keel-server in a fresh directory (or `dir`), logging
    to a file. A Redis master starts a full sync at once rather than after
    5 s."""
    if kind == "redis":
        args = ("--repl-diskless-sync-delay", "0", *args)
    d = dir or tempfile.mkdtemp(prefix=f"keel-repl-{kind}-")
    n = Proc(kind, d, "--save", "", *args, port=port)
    n.r = redis.Redis(port=n.port, decode_responses=True, socket_timeout=10,
                      encoding_errors="backslashreplace")
    return n


@pytest.fixture
def nodes():
    started = []

    def start(kind, *args, port=None, dir=None):
        n = Node(kind, *args, port=port, dir=dir)
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


# (master, replica): Keel must serve a Redis replica, follow a Redis master,
# and follow itself.
PAIRS = [("keel", "redis"), ("redis", "keel"), ("keel", "keel")]


@pytest.mark.parametrize("mkind,rkind", PAIRS)
def test_a_replica_syncs_and_follows_the_masters_writes(nodes, mkind, rkind):
    master = nodes(mkind)
    fill(master.r, "before", 200)
    replica = nodes(rkind, "--replicaof", "127.0.0.1", str(master.port))
    until(lambda: in_sync(master, replica), what="the first sync")
    assert same_data(master, replica) == (True, [])
    info = master.r.info("replication")
    assert info["connected_slaves"] == 1
    assert info["slave0"]["state"] == "online"
    assert info["slave0"]["port"] == replica.port
    assert info["repl_backlog_active"] == 1
    assert "S" in [c["flags"] for c in master.r.client_list()]
    assert "M" in [c["flags"] for c in replica.r.client_list()]
    rinfo = replica.r.info("replication")
    assert rinfo["role"] == "slave"
    assert rinfo["master_port"] == master.port
    assert rinfo["master_replid"] == info["master_replid"]
    assert replica.r.execute_command("ROLE")[:4] == ["slave", "127.0.0.1", master.port, "connected"]
    with pytest.raises(redis.ResponseError) as e:
        replica.r.set("x", "1")
    assert str(e.value) == "You can't write against a read only replica."
    # WAIT counts the replicas that acknowledged this client's last write.
    master.r.set("waited", "1")
    assert master.r.execute_command("WAIT", 1, 5000) == 1
    started = time.time()
    assert master.r.execute_command("WAIT", 2, 300) == 1
    assert time.time() - started >= 0.25
    assert replica.r.get("waited") == "1"
    with pytest.raises(redis.ResponseError) as e:
        replica.r.execute_command("WAIT", 1, 0)
    assert str(e.value).startswith("WAIT cannot be used with replica instances.")
    if mkind == "keel":
        # What needs more of replication than Keel has says so.
        with pytest.raises(redis.ResponseError) as e:
            master.r.execute_command("FAILOVER")
        assert "not available in this build of Keel" in str(e.value)
    # Writes after the sync: every command, transactions, expiry, deletes.
    fill(master.r, "after", 100)
    p = master.r.pipeline(transaction=True)
    p.incrby("after:int:1", 5)
    p.delete("after:s:2")
    p.expire("after:s:3", 500)
    p.execute()
    master.r.set("gone", "1", px=50)
    time.sleep(0.2)
    master.r.get("gone")
    until(lambda: in_sync(master, replica), what="the stream")
    assert same_data(master, replica) == (True, [])
    assert replica.r.exists("gone") == 0
    # The replica acknowledges the master's offset each second.
    until(lambda: master.r.info("replication")["slave0"]["offset"]
          == master.r.info("replication")["master_repl_offset"], what="the ack")


@pytest.mark.parametrize("mkind,rkind", PAIRS)
def test_a_killed_link_resumes_with_a_partial_resync(nodes, mkind, rkind):
    master = nodes(mkind)
    fill(master.r, "a", 50)
    replica = nodes(rkind, "--replicaof", "127.0.0.1", str(master.port))
    until(lambda: in_sync(master, replica), what="the first sync")
    replica.r.execute_command("CLIENT", "KILL", "TYPE", "master")
    fill(master.r, "b", 50)
    until(lambda: in_sync(master, replica), what="the resync")
    assert "Successful partial resynchronization with master" in replica.log_text()
    assert same_data(master, replica) == (True, [])


@pytest.mark.parametrize("mkind,rkind", PAIRS)
def test_a_replica_restarted_from_its_snapshot_resumes_with_a_partial_resync(nodes, mkind, rkind):
    master = nodes(mkind)
    fill(master.r, "a", 50)
    args = ("--replicaof", "127.0.0.1", str(master.port))
    replica = nodes(rkind, *args)
    until(lambda: in_sync(master, replica), what="the first sync")
    master.r.execute_command("SELECT", 5)
    master.r.set("in-db-5", "x")
    master.r.execute_command("SELECT", 0)
    until(lambda: in_sync(master, replica), what="the stream")
    # Saved at shutdown: the snapshot holds the master's id and offset.
    try:
        replica.r.execute_command("SHUTDOWN", "SAVE")
    except redis.ConnectionError:
        pass
    replica.proc.wait(timeout=10)
    # Written meanwhile in the database the stream was last in.
    master.r.execute_command("SELECT", 5)
    master.r.set("while-down", "y")
    master.r.execute_command("SELECT", 0)
    fill(master.r, "b", 20)
    back = nodes(rkind, *args, dir=replica.dir)
    until(lambda: in_sync(master, back), what="the resync after the restart")
    log = back.log_text()
    assert "Successful partial resynchronization with master" in log
    assert "Full resync from master" not in log
    assert same_data(master, back) == (True, [])


@pytest.mark.parametrize("mkind,rkind", PAIRS)
def test_an_overrun_backlog_means_a_full_sync(nodes, mkind, rkind):
    master = nodes(mkind, "--repl-backlog-size", "16384")
    fill(master.r, "a", 20)
    replica = nodes(rkind, "--replicaof", "127.0.0.1", str(master.port))
    until(lambda: in_sync(master, replica), what="the first sync")
    # Stop the replica's link so it misses more than the backlog holds.
    replica.r.execute_command("REPLICAOF", "NO", "ONE")
    info = replica.r.info("replication")
    assert info["role"] == "master"
    fill(master.r, "b", 300)
    minfo = master.r.info("replication")
    # What the replica would ask for is no longer in the backlog.
    assert minfo["repl_backlog_first_byte_offset"] > info["master_repl_offset"] + 1
    if mkind == "keel":
        assert minfo["repl_backlog_histlen"] == 16384
    replica.r.execute_command("REPLICAOF", "127.0.0.1", master.port)
    until(lambda: in_sync(master, replica), what="the full resync")
    assert replica.log_text().count("Full resync from master") == 2
    assert same_data(master, replica) == (True, [])


@pytest.mark.parametrize("top", ["keel", "redis"])
def test_a_promoted_replica_keeps_its_own_replicas_with_a_partial_resync(nodes, top):
    """master -> Keel replica -> Redis replica; then the middle one is
    promoted: its replica continues from it under the new id."""
    master = nodes(top)
    middle = nodes("keel", "--replicaof", "127.0.0.1", str(master.port))
    leaf = nodes("redis", "--replicaof", "127.0.0.1", str(middle.port))
    fill(master.r, "a", 50)
    until(lambda: in_sync(master, middle) and in_sync(master, leaf), what="the chain")
    assert same_data(master, leaf) == (True, [])
    old_id = middle.r.info("replication")["master_replid"]
    assert middle.r.execute_command("REPLICAOF", "NO", "ONE") == "OK"
    info = middle.r.info("replication")
    assert info["role"] == "master"
    assert info["master_replid2"] == old_id
    assert info["second_repl_offset"] == info["master_repl_offset"] + 1
    fill(middle.r, "b", 20)
    until(lambda: in_sync(middle, leaf), what="the leaf following the promoted replica")
    assert same_data(middle, leaf) == (True, [])
    assert leaf.r.info("replication")["master_replid"] == info["master_replid"]
    assert "Full resync from master" not in leaf.log_text().split("Connection with master lost")[-1]


def test_replicaof_answers_as_redis_does(nodes):
    keel = nodes("keel")
    ref = nodes("redis")
    for n in (keel, ref):
        assert n.r.execute_command("REPLICAOF", "NO", "ONE") == "OK"
        with pytest.raises(redis.ResponseError) as e:
            n.r.execute_command("REPLICAOF", "127.0.0.1", "notaport")
        assert str(e.value) == "Invalid master port"
        assert n.r.execute_command("REPLICAOF", "127.0.0.1", "1") == "OK"
        assert n.r.execute_command("REPLICAOF", "127.0.0.1", "1") == "OK Already connected to specified master"
        info = n.r.info("replication")
        assert (info["role"], info["master_link_status"], info["master_port"]) == ("slave", "down", 1)
        assert n.r.config_get("replicaof") == {"replicaof": "127.0.0.1 1"}
        role = n.r.execute_command("ROLE")
        assert role[:3] == ["slave", "127.0.0.1", 1] and role[4] == -1
        assert n.r.execute_command("REPLICAOF", "NO", "ONE") == "OK"
        assert n.r.info("replication")["role"] == "master"
        assert n.r.config_get("replicaof") == {"replicaof": ""}


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



class FakeMaster:
    """A master that answers the handshake and then sends `payload` after
    `+FULLRESYNC`, and closes: a snapshot cut short, or one no server can
    load. Counts the syncs it was asked for."""

    def __init__(self, payload):
        self.payload = payload
        self.syncs = 0
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            with conn:
                conn.settimeout(5)
                try:
                    self.handshake(conn)
                except OSError:
                    pass

    def handshake(self, conn):
        buf = b""
        while True:
            cmd, buf = self.command(conn, buf)
            if cmd is None:
                return
            name = cmd[0].upper()
            if name == b"PSYNC":
                self.syncs += 1
                conn.sendall(b"+FULLRESYNC " + b"f" * 40 + b" 0\r\n" + self.payload)
                time.sleep(0.2)
                return
            conn.sendall(b"+PONG\r\n" if name == b"PING" else b"+OK\r\n")

    @staticmethod
    def command(conn, buf):
        """One multibulk command from `conn` (None at EOF), and what follows it."""
        while True:
            parsed = FakeMaster.parse(buf)
            if parsed is not None:
                return parsed
            chunk = conn.recv(4096)
            if not chunk:
                return None, buf
            buf += chunk

    @staticmethod
    def parse(buf):
        if not buf.startswith(b"*") or b"\r\n" not in buf:
            return None
        head, rest = buf.split(b"\r\n", 1)
        args = []
        for _ in range(int(head[1:])):
            if b"\r\n" not in rest:
                return None
            size, rest = rest.split(b"\r\n", 1)
            n = int(size[1:])
            if len(rest) < n + 2:
                return None
            args.append(rest[:n])
            rest = rest[n + 2:]
        return args, rest

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.sock.close()


@pytest.mark.parametrize("kind", ["keel", "redis"])
def test_a_snapshot_cut_short_leaves_the_dataset_and_the_replica_retries(nodes, kind):
    fake = FakeMaster(b"$100000\r\nREDIS0009" + b"\x00" * 100)
    try:
        n = nodes(kind)
        n.r.set("old", "1")
        n.r.execute_command("REPLICAOF", "127.0.0.1", fake.port)
        until(lambda: fake.syncs >= 2, what="a second try")
        assert n.r.get("old") == "1"
        assert n.r.info("replication")["master_link_status"] == "down"
    finally:
        fake.close()


@pytest.mark.parametrize("kind", ["keel", "redis"])
def test_a_snapshot_of_an_unknown_version_is_refused_and_nothing_is_served(nodes, kind):
    rdb = b"REDIS0099" + b"\xff" + b"\x00" * 8
    fake = FakeMaster(b"$%d\r\n" % len(rdb) + rdb)
    try:
        n = nodes(kind)
        n.r.set("old", "1")
        n.r.execute_command("REPLICAOF", "127.0.0.1", fake.port)
        until(lambda: "Failed trying to load the MASTER synchronization DB from disk"
              in n.log_text(), what="the load to fail")
        assert n.r.dbsize() == 0
        assert n.r.info("replication")["master_link_status"] == "down"
        until(lambda: fake.syncs >= 2, what="a second try")
    finally:
        fake.close()


@pytest.mark.parametrize("kind", ["keel", "redis"])
def test_min_replicas_to_write_refuses_writes_without_good_replicas(nodes, kind):
    master = nodes(kind, "--min-replicas-to-write", "1", "--min-replicas-max-lag", "10")
    with pytest.raises(redis.ResponseError) as e:
        master.r.set("k", "v")
    assert str(e.value) == "NOREPLICAS Not enough good replicas to write."
    assert master.r.get("k") is None
    p = master.r.pipeline(transaction=True)
    p.set("k", "v")
    with pytest.raises(redis.ResponseError) as e:
        p.execute()
    assert "Not enough good replicas to write." in str(e.value)
    assert master.r.get("k") is None
    replica = nodes(kind, "--replicaof", "127.0.0.1", str(master.port))
    until(lambda: in_sync(master, replica), what="the sync")
    until(lambda: _set_ok(master.r), what="writes to be accepted with a good replica")
    master.r.config_set("min-replicas-to-write", 2)
    until(lambda: not _set_ok(master.r), what="writes to be refused again")
    master.r.config_set("min-replicas-to-write", 0)
    until(lambda: _set_ok(master.r), what="the check to be off")


def _set_ok(r):
    try:
        return r.set("k", "v")
    except redis.ResponseError as e:
        assert str(e) == "NOREPLICAS Not enough good replicas to write."
        return False


@pytest.mark.parametrize("kind", ["keel", "redis"])
def test_the_backlog_is_freed_after_repl_backlog_ttl_without_replicas(nodes, kind):
    master = nodes(kind, "--repl-backlog-ttl", "1")
    replica = nodes(kind, "--replicaof", "127.0.0.1", str(master.port))
    until(lambda: in_sync(master, replica), what="the sync")
    first = master.r.info("replication")
    assert first["repl_backlog_active"] == 1
    replica.r.execute_command("REPLICAOF", "NO", "ONE")
    until(lambda: master.r.info("replication")["repl_backlog_active"] == 0, timeout=10,
          what="the backlog to be freed")
    info = master.r.info("replication")
    assert info["master_replid"] != first["master_replid"]
    assert str(info["master_replid2"]).strip("0") == ""


@pytest.mark.parametrize("kind", ["keel", "redis"])
def test_a_replica_loading_a_sync_answers_loading(nodes, kind):
    master = nodes(kind, "--enable-debug-command", "yes")
    master.r.execute_command("DEBUG", "POPULATE", 1_000_000)
    replica = nodes(kind)
    replica.r.execute_command("REPLICAOF", "127.0.0.1", master.port)
    seen = set()
    deadline = time.time() + 60
    # ROLE is served while loading and takes no lock, as in Redis.
    while replica.r.execute_command("ROLE")[3] != "connected":
        assert time.time() < deadline, "the sync did not end"
        try:
            replica.r.get("key:1")
        except redis.BusyLoadingError as e:
            seen.add(str(e))
    assert seen == {"Redis is loading the dataset in memory"}
    assert replica.r.get("key:1") == "value:1"
    assert replica.r.dbsize() == 1_000_000


@pytest.mark.parametrize("kind", ["keel", "redis"])
def test_a_replica_ignores_its_maxmemory(nodes, kind):
    """replica-ignore-maxmemory yes: the replica keeps every key its master
    has, evicting nothing, however far over its own limit."""
    master = nodes(kind)
    replica = nodes(kind, "--maxmemory", "2mb", "--maxmemory-policy", "allkeys-lru",
                    "--replicaof", "127.0.0.1", str(master.port))
    until(lambda: in_sync(master, replica), what="the sync")
    p = master.r.pipeline(transaction=False)
    for i in range(5000):
        p.set(f"k{i}", "x" * 1000)
    p.execute()
    until(lambda: in_sync(master, replica), what="the stream")
    assert replica.r.dbsize() == master.r.dbsize() == 5000
    assert replica.r.info("stats")["evicted_keys"] == 0

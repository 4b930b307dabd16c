"""Replay equivalence: what a server rebuilds from its AOF, from an RDB snapshot, and from a rewritten
AOF equals what it held live.

A seeded random stream of writes (every data type, both encodings, TTLs set in every way and keys
expiring during the run, blocking pops served by a push, keys moved between databases, MULTI blocks)
runs against a server with `appendonly yes`; then every key of every database is dumped (type, value
in a canonical form, absolute expiry in ms). The same dump must come back after a restart from the AOF
alone, from the RDB alone (`appendonly no`), and from the AOF after BGREWRITEAOF, with and without
the RDB preamble."""

import os
import random
import shutil
import threading
import time

import pytest
import redis

from conftest import AGAINST_REDIS, Server, refuses_aof

DATABASES = 4
SHORT_TTL_MS = 600  # keys meant to expire during the run live at most this long
N_OPS = 2500


@pytest.fixture(scope="module", autouse=True)
def persistence_served():
    refused = refuses_aof()
    if refused and not AGAINST_REDIS:
        pytest.skip("persistence not served yet")
    assert refused is None, refused


def start(data_dir, *args):
    s = Server("--dir", data_dir, "--save", "", *args)
    deadline = time.time() + 30
    while True:
        try:
            s.client().ping()
            return s
        except redis.BusyLoadingError:
            if time.time() > deadline:
                s.stop()
                raise
            time.sleep(0.02)


def with_aof(data_dir):
    return start(data_dir, "--appendonly", "yes", "--appendfsync", "always")


def wait_background_done(c, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        info = c.info("persistence")
        if not (info["aof_rewrite_in_progress"] or info["aof_rewrite_scheduled"]
                or info["rdb_bgsave_in_progress"]):
            return info
        time.sleep(0.02)
    raise AssertionError("background rewrite still running")


def aof_base(data_dir):
    """The name of the base file the AOF manifest lists."""
    manifest = (data_dir / "appendonlydir" / "appendonly.aof.manifest").read_text()
    return next(line.split()[1] for line in manifest.splitlines() if line.split()[-2:] == ["type", "b"])


def rewrite_aof(c):
    before = c.info("persistence")["aof_rewrites"]
    c.bgrewriteaof()
    info = wait_background_done(c)
    assert info["aof_rewrites"] > before
    assert info["aof_last_bgrewrite_status"] == "ok"


# --- the dump -----------------------------------------------------------------------------------

def dump(port):
    """{db: {key: (type, canonical value, absolute expiry in ms or -1)}} over every database."""
    out = {}
    for db in range(16):
        c = redis.Redis(host="127.0.0.1", port=port, db=db)
        keys = sorted(c.scan_iter(count=1000))
        if not keys:
            c.close()
            continue
        p = c.pipeline(transaction=False)
        for k in keys:
            p.type(k)
            p.execute_command("PEXPIRETIME", k)
        meta = p.execute()
        p = c.pipeline(transaction=False)
        for k, kind in zip(keys, meta[0::2]):
            read = {b"string": ("GET",), b"list": ("LRANGE", 0, -1), b"set": ("SMEMBERS",),
                    b"zset": ("ZRANGE", 0, -1, "WITHSCORES"), b"hash": ("HGETALL",)}[kind]
            p.execute_command(read[0], k, *read[1:])
        values = p.execute()
        c.close()
        table = {}
        for k, kind, expiry, value in zip(keys, meta[0::2], meta[1::2], values):
            if kind == b"set":
                value = sorted(value)
            elif kind == b"hash":
                value = sorted(value.items())
            elif kind == b"zset":
                value = list(zip(value[0::2], value[1::2])) if value and not isinstance(value[0], tuple) \
                    else list(value)
            table[k] = (kind, value, expiry)
        out[db] = table
    return out


def diff(want, got, limit=8):
    lines = []
    for db in sorted(set(want) | set(got)):
        a, b = want.get(db, {}), got.get(db, {})
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                lines.append(f"db{db} {k!r}: live {str(a.get(k))[:200]} / reloaded {str(b.get(k))[:200]}")
    return f"{len(lines)} keys differ:\n" + "\n".join(lines[:limit])


def assert_same(want, got, what):
    assert got == want, f"{what}: {diff(want, got)}"


# --- the command stream -------------------------------------------------------------------------

class Stream:
    """Random writes over a small key space, so that commands meet each other's keys."""

    def __init__(self, port, seed):
        self.port = port
        self.rng = random.Random(seed)
        self.dbs = [redis.Redis(host="127.0.0.1", port=port, db=i) for i in range(DATABASES)]
        self.short_deadline = 0.0  # wall time by which every short TTL has passed
        self.served_pops = 0
        weighted = [(self.string, 12), (self.hash, 8), (self.set, 8), (self.list, 8), (self.zset, 8),
                    (self.expire, 6), (self.keys, 5), (self.blocking, 1), (self.multi, 3),
                    (self.big, 1), (self.other_db, 2), (self.short_ttl, 2)]
        self.ops = [f for f, _ in weighted]
        self.weights = [w for _, w in weighted]

    def close(self):
        for c in self.dbs:
            c.close()

    def run(self, n):
        for _ in range(n):
            op = self.rng.choices(self.ops, self.weights)[0]
            c = self.dbs[0] if self.rng.random() < 0.85 or op == self.blocking \
                else self.dbs[self.rng.randrange(1, DATABASES)]
            try:
                op(c)
            except redis.ResponseError:
                pass  # WRONGTYPE and friends: the stream meets its own keys of other types

    # Names and values.
    def key(self, kind):
        return f"{kind}:{self.rng.randrange(12)}"

    def anykey(self):
        return self.key(self.rng.choice("shtlz"))

    def value(self):
        r = self.rng.random()
        if r < 0.3:
            return str(self.rng.randrange(-1000, 100000))
        if r < 0.4:
            return bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(1, 20)))
        if r < 0.45:
            return "w" * self.rng.randrange(60, 300)  # past the small-value encodings
        return f"v{self.rng.randrange(1000)}"

    def long_ttl_s(self):
        return self.rng.randrange(1000, 100000)

    def note_short(self, ms):
        self.short_deadline = max(self.short_deadline, time.time() + ms / 1000 + 0.05)

    # Families.
    def string(self, c):
        k, rng = self.key("s"), self.rng
        r = rng.randrange(12)
        if r == 0:
            c.set(k, self.value(), ex=self.long_ttl_s())
        elif r == 1:
            c.set(k, self.value(), px=self.long_ttl_s() * 1000 + rng.randrange(1000))
        elif r == 2:
            c.set(k, self.value(), keepttl=True)
        elif r == 3:
            c.set(k, self.value(), exat=int(time.time()) + self.long_ttl_s(), get=rng.random() < 0.5)
        elif r == 4:
            c.set(k, self.value(), nx=rng.random() < 0.5, xx=False)
        elif r == 5:
            c.incrbyfloat(k, rng.choice([0.1, -2.5, 3, 1e3, 1.25e-3]))
        elif r == 6:
            c.incrby(k, rng.randrange(-50, 50))
        elif r == 7:
            c.append(k, self.value())
        elif r == 8:
            c.setrange(k, rng.choice([0, 3, 17, 100, 2000]), self.value())
        elif r == 9:
            c.getex(k, ex=self.long_ttl_s()) if rng.random() < 0.5 else c.getex(k, persist=True)
        elif r == 10:
            c.setbit(k, rng.randrange(0, 4000), rng.randrange(2))
        else:
            c.mset({self.key("s"): self.value() for _ in range(rng.randrange(1, 4))})

    def hash(self, c):
        k, rng = self.key("h"), self.rng
        r = rng.randrange(6)
        field = f"f{rng.randrange(40)}"
        if r <= 1:
            c.hset(k, mapping={f"f{rng.randrange(40)}": self.value() for _ in range(rng.randrange(1, 5))})
        elif r == 2:
            c.hdel(k, field, f"f{rng.randrange(40)}")
        elif r == 3:
            c.hincrby(k, field, rng.randrange(-10, 10))
        elif r == 4:
            c.hincrbyfloat(k, field, rng.choice([0.5, -1.75, 2e-2]))
        else:
            c.hsetnx(k, field, self.value())

    def set(self, c):
        k, rng = self.key("t"), self.rng
        r = rng.randrange(8)
        if r <= 1:
            members = [rng.randrange(1000) for _ in range(rng.randrange(1, 6))]  # integers: intset
            c.sadd(k, *members)
        elif r == 2:
            c.sadd(k, *[self.value() for _ in range(rng.randrange(1, 4))])
        elif r == 3:
            c.srem(k, *[rng.randrange(1000) for _ in range(3)])
        elif r == 4:
            c.spop(k, rng.choice([None, 1, 3, 20]))
        elif r == 5:
            c.srandmember(k, rng.choice([None, 2, -3]))
        elif r == 6:
            c.smove(k, self.key("t"), rng.randrange(1000))
        else:
            getattr(c, rng.choice(["sinterstore", "sunionstore", "sdiffstore"]))(
                self.key("t"), [k, self.key("t")])

    def list(self, c):
        k, rng = self.key("l"), self.rng
        r = rng.randrange(9)
        if r <= 1:
            getattr(c, rng.choice(["lpush", "rpush"]))(k, *[self.value() for _ in range(rng.randrange(1, 5))])
        elif r == 2:
            getattr(c, rng.choice(["lpop", "rpop"]))(k, rng.choice([None, 2]))
        elif r == 3:
            c.lmove(k, self.key("l"), rng.choice(["LEFT", "RIGHT"]), rng.choice(["LEFT", "RIGHT"]))
        elif r == 4:
            c.linsert(k, rng.choice(["BEFORE", "AFTER"]), self.value(), self.value())
        elif r == 5:
            c.lset(k, rng.randrange(-3, 3), self.value())
        elif r == 6:
            c.ltrim(k, rng.randrange(0, 3), rng.randrange(-3, 40))
        elif r == 7:
            c.lrem(k, rng.randrange(-2, 3), self.value())
        else:
            c.rpoplpush(k, self.key("l"))

    def zset(self, c):
        k, rng = self.key("z"), self.rng
        r = rng.randrange(9)
        member = f"m{rng.randrange(40)}"
        score = rng.choice([rng.randrange(-100, 100), rng.random() * 10, 0.1, float("inf"), 1e-7])
        if r <= 1:
            flag = rng.choice([{}, {"nx": True}, {"xx": True}, {"gt": True}, {"lt": True}])
            c.zadd(k, {member: score, f"m{rng.randrange(40)}": rng.randrange(50)}, ch=rng.random() < 0.5, **flag)
        elif r == 2:
            c.zadd(k, {member: rng.choice([0.1, 1, -2.5])}, incr=True)
        elif r == 3:
            c.zincrby(k, rng.choice([0.1, 3, -1e-3]), member)
        elif r == 4:
            getattr(c, rng.choice(["zpopmin", "zpopmax"]))(k, rng.choice([None, 2]))
        elif r == 5:
            c.zrem(k, member)
        elif r == 6:
            c.zremrangebyscore(k, rng.randrange(-100, 0), rng.randrange(0, 30))
        elif r == 7:
            getattr(c, rng.choice(["zunionstore", "zinterstore"]))(self.key("z"), [k, self.key("z")])
        else:
            c.zrangestore(self.key("z"), k, 0, rng.randrange(1, 10))

    def expire(self, c):
        k, rng = self.anykey(), self.rng
        r = rng.randrange(7)
        opt = rng.choice([{}, {}, {"nx": True}, {"xx": True}, {"gt": True}, {"lt": True}])
        if r == 0:
            c.expire(k, self.long_ttl_s(), **opt)
        elif r == 1:
            c.pexpire(k, self.long_ttl_s() * 1000 + rng.randrange(1000), **opt)
        elif r == 2:
            c.expireat(k, int(time.time()) + self.long_ttl_s(), **opt)
        elif r == 3:
            c.pexpireat(k, int(time.time() * 1000) + self.long_ttl_s() * 1000 + 7, **opt)
        elif r == 4:
            c.persist(k)
        elif r == 5:
            c.expireat(k, int(time.time()) - 10)  # in the past: deletes the key
        else:
            c.ttl(k)

    def keys(self, c):
        rng = self.rng
        kind = rng.choice("shtlz")
        k, other = self.key(kind), self.key(kind)
        r = rng.randrange(8)
        if r == 0:
            c.rename(k, other)
        elif r == 1:
            c.renamenx(k, other)
        elif r == 2:
            c.move(k, rng.randrange(DATABASES))
        elif r == 3:
            c.copy(k, other, replace=rng.random() < 0.5)
        elif r == 4:
            c.copy(k, k, destination_db=rng.randrange(1, DATABASES), replace=True)
        elif r == 5:
            c.delete(k) if rng.random() < 0.5 else c.unlink(k)
        elif r == 6:
            c.swapdb(rng.randrange(DATABASES), rng.randrange(DATABASES))
        else:
            c.getdel(k)

    def other_db(self, c):
        """Database 3 fills up and is flushed now and then."""
        d = self.dbs[3]
        if self.rng.random() < 0.1:
            d.flushdb()
        else:
            d.set(f"o:{self.rng.randrange(50)}", self.value())
            d.rpush(f"ol:{self.rng.randrange(5)}", self.value())

    def short_ttl(self, c):
        """Keys that expire while the stream still runs (some read after, some never touched)."""
        rng = self.rng
        ms = rng.randrange(1, SHORT_TTL_MS)
        r = rng.randrange(4)
        if r == 0:
            c.set(f"e:{rng.randrange(30)}", self.value(), px=ms)
        elif r == 1:
            k = f"eh:{rng.randrange(10)}"
            c.hset(k, "f", self.value())
            c.pexpire(k, ms)
        elif r == 2:
            c.set(f"e:{rng.randrange(30)}", self.value(), px=ms)
            c.get(f"e:{rng.randrange(30)}")
        else:
            c.psetex(f"e:{rng.randrange(30)}", ms, self.value())
        self.note_short(ms)

    def big(self, c):
        """Collections past the compact encodings' limits."""
        rng = self.rng
        kind = rng.choice("htlz")
        k = self.key(kind)
        if kind == "h":
            c.hset(k, mapping={f"f{i}": f"{i}" for i in range(rng.randrange(130, 300))})
        elif kind == "t":
            c.sadd(k, *range(rng.randrange(520, 800)))
        elif kind == "l":
            c.rpush(k, *[f"x{i}" for i in range(rng.randrange(130, 400))])
        else:
            c.zadd(k, {f"m{i}": i / 3 for i in range(rng.randrange(130, 300))})

    def multi(self, c):
        p = c.pipeline(transaction=True)
        for _ in range(self.rng.randrange(2, 6)):
            self.rng.choice([self.string, self.hash, self.set, self.list, self.zset, self.expire])(p)
        p.execute(raise_on_error=False)

    def blocking(self, c):
        """A blocking pop in another connection, served by a push from this one."""
        rng = self.rng
        r = rng.randrange(5)
        q = f"q:{rng.randrange(3)}"
        waiter = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=20)
        c.delete(q)
        cmds = [("BLPOP", q, 10), ("BRPOP", q, 10), ("BLMOVE", q, self.key("l"), "LEFT", "RIGHT", 10),
                ("BLMPOP", 10, 1, q, "LEFT", "COUNT", 2), ("BZPOPMIN", q, 10)]
        result = []
        t = threading.Thread(target=lambda: result.append(waiter.execute_command(*cmds[r])))
        blocked = c.info("clients")["blocked_clients"]
        t.start()
        deadline = time.time() + 10
        while c.info("clients")["blocked_clients"] <= blocked:
            assert time.time() < deadline, "the blocking pop never blocked"
            time.sleep(0.002)
        if r == 4:
            c.zadd(q, {"a": 1, "b": 2})
        else:
            c.rpush(q, "a", "b", "c")
        t.join(timeout=20)
        waiter.close()
        assert result and result[0], f"{cmds[r][0]} was not served"
        self.served_pops += 1


# --- the test -----------------------------------------------------------------------------------

def test_replay_aof_rdb_and_rewritten_aof_give_the_live_dataset(tmp_path):
    seed = int(os.environ.get("KEEL_REPLAY_SEED", random.randrange(1 << 32)))
    live_dir, aof_dir, rdb_dir = (tmp_path / n for n in ("live", "aof", "rdb"))
    for d in (live_dir, aof_dir, rdb_dir):
        d.mkdir()

    live = with_aof(str(live_dir))
    try:
        c = live.client(decode_responses=False)
        stream = Stream(live.port, seed)
        stream.run(N_OPS)
        stream.blocking(c)  # at least one of each kind of write is certain below
        stream.close()
        # Let every short TTL pass, so that no key expires between the dump and a restart.
        time.sleep(max(0.0, stream.short_deadline - time.time()))
        want = dump(live.port)

        # The run covered what it should (a seed that does not is a bug in the stream).
        kinds = {kind for table in want.values() for kind, _, _ in table.values()}
        assert kinds == {b"string", b"hash", b"set", b"list", b"zset"}, f"seed {seed}"
        assert len(want) >= 2, f"seed {seed}: only databases {sorted(want)}"
        assert any(e != -1 for t in want.values() for _, _, e in t.values()), f"seed {seed}: no TTLs"
        big = [k for t in want.values() for k, (kind, v, _) in t.items() if kind != b"string" and len(v) > 128]
        assert big, f"seed {seed}: no big collections"
        assert c.info("stats")["expired_keys"] > 0, f"seed {seed}: nothing expired during the run"

        c.save()
        shutil.copytree(live_dir / "appendonlydir", aof_dir / "appendonlydir")
        shutil.copy(live_dir / "dump.rdb", rdb_dir / "dump.rdb")
        rewrite_aof(c)
        assert_same(want, dump(live.port), f"seed {seed}: live, after BGREWRITEAOF")
        c.close()
    finally:
        live.stop()

    def reloaded(data_dir, *args):
        s = start(str(data_dir), *args)
        try:
            return dump(s.port)
        finally:
            s.stop()

    # (a) the AOF as written live, nothing else in the directory.
    assert_same(want, reloaded(aof_dir, "--appendonly", "yes"), f"seed {seed}: from the AOF")
    # (b) the snapshot alone.
    assert_same(want, reloaded(rdb_dir, "--appendonly", "no"), f"seed {seed}: from the RDB")
    # (c) the rewritten AOF (RDB preamble as base), without the snapshot beside it.
    os.remove(live_dir / "dump.rdb")
    assert aof_base(live_dir) != aof_base(aof_dir)
    assert aof_base(live_dir).endswith(".base.rdb")
    s = with_aof(str(live_dir))
    try:
        c = s.client(decode_responses=False)
        assert_same(want, dump(s.port), f"seed {seed}: from the rewritten AOF")
        # (d) rewritten again, as plain commands this time.
        c.config_set("aof-use-rdb-preamble", "no")
        rewrite_aof(c)
        c.close()
    finally:
        s.stop()
    assert aof_base(live_dir).endswith(".base.aof")
    assert_same(want, reloaded(live_dir, "--appendonly", "yes"),
                f"seed {seed}: from an AOF rewritten without the RDB preamble")

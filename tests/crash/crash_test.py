#!/usr/bin/env python3
"""Crash test for the append-only file: kill -9 the server under write load, restart it on the same
directory, and check that no acknowledged write was lost.

Each round, 50 connections (threads) send numbered writes (SET, INCR, HSET, SADD, RPUSH, ZADD, BF.ADD
when the server has Bloom filters, and MULTI/EXEC blocks mixing them), each on keys of its own, and
record every acknowledgement with the time it arrived. At a random moment the server is killed with
SIGKILL (some rounds start BGREWRITEAOF or BGSAVE first and let it finish, some kill while it runs),
restarted on the same directory, and every connection's keys are read back:

- a connection sends one write at a time, and the log is replayed in execution order, so what survived
  of a connection's writes must be a prefix of what it sent;
- a MULTI block is all or nothing;
- with `appendfsync always` every acknowledged write survives (only the one in flight may be missing);
- with `appendfsync everysec` every write acknowledged more than 2 s before the kill survives: the
  promise for a crash of the machine. A kill -9 of the process alone keeps the kernel's page cache,
  and a server that writes its log before it replies loses nothing then either:
  `--everysec-window 0` checks that (Keel; redis-server postpones its write while an fsync runs).

Keys of earlier rounds must still hold what was read back after their own round. The script prints a
line per round and exits non-zero on any loss or inconsistency.

    tests/crash/crash_test.py --server target/release/keel-server --fsync always --rounds 20

Works against Keel and against redis-server 7 (the kind is read from `--version`). Needs redis-py.
"""

import argparse
import dataclasses
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import redis

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_SERVER = os.path.join(ROOT, "target", "release", "keel-server")
EVERYSEC_WINDOW_S = 2.0
TRIGGERS = ["none", "none", "rewrite-before", "rewrite-during", "bgsave-before", "bgsave-during"]
# Relative frequency of each kind of write.
KINDS = [("set", 3), ("incr", 3), ("hset", 3), ("sadd", 3), ("rpush", 3), ("zadd", 3), ("bf", 2),
         ("multi", 2)]


# --- the server process -------------------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def detect_kind(server):
    """'keel' or 'redis', from what the binary prints for --version."""
    out = subprocess.run([server, "--version"], capture_output=True, text=True, timeout=10).stdout
    if out.startswith("Redis server"):
        return "redis"
    if "keel" in out.lower():
        return "keel"
    raise RuntimeError(f"cannot tell which server {server} is from its --version: {out!r}")


class ServerProcess:
    """One run of the server on a data directory; the log goes to a file beside it."""

    def __init__(self, server, data_dir, args, log_path):
        self.port = free_port()
        self.log_path = log_path
        self.args = [server, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", data_dir,
                     "--daemonize", "no", *args]
        self.log = open(log_path, "ab")
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)

    @property
    def pid(self):
        return self.proc.pid

    def exited(self):
        return self.proc.poll() is not None

    def wait_ready(self, timeout=60.0):
        """Wait until it accepts connections and has finished loading; False if it exited."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.exited():
                return False
            try:
                c = self.client(socket_timeout=2)
                try:
                    c.ping()
                    return True
                finally:
                    c.close()
            except redis.BusyLoadingError:
                pass
            except (redis.ConnectionError, OSError):
                pass
            time.sleep(0.02)
        raise RuntimeError(f"server did not become ready within {timeout}s: {self.args}")

    def client(self, **kw):
        return redis.Redis(host="127.0.0.1", port=self.port, **kw)

    def log_tail(self, lines=30):
        try:
            with open(self.log_path, "rb") as f:
                return "\n".join(f.read().decode(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def children(self):
        """Processes the server forked (a rewrite or snapshot child), to be killed with it."""
        pids = set()
        try:
            for tid in os.listdir(f"/proc/{self.pid}/task"):
                with open(f"/proc/{self.pid}/task/{tid}/children") as f:
                    pids.update(int(p) for p in f.read().split())
        except OSError:
            pass
        return sorted(pids)

    def kill9(self):
        """SIGKILL the server and any child it has; returns how many children there were."""
        children = self.children()
        if not self.exited():
            os.kill(self.pid, signal.SIGKILL)
        for child in children:
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        self.log.close()
        return len(children)

    def stop(self):
        if not self.exited():
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill9()
        self.proc.wait()
        self.log.close()


def aof_args(fsync):
    return ["--save", "", "--appendonly", "yes", "--appendfsync", fsync]


def persistence_refused(server):
    """Why the server refuses to start with the AOF on, or None if it starts.

    Decided by trying it, so that the answer changes by itself once the server serves persistence."""
    data_dir = tempfile.mkdtemp(prefix="keel-aof-probe-")
    try:
        s = ServerProcess(server, data_dir, aof_args("always"), os.path.join(data_dir, "log"))
        try:
            if s.wait_ready(timeout=20):
                return None
            return s.log_tail() or f"exited with status {s.proc.returncode}"
        finally:
            s.stop()
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def has_bloom(port):
    """Whether the server knows BF.ADD (COMMAND INFO answers nil for a command it does not know)."""
    conn = redis.Connection(host="127.0.0.1", port=port, socket_timeout=10)
    try:
        conn.send_command("COMMAND", "INFO", "bf.add")
        return conn.read_response() not in ([], [None])
    finally:
        conn.disconnect()


# --- the writers --------------------------------------------------------------------------------

@dataclasses.dataclass
class Op:
    n: int
    kind: str
    value: bytes = b""
    status: str = "unsent"  # unsent, unknown (sent, no reply), acked, error
    acked_at: float = 0.0
    error: str = ""


def keys_of(prefix):
    names = ["str", "ctr", "h", "s", "l", "z", "bf", "m:ctr", "m:str", "m:l", "m:h", "m:s", "m:z", "m:bf"]
    return {name: f"{prefix}{name}" for name in names}


def commands_for(op, keys, bloom):
    n = op.n
    if op.kind == "set":
        return [("SET", keys["str"], op.value)]
    if op.kind == "incr":
        return [("INCR", keys["ctr"])]
    if op.kind == "hset":
        return [("HSET", keys["h"], f"f{n}", f"v{n}")]
    if op.kind == "sadd":
        return [("SADD", keys["s"], f"m{n}")]
    if op.kind == "rpush":
        return [("RPUSH", keys["l"], f"e{n}")]
    if op.kind == "zadd":
        return [("ZADD", keys["z"], n, f"m{n}")]
    if op.kind == "bf":
        return [("BF.ADD", keys["bf"], f"i{n}")]
    b = f"b{n}"
    block = [("INCR", keys["m:ctr"]), ("SET", keys["m:str"], b), ("RPUSH", keys["m:l"], b),
             ("HSET", keys["m:h"], b, n), ("SADD", keys["m:s"], b), ("ZADD", keys["m:z"], n, b)]
    if bloom:
        block.append(("BF.ADD", keys["m:bf"], b))
    return [("MULTI",), *block, ("EXEC",)]


class Writer(threading.Thread):
    """One connection sending numbered writes, one at a time, until the connection breaks."""

    def __init__(self, port, prefix, seed, bloom):
        super().__init__(daemon=True)
        self.port, self.keys, self.bloom = port, keys_of(prefix), bloom
        self.rng = random.Random(seed)
        self.ops = []
        self.stop_flag = False
        kinds = [(k, w) for k, w in KINDS if bloom or k != "bf"]
        self.kind_names = [k for k, _ in kinds]
        self.kind_weights = [w for _, w in kinds]

    def next_op(self, n):
        kind = self.rng.choices(self.kind_names, self.kind_weights)[0]
        value = b""
        if kind == "set":
            # Mostly short values, sometimes long ones.
            pad = self.rng.choice([0, 0, 0, 10, 100, 5000])
            value = f"v{n}.".encode() + b"x" * pad
        return Op(n, kind, value)

    def run(self):
        try:
            conn = redis.Connection(host="127.0.0.1", port=self.port, socket_timeout=60)
            conn.connect()
        except (redis.ConnectionError, OSError):
            return
        try:
            n = 0
            while not self.stop_flag:
                op = self.next_op(n)
                self.ops.append(op)
                cmds = commands_for(op, self.keys, self.bloom)
                try:
                    op.status = "unknown"
                    conn.send_packed_command(conn.pack_commands(cmds))
                    replies = [conn.read_response() for _ in cmds]
                except redis.ResponseError as e:
                    op.status, op.error = "error", str(e)
                    return
                except (redis.ConnectionError, redis.TimeoutError, OSError):
                    return
                bad = [r for r in (replies[-1] if op.kind == "multi" else replies)
                       if isinstance(r, Exception)]
                if op.kind == "multi" and not isinstance(replies[-1], list):
                    bad.append(f"EXEC replied {replies[-1]!r}")
                if bad:
                    op.status, op.error = "error", str(bad[0])
                    return
                op.status, op.acked_at = "acked", time.monotonic()
                n += 1
        finally:
            conn.disconnect()


# --- reading back and judging -------------------------------------------------------------------

def read_state(client, keys, ops, bloom):
    """What the server holds for one connection's keys, as plain Python values."""
    bf_items = [f"i{op.n}" for op in ops if op.kind == "bf"]
    mbf_items = [f"b{op.n}" for op in ops if op.kind == "multi"]
    p = client.pipeline(transaction=False)
    p.get(keys["str"]).get(keys["ctr"]).hgetall(keys["h"]).smembers(keys["s"])
    p.lrange(keys["l"], 0, -1).zrange(keys["z"], 0, -1, withscores=True)
    p.get(keys["m:ctr"]).get(keys["m:str"]).lrange(keys["m:l"], 0, -1).hgetall(keys["m:h"])
    p.smembers(keys["m:s"]).zrange(keys["m:z"], 0, -1, withscores=True)
    if bloom and bf_items:
        p.execute_command("BF.MEXISTS", keys["bf"], *bf_items)
    if bloom and mbf_items:
        p.execute_command("BF.MEXISTS", keys["m:bf"], *mbf_items)
    p.exists(*keys.values())
    out = p.execute(raise_on_error=True)
    existing = out.pop()
    state = dict(zip(["str", "ctr", "h", "s", "l", "z", "m:ctr", "m:str", "m:l", "m:h", "m:s", "m:z"],
                     out[:12]))
    rest = out[12:]
    state["bf"] = dict(zip(bf_items, rest.pop(0))) if bloom and bf_items else {}
    state["m:bf"] = dict(zip(mbf_items, rest.pop(0))) if bloom and mbf_items else {}
    state["keys"] = existing
    return state


class Evidence:
    """For each op: whether what was read back shows it applied (True) or not applied (False)."""

    def __init__(self):
        self.seen = {}
        self.problems = []

    def mark(self, n, applied, how):
        self.seen.setdefault(n, {})[how] = applied

    def sequence(self, ops, found, how):
        """found: how many of ops (in order) took effect; the first `found` did, the rest did not."""
        if found > len(ops):
            self.problems.append(f"{how}: {found} applied but only {len(ops)} sent")
        for i, op in enumerate(ops):
            self.mark(op.n, i < found, how)

    def members(self, ops, present, name_of, how, check=None):
        """ops each add one named member; present maps what was read back to its value (a field's
        value, a score; None for a set), which check(op, value) judges."""
        names = {name_of(op): op for op in ops}
        for member in present:
            if member not in names:
                self.problems.append(f"{how}: unexpected member {member!r}")
        for name, op in names.items():
            self.mark(op.n, name in present, how)
            if name in present and check and not check(op, present[name]):
                self.problems.append(f"{how}: wrong value for {name!r}: {present[name]!r}")

    def last_writer(self, ops, value, expected, how):
        """A key each op overwrites: the value names the last op applied; later ones were not."""
        if value is None:
            for op in ops:
                self.mark(op.n, False, how)
            return
        matches = [i for i, op in enumerate(ops) if expected(op) == value]
        if not matches:
            self.problems.append(f"{how}: value {value[:40]!r} was never written")
            return
        last = matches[-1]
        self.mark(ops[last].n, True, how)
        for op in ops[last + 1:]:
            self.mark(op.n, False, how)


def judge(ops, state, bloom):
    """Evidence about which of one connection's ops survived."""
    ev = Evidence()
    by_kind = {}
    for op in ops:
        if op.status in ("acked", "unknown", "error"):
            by_kind.setdefault(op.kind, []).append(op)
    get = by_kind.get
    ev.last_writer(get("set", []), state["str"], lambda op: op.value, "SET")
    ev.sequence(get("incr", []), int(state["ctr"] or 0), "INCR")
    ev.members(get("hset", []), state["h"], lambda op: f"f{op.n}".encode(), "HSET",
               lambda op, v: v == f"v{op.n}".encode())
    ev.members(get("sadd", []), dict.fromkeys(state["s"]), lambda op: f"m{op.n}".encode(), "SADD")
    pushed = [f"e{op.n}".encode() for op in get("rpush", [])]
    if state["l"] != pushed[:len(state["l"])]:
        ev.problems.append(f"RPUSH: list is not a prefix of what was pushed: {state['l'][:10]!r}...")
    ev.sequence(get("rpush", []), len(state["l"]), "RPUSH")
    ev.members(get("zadd", []), dict(state["z"]), lambda op: f"m{op.n}".encode(), "ZADD",
               lambda op, score: score == op.n)
    if bloom:
        for op in get("bf", []):
            if not state["bf"].get(f"i{op.n}", 0):
                ev.mark(op.n, False, "BF.ADD")
    # A MULTI block is one op: each of its parts is a witness, and all must agree.
    blocks = get("multi", [])
    ev.sequence(blocks, int(state["m:ctr"] or 0), "MULTI/INCR")
    ev.last_writer(blocks, state["m:str"], lambda op: f"b{op.n}".encode(), "MULTI/SET")
    mpushed = [f"b{op.n}".encode() for op in blocks]
    if state["m:l"] != mpushed[:len(state["m:l"])]:
        ev.problems.append(f"MULTI/RPUSH: list is not a prefix of what was pushed: {state['m:l'][:10]!r}")
    ev.sequence(blocks, len(state["m:l"]), "MULTI/RPUSH")
    ev.members(blocks, state["m:h"], lambda op: f"b{op.n}".encode(), "MULTI/HSET",
               lambda op, v: v == str(op.n).encode())
    ev.members(blocks, dict.fromkeys(state["m:s"]), lambda op: f"b{op.n}".encode(), "MULTI/SADD")
    ev.members(blocks, dict(state["m:z"]), lambda op: f"b{op.n}".encode(), "MULTI/ZADD",
               lambda op, score: score == op.n)
    if bloom:
        for op in blocks:
            if not state["m:bf"].get(f"b{op.n}", 0):
                ev.mark(op.n, False, "MULTI/BF.ADD")
    return ev


@dataclasses.dataclass
class ConnResult:
    acked: int = 0
    in_flight: int = 0
    in_flight_applied: int = 0
    late_lost: int = 0  # everysec: acknowledged within the window before the kill, not there
    problems: list = dataclasses.field(default_factory=list)


def check_connection(ops, ev, fsync, kill_at, window=EVERYSEC_WINDOW_S):
    res = ConnResult(problems=list(ev.problems))
    applied, missing = set(), set()
    for n, witnesses in sorted(ev.seen.items()):
        values = set(witnesses.values())
        if len(values) > 1:
            parts = ", ".join(f"{how}={'yes' if v else 'no'}" for how, v in sorted(witnesses.items()))
            what = "MULTI block" if ops[n].kind == "multi" else ops[n].kind
            res.problems.append(f"{what} #{n} partly applied ({parts})")
            continue
        (applied if values.pop() else missing).add(n)
    if applied and missing and max(applied) > min(missing):
        res.problems.append(f"not a prefix: #{max(applied)} ({ops[max(applied)].kind}) survived but "
                            f"earlier #{min(missing)} ({ops[min(missing)].kind}) did not")
    for op in ops:
        if op.status == "error":
            res.problems.append(f"#{op.n} {op.kind} got an error reply: {op.error}")
        elif op.status == "unknown":
            res.in_flight += 1
            res.in_flight_applied += op.n in applied
        elif op.status == "acked":
            res.acked += 1
            if op.n in missing:
                if fsync == "always" or op.acked_at < kill_at - window:
                    age = kill_at - op.acked_at
                    res.problems.append(f"LOST: #{op.n} {op.kind} acknowledged {age:.3f}s before the "
                                        f"kill is missing")
                else:
                    res.late_lost += 1
    return res


# --- rounds -------------------------------------------------------------------------------------

def info_persistence(client):
    try:
        return client.info("persistence")
    except (redis.RedisError, OSError):
        return {}


def wait_background_done(client, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = info_persistence(client)
        busy = [info.get(f, 0) for f in ("aof_rewrite_in_progress", "aof_rewrite_scheduled",
                                         "rdb_bgsave_in_progress")]
        if not any(busy):
            return True
        time.sleep(0.02)
    return False


@dataclasses.dataclass
class RoundReport:
    round: int
    trigger: str
    ran_s: float
    acked: int
    in_flight: int
    in_flight_applied: int
    late_lost: int
    children_killed: int
    problems: list

    def line(self):
        status = "ok" if not self.problems else f"FAIL ({len(self.problems)} problems)"
        return (f"round {self.round:2}: {self.trigger:14} killed after {self.ran_s:5.2f}s; "
                f"{self.acked} acked, {self.in_flight} in flight ({self.in_flight_applied} applied), "
                f"{self.late_lost} recent lost (allowed), children killed: {self.children_killed}: {status}")


class CrashTest:
    def __init__(self, server, fsync="always", rounds=20, seconds_per_round=3.0, seed=None,
                 connections=50, bloom=None, kind=None, out=print, keep_dir=None, server_args=None,
                 everysec_window=EVERYSEC_WINDOW_S):
        self.server = server
        self.everysec_window = everysec_window
        # The flags each start gets; only a test of this script itself passes others.
        self.server_args = aof_args(fsync) if server_args is None else server_args
        self.kind = kind or detect_kind(server)
        self.fsync = fsync
        self.rounds = rounds
        self.seconds = seconds_per_round
        self.seed = random.randrange(1 << 32) if seed is None else seed
        self.rng = random.Random(self.seed)
        self.connections = connections
        self.bloom = bloom
        self.out = out
        self.keep_dir = keep_dir
        self.dir = tempfile.mkdtemp(prefix="keel-crash-")
        self.data_dir = os.path.join(self.dir, "data")
        os.mkdir(self.data_dir)
        self.starts = 0
        self.frozen = {}  # round -> {conn: state read back after that round}
        self.writers_of = {}  # round -> writers

    def start(self):
        self.starts += 1
        s = ServerProcess(self.server, self.data_dir, self.server_args,
                          os.path.join(self.dir, f"server-{self.starts}.log"))
        # The current process, which run() stops whatever happens.
        self.current = s
        if not s.wait_ready():
            raise RuntimeError(f"server exited at start {self.starts} "
                               f"(status {s.proc.returncode}):\n{s.log_tail()}")
        return s

    def run(self):
        """Runs every round; returns the list of RoundReports (a failed start raises)."""
        self.out(f"crash test: {self.kind} {self.server}, appendfsync {self.fsync}, {self.rounds} rounds, "
                 f"{self.seconds}s each, {self.connections} connections, seed {self.seed}, dir {self.dir}")
        reports = []
        self.current = None
        finished = False
        try:
            server = self.start()
            if self.bloom is None:
                self.bloom = has_bloom(server.port)
            self.out(f"BF.ADD writes: {'on' if self.bloom else 'off'}")
            for rnd in range(1, self.rounds + 1):
                server, report = self.round(server, rnd)
                reports.append(report)
                self.out(report.line())
                for p in report.problems[:20]:
                    self.out(f"    {p}")
                if len(report.problems) > 20:
                    self.out(f"    ... and {len(report.problems) - 20} more")
            finished = True
        finally:
            if self.current:
                self.current.stop()
            failed = not finished or any(r.problems for r in reports)
            # By default the directory is kept for a failed run, to look into.
            if self.keep_dir or (self.keep_dir is None and failed):
                self.out(f"data and logs kept in {self.dir}")
            else:
                shutil.rmtree(self.dir, ignore_errors=True)
        return reports

    def round(self, server, rnd):
        writers = [Writer(server.port, f"crash:r{rnd}:c{i}:", self.rng.randrange(1 << 32), self.bloom)
                   for i in range(self.connections)]
        trigger = self.rng.choice(TRIGGERS)
        run_for = self.rng.uniform(0.2, self.seconds)
        control = server.client(socket_timeout=30)
        started = time.monotonic()
        for w in writers:
            w.start()
        command = "BGREWRITEAOF" if trigger.startswith("rewrite") else "BGSAVE"
        if trigger.endswith("-before"):
            time.sleep(run_for * self.rng.uniform(0.2, 0.8))
            self.background(control, command)
            wait_background_done(control)
            time.sleep(max(0.0, started + run_for - time.monotonic()))
        elif trigger.endswith("-during"):
            time.sleep(run_for)
            self.background(control, command)
            time.sleep(self.rng.uniform(0.0, 0.03))
        else:
            time.sleep(run_for)
        kill_at = time.monotonic()
        children = server.kill9()
        ran = kill_at - started
        control.close()
        for w in writers:
            w.stop_flag = True
            w.join(timeout=60)
        server = self.start()
        problems = []
        totals = ConnResult()
        client = server.client(socket_timeout=60)
        try:
            states = {}
            for i, w in enumerate(writers):
                state = read_state(client, w.keys, w.ops, self.bloom)
                states[i] = state
                res = check_connection(w.ops, judge(w.ops, state, self.bloom), self.fsync, kill_at,
                                       self.everysec_window)
                problems.extend(f"connection {i}: {p}" for p in res.problems)
                totals.acked += res.acked
                totals.in_flight += res.in_flight
                totals.in_flight_applied += res.in_flight_applied
                totals.late_lost += res.late_lost
            # Earlier rounds' keys must hold what they held after their own round.
            for old, old_states in self.frozen.items():
                for i, w in enumerate(self.writers_of[old]):
                    now = read_state(client, w.keys, w.ops, self.bloom)
                    if now != old_states[i]:
                        problems.append(f"keys of round {old}, connection {i} changed since that round")
            self.frozen[rnd] = states
            self.writers_of[rnd] = writers
            # No key came back that no connection wrote.
            ours = sum(st["keys"] for round_states in self.frozen.values() for st in round_states.values())
            dbsize = client.dbsize()
            if dbsize != ours:
                problems.append(f"{dbsize} keys after the restart, but the writers' keys are {ours}")
        finally:
            client.close()
        return server, RoundReport(rnd, trigger, ran, totals.acked, totals.in_flight,
                                   totals.in_flight_applied, totals.late_lost, children, problems)

    @staticmethod
    def background(client, command):
        try:
            client.execute_command(command)
        except redis.ResponseError:
            pass  # one already running: the round still exercises it


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", default=DEFAULT_SERVER, help="server binary (keel-server or redis-server)")
    ap.add_argument("--kind", choices=["keel", "redis"], help="server kind (default: from --version)")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--seconds-per-round", type=float, default=3.0,
                    help="longest time the writers run before the kill (each round picks a random time)")
    ap.add_argument("--fsync", choices=["always", "everysec"], default="always")
    ap.add_argument("--everysec-window", type=float, default=EVERYSEC_WINDOW_S,
                    help="with --fsync everysec, how long before the kill an acknowledged write may "
                         "be lost (0: none may)")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--connections", type=int, default=50)
    ap.add_argument("--bloom", choices=["auto", "on", "off"], default="auto",
                    help="BF.ADD writes (auto: when COMMAND INFO knows bf.add)")
    ap.add_argument("--keep-dir", action="store_true", default=None,
                    help="keep the data directory and logs (kept anyway when a round fails)")
    a = ap.parse_args(argv)
    server = shutil.which(a.server) or a.server
    refused = persistence_refused(server)
    if refused:
        print(f"{server} refuses to start with appendonly yes:\n{refused}", file=sys.stderr)
        return 2
    bloom = {"auto": None, "on": True, "off": False}[a.bloom]
    test = CrashTest(server, a.fsync, a.rounds, a.seconds_per_round, a.seed, a.connections, bloom,
                     a.kind, keep_dir=a.keep_dir, everysec_window=a.everysec_window)
    try:
        reports = test.run()
    except (RuntimeError, redis.RedisError) as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    failed = [r.round for r in reports if r.problems]
    print(f"{len(reports)} rounds, {sum(r.acked for r in reports)} acknowledged writes checked: "
          + (f"FAILED in rounds {failed}" if failed else "no loss"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

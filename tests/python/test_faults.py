"""Disk faults met as Redis meets them: each scenario runs against Debian's
redis-server and keel-server side by side and expects the same observable
behaviour (replies, INFO, recovery, nothing acknowledged lost).

A full disk is a tmpfs of a fixed size (the tests mount one, so they need
root; without it they skip and say why). Other faults come from the
`tests/faults/faultfs.c` shim, built here with the system compiler and
loaded with LD_PRELOAD: it fails writes or fsyncs of files under a directory
with a chosen errno while the server runs.
"""

import contextlib
import mmap
import os
import shutil
import struct
import subprocess
import tempfile
import time

import pytest
import redis

from conftest import BINARY, REDIS_SERVER, free_port

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHIM_SRC = os.path.join(ROOT, "tests", "faults", "faultfs.c")
ENOSPC_TEXT = "MISCONF Errors writing to the AOF file: No space left on device"
EIO_TEXT = "MISCONF Errors writing to the AOF file: Input/output error"
EIO = 5

SERVERS = ["redis", "keel"]


@contextlib.contextmanager
def tmpfs(size):
    """A tmpfs of `size` bytes mounted on a fresh directory."""
    d = tempfile.mkdtemp(prefix="keel-faults-")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", d],
                       capture_output=True, text=True)
    if r.returncode != 0:
        os.rmdir(d)
        pytest.skip(f"cannot mount a tmpfs here (needs root): {r.stderr.strip()}")
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", d], capture_output=True)
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    """The faultfs shim, compiled for this run."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler to build the faultfs shim")
    out = str(tmp_path_factory.mktemp("faultfs") / "faultfs.so")
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", out, SHIM_SRC, "-ldl"], check=True)
    return out


class Control:
    """The shim's shared control block (see faultfs.c for the layout)."""

    def __init__(self, path, watched_dir):
        with open(path, "wb") as f:
            f.write(b"\0" * 256)
        self.f = open(path, "r+b")
        self.m = mmap.mmap(self.f.fileno(), 256)
        d = os.path.realpath(watched_dir).encode() + b"/"
        assert len(d) < 224, d
        self.m[16:16 + len(d)] = d

    def kill_at(self, n):
        """Kill the server's process group just before its n-th file
        operation from now."""
        self.m[244:248] = struct.pack("=i", 0)
        self.m[240:244] = struct.pack("=i", n)

    def ops(self):
        return struct.unpack("=i", self.m[244:248])[0]

    def set(self, write_errno=None, fsync_errno=None, fsync_delay_us=None):
        for off, v in ((0, write_errno), (4, fsync_errno), (8, fsync_delay_us)):
            if v is not None:
                self.m[off:off + 4] = struct.pack("=i", v)

    def close(self):
        self.m.close()
        self.f.close()


class Proc:
    """redis-server or keel-server with its data in `d`, logging to a file."""

    def __init__(self, kind, d, *args, env=None, port=None):
        self.kind, self.dir, self.port = kind, d, port or free_port()
        self.log = os.path.join(tempfile.mkdtemp(prefix="keel-faults-log-"), "server.log")
        exe = REDIS_SERVER if kind == "redis" else BINARY
        self.args = [exe, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", d,
                     "--logfile", self.log, *args]
        # A session of its own: the shim may kill the server's process group.
        self.proc = subprocess.Popen(self.args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     env={**os.environ, **(env or {})}, start_new_session=True)
        self.r = redis.Redis(host="127.0.0.1", port=self.port, decode_responses=True,
                             socket_timeout=10)
        deadline = time.time() + 10
        while True:
            try:
                self.r.ping()
                return
            except redis.ConnectionError:
                if self.proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"{kind} did not start:\n{self.log_text()}")
                time.sleep(0.02)
            except redis.ResponseError:
                return

    def log_text(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.r.close()


def attempt(r, *args):
    try:
        return r.execute_command(*args)
    except redis.ResponseError as e:
        return f"ERR:{e}"


def fill_until_refused(r, limit=20000):
    """SET 1 KB values until a write is refused: (acknowledged keys, error)."""
    acked = []
    for i in range(limit):
        try:
            r.set(f"k{i}", "v" * 1000)
            acked.append(f"k{i}")
        except redis.ResponseError as e:
            return acked, str(e)
    return acked, None


def wait_writable(r, seconds):
    """Seconds until a SET is accepted again, or None."""
    t = time.time()
    while time.time() - t < seconds:
        try:
            r.set("after", "1")
            return time.time() - t
        except redis.ResponseError:
            time.sleep(0.02)
    return None


def observed_while_failing(r):
    """What a client sees while the AOF cannot be written."""
    seen = {
        "ping": attempt(r, "PING"),
        "get": attempt(r, "GET", "k0") is not None,
        "del": attempt(r, "DEL", "k1"),
        "incr": attempt(r, "INCR", "n"),
        "publish": attempt(r, "PUBLISH", "c", "m"),
        "eval_read": attempt(r, "EVAL", "return redis.call('get','k0') ~= nil and 1 or 0", "0"),
        "eval_ro": attempt(r, "EVAL_RO", "return 1", "0"),
        "aof_last_write_status": r.info("persistence")["aof_last_write_status"],
    }
    w = attempt(r, "EVAL", "return redis.call('set','x','1')", "0")
    seen["eval_write"] = w.split(" script:")[0]
    # A script that declares flags and may write is refused before it runs.
    seen["shebang"] = attempt(r, "EVAL", "#!lua\nreturn 1", "0")
    seen["shebang_no_writes"] = attempt(r, "EVAL", "#!lua flags=no-writes\nreturn 1", "0")
    seen["shebang_ro"] = attempt(r, "EVAL_RO", "#!lua\nreturn 1", "0")
    # A write queued in MULTI is refused and makes EXEC abort.
    seen["multi"] = attempt(r, "MULTI")
    seen["multi_set"] = attempt(r, "SET", "a", "1")
    seen["multi_get"] = attempt(r, "GET", "a")
    seen["exec"] = attempt(r, "EXEC")
    return seen


@pytest.mark.parametrize("policy", ["everysec", "no"])
def test_full_disk_refuses_writes_serves_reads_and_recovers(policy):
    results = {}
    for kind in SERVERS:
        with tmpfs("4m") as d:
            ballast = os.path.join(d, "ballast")
            with open(ballast, "wb") as f:
                f.write(b"x" * (1 << 20))
            s = Proc(kind, d, "--appendonly", "yes", "--appendfsync", policy, "--save", "")
            try:
                acked, first = fill_until_refused(s.r)
                dbsize = s.r.dbsize()
                seen = observed_while_failing(s.r)
                os.remove(ballast)
                recovered = wait_writable(s.r, 5)
                status = s.r.info("persistence")["aof_last_write_status"]
            finally:
                s.stop()
            log = s.log_text()
            # Restart from the same files: every acknowledged write is there.
            s = Proc(kind, d, "--appendonly", "yes", "--save", "")
            try:
                present = sum(s.r.exists(*acked[i:i + 500]) for i in range(0, len(acked), 500))
                after = s.r.get("after")
            finally:
                s.stop()
            results[kind] = dict(first=first, dbsize_is_acked=dbsize == len(acked), seen=seen,
                                 recovered=recovered, status=status, lost=len(acked) - present,
                                 after=after, log=log)
    for kind, res in results.items():
        assert res["first"] == ENOSPC_TEXT, kind
        assert res["dbsize_is_acked"], kind
        assert res["recovered"] is not None and res["recovered"] < 2.0, (kind, res["recovered"])
        assert res["status"] == "ok", kind
        assert res["lost"] == 0, kind
        assert res["after"] == "1", kind
        assert "Error writing to the AOF file: No space left on device" in res["log"] or \
            "Short write while writing to the AOF file" in res["log"], kind
    assert results["keel"]["seen"] == results["redis"]["seen"]
    seen = results["keel"]["seen"]
    assert seen["ping"] == "ERR:" + ENOSPC_TEXT
    assert seen["get"] is True
    assert seen["aof_last_write_status"] == "err"
    assert seen["multi_set"] == "ERR:" + ENOSPC_TEXT
    assert seen["exec"] == "ERR:Transaction discarded because of previous errors."


def run_with_shim(kind, shim, d, policy):
    """A server on `d` with the shim loaded, and the shim's control block."""
    ctl = Control(os.path.join(d, "..", f"ctl-{kind}-{os.getpid()}"), d)
    s = Proc(kind, d, "--appendonly", "yes", "--appendfsync", policy, "--save", "",
             env={"LD_PRELOAD": shim, "FAULTFS_CTL": ctl.f.name})
    return s, ctl


@pytest.mark.parametrize("policy", ["everysec", "no"])
def test_eio_on_write_refuses_writes_until_the_disk_works(shim, policy, tmp_path):
    results = {}
    for kind in SERVERS:
        d = str(tmp_path / kind)
        os.makedirs(d)
        s, ctl = run_with_shim(kind, shim, d, policy)
        try:
            assert s.r.set("before", "1")
            ctl.set(write_errno=EIO)
            # The failing write may be this one's (the next sees it), or
            # later: Redis holds its write back for up to 2 s while a
            # background fsync runs under `everysec`.
            first, i, deadline = True, 0, time.time() + 5
            while first is True and time.time() < deadline:
                first = attempt(s.r, "SET", f"k{i}", "v")
                i += 1
                if first is True:
                    time.sleep(0.01)
            ping = attempt(s.r, "PING")
            read = attempt(s.r, "GET", "before")
            status = s.r.info("persistence")["aof_last_write_status"]
            ctl.set(write_errno=0)
            recovered = wait_writable(s.r, 5)
        finally:
            s.stop()
            ctl.close()
        results[kind] = (first, ping, read, status, recovered is not None and recovered < 2.0)
    assert results["keel"] == results["redis"]
    assert results["keel"] == ("ERR:" + EIO_TEXT, "ERR:" + EIO_TEXT, "1", "err", True)


@pytest.mark.parametrize("fault", ["write", "fsync"])
def test_an_error_under_always_exits(shim, tmp_path, fault):
    codes = {}
    for kind in SERVERS:
        d = str(tmp_path / kind)
        os.makedirs(d)
        s, ctl = run_with_shim(kind, shim, d, "always")
        try:
            assert s.r.set("before", "1")
            ctl.set(**{f"{fault}_errno": EIO})
            with pytest.raises(redis.ConnectionError):
                s.r.set("k", "v")
            codes[kind] = s.proc.wait(timeout=10)
            if fault == "write":
                assert "Can't recover from AOF write error when the AOF fsync policy is " \
                    "'always'" in s.log_text(), kind
        finally:
            s.stop()
            ctl.close()
    assert codes == {"redis": 1, "keel": 1}


def test_fsync_error_under_everysec_refuses_writes_until_one_succeeds(shim, tmp_path):
    results = {}
    for kind in SERVERS:
        d = str(tmp_path / kind)
        os.makedirs(d)
        s, ctl = run_with_shim(kind, shim, d, "everysec")
        try:
            ctl.set(fsync_errno=EIO)
            refused = None
            deadline = time.time() + 5
            i = 0
            while time.time() < deadline:
                got = attempt(s.r, "SET", f"k{i}", "v")
                i += 1
                if got is not True:
                    refused = got
                    break
                time.sleep(0.05)
            ping = attempt(s.r, "PING")
            read = attempt(s.r, "GET", "k0")
            ctl.set(fsync_errno=0)
            recovered = wait_writable(s.r, 10 if kind == "redis" else 5)
        finally:
            s.stop()
            ctl.close()
        results[kind] = (refused, ping, read, recovered)
    assert results["keel"][:3] == results["redis"][:3]
    assert results["keel"][:3] == ("ERR:" + EIO_TEXT, "ERR:" + EIO_TEXT, "v")
    # Redis 7.0 tries no fsync while it refuses every write, so it stays
    # refusing after the disk recovers; Keel retries the fsync each second.
    assert results["redis"][3] is None
    assert results["keel"][3] is not None and results["keel"][3] < 2.5


RDB_MISCONF = ("MISCONF Redis is configured to save RDB snapshots, but it's currently unable to "
               "persist to disk. Commands that may modify the data set are disabled, because this "
               "instance is configured to report errors during writes if RDB snapshotting fails "
               "(stop-writes-on-bgsave-error option). Please check the Redis logs for details "
               "about the RDB error.")


def fill_disk(d):
    """Take every free byte of the tmpfs at `d` with a file; returns its path."""
    ballast = os.path.join(d, "ballast")
    with open(ballast, "wb") as f:
        try:
            while True:
                f.write(b"x" * (1 << 16))
                f.flush()
        except OSError:
            pass
    return ballast


def wait_info(r, field, value, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if str(r.info("persistence")[field]) == value:
            return True
        time.sleep(0.05)
    return False


def test_snapshot_rewrite_and_shutdown_on_a_full_disk():
    results = {}
    for kind in SERVERS:
        with tmpfs("4m") as d:
            s = Proc(kind, d, "--appendonly", "no", "--save", "3600 1")
            try:
                for i in range(1000):
                    s.r.set(f"k{i}", os.urandom(500).hex())
                ballast = fill_disk(d)
                res = {"bgsave": attempt(s.r, "BGSAVE")}
                res["bgsave_failed"] = wait_info(s.r, "rdb_last_bgsave_status", "err", 5)
                res["set"] = attempt(s.r, "SET", "x", "1")
                res["ping"] = attempt(s.r, "PING")
                res["get"] = attempt(s.r, "GET", "k0") is not None
                res["save"] = attempt(s.r, "SAVE")
                res["config_set"] = attempt(s.r, "CONFIG", "SET", "appendonly", "yes")
                res["rewrite_failed"] = wait_info(s.r, "aof_last_bgrewrite_status", "err", 5)
                aofdir = os.path.join(d, "appendonlydir")
                # Nothing half-written is left where a start would take it.
                res["files"] = sorted(f for f in os.listdir(d) if f != "appendonlydir")
                res["manifest"] = os.path.exists(os.path.join(aofdir, "appendonly.aof.manifest"))
                res["shutdown"] = attempt(s.r, "SHUTDOWN")
                res["alive"] = s.proc.poll() is None
                os.remove(ballast)
                res["writable_after"] = wait_writable(s.r, 3)
                res["rewrite_recovered"] = wait_info(s.r, "aof_last_bgrewrite_status", "ok", 7)
            finally:
                s.stop()
            res["log"] = s.log_text()
            results[kind] = res
    for kind, res in results.items():
        assert res["bgsave"] is True and res["bgsave_failed"], kind
        assert res["set"] == "ERR:" + RDB_MISCONF, kind
        assert res["ping"] == "ERR:" + RDB_MISCONF, kind
        assert res["get"], kind
        assert res["save"] == "ERR:", kind
        assert res["config_set"] == "OK" and res["rewrite_failed"], kind
        assert res["files"] == ["ballast"], kind
        assert not res["manifest"], kind
        assert res["shutdown"] == "ERR:Errors trying to SHUTDOWN. Check logs.", kind
        assert res["alive"], kind
        assert "Write error saving DB on disk" in res["log"], kind
    # Redis waits for its next save point (an hour here) before it saves again,
    # so it keeps refusing writes; Keel retries the save every second.
    assert results["redis"]["writable_after"] is None
    assert results["keel"]["writable_after"] is not None
    assert results["keel"]["writable_after"] < 2.0
    # Redis retries a rewrite that failed three times after a minute; Keel after 5 s.
    assert results["keel"]["rewrite_recovered"]


# Power cuts. kill -9 leaves the page cache, so it cannot show a write that
# was acknowledged before its fsync. The shim logs, for every successful
# fsync, the length the file had when the call began (what is now surely on
# disk) and every rename (before the call and after it); after the kill each
# file is cut back to its last synced length (a file whose directory was
# synced but never its content, to nothing), and a file in a directory never
# synced is removed, as a power cut would leave them. The restart must then
# have every write that was acknowledged under `always`, and all but the last
# second's under `everysec`.

import collections  # noqa: E402
import random  # noqa: E402
import signal  # noqa: E402
import threading  # noqa: E402

CUTS = int(os.environ.get("KEEL_POWER_CUTS", "50"))


def cut_to_synced(d, log):
    """Cut every file under `d` back to what the sync log says is on disk;
    returns how many bytes were thrown away."""
    events = []
    if os.path.exists(log):
        with open(log) as f:
            events = [line.split() for line in f]
    # A rename counts where it began. One the kill interrupted has its first
    # record and not its second: the directory tells whether it took place
    # (the source is gone and the target is there).
    done = collections.Counter((e[1], e[2]) for e in events if e[0] == "rename" and len(e) == 3)
    synced, dirs = {}, set()
    for e in events:
        if e[0] == "sync" and len(e) == 3:
            synced[e[1]] = int(e[2])
        elif e[0] == "dirsync" and len(e) == 2:
            dirs.add(e[1].rstrip("/"))
        elif e[0] == "rename-begin" and len(e) == 3:
            a, b = e[1], e[2]
            if done[(a, b)] > 0:
                done[(a, b)] -= 1
            elif os.path.exists(a) or not os.path.exists(b):
                continue
            if a in synced:
                synced[b] = synced.pop(a)
            else:
                synced.pop(b, None)
    lost = 0
    for root, _, files in os.walk(d):
        for name in files:
            path = os.path.realpath(os.path.join(root, name))
            size = os.path.getsize(path)
            keep = synced.get(path)
            if keep is None and os.path.dirname(path) in dirs:
                # Its name reached the disk with a directory sync (of the
                # directory as it was then), its content never did. A file
                # created after that sync is kept too: the log cannot tell.
                keep = 0
            if keep is None:
                lost += size
                os.remove(path)
            elif size > keep:
                lost += size - keep
                os.truncate(path, keep)
    return lost


def test_cut_to_synced_follows_syncs_and_renames(tmp_path):
    """The power-cut model itself: synced lengths, renames that completed,
    one a kill interrupted after it took place, and one before."""
    d = str(tmp_path)
    files = {"a": 100, "b": 50, "new": 30, "old": 20, "temp1": 40, "temp2": 60, "loose": 9}
    for name, size in files.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(b"x" * size)
    p = lambda n: os.path.join(os.path.realpath(d), n)  # noqa: E731
    # temp1 was renamed to "man" (the kill came after the call, before its
    # second record); temp2's rename to "man2" never ran (its source is there).
    os.rename(p("temp1"), p("man"))
    log = os.path.join(d, "..", "synclog")
    with open(log, "w") as f:
        f.write(f"sync {p('a')} 70\n"
                f"sync {p('old')} 20\n"
                f"rename-begin {p('old')} {p('b')}\n"
                f"rename {p('old')} {p('b')}\n"
                f"dirsync {os.path.realpath(d)}\n"
                f"sync {p('temp1')} 40\n"
                f"rename-begin {p('temp1')} {p('man')}\n"
                f"sync {p('temp2')} 60\n"
                f"rename-begin {p('temp2')} {p('man2')}\n")
    os.remove(p("old"))
    lost = cut_to_synced(d, log)
    sizes = {n: os.path.getsize(p(n)) for n in os.listdir(d)}
    # a: cut to its sync; b: the synced "old" under its new name, 20 of 50;
    # man: the whole synced temp1; temp2: synced and not renamed; new and
    # loose: named by the directory sync, never synced, so empty.
    assert sizes == {"a": 70, "b": 20, "man": 40, "temp2": 60, "new": 0, "loose": 0}
    assert lost == 30 + 30 + 30 + 9


def writers(port, stop, acked, n=2):
    """`n` clients writing distinct keys until the server dies or `stop` is
    set; each acknowledged key goes into `acked` with the time of its reply."""
    def run(w):
        r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=5)
        j = 0
        try:
            while not stop.is_set():
                key = f"w{w}:{j}"
                r.set(key, key)
                acked.append((key, time.time()))
                j += 1
        except (redis.ConnectionError, redis.TimeoutError, ConnectionResetError):
            pass
    ts = [threading.Thread(target=run, args=(w,)) for w in range(n)]
    for t in ts:
        t.start()
    return ts


def one_cut(kind, shim, d, policy, rng, run=(0.05, 0.3)):
    log = d + ".synclog"
    ctl = Control(d + ".ctl", d)
    ctl.m[12:16] = struct.pack("=i", 1)
    s = Proc(kind, d, "--appendonly", "yes", "--appendfsync", policy, "--save", "",
             env={"LD_PRELOAD": shim, "FAULTFS_CTL": ctl.f.name, "FAULTFS_LOG": log})
    stop, acked = threading.Event(), []
    ts = writers(s.port, stop, acked)
    time.sleep(rng.uniform(*run))
    job = rng.random()
    if job < 0.2:
        attempt(s.r, "BGREWRITEAOF")
    elif job < 0.35:
        attempt(s.r, "BGSAVE")
    time.sleep(rng.uniform(0.0, 0.2))
    killed_at = time.time()
    s.proc.send_signal(signal.SIGKILL)
    s.proc.wait()
    stop.set()
    for t in ts:
        t.join()
    s.r.close()
    ctl.close()
    cut_to_synced(d, log)
    back = Proc(kind, d, "--appendonly", "yes", "--save", "")
    try:
        keys = [k for k, _ in acked]
        present = set()
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            for k, v in zip(chunk, back.r.mget(chunk)):
                if v == k:
                    present.add(k)
    finally:
        back.stop()
    lost = [(k, at) for k, at in acked if k not in present]
    return len(acked), lost, killed_at


@pytest.mark.parametrize("kind", SERVERS)
def test_power_cuts_under_always_lose_no_acknowledged_write(shim, tmp_path, kind):
    rng = random.Random(f"always-{kind}")
    total = 0
    for i in range(CUTS):
        d = str(tmp_path / f"cut{i}")
        os.makedirs(d)
        n, lost, _ = one_cut(kind, shim, d, "always", rng)
        total += n
        assert lost == [], (kind, i, lost[:5])
    assert total > CUTS * 10, "the writers acknowledged too little to tell anything"


@pytest.mark.parametrize("kind", SERVERS)
def test_power_cuts_under_everysec_lose_at_most_the_last_second(shim, tmp_path, kind):
    rng = random.Random(f"everysec-{kind}")
    for i in range(max(CUTS // 5, 5)):
        d = str(tmp_path / f"cut{i}")
        os.makedirs(d)
        # Long enough for fsyncs to happen: what they covered must survive.
        n, lost, killed_at = one_cut(kind, shim, d, "everysec", rng, run=(1.5, 2.5))
        assert len(lost) < n, (kind, i, "nothing survived the cut")
        # One second of fsync period, plus the time an fsync may take.
        assert all(killed_at - at < 2.0 for _, at in lost), (kind, i, lost[:5])


def test_maxmemory_noeviction_flood_refuses_writes_and_serves_reads(tmp_path):
    results = {}
    for kind in SERVERS:
        d = str(tmp_path / kind)
        os.makedirs(d)
        s = Proc(kind, d, "--save", "", "--maxmemory", "4mb", "--maxmemory-policy", "noeviction")
        try:
            acked, first = fill_until_refused(s.r, limit=200000)
            seen = {"first": first, "dbsize_is_acked": s.r.dbsize() == len(acked)}
            seen["get"] = attempt(s.r, "GET", acked[0]) is not None
            seen["del"] = attempt(s.r, "DEL", acked[-1])
            seen["set"] = attempt(s.r, "SET", "x", "v" * 1000)
            seen["ping"] = attempt(s.r, "PING")
            seen["multi"] = attempt(s.r, "MULTI")
            seen["multi_get"] = attempt(s.r, "GET", acked[0])
            seen["exec"] = attempt(s.r, "EXEC")
            seen["eval_write"] = attempt(s.r, "EVAL", "return redis.call('set','y','1')", "0")
            seen["eval_read"] = attempt(s.r, "EVAL", "return redis.call('exists',KEYS[1])", "1",
                                        acked[0])
            seen["shebang_write"] = attempt(s.r, "EVAL", "#!lua\nreturn redis.call('set','y','1')",
                                            "0")
            # Deleting makes room: writes are accepted again.
            for i in range(0, len(acked) // 2, 500):
                s.r.delete(*acked[i:i + 500])
            seen["after_delete"] = attempt(s.r, "SET", "z", "1")
        finally:
            s.stop()
        seen["eval_write"] = seen["eval_write"].split(" script:")[0]
        results[kind] = seen
    assert results["keel"] == results["redis"]
    # redis-py takes the OOM code off the message (OutOfMemoryError).
    assert results["keel"]["first"] == "command not allowed when used memory > 'maxmemory'."
    assert results["keel"]["get"] is True and results["keel"]["del"] == 1
    assert results["keel"]["exec"].startswith("ERR:")
    assert results["keel"]["after_delete"] is True


def _incr(d):
    aofdir = os.path.join(d, "appendonlydir")
    return os.path.join(aofdir, next(f for f in os.listdir(aofdir) if ".incr." in f))


def _base(d):
    aofdir = os.path.join(d, "appendonlydir")
    return os.path.join(aofdir, next(f for f in os.listdir(aofdir) if ".base." in f))


def _flip(path):
    b = bytearray(open(path, "rb").read())
    b[len(b) // 2] ^= 0x01
    open(path, "wb").write(bytes(b))


def _newer(path):
    b = bytearray(open(path, "rb").read())
    b[5:9] = b"0012"
    open(path, "wb").write(bytes(b))


DAMAGE = {
    # name: (AOF on, damage, what a start does: True loads, False refuses)
    "manifest names a missing file": (True, lambda d: os.remove(_incr(d)), False),
    "empty incremental file": (True, lambda d: open(_incr(d), "w").close(), True),
    "empty base file": (True, lambda d: open(_base(d), "w").close(), True),
    "empty manifest": (True, lambda d: open(os.path.join(d, "appendonlydir",
                                                         "appendonly.aof.manifest"), "w").close(),
                       False),
    "garbage inside the AOF": (True, lambda d: open(_incr(d), "r+b").write(b"!!garbage"), False),
    "empty RDB": (False, lambda d: open(os.path.join(d, "dump.rdb"), "w").close(), False),
    "RDB from a newer format": (False, lambda d: _newer(os.path.join(d, "dump.rdb")), False),
    "flipped byte in the RDB": (False, lambda d: _flip(os.path.join(d, "dump.rdb")), False),
}


def starts(kind, d, *args):
    """Whether a server on `d` comes up (True) or exits refusing (False), and its log."""
    s = None
    try:
        s = Proc(kind, d, "--save", "", *args)
        return True, s.log_text()
    except RuntimeError as e:
        return False, str(e)
    finally:
        if s is not None:
            s.stop()


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_files_at_start_up_get_redis_choice_and_a_clear_message(tmp_path, damage):
    aof, hurt, loads = DAMAGE[damage]
    onoff = "yes" if aof else "no"
    verdicts = {}
    for kind in SERVERS:
        d = str(tmp_path / kind)
        os.makedirs(d)
        s = Proc(kind, d, "--save", "", "--appendonly", onoff)
        try:
            for i in range(20):
                s.r.set(f"k{i}", f"v{i}")
            if aof:
                time.sleep(1.1)  # the everysec fsync
            else:
                s.r.save()
        finally:
            s.stop()
        hurt(d)
        verdicts[kind], log = starts(kind, d, "--appendonly", onoff)
        if kind == "keel" and not verdicts[kind]:
            # The refusal names the file it could not take.
            assert "appendonly.aof" in log or "dump.rdb" in log, log
    assert verdicts == {"redis": loads, "keel": loads}


# A kill -9 at every step of a rewrite or a save: the shim kills the server
# just before its n-th file operation (write, fsync, rename, unlink) after the
# command, for n = 1, 2, ... until the job finishes first. Every restart must
# load a consistent dataset: under `always` all that was acknowledged; from an
# RDB, the old snapshot or the new one, never a mix or a refusal.


def crash_during(kind, shim, d, job, n):
    ctl = Control(d + ".ctl", d)
    onoff = "yes" if job == "BGREWRITEAOF" else "no"
    s = Proc(kind, d, "--appendonly", onoff, "--appendfsync", "always", "--save", "",
             env={"LD_PRELOAD": shim, "FAULTFS_CTL": ctl.f.name})
    try:
        ctl.kill_at(n)
        try:
            s.r.execute_command(job)
            deadline = time.time() + 10
            while time.time() < deadline and s.proc.poll() is None:
                info = s.r.info("persistence")
                if not info["aof_rewrite_in_progress"] and not info["rdb_bgsave_in_progress"] \
                        and not info.get("aof_rewrite_scheduled"):
                    break
                time.sleep(0.02)
        except (redis.ConnectionError, redis.TimeoutError):
            pass
        time.sleep(0.05)
        died = s.proc.poll() is not None
        return died, ctl.ops()
    finally:
        s.stop()
        ctl.close()


def prepare(kind, d, job):
    """50 keys acknowledged, the first 25 of them in an RDB when saving."""
    onoff = "yes" if job == "BGREWRITEAOF" else "no"
    s = Proc(kind, d, "--appendonly", onoff, "--appendfsync", "always", "--save", "")
    try:
        for i in range(50):
            s.r.set(f"k{i}", os.urandom(200).hex())
            if i == 24 and job == "BGSAVE":
                s.r.save()
        return {f"k{i}": s.r.get(f"k{i}") for i in range(50)}
    finally:
        s.stop()


@pytest.mark.parametrize("job", ["BGREWRITEAOF", "BGSAVE"])
@pytest.mark.parametrize("kind", SERVERS)
def test_a_kill_at_every_step_of_a_rewrite_or_save_leaves_a_loadable_dataset(shim, tmp_path,
                                                                              kind, job):
    template = str(tmp_path / "template")
    os.makedirs(template)
    data = prepare(kind, template, job)
    first_half = {k: v for k, v in data.items() if int(k[1:]) < 25}
    steps = 0
    for n in range(1, 200):
        d = str(tmp_path / f"n{n}")
        shutil.copytree(template, d)
        died, ops = crash_during(kind, shim, d, job, n)
        onoff = "yes" if job == "BGREWRITEAOF" else "no"
        back = Proc(kind, d, "--appendonly", onoff, "--save", "")
        try:
            got = {k: v for k, v in zip(data, back.r.mget(list(data))) if v is not None}
        finally:
            back.stop()
        if job == "BGREWRITEAOF":
            assert got == data, (kind, n)
        else:
            assert got in (data, first_half), (kind, n, len(got))
        shutil.rmtree(d, ignore_errors=True)
        if not died:
            break
        steps += 1
    else:
        pytest.fail(f"{kind} {job} still dying after 200 steps")
    assert steps >= 2, (kind, job, steps)

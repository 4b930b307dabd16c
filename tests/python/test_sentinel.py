"""Failover by Debian's redis-sentinel (7.0): three Sentinels watch a master
and two replicas, Keel's, Redis's or mixed. Every write is WAITed for a
replica; then the master is killed with SIGKILL. A replica must be promoted
(Sentinel sends REPLICAOF NO ONE, CONFIG REWRITE and CLIENT KILL inside
MULTI), the other must follow it, no WAITed write may be missing on it, the
old master must come back as its replica, and a redis-py Sentinel client
must keep writing across the switch."""

import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest
import redis
from redis.sentinel import Sentinel

from conftest import free_port
from test_replication import nodes, until  # noqa: F401 (nodes is a fixture)

SENTINEL = shutil.which("redis-sentinel")
GO_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "clients", "go")
pytestmark = pytest.mark.skipif(SENTINEL is None, reason="needs Debian's redis-sentinel")


class SentinelProc:
    def __init__(self, master_port):
        self.dir = tempfile.mkdtemp(prefix="keel-sentinel-")
        self.port = free_port()
        conf = os.path.join(self.dir, "sentinel.conf")
        with open(conf, "w") as f:
            f.write(f"port {self.port}\nbind 127.0.0.1\ndir {self.dir}\n"
                    f"logfile {self.dir}/sentinel.log\n"
                    f"sentinel monitor mymaster 127.0.0.1 {master_port} 2\n"
                    "sentinel down-after-milliseconds mymaster 1000\n"
                    "sentinel failover-timeout mymaster 10000\n")
        self.proc = subprocess.Popen([SENTINEL, conf], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        self.r = redis.Redis(port=self.port, decode_responses=True, socket_timeout=5)
        until(lambda: self._up(), timeout=10, what="sentinel to listen")

    def _up(self):
        try:
            return self.r.ping()
        except redis.ConnectionError:
            return False

    def master_addr(self):
        return self.r.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")

    def replicas(self):
        return self.r.execute_command("SENTINEL", "REPLICAS", "mymaster")

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def info_of(n):
    try:
        return n.r.info("replication")
    except redis.ConnectionError:
        return {}


def watched_set(nodes, mkind, rkind):
    """A master, two replicas and three Sentinels that know them all."""
    master = nodes(mkind)
    replicas = [nodes(rkind, "--replicaof", "127.0.0.1", str(master.port)) for _ in range(2)]
    until(lambda: master.r.info("replication")["connected_slaves"] == 2
          and all(info_of(r).get("master_link_status") == "up" for r in replicas),
          what="both replicas")
    sentinels = [SentinelProc(master.port) for _ in range(3)]
    # Each Sentinel knows the others and both replicas before the kill.
    until(lambda: all(len(s.r.execute_command("SENTINEL", "SENTINELS", "mymaster")) == 2
                      and len(s.replicas()) == 2 for s in sentinels),
          timeout=30, what="the sentinels to find each other and the replicas")
    return master, replicas, sentinels


@pytest.mark.parametrize("mkind,rkind", [("keel", "keel"), ("redis", "keel"), ("keel", "redis")])
def test_sentinel_fails_over_and_loses_no_waited_write(nodes, mkind, rkind):
    master, replicas, sentinels = watched_set(nodes, mkind, rkind)
    try:
        client = Sentinel([("127.0.0.1", s.port) for s in sentinels], socket_timeout=2)
        w = client.master_for("mymaster", socket_timeout=2, decode_responses=True)
        waited = []
        for i in range(200):
            w.set(f"k{i}", i)
            if w.execute_command("WAIT", 1, 0) >= 1:
                waited.append(f"k{i}")
        assert len(waited) == 200
        master.proc.send_signal(signal.SIGKILL)
        master.proc.wait()
        old = ["127.0.0.1", str(master.port)]
        new = until(lambda: (a := sentinels[0].master_addr()) and a != old and a,
                    timeout=40, what="the failover")
        promoted = next(r for r in replicas if str(r.port) == new[1])
        other = next(r for r in replicas if r is not promoted)
        assert promoted.r.info("replication")["role"] == "master"
        missing = [k for k in waited if promoted.r.get(k) is None]
        assert missing == []
        until(lambda: info_of(other).get("master_port") == promoted.port
              and info_of(other).get("master_link_status") == "up",
              timeout=30, what="the other replica to follow the promoted one")
        # The client follows the switch.
        until(lambda: _writes(w), timeout=20, what="the Sentinel client to write again")
        until(lambda: other.r.get("after") == "1", what="the write to reach the other replica")
        # The old master comes back and is made a replica of the new one.
        back = nodes(mkind, port=master.port)
        until(lambda: info_of(back).get("master_port") == promoted.port
              and info_of(back).get("master_link_status") == "up",
              timeout=40, what="the old master to return as a replica")
        assert back.r.get("after") == "1"
        assert back.r.get("k199") == "199"
    finally:
        for s in sentinels:
            s.stop()


def _writes(w):
    try:
        return w.set("after", "1")
    except (redis.ConnectionError, redis.TimeoutError, redis.ReadOnlyError):
        return False


def test_a_go_redis_failover_client_keeps_working_across_a_failover(nodes):
    go = shutil.which("go")
    if go is None:
        pytest.skip("go is not installed: the go-redis tests need it")
    master, replicas, sentinels = watched_set(nodes, "keel", "keel")
    try:
        env = {**os.environ,
               "KEEL_SENTINELS": ",".join(f"127.0.0.1:{s.port}" for s in sentinels),
               "KEEL_MASTER_PID": str(master.proc.pid)}
        env.pop("KEEL_ADDR", None)
        out = subprocess.run([go, "test", "-count=1", "-v", "-run", "TestFailoverClient", "./..."],
                             cwd=GO_DIR, env=env, capture_output=True, text=True, timeout=300)
        text = out.stdout + out.stderr
        assert out.returncode == 0, text
        assert "--- PASS: TestFailoverClientAcrossAFailover" in text, text
        master.proc.wait(timeout=10)
    finally:
        for s in sentinels:
            s.stop()

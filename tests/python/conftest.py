"""Fixtures that start the real keel-server binary on a free loopback port."""

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest
import redis

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.path.abspath(os.environ.get("KEEL_SERVER", os.path.join(ROOT, "target", "release", "keel-server")))
# KEEL_TEST_AGAINST=redis runs the same tests against Debian's redis-server, to
# check that what the tests expect is what Redis itself does.
AGAINST_REDIS = os.environ.get("KEEL_TEST_AGAINST") == "redis"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, *args):
        # Not a port the caller already picked for another listener (tls-port).
        self.port = free_port()
        while str(self.port) in args:
            self.port = free_port()
        if AGAINST_REDIS:
            self.args = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                         "--save", "", "--appendonly", "no", "--enable-debug-command", "yes",
                         *[a for a in args if not a.startswith("--threads")]]
        else:
            self.args = [BINARY, "--port", str(self.port), "--bind", "127.0.0.1",
                         "--save", "", "--enable-debug-command", "yes", *args]
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.time() + 10
        while True:
            if self.proc.poll() is not None:
                out = self.proc.stdout.read().decode(errors="replace")
                raise RuntimeError(f"keel-server exited early ({self.proc.returncode}):\n{out}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    break
            except OSError:
                if time.time() > deadline:
                    self.stop()
                    raise RuntimeError("keel-server did not start listening")
                time.sleep(0.02)

    def client(self, **kw):
        kw.setdefault("decode_responses", True)
        return redis.Redis(host="127.0.0.1", port=self.port, **kw)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()


def make_list(r, key):
    """A key of another type, for WRONGTYPE checks; skipped until lists exist."""
    try:
        r.execute_command("RPUSH", key, "x")
    except redis.ResponseError as e:
        if "unknown command" in str(e):
            pytest.skip("lists are not available in this build yet")
        raise


@contextlib.contextmanager
def running_server(*args):
    """A server of its own, for tests that need a particular configuration."""
    s = Server(*args)
    try:
        yield s
    finally:
        s.stop()


REDIS_SERVER = shutil.which("redis-server")


@contextlib.contextmanager
def reference_redis():
    """Debian's redis-server on a free port, in a directory of its own, with
    DEBUG on: the replies the differential tests compare Keel's with. Yields
    its port."""
    port = free_port()
    d = tempfile.mkdtemp()
    proc = subprocess.Popen([REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", d, "--enable-debug-command", "yes"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    raise RuntimeError("redis-server did not start")
                time.sleep(0.02)
        yield port
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def reference():
    """A module's reference redis-server (see `reference_redis`): its port."""
    with reference_redis() as port:
        yield port


@pytest.fixture(scope="module")
def keel():
    """A module's own server under test: its port."""
    with running_server() as s:
        yield s.port


def unparsed(r, *args):
    """A command's reply without redis-py's per-command parsing; an error
    reply as ("error", text)."""
    conn = r.connection_pool.get_connection(args[0])
    try:
        conn.send_command(*args)
        try:
            reply = conn.read_response()
        except redis.ResponseError as e:
            return ("error", str(e))
        if isinstance(reply, redis.ResponseError):
            return ("error", str(reply))
        return reply
    finally:
        r.connection_pool.release(conn)


def refuses_aof():
    """Why the server will not start with `appendonly yes`, or None once it does: tests of
    persistence skip on Keel while it refuses, found by trying rather than assumed."""
    with tempfile.TemporaryDirectory() as d:
        try:
            with running_server("--dir", d, "--save", "", "--appendonly", "yes"):
                return None
        except RuntimeError as e:
            return str(e)


@pytest.fixture(scope="session")
def server():
    s = Server()
    yield s
    s.stop()


@pytest.fixture
def r(server):
    c = server.client()
    c.flushall()
    yield c
    c.close()


@pytest.fixture
def r3(server):
    c = server.client(protocol=3)
    c.flushall()
    yield c
    c.close()


@pytest.fixture
def rb(server):
    """A client that returns raw bytes."""
    c = server.client(decode_responses=False)
    c.flushall()
    yield c
    c.close()


@pytest.fixture
def raw(server, r):
    """A bare RESP connection to the session's server (see rawresp.Raw)."""
    from rawresp import Raw

    c = Raw(server.port)
    yield c
    c.close()

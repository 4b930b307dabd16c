"""Other languages' client libraries, run unchanged against the server under test: the
go-redis scripting, pub/sub and stream-group tests (tests/clients/go), the BullMQ and
ioredis checks (tests/clients/node) and Jedis's pub/sub (tests/clients/java). Their modules come from
`make client-deps`; `go test` also fetches missing Go modules itself."""

import os
import shutil
import subprocess

import pytest
import redis

from conftest import ROOT, running_server

CLIENTS = os.path.join(ROOT, "tests", "clients")
GO_DIR = os.path.join(CLIENTS, "go")
NODE_DIR = os.path.join(CLIENTS, "node")
JAVA_DIR = os.path.join(CLIENTS, "java")


def run_against_server(cmd, cwd, timeout, lacks=None):
    """Runs `cmd` with KEEL_ADDR naming a fresh server; `lacks(client)` may name what
    the program needs that this server does not have yet, to skip rather than fail."""
    with running_server() as s:
        if lacks is not None:
            with s.client() as c:
                missing = lacks(c)
            if missing:
                pytest.skip(missing)
        env = dict(os.environ, KEEL_ADDR=f"127.0.0.1:{s.port}")
        proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=timeout)
    return proc.returncode, proc.stdout


def node():
    path = shutil.which("node")
    if path is None:
        pytest.skip("node is not installed: the BullMQ and ioredis checks need it")
    if not os.path.isdir(os.path.join(NODE_DIR, "node_modules", "bullmq")):
        pytest.fail("tests/clients/node has no node_modules: run `make client-deps`")
    return path


def test_go_redis_scripting():
    go = shutil.which("go")
    if go is None:
        pytest.skip("go is not installed: the go-redis tests need it")
    # The first run on a machine compiles go-redis; later runs hit the build cache.
    rc, out = run_against_server([go, "test", "-count=1", "-v", "./..."], GO_DIR, timeout=600)
    assert rc == 0, out
    assert "--- PASS: TestFunctionLoadAndFcall" in out, out


def test_go_redis_pubsub():
    go = shutil.which("go")
    if go is None:
        pytest.skip("go is not installed: the go-redis tests need it")
    rc, out = run_against_server([go, "test", "-count=1", "-v", "-run", "TestPubSub", "./..."],
                                 GO_DIR, timeout=600)
    assert rc == 0, out
    for name in ("TestPubSubSubscribeAndPSubscribe", "TestPubSubOrderPerPublisher"):
        assert f"--- PASS: {name}" in out, out


def test_go_redis_stream_groups():
    go = shutil.which("go")
    if go is None:
        pytest.skip("go is not installed: the go-redis tests need it")
    rc, out = run_against_server([go, "test", "-count=1", "-v", "-run", "TestStreamGroups", "./..."],
                                 GO_DIR, timeout=600)
    assert rc == 0, out
    for name in ("TestStreamGroupsReadAckClaim", "TestStreamGroupsBlockingRead"):
        assert f"--- PASS: {name}" in out, out


def bullmq_lacks(c):
    """BullMQ's scripts unpack job options with cmsgpack and log every state change
    to a stream with XADD: found by trying, so the check runs once the server has both."""
    try:
        c.execute_command("XLEN", "bullmq-probe")
    except redis.ResponseError as e:
        if "unknown command" in str(e):
            return f"BullMQ needs streams (XADD, XTRIM, XRANGE, XLEN, XREAD, XDEL): {e}"
        raise
    try:
        kind = c.eval("return type(cmsgpack)", 0)
    except redis.ResponseError as e:
        return f"BullMQ needs Lua scripting: {e}"
    if kind != "table":
        return f"BullMQ's scripts need the cmsgpack library in Lua (type(cmsgpack) is {kind})"
    return None


def test_bullmq_jobs():
    rc, out = run_against_server([node(), "bullmq_check.js"], NODE_DIR, timeout=180, lacks=bullmq_lacks)
    assert rc == 0, out
    assert "bullmq: ok" in out, out


def test_ioredis_define_command():
    rc, out = run_against_server([node(), "ioredis_check.js"], NODE_DIR, timeout=60)
    assert rc == 0, out
    assert "ioredis defineCommand: ok" in out, out


def test_ioredis_pubsub():
    rc, out = run_against_server([node(), "ioredis_pubsub_check.js"], NODE_DIR, timeout=60)
    assert rc == 0, out
    assert "ioredis pubsub: ok" in out, out


def test_jedis_pubsub():
    java, mvn = shutil.which("java"), shutil.which("mvn")
    if java is None or mvn is None:
        pytest.skip("java or mvn is not installed: the Jedis tests need both (`make deps` installs them)")
    repo = os.path.join(JAVA_DIR, ".m2")
    if not os.path.isdir(os.path.join(repo, "redis", "clients", "jedis")):
        pytest.fail("tests/clients/java has no .m2 with Jedis: run `make client-deps`")
    rc, out = run_against_server([mvn, "-o", "-B", f"-Dmaven.repo.local={repo}", "test"],
                                 JAVA_DIR, timeout=300)
    assert rc == 0, out
    assert "Tests run: 2, Failures: 0, Errors: 0, Skipped: 0" in out, out

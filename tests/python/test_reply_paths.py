"""A read's reply is encoded into the connection's output as it is read when
the client gets every reply, and goes through a frame otherwise (CLIENT REPLY
OFF/SKIP, MULTI, scripts). The bytes a pipeline gets back must be Redis's
exactly, whichever path each reply took, in RESP2 and RESP3."""

import socket
import time

from conftest import REDIS_SERVER, reference_redis, running_server
from rawresp import encode

import pytest

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server not installed")

END = b"$15\r\nend-of-pipeline\r\n"


def exchange(port, commands):
    """Send every command in one write and return every byte of the replies."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"".join(encode(*c) for c in commands + [("ECHO", "end-of-pipeline")]))
        got = b""
        while not got.endswith(END):
            chunk = s.recv(1 << 20)
            assert chunk, f"closed after {got[-200:]!r}"
            got += chunk
        return got


def setup(port):
    big = b"v" * 100_000
    exchange(port, [("FLUSHALL",), ("SET", "a", "1"), ("SET", "big", big), ("RPUSH", "list", "x"),
                    ("SET", "soon", "gone", "PX", "1"), ("SET", "empty", "")])
    time.sleep(0.05)


def pipeline(proto):
    script = "return redis.call('get', KEYS[1])"
    return [
        ("HELLO", proto),
        ("GET", "a"), ("GET", "missing"), ("GET", "list"), ("GET", "big"), ("GET", "empty"),
        # Expired: found and removed on the way, one nil sent.
        ("GET", "soon"), ("GET", "a"),
        ("CLIENT", "REPLY", "SKIP"), ("GET", "a"), ("GET", "big"),
        ("CLIENT", "REPLY", "OFF"), ("GET", "a"), ("GET", "missing"), ("CLIENT", "REPLY", "ON"),
        ("MULTI",), ("GET", "a"), ("GET", "big"), ("GET", "missing"), ("EXEC",),
        ("EVAL", script, "1", "a"), ("EVAL", script, "1", "missing"),
        ("GET",), ("GET", "a", "b"),
        ("GET", "big"), ("GET", "a"),
    ]


@pytest.mark.parametrize("proto", [2, 3])
def test_pipelined_reads_reply_as_redis_does(proto):
    replies = {}
    with reference_redis() as ref:
        setup(ref)
        replies["redis"] = exchange(ref, pipeline(proto))
    with running_server() as keel:
        setup(keel.port)
        replies["keel"] = exchange(keel.port, pipeline(proto))
    # HELLO's own reply names the server and its version: compare the rest.
    cut = {k: v[v.index(b"$1\r\n1\r\n"):] for k, v in replies.items()}
    assert cut["keel"] == cut["redis"]

"""Client eviction (`maxmemory-clients`): when the connections together hold
more than the limit, the ones holding the most are closed, never a client
with CLIENT NO-EVICT on; INFO counts them. Runs against redis-server too."""

import socket
import time

import pytest
import redis

from conftest import running_server


def wait_for(cond, timeout=5.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


def names(r):
    return {c["name"] for c in r.client_list()}


def big_query(port, name, size):
    """A connection that sends part of a `size`-byte argument and waits."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$%d\r\n%s\r\n" % (len(name), name.encode()))
    assert s.recv(100) == b"+OK\r\n"
    try:
        s.sendall(b"*2\r\n$3\r\nSET\r\n$%d\r\n" % (size * 2) + b"x" * size)
    except (ConnectionResetError, BrokenPipeError):
        pass  # evicted while still sending, as Redis may do
    return s


def test_directive_round_trip(r):
    assert r.config_get("maxmemory-clients") == {"maxmemory-clients": "0"}
    try:
        assert r.config_set("maxmemory-clients", "10%")
        assert r.config_get("maxmemory-clients") == {"maxmemory-clients": "10%"}
        assert r.config_set("maxmemory-clients", "1mb")
        assert r.config_get("maxmemory-clients") == {"maxmemory-clients": "1048576"}
        with pytest.raises(redis.ResponseError, match="must be less or equal to 100"):
            r.config_set("maxmemory-clients", "101%")
    finally:
        r.config_set("maxmemory-clients", "0")


def test_the_biggest_client_is_evicted_and_no_evict_is_spared():
    with running_server() as s:
        r = s.client()
        r.client_setname("admin")
        assert r.execute_command("CLIENT", "NO-EVICT", "on") in ("OK", True)
        small = s.client()
        small.client_setname("small")
        assert r.info("stats")["evicted_clients"] == 0
        r.config_set("maxmemory-clients", 3 * 1024 * 1024)
        big = big_query(s.port, "big", 6 * 1024 * 1024)
        try:
            # The 6 MB query buffer alone is over the 3 MB limit.
            assert wait_for(lambda: "big" not in names(r)), names(r)
            assert {"admin", "small"} <= names(r)
            assert r.info("stats")["evicted_clients"] == 1
            assert small.ping()
        finally:
            big.close()
        r.config_set("maxmemory-clients", 0)
        r.config_resetstat()
        assert r.info("stats")["evicted_clients"] == 0


def test_a_no_evict_client_stays_over_the_limit():
    with running_server() as s:
        r = s.client()
        assert r.execute_command("CLIENT", "NO-EVICT", "on") in ("OK", True)
        r.config_set("maxmemory-clients", 3 * 1024 * 1024)
        c = socket.create_connection(("127.0.0.1", s.port))
        c.sendall(b"CLIENT NO-EVICT on\r\n")
        assert c.recv(100) == b"+OK\r\n"
        c.sendall(b"CLIENT SETNAME keep\r\n")
        assert c.recv(100) == b"+OK\r\n"
        c.sendall(b"*2\r\n$3\r\nSET\r\n$%d\r\n" % (12 * 1024 * 1024) + b"x" * (6 * 1024 * 1024))
        time.sleep(0.6)
        assert "keep" in names(r)
        assert r.info("stats")["evicted_clients"] == 0
        c.close()

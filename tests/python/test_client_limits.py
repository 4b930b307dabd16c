"""Client limits: client-query-buffer-limit, timeout, tcp-keepalive, maxclients."""

import re
import shutil
import socket
import subprocess
import threading
import time

import pytest
import redis

from conftest import running_server


def closed_after(sock, timeout=5.0):
    """True when the server closes `sock` (EOF or reset) within `timeout`."""
    sock.settimeout(timeout)
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def test_query_buffer_limit_closes_the_client():
    with running_server("--client-query-buffer-limit", "1mb") as s:
        r = s.client()
        assert r.config_get("client-query-buffer-limit") == {"client-query-buffer-limit": "1048576"}
        with socket.create_connection(("127.0.0.1", s.port)) as sock:
            # An incomplete request larger than the limit.
            sock.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4000000\r\n")
            try:
                sock.sendall(b"x" * 2_000_000)
            except OSError:
                pass
            assert closed_after(sock)
        # Below the limit everything is served.
        assert r.set("k", "x" * 500_000)
        assert r.strlen("k") == 500_000
        r.close()


def test_query_buffer_limit_minimum():
    with running_server() as s:
        r = s.client()
        with pytest.raises(redis.ResponseError) as e:
            r.config_set("client-query-buffer-limit", "1000")
        assert str(e.value) == (
            "CONFIG SET failed (possibly related to argument 'client-query-buffer-limit') - "
            "argument must be between 1048576 and 9223372036854775807 inclusive")
        r.close()


def test_timeout_closes_idle_clients_but_not_subscribers_or_blocked_ones():
    with running_server("--timeout", "1") as s:
        idle = socket.create_connection(("127.0.0.1", s.port))
        sub = s.client()
        p = sub.pubsub()
        p.subscribe("ch")
        assert p.get_message(timeout=2)["type"] == "subscribe"
        blocked = s.client()
        got = {}
        t = threading.Thread(target=lambda: got.update(v=blocked.blpop("list", 0)))
        t.start()
        assert closed_after(idle, timeout=5)
        idle.close()
        time.sleep(1.5)
        r = s.client()
        assert r.publish("ch", "still here") == 1
        msg = p.get_message(timeout=2)
        assert msg["data"] == "still here"
        r.rpush("list", "v")
        t.join(timeout=5)
        assert got["v"] == ("list", "v")
        p.close()
        sub.close()
        blocked.close()
        r.close()


def test_timeout_zero_keeps_idle_clients():
    with running_server("--timeout", "0") as s:
        with socket.create_connection(("127.0.0.1", s.port)) as sock:
            assert not closed_after(sock, timeout=1.5)
            sock.sendall(b"PING\r\n")
            assert sock.recv(100) == b"+PONG\r\n"


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs ss to see the server's socket timers")
def test_tcp_keepalive_is_set_on_accepted_sockets():
    for secs, want in (("77", True), ("0", False)):
        with running_server("--tcp-keepalive", secs) as s:
            with socket.create_connection(("127.0.0.1", s.port)) as sock:
                sock.sendall(b"PING\r\n")
                assert sock.recv(100) == b"+PONG\r\n"
                out = subprocess.run(["ss", "-tnoH", "state", "established",
                                      f"( sport = :{s.port} )"],
                                     capture_output=True, text=True, timeout=5).stdout
                assert out.strip(), "no server-side socket found"
                timer = re.search(r"timer:\(keepalive,(?:(\d+)min)?(\d+)sec", out)
                assert bool(timer) == want, out
                if want:
                    left = int(timer.group(1) or 0) * 60 + int(timer.group(2))
                    assert 60 <= left <= 77, out


def test_maxclients_refuses_past_the_limit():
    with running_server("--maxclients", "2") as s:
        r = s.client()
        assert r.ping()
        # The start-up probe's connection is closed but may not be reaped yet.
        deadline = time.time() + 5
        while int(r.info("clients")["connected_clients"]) != 1 and time.time() < deadline:
            time.sleep(0.01)
        a = socket.create_connection(("127.0.0.1", s.port))
        b = socket.create_connection(("127.0.0.1", s.port))
        a.sendall(b"PING\r\n")
        assert a.recv(100) == b"+PONG\r\n"
        b.settimeout(5)
        assert b.recv(100) == b"-ERR max number of clients reached\r\n"
        assert closed_after(b)
        b.close()
        assert int(r.info("stats")["rejected_connections"]) == 1
        # A freed slot is taken again.
        a.close()
        deadline = time.time() + 5
        while int(r.info("clients")["connected_clients"]) != 1 and time.time() < deadline:
            time.sleep(0.01)
        c = socket.create_connection(("127.0.0.1", s.port))
        c.sendall(b"PING\r\n")
        assert c.recv(100) == b"+PONG\r\n"
        c.close()
        # Lowered at run time: new clients past it are refused.
        assert r.config_set("maxclients", "1")
        d = socket.create_connection(("127.0.0.1", s.port))
        d.settimeout(5)
        assert d.recv(100) == b"-ERR max number of clients reached\r\n"
        d.close()
        r.close()

"""A worker's event loop hands a connection to the worker's runtime when it
comes to wait for more than its socket: these check that the connection goes
on there exactly where it stopped."""

import socket
import threading
import time

from rawresp import Push, Raw
from rawresp import encode as resp


def test_replies_past_a_full_socket_arrive_whole_and_in_order(server, r):
    big = b"v" * (256 * 1024)
    r.set("big", big)
    c = Raw(server.port)
    # Far more than the socket buffers hold, sent before a byte is read.
    c.sock.sendall(b"".join(resp("GET", "big") for _ in range(64)) + resp("ECHO", "end"))
    time.sleep(0.3)
    for _ in range(64):
        assert c.read() == big
    assert c.read() == b"end"
    # The connection goes on serving afterwards.
    assert c.cmd("SET", "after", "1") == "OK"
    assert c.cmd("GET", "after") == b"1"
    c.close()


def test_a_pipeline_goes_on_after_its_blocked_command_is_served(server, r):
    c = Raw(server.port)
    c.sock.sendall(resp("SET", "before", "1") + resp("BLPOP", "q", "0")
                   + resp("SET", "later", "2") + resp("GET", "later"))
    assert c.read() == "OK"
    time.sleep(0.2)
    assert r.get("later") is None, "a command after BLPOP ran before it was served"
    r.rpush("q", "x")
    assert c.read() == [b"q", b"x"]
    assert c.read() == "OK"
    assert c.read() == b"2"
    c.close()


def test_an_idle_resp3_client_gets_invalidations_redirected_to_it(server, r):
    target = Raw(server.port)
    target.cmd("HELLO", "3")
    target_id = target.cmd("CLIENT", "ID")
    tracker = Raw(server.port)
    assert tracker.cmd("CLIENT", "TRACKING", "ON", "REDIRECT", target_id) == "OK"
    r.set("tracked", "1")
    assert tracker.cmd("GET", "tracked") == b"1"
    # The target sends nothing: its push feed, made by another client, must
    # still reach it.
    r.set("tracked", "2")
    target.sock.settimeout(3)
    msg = target.read()
    assert isinstance(msg, Push)
    assert msg == [b"invalidate", [b"tracked"]]
    tracker.close()
    target.close()


def test_client_kill_reaches_a_client_served_by_either_loop(server, r):
    plain = Raw(server.port)
    plain_id = plain.cmd("CLIENT", "ID")
    blocked = Raw(server.port)
    blocked_id = blocked.cmd("CLIENT", "ID")
    blocked.send("BLPOP", "never", "0")
    time.sleep(0.2)
    for cid in (plain_id, blocked_id):
        assert r.execute_command("CLIENT", "KILL", "ID", cid) == 1
    for c in (plain, blocked):
        c.sock.settimeout(3)
        assert c.closed()
    ids = [int(line.split(" ")[0][3:]) for line in r.execute_command("CLIENT", "LIST").splitlines()]
    assert plain_id not in ids and blocked_id not in ids


def test_many_clients_on_one_worker_each_get_their_own_replies(server, r):
    errors = []

    def client(n):
        try:
            with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
                f = s.makefile("rb")
                for i in range(200):
                    s.sendall(resp("ECHO", f"{n}:{i}"))
                    assert f.readline() == b"$%d\r\n" % len(f"{n}:{i}")
                    assert f.readline() == f"{n}:{i}\r\n".encode()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=client, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []

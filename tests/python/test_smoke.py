"""The server starts, answers, and keeps data between commands."""


def test_ping_set_get(r):
    assert r.ping() is True
    assert r.set("k", "v") is True
    assert r.get("k") == "v"
    assert r.dbsize() == 1
    r.flushdb()
    assert r.dbsize() == 0


def test_resp3_client(r3):
    r3.set("k", "v")
    assert r3.get("k") == "v"


def test_idle_timeout_closes_client():
    import socket
    import time

    from conftest import running_server

    with running_server("--timeout", "1") as s:
        sock = socket.create_connection(("127.0.0.1", s.port))
        sock.sendall(b"PING\r\n")
        assert sock.recv(64) == b"+PONG\r\n"
        time.sleep(2.2)
        sock.settimeout(2)
        # The server closed the idle connection: the read sees end of stream.
        assert sock.recv(64) == b""
        sock.close()

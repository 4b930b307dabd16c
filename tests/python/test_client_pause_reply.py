"""CLIENT PAUSE, CLIENT UNPAUSE and CLIENT REPLY."""

import socket
import time

import pytest
import redis

from conftest import running_server
from rawresp import Err, Raw


def blocked_clients(r):
    return r.info("clients")["blocked_clients"]


def wait_blocked(r, n):
    """Wait until `n` clients are held (Redis counts them as blocked)."""
    deadline = time.time() + 5
    while blocked_clients(r) != n:
        assert time.time() < deadline, f"blocked_clients stayed {blocked_clients(r)}"
        time.sleep(0.01)


def nothing_arrives(raw, wait=0.15):
    """Whether the server sends nothing on `raw` for `wait` seconds."""
    raw.sock.settimeout(wait)
    try:
        raw.sock.recv(1, socket.MSG_PEEK)
        return False
    except socket.timeout:
        return True
    finally:
        raw.sock.settimeout(5)


@pytest.fixture
def unpause(r):
    """Make sure no pause outlives the test."""
    yield
    r.execute_command("CLIENT", "UNPAUSE")


# --- CLIENT PAUSE / UNPAUSE -------------------------------------------------


def test_client_pause_errors(r):
    for args, msg in [
        (["x"], "timeout is not an integer or out of range"),
        (["1.5"], "timeout is not an integer or out of range"),
        (["99999999999999999999"], "timeout is not an integer or out of range"),
        (["-1"], "timeout is negative"),
        (["100", "READ"], "CLIENT PAUSE mode must be WRITE or ALL"),
        # The mode is checked before the timeout.
        (["x", "READ"], "CLIENT PAUSE mode must be WRITE or ALL"),
        (["1", "WRITE", "x"],
         "unknown subcommand or wrong number of arguments for 'PAUSE'. Try CLIENT HELP."),
    ]:
        with pytest.raises(redis.ResponseError) as e:
            r.execute_command("CLIENT", "PAUSE", *args)
        assert str(e.value) == msg, args
    with pytest.raises(redis.ResponseError,
                       match=r"^wrong number of arguments for 'client\|pause' command$"):
        r.execute_command("CLIENT", "PAUSE")
    with pytest.raises(redis.ResponseError,
                       match=r"^wrong number of arguments for 'client\|unpause' command$"):
        r.execute_command("CLIENT", "UNPAUSE", "x")
    assert r.execute_command("CLIENT", "UNPAUSE") == "OK"


def test_pause_that_ends_at_once(server, r, unpause):
    # Zero, and a timeout whose deadline overflows, pause nothing.
    other = server.client()
    for timeout in ("0", "9223372036854775807"):
        assert r.execute_command("CLIENT", "PAUSE", timeout, "WRITE") == "OK"
        assert other.set("k", "v") is True
    other.close()


def test_write_pause_holds_writes_and_keeps_order(server, r, raw, unpause):
    assert r.client_pause(100_000, all=False) is True
    assert r.get("k") is None and r.ping() is True
    # A write and the read pipelined behind it wait; the answers keep their order.
    raw.sock.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
    wait_blocked(r, 1)
    assert nothing_arrives(raw)
    assert r.get("k") is None
    held = [c for c in r.client_list() if c["flags"] == "b"]
    assert len(held) == 1 and held[0]["cmd"] == "set"
    assert r.client_unpause() == "OK"
    assert raw.read() == "OK"
    assert raw.read() == b"v"
    wait_blocked(r, 0)


def test_write_pause_and_transactions(server, r, raw, unpause):
    r.client_pause(100_000, all=False)
    # Only reads queued: EXEC runs.
    assert raw.cmd("MULTI") == "OK"
    assert raw.cmd("GET", "k") == "QUEUED"
    assert raw.cmd("PING") == "QUEUED"
    assert raw.cmd("EXEC") == [None, "PONG"]
    # A write is held before it could be queued.
    assert raw.cmd("MULTI") == "OK"
    raw.send("SET", "k", "1")
    wait_blocked(r, 1)
    r.client_unpause()
    assert raw.read() == "QUEUED"
    # An EXEC that would write waits.
    r.client_pause(100_000, all=False)
    raw.send("EXEC")
    wait_blocked(r, 1)
    assert nothing_arrives(raw)
    r.client_unpause()
    assert raw.read() == ["OK"]
    assert r.get("k") == "1"


def test_pause_all_holds_everything_until_its_deadline():
    with running_server() as s:
        r = s.client()
        other = s.client()
        assert other.ping() is True
        start = time.time()
        assert r.client_pause(300) is True
        # Every command waits, CLIENT UNPAUSE included.
        assert other.client_unpause() == "OK"
        assert other.ping() is True
        assert time.time() - start >= 0.25
        r.close()
        other.close()


def test_pause_keeps_strictest_mode_and_latest_deadline():
    with running_server() as s:
        r = Raw(s.port)
        checker = Raw(s.port)
        try:
            assert r.cmd("MULTI") == "OK"
            assert r.cmd("CLIENT", "PAUSE", "600", "WRITE") == "QUEUED"
            assert r.cmd("CLIENT", "PAUSE", "100", "ALL") == "QUEUED"
            start = time.time()
            assert r.cmd("EXEC") == ["OK", "OK"]
            time.sleep(0.2)
            # The ALL pause lasts until the later deadline.
            checker.send("GET", "k")
            assert nothing_arrives(checker, 0.1)
            assert checker.read() is None
            assert time.time() - start >= 0.55
        finally:
            checker.close()
            r.close()


def test_unpause_releases_every_held_client(server, r, unpause):
    held = [Raw(server.port) for _ in range(3)]
    try:
        r.client_pause(100_000, all=False)
        for i, c in enumerate(held):
            c.send("INCR", "n")
        wait_blocked(r, 3)
        r.client_unpause()
        assert sorted(c.read() for c in held) == [1, 2, 3]
    finally:
        for c in held:
            c.close()


def test_held_client_can_disconnect(server, r, unpause):
    c = Raw(server.port)
    r.client_pause(100_000, all=False)
    c.send("SET", "k", "v")
    wait_blocked(r, 1)
    c.close()
    wait_blocked(r, 0)
    r.client_unpause()
    assert r.get("k") is None


def test_pause_stops_active_expiry(server, r, unpause):
    r.set("e", "1", px=100)
    r.client_pause(100_000, all=False)
    time.sleep(0.4)
    # Not reclaimed while paused, though readers see it gone.
    assert r.dbsize() == 1
    assert r.ttl("e") == -2 and r.get("e") is None
    assert r.dbsize() == 1
    r.client_unpause()
    deadline = time.time() + 5
    while r.dbsize() != 0:
        assert time.time() < deadline
        time.sleep(0.05)


def test_client_pause_command_info(r):
    for name, arity in (("client|pause", -3), ("client|unpause", 2)):
        (entry,) = r.execute_command("COMMAND INFO", name)
        assert entry[:3] == [name, arity, ["admin", "noscript", "loading", "stale"]]
        assert entry[6] == ["@admin", "@slow", "@dangerous", "@connection"]
    (entry,) = r.execute_command("COMMAND INFO", "client|reply")
    assert entry[:3] == ["client|reply", 3, ["noscript", "loading", "stale"]]
    assert entry[6] == ["@slow", "@connection"]


# --- CLIENT REPLY -------------------------------------------------------------


def test_client_reply_errors(r):
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        r.execute_command("CLIENT", "REPLY", "maybe")
    with pytest.raises(redis.ResponseError,
                       match=r"^wrong number of arguments for 'client\|reply' command$"):
        r.execute_command("CLIENT", "REPLY")
    with pytest.raises(redis.ResponseError,
                       match=r"^wrong number of arguments for 'client\|reply' command$"):
        r.execute_command("CLIENT", "REPLY", "ON", "x")
    assert r.execute_command("CLIENT", "REPLY", "ON") == "OK"


def test_client_reply_off_and_on(raw):
    raw.send("CLIENT", "REPLY", "OFF")
    raw.send("SET", "k", "v")
    raw.send("NOSUCHCOMMAND")
    raw.send("GET")
    # SKIP does nothing while replies are off.
    raw.send("CLIENT", "REPLY", "SKIP")
    raw.send("CLIENT", "REPLY", "x")
    assert nothing_arrives(raw)
    assert raw.cmd("CLIENT", "REPLY", "ON") == "OK"
    assert raw.cmd("GET", "k") == b"v"


def test_client_reply_skip(raw):
    raw.send("CLIENT", "REPLY", "SKIP")
    raw.send("PING", "skipped")
    assert raw.cmd("PING", "shown") == b"shown"
    # A skipped SKIP still skips the command after it.
    raw.send("CLIENT", "REPLY", "SKIP")
    raw.send("CLIENT", "REPLY", "SKIP")
    raw.send("PING", "skipped")
    assert raw.cmd("PING", "shown") == b"shown"
    # An error is the skipped command too.
    raw.send("CLIENT", "REPLY", "SKIP")
    raw.send("NOSUCHCOMMAND")
    assert raw.cmd("PING", "shown") == b"shown"
    # ON is answered even when it is the command skipped.
    raw.send("CLIENT", "REPLY", "SKIP")
    assert raw.cmd("CLIENT", "REPLY", "ON") == "OK"
    # SKIP inside a transaction applies after EXEC.
    assert raw.cmd("MULTI") == "OK"
    assert raw.cmd("CLIENT", "REPLY", "SKIP") == "QUEUED"
    assert raw.cmd("PING") == "QUEUED"
    raw.send("EXEC")
    assert raw.f.readline() == b"*2\r\n"
    assert raw.read() == "PONG"
    raw.send("PING", "skipped")
    assert raw.cmd("PING", "shown") == b"shown"


def test_client_reply_and_blocking(raw):
    raw.send("CLIENT", "REPLY", "SKIP")
    raw.send("BLPOP", "nolist", "0.05")
    assert raw.cmd("PING", "after") == b"after"


def test_client_reply_reset_and_quit(server, raw):
    raw.send("CLIENT", "REPLY", "OFF")
    # RESET turns replies back on before answering.
    assert raw.cmd("RESET") == "RESET"
    assert raw.cmd("PING") == "PONG"
    # QUIT sends no +OK either. (Keel then closes the connection; Redis 7.0
    # leaves it open, waiting for a reply that never comes.)
    c = Raw(server.port)
    try:
        c.send("CLIENT", "REPLY", "OFF")
        c.send("QUIT")
        c.sock.settimeout(0.2)
        try:
            assert c.sock.recv(16) == b""
        except socket.timeout:
            pass
    finally:
        c.close()


def test_client_reply_with_pipeline_of_writes(server, r):
    # The use case: send writes without reading their answers.
    c = Raw(server.port)
    try:
        c.send("CLIENT", "REPLY", "OFF")
        for i in range(100):
            c.send("RPUSH", "log", str(i))
        assert c.cmd("CLIENT", "REPLY", "ON") == "OK"
        assert r.llen("log") == 100
    finally:
        c.close()


def test_client_reply_error_reply_while_on(raw):
    assert raw.cmd("CLIENT", "REPLY", "maybe") == Err("ERR syntax error")


def test_client_reply_off_inside_a_transaction(raw):
    # Redis has sent EXEC's array header before OFF runs, and nothing after it.
    assert raw.cmd("MULTI") == "OK"
    assert raw.cmd("CLIENT", "REPLY", "OFF") == "QUEUED"
    assert raw.cmd("PING") == "QUEUED"
    raw.send("EXEC")
    assert raw.f.readline() == b"*2\r\n"
    assert nothing_arrives(raw)
    # And ON in a transaction run while replies are off: no header, then the rest.
    assert raw.cmd("CLIENT", "REPLY", "ON") == "OK"
    raw.send("CLIENT", "REPLY", "OFF")
    raw.send("MULTI")
    raw.send("CLIENT", "REPLY", "ON")
    raw.send("PING")
    raw.send("EXEC")
    assert raw.read() == "OK"
    assert raw.read() == "PONG"
    assert raw.cmd("PING", "after") == b"after"


def test_subscribe_confirmations_are_sent_while_replies_are_off(server, raw):
    raw.send("CLIENT", "REPLY", "OFF")
    raw.send("SUBSCRIBE", "a", "b")
    assert raw.read() == [b"subscribe", b"a", 1]
    assert raw.read() == [b"subscribe", b"b", 2]
    raw.send("PING")
    raw.send("UNSUBSCRIBE", "a")
    # The PING's reply is dropped; the confirmation is not.
    assert raw.read() == [b"unsubscribe", b"a", 1]
    publisher = redis.Redis(port=server.port)
    assert publisher.publish("b", "hi") == 1
    assert raw.read() == [b"message", b"b", b"hi"]
    raw.send("UNSUBSCRIBE")
    assert raw.read() == [b"unsubscribe", b"b", 0]
    assert nothing_arrives(raw)


def test_subscribe_confirmation_uses_up_a_skip(raw):
    raw.send("CLIENT", "REPLY", "SKIP")
    raw.send("SUBSCRIBE", "a")
    assert raw.read() == [b"subscribe", b"a", 1]
    # The SKIP applied to SUBSCRIBE, whose confirmation went anyway.
    assert raw.cmd("UNSUBSCRIBE", "a") == [b"unsubscribe", b"a", 0]
    assert raw.cmd("PING") == "PONG"

"""Protocol-level behaviour seen from real clients: large pipelines, many
concurrent connections, optimistic transactions under contention, RESP3, inline
commands and protocol errors."""

import socket
import threading

import pytest
import redis
from redis.exceptions import ExecAbortError, ResponseError, WatchError


def raw(server):
    s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def recv_exactly(sock, n):
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise AssertionError(f"connection closed after {out!r}")
        out += chunk
    return out


def recv_until_closed(sock):
    out = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return out
        if not chunk:
            return out
        out += chunk


def expect(sock, want):
    assert recv_exactly(sock, len(want)) == want


# --- pipelining ---------------------------------------------------------------

def test_ten_thousand_key_pipeline(r):
    n = 10000
    with r.pipeline(transaction=False) as p:
        for i in range(n):
            p.set(f"key:{i}", f"value:{i}")
        for i in range(n):
            p.get(f"key:{i}")
        replies = p.execute()
    assert len(replies) == 2 * n
    assert replies[:n] == [True] * n
    assert replies[n:] == [f"value:{i}" for i in range(n)]
    assert r.dbsize() == n


def test_pipeline_errors_do_not_break_order(r):
    with r.pipeline(transaction=False) as p:
        p.set("a", "1")
        p.execute_command("GET")  # wrong arity
        p.get("a")
        p.execute_command("NOSUCHCOMMAND", "x")
        p.echo("end")
        replies = p.execute(raise_on_error=False)
    assert replies[0] is True
    assert isinstance(replies[1], ResponseError)
    assert "wrong number of arguments for 'get' command" in str(replies[1])
    assert replies[2] == "1"
    assert isinstance(replies[3], ResponseError)
    assert str(replies[3]).startswith("unknown command 'NOSUCHCOMMAND'")
    assert replies[4] == "end"


# --- concurrency --------------------------------------------------------------

def test_two_hundred_concurrent_connections(server, r):
    clients = 200
    per_client = 20
    start = threading.Barrier(clients)
    failures = []

    def worker(n):
        c = server.client(single_connection_client=True)
        try:
            c.ping()
            # Every connection is open at once before any of them writes.
            start.wait(timeout=30)
            for j in range(per_client):
                c.set(f"conn:{n}:{j}", f"{n}-{j}")
            for j in range(per_client):
                got = c.get(f"conn:{n}:{j}")
                if got != f"{n}-{j}":
                    failures.append((n, j, got))
        except Exception as e:  # noqa: BLE001 - reported below
            failures.append((n, repr(e)))
        finally:
            c.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert failures == []
    assert r.dbsize() == clients * per_client
    assert r.get("conn:199:19") == "199-19"


# --- transactions -------------------------------------------------------------

def test_watch_aborts_when_another_connection_writes(server, r):
    r.set("balance", "100")
    other = server.client()
    try:
        with r.pipeline() as p:
            p.watch("balance")
            current = int(p.get("balance"))
            other.set("balance", "0")
            p.multi()
            p.set("balance", str(current - 10))
            with pytest.raises(WatchError):
                p.execute()
        assert r.get("balance") == "0"

        # Without an interfering write the same transaction commits.
        with r.pipeline() as p:
            p.watch("balance")
            current = int(p.get("balance"))
            p.multi()
            p.set("balance", str(current + 5))
            assert p.execute() == [True]
        assert r.get("balance") == "5"
    finally:
        other.close()


def test_watch_check_and_set_under_contention(server, r):
    r.set("counter", "0")
    workers = 8
    per_worker = 25
    aborted = []

    def worker():
        c = server.client()
        try:
            done = 0
            while done < per_worker:
                with c.pipeline() as p:
                    try:
                        p.watch("counter")
                        v = int(p.get("counter"))
                        p.multi()
                        p.set("counter", str(v + 1))
                        p.execute()
                        done += 1
                    except WatchError:
                        aborted.append(1)
        finally:
            c.close()

    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    # Every increment is a read-modify-write; WATCH makes none of them get lost.
    assert r.get("counter") == str(workers * per_worker)


def test_multi_with_queued_arity_error_is_execabort(server, r):
    c = server.client(single_connection_client=True)
    try:
        assert c.execute_command("MULTI") == "OK"
        # ECHO has no reply callback in redis-py, so the raw QUEUED shows through.
        assert c.execute_command("ECHO", "queued") == "QUEUED"
        c.execute_command("SET", "t", "1")
        with pytest.raises(ResponseError, match="wrong number of arguments for 'set' command"):
            c.execute_command("SET", "t")
        with pytest.raises(ExecAbortError, match="Transaction discarded because of previous errors"):
            c.execute_command("EXEC")
        # Nothing ran and the connection is out of MULTI.
        assert c.get("t") is None
        with pytest.raises(ResponseError, match="EXEC without MULTI"):
            c.execute_command("EXEC")
    finally:
        c.close()

    # redis-py's transactional pipeline surfaces the queueing error itself.
    with r.pipeline() as p:
        p.set("t", "1")
        p.execute_command("SET", "t")
        with pytest.raises(ResponseError, match="wrong number of arguments"):
            p.execute()
    assert r.get("t") is None


def test_unknown_command_inside_multi_aborts(server):
    s = raw(server)
    try:
        s.sendall(b"MULTI\r\nNOSUCHCMD a\r\nPING\r\nEXEC\r\n")
        expect(s, b"+OK\r\n")
        expect(s, b"-ERR unknown command 'NOSUCHCMD', with args beginning with: 'a' \r\n")
        expect(s, b"+QUEUED\r\n")
        expect(s, b"-EXECABORT Transaction discarded because of previous errors.\r\n")
    finally:
        s.close()


# --- RESP3 --------------------------------------------------------------------

def test_resp3_client_negotiates_and_gets_resp3_types(server):
    c = server.client(protocol=3, single_connection_client=True)
    try:
        hello = c.execute_command("HELLO", "3")
        assert isinstance(hello, dict)
        assert hello["proto"] == 3
        assert hello["mode"] == "standalone"
        assert hello["role"] == "master"
        assert isinstance(hello["id"], int)
        assert hello["modules"] == []
        c.set("k3", "v")
        assert c.get("k3") == "v"
        assert c.get("missing-key") is None
    finally:
        c.close()


def drain(s):
    """Read and drop whatever the server has sent, until it pauses."""
    s.settimeout(0.5)
    try:
        while s.recv(65536):
            pass
    except socket.timeout:
        pass
    s.settimeout(5)


def test_resp3_wire_format(server):
    s = raw(server)
    try:
        s.sendall(b"HELLO 3\r\n")
        # HELLO replies with a map of seven fields in RESP3.
        expect(s, b"%7\r\n$6\r\nserver\r\n")
        drain(s)
        s.sendall(b"GET missing-key\r\n")
        expect(s, b"_\r\n")
        s.sendall(b"HELLO 2\r\n")
        expect(s, b"*14\r\n")
        drain(s)
        s.sendall(b"GET missing-key\r\n")
        expect(s, b"$-1\r\n")
        s.sendall(b"HELLO 4\r\n")
        expect(s, b"-NOPROTO unsupported protocol version\r\n")
    finally:
        s.close()


# --- inline commands and protocol errors ---------------------------------------

def test_inline_commands(server, r):
    s = raw(server)
    try:
        s.sendall(b"SET inl hello\r\nGET inl\r\n")
        expect(s, b"+OK\r\n$5\r\nhello\r\n")
        s.sendall(b'SET inl2 "two words\\n"\r\nGET inl2\n')
        expect(s, b"+OK\r\n$10\r\ntwo words\n\r\n")
        s.sendall(b"ECHO 'single \\'quoted\\''\r\n")
        expect(s, b"$15\r\nsingle 'quoted'\r\n")
        # Blank lines are ignored; inline and multibulk mix on one connection.
        s.sendall(b"\r\n\r\n*1\r\n$4\r\nPING\r\nPING\r\n")
        expect(s, b"+PONG\r\n+PONG\r\n")
        s.sendall(b"get\r\n")
        expect(s, b"-ERR wrong number of arguments for 'get' command\r\n")
    finally:
        s.close()
    assert r.get("inl2") == "two words\n"


def test_error_replies_cannot_inject_lines(server):
    """An error quoting client input turns CR and LF into spaces, so a command
    name like "foo\\r\\n+OK" cannot forge extra replies."""
    s = raw(server)
    try:
        s.sendall(b"*2\r\n$8\r\nfoo\r\n+OK\r\n$5\r\na\r\nb\n\r\nPING\r\n")
        expect(s, b"-ERR unknown command 'foo  +OK', with args beginning with: 'a  b ' \r\n")
        expect(s, b"+PONG\r\n")
    finally:
        s.close()


@pytest.mark.parametrize(
    "request_bytes,error",
    [
        (b"*abc\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
        (b"*2147483648\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
        (b"*1\r\n+x\r\n", b"-ERR Protocol error: expected '$', got '+'\r\n"),
        (b"*1\r\n$x\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
        (b"*1\r\n$600000000\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
        (b'SET a "b\r\n', b"-ERR Protocol error: unbalanced quotes in request\r\n"),
        (b"x" * (64 * 1024 + 10), b"-ERR Protocol error: too big inline request\r\n"),
    ],
)
def test_protocol_error_closes_connection(server, request_bytes, error):
    s = raw(server)
    try:
        s.sendall(b"PING\r\n" + request_bytes)
        assert recv_until_closed(s) == b"+PONG\r\n" + error
    finally:
        s.close()


def test_more_than_a_million_arguments(r):
    # Redis 7 takes up to 2^31-1 arguments in one command.
    members = [str(i) for i in range(1_100_000)]
    assert r.sadd("big", *members) == 1_100_000
    assert r.scard("big") == 1_100_000
    r.delete("big")


def test_client_sees_protocol_error_then_reconnects(server):
    c = server.client(single_connection_client=True)
    try:
        assert c.ping() is True
        # Smuggle a malformed frame onto redis-py's own connection.
        c.connection.send_packed_command([b"*1\r\n$bad\r\n"])
        with pytest.raises(ResponseError, match="Protocol error: invalid bulk length"):
            c.connection.read_response()
        with pytest.raises(redis.ConnectionError):
            c.connection.read_response()
    finally:
        c.close()
    # The server is still fine for everyone else.
    c2 = server.client()
    assert c2.ping() is True
    c2.close()


def _recv_all(sock):
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


def test_unauthenticated_clients_get_small_request_limits():
    from conftest import running_server

    with running_server("--requirepass", "pw") as s:
        sock = socket.create_connection(("127.0.0.1", s.port), timeout=5)
        sock.sendall(b"*11\r\n")
        assert _recv_all(sock) == b"-ERR Protocol error: unauthenticated multibulk length\r\n"
        sock.close()
        sock = socket.create_connection(("127.0.0.1", s.port), timeout=5)
        sock.sendall(b"*2\r\n$4\r\nAUTH\r\n$20000\r\n")
        assert _recv_all(sock) == b"-ERR Protocol error: unauthenticated bulk length\r\n"
        sock.close()


def test_auth_then_large_command_in_one_write():
    from conftest import running_server

    with running_server("--requirepass", "pw") as s:
        sock = socket.create_connection(("127.0.0.1", s.port), timeout=5)
        big = b"x" * 100_000
        sock.sendall(b"*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n"
                     + b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\n" + big + b"\r\n"
                     + b"*2\r\n$6\r\nSTRLEN\r\n$1\r\nk\r\n")
        want = b"+OK\r\n+OK\r\n:100000\r\n"
        got = b""
        while len(got) < len(want):
            chunk = sock.recv(4096)
            if not chunk:
                break
            got += chunk
        assert got == want
        sock.close()

"""MONITOR: every command the server runs, streamed to monitoring clients."""

import re
import threading
import time

import pytest
import redis

from conftest import AGAINST_REDIS, running_server
from rawresp import Err, Raw, Status

# Several worker threads, so clients land on different ones (Redis has one).
THREADED = () if AGAINST_REDIS else ("--threads", "4")

LINE = re.compile(r'^(\d+)\.(\d{6}) \[(\d+) ([0-9.]+:\d+)\] (.*)$')


class Monitor(Raw):
    """A raw connection that has sent MONITOR."""

    def __init__(self, port, resp3=False):
        super().__init__(port)
        if resp3:
            self.send("HELLO", "3")
            assert self.read()
        assert self.cmd("MONITOR") == "OK"

    def line(self):
        """The next monitor line, split into (db, addr, quoted args)."""
        status = self.read()
        assert isinstance(status, Status), status
        m = LINE.match(status)
        assert m, status
        assert abs(int(m.group(1)) - time.time()) < 60
        return int(m.group(3)), m.group(4), m.group(5)

    def commands(self, n):
        return [self.line()[2] for _ in range(n)]


@pytest.fixture
def mon(server, r):
    m = Monitor(server.port)
    yield m
    m.close()


def addr_of(client):
    return client.client_info()["addr"]


def test_monitor_line_format_and_escapes(r, mon):
    me = addr_of(r)
    assert mon.commands(1) == ['"CLIENT" "INFO"']
    r.set("k", b'a"b\\c\n\r\t\x07\x08\x01\xff \x7f~')
    r.execute_command("ping")
    assert mon.line() == (0, me, r'"SET" "k" "a\"b\\c\n\r\t\a\b\x01\xff \x7f~"')
    assert mon.line() == (0, me, '"ping"')


def test_monitor_shows_commands_after_they_ran(r, mon):
    # SELECT is shown in the database it selected, and errors raised by a
    # command that ran are shown too.
    r.execute_command("SELECT", "3")
    with pytest.raises(redis.ResponseError):
        r.execute_command("EXEC")
    r.execute_command("SELECT", "0")
    assert [mon.line()[0] for _ in range(3)] == [3, 3, 0]


def test_monitor_hides_refused_and_admin_commands(r, mon):
    with pytest.raises(redis.ResponseError, match="unknown command"):
        r.execute_command("NOSUCHCOMMAND", "x")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        r.execute_command("GET")
    r.config_get("maxmemory")
    r.execute_command("CLIENT", "LIST")
    r.execute_command("DEBUG", "SLEEP", "0")
    r.echo("last")
    assert mon.commands(1) == ['"ECHO" "last"']


def test_monitor_redacts_credentials(server, r, mon):
    c = Raw(server.port)
    try:
        assert isinstance(c.cmd("AUTH", "secret"), Err)
        assert c.cmd("AUTH", "default", "secret") == "OK"
        assert c.cmd("AUTH", "a", "b", "c") == Err("ERR syntax error")
        assert c.cmd("HELLO", "2", "AUTH", "default", "pw", "SETNAME", "n")
    finally:
        c.close()
    assert mon.commands(4) == [
        '"AUTH" "(redacted)"',
        '"AUTH" "(redacted)" "(redacted)"',
        # Redis only redacts the forms it accepts.
        '"AUTH" "a" "b" "c"',
        '"HELLO" "2" "AUTH" "(redacted)" "(redacted)" "SETNAME" "n"',
    ]


def test_monitor_shows_transactions_as_they_run(r, mon):
    p = r.pipeline(transaction=True)
    p.set("a", "1")
    p.execute_command("INCR", "a")
    p.execute()
    assert mon.commands(4) == ['"MULTI"', '"SET" "a" "1"', '"INCR" "a"', '"EXEC"']
    # Queued commands are shown when EXEC runs them, not when queued; admin
    # commands inside stay hidden.
    raw = Raw(mon.sock.getpeername()[1])
    try:
        assert raw.cmd("MULTI") == "OK"
        assert raw.cmd("CONFIG", "GET", "hz") == "QUEUED"
        assert raw.cmd("MONITOR") == "QUEUED"
        assert raw.cmd("GET", "a") == "QUEUED"
        assert raw.cmd("EXEC")[1] == Err("ERR MONITOR isn't allowed for DENY BLOCKING client")
    finally:
        raw.close()
    assert mon.commands(3) == ['"MULTI"', '"GET" "a"', '"EXEC"']


def test_monitor_shows_a_blocking_command_once(server, r, mon):
    waiter = Raw(server.port)
    try:
        waiter.send("BLPOP", "q", "0")
        assert mon.commands(1) == ['"BLPOP" "q" "0"']
        r.lpush("q", "x")
        assert waiter.read() == [b"q", b"x"]
        r.ping()
        assert mon.commands(2) == ['"LPUSH" "q" "x"', '"PING"']
    finally:
        waiter.close()


def test_monitoring_client_may_not_touch_keys(server, r):
    m = Monitor(server.port)
    try:
        m.send("GET", "k")
        assert m.read() == Err("ERR Replica can't interact with the keyspace")
        m.send("SET", "k", "v")
        assert m.read() == Err("ERR Replica can't interact with the keyspace")
        # It may still ping; its own command is fed after its reply.
        m.send("PING")
        assert m.read() == "PONG"
        assert m.commands(1) == ['"PING"']
        # A second MONITOR is ignored without a reply.
        m.send("MONITOR")
        m.send("ECHO", "x")
        assert m.read() == b"x"
        assert m.commands(1) == ['"ECHO" "x"']
        lst = r.client_list()
        flags = {c["id"]: c["flags"] for c in lst}
        assert "O" in [f for f in flags.values()]
        assert r.execute_command("CLIENT", "INFO").split(" flags=")[1].split()[0] == "N"
        assert m.commands(1) == ['"CLIENT" "INFO"']
        # RESET ends monitoring.
        assert m.cmd("RESET") == "RESET"
        r.ping()
        assert m.cmd("GET", "k") is None
        assert "O" not in [c["flags"] for c in r.client_list()]
    finally:
        m.close()


def test_monitor_quit(server, r):
    m = Monitor(server.port)
    try:
        assert m.cmd("QUIT") == "OK"
        assert m.closed()
    finally:
        m.close()


def test_monitor_lines_are_simple_strings_in_resp3(server, r):
    m = Monitor(server.port, resp3=True)
    try:
        r.set("k", "v")
        # Monitor.line checks each line is a simple string.
        assert m.commands(1) == ['"SET" "k" "v"']
        assert m.cmd("PING") == "PONG"
        assert m.commands(1) == ['"PING"']
    finally:
        m.close()


def test_monitor_with_redis_py(server, r):
    with r.monitor() as m:
        r.set("greeting", "hello")
        while True:
            cmd = m.next_command()
            if cmd["command"].startswith("SET"):
                break
    assert cmd["command"] == "SET greeting hello"
    assert cmd["db"] == 0
    assert cmd["client_address"] == "127.0.0.1"


def test_monitor_sees_every_thread_in_order():
    with running_server(*THREADED) as s:
        m = Monitor(s.port)
        clients = [s.client() for _ in range(6)]
        addrs = [addr_of(c) for c in clients]

        def work(c, n):
            for i in range(50):
                c.execute_command("SET", f"k{n}", str(i))

        threads = [threading.Thread(target=work, args=(c, n)) for n, c in enumerate(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        seen = {a: [] for a in addrs}
        count = 0
        while count < 300:
            _, addr, args = m.line()
            if args.startswith('"SET"'):
                seen[addr].append(args)
                count += 1
        for n, a in enumerate(addrs):
            assert seen[a] == [f'"SET" "k{n}" "{i}"' for i in range(50)]
        for c in clients:
            c.close()
        m.close()


def test_monitor_command_info_and_docs(r, r3):
    (entry,) = r.execute_command("COMMAND INFO", "monitor")
    assert entry[:3] == ["monitor", 1, ["admin", "noscript", "loading", "stale"]]
    assert entry[6] == ["@admin", "@slow", "@dangerous"]
    fields = r3.execute_command("COMMAND DOCS", "monitor")["monitor"]
    assert fields["group"] == "server" and fields["since"] == "1.0.0"
    # Redis documents no complexity for MONITOR.
    assert "complexity" not in fields

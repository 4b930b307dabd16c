"""Blocking pops: BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX,
BZMPOP, with several concurrent clients."""

import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis

from conftest import AGAINST_REDIS, running_server

# Several worker threads, so clients land on different ones (Redis has one).
THREADED = () if AGAINST_REDIS else ("--threads", "2")
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def wait_blocked(r, n, timeout=5.0):
    """Wait until exactly `n` clients are blocked."""
    deadline = time.time() + timeout
    while True:
        got = r.info("clients")["blocked_clients"]
        if got == n:
            return
        if time.time() > deadline:
            raise AssertionError(f"blocked_clients is {got}, wanted {n}")
        time.sleep(0.01)


def command(*args):
    return ("*%d\r\n" % len(args) + "".join("$%d\r\n%s\r\n" % (len(str(a)), a) for a in args)).encode()


class Raw:
    """A bare connection, to see exact reply bytes and pipelining."""

    def __init__(self, port, resp3=False):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.buf = b""
        if resp3:
            self.sock.sendall(command("HELLO", "3") + command("PING"))
            self.sock.settimeout(5)
            while not self.buf.endswith(b"+PONG\r\n"):
                self.buf += self.sock.recv(65536)
            self.buf = b""

    def send(self, *cmds):
        self.sock.sendall(b"".join(command(*c) for c in cmds))

    def read_exact(self, expected, timeout=5.0):
        self.sock.settimeout(timeout)
        while len(self.buf) < len(expected):
            chunk = self.sock.recv(65536)
            if not chunk:
                break
            self.buf += chunk
        got, self.buf = self.buf[: len(expected)], self.buf[len(expected):]
        assert got == expected

    def nothing_within(self, seconds):
        self.sock.settimeout(seconds)
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout:
            return
        raise AssertionError(f"unexpected reply {chunk!r}")

    def close(self):
        self.sock.close()


@pytest.fixture
def clients(server):
    made = []

    def make(**kw):
        c = server.client(**kw)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


# --- immediate data: the non-blocking behaviour --------------------------------


def test_blpop_brpop_with_data_answer_at_once(r):
    r.rpush("l", "a", "b", "c")
    assert r.blpop(["missing", "l"], 0) == ("l", "a")
    assert r.brpop(["l"], 0) == ("l", "c")
    assert r.blpop(["l", "missing"], 0.5) == ("l", "b")
    assert r.exists("l") == 0


def test_blpop_takes_the_first_nonempty_key_in_order(r):
    r.rpush("b", "1")
    r.rpush("c", "2")
    assert r.blpop(["a", "b", "c"], 1) == ("b", "1")
    assert r.blpop(["a", "b", "c"], 1) == ("c", "2")


def test_blmove_and_brpoplpush_with_data(r):
    r.rpush("src", "a", "b", "c")
    assert r.blmove("src", "dst", 0, "LEFT", "RIGHT") == "a"
    assert r.brpoplpush("src", "dst", 0) == "c"
    assert r.lrange("dst", 0, -1) == ["c", "a"]
    assert r.lrange("src", 0, -1) == ["b"]
    # Same key: a rotation.
    r.rpush("rot", "x", "y")
    assert r.blmove("rot", "rot", 0, "LEFT", "RIGHT") == "x"
    assert r.lrange("rot", 0, -1) == ["y", "x"]


def test_blmpop_reply_shapes(r, r3):
    r.rpush("l", "a", "b", "c")
    assert r.execute_command("BLMPOP", "0", "2", "none", "l", "RIGHT", "COUNT", "2") == ["l", ["c", "b"]]
    assert r.execute_command("BLMPOP", "0", "1", "l", "LEFT", "COUNT", "10") == ["l", ["a"]]
    assert r.exists("l") == 0
    r3.rpush("l", "a", "b")
    assert r3.execute_command("BLMPOP", "0", "1", "l", "LEFT") == ["l", ["a"]]


def test_bzpopmin_bzpopmax_reply_shapes(r, r3):
    r.zadd("z", {"a": 1, "b": 2.5, "c": 3})
    assert r.bzpopmin(["none", "z"], 0) == ("z", "a", 1.0)
    assert r.execute_command("BZPOPMAX", "z", "0") == ("z", "c", 3.0)
    r3.zadd("z3", {"a": 1, "b": 2.5})
    assert r3.execute_command("BZPOPMAX", "z3", "0") == ["z3", "b", 2.5]
    assert r3.bzpopmin(["z3"], 0) == ["z3", "a", 1.0]
    assert r3.exists("z3") == 0


def test_bzmpop_reply_shapes(r, r3):
    r.zadd("z", {"a": 1, "b": 2.5, "c": 3})
    assert r.execute_command("BZMPOP", "0", "1", "z", "MIN") == ["z", [["a", "1"]]]
    assert r.execute_command("BZMPOP", "0", "2", "x", "z", "MAX", "COUNT", "5") == ["z", [["c", "3"], ["b", "2.5"]]]
    r3.zadd("z", {"a": 1, "b": 2.5})
    assert r3.execute_command("BZMPOP", "0", "1", "z", "MAX", "COUNT", "2") == ["z", [["b", 2.5], ["a", 1.0]]]


@pytest.mark.parametrize("resp3", [False, True])
def test_reply_bytes(r, server, resp3):
    r.zadd("z", {"a": 1, "b": 2.5, "c": 3})
    r.rpush("l", "x", "y")
    c = Raw(server.port, resp3)
    try:
        c.send(
            ("BZPOPMIN", "z", "0"),
            ("BZMPOP", "0", "1", "z", "MAX", "COUNT", "1"),
            ("BLMPOP", "0", "1", "l", "LEFT", "COUNT", "5"),
            ("BZPOPMAX", "nothing", "z", "0"),
        )
        if resp3:
            c.read_exact(
                b"*3\r\n$1\r\nz\r\n$1\r\na\r\n,1\r\n"
                b"*2\r\n$1\r\nz\r\n*1\r\n*2\r\n$1\r\nc\r\n,3\r\n"
                b"*2\r\n$1\r\nl\r\n*2\r\n$1\r\nx\r\n$1\r\ny\r\n"
                b"*3\r\n$1\r\nz\r\n$1\r\nb\r\n,2.5\r\n"
            )
        else:
            c.read_exact(
                b"*3\r\n$1\r\nz\r\n$1\r\na\r\n$1\r\n1\r\n"
                b"*2\r\n$1\r\nz\r\n*1\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n"
                b"*2\r\n$1\r\nl\r\n*2\r\n$1\r\nx\r\n$1\r\ny\r\n"
                b"*3\r\n$1\r\nz\r\n$1\r\nb\r\n$3\r\n2.5\r\n"
            )
    finally:
        c.close()


# --- timeouts -------------------------------------------------------------------


def test_fractional_timeout_returns_nil_after_it(r):
    start = time.monotonic()
    assert r.blpop(["nothing"], 0.1) is None
    elapsed = time.monotonic() - start
    assert 0.09 <= elapsed < 1.0
    start = time.monotonic()
    assert r.bzpopmin(["nothing"], 0.2) is None
    assert 0.19 <= time.monotonic() - start < 1.5


@pytest.mark.parametrize("resp3", [False, True])
def test_timeout_replies_are_null_arrays(server, resp3):
    c = Raw(server.port, resp3)
    try:
        c.send(
            ("BLPOP", "nothing", "0.01"),
            ("BRPOP", "nothing", "0.01"),
            ("BLMOVE", "nothing", "d", "LEFT", "LEFT", "0.01"),
            ("BRPOPLPUSH", "nothing", "d", "0.01"),
            ("BLMPOP", "0.01", "1", "nothing", "LEFT"),
            ("BZPOPMIN", "nothing", "0.01"),
            ("BZPOPMAX", "nothing", "0.01"),
            ("BZMPOP", "0.01", "1", "nothing", "MIN"),
        )
        c.read_exact((b"_\r\n" if resp3 else b"*-1\r\n") * 8)
    finally:
        c.close()


@pytest.mark.parametrize("resp3", [False, True])
def test_inside_multi_nothing_blocks(server, resp3):
    c = Raw(server.port, resp3)
    try:
        c.send(
            ("MULTI",),
            ("BLPOP", "nothing", "0"),
            ("BRPOP", "nothing", "0"),
            ("BLMOVE", "nothing", "d", "LEFT", "LEFT", "0"),
            ("BRPOPLPUSH", "nothing", "d", "0"),
            ("BLMPOP", "0", "1", "nothing", "LEFT"),
            ("BZPOPMIN", "nothing", "0"),
            ("BZPOPMAX", "nothing", "0"),
            ("BZMPOP", "0", "1", "nothing", "MIN"),
            ("EXEC",),
        )
        nil_array = b"_\r\n" if resp3 else b"*-1\r\n"
        nil = b"_\r\n" if resp3 else b"$-1\r\n"
        c.read_exact(
            b"+OK\r\n" + b"+QUEUED\r\n" * 8 + b"*8\r\n" + nil_array * 2 + nil * 2 + nil_array * 4
        )
    finally:
        c.close()


def test_multi_with_data_pops(r):
    r.rpush("l", "a")
    r.zadd("z", {"m": 1})
    p = r.pipeline(transaction=True)
    p.blpop(["l"], 0)
    p.bzpopmax(["z"], 0)
    p.blpop(["l"], 0)
    assert p.execute() == [("l", "a"), ("z", "m", 1.0), None]


@pytest.mark.parametrize(
    "args",
    [
        ("BLPOP", "k", "-1"),
        ("BRPOP", "k", "-0.5"),
        ("BLMOVE", "k", "d", "LEFT", "LEFT", "-1"),
        ("BRPOPLPUSH", "k", "d", "-1"),
        ("BLMPOP", "-1", "1", "k", "LEFT"),
        ("BZPOPMIN", "k", "-1"),
        ("BZPOPMAX", "k", "-inf"),
        ("BZMPOP", "-2", "1", "k", "MIN"),
        ("BLPOP", "k", "inf"),
        ("BLPOP", "k", "1e300"),
    ],
)
def test_negative_timeout(r, args):
    with pytest.raises(redis.ResponseError, match="^timeout is negative$"):
        r.execute_command(*args)


@pytest.mark.parametrize(
    "args",
    [
        ("BLPOP", "k", "abc"),
        ("BRPOP", "k", "nan"),
        ("BLMOVE", "k", "d", "LEFT", "LEFT", "1x"),
        ("BRPOPLPUSH", "k", "d", ""),
        ("BLMPOP", "soon", "1", "k", "LEFT"),
        ("BZPOPMIN", "k", "x"),
        ("BZPOPMAX", "k", " 1"),
        ("BZMPOP", "x", "1", "k", "MIN"),
    ],
)
def test_invalid_timeout(r, args):
    with pytest.raises(redis.ResponseError, match="^timeout is not a float or out of range$"):
        r.execute_command(*args)


def test_tiny_negative_timeout_rounds_to_forever(r, clients):
    # Redis rounds up to whole milliseconds before checking the sign.
    c = clients()
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(c.blpop, ["k"], -0.0001)
        wait_blocked(r, 1)
        r.rpush("k", "v")
        assert fut.result(timeout=5) == ("k", "v")


# --- argument errors --------------------------------------------------------------


@pytest.mark.parametrize(
    "args,message",
    [
        (("BLMOVE", "a", "b", "UP", "LEFT", "x"), "syntax error"),
        (("BLMOVE", "a", "b", "LEFT", "DOWN", "0"), "syntax error"),
        (("BLMPOP", "x", "0", "a", "LEFT"), "numkeys should be greater than 0"),
        (("BLMPOP", "0", "-1", "a", "LEFT"), "numkeys should be greater than 0"),
        (("BLMPOP", "x", "1", "a", "UP"), "syntax error"),
        (("BLMPOP", "0", "2", "a", "LEFT"), "syntax error"),
        (("BLMPOP", "0", "1", "a", "LEFT", "COUNT"), "syntax error"),
        (("BLMPOP", "0", "1", "a", "LEFT", "COUNT", "0"), "count should be greater than 0"),
        (("BLMPOP", "0", "1", "a", "LEFT", "FOO", "1"), "syntax error"),
        (("BZMPOP", "0", "1", "a", "UP"), "syntax error"),
        (("BZMPOP", "0", "0", "a", "MIN"), "numkeys should be greater than 0"),
        (("BZMPOP", "0", "1", "a", "MIN", "COUNT", "0"), "count should be greater than 0"),
        (("BZMPOP", "0", "1", "a", "MIN", "COUNT", "-3"), "count should be greater than 0"),
        (("BLPOP", "k"), "wrong number of arguments for 'blpop' command"),
        (("BRPOP", "k"), "wrong number of arguments for 'brpop' command"),
        (("BLMOVE", "a", "b", "LEFT", "LEFT"), "wrong number of arguments for 'blmove' command"),
        (("BRPOPLPUSH", "a", "b"), "wrong number of arguments for 'brpoplpush' command"),
        (("BLMPOP", "0", "1", "a"), "wrong number of arguments for 'blmpop' command"),
        (("BZPOPMIN", "k"), "wrong number of arguments for 'bzpopmin' command"),
        (("BZPOPMAX", "k"), "wrong number of arguments for 'bzpopmax' command"),
        (("BZMPOP", "0", "1", "a"), "wrong number of arguments for 'bzmpop' command"),
    ],
)
def test_argument_errors(r, args, message):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*args)
    assert str(e.value) == message


def test_wrongtype(r):
    r.set("s", "v")
    r.rpush("l", "x")
    r.zadd("z", {"m": 1})
    for args in [
        ("BLPOP", "s", "0"),
        ("BRPOP", "nothing", "s", "0"),
        ("BLMOVE", "s", "d", "LEFT", "LEFT", "0"),
        ("BRPOPLPUSH", "s", "d", "0"),
        # The destination is checked once the source has data.
        ("BLMOVE", "l", "s", "LEFT", "LEFT", "0"),
        ("BRPOPLPUSH", "l", "z", "0"),
        ("BLMPOP", "0", "1", "z", "LEFT"),
        ("BZPOPMIN", "l", "0"),
        ("BZPOPMAX", "s", "0"),
        ("BZMPOP", "0", "2", "nothing", "l", "MIN"),
    ]:
        with pytest.raises(redis.ResponseError) as e:
            r.execute_command(*args)
        assert str(e.value) == WRONGTYPE, args
    assert r.lrange("l", 0, -1) == ["x"]


# --- blocking and being served ----------------------------------------------------------


def test_push_from_another_connection_wakes_the_blocked_client(r, clients):
    c = clients()
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(c.blpop, ["k"], 5)
        wait_blocked(r, 1)
        # The pusher's reply is the length right after its push.
        assert r.rpush("k", "v") == 1
        assert fut.result(timeout=5) == ("k", "v")
    assert r.exists("k") == 0
    wait_blocked(r, 0)


def test_three_blocked_clients_are_served_in_order(r, clients):
    cs = [clients() for _ in range(3)]
    with ThreadPoolExecutor(3) as pool:
        futs = []
        for i, c in enumerate(cs):
            futs.append(pool.submit(c.blpop, ["q"], 5))
            wait_blocked(r, i + 1)
        assert r.rpush("q", "a", "b", "c") == 3
        assert [f.result(timeout=5) for f in futs] == [("q", "a"), ("q", "b"), ("q", "c")]
    assert r.exists("q") == 0


def test_one_element_per_push_goes_to_the_oldest_waiter(r, clients):
    cs = [clients() for _ in range(3)]
    with ThreadPoolExecutor(3) as pool:
        futs = []
        for i, c in enumerate(cs):
            futs.append(pool.submit(c.brpop, ["q"], 5))
            wait_blocked(r, i + 1)
        # LPUSH a b c leaves c at the head: the waiters each take one.
        r.lpush("q", "x")
        assert futs[0].result(timeout=5) == ("q", "x")
        wait_blocked(r, 2)
        r.lpush("q", "a", "b")
        assert futs[1].result(timeout=5) == ("q", "a")
        assert futs[2].result(timeout=5) == ("q", "b")


def test_blocked_on_several_keys_woken_by_the_second(r, clients):
    c = clients()
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(c.brpop, ["a", "b"], 5)
        wait_blocked(r, 1)
        r.rpush("b", "1", "2")
        assert fut.result(timeout=5) == ("b", "2")
    assert r.lrange("b", 0, -1) == ["1"]


def test_blmove_wakes_a_waiter_on_its_destination(r, clients):
    first, second = clients(), clients()
    with ThreadPoolExecutor(2) as pool:
        waits_on_dst = pool.submit(first.blpop, ["dst"], 5)
        wait_blocked(r, 1)
        mover = pool.submit(second.blmove, "src", "dst", 5, "RIGHT", "LEFT")
        wait_blocked(r, 2)
        assert r.rpush("src", "x") == 1
        assert mover.result(timeout=5) == "x"
        assert waits_on_dst.result(timeout=5) == ("dst", "x")
    assert r.exists("src", "dst") == 0


def test_blmove_served_into_a_destination_of_another_type_answers_wrongtype(r, clients):
    c = clients()
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(c.blmove, "src", "dst", 5, "LEFT", "LEFT")
        wait_blocked(r, 1)
        r.set("dst", "not a list")
        assert r.rpush("src", "x") == 1
        with pytest.raises(redis.ResponseError) as e:
            fut.result(timeout=5)
        assert str(e.value) == WRONGTYPE
    # Nothing moved, and the client is no longer waiting.
    assert r.lrange("src", 0, -1) == ["x"]
    assert r.get("dst") == "not a list"
    assert r.info("clients")["blocked_clients"] == 0


def test_a_source_of_another_type_leaves_the_client_waiting(r, clients):
    c = clients()
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(c.blpop, ["k"], 5)
        wait_blocked(r, 1)
        r.set("k", "string")
        time.sleep(0.1)
        assert r.info("clients")["blocked_clients"] == 1
        r.delete("k")
        r.rpush("k", "v")
        assert fut.result(timeout=5) == ("k", "v")


def test_brpoplpush_blocks_and_moves(r, clients):
    c = clients()
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(c.brpoplpush, "src", "dst", 5)
        wait_blocked(r, 1)
        r.lpush("src", "a", "b")
        assert fut.result(timeout=5) == "a"
    assert r.lrange("src", 0, -1) == ["b"]
    assert r.lrange("dst", 0, -1) == ["a"]


def test_blmpop_blocks_and_pops_count(r, clients):
    c = clients()
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(c.execute_command, "BLMPOP", "5", "2", "x", "y", "LEFT", "COUNT", "2")
        wait_blocked(r, 1)
        r.rpush("y", "1", "2", "3")
        assert fut.result(timeout=5) == ["y", ["1", "2"]]
    assert r.lrange("y", 0, -1) == ["3"]


def test_bzpopmin_bzpopmax_block_until_zadd(r, clients):
    a, b = clients(), clients(protocol=3)
    with ThreadPoolExecutor(2) as pool:
        low = pool.submit(a.bzpopmin, ["z"], 5)
        wait_blocked(r, 1)
        high = pool.submit(b.bzpopmax, ["z"], 5)
        wait_blocked(r, 2)
        r.zadd("z", {"one": 1, "two": 2, "three": 3})
        assert low.result(timeout=5) == ("z", "one", 1.0)
        # Served with the blocked client's own protocol (a RESP3 double).
        assert high.result(timeout=5) == ["z", "three", 3.0]
    assert r.zrange("z", 0, -1) == ["two"]


@pytest.mark.parametrize("protocol", [2, 3])
def test_bzmpop_blocks_until_zadd(r, clients, protocol):
    c = clients(protocol=protocol)
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(c.execute_command, "BZMPOP", "5", "1", "z", "MAX", "COUNT", "2")
        wait_blocked(r, 1)
        r.zadd("z", {"a": 1, "b": 2, "c": 3.5})
        score = 3.5 if protocol == 3 else "3.5"
        two = 2.0 if protocol == 3 else "2"
        assert fut.result(timeout=5) == ["z", [["c", score], ["b", two]]]


def test_a_push_in_a_transaction_serves_after_exec(r, clients):
    c = clients()
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(c.blpop, ["k"], 5)
        wait_blocked(r, 1)
        p = r.pipeline(transaction=True)
        p.rpush("k", "a")
        p.rpush("k", "b")
        p.lrange("k", 0, -1)
        # Inside the transaction both elements are still there.
        assert p.execute() == [1, 2, ["a", "b"]]
        assert fut.result(timeout=5) == ("k", "a")
    assert r.lrange("k", 0, -1) == ["b"]


def test_disconnect_while_blocked_leaves_the_queue(r, server):
    c = Raw(server.port)
    c.send(("BLPOP", "k", "0"))
    wait_blocked(r, 1)
    c.close()
    wait_blocked(r, 0)
    r.rpush("k", "v")
    assert r.lrange("k", 0, -1) == ["v"]


def test_later_pipelined_commands_wait_for_the_blocked_one(r, server):
    c = Raw(server.port)
    try:
        c.send(("BLPOP", "k", "0"), ("PING",), ("RPUSH", "k", "mine"))
        wait_blocked(r, 1)
        c.nothing_within(0.2)
        r.rpush("k", "v")
        c.read_exact(b"*2\r\n$1\r\nk\r\n$1\r\nv\r\n+PONG\r\n:1\r\n")
        # Commands after a timed-out one run too.
        c.send(("BLPOP", "nothing", "0.05"), ("PING",))
        c.read_exact(b"*-1\r\n+PONG\r\n")
    finally:
        c.close()
    assert r.lrange("k", 0, -1) == ["mine"]


def test_timed_out_client_does_not_take_later_data(r, clients):
    c = clients()
    assert c.blpop(["k"], 0.05) is None
    wait_blocked(r, 0)
    r.rpush("k", "v")
    assert r.lrange("k", 0, -1) == ["v"]


def test_blocked_client_in_another_database(r, clients):
    c = clients()
    c.select(1)
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(c.blpop, ["k"], 5)
        wait_blocked(r, 1)
        r.rpush("k", "db0")
        time.sleep(0.1)
        assert not fut.done()
        r.select(1)
        r.rpush("k", "db1")
        assert fut.result(timeout=5) == ("k", "db1")
    r.select(0)
    assert r.lrange("k", 0, -1) == ["db0"]


def test_many_waiters_across_worker_threads_each_get_one_element():
    with running_server(*THREADED) as s:
        admin = s.client()
        n = 12
        waiters = [s.client() for _ in range(n)]
        pushers = [s.client() for _ in range(4)]
        with ThreadPoolExecutor(n + len(pushers)) as pool:
            futs = [pool.submit(w.blpop, ["work"], 10) for w in waiters]
            wait_blocked(admin, n)
            pushed = [f"item{i}" for i in range(n)]

            def push(chunk):
                c = pushers[chunk % len(pushers)]
                for item in pushed[chunk::len(pushers)]:
                    c.rpush("work", item)

            for f in [pool.submit(push, i) for i in range(len(pushers))]:
                f.result(timeout=10)
            got = [f.result(timeout=10) for f in futs]
        assert sorted(v for _, v in got) == sorted(pushed)
        assert admin.exists("work") == 0
        wait_blocked(admin, 0)
        for c in waiters + pushers + [admin]:
            c.close()


def test_cross_thread_fifo_and_blmove_chain():
    with running_server(*THREADED) as s:
        admin = s.client()
        cs = [s.client() for _ in range(4)]
        with ThreadPoolExecutor(4) as pool:
            futs = []
            for i, c in enumerate(cs[:3]):
                futs.append(pool.submit(c.blpop, ["q"], 10))
                wait_blocked(admin, i + 1)
            mover = pool.submit(cs[3].blmove, "in", "q", 10, "LEFT", "RIGHT")
            wait_blocked(admin, 4)
            admin.rpush("in", "a")
            assert mover.result(timeout=10) == "a"
            admin.rpush("q", "b", "c")
            assert [f.result(timeout=10) for f in futs] == [("q", "a"), ("q", "b"), ("q", "c")]
        for c in cs + [admin]:
            c.close()


def test_blocked_clients_in_info(r, clients):
    c = clients()
    assert r.info("clients")["blocked_clients"] == 0
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(c.bzpopmax, ["z"], 5)
        wait_blocked(r, 1)
        r.zadd("z", {"m": 1})
        assert fut.result(timeout=5) == ("z", "m", 1.0)
    wait_blocked(r, 0)


def test_blocked_waiter_survives_a_write_of_another_type(r, clients):
    # Redis 7.0 leaves a BLPOP client blocked when its key becomes a sorted set.
    c = clients()
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(c.blpop, ["k"], 5)
        wait_blocked(r, 1)
        r.zadd("k", {"m": 1})
        time.sleep(0.1)
        assert not fut.done()
        r.delete("k")
        r.rpush("k", "v")
        assert fut.result(timeout=5) == ("k", "v")


def test_client_kill_while_blocked(r, clients):
    c = clients()
    c.client_setname("victim")
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(c.blpop, ["k"], 5)
        wait_blocked(r, 1)
        victim = [x for x in r.client_list() if x.get("name") == "victim"][0]
        r.client_kill_filter(_id=victim["id"])
        with pytest.raises(redis.ConnectionError):
            fut.result(timeout=5)
    wait_blocked(r, 0)
    r.rpush("k", "v")
    assert r.llen("k") == 1


def test_data_under_a_waiter_of_another_type_is_taken_at_once(r, clients):
    c = clients()
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(c.bzpopmin, ["k"], 5)
        wait_blocked(r, 1)
        r.rpush("k", "v")
        assert r.blpop(["k"], 1) == ("k", "v")
        r.zadd("k", {"m": 2})
        assert fut.result(timeout=5) == ("k", "m", 2.0)


def test_a_served_command_counts_one_call(r, clients):
    r.config_resetstat()
    c = clients()
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(c.blpop, ["k"], 5)
        wait_blocked(r, 1)
        r.rpush("k", "v")
        assert fut.result(timeout=5) == ("k", "v")
    assert r.info("commandstats")["cmdstat_blpop"]["calls"] == 1


def test_any_write_that_fills_the_key_wakes_the_waiter(r, clients):
    a, b = clients(), clients()
    with ThreadPoolExecutor(2) as pool:
        zfut = pool.submit(a.bzpopmax, ["z"], 5)
        wait_blocked(r, 1)
        assert r.zincrby("z", 1.5, "m") == 1.5
        assert zfut.result(timeout=5) == ("z", "m", 1.5)
        lfut = pool.submit(b.blpop, ["dst"], 5)
        wait_blocked(r, 1)
        r.rpush("src", "moved")
        r.rename("src", "dst")
        assert lfut.result(timeout=5) == ("dst", "moved")
    assert r.exists("z", "src", "dst") == 0


def test_timeouts_racing_pushes_lose_and_duplicate_nothing():
    # Waiters time out (1 ms) while pushers on other connections feed the
    # key: every element ends up popped exactly once or still in the list.
    with running_server(*THREADED) as s:
        n_items, n_pushers, n_poppers = 600, 3, 6
        stop = threading.Event()
        popped = []
        lock = threading.Lock()

        def popper():
            c = s.client()
            mine = []
            while not stop.is_set():
                got = c.blpop(["race"], 0.001)
                if got is not None:
                    mine.append(got[1])
            with lock:
                popped.extend(mine)
            c.close()

        def pusher(k):
            c = s.client()
            for i in range(k, n_items, n_pushers):
                c.rpush("race", f"e{i}")
            c.close()

        with ThreadPoolExecutor(n_pushers + n_poppers) as pool:
            pops = [pool.submit(popper) for _ in range(n_poppers)]
            for f in [pool.submit(pusher, k) for k in range(n_pushers)]:
                f.result(timeout=30)
            time.sleep(0.2)
            stop.set()
            for f in pops:
                f.result(timeout=30)
        admin = s.client()
        left = admin.lrange("race", 0, -1)
        assert len(popped) == len(set(popped))
        assert sorted(popped + left) == sorted(f"e{i}" for i in range(n_items))
        wait_blocked(admin, 0)
        admin.close()


# --- CLIENT UNBLOCK and the blocked flag -------------------------------------------------


def test_client_list_shows_a_blocked_client_as_b(r, clients):
    c = clients()
    cid = c.client_id()
    with ThreadPoolExecutor(1) as pool:
        fut = pool.submit(c.blpop, ["k"], 5)
        wait_blocked(r, 1)
        assert r.client_list(client_id=[str(cid)])[0]["flags"] == "b"
        r.rpush("k", "v")
        assert fut.result(timeout=5) == ("k", "v")
    assert r.client_list(client_id=[str(cid)])[0]["flags"] == "N"


def test_client_unblock_replies_and_errors(r, clients):
    c = clients()
    cid = c.client_id()
    with ThreadPoolExecutor(1) as pool:
        # TIMEOUT (the default): the command's own timeout reply.
        fut = pool.submit(c.blpop, ["k"], 0)
        wait_blocked(r, 1)
        with pytest.raises(redis.ResponseError, match="^CLIENT UNBLOCK reason should be TIMEOUT or ERROR$"):
            r.execute_command("CLIENT", "UNBLOCK", cid, "NOPE")
        assert r.execute_command("CLIENT", "UNBLOCK", cid) == 1
        assert fut.result(timeout=5) is None
        assert r.execute_command("CLIENT", "UNBLOCK", cid, "TIMEOUT") == 0
        fut = pool.submit(c.bzpopmin, ["z"], 0)
        wait_blocked(r, 1)
        assert r.execute_command("CLIENT", "UNBLOCK", cid, "timeout") == 1
        assert fut.result(timeout=5) is None
        # ERROR: the client gets an UNBLOCKED error.
        fut = pool.submit(c.blmove, "k", "d", 0, "LEFT", "RIGHT")
        wait_blocked(r, 1)
        assert r.execute_command("CLIENT", "UNBLOCK", cid, "ERROR") == 1
        with pytest.raises(redis.ResponseError, match="^UNBLOCKED client unblocked via CLIENT UNBLOCK$"):
            fut.result(timeout=5)
    wait_blocked(r, 0)
    # A push afterwards stays in the list: nobody waits any more.
    r.rpush("k", "v")
    assert r.lrange("k", 0, -1) == ["v"]
    assert r.execute_command("CLIENT", "UNBLOCK", r.client_id()) == 0
    assert r.execute_command("CLIENT", "UNBLOCK", "-5") == 0
    assert r.execute_command("CLIENT", "UNBLOCK", "999999") == 0
    with pytest.raises(redis.ResponseError, match="^value is not an integer or out of range$"):
        r.execute_command("CLIENT", "UNBLOCK", "abc")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'client|unblock' command"):
        r.execute_command("CLIENT", "UNBLOCK")
    with pytest.raises(redis.ResponseError, match="^unknown subcommand or wrong number of arguments for 'UNBLOCK'. Try CLIENT HELP.$"):
        r.execute_command("CLIENT", "UNBLOCK", cid, "TIMEOUT", "x")


# --- the race between waiters and other clients ------------------------------------------


def test_stress_waiters_win_over_plain_pops_on_other_threads():
    """Clients wait on six lists; one connection fills all six in one
    transaction while another keeps popping them without blocking. The
    waiters came first: each gets its element, the popper gets nothing.
    Bounded in time; counts what a lost race costs."""
    keys = [f"q{i}" for i in range(6)]
    with running_server(*THREADED) as s:
        admin = s.client()
        waiters = [Raw(s.port) for _ in keys]
        filler, popper = Raw(s.port), Raw(s.port)
        fill = [("MULTI",)] + [("LPUSH", k, "x") for k in keys] + [("EXEC",)]
        fill_reply = b"+OK\r\n" + b"+QUEUED\r\n" * 6 + b"*6\r\n" + b":1\r\n" * 6
        pops = [("LPOP", k) for k in reversed(keys)]
        rounds = stolen = unserved = 0
        deadline = time.time() + 3
        while time.time() < deadline and rounds < 1500:
            rounds += 1
            for w, k in zip(waiters, keys):
                w.send(("BLPOP", k, "0"))
            wait_blocked(admin, len(keys))
            done = threading.Event()

            def do_fill():
                filler.send(*fill)
                filler.read_exact(fill_reply)
                done.set()

            t = threading.Thread(target=do_fill)
            t.start()
            while True:
                last = done.is_set()
                popper.send(*pops)
                popper.sock.settimeout(5)
                replies = 0
                while replies < len(pops):
                    if popper.buf.startswith(b"$-1\r\n"):
                        popper.buf = popper.buf[5:]
                    elif popper.buf.startswith(b"$1\r\nx\r\n"):
                        popper.buf = popper.buf[7:]
                        stolen += 1
                    else:
                        popper.buf += popper.sock.recv(65536)
                        continue
                    replies += 1
                if last:
                    break
            t.join()
            for w, k in zip(waiters, keys):
                w.sock.settimeout(0.5)
                try:
                    while not w.buf.endswith(b"x\r\n"):
                        chunk = w.sock.recv(65536)
                        assert chunk
                        w.buf += chunk
                    assert w.buf == b"*2\r\n$%d\r\n%s\r\n$1\r\nx\r\n" % (len(k), k.encode())
                    w.buf = b""
                except socket.timeout:
                    unserved += 1
            if unserved:
                break
        assert (stolen, unserved) == (0, 0), f"{rounds} rounds"
        for c in waiters + [filler, popper]:
            c.close()
        admin.close()

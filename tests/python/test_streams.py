"""Streams: XADD, XRANGE, XREVRANGE, XLEN, XDEL, XTRIM, XSETID and XREAD (with
BLOCK), their errors, reply shapes, trimming by whole blocks, propagation to
the AOF, persistence and the generic key commands on a stream."""

import os
import socket
import tempfile
import threading
import time

import pytest
import redis

from conftest import AGAINST_REDIS, running_server
from rawresp import encode

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
INVALID = "Invalid stream ID specified as stream command argument"
THREADED = () if AGAINST_REDIS else ("--threads", "4")


def err(r, *args):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*args)
    return str(e.value)


def raw(port, *cmds, resp3=False):
    """Send commands on a bare connection and return the raw reply bytes."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.settimeout(5)
        buf = b""
        if resp3:
            s.sendall(encode("HELLO", "3") + encode("PING"))
            while not buf.endswith(b"+PONG\r\n"):
                buf += s.recv(65536)
            buf = b""
        start = 0
        s.sendall(b"".join(encode(*c) for c in cmds) + encode("PING"))
        while not buf.endswith(b"+PONG\r\n"):
            buf += s.recv(65536)
        return buf[start:-len(b"+PONG\r\n")]


def wait_blocked(r, n, timeout=5.0):
    deadline = time.time() + timeout
    while r.info("clients")["blocked_clients"] != n:
        if time.time() > deadline:
            raise AssertionError(f"blocked_clients is not {n}")
        time.sleep(0.01)


# --- XADD -----------------------------------------------------------------


def test_xadd_ids_explicit_partial_and_auto(r):
    assert r.execute_command("XADD", "s", "5-5", "f", "v") == "5-5"
    assert r.execute_command("XADD", "s", "5-*", "f", "v") == "5-6"
    assert r.execute_command("XADD", "s", "7-*", "f", "v") == "7-0"
    auto = r.execute_command("XADD", "s", "*", "f", "v")
    ms, seq = map(int, auto.split("-"))
    assert ms > 1_000_000_000_000 and seq == 0
    assert r.execute_command("XADD", "t", "0-*", "f", "v") == "0-1"
    # Bare ms, leading zeros and a leading blank are read as Redis reads them.
    assert r.execute_command("XADD", "u", "05-01", "f", "v") == "5-1"
    assert r.execute_command("XADD", "u", " 6", "f", "v") == "6-0"
    assert r.xlen("s") == 4


@pytest.mark.parametrize(
    "args,message",
    [
        (("XADD", "s", "0-0", "f", "v"), "The ID specified in XADD must be greater than 0-0"),
        (("XADD", "s", "0", "f", "v"), "The ID specified in XADD must be greater than 0-0"),
        (("XADD", "s", "5-5", "f", "v"), "equal or smaller than the target stream top item"),
        (("XADD", "s", "4-*", "f", "v"), "equal or smaller than the target stream top item"),
        (("XADD", "s", "abc", "f", "v"), INVALID),
        (("XADD", "s", "1-2-3", "f", "v"), INVALID),
        (("XADD", "s", "-", "f", "v"), INVALID),
        (("XADD", "s", "+", "f", "v"), INVALID),
        (("XADD", "s", "$", "f", "v"), INVALID),
        (("XADD", "s", "-5", "f", "v"), INVALID),
        (("XADD", "s", "1-18446744073709551616", "f", "v"), INVALID),
        (("XADD", "s", "*", "f"), "wrong number of arguments for 'xadd' command"),
        (("XADD", "s", "*", "f", "v", "g"), "wrong number of arguments for 'xadd' command"),
        (("XADD", "s", "NOMKSTREAM", "MAXLEN", "5"), "wrong number of arguments for 'xadd' command"),
        (("XADD", "s", "MAXLEN", "abc", "*", "f", "v"), "value is not an integer or out of range"),
        (("XADD", "s", "MAXLEN", "-1", "*", "f", "v"), "The MAXLEN argument must be >= 0."),
        (("XADD", "s", "MAXLEN", "~", "*", "f", "v"), "value is not an integer or out of range"),
        (("XADD", "s", "MINID", "abc", "*", "f", "v"), INVALID),
        (("XADD", "s", "MAXLEN", "1", "MINID", "1", "*", "f", "v"),
         "syntax error, MAXLEN and MINID options at the same time are not compatible"),
        (("XADD", "s", "LIMIT", "10", "*", "f", "v"),
         "syntax error, LIMIT cannot be used without specifying a trimming strategy"),
        (("XADD", "s", "MAXLEN", "5", "LIMIT", "10", "*", "f", "v"),
         "syntax error, LIMIT cannot be used without the special ~ option"),
        (("XADD", "s", "MAXLEN", "=", "5", "LIMIT", "10", "*", "f", "v"),
         "syntax error, LIMIT cannot be used without the special ~ option"),
        (("XADD", "s", "MAXLEN", "~", "5", "LIMIT", "-1", "*", "f", "v"), "The LIMIT argument must be >= 0."),
        (("XADD", "s", "MAXLEN", "~", "5", "LIMIT", "x", "*", "f", "v"), "value is not an integer or out of range"),
    ],
)
def test_xadd_errors(r, args, message):
    r.execute_command("XADD", "s", "5-5", "f", "v")
    assert message in err(r, *args)
    assert r.xlen("s") == 1


def test_xadd_nomkstream_wrongtype_and_exhausted_ids(r):
    assert r.execute_command("XADD", "none", "NOMKSTREAM", "*", "f", "v") is None
    assert r.exists("none") == 0
    r.set("str", "x")
    assert err(r, "XADD", "str", "*", "f", "v") == WRONGTYPE
    top = "18446744073709551615-18446744073709551615"
    assert r.execute_command("XADD", "m", top, "f", "v") == top
    assert r.execute_command("XDEL", "m", top) == 1
    assert "exhausted the last possible ID" in err(r, "XADD", "m", "*", "f", "v")
    assert r.execute_command("XADD", "n", "18446744073709551615-*", "f", "v") == "18446744073709551615-0"
    assert r.execute_command("XADD", "n", "18446744073709551615-*", "f", "v") == "18446744073709551615-1"


def test_xadd_trims_with_maxlen_and_minid(r):
    for i in range(1, 11):
        r.execute_command("XADD", "s", "MAXLEN", "=", "5", f"{i}-0", "f", str(i))
    assert r.xlen("s") == 5
    assert r.xrange("s")[0][0] == "6-0"
    r.execute_command("XADD", "s", "MINID", "9", "11-0", "f", "v")
    assert [e[0] for e in r.xrange("s")] == ["9-0", "10-0", "11-0"]


def test_approximate_trim_removes_whole_nodes_only(server, r):
    # 250 entries in nodes of 100: MAXLEN ~ 120 can drop only the first node.
    for i in range(1, 251):
        r.execute_command("XADD", "s", f"{i}-0", "f", "v")
    assert r.execute_command("XTRIM", "s", "MAXLEN", "~", "120") == 100
    assert r.xlen("s") == 150
    assert r.execute_command("XTRIM", "s", "MAXLEN", "~", "120", "LIMIT", "50") == 0
    assert r.execute_command("XTRIM", "s", "MINID", "~", "250") == 100
    assert r.xlen("s") == 50
    assert r.execute_command("XTRIM", "s", "MAXLEN", "=", "10") == 40
    assert r.xrange("s")[0][0] == "241-0"
    assert r.execute_command("XTRIM", "s", "MINID", "245") == 4
    assert r.xlen("s") == 6


def test_node_settings_change_where_nodes_split(r):
    old = r.config_get("stream-node-max-entries")["stream-node-max-entries"]
    try:
        r.config_set("stream-node-max-entries", 10)
        for i in range(1, 36):
            r.execute_command("XADD", "s", f"{i}-0", "f", "v")
        assert r.execute_command("XTRIM", "s", "MAXLEN", "~", "1") == 30
        assert r.xlen("s") == 5
        # By bytes, measured as Redis's listpacks would be.
        r.config_set("stream-node-max-entries", 0)
        for max_bytes, trimmed in [(150, 16), (250, 16), (400, 14), (500, 9), (700, 13), (900, 17)]:
            r.delete("b")
            r.config_set("stream-node-max-bytes", max_bytes)
            for i in range(1, 21):
                r.execute_command("XADD", "b", f"{i}-0", "f", "x" * 40)
            assert r.execute_command("XTRIM", "b", "MAXLEN", "~", "3") == trimmed, max_bytes
    finally:
        r.config_set("stream-node-max-entries", old)
        r.config_set("stream-node-max-bytes", 4096)


# --- XRANGE / XREVRANGE / XLEN / XDEL -------------------------------------------


def fill(r):
    r.execute_command("XADD", "s", "1-1", "a", "1")
    r.execute_command("XADD", "s", "2-2", "a", "2", "b", "3")
    r.execute_command("XADD", "s", "3-0", "c", "4")


def test_xrange_and_xrevrange(r):
    fill(r)
    assert r.xrange("s") == [("1-1", {"a": "1"}), ("2-2", {"a": "2", "b": "3"}), ("3-0", {"c": "4"})]
    assert [e[0] for e in r.xrange("s", "(1-1", "+")] == ["2-2", "3-0"]
    assert [e[0] for e in r.xrange("s", "2", "2")] == ["2-2"]
    assert [e[0] for e in r.xrange("s", "-", "+", count=2)] == ["1-1", "2-2"]
    assert [e[0] for e in r.xrevrange("s", "+", "-", count=2)] == ["3-0", "2-2"]
    assert [e[0] for e in r.xrevrange("s", "(3", "-")] == ["3-0", "2-2", "1-1"]
    assert [e[0] for e in r.xrevrange("s", "(3-0", "(1-1")] == ["2-2"]
    assert r.xrange("s", "3", "1") == []
    assert r.xrange("nokey") == []
    assert r.execute_command("XRANGE", "s", "-", "+", "COUNT", "1", "COUNT", "2") == [
        ("1-1", {"a": "1"}), ("2-2", {"a": "2", "b": "3"})]


def test_xrange_count_zero_is_a_null_array(server, r):
    fill(r)
    assert raw(server.port, ["XRANGE", "s", "-", "+", "COUNT", "0"]) == b"*-1\r\n"
    assert raw(server.port, ["XREVRANGE", "s", "+", "-", "COUNT", "-1"]) == b"*-1\r\n"
    assert raw(server.port, ["XRANGE", "nokey", "-", "+", "COUNT", "0"]) == b"*0\r\n"
    assert raw(server.port, ["XRANGE", "s", "-", "+", "COUNT", "0"], resp3=True) == b"_\r\n"
    assert raw(server.port, ["XRANGE", "s", "3", "+"]) == b"*1\r\n*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\nc\r\n$1\r\n4\r\n"


@pytest.mark.parametrize(
    "args,message",
    [
        (("XRANGE", "s", "(-", "+"), INVALID),
        (("XRANGE", "s", "-", "(+"), INVALID),
        (("XRANGE", "s", "((1", "+"), INVALID),
        (("XRANGE", "s", "1-x", "+"), INVALID),
        (("XRANGE", "s", "(18446744073709551615-18446744073709551615", "+"), "invalid start ID for the interval"),
        (("XRANGE", "s", "-", "(0-0"), "invalid end ID for the interval"),
        (("XRANGE", "s", "-", "+", "COUNT"), "syntax error"),
        (("XRANGE", "s", "-", "+", "COUNT", "1", "x"), "syntax error"),
        (("XRANGE", "s", "-", "+", "FOO", "1"), "syntax error"),
        (("XRANGE", "s", "-", "+", "COUNT", "x"), "value is not an integer or out of range"),
        (("XREVRANGE", "s", "+", "-", "COUNT"), "syntax error"),
        (("XDEL", "s", "x"), INVALID),
        (("XDEL", "s", "1-1", "-"), INVALID),
    ],
)
def test_range_and_xdel_errors(r, args, message):
    fill(r)
    assert message in err(r, *args)
    assert r.xlen("s") == 3


def test_xlen_xdel_and_wrongtype(r):
    fill(r)
    assert r.xlen("s") == 3
    assert r.xlen("nokey") == 0
    assert r.execute_command("XDEL", "s", "1-1", "9-9") == 1
    assert r.execute_command("XDEL", "s", "2") == 0
    assert r.execute_command("XDEL", "nokey", "1-1") == 0
    assert [e[0] for e in r.xrange("s")] == ["2-2", "3-0"]
    assert r.execute_command("XDEL", "s", "2-2", "3-0") == 2
    # An emptied stream stays, and keeps its last id.
    assert r.exists("s") == 1
    assert r.xlen("s") == 0
    assert "equal or smaller" in err(r, "XADD", "s", "3-0", "f", "v")
    r.set("str", "x")
    for args in (("XLEN", "str"), ("XRANGE", "str", "-", "+"), ("XREVRANGE", "str", "+", "-"),
                 ("XDEL", "str", "1-1"), ("XTRIM", "str", "MAXLEN", "0"), ("XSETID", "str", "1-1"),
                 ("XREAD", "STREAMS", "str", "0")):
        assert err(r, *args) == WRONGTYPE, args


# --- XTRIM / XSETID -----------------------------------------------------------


@pytest.mark.parametrize(
    "args,message",
    [
        (("XTRIM", "s", "FOO", "1"), "syntax error"),
        (("XTRIM", "s", "MAXLEN", "1", "LIMIT", "1"), "syntax error, LIMIT cannot be used without the special ~ option"),
        (("XTRIM", "s", "MAXLEN", "0", "x"), "syntax error"),
        (("XTRIM", "s", "MAXLEN", "-1"), "The MAXLEN argument must be >= 0."),
        (("XTRIM", "s", "MINID", "x"), INVALID),
        (("XTRIM", "s", "MAXLEN"), "wrong number of arguments for 'xtrim' command"),
        (("XTRIM", "nokey", "FOO", "1"), "syntax error"),
    ],
)
def test_xtrim_errors(r, args, message):
    fill(r)
    assert message in err(r, *args)


def test_xtrim_counts(r):
    fill(r)
    assert r.execute_command("XTRIM", "nokey", "MAXLEN", "0") == 0
    assert r.execute_command("XTRIM", "s", "MAXLEN", "~", "1", "LIMIT", "1") == 0
    assert r.execute_command("XTRIM", "s", "MINID", "~", "0") == 0
    assert r.execute_command("XTRIM", "s", "MINID", "3") == 2
    assert r.execute_command("XTRIM", "s", "MAXLEN", "0") == 1
    assert r.xlen("s") == 0


@pytest.mark.parametrize(
    "args,message",
    [
        (("XSETID", "s", "1-1"), "The ID specified in XSETID is smaller than the target stream top item"),
        (("XSETID", "s", "10-0", "ENTRIESADDED", "1"),
         "The entries_added specified in XSETID is smaller than the target stream length"),
        (("XSETID", "s", "10-0", "ENTRIESADDED", "-1"), "entries_added must be positive"),
        (("XSETID", "s", "10-0", "MAXDELETEDID", "11-0"),
         "The ID specified in XSETID is smaller than the provided max_deleted_entry_id"),
        (("XSETID", "s", "10-0", "MAXDELETEDID", "x"), INVALID),
        (("XSETID", "s", "10-0", "FOO"), "syntax error"),
        (("XSETID", "s", "10-0", "ENTRIESADDED"), "syntax error"),
        (("XSETID", "s", "$"), INVALID),
        (("XSETID", "s", "-"), INVALID),
        (("XSETID", "nokey", "1-1"), "no such key"),
    ],
)
def test_xsetid_errors(r, args, message):
    fill(r)
    assert message in err(r, *args)


def test_xsetid_sets_the_last_id(r):
    fill(r)
    assert r.execute_command("XSETID", "s", "9-9") == "OK"
    assert "equal or smaller" in err(r, "XADD", "s", "9-9", "f", "v")
    assert r.execute_command("XADD", "s", "9-*", "f", "v") == "9-10"
    assert r.execute_command("XSETID", "s", "10-0", "ENTRIESADDED", "5", "MAXDELETEDID", "2-0") == "OK"
    # An empty stream takes any id, even a smaller one.
    r.execute_command("XADD", "e", "MAXLEN", "0", "5-5", "f", "v")
    assert r.xlen("e") == 0
    assert r.execute_command("XSETID", "e", "1-1") == "OK"
    assert r.execute_command("XADD", "e", "1-*", "f", "v") == "1-2"


# --- XREAD --------------------------------------------------------------------


def test_xread_reply_shapes(server, r):
    fill(r)
    assert r.xread({"s": "2-2"}) == [["s", [("3-0", {"c": "4"})]]]
    assert r.xread({"s": 0, "nokey": 0}, count=1) == [["s", [("1-1", {"a": "1"})]]]
    assert raw(server.port, ["XREAD", "STREAMS", "s", "9"]) == b"*-1\r\n"
    assert raw(server.port, ["XREAD", "STREAMS", "s", "$"]) == b"*-1\r\n"
    assert raw(server.port, ["XREAD", "STREAMS", "s", "9"], resp3=True) == b"_\r\n"
    assert raw(server.port, ["XREAD", "COUNT", "1", "STREAMS", "s", "2-2"], resp3=True) == (
        b"%1\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\nc\r\n$1\r\n4\r\n")
    assert raw(server.port, ["XREAD", "COUNT", "1", "STREAMS", "s", "2-2"]) == (
        b"*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n3-0\r\n*2\r\n$1\r\nc\r\n$1\r\n4\r\n")
    # COUNT 0 and negative counts read everything; the last COUNT wins.
    assert len(r.execute_command("XREAD", "COUNT", "0", "STREAMS", "s", "0")[0][1]) == 3
    assert len(r.execute_command("XREAD", "COUNT", "-1", "STREAMS", "s", "0")[0][1]) == 3
    assert len(r.execute_command("XREAD", "COUNT", "5", "COUNT", "1", "STREAMS", "s", "0")[0][1]) == 1
    # A key named STREAMS.
    r.execute_command("XADD", "streams", "1-0", "f", "v")
    assert r.execute_command("XREAD", "STREAMS", "streams", "0")[0][0] == "streams"


@pytest.mark.parametrize(
    "args,message",
    [
        (("XREAD", "STREAMS", "s"), "wrong number of arguments for 'xread' command"),
        (("XREAD", "STREAMS", "s", "x", "0"), "Unbalanced XREAD list of streams"),
        (("XREAD", "COUNT", "x", "STREAMS", "s", "0"), "value is not an integer or out of range"),
        (("XREAD", "BLOCK", "x", "STREAMS", "s", "0"), "timeout is not an integer or out of range"),
        (("XREAD", "BLOCK", "1.5", "STREAMS", "s", "0"), "timeout is not an integer or out of range"),
        (("XREAD", "BLOCK", "-1", "STREAMS", "s", "0"), "timeout is negative"),
        (("XREAD", "FOO", "STREAMS", "s", "0"), "syntax error"),
        (("XREAD", "COUNT", "1", "s", "0"), "syntax error"),
        (("XREAD", "STREAMS", "s", "+"), INVALID),
        (("XREAD", "STREAMS", "s", "-"), INVALID),
        (("XREAD", "STREAMS", "s", "(1"), INVALID),
        (("XREAD", "STREAMS", "s", ">"), "The > ID can be specified only when calling XREADGROUP"),
        (("XREAD", "NOACK", "STREAMS", "s", "0"), "The NOACK option is only supported by XREADGROUP"),
        (("XREAD", "GROUP", "g", "c", "STREAMS", "s", "0"), "The GROUP option is only supported by XREADGROUP"),
    ],
)
def test_xread_errors(r, args, message):
    fill(r)
    assert message in err(r, *args)


def test_xread_block_is_served_by_xadd(server, r):
    other = server.client()
    got = {}

    def reader():
        got["reply"] = other.execute_command("XREAD", "BLOCK", "0", "STREAMS", "s", "$")

    r.execute_command("XADD", "s", "1-0", "f", "old")
    t = threading.Thread(target=reader)
    t.start()
    wait_blocked(r, 1)
    r.execute_command("XADD", "s", "2-0", "f", "new")
    t.join(5)
    assert got["reply"] == [["s", [("2-0", {"f": "new"})]]]
    other.close()


def test_xread_block_times_out_with_a_null_array(server, r):
    start = time.time()
    assert raw(server.port, ["XREAD", "BLOCK", "100", "STREAMS", "s", "$"]) == b"*-1\r\n"
    assert time.time() - start >= 0.09
    assert raw(server.port, ["XREAD", "BLOCK", "50", "STREAMS", "s", "$"], resp3=True) == b"_\r\n"


def test_xread_block_with_data_answers_at_once(r):
    fill(r)
    assert r.execute_command("XREAD", "BLOCK", "0", "STREAMS", "s", "2-2") == [["s", [("3-0", {"c": "4"})]]]


def test_xread_block_inside_multi_does_not_block(r):
    p = r.pipeline(transaction=True)
    p.execute_command("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
    p.execute_command("XADD", "s", "1-0", "f", "v")
    p.execute_command("XREAD", "BLOCK", "0", "STREAMS", "s", "0")
    # redis-py reads the null array as an empty list.
    assert p.execute() == [[], "1-0", [["s", [("1-0", {"f": "v"})]]]]


def test_every_reader_waiting_on_a_stream_gets_the_entry(r):
    with running_server(*THREADED) as srv:
        c = srv.client()
        readers = [srv.client() for _ in range(6)]
        replies = [None] * len(readers)

        def read(i):
            replies[i] = readers[i].execute_command("XREAD", "BLOCK", "5000", "STREAMS", "s", "other", "$", "$")

        threads = [threading.Thread(target=read, args=(i,)) for i in range(len(readers))]
        for t in threads:
            t.start()
        wait_blocked(c, len(readers))
        c.execute_command("XADD", "s", "1-0", "f", "v")
        for t in threads:
            t.join(5)
        assert replies == [[["s", [("1-0", {"f": "v"})]]]] * len(readers)
        assert c.info("clients")["blocked_clients"] == 0
        for x in readers + [c]:
            x.close()


def test_readers_waiting_for_later_ids_keep_waiting(server, r):
    r.execute_command("XADD", "s", "5-0", "f", "v")
    a = server.client()
    b = server.client()
    got = {}

    def read(name, c, after):
        got[name] = c.execute_command("XREAD", "BLOCK", "5000", "STREAMS", "s", after)

    ta = threading.Thread(target=read, args=("a", a, "7-0"))
    ta.start()
    wait_blocked(r, 1)
    tb = threading.Thread(target=read, args=("b", b, "5-0"))
    tb.start()
    wait_blocked(r, 2)
    # 6-0 is newer than what b waits for, not than a's 7-0: only b is served,
    # though a blocked first.
    r.execute_command("XADD", "s", "6-0", "f", "w")
    tb.join(5)
    assert got["b"] == [["s", [("6-0", {"f": "w"})]]]
    wait_blocked(r, 1)
    r.execute_command("XADD", "s", "8-0", "f", "x")
    ta.join(5)
    assert got["a"] == [["s", [("8-0", {"f": "x"})]]]
    a.close()
    b.close()


def test_client_unblock_ends_an_xread(server, r):
    c = server.client()
    cid = c.client_id()
    got = {}
    t = threading.Thread(target=lambda: got.setdefault("r", c.execute_command("XREAD", "BLOCK", "0", "STREAMS", "s", "$")))
    t.start()
    wait_blocked(r, 1)
    assert r.client_unblock(cid) == 1
    t.join(5)
    assert got["r"] == []
    c.close()


def test_a_deleted_stream_keeps_its_reader_waiting(server, r):
    r.execute_command("XADD", "s", "5-0", "f", "v")
    c = server.client()
    got = {}
    t = threading.Thread(target=lambda: got.setdefault("r", c.execute_command("XREAD", "BLOCK", "0", "STREAMS", "s", "$")))
    t.start()
    wait_blocked(r, 1)
    r.delete("s")
    r.set("s", "now a string")
    time.sleep(0.1)
    assert r.info("clients")["blocked_clients"] == 1
    r.delete("s")
    # A new stream under the name serves it once it has an entry past 5-0.
    r.execute_command("XADD", "s", "3-0", "f", "old")
    time.sleep(0.1)
    assert r.info("clients")["blocked_clients"] == 1
    r.execute_command("XADD", "s", "6-0", "f", "new")
    t.join(5)
    assert got["r"] == [["s", [("6-0", {"f": "new"})]]]
    c.close()


# --- generic commands, persistence, propagation --------------------------------


def test_type_encoding_and_generic_commands(r):
    fill(r)
    assert r.type("s") == "stream"
    assert r.object("encoding", "s") == "stream"
    assert r.scan(0, _type="stream")[1] == ["s"]
    assert r.memory_usage("s") > 0
    assert r.copy("s", "c") == 1
    assert r.xrange("c") == r.xrange("s")
    r.rename("c", "d")
    assert r.xlen("d") == 3
    assert r.expire("d", 100) == 1
    assert r.move("d", 1) == 1
    dumped = r.dump("s")
    r.delete("s")
    r.restore("s", 0, dumped)
    assert r.xlen("s") == 3
    assert r.xrange("s")[1] == ("2-2", {"a": "2", "b": "3"})
    assert r.unlink("s") == 1


def test_keyspace_events(server, r):
    r.config_set("notify-keyspace-events", "Et")
    try:
        p = r.pubsub()
        p.psubscribe("__keyevent@0__:*")
        p.get_message(timeout=1)
        r.execute_command("XADD", "s", "MAXLEN", "1", "1-0", "f", "v")
        r.execute_command("XADD", "s", "MAXLEN", "1", "2-0", "f", "v")
        r.execute_command("XDEL", "s", "2-0")
        r.execute_command("XSETID", "s", "5-0")
        r.execute_command("XADD", "s", "6-0", "f", "v")
        r.execute_command("XTRIM", "s", "MAXLEN", "0")
        events = []
        while True:
            m = p.get_message(timeout=0.5)
            if m is None:
                break
            events.append(m["channel"].split(":", 1)[1])
        assert events == ["xadd", "xadd", "xtrim", "xdel", "xsetid", "xadd", "xtrim"]
        p.close()
    finally:
        r.config_set("notify-keyspace-events", "")


def test_rdb_round_trip():
    with tempfile.TemporaryDirectory() as d:
        with running_server("--dir", d) as srv:
            c = srv.client()
            for i in range(1, 301):
                c.execute_command("XADD", "s", f"{i}-0", "f", str(i), *(["g", "x"] if i % 7 == 0 else []))
            c.execute_command("XDEL", "s", "150-0")
            c.execute_command("XSETID", "s", "900-0", "ENTRIESADDED", "500", "MAXDELETEDID", "150-0")
            c.execute_command("XADD", "e", "MAXLEN", "0", "5-5", "f", "v")
            want = c.xrange("s")
            c.save()
            c.close()
        with running_server("--dir", d) as srv:
            c = srv.client()
            assert c.xrange("s") == want
            assert c.xlen("e") == 0
            assert "equal or smaller" in err(c, "XADD", "s", "900-0", "f", "v")
            assert "equal or smaller" in err(c, "XADD", "e", "5-5", "f", "v")
            c.close()


def aof_commands(d):
    """Every command in the AOF files under `d`, as lists of strings."""
    out = []
    for root, _, files in os.walk(d):
        for name in sorted(files):
            if ".aof" not in name or name.endswith(".manifest"):
                continue
            data = open(os.path.join(root, name), "rb").read()
            i = 0
            while i < len(data):
                assert data[i:i + 1] == b"*", data[i:i + 40]
                j = data.index(b"\r\n", i)
                n = int(data[i + 1:j])
                i = j + 2
                cmd = []
                for _ in range(n):
                    j = data.index(b"\r\n", i)
                    ln = int(data[i + 1:j])
                    cmd.append(data[j + 2:j + 2 + ln].decode())
                    i = j + 2 + ln + 2
                out.append(cmd)
    return out


def test_aof_logs_chosen_ids_and_exact_trims():
    with tempfile.TemporaryDirectory() as d:
        with running_server("--dir", d, "--appendonly", "yes", "--aof-use-rdb-preamble", "no") as srv:
            c = srv.client()
            auto = c.execute_command("XADD", "s", "*", "f", "v")
            c.execute_command("XADD", "s", f"{int(auto.split('-')[0])}-*", "f", "w")
            for i in range(150):
                c.execute_command("XADD", "t", f"{i + 1}-0", "f", "v")
            c.execute_command("XADD", "t", "MAXLEN", "~", "10", "LIMIT", "1000", "200-0", "f", "v")
            c.execute_command("XTRIM", "t", "MINID", "~", "140")
            c.execute_command("XTRIM", "t", "MAXLEN", "=", "3")
            time.sleep(1.2)
            cmds = [x for x in aof_commands(d) if x[0].upper() in ("XADD", "XTRIM")]
            c.close()
        ms = auto.split("-")[0]
        assert cmds[0] == ["XADD", "s", auto, "f", "v"]
        assert cmds[1] == ["XADD", "s", f"{ms}-1", "f", "w"]
        assert cmds[152] == ["XADD", "t", "MAXLEN", "=", "51", "LIMIT", "1000", "200-0", "f", "v"]
        # An XTRIM that removes nothing is not logged.
        assert cmds[153] == ["XTRIM", "t", "MAXLEN", "=", "3"]
        assert len(cmds) == 154
        # Replaying the log rebuilds the same stream.
        with running_server("--dir", d, "--appendonly", "yes") as srv:
            c = srv.client()
            assert [e[0] for e in c.xrange("t")] == ["149-0", "150-0", "200-0"]
            c.close()


def test_readers_following_a_stream_see_every_entry_once_in_order():
    """Readers loop on XREAD BLOCK from the last id they saw while several
    producers add entries: each reader sees every entry exactly once, in id
    order, across worker threads."""
    with running_server(*THREADED) as srv:
        total, producers = 300, 3
        readers = [srv.client() for _ in range(4)]
        seen = [[] for _ in readers]

        def follow(i):
            last = "0-0"
            while len(seen[i]) < total:
                reply = readers[i].execute_command("XREAD", "COUNT", "7", "BLOCK", "5000", "STREAMS", "s", last)
                assert reply, "timed out"
                for entry_id, fields in reply[0][1]:
                    seen[i].append((entry_id, fields["n"]))
                    last = entry_id

        def produce(p):
            c = srv.client()
            for k in range(total // producers):
                c.execute_command("XADD", "s", "*", "n", f"{p}:{k}")
            c.close()

        threads = [threading.Thread(target=follow, args=(i,)) for i in range(len(readers))]
        threads += [threading.Thread(target=produce, args=(p,)) for p in range(producers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        c = srv.client()
        want = [(e[0], e[1]["n"]) for e in c.xrange("s")]
        assert len(want) == total
        for got in seen:
            assert got == want
        for x in readers + [c]:
            x.close()

"""SORT and SORT_RO: numeric and ALPHA sorting, LIMIT, BY and GET patterns
(hash fields included), STORE, the BY-nosort orderings and the error texts.
The expected replies were produced by redis-server 7.0.15."""

import time
from concurrent.futures import ThreadPoolExecutor

import redis

from conftest import unparsed

# (command, reply) in order, each run on the state the ones before it left.
# Errors are ("error", text). Sets are only listed where Redis's output does
# not depend on its hash order.
CASES = [
    (['rpush', 'l', '3', '10', '1', '2.5', '-1', '0x10', '1e3'], 7),
    (['sort', 'l'], ['-1', '1', '2.5', '3', '10', '0x10', '1e3']),
    (['sort', 'l', 'desc'], ['1e3', '0x10', '10', '3', '2.5', '1', '-1']),
    (['sort', 'l', 'alpha'], ['-1', '0x10', '1', '10', '1e3', '2.5', '3']),
    (['sort', 'l', 'alpha', 'desc'], ['3', '2.5', '1e3', '10', '1', '0x10', '-1']),
    (['sort', 'l', 'limit', '1', '2'], ['1', '2.5']),
    (['sort', 'l', 'limit', '-5', '2'], ['-1', '1']),
    (['sort', 'l', 'limit', '2', '-1'], ['2.5', '3', '10', '0x10', '1e3']),
    (['sort', 'l', 'limit', '0', '0'], []),
    (['sort', 'l', 'limit', '100', '5'], []),
    (['sort', 'l', 'limit', 'a', '5'], ('error', 'value is not an integer or out of range')),
    (['sort', 'l', 'limit', '1'], ('error', 'syntax error')),
    (['sort', 'l', 'limit', '1', '9223372036854775807'], ['1', '2.5', '3', '10', '0x10', '1e3']),
    (['sort', 'l', 'limit', '2', '9223372036854775807'], ['2.5', '3', '10', '0x10', '1e3']),
    (['sort', 'l', 'by', 'nosort'], ['3', '10', '1', '2.5', '-1', '0x10', '1e3']),
    (['sort', 'l', 'by', 'nosort', 'desc'], ['1e3', '0x10', '-1', '2.5', '1', '10', '3']),
    (['sort', 'l', 'by', 'nosort', 'limit', '1', '2'], ['10', '1']),
    (['sort', 'l', 'by', 'nosort', 'desc', 'limit', '1', '2'], ['0x10', '-1']),
    (['sort', 'l', 'by', 'nosort', 'desc', 'limit', '1', '100'], ['0x10', '-1', '2.5', '1', '10', '3']),
    (['sort', 'l', 'by', 'nosort', 'limit', '100', '2'], []),
    (['sort', 'l', 'by', 'nosort', 'limit', '5', '0'], []),
    (['sort', 'l', 'badopt'], ('error', 'syntax error')),
    (['sort', 'l', 'get'], ('error', 'syntax error')),
    (['sort', 'l', 'store'], ('error', 'syntax error')),
    (['sort', 'l', 'by'], ('error', 'syntax error')),
    (['rpush', 'l2', 'a', 'b', 'c', '', ' 5', '5 ', 'inf', '-inf', 'nan', '0x1p3'], 10),
    (['sort', 'l2', 'alpha'], ['', ' 5', '-inf', '0x1p3', '5 ', 'a', 'b', 'c', 'inf', 'nan']),
    (['sort', 'l2'], ('error', "One or more scores can't be converted into double")),
    (['rpush', 'l3', ' 5', '4', '', '6', '+7', 'inf', '-inf', '0x1p3', '  '], 9),
    (['sort', 'l3'], ('error', "One or more scores can't be converted into double")),
    (['rpush', 'l4', '  ', '1'], 2),
    (['sort', 'l4'], ('error', "One or more scores can't be converted into double")),
    (['rpush', 'l7', 'nan', '1'], 2),
    (['sort', 'l7'], ('error', "One or more scores can't be converted into double")),
    (['mset', 'w_a', '3', 'w_b', '1', 'w_c', '2', 'v_a', 'A', 'w_d', 'x'], 'OK'),
    (['hset', 'h_b', 'f', 'B'], 1),
    (['hset', 'h_c', 'f', 'C', 'g', '9'], 2),
    (['rpush', 'p', 'a', 'b', 'c'], 3),
    (['sort', 'p', 'by', 'w_*'], ['b', 'c', 'a']),
    (['sort', 'p', 'by', 'w_*', 'desc'], ['a', 'c', 'b']),
    (['sort', 'p', 'by', 'w_*', 'get', '#', 'get', 'v_*', 'get', 'h_*->f'], ['b', None, 'B', 'c', None, 'C', 'a', 'A', None]),
    (['sort', 'p', 'by', 'h_*->g'], ['a', 'b', 'c']),
    (['sort', 'p', 'by', 'h_*->g', 'alpha'], ['a', 'b', 'c']),
    (['sort', 'p', 'by', 'h_*->g', 'alpha', 'desc'], ['c', 'a', 'b']),
    (['sort', 'p', 'by', 'w_*', 'alpha'], ['b', 'c', 'a']),
    (['sort', 'p', 'by', 'w_*', 'limit', '0', '1'], ['b']),
    (['sort', 'p', 'by', 'w_*', 'limit', '0', '1', 'get', '#'], ['b']),
    (['sort', 'p', 'get', 'nokey'], ('error', "One or more scores can't be converted into double")),
    (['sort', 'p', 'get', '#', 'get', 'w_'], ('error', "One or more scores can't be converted into double")),
    (['sort', 'p', 'get', 'w_*->'], ('error', "One or more scores can't be converted into double")),
    (['sort', 'p', 'get', 'h_*->f->x'], ('error', "One or more scores can't be converted into double")),
    (['sort', 'p', 'by', 'w_*->'], ['a', 'b', 'c']),
    (['sort', 'p', 'by', 'missing_*'], ['a', 'b', 'c']),
    (['sort', 'p', 'by', 'missing_*', 'alpha'], ['a', 'b', 'c']),
    (['sort', 'p', 'by', 'missing_*', 'desc', 'alpha'], ['a', 'b', 'c']),
    (['sort', 'p', 'by', 'w_*', 'store', 'dst'], 3),
    (['lrange', 'dst', '0', '-1'], ['b', 'c', 'a']),
    (['sort', 'p', 'by', 'w_*', 'get', 'h_*->f', 'store', 'dst'], 3),
    (['lrange', 'dst', '0', '-1'], ['B', 'C', '']),
    (['sort', 'p', 'by', 'w_*', 'limit', '0', '0', 'store', 'dst'], 0),
    (['exists', 'dst'], 0),
    (['set', 'dst', 'x'], 'OK'),
    (['sort', 'p', 'store', 'dst'], ('error', "One or more scores can't be converted into double")),
    (['type', 'dst'], 'string'),
    (['rpush', 'pd', 'a', 'b', 'd'], 3),
    (['sort', 'pd', 'by', 'w_*'], ('error', "One or more scores can't be converted into double")),
    (['sort', 'pd', 'by', 'w_*', 'alpha'], ['b', 'a', 'd']),
    (['sadd', 's', '5', '3', '1', '10', '2'], 5),
    (['sort', 's'], ['1', '2', '3', '5', '10']),
    (['sort', 's', 'desc'], ['10', '5', '3', '2', '1']),
    (['sort', 's', 'limit', '1', '2'], ['2', '3']),
    (['sort', 's', 'alpha'], ['1', '10', '2', '3', '5']),
    (['sort', 's', 'by', 'nosort', 'store', 'sdst'], 5),
    (['lrange', 'sdst', '0', '-1'], ['1', '10', '2', '3', '5']),
    (['sadd', 's2', 'b', 'a', 'c'], 3),
    (['sort', 's2', 'alpha'], ['a', 'b', 'c']),
    (['sort', 's2'], ('error', "One or more scores can't be converted into double")),
    (['sort', 's2', 'by', 'nosort', 'store', 'sdst'], 3),
    (['lrange', 'sdst', '0', '-1'], ['a', 'b', 'c']),
    (['zadd', 'z', '3', 'c', '1', 'a', '2', 'b', '0', 'd'], 4),
    (['sort', 'z', 'alpha'], ['a', 'b', 'c', 'd']),
    (['sort', 'z', 'by', 'nosort'], ['d', 'a', 'b', 'c']),
    (['sort', 'z', 'by', 'nosort', 'desc'], ['c', 'b', 'a', 'd']),
    (['sort', 'z', 'by', 'nosort', 'limit', '1', '2'], ['a', 'b']),
    (['sort', 'z', 'by', 'nosort', 'desc', 'limit', '1', '2'], ['b', 'a']),
    (['sort', 'z', 'by', 'nosort', 'limit', '1', '-1'], ['a', 'b', 'c']),
    (['sort', 'z', 'by', 'nosort', 'desc', 'limit', '10', '2'], []),
    (['sort', 'z', 'by', 'nosort', 'store', 'zd'], 4),
    (['lrange', 'zd', '0', '-1'], ['d', 'a', 'b', 'c']),
    (['sort', 'z'], ('error', "One or more scores can't be converted into double")),
    (['zadd', 'z2', '1', '5', '2', '3', '3', '9'], 3),
    (['sort', 'z2'], ['3', '5', '9']),
    (['sort', 'z2', 'by', 'nosort'], ['5', '3', '9']),
    (['sort_ro', 'z2'], ['3', '5', '9']),
    (['sort_ro', 'z2', 'store', 'x'], ('error', 'syntax error')),
    (['sort_ro', 'z2', 'desc', 'limit', '0', '2', 'alpha'], ['9', '5']),
    (['sort_ro', 'z2', 'by', 'nosort', 'desc'], ['9', '3', '5']),
    (['sort', 'nokey'], []),
    (['sort', 'nokey', 'by', 'nosort'], []),
    (['sort', 'nokey', 'store', 'dst'], 0),
    (['exists', 'dst'], 0),
    (['set', 'str', 'x'], 'OK'),
    (['sort', 'str'], ('error', 'WRONGTYPE Operation against a key holding the wrong kind of value')),
    (['sort', 'str', 'by', 'nosort'], ('error', 'WRONGTYPE Operation against a key holding the wrong kind of value')),
    (['sort', 'str', 'badopt'], ('error', 'syntax error')),
    (['hset', 'hh', 'a', '1'], 1),
    (['sort', 'hh'], ('error', 'WRONGTYPE Operation against a key holding the wrong kind of value')),
    (['command', 'getkeys', 'sort', 'a', 'store', 'b'], ['a', 'b']),
    (['command', 'getkeys', 'sort', 'a', 'store', 'b', 'store', 'c'], ['a', 'c']),
    (['command', 'getkeys', 'sort', 'a', 'get', 'store', 'store', 'c'], ['a', 'c']),
    (['command', 'getkeys', 'sort', 'a', 'limit', 'store', '1', 'store', 'd'], ['a', 'd']),
    (['command', 'getkeys', 'sort_ro', 'a', 'by', 'x'], ['a']),
    (['command', 'getkeys', 'sort', 'a'], ['a']),
    (['rpush', 'n', '1', '2', '3'], 3),
    (['mset', 'k_1', 'x', 'k_2', 'y'], 'OK'),
    (['sort', 'n', 'by', 'k_*'], ('error', "One or more scores can't be converted into double")),
    (['sort', 'n', 'by', 'k_*', 'alpha'], ['3', '1', '2']),
    (['rpush', 'dup', 'b', 'a', 'b', 'a'], 4),
    (['sort', 'dup', 'alpha'], ['a', 'a', 'b', 'b']),
    (['sort', 'dup', 'by', 'nosort'], ['b', 'a', 'b', 'a']),
    (['sort', 'dup'], ('error', "One or more scores can't be converted into double")),
    (['rpush', 'big', '5', '3', '9', '1', '7', '2', '8', '4', '6', '0'], 10),
    (['sort', 'big', 'limit', '2', '3', 'desc'], ['7', '6', '5']),
    (['sort', 'big', 'desc', 'limit', '0', '3', 'store', 'out'], 3),
    (['lrange', 'out', '0', '-1'], ['9', '8', '7']),
    (['sort', 'big', 'by', 'nosort', 'limit', '7', '5'], ['4', '6', '0']),
    (['hset', 'hw_1', 'w', '9'], 1),
    (['hset', 'hw_2', 'w', '1'], 1),
    (['rpush', 'hl', '1', '2', '3'], 3),
    (['sort', 'hl', 'by', 'hw_*->w'], ['3', '2', '1']),
    (['sort', 'hl', 'by', 'hw_*->w', 'get', 'hw_*->w', 'get', '#'], [None, '3', '1', '2', '9', '1']),
    (['sort', 'hl', 'by', 'hw_*->w', 'desc', 'store', 'hs'], 3),
    (['lrange', 'hs', '0', '-1'], ['1', '2', '3']),
    (['sort', 'hl', 'by', 'hw_*->missing'], ['1', '2', '3']),
    (['sort', 'hl', 'get', 'hw_*->w', 'store', 'hs2'], 3),
    (['lrange', 'hs2', '0', '-1'], ['9', '1', '']),
]


def test_every_option_as_redis(r):
    for args, expected in CASES:
        assert unparsed(r, *args) == expected, args


def test_resp3_as_redis(r3):
    for args, expected in CASES:
        assert unparsed(r3, *args) == expected, args


def test_out_of_range_weights_are_errors(server):
    # Each on a connection of its own: Redis reads these weights with strtod
    # and leaves its ERANGE behind, which a later SORT on the same connection
    # could see.
    for value in ("1e400", "1e-400"):
        c = server.client()
        c.flushall()
        c.rpush("l", value, "1")
        assert unparsed(c, "SORT", "l") == ("error", "One or more scores can't be converted into double")
        assert unparsed(c, "SORT", "l", "ALPHA") == ["1", value]
        c.close()


def test_tiny_weights_follow_strtod(server):
    """SORT refuses what strtod flags with ERANGE, inexact subnormals too
    (other commands accept them); an exact hexadecimal subnormal is fine."""
    for value, ok in (("1e-310", False), ("-4.9406564584124654e-324", False),
                      ("0x1.0000000000001p-1060", False), ("0x1p-1074", True), ("0x1.8p-1070", True)):
        c = server.client()
        c.flushall()
        c.rpush("l", "1", value)
        c.mset({"w_a": value, "w_b": "-1"})
        c.rpush("byw", "a", "b")
        if ok:
            assert unparsed(c, "SORT", "l") == [value, "1"], value
            assert unparsed(c, "SORT", "byw", "BY", "w_*") == ["b", "a"], value
        else:
            error = ("error", "One or more scores can't be converted into double")
            assert unparsed(c, "SORT", "l") == error, value
            assert unparsed(c, "SORT", "byw", "BY", "w_*") == error, value
        c.close()


def test_sort_ro_and_getkeys(r):
    def keys(*args):
        return unparsed(r, "COMMAND", "GETKEYS", *args)
    assert keys("SORT", "a", "STORE", "b") == ["a", "b"]
    assert keys("SORT", "a", "STORE", "b", "STORE", "c") == ["a", "c"]
    assert keys("SORT", "a", "GET", "STORE", "STORE", "c") == ["a", "c"]
    assert keys("SORT", "a", "LIMIT", "STORE", "1", "STORE", "d") == ["a", "d"]
    assert keys("SORT_RO", "a", "BY", "x") == ["a"]
    assert unparsed(r, "COMMAND", "GETKEYSANDFLAGS", "SORT", "a", "STORE", "b") == [
        ["a", ["RO", "access"]], ["b", ["OW", "update"]]]
    sort, sort_ro = unparsed(r, "COMMAND", "INFO", "SORT", "SORT_RO")
    assert "movablekeys" in sort[2] and "movablekeys" in sort_ro[2]
    assert unparsed(r, "SORT_RO", "a", "STORE", "b") == ("error", "syntax error")


def test_scripts_and_transactions_reach_pattern_keys(r):
    r.rpush("l", "a", "b", "c")
    r.mset({"w_a": "3", "w_b": "1", "w_c": "2", "v_b": "B"})
    r.sadd("s", "z", "y", "x")
    script = "return redis.call('SORT', KEYS[1], 'BY', 'w_*', 'GET', 'v_*', 'GET', '#')"
    assert r.eval(script, 1, "l") == ["B", "b", None, "c", None, "a"]
    # A set with no sort order is sorted by bytes inside a script.
    assert r.eval("return redis.call('SORT', KEYS[1], 'BY', 'nosort')", 1, "s") == ["x", "y", "z"]
    p = r.pipeline(transaction=True)
    p.execute_command("SORT", "l", "BY", "w_*", "STORE", "dst")
    p.lrange("dst", 0, -1)
    assert p.execute() == [3, ["b", "c", "a"]]


def test_store_notifies_sortstore(r, server):
    r.config_set("notify-keyspace-events", "KEA")
    p = server.client().pubsub()
    p.psubscribe("__keyevent@0__:*")
    assert p.get_message(timeout=1)["type"] == "psubscribe"
    r.rpush("l", "2", "1")
    unparsed(r, "SORT", "l", "STORE", "d")
    unparsed(r, "SORT", "nokey", "STORE", "d")
    events = []
    while True:
        m = p.get_message(timeout=0.5)
        if m is None:
            break
        events.append((m["channel"], m["data"]))
    p.close()
    assert events == [
        ("__keyevent@0__:rpush", "l"),
        ("__keyevent@0__:sortstore", "d"),
        ("__keyevent@0__:del", "d"),
    ]


def test_acl_key_patterns_limit_by_get_and_store(r, server):
    r.execute_command("ACL", "SETUSER", "sorter", "on", ">pw", "+@all", "~lx*")
    try:
        c = server.client(username="sorter", password="pw")
        c.rpush("lx", "2", "1")
        assert unparsed(c, "SORT", "lx", "BY", "w_*") == (
            "error", "BY option of SORT denied due to insufficient ACL permissions.")
        assert unparsed(c, "SORT", "lx", "GET", "w_*") == (
            "error", "GET option of SORT denied due to insufficient ACL permissions.")
        assert unparsed(c, "SORT", "lx", "BY", "nosort") == ["2", "1"]
        assert unparsed(c, "SORT", "lx", "STORE", "other") == (
            "error", "this user has no permissions to access one of the keys used as arguments")
        assert unparsed(c, "SORT", "lx", "STORE", "lxd") == 2
        c.close()
    finally:
        r.execute_command("ACL", "DELUSER", "sorter")


# Ties under BY: Redis sorts with glibc's stable qsort, but with its own
# partial quicksort (not stable) when BY names a pattern and LIMIT narrows
# the range, so tied elements come back in that algorithm's order. Sets of
# integers are read in ascending order, with BY nosort too (DESC does not
# reverse a set). Replies from redis-server 7.0.15.
TIE_CASES = [
    (['sort', 'l', 'by', 'w_*', 'alpha', 'limit', '0', '5'], ['60', '57', '58', '59', '4']),
    (['sort', 'l', 'by', 'w_*', 'alpha', 'limit', '10', '5', 'desc'], ['13', '14', '15', '16', '17']),
    (['sort', 'l', 'by', 'w_*', 'alpha', 'limit', '55', '10'], ['55', '56', '2', '1', '3']),
    (['sort', 'l', 'by', 'w_*', 'alpha'], [str(i) for i in range(4, 61)] + ['1', '2', '3']),
    (['sort', 'l', 'by', 'h_*->f', 'alpha', 'limit', '1', '4', 'get', '#', 'get', 'h_*->f'],
     ['2', None, '3', None, '4', None, '59', None]),
    (['sort', 'l', 'by', 'h_*->f', 'alpha', 'desc', 'limit', '0', '3'], ['7', '5', '3']),
    (['sort', 'is', 'by', 'nosort'], ['-2', '1', '3', '5', '10']),
    (['sort', 'is', 'by', 'nosort', 'desc', 'limit', '1', '3'], ['1', '3', '5']),
    (['sort', 'is', 'by', 'w_*', 'alpha', 'limit', '0', '2'], ['-2', '5']),
]


def test_ties_come_back_as_in_redis(r):
    r.rpush("l", *range(1, 61))
    r.mset({"w_1": "x", "w_2": "x", "w_3": "y"})
    r.hset("h_5", "f", "x")
    r.hset("h_7", "f", "x")
    r.sadd("is", 5, 3, 10, 1, -2)
    for args, expected in TIE_CASES:
        assert unparsed(r, *args) == expected, args


def test_sort_converts_a_compact_sorted_set(r):
    """Redis turns a listpack sorted set it sorts into a skiplist for good
    (SORT_RO too); a SORT refused for its syntax leaves it alone."""
    r.zadd("zz", {"a": 1, "b": 2})
    assert r.object("encoding", "zz") == "listpack"
    assert unparsed(r, "SORT", "zz", "bad") == ("error", "syntax error")
    assert r.object("encoding", "zz") == "listpack"
    assert unparsed(r, "SORT_RO", "zz", "BY", "nosort") == ["a", "b"]
    assert r.object("encoding", "zz") == "skiplist"
    r.zadd("zz", {"c": 3})
    assert r.object("encoding", "zz") == "skiplist"
    assert unparsed(r, "SORT", "zz", "ALPHA", "DESC") == ["c", "b", "a"]


def test_store_serves_a_blocked_client(r, server):
    """SORT ... STORE creates its destination list: a client blocked on it is
    served, with and without BY and GET patterns."""
    r.rpush("src", "3", "1", "2")
    r.mset({"w_1": "9", "w_2": "8", "w_3": "7"})
    for extra, first in (([], "1"), (["BY", "w_*"], "3")):
        r.delete("dst")
        blocked = server.client()
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(blocked.blpop, ["dst"], 5)
            deadline = time.time() + 5
            while r.info("clients")["blocked_clients"] != 1:
                assert time.time() < deadline, "client never blocked"
                time.sleep(0.01)
            assert unparsed(r, "SORT", "src", *extra, "STORE", "dst") == 3
            assert list(pending.result(timeout=5)) == ["dst", first]
        blocked.close()
        assert r.lrange("dst", 0, -1) == (["2", "3"] if first == "1" else ["2", "1"])

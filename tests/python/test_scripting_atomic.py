"""Scripts are atomic on every thread: a script never sees another client's
write half done, and scripts that reach keys they did not declare still run
atomically (Keel then takes every shard for them)."""

import threading

import pytest

from conftest import running_server

PAIR = "return {redis.call('GET', KEYS[1]), redis.call('GET', KEYS[2])}"
PAIR_UNDECLARED = "return {redis.call('GET', ARGV[1]), redis.call('GET', ARGV[2])}"
INCR_UNDECLARED = """
local v = tonumber(redis.call('GET', ARGV[1]) or '0')
redis.call('SET', ARGV[1], v + 1)
return v + 1
"""
# Writes its declared key first, then reaches an undeclared one: the case
# where the script cannot start over and must wait for the other shard.
WRITE_THEN_UNDECLARED = """
redis.call('INCR', KEYS[1])
local v = tonumber(redis.call('GET', ARGV[1]) or '0')
redis.call('SET', ARGV[1], v + 1)
return v + 1
"""


def _keys(n):
    # Enough distinct names that they spread over many shards.
    return [f"k:{i}:{{x{i * 7919}}}" for i in range(n)]


def _writer(server, a, b, stop, errors):
    w = server.client()
    i = 0
    try:
        while not stop.is_set():
            i += 1
            if i % 2:
                w.mset({a: i, b: i})
            else:
                p = w.pipeline(transaction=True)
                p.set(a, i)
                p.set(b, i)
                p.execute()
    except Exception as e:  # noqa: BLE001 - reported by the test
        errors.append(e)


@pytest.mark.parametrize("script", [PAIR, PAIR_UNDECLARED])
def test_script_never_sees_a_half_written_pair(script):
    with running_server() as s:
        r = s.client()
        a, b = "pair:a", "pair:b:{other}"
        r.mset({a: 0, b: 0})
        reader = s.client()
        stop = threading.Event()
        errors = []
        t = threading.Thread(target=_writer, args=(s, a, b, stop, errors))
        t.start()
        try:
            seen = set()
            for _ in range(1500):
                if script is PAIR:
                    x, y = reader.eval(script, 2, a, b)
                else:
                    x, y = reader.eval(script, 0, a, b)
                assert x == y, f"script saw {a}={x} but {b}={y}"
                seen.add(x)
        finally:
            stop.set()
            t.join()
        assert not errors
        # The writer really ran while the scripts did.
        assert len(seen) > 10


def test_undeclared_keys_across_shards_are_read_and_written():
    with running_server() as s:
        r = s.client()
        keys = _keys(40)
        script = """
for i, k in ipairs(ARGV) do redis.call('SET', k, i) end
local sum = 0
for _, k in ipairs(ARGV) do sum = sum + tonumber(redis.call('GET', k)) end
return sum
"""
        assert r.eval(script, 0, *keys) == sum(range(1, 41))
        assert r.mget(keys) == [str(i) for i in range(1, 41)]


@pytest.mark.parametrize("script,declared", [(INCR_UNDECLARED, False), (WRITE_THEN_UNDECLARED, True)])
def test_concurrent_read_modify_write_on_undeclared_keys_loses_nothing(script, declared):
    with running_server() as s:
        counters = _keys(6)
        rounds, workers = 300, 4
        errors = []

        def work(w):
            c = s.client()
            try:
                for i in range(rounds):
                    # Each worker walks the counters in its own order, so
                    # scripts want each other's shards in opposite orders.
                    k = counters[(i * (w + 1)) % len(counters)]
                    if declared:
                        c.eval(script, 1, f"own:{w}", k)
                    else:
                        c.eval(script, 0, k)
            except Exception as e:  # noqa: BLE001 - reported by the test
                errors.append(e)

        threads = [threading.Thread(target=work, args=(w,)) for w in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors[:3]
        r = s.client()
        total = sum(int(v or 0) for v in r.mget(counters))
        assert total == rounds * workers
        if declared:
            assert [int(v) for v in r.mget([f"own:{w}" for w in range(workers)])] == [rounds] * workers

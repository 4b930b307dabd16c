"""Client-side caching, side by side with redis-server: seeded random steps
(a tracked RESP3 client reads and writes, another client writes, CLIENT
CACHING toggles) in each tracking mode, run against Keel and a live
redis-server; the invalidation pushes the tracked client receives after each
step must be the same, in the same order.

Runs when a redis-server binary is installed; against Redis itself
(KEEL_TEST_AGAINST=redis) it compares Redis with Redis."""

import os
import random

import pytest

from conftest import REDIS_SERVER
from rawresp import Push, Raw, Resp3

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="needs a redis-server binary to compare with")

SEEDS = int(os.environ.get("KEEL_TRACKING_DIFF_SEEDS", "4"))
STEPS = int(os.environ.get("KEEL_TRACKING_DIFF_STEPS", "150"))
MODES = {
    "default": [],
    "bcast": ["BCAST", "PREFIX", "a", "PREFIX", "h"],
    "optin": ["OPTIN"],
    "optout": ["OPTOUT"],
    "noloop": ["NOLOOP"],
}
KEYS = ["a1", "a2", "b1", "h1", "h2"]


def step(rng, mode):
    k, k2 = rng.choice(KEYS), rng.choice(KEYS)
    reads = [("T", ["GET", k]), ("T", ["MGET", k, k2]), ("T", ["HGET", k, "f"]),
             ("T", ["EXISTS", k]), ("T", ["STRLEN", k])]
    writes = [["SET", k, "v"], ["DEL", k], ["HSET", k, "f", "1"], ["EXPIRE", k, "100"],
              ["APPEND", k, "x"], ["MSET", k, "1", k2, "2"], ["RENAME", k, k2], ["INCR", k]]
    choices = reads + [("W", w) for w in writes] + [("T", w) for w in writes[:3]]
    if mode in ("optin", "optout"):
        choices += [("T", ["CLIENT", "CACHING", "YES" if mode == "optin" else "NO"])] * 4
    if rng.random() < 0.02:
        return ("W", ["FLUSHDB"])
    return rng.choice(choices)


def run(port, mode, steps):
    t, w = Resp3(port), Raw(port)
    t.cmd("HELLO", "3")
    assert t.cmd("CLIENT", "TRACKING", "ON", *MODES[mode]) == "OK"
    out = []
    for who, argv in steps:
        conn = t if who == "T" else w
        conn.send(*argv)
        got = []
        while True:
            r = conn.read()
            if not isinstance(r, Push):
                break
            got.append(r)
        # Whatever the step sent the tracked client arrives before its PONG.
        t.send("PING")
        while True:
            r = t.read()
            if not isinstance(r, Push):
                break
            got.append(r)
        reply = type(r).__name__ if who == "T" else None
        out.append((reply, [[x for x in p] for p in got]))
    w.cmd("FLUSHALL")
    t.close()
    w.close()
    return out


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("seed", range(SEEDS))
def test_invalidations_match_redis(seed, mode, keel, reference):
    rng = random.Random(f"{mode}{seed}")
    steps = [step(rng, mode) for _ in range(STEPS)]
    want = run(reference, mode, steps)
    got = run(keel, mode, steps)
    if mode != "optin":  # there only a read right after CACHING YES is tracked
        assert any(pushes for _, pushes in want), "the steps invalidate something"
    for i, s in enumerate(steps):
        assert got[i] == want[i], f"{mode} seed {seed} step {i}: {s}"

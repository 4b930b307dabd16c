"""Pub/sub, side by side with redis-server: seeded random steps in which one
client (RESP2 or RESP3) subscribes, unsubscribes, pings, resets and tries
commands subscribed mode refuses, while another publishes and asks PUBSUB;
everything each client receives after each step must be the same. Only the
order Redis takes from its hash tables (UNSUBSCRIBE with no argument, PUBSUB
CHANNELS) is compared as a set.

Runs when a redis-server binary is installed; against Redis itself
(KEEL_TEST_AGAINST=redis) it compares Redis with Redis."""

import os
import random

import pytest

from conftest import REDIS_SERVER
from rawresp import Resp3

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="needs a redis-server binary to compare with")

SEEDS = int(os.environ.get("KEEL_PUBSUB_DIFF_SEEDS", "6"))
STEPS = int(os.environ.get("KEEL_PUBSUB_DIFF_STEPS", "200"))
CHANNELS = ["news", "news.1", "sport", "n"]
PATTERNS = ["news*", "n?", "*", "s[po]ort", "x"]
UNORDERED = {"UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE"}
DELIVERED = {2: 0, 3: 0}


def step(rng):
    ch = rng.sample(CHANNELS, rng.randint(1, 2))
    pat = rng.sample(PATTERNS, rng.randint(1, 2))
    sub = [
        ["SUBSCRIBE", *ch], ["PSUBSCRIBE", *pat], ["SSUBSCRIBE", ch[0]],
        ["UNSUBSCRIBE", *ch], ["UNSUBSCRIBE"], ["PUNSUBSCRIBE", *pat], ["PUNSUBSCRIBE"],
        ["SUNSUBSCRIBE", ch[0]], ["SUNSUBSCRIBE"], ["PING"], ["PING", "hi"], ["GET", "k"],
        ["SET", "k", "v"], ["RESET"], ["QUIT"] if rng.random() < 0.05 else ["PING"],
    ]
    pub = [
        ["PUBLISH", ch[0], "m"], ["SPUBLISH", ch[0], "s"], ["PUBSUB", "CHANNELS"],
        ["PUBSUB", "CHANNELS", pat[0]], ["PUBSUB", "NUMSUB", *ch], ["PUBSUB", "NUMPAT"],
        ["PUBSUB", "SHARDCHANNELS"], ["PUBSUB", "SHARDNUMSUB", *ch], ["PUBSUB", "NOSUCH"],
    ]
    if rng.random() < 0.5:
        return ("A", rng.choice(sub))
    return ("B", rng.choice(pub))


def norm(argv, frames):
    """Frames whose order comes from Redis's hash tables, as a set."""
    if argv[0] in UNORDERED and len(argv) == 1:
        return ("unordered", sorted(repr(f[:2]) for f in frames), [f[2] for f in frames
                                                                  if isinstance(f, list)])
    if argv[:2] == ["PUBSUB", "CHANNELS"] or argv[:2] == ["PUBSUB", "SHARDCHANNELS"]:
        return [sorted(f) if isinstance(f, list) else f for f in frames]
    return frames


def drain(conn, proto):
    """Send a PING and read everything up to its answer."""
    conn.send("PING", "barrier")
    got = []
    while True:
        r = conn.read()
        if r in (b"barrier", "barrier") or (isinstance(r, list) and r[:2] == [b"pong", b"barrier"]):
            return got
        got.append(r)


def run(port, proto, steps):
    a, b = Resp3(port), Resp3(port)
    if proto == 3:
        a.cmd("HELLO", "3")
    out = []
    for who, argv in steps:
        conn = a if who == "A" else b
        if argv == ["QUIT"]:
            a.send(*argv)
            out.append(("quit", a.read()))
            a.close()
            a = Resp3(port)
            if proto == 3:
                a.cmd("HELLO", "3")
            continue
        conn.send(*argv)
        frames = drain(conn, proto)
        if who == "B":
            got = drain(a, proto)
            if argv[0] == "PUBLISH":
                # One pmessage per matching pattern, in Redis's hash order.
                got = sorted(got, key=repr)
            frames.append(("A", got))
        out.append(norm(argv, frames))
    a.close()
    b.close()
    return out


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("seed", range(SEEDS))
def test_pubsub_matches_redis(seed, proto, keel, reference):
    rng = random.Random(f"{proto}-{seed}")
    steps = [step(rng) for _ in range(STEPS)]
    want = run(reference, proto, steps)
    got = run(keel, proto, steps)
    for i, s in enumerate(steps):
        assert got[i] == want[i], f"RESP{proto} seed {seed} step {i}: {s}"
    delivered = [f for w in want if isinstance(w, list) for x in w if isinstance(x, tuple)
                 for f in x[1]]
    DELIVERED[proto] += sum(f[0] in (b"message", b"pmessage", b"smessage") for f in delivered)


def test_the_steps_delivered_messages():
    # The comparisons above ran (this file's tests run in order) and were not
    # vacuous: messages reached the subscriber in both protocols.
    assert DELIVERED[2] > 0 and DELIVERED[3] > 0

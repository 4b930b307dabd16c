"""ACL, side by side with redis-server: seeded random ACL SETUSER rule lists
(valid and not) applied to one user on Keel and on a live redis-server; the
SETUSER replies, the user's GETUSER fields and ACL DRYRUN of a fixed set of
probe commands must be the same. The command part of a description is Redis's
best fit of categories over its own command table, which Keel's (with the
module commands it serves natively) is not; so it is checked by its meaning
instead: on each server, a second user built from the first one's ACL LIST
line must answer every probe as the first does.

Runs when a redis-server binary is installed; against Redis itself
(KEEL_TEST_AGAINST=redis) it compares Redis with Redis."""

import os
import random

import pytest

from conftest import REDIS_SERVER
from rawresp import Resp3

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="needs a redis-server binary to compare with")

SEEDS = int(os.environ.get("KEEL_ACL_DIFF_SEEDS", "10"))
STEPS = int(os.environ.get("KEEL_ACL_DIFF_STEPS", "40"))
CATEGORIES = ["all", "read", "write", "keyspace", "string", "hash", "list", "set", "sortedset",
              "stream", "pubsub", "admin", "dangerous", "fast", "slow", "connection",
              "transaction", "scripting", "geo", "bitmap", "hyperloglog", "blocking", "nosuch"]
COMMANDS = ["get", "set", "client", "client|kill", "client|list", "config|get", "config",
            "select", "select|0", "select|1", "get|k", "debug", "keys", "flushall", "publish",
            "subscribe", "eval", "hset", "lpush", "zadd", "xadd", "acl|whoami", "acl",
            "nosuch", "config|nosuch", "get|", "object|freq"]
PROBES = [["GET", "k"], ["SET", "k", "v"], ["GET", "cache:1"], ["SET", "cache:1", "v"],
          ["SET", "other:x", "v"], ["COPY", "cache:1", "other:1"], ["PUBLISH", "chan", "m"],
          ["PUBLISH", "news.1", "m"], ["SUBSCRIBE", "news.2"], ["PSUBSCRIBE", "news*"],
          ["CONFIG", "GET", "port"], ["CLIENT", "KILL", "ID", "1"], ["CLIENT", "LIST"],
          ["SELECT", "0"], ["SELECT", "1"], ["EVAL", "return 1", "0"], ["LPUSH", "cache:l", "a"],
          ["HSET", "h", "f", "v"], ["ZADD", "z", "1", "m"], ["KEYS", "*"], ["FLUSHALL"],
          ["ACL", "WHOAMI"], ["OBJECT", "FREQ", "k"], ["MGET", "cache:1", "k"],
          ["XADD", "cache:s", "*", "f", "v"], ["SORT", "cache:l", "STORE", "other:2"]]


def rule(rng):
    r = rng.random()
    if r < 0.3:
        return rng.choice(["+", "-"]) + "@" + rng.choice(CATEGORIES)
    if r < 0.55:
        return rng.choice(["+", "-"]) + rng.choice(COMMANDS)
    if r < 0.7:
        return rng.choice(["~cache:*", "%R~k*", "%W~other:*", "%RW~h", "~*", "allkeys",
                           "resetkeys", "%X~bad", "%~x"])
    if r < 0.8:
        return rng.choice(["&news.*", "&chan", "allchannels", "resetchannels", "&*"])
    if r < 0.9:
        return rng.choice(["on", "off", ">pw", "<pw", "nopass", "resetpass", "reset",
                           "allcommands", "nocommands", "clearselectors", "skip-sanitize-payload",
                           "sanitize-payload", "#" + "a" * 64, "#bad", "bogus"])
    inner = " ".join(rng.choice(["+get", "~cache:*", "+@read", "&chan", "-set", "%W~x*"])
                     for _ in range(rng.randint(1, 3)))
    return f"({inner})" if rng.random() < 0.9 else f"({inner}"


def words(line):
    return sorted(line.split()) if isinstance(line, (str, bytes)) else line


def dryrun(c, user):
    return [c.cmd("ACL", "DRYRUN", user, *p) for p in PROBES]


def describe(c):
    listed = [x for x in c.cmd("ACL", "LIST") if x.startswith(b"user u ")]
    got = c.cmd("ACL", "GETUSER", "u")
    fields = {}
    if got:
        for k, v in got:
            if k == b"commands":
                continue
            fields[k] = words(v) if k in (b"keys", b"channels") else (
                [sorted(repr(x) for x in s if x[0] != b"commands") for s in v]
                if k == b"selectors" else v)
    if not listed:
        return fields, []
    dry = dryrun(c, "u")
    # The description means the same permissions.
    c.cmd("ACL", "DELUSER", "copy")
    assert c.cmd("ACL", "SETUSER", "copy", *listed[0].split()[2:]) == "OK", listed[0]
    assert dryrun(c, "copy") == [
        d.replace(b"'u'", b"'copy'") if isinstance(d, bytes) else d for d in dry], listed[0]
    return fields, dry


def run(port, steps):
    c = Resp3(port)
    c.cmd("HELLO", "3")
    c.cmd("ACL", "DELUSER", "u")
    out = []
    for rules in steps:
        reply = c.cmd("ACL", "SETUSER", "u", *rules)
        out.append((reply, describe(c)))
    c.cmd("ACL", "DELUSER", "u")
    c.close()
    return out


@pytest.mark.parametrize("seed", range(SEEDS))
def test_acl_matches_redis(seed, keel, reference):
    rng = random.Random(seed)
    steps = [[rule(rng) for _ in range(rng.randint(1, 4))] for _ in range(STEPS)]
    want = run(reference, steps)
    got = run(keel, steps)
    for i, s in enumerate(steps):
        assert got[i] == want[i], f"seed {seed} step {i}: {s}"

"""Streams, side by side with redis-server: seeded random sequences of stream
commands (valid and not) run against Keel and a live redis-server, and every
reply must be the same, byte for byte and type for type. Only what depends on
the clock is normalised: idle times, delivery and seen times.

Runs when a redis-server binary is installed; against Redis itself
(KEEL_TEST_AGAINST=redis) it compares Redis with Redis."""

import os
import random
import shutil
import socket
import tempfile

import pytest

from conftest import REDIS_SERVER, Server, reference_redis


pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="needs a redis-server binary to compare with")

# Every explicit id's milliseconds lie above this, far beyond the clock, so
# `*` on a stream holding one picks last+1 on both servers alike.
BASE_MS = 10**13
SEEDS = int(os.environ.get("KEEL_STREAM_DIFF_SEEDS", "12"))
STEPS = int(os.environ.get("KEEL_STREAM_DIFF_STEPS", "500"))
TIME_FIELDS = {b"idle", b"seen-time", b"active-time", b"inactive"}


class Nil:
    def __init__(self, kind):
        self.kind = kind

    def __eq__(self, other):
        return isinstance(other, Nil) and other.kind == self.kind

    def __repr__(self):
        return f"nil{self.kind}"


class Conn:
    """A bare RESP2 connection whose replies keep their exact types."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.f = self.sock.makefile("rb")

    def cmd(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)
        return self.read()

    def read(self):
        line = self.f.readline()
        if not line:
            raise ConnectionError("closed by server")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return ("+", rest)
        if kind == b"-":
            return ("-", rest)
        if kind in (b":", b"("):
            return int(rest)
        if kind == b",":
            return ("double", rest)
        if kind == b"#":
            return ("bool", rest)
        if kind == b"_":
            return Nil("_")
        if kind in (b"$", b"="):
            n = int(rest)
            return Nil("$") if n < 0 else self.f.read(n + 2)[:-2]
        if kind in (b"*", b"~"):
            n = int(rest)
            if n < 0:
                return Nil("*")
            items = [self.read() for _ in range(n)]
            return items if kind == b"*" else ("set", items)
        if kind == b"%":
            # Kept as a flat list tagged as a map, so time fields normalise.
            return ("map", [self.read() for _ in range(2 * int(rest))])
        raise AssertionError(f"unexpected reply {line!r}")

    def close(self):
        self.f.close()
        self.sock.close()


def normalise(reply, command=b""):
    """Clock-dependent values become "T": the value after a time field's
    name, integers as large as a Unix time in milliseconds (delivery times
    in XINFO STREAM FULL) and the idle times of XPENDING's rows."""
    if command.upper() == b"XPENDING" and isinstance(reply, list) and command:
        return [r[:2] + ["T"] + r[3:] if isinstance(r, list) and len(r) == 4 else r for r in reply]
    if isinstance(reply, int):
        return "T" if reply > 10**12 else reply
    if isinstance(reply, tuple) and reply[0] in ("map", "set"):
        return (reply[0], normalise(reply[1], command))
    if not isinstance(reply, list):
        return reply
    out = []
    for i, x in enumerate(reply):
        if i > 0 and isinstance(reply[i - 1], bytes) and reply[i - 1] in TIME_FIELDS:
            out.append("T")
        else:
            out.append(normalise(x))
    return out


class Gen:
    """Random stream commands over a few keys, groups and consumers."""

    KEYS = [b"s1", b"s2", b"s3"]

    def __init__(self, seed, redis_conn):
        self.rnd = random.Random(seed)
        self.redis = redis_conn
        self.top = {k: 0 for k in self.KEYS}

    def key(self):
        r = self.rnd.random()
        if r < 0.04:
            return b"str"
        if r < 0.06:
            return b"nokey"
        return self.rnd.choice(self.KEYS)

    def group(self):
        return self.rnd.choice([b"g1", b"g1", b"g2", b"g3"])

    def consumer(self):
        return self.rnd.choice([b"c1", b"c2", b"c3"])

    def ms(self, key=None):
        top = self.top.get(key, 0)
        return BASE_MS + max(0, top + self.rnd.randint(-6, 3))

    def bad_id(self):
        return self.rnd.choice([
            b"abc", b"1-", b"-1", b"1-x", b"18446744073709551616", b"1-18446744073709551616",
            b"", b" 1", b"1.5", b"0x10", b"+1", b"-", b"+", b"*", b"$", b">", b"1-*", b"(", b"(+",
        ])

    def id(self, key=None):
        r = self.rnd.random()
        if r < 0.05:
            return self.bad_id()
        if r < 0.12:
            return self.rnd.choice([b"0", b"0-0", b"0-1", b"18446744073709551615-18446744073709551615",
                                    b"18446744073709551615"])
        ms = self.ms(key)
        if r < 0.3:
            return str(ms).encode()
        return f"{ms}-{self.rnd.randint(0, 3)}".encode()

    def range_id(self, key, start):
        r = self.rnd.random()
        if r < 0.15:
            return b"-" if start else b"+"
        if r < 0.2:
            return b"+" if start else b"-"
        i = self.id(key)
        if self.rnd.random() < 0.25:
            i = b"(" + i
        return i

    def count(self):
        return self.rnd.choice([b"0", b"1", b"2", b"3", b"5", b"100", b"-1", b"x", b"9223372036854775807",
                                b"922337203685477580", b"922337203685477581"])

    def fields(self):
        n = self.rnd.choice([1, 1, 2, 3])
        out = []
        for _ in range(n):
            value = str(self.rnd.randint(0, 99)).encode()
            if self.rnd.random() < 0.1:
                value *= self.rnd.choice([10, 40, 40, 2500])
            out += [self.rnd.choice([b"f", b"g", b"h", b"field"]), value]
        if self.rnd.random() < 0.03:
            out = out[:-1]
        return out

    def trim(self, key):
        r = self.rnd.random()
        out = []
        if r < 0.5:
            out.append(self.rnd.choice([b"MAXLEN", b"maxlen", b"MINID"]))
            out += self.rnd.choice([[], [b"~"], [b"="]])
            if out[0].upper() == b"MAXLEN":
                out.append(self.rnd.choice([b"0", b"1", b"3", b"5", b"10", b"-1", b"x"]))
            else:
                out.append(self.id(key))
            if self.rnd.random() < 0.2:
                out += [b"LIMIT", self.rnd.choice([b"0", b"1", b"2", b"10", b"-1"])]
        elif r < 0.55:
            out += [b"LIMIT", b"5"]
        return out

    def observe(self, args, reply):
        """Follow the top of each stream from Redis's replies to XADD."""
        if args[0].upper() == b"XADD" and isinstance(reply, bytes) and b"-" in reply:
            self.top[args[1]] = max(0, int(reply.split(b"-")[0]) - BASE_MS)

    def star_ok(self, key):
        """Whether `*` on `key` is deterministic: its last id lies beyond the clock."""
        info = self.redis.cmd("XINFO", "STREAM", key)
        if isinstance(info, tuple) and info[0] == "map":
            info = info[1]
        if not isinstance(info, list):
            return False
        last = info[info.index(b"last-generated-id") + 1]
        return int(last.split(b"-")[0]) >= BASE_MS

    def xadd(self):
        k = self.key()
        args = [b"XADD", k]
        if self.rnd.random() < 0.1:
            args.append(b"NOMKSTREAM")
        args += self.trim(k)
        r = self.rnd.random()
        if r < 0.15 and self.star_ok(k):
            args.append(b"*")
        elif r < 0.3:
            args.append(f"{self.ms(k)}-*".encode())
        elif r < 0.33:
            # Not `*`: on a stream without a far-future id it takes the clock.
            args.append(self.rnd.choice([b for b in (self.bad_id(), b"abc") if b != b"*"]))
        else:
            # Mostly past the top, sometimes at or below it.
            ms = BASE_MS + max(0, self.top.get(k, 0) + self.rnd.choice([-2, 0, 0, 1, 1, 2, 3]))
            args.append(f"{ms}-{self.rnd.randint(0, 3)}".encode())
        return args + self.fields()

    def next(self):
        args = self.pick()
        if self.rnd.random() < 0.1:
            # Names and options are case-insensitive (keys, groups and
            # fields here are lower case already).
            args = [a.lower() for a in args]
        return args

    def pick(self):
        g = self.rnd
        k = self.key()
        c = g.choices(
            ["xadd", "xdel", "xtrim", "xrange", "xrevrange", "xlen", "create", "setid", "createconsumer",
             "delconsumer", "destroy", "readgroup", "xack", "pending", "pending_ext", "xclaim", "xautoclaim",
             "info_stream", "info_full", "info_groups", "info_consumers", "xread", "xsetid", "del", "errors"],
            [30, 4, 3, 6, 4, 1, 6, 2, 1, 1, 1, 10, 4, 2, 3, 4, 4, 2, 1, 2, 2, 3, 1, 0.3, 3],
        )[0]
        if c == "xadd":
            return self.xadd()
        if c == "xdel":
            return [b"XDEL", k] + [self.id(k) for _ in range(g.randint(1, 3))]
        if c == "xtrim":
            t = self.trim(k) or [b"MAXLEN", b"2"]
            return [b"XTRIM", k] + t
        if c in ("xrange", "xrevrange"):
            a, b = self.range_id(k, True), self.range_id(k, False)
            args = [b"XRANGE", k, a, b] if c == "xrange" else [b"XREVRANGE", k, b, a]
            if g.random() < 0.5:
                args += [b"COUNT", self.count()]
            return args
        if c == "xlen":
            return [b"XLEN", k]
        if c == "create":
            args = [b"XGROUP", b"CREATE", k, self.group(), g.choice([b"$", b"0", self.id(k)])]
            if g.random() < 0.3:
                args.append(b"MKSTREAM")
            if g.random() < 0.2:
                args += [b"ENTRIESREAD", g.choice([b"0", b"1", b"3", b"-1", b"-2", b"x"])]
            return args
        if c == "setid":
            args = [b"XGROUP", b"SETID", k, self.group(), g.choice([b"$", b"0", self.id(k)])]
            if g.random() < 0.2:
                args += [b"ENTRIESREAD", g.choice([b"0", b"2", b"-1", b"x"])]
            return args
        if c == "createconsumer":
            return [b"XGROUP", b"CREATECONSUMER", k, self.group(), self.consumer()]
        if c == "delconsumer":
            return [b"XGROUP", b"DELCONSUMER", k, self.group(), self.consumer()]
        if c == "destroy":
            return [b"XGROUP", b"DESTROY", k, self.group()]
        if c == "readgroup":
            args = [b"XREADGROUP", b"GROUP", self.group(), self.consumer()]
            if g.random() < 0.5:
                args += [b"COUNT", g.choice([b"1", b"2", b"3", b"0", b"-1"])]
            if g.random() < 0.2:
                args.append(b"NOACK")
            keys = g.sample(self.KEYS, g.choice([1, 1, 2]))
            ids = [g.choice([b">", b">", b">", b"0", self.id(kk)]) for kk in keys]
            return args + [b"STREAMS"] + keys + ids
        if c == "xack":
            return [b"XACK", k, self.group()] + [self.id(k) for _ in range(g.randint(1, 3))]
        if c == "pending":
            return [b"XPENDING", k, self.group()]
        if c == "pending_ext":
            args = [b"XPENDING", k, self.group()]
            if g.random() < 0.3:
                args += [b"IDLE", g.choice([b"0", b"100000000", b"-1"])]
            args += [self.range_id(k, True), self.range_id(k, False), self.count()]
            if g.random() < 0.4:
                args.append(self.consumer())
            return args
        if c == "xclaim":
            args = [b"XCLAIM", k, self.group(), self.consumer(), g.choice([b"0", b"0", b"100000000", b"-1"])]
            args += [self.id(k) for _ in range(g.randint(1, 3))]
            for opt in g.sample([[b"IDLE", g.choice([b"5", b"-1", b"x", b"0"])],
                                 [b"TIME", g.choice([b"1000", b"-5", b"x", b"99999999999999"])],
                                 [b"RETRYCOUNT", g.choice([b"3", b"-1", b"0"])], [b"FORCE"], [b"force"],
                                 [b"JUSTID"], [b"LASTID", self.id(k)]], g.randint(0, 3)):
                args += opt
            return args
        if c == "xautoclaim":
            args = [b"XAUTOCLAIM", k, self.group(), self.consumer(), g.choice([b"0", b"0", b"100000000", b"-5"]),
                    g.choice([b"0", b"-", b"+", self.id(k), b"(" + self.id(k)])]
            if g.random() < 0.5:
                args += [b"COUNT", self.count()]
            if g.random() < 0.3:
                args.append(b"JUSTID")
            return args
        if c == "info_stream":
            return [b"XINFO", b"STREAM", k]
        if c == "info_full":
            args = [b"XINFO", b"STREAM", k, b"FULL"]
            if g.random() < 0.5:
                args += [b"COUNT", g.choice([b"0", b"1", b"2", b"-1"])]
            return args
        if c == "info_groups":
            return [b"XINFO", b"GROUPS", k]
        if c == "info_consumers":
            return [b"XINFO", b"CONSUMERS", k, self.group()]
        if c == "xread":
            args = [b"XREAD"]
            if g.random() < 0.5:
                args += [b"COUNT", g.choice([b"1", b"2", b"0", b"-1"])]
            keys = g.sample(self.KEYS, g.choice([1, 2]))
            return args + [b"STREAMS"] + keys + [g.choice([b"$", b"0", self.id(kk)]) for kk in keys]
        if c == "xsetid":
            args = [b"XSETID", k, self.id(k)]
            if g.random() < 0.3:
                args += [b"ENTRIESADDED", g.choice([b"0", b"5", b"100", b"-1"])]
            if g.random() < 0.3:
                args += [b"MAXDELETEDID", self.id(k)]
            return args
        if c == "del":
            return [b"DEL", k]
        return g.choice([
            [b"XADD", k],
            [b"XADD", k, b"MAXLEN"],
            [b"XADD", k, b"MAXLEN", b"1", b"MINID", b"1", b"*", b"f", b"v"],
            [b"XADD", k, b"LIMIT", b"10", b"*", b"f", b"v"],
            [b"XADD", k, b"MAXLEN", b"1", b"LIMIT", b"10", b"*", b"f", b"v"],
            [b"XADD", k, b"0-0", b"f", b"v"],
            [b"XTRIM", k],
            [b"XTRIM", k, b"FOO", b"1"],
            [b"XTRIM", k, b"MAXLEN", b"~"],
            [b"XRANGE", k, b"-", b"+", b"COUNT"],
            [b"XRANGE", k, b"-", b"+", b"LIMIT", b"1"],
            [b"XRANGE", k, b"(-", b"+"],
            [b"XRANGE", k, b"-", b"(18446744073709551615-18446744073709551615"],
            [b"XRANGE", k, b"(0-0", b"(0-1"],
            [b"XREAD", b"STREAMS", k],
            [b"XREAD", b"COUNT", b"1", k, b"0"],
            [b"XREAD", b"STREAMS", k, b">"],
            [b"XREADGROUP", b"GROUP", b"g1", b"STREAMS", k, b">"],
            [b"XREADGROUP", b"STREAMS", k, b">"],
            [b"XREADGROUP", b"GROUP", b"g1", b"c1", b"STREAMS", k, b"$"],
            [b"XGROUP", b"CREATE", k],
            [b"XGROUP", b"FOO", k, b"g1"],
            [b"XGROUP", b"CREATE", k, b"g9", b"$", b"MKSTREAM", b"EXTRA"],
            [b"XGROUP", b"SETID", k, b"g1"],
            [b"XGROUP", b"DESTROY", k],
            [b"XGROUP", b"CREATECONSUMER", k, b"g1"],
            [b"XPENDING", k],
            [b"XPENDING", k, b"g1", b"-", b"+"],
            [b"XPENDING", k, b"g1", b"-", b"+", b"10", b"c1", b"extra"],
            [b"XPENDING", k, b"g1", b"IDLE", b"10", b"-"],
            [b"XCLAIM", k, b"g1", b"c1", b"0"],
            [b"XCLAIM", k, b"g1", b"c1", b"x", b"1-1"],
            [b"XCLAIM", k, b"g1", b"c1", b"0", b"1-1", b"IDLE"],
            [b"XCLAIM", k, b"g1", b"c1", b"0", b"1-1", b"FOO"],
            [b"XAUTOCLAIM", k, b"g1", b"c1", b"0"],
            [b"XAUTOCLAIM", k, b"g1", b"c1", b"0", b"0", b"COUNT"],
            [b"XAUTOCLAIM", k, b"g1", b"c1", b"0", b"0", b"FOO"],
            [b"XACK", k, b"g1"],
            [b"XINFO", b"STREAM"],
            [b"XINFO", b"STREAM", k, b"FOO"],
            [b"XINFO", b"STREAM", k, b"FULL", b"COUNT"],
            [b"XINFO", b"GROUPS"],
            [b"XINFO", b"CONSUMERS", k],
            [b"XINFO", b"FOO", k],
            [b"XSETID", k],
            [b"XSETID", k, b"1-1", b"ENTRIESADDED"],
            [b"XDEL", k],
            [b"XLEN", k, b"extra"],
            [b"XREAD", b"STREAMS", k, b"+"],
            [b"XREAD", b"BLOCK", b"-1", b"STREAMS", k, b"0"],
            [b"XREAD", b"BLOCK", b"x", b"STREAMS", k, b"0"],
            [b"XREAD", b"COUNT", b"1", b"COUNT", b"2", b"STREAMS", k, b"0"],
            [b"XREAD", b"NOACK", b"STREAMS", k, b"0"],
            [b"XREAD", b"GROUP", b"g1", b"c1", b"STREAMS", k, b"0"],
            [b"XREADGROUP", b"GROUP", b"g1", b"c1", b"BLOCK", b"-1", b"STREAMS", k, b">"],
            [b"XREADGROUP", b"GROUP", b"g1", b"c1", b"STREAMS", k, b"s1", b">", b">", b">"],
            [b"XREADGROUP", b"GROUP", b"g1", b"c1", b"STREAMS", k, b"+"],
            [b"XREADGROUP", b"GROUP", b"g1", b"c1", b"STREAMS", k, b"(0"],
            [b"xreadgroup", b"group", b"g1", b"c1", b"count", b"2", b"noack", b"streams", k, b">"],
            [b"XGROUP", b"HELP"],
            [b"XINFO", b"HELP"],
            [b"XGROUP", b"CREATE", k, b"g1", b"+"],
            [b"XGROUP", b"CREATE", k, b"g1", b"-"],
            [b"XGROUP", b"SETID", k, b"g1", b"+"],
            [b"XGROUP", b"SETID", k, b"g1", b"0", b"ENTRIESREAD"],
            [b"XGROUP", b"CREATE", k, b"g1", b"0", b"ENTRIESREAD", b"1", b"MKSTREAM"],
            [b"XGROUP", b"DELCONSUMER", k, b"g1"],
            [b"XCLAIM", k, b"g1", b"c1", b"0", b"0-1", b"RETRYCOUNT"],
            [b"XCLAIM", k, b"g1", b"c1", b"-1", b"0-1"],
            [b"XAUTOCLAIM", k, b"g1", b"c1", b"0", b"0", b"COUNT", b"0"],
            [b"XAUTOCLAIM", k, b"g1", b"c1", b"x", b"0"],
            [b"XAUTOCLAIM", k, b"g1", b"c1", b"0", b"abc"],
            [b"XAUTOCLAIM", k, b"g1", b"c1", b"0", b"0", b"JUSTID", b"COUNT", b"1"],
            [b"XPENDING", k, b"g1", b"+", b"-", b"10"],
            [b"XPENDING", k, b"g1", b"-", b"+", b"0"],
            [b"XPENDING", k, b"g1", b"IDLE", b"x", b"-", b"+", b"10"],
            [b"XPENDING", k, b"g1", b"(-", b"+", b"10"],
            [b"XINFO", b"STREAM", k, b"FULL", b"COUNT", b"x"],
            [b"XINFO", b"STREAM", k, b"FULL", b"COUNT", b"1", b"extra"],
            [b"XSETID", k, b"18446744073709551615-18446744073709551615"],
            [b"XSETID", k, b"1-1", b"ENTRIESADDED", b"1", b"MAXDELETEDID", b"2-2"],
            [b"XSETID", k, b"$"],
            [b"XTRIM", k, b"MINID", b"~", b"+"],
            [b"XTRIM", k, b"MAXLEN", b"~", b"0", b"LIMIT", b"1"],
            [b"XTRIM", k, b"MAXLEN", b"=", b"0", b"LIMIT", b"1"],
            [b"XTRIM", k, b"MAXLEN", b"1", b"MAXLEN", b"2"],
            [b"XTRIM", k, b"MAXLEN", b"1", b"NOMKSTREAM"],
            [b"XADD", k, b"NOMKSTREAM", b"NOMKSTREAM", b"1-1", b"f", b"v"],
            [b"XADD", k, b"MAXLEN", b"~", b"0", b"LIMIT", b"0", b"99999999999999-1", b"f", b"v"],
            [b"XADD", k, b"MINID", b"18446744073709551615", b"99999999999999-*", b"f", b"v"],
            [b"XADD", k, b"18446744073709551615-18446744073709551615", b"f", b"v"],
            [b"XADD", k, b"18446744073709551615-*", b"f", b"v"],
            [b"XADD", k, b"99999999999999-18446744073709551615", b"f", b"v"],
            [b"XADD", k, b"99999999999999-*", b"f", b"v"],
            [b"XRANGE", k, b"+", b"-"],
            [b"XRANGE", k, b"-", b"+", b"COUNT", b"1", b"COUNT", b"2"],
            [b"XREVRANGE", k, b"(+", b"-"],
            [b"XREVRANGE", k, b"+", b"(-"],
            [b"XRANGE", k, b"(18446744073709551615-18446744073709551615", b"+"],
            [b"XRANGE", k, b"-", b"(0-0"],
            [b"XRANGE", k, b"(5", b"(5"],
            [b"XRANGE", k, b"5", b"5-0"],
            [b"XACK", k],
            [b"XCLAIM", k, b"g1", b"c1"],
            [b"XAUTOCLAIM", k, b"g1", b"c1", b"0", b"0", b"COUNT", b"1", b"COUNT"],
            [b"XINFO"],
            [b"XGROUP"],
            [b"XGROUP", b"CREATECONSUMER", k, b"g1", b"c1", b"extra"],
            [b"XGROUP", b"DESTROY", k, b"g1", b"extra"],
            [b"XSETID", k, b"1-1", b"MAXDELETEDID"],
            [b"XTRIM", k, b"MINID", b"0", b"LIMIT", b"10"],
            [b"XTRIM", k, b"MINID", b"~", b"0", b"LIMIT", b"10"],
            [b"XREVRANGE", k, b"-", b"+"],
            [b"XREVRANGE", k, b"+", b"-", b"COUNT", b"-5"],
        ])


# Node sizes that split streams into many small blocks, and Redis's defaults.
NODE_CONFIGS = [(b"100", b"4096"), (b"4", b"4096"), (b"0", b"120"), (b"3", b"0")]


@pytest.fixture(scope="module")
def pair():
    # DEBUG RELOAD writes dump.rdb: each server in a directory of its own,
    # never the one later servers start (and load) from.
    workdir = tempfile.mkdtemp()
    keel_dir = os.path.join(workdir, "keel")
    os.mkdir(keel_dir)
    # Quiet: nothing reads its output, and DEBUG RELOAD logs at notice level.
    keel = Server("--loglevel", "warning", "--dir", keel_dir)
    try:
        with reference_redis() as port:
            a, b = Conn(keel.port), Conn(port)
            yield a, b
            a.close()
            b.close()
    finally:
        keel.stop()
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.mark.parametrize("seed", range(SEEDS))
def test_stream_commands_answer_as_redis_does(pair, seed):
    keel, redis = pair
    entries, max_bytes = NODE_CONFIGS[seed % len(NODE_CONFIGS)]
    for c in (keel, redis):
        assert c.cmd("FLUSHALL") == ("+", b"OK")
        c.cmd("CONFIG", "SET", "stream-node-max-entries", entries)
        c.cmd("CONFIG", "SET", "stream-node-max-bytes", max_bytes)
        c.cmd("SET", "str", "x")
    if seed % 3 == 2:
        # Some seeds speak RESP3: maps, nulls and sets must match too.
        for c in (keel, redis):
            c.cmd("HELLO", "3")
    gen = Gen(seed, redis)
    history = []

    def same(args, want, got):
        want, got = normalise(want, args[0]), normalise(got, args[0])
        assert got == want, (
            f"seed {seed}, step {len(history)}: {b' '.join(args)!r}\n"
            f"redis: {want!r}\nkeel:  {got!r}\nlast commands:\n"
            + "\n".join(repr(b" ".join(a)) for a in history[-15:])
        )

    for _ in range(STEPS):
        if gen.rnd.random() < 0.004:
            # Every stream survives a save and load alike.
            history.append([b"DEBUG", b"RELOAD"])
            want = redis.cmd("DEBUG", "RELOAD")
            same([b"DEBUG", b"RELOAD"], want, keel.cmd("DEBUG", "RELOAD"))
            for key in Gen.KEYS:
                for args in ([b"XINFO", b"STREAM", key, b"FULL"], [b"XINFO", b"GROUPS", key]):
                    same(args, redis.cmd(*args), keel.cmd(*args))
            continue
        if gen.rnd.random() < 0.02:
            # A stream dumped by either server restores alike on both.
            key = gen.rnd.choice(Gen.KEYS)
            source = gen.rnd.choice([keel, redis])
            payload = source.cmd("DUMP", key)
            if not isinstance(payload, bytes):
                continue
            history.append([b"RESTORE", b"copy", b"0", b"<DUMP %s from %s>" % (
                key, b"keel" if source is keel else b"redis"), b"REPLACE"])
            for args in (["RESTORE", "copy", "0", payload, "REPLACE"], ["XINFO", "STREAM", "copy", "FULL"],
                         ["XINFO", "GROUPS", "copy"], ["XINFO", "STREAM", "copy"]):
                args = [a if isinstance(a, bytes) else a.encode() for a in args]
                same(args, redis.cmd(*args), keel.cmd(*args))
            continue
        args = gen.next()
        history.append(args)
        want = redis.cmd(*args)
        gen.observe(args, want)
        same(args, want, keel.cmd(*args))
    for c in (keel, redis):
        c.cmd("HELLO", "2")

"""Differential tests: seeded random sequences of geo and SORT commands run on
the server under test and on a live redis-server 7.0.15 side by side, every
reply compared as it comes off the wire.

The sequences stay where Redis's replies are deterministic: no SORT BY nosort
on a set kept in a hash table (its order is Redis's hash order), no ALPHA
sorting by a pattern on sets and sorted sets (ties come back in hash order).
Everything else is fair game, errors included."""

import random

import pytest
import redis

from conftest import REDIS_SERVER


pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="needs a redis-server to compare with")


def call(conn, args):
    conn.send_command(*args)
    try:
        return conn.read_response()
    except redis.ResponseError as e:
        return ("error", str(e))


class Pair:
    """One connection to each server; `run` sends a command to both and
    checks that the replies are the same."""

    def __init__(self, server, reference, protocol=2):
        self.ours = redis.Connection(host="127.0.0.1", port=server.port, protocol=protocol)
        self.theirs = redis.Connection(host="127.0.0.1", port=reference, protocol=protocol)
        self.log = []

    def run(self, *args):
        args = [str(a) for a in args]
        self.log.append(args)
        ours, theirs = call(self.ours, args), call(self.theirs, args)
        if ours != theirs:
            recent = "\n".join(" ".join(a) for a in self.log[-8:])
            pytest.fail(f"replies differ for {args}\n keel:  {ours!r}\n redis: {theirs!r}\nlast commands:\n{recent}")
        return theirs

    def close(self):
        self.ours.disconnect()
        self.theirs.disconnect()


@pytest.fixture
def pair(server, reference):
    p = Pair(server, reference)
    p.run("FLUSHALL")
    yield p
    p.close()


UNITS = ["m", "km", "ft", "mi", "M", "KM", "Mi"]

# Centres the points crowd around: ordinary places, both poles' limits, the
# antimeridian, the origin and the equator.
CENTRES = [(2.35, 48.85), (13.36, 38.11), (-122.4, 37.77), (179.99, 0.5), (-179.99, -0.5),
           (0.0, 0.0), (0.0001, -0.0001), (45.0, 85.0), (-45.0, -85.0), (179.9, 84.9),
           (-180.0, 85.05112878), (180.0, -85.05112878), (100.0, 66.5), (-60.0, -80.5)]


def coord(rnd):
    """A longitude, latitude pair: mostly near a centre, sometimes anywhere,
    sometimes on a point already used (many members at one point)."""
    lon, lat = rnd.choice(CENTRES)
    roll = rnd.random()
    if roll < 0.15:
        return lon, lat
    if roll < 0.25:
        return rnd.uniform(-180, 180), rnd.uniform(-85.05112878, 85.05112878)
    spread = rnd.choice([0.0001, 0.01, 0.5, 5, 30])
    digits = rnd.choice([2, 6, 10])
    lon = min(180.0, max(-180.0, round(lon + rnd.uniform(-spread, spread), digits)))
    lat = min(85.05112878, max(-85.05112878, round(lat + rnd.uniform(-spread, spread), digits)))
    return lon, lat


def num(rnd, x):
    """A number as a client might spell it (rounding may leave the valid
    range at the edges: an error case)."""
    return rnd.choice([repr(x), repr(x), f"{x:.6f}", f"{x:g}", f"{x:.15e}"])


def geo_options(rnd, store_ok):
    groups = []
    for word in ("WITHCOORD", "WITHDIST", "WITHHASH"):
        if not store_ok and rnd.random() < 0.35:
            groups.append([word])
    roll = rnd.random()
    if roll < 0.3:
        groups.append(["ASC"])
    elif roll < 0.5:
        groups.append(["DESC"])
    roll = rnd.random()
    if roll < 0.5:
        groups.append(["COUNT", rnd.choice([1, 2, 3, 5, 8, 20, 100])])
        if rnd.random() < 0.3:
            groups.append(["ANY"])
    elif roll < 0.52:
        groups.append(["COUNT", rnd.choice([0, -1, "x"])])
    elif roll < 0.54:
        groups.append(["ANY"])
    rnd.shuffle(groups)
    return [word for group in groups for word in group]


def shape(rnd):
    unit = rnd.choice(UNITS)
    scale = {"m": 1, "M": 1, "km": 0.001, "KM": 0.001, "ft": 3.28, "mi": 0.00062, "Mi": 0.00062}[unit]
    metres = rnd.choice([0, 1, 50, 1000, 20_000, 300_000, 2_000_000, 8_000_000, 30_000_000])
    size = round(metres * scale * rnd.uniform(0.5, 1.5), rnd.choice([0, 3]))
    if rnd.random() < 0.5:
        return ["BYRADIUS", size, unit]
    return ["BYBOX", size, round(size * rnd.uniform(0.2, 3), 3), unit]


def member_of(rnd, key, members):
    """Mostly a member of `key`, sometimes of another index or none."""
    own = [m for m in members if m.startswith(key + "m")]
    if own and rnd.random() < 0.9:
        return rnd.choice(own)
    return rnd.choice(members) if members and rnd.random() < 0.7 else "nosuchmember"


def centre_args(rnd, key, members):
    if members and rnd.random() < 0.5:
        return ["FROMMEMBER", member_of(rnd, key, members)]
    lon, lat = coord(rnd)
    return ["FROMLONLAT", lon, lat]


def populate(rnd, p, members):
    """Both indexes filled up front, so most searches find something."""
    for key, n in (("g", 250), ("g2", 60)):
        args = []
        for i in range(n):
            lon, lat = coord(rnd)
            args += [repr(lon), repr(lat), f"{key}m{i}"]
            members.append(f"{key}m{i}")
        p.run("GEOADD", key, *args)


def geo_command(rnd, p, members):
    key = rnd.choice(["g"] * 8 + ["g2", "g2", "nokey", "str"])
    roll = rnd.random()
    if roll < 0.22:
        args = []
        for _ in range(rnd.randint(1, 6)):
            lon, lat = coord(rnd)
            name = rnd.choice(members) if members and rnd.random() < 0.2 else f"m{rnd.randint(0, 400)}"
            args += [num(rnd, lon), num(rnd, lat), name]
            if name not in members:
                members.append(name)
        flags = rnd.choice([[], [], ["NX"], ["XX"], ["CH"], ["NX", "CH"], ["XX", "CH"]])
        if rnd.random() < 0.03:
            args[0] = rnd.choice(["181", "-180.0001", "abc", "nan", "inf"])
        if rnd.random() < 0.03:
            args[1] = rnd.choice(["85.06", "-85.1", "x"])
        p.run("GEOADD", key if key != "nokey" else "g2", *flags, *args)
    elif roll < 0.27:
        # Any score, not only geohashes: positions decoded from odd values.
        score = rnd.choice([0, -1, 1.5, 2 ** 52 - 1, 2 ** 52, 2 ** 53 + 7, 4503599627370495.5,
                            rnd.randint(0, 2 ** 52), -2 ** 40, 1e20, "-inf", "inf"])
        p.run("ZADD", "g", score, f"z{rnd.randint(0, 5)}")
        if not any(m.startswith("z") for m in members):
            members.extend(f"z{i}" for i in range(6))
    elif roll < 0.47:
        args = ["GEOSEARCH", key, *centre_args(rnd, key, members), *shape(rnd), *geo_options(rnd, False)]
        if rnd.random() < 0.05:
            rnd.choice([lambda: args.remove(args[2]), lambda: args.insert(2, "FROMLONLAT"),
                        lambda: args.append("BYRADIUS"), lambda: args.append("STORE")])()
        p.run(*args)
    elif roll < 0.55:
        dst = rnd.choice(["dst", "dst2"])
        extra = ["STOREDIST"] if rnd.random() < 0.4 else []
        opts = geo_options(rnd, rnd.random() < 0.95)
        p.run("GEOSEARCHSTORE", dst, key, *centre_args(rnd, key, members), *shape(rnd), *extra, *opts)
        p.run("ZRANGE", dst, 0, -1, "WITHSCORES")
    elif roll < 0.72:
        by_member = rnd.random() < 0.5
        ro = rnd.random() < 0.3
        name = "GEORADIUSBYMEMBER" if by_member else "GEORADIUS"
        if ro:
            name += "_RO"
        if by_member:
            head = [member_of(rnd, key, members)]
        else:
            head = list(coord(rnd))
        radius = shape(rnd)
        radius = [radius[1], radius[-1]]
        store = []
        if not ro and rnd.random() < 0.3:
            store = [rnd.choice(["STORE", "STOREDIST"]), rnd.choice(["dst", "dst2"])]
        p.run(name, key, *head, *radius, *geo_options(rnd, bool(store)), *store)
        if store:
            p.run("ZRANGE", store[1], 0, -1, "WITHSCORES")
    elif roll < 0.8:
        a = rnd.choice(members + ["nosuchmember"]) if members else "x"
        b = rnd.choice(members + ["nosuchmember"]) if members else "y"
        unit = [rnd.choice(UNITS + ["parsec"])] if rnd.random() < 0.7 else []
        p.run("GEODIST", key, a, b, *unit)
    elif roll < 0.9:
        p.run("GEOPOS", key, *rnd.sample(members + ["nosuchmember"], min(len(members) + 1, 4)))
    else:
        p.run("GEOHASH", key, *rnd.sample(members + ["nosuchmember"], min(len(members) + 1, 4)))


def test_geo_commands_match_redis(pair):
    for seed in range(10):
        rnd = random.Random(seed)
        pair.run("FLUSHALL")
        pair.run("SET", "str", "x")
        members = []
        populate(rnd, pair, members)
        for _ in range(400):
            geo_command(rnd, pair, members)
        # The whole index, member by member, at the end of each run.
        pair.run("ZRANGE", "g", 0, -1, "WITHSCORES")


def test_geo_replies_in_resp3_match_redis(server, reference):
    p = Pair(server, reference, protocol=3)
    try:
        rnd = random.Random(99)
        p.run("FLUSHALL")
        p.run("SET", "str", "x")
        members = []
        populate(rnd, p, members)
        for _ in range(300):
            geo_command(rnd, p, members)
    finally:
        p.close()


# ---------------------------------------------------------------------------
# SORT


def element(rnd, kind):
    if kind == "int":
        return str(rnd.randint(-50, 50))
    if kind == "num":
        return rnd.choice([str(rnd.randint(-1000, 1000)), f"{rnd.uniform(-100, 100):.3f}",
                           f"{rnd.uniform(-5, 5):.2e}", "0", "-0", "1e3", " 7", "inf", "-inf"])
    return rnd.choice(["", "a", "b", "ab", "B", "10", "9", "x" * rnd.randint(1, 4), "é", "z z"]) + \
        rnd.choice(["", str(rnd.randint(0, 30))])


def fill(rnd, p, names):
    """Lists, sets and sorted sets of numbers and words, with weights and
    hashes for BY and GET."""
    p.run("FLUSHALL")
    for key, kind in (("ln", "num"), ("li", "int"), ("lw", "word")):
        p.run("RPUSH", key, *[element(rnd, kind) for _ in range(rnd.randint(1, 150))])
    # Integer sets are read in ascending order; word sets only where order
    # cannot show (numeric and ALPHA sorts of distinct members).
    p.run("SADD", "si", *[element(rnd, "int") for _ in range(rnd.randint(1, 60))])
    p.run("SADD", "sw", *[element(rnd, "word") for _ in range(rnd.randint(1, 60))])
    count = rnd.choice([5, 100, 200])
    pairs = []
    for _ in range(count):
        pairs += [rnd.choice([rnd.randint(-3, 3), rnd.uniform(-10, 10)]), element(rnd, rnd.choice(["int", "word"]))]
    p.run("ZADD", "z", *pairs)
    for n in names:
        if rnd.random() < 0.7:
            p.run("SET", f"w_{n}", rnd.choice([str(rnd.randint(0, 9)), f"{rnd.uniform(0, 5):.1f}", "", "3"]
                                              + ["x"] * (rnd.random() < 0.05)))
        if rnd.random() < 0.5:
            p.run("HSET", f"h_{n}", "f", rnd.choice(["a", "b", "1", "2", ""]), "g", str(rnd.randint(0, 99)))
        if rnd.random() < 0.1:
            p.run("RPUSH", f"v_{n}", "wrongtype")


def sort_command(rnd, p):
    key = rnd.choice(["ln", "ln", "li", "li", "lw", "lw", "si", "si", "sw", "z", "z", "nokey", "str"])
    opts = []
    alpha = rnd.random() < (0.8 if key in ("lw", "sw") else 0.3)
    roll = rnd.random()
    by = None
    if roll < 0.3:
        by = rnd.choice(["w_*", "h_*->f", "h_*->g", "h_*->", "v_*", "*", "w_*_missing"])
    elif roll < 0.45:
        by = rnd.choice(["nosort", "constant"])
    store = rnd.random() < 0.25
    # Where Redis's reply would show its hash table order, keep away: a set
    # of words read unsorted (BY nosort without STORE), and ties under ALPHA
    # BY a pattern for sets and sorted sets read from their hash tables.
    if key == "sw" and by is not None and "*" not in by and not store:
        by = None
    if key in ("sw", "z") and by is not None and "*" in by:
        alpha = False
    if alpha:
        opts.append("ALPHA")
    if by is not None:
        opts += ["BY", by]
    if rnd.random() < 0.4:
        opts.append(rnd.choice(["ASC", "DESC"]))
    if rnd.random() < 0.5:
        opts += ["LIMIT", rnd.choice([0, 1, 3, 10, -2, 200]), rnd.choice([0, 1, 5, 30, -1, 1000])]
    for _ in range(rnd.choice([0, 0, 1, 2])):
        opts += ["GET", rnd.choice(["#", "w_*", "h_*->f", "h_*->g", "v_*", "nostar"])]
    if store:
        opts += ["STORE", rnd.choice(["dst", "ln_copy"])]
    if rnd.random() < 0.03:
        # Syntax errors (a BY in the middle could name a constant pattern).
        opts.insert(rnd.randrange(len(opts) + 1), rnd.choice(["BADOPT", "LIMIT"]))
    elif rnd.random() < 0.01:
        opts.append(rnd.choice(["BY", "GET", "STORE"]))
    command = "SORT_RO" if not store and rnd.random() < 0.2 else "SORT"
    p.run(command, key, *opts)
    if store:
        p.run("LRANGE", "dst", 0, -1)
        p.run("LRANGE", "ln_copy", 0, -1)


def test_sort_commands_match_redis(pair):
    names = [str(i) for i in range(-50, 51)] + ["a", "b", "ab", "B", "x", "xx", "10", "9", ""]
    for seed in range(10):
        rnd = random.Random(1000 + seed)
        fill(rnd, pair, names)
        pair.run("SET", "str", "x")
        for _ in range(250):
            sort_command(rnd, pair)
        pair.run("OBJECT", "ENCODING", "z")

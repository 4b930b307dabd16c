#!/usr/bin/env python3
"""Write tests/python/data/hll_golden.json from a running redis-server 7.0.15:
the replies and raw values test_hll.py expects, taken from Redis itself.

    redis-server --port 7777 --bind 127.0.0.1 --save '' --appendonly no &
    python3 scripts/hll-golden-from-redis.py 7777
"""

import json
import os
import sys

import redis

SIZES = [1, 2, 3, 10, 100, 1000, 5000, 10000, 50000, 100000, 200000]


def elements(prefix, n):
    return [f"{prefix}:{i}" for i in range(n)]


def fill(r, key, items):
    for i in range(0, len(items), 1000):
        r.pfadd(key, *items[i:i + 1000])


def main():
    port = int(sys.argv[1])
    r = redis.Redis(port=port)
    assert r.info("server")["redis_version"] == "7.0.15", "generate from Redis 7.0.15"
    r.flushall()
    r.config_set("hll-sparse-max-bytes", 3000)
    golden = {"counts": {}, "unions": {}, "raw": {}, "getreg": {}, "promotion": {}}

    for prefix in ["el", "user"]:
        for n in SIZES:
            key = f"{prefix}{n}"
            fill(r, key, elements(prefix, n))
            golden["counts"][key] = r.pfcount(key)
    for a, b in [("el1000", "user1000"), ("el10000", "user200000"), ("el200000", "user100000")]:
        golden["unions"][f"{a} {b}"] = r.execute_command("PFCOUNT", a, b)
    r.pfmerge("merged", "el10000", "user200000", "el3")
    golden["unions"]["PFMERGE merged el10000 user200000 el3"] = r.pfcount("merged")

    # Raw values: sparse after a few elements (cache stale, then written back
    # by PFCOUNT), dense after many, and merges.
    for n in [0, 1, 3, 10, 100, 1000]:
        key = f"raw{n}"
        r.pfadd(key, *elements("raw", n))
        golden["raw"][f"{key} after PFADD"] = r.get(key).hex()
        r.pfcount(key)
        golden["raw"][f"{key} after PFCOUNT"] = r.get(key).hex()
    golden["raw"]["el5000"] = r.get("el5000").hex()
    r.pfmerge("m1", "raw10", "raw100")
    golden["raw"]["PFMERGE m1 raw10 raw100"] = r.get("m1").hex()
    r.pfmerge("m2", "raw10", "el5000")
    golden["raw"]["PFMERGE m2 raw10 el5000"] = r.get("m2").hex()

    # GETREG: the non-zero registers as (index, value).
    for key in ["raw10", "el1000"]:
        regs = r.execute_command("PFDEBUG", "GETREG", key)
        golden["getreg"][key] = [[i, v] for i, v in enumerate(regs) if v]

    # Where a sparse value becomes dense, adding one element at a time.
    for limit in [3000, 200]:
        r.config_set("hll-sparse-max-bytes", limit)
        key = f"promote{limit}"
        r.delete(key)
        n = 0
        last_len = 0
        while True:
            r.pfadd(key, f"p:{n}")
            n += 1
            if r.execute_command("PFDEBUG", "ENCODING", key) != b"sparse":
                break
            last_len = r.strlen(key)
        golden["promotion"][str(limit)] = {"elements": n, "last_sparse_len": last_len}
    r.config_set("hll-sparse-max-bytes", 3000)

    out = os.path.join(os.path.dirname(__file__), "..", "tests", "python", "data", "hll_golden.json")
    with open(out, "w") as f:
        json.dump(golden, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()

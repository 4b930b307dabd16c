#!/usr/bin/env python3
"""Replication, Keel against Redis, each side with replicas of its own kind.

1. Full sync: a master with --keys keys (DEBUG POPULATE) takes SETs from
   redis-benchmark while a replica starts and syncs; reported: the time from
   the replica's start to it serving the whole dataset (link up, offsets
   equal), and the master's peak memory (PSS, its fork's included) during the sync against
   before.
2. Throughput: redis-benchmark SET -c 50 -P 16 against the master with no
   replica and with two, and the master's CPU time per request.
3. Lag: while that load runs with two replicas, a probe client writes a
   unique key to the master every 20 ms and times until a replica serves
   it; p50/p99 of those delays.

Each step alternates Redis and Keel. Redis 7.0 is one thread (plus its fork
for the sync); Keel runs its default thread count.

    .venv/bin/python scripts/bench-replication.py --keys 10000000
"""

import argparse
import os
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

import redis  # noqa: E402

from test_replication import Node  # noqa: E402


def pss_kb(pid):
    """Proportional set size: pages shared with a fork count half to each."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_rss_kb(pid):
    """The memory of the process and its children (Redis's fork), shared
    pages counted once."""
    total = pss_kb(pid)
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            for child in f.read().split():
                total += pss_kb(int(child))
    except OSError:
        pass
    return total


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().split(")")[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench(port, n, pipeline=16, keyspace=100000):
    out = subprocess.run(["redis-benchmark", "-p", str(port), "-c", "50", "-P", str(pipeline),
                          "-n", str(n), "-t", "set", "-r", str(keyspace), "--csv"],
                         capture_output=True, text=True, check=True).stdout
    row = out.strip().splitlines()[-1].replace('"', "").split(",")
    return float(row[1])


def synced(master, replica):
    try:
        off = master.r.info("replication")["master_repl_offset"]
        info = replica.r.info("replication")
    except redis.ConnectionError:
        return False
    return info.get("master_link_status") == "up" and info.get("slave_repl_offset") == off


def full_sync(kind, keys):
    master = Node(kind, "--enable-debug-command", "yes")
    try:
        master.r.execute_command("DEBUG", "POPULATE", keys)
        time.sleep(1)
        before = tree_rss_kb(master.proc.pid)
        peak = [before]
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                peak[0] = max(peak[0], tree_rss_kb(master.proc.pid))
                time.sleep(0.02)
        sampler = threading.Thread(target=sample)
        sampler.start()
        load = subprocess.Popen(["redis-benchmark", "-p", str(master.port), "-c", "20", "-n",
                                 "100000000", "-t", "set", "-r", str(keys), "-q"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started = time.time()
        replica = Node(kind, "--replicaof", "127.0.0.1", str(master.port))
        try:
            while True:
                info = replica.r.info("replication")
                if info.get("master_link_status") == "up" and replica.r.dbsize() >= keys:
                    break
                time.sleep(0.05)
            took = time.time() - started
        finally:
            load.kill()
            load.wait()
            stop.set()
            sampler.join()
            replica.stop()
        return took, before, peak[0]
    finally:
        master.stop()


def throughput_and_lag(kind, n):
    master = Node(kind)
    replicas = []
    try:
        bench(master.port, n // 4)  # warm up
        c0 = cpu_seconds(master.proc.pid)
        alone = bench(master.port, n)
        cpu_alone = 1e6 * (cpu_seconds(master.proc.pid) - c0) / n
        replicas = [Node(kind, "--replicaof", "127.0.0.1", str(master.port)) for _ in range(2)]
        deadline = time.time() + 60
        while not all(synced(master, r) for r in replicas):
            assert time.time() < deadline, "replicas did not sync"
            time.sleep(0.1)
        lags = []
        stop = threading.Event()

        def probe():
            w = redis.Redis(port=master.port)
            rd = redis.Redis(port=replicas[0].port)
            i = 0
            while not stop.is_set():
                key = f"probe:{i}"
                w.set(key, "1")
                t = time.perf_counter()
                while rd.get(key) is None:
                    if time.perf_counter() - t > 5:
                        break
                lags.append(time.perf_counter() - t)
                i += 1
                time.sleep(0.02)
        prober = threading.Thread(target=probe)
        prober.start()
        c0 = cpu_seconds(master.proc.pid)
        with_two = bench(master.port, n)
        cpu_two = 1e6 * (cpu_seconds(master.proc.pid) - c0) / n
        stop.set()
        prober.join()
        lags.sort()
        p50 = lags[len(lags) // 2] * 1000
        p99 = lags[min(len(lags) - 1, int(len(lags) * 0.99))] * 1000
        return alone, with_two, cpu_alone, cpu_two, p50, p99, len(lags)
    finally:
        for r in replicas:
            r.stop()
        master.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=10_000_000)
    ap.add_argument("--requests", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--skip-sync", action="store_true")
    args = ap.parse_args()
    for rnd in range(args.rounds):
        if not args.skip_sync:
            res = {k: full_sync(k, args.keys) for k in ("redis", "keel")}
            for k, (took, before, peak) in res.items():
                print(f"round {rnd} sync {k}: {took:.2f} s to a serving replica; master PSS "
                      f"{before / 1024:.0f} MiB before, {peak / 1024:.0f} MiB peak "
                      f"({peak / before:.2f}x)", flush=True)
            print(f"round {rnd} sync time keel/redis: {res['keel'][0] / res['redis'][0]:.2f}x",
                  flush=True)
        res = {k: throughput_and_lag(k, args.requests) for k in ("redis", "keel")}
        for k, (alone, two, ca, c2, p50, p99, n) in res.items():
            print(f"round {rnd} load {k}: SET -P 16 {alone:,.0f}/s alone, {two:,.0f}/s with two "
                  f"replicas ({two / alone:.2f}x); master CPU {ca:.2f} / {c2:.2f} us/req; "
                  f"lag p50 {p50:.2f} ms, p99 {p99:.2f} ms ({n} probes)", flush=True)


if __name__ == "__main__":
    main()

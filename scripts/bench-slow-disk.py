#!/usr/bin/env python3
"""SET throughput under `appendfsync always` on a slow disk, Keel against Redis.

Every fsync/fdatasync of the server's data directory is made to take
--delay-us longer by the faultfs shim (tests/faults/faultfs.c, built here),
and redis-benchmark runs 50 clients of SET against each server in turn,
alternating, --rounds times. The data directory is a fresh tmpfs (so the
delay is the only cost of an fsync), or with --disk real a directory on
this machine's own disk. Prints requests/s, latency percentiles and the
server's CPU time per request, and the same-round ratio.

    sudo .venv/bin/python scripts/bench-slow-disk.py --delay-us 2000 --rounds 2
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

import test_faults as tf  # noqa: E402


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().split(")")[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(kind, shim, args):
    d = tempfile.mkdtemp(prefix="keel-slowdisk-")
    if args.disk == "tmpfs":
        subprocess.check_call(["mount", "-t", "tmpfs", "-o", "size=512m", "tmpfs", d])
    ctl = tf.Control(d + ".ctl", d)
    ctl.set(fsync_delay_us=args.delay_us)
    s = tf.Proc(kind, d, "--appendonly", "yes", "--appendfsync", "always", "--save", "",
                env={"LD_PRELOAD": shim, "FAULTFS_CTL": ctl.f.name})
    try:
        before = cpu_seconds(s.proc.pid)
        out = subprocess.run(["redis-benchmark", "-p", str(s.port), "-c", str(args.clients),
                              "-n", str(args.requests), "-t", "set", "--csv"],
                             capture_output=True, text=True, check=True).stdout
        cpu = cpu_seconds(s.proc.pid) - before
    finally:
        s.stop()
        ctl.close()
        if args.disk == "tmpfs":
            subprocess.call(["umount", "-l", d])
        shutil.rmtree(d, ignore_errors=True)
    row = out.strip().splitlines()[-1].replace('"', "").split(",")
    # test, rps, avg, min, p50, p95, p99, max
    return float(row[1]), float(row[4]), float(row[6]), 1e6 * cpu / args.requests


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--delay-us", type=int, default=2000)
    ap.add_argument("--requests", type=int, default=20000)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--disk", choices=["tmpfs", "real"], default="tmpfs")
    args = ap.parse_args()
    build = tempfile.mkdtemp()
    shim = os.path.join(build, "faultfs.so")
    subprocess.check_call(["gcc", "-shared", "-fPIC", "-O2", "-o", shim,
                           os.path.join(ROOT, "tests", "faults", "faultfs.c"), "-ldl"])
    print(f"{'round':>5} {'server':>6} {'SET/s':>9} {'p50 ms':>7} {'p99 ms':>7} {'cpu us/req':>10}")
    for rnd in range(args.rounds):
        got = {}
        for kind in ("redis", "keel"):
            got[kind] = run(kind, shim, args)
            rps, p50, p99, cpu = got[kind]
            print(f"{rnd:>5} {kind:>6} {rps:>9.0f} {p50:>7.3f} {p99:>7.3f} {cpu:>10.1f}")
        print(f"{rnd:>5} {'ratio':>6} {got['keel'][0] / got['redis'][0]:>9.2f}x")


if __name__ == "__main__":
    main()

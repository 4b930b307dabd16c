#!/usr/bin/env bash
# keel-bench against redis-benchmark, both driving the same redis-server:
# SET and GET, -c 50, -P 1 and -P 16, runs alternating between the two tools.
# For each run: requests/s as the tool reports it, and the tool's own CPU
# time (user + system from /usr/bin/time) per request. Prints Markdown with
# the medians and the keel-bench / redis-benchmark ratios.
#
# Environment:
#   N=1000000     requests per run
#   RUNS=3        runs per tool, test and pipeline depth (medians reported)
#   CLIENTS=50    -c
#   PIPELINES="1 16"
#   TESTS="set get"
#   PIN=1         pin the server to CPU 0 and the tools to CPU 1 (taskset)
#
# Example: N=200000 RUNS=1 scripts/bench-tool.sh

set -euo pipefail

N=${N:-1000000}
RUNS=${RUNS:-3}
CLIENTS=${CLIENTS:-50}
PIPELINES=${PIPELINES:-"1 16"}
TESTS=${TESTS:-"set get"}
PIN=${PIN:-1}

cd "$(dirname "$0")/.."
cargo build --release -p keel-bench >&2
BENCH=target/release/keel-bench

server_pin=()
tool_pin=()
if [ "$PIN" = 1 ] && [ "$(nproc)" -ge 2 ]; then
    server_pin=(taskset -c 0)
    tool_pin=(taskset -c 1)
fi

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"${server_pin[@]}" redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
    --daemonize no >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done

results=$(mktemp)
# One run: prints "tool test pipeline rps cpu_seconds".
one() {
    local tool=$1 test=$2 p=$3 out cpu
    local timing
    timing=$(mktemp)
    if [ "$tool" = redis-benchmark ]; then
        out=$(/usr/bin/time -f '%U %S' -o "$timing" "${tool_pin[@]}" redis-benchmark \
            -p "$port" -c "$CLIENTS" -n "$N" -P "$p" -r 100000 -t "$test" -q 2>/dev/null | tr '\r' '\n' \
            | grep 'requests per second' | tail -1)
    else
        out=$(/usr/bin/time -f '%U %S' -o "$timing" "${tool_pin[@]}" "$BENCH" \
            -p "$port" -c "$CLIENTS" -n "$N" -P "$p" -r 100000 -t "$test" -q 2>/dev/null)
    fi
    cpu=$(awk '{print $1 + $2}' "$timing")
    rm -f "$timing"
    echo "$tool $test $p $(echo "$out" | awk '{print $2}') $cpu"
}

for p in $PIPELINES; do
    for test in $TESTS; do
        for _ in $(seq "$RUNS"); do
            one redis-benchmark "$test" "$p" >>"$results"
            one keel-bench "$test" "$p" >>"$results"
        done
    done
done

python3 - "$results" "$N" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
n = int(sys.argv[2])
by = {}
for tool, test, p, rps, cpu in rows:
    by.setdefault((test.upper(), int(p), tool), []).append((float(rps), float(cpu)))
print("| test | -P | redis-benchmark req/s | keel-bench req/s | rate ratio | redis-benchmark CPU us/req | keel-bench CPU us/req | CPU ratio |")
print("|---|---|---|---|---|---|---|---|")
for (test, p) in sorted({(t, p) for t, p, _ in by}, key=lambda k: (k[1], k[0] != "SET")):
    rb = by[(test, p, "redis-benchmark")]
    kb = by[(test, p, "keel-bench")]
    rr, kr = statistics.median(r for r, _ in rb), statistics.median(r for r, _ in kb)
    rc, kc = statistics.median(c for _, c in rb) / n * 1e6, statistics.median(c for _, c in kb) / n * 1e6
    print(f"| {test} | {p} | {rr:.0f} | {kr:.0f} | {kr / rr:.2f}x | {rc:.2f} | {kc:.2f} | {kc / rc:.2f}x |")
print()
print(f"runs per cell: {len(rb)}; each run {n} requests")
PY
rm -f "$results"

#!/usr/bin/env bash
# Server CPU per request for GET/SET as the default user (no rules: one
# atomic load per command) and as a user with rules (+@all ~key:*: a bitset
# test plus one glob per key). Alternates the two, RUNS times each.
#   N=1000000 RUNS=3 P=16 scripts/bench-acl.sh
# USERS=default KEEL_SERVER=/path/to/older/keel-server measures a build without ACL.
set -euo pipefail
BIN=${KEEL_SERVER:-target/release/keel-server}
N=${N:-1000000}; RUNS=${RUNS:-3}; P=${P:-16}
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$BIN" --port "$PORT" --bind 127.0.0.1 --save '' --threads 1 >/dev/null 2>&1 &
PID=$!
trap 'kill $PID' EXIT
sleep 0.5
redis-cli -p "$PORT" ACL SETUSER bench on '>pw' '+@all' '~key:*' >/dev/null
cpu() { awk '{print $14+$15}' /proc/$PID/stat; }
tck=$(getconf CLK_TCK)
for run in $(seq "$RUNS"); do
  for who in ${USERS:-default bench}; do
    for t in set get; do
      auth=(); [ "$who" = bench ] && auth=(--user bench -a pw)
      c0=$(cpu)
      rps=$(redis-benchmark -p "$PORT" "${auth[@]}" -c 50 -n "$N" -r 100000 -P "$P" -t "$t" -q 2>/dev/null \
            | tr '\r' '\n' | grep -i "requests per second" | tail -1 | awk '{print $2}')
      c1=$(cpu)
      us=$(python3 -c "print(round(($c1-$c0)/$tck*1e6/$N, 3))")
      echo "run=$run user=$who test=$t rps=$rps cpu_us_per_req=$us"
    done
  done
done

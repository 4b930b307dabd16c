#!/usr/bin/env bash
# Consumer groups against Redis 7.0.15 in the same run: a stream of N entries
# (XADD by redis-benchmark), then C consumers of one group read it with
# XREADGROUP ... COUNT 1 ... > and acknowledge each entry with XACK, P of
# each pipelined (scripts/bench-stream-groups/main.go: redis-benchmark cannot
# feed the id it read into the XACK). Servers pinned to CPU 0, the load to
# CPU 1; Keel with --threads 1. Prints one line per server, P and run:
# requests per second (XREADGROUP + XACK) and server CPU per request, from
# /proc.
#   N=200000 C=8 RUNS=3 PS="1 16" scripts/bench-stream-groups.sh
set -euo pipefail
N=${N:-200000}; C=${C:-8}; RUNS=${RUNS:-3}; PS=${PS:-"1 16"}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
cargo build --release --bin keel-server >&2
KEEL=${KEEL_SERVER:-$ROOT/target/release/keel-server}
WORK=$(mktemp -d)
LOAD=$WORK/load
go build -o "$LOAD" ./scripts/bench-stream-groups/main.go
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"

start() { # name -> sets PORT, PID
	PORT=$(free_port)
	if [[ $1 == keel ]]; then
		taskset -c 0 "$KEEL" --port "$PORT" --bind 127.0.0.1 --save "" --threads 1 >/dev/null 2>&1 &
	else
		taskset -c 0 redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no >/dev/null 2>&1 &
	fi
	PID=$!
	PIDS+=("$PID")
	wait_up "$PORT"
}

for name in keel redis; do
	start "$name"
	for run in $(seq "$RUNS"); do
		for p in $PS; do
			redis-cli -p "$PORT" del s >/dev/null
			redis-cli -p "$PORT" xgroup create s g '$' mkstream >/dev/null
			taskset -c 1 redis-benchmark -p "$PORT" -n "$N" -P 64 -q XADD s '*' f v >/dev/null
			t0=$(ticks "$PID")
			out=$(taskset -c 1 "$LOAD" -addr "127.0.0.1:$PORT" -c "$C" -P "$p")
			t1=$(ticks "$PID")
			reqs=$(sed -E 's/.*requests=([0-9]+).*/\1/' <<<"$out")
			rps=$(sed -E 's/.*rps=([0-9]+).*/\1/' <<<"$out")
			us=$(python3 -c "print(round(($t1-$t0)/$HZ*1e6/$reqs, 2))")
			left=$(redis-cli -p "$PORT" xpending s g | head -1)
			echo "server=$name run=$run P=$p requests=$reqs rps=$rps cpu_us_per_req=$us pending_left=$left"
		done
	done
done

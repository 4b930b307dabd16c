#!/usr/bin/env bash
# Stream benchmarks: keel-server against redis-server in the same run. Prints
# Markdown. For each server in turn (a fresh one per run, pinned to CPU 0,
# redis-benchmark pinned to CPU 1, 50 connections):
#
#   XADD s * f v                      -n N, at -P 1 and -P 16
#   XREAD COUNT 10 STREAMS s 0        -n N, at -P 1 and -P 16, after the XADDs
#                                     filled the stream (ten entries a reply)
#
# req/s are medians of RUNS; server CPU microseconds per request come from the
# server's utime+stime in /proc. Then memory: used_memory growth for 1M
# entries added with `XADD s * f v` (pipelined through redis-cli --pipe).
#
# Environment: N=200000 RUNS=3 KEEL_ARGS="--threads 1" MEM_ENTRIES=1000000
set -euo pipefail
N=${N:-200000}
RUNS=${RUNS:-3}
KEEL_ARGS=${KEEL_ARGS:-"--threads 1"}
MEM_ENTRIES=${MEM_ENTRIES:-1000000}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
cargo build --release --bin keel-server >&2
KEEL=$ROOT/target/release/keel-server
WORK=$(mktemp -d)
PID=
cleanup() {
	[[ -n $PID ]] && kill "$PID" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"




m() { printf '%s\n' "$@" | median; }

echo "### Streams: XADD and XREAD, Keel against Redis"
echo
echo "Command: N=$N RUNS=$RUNS KEEL_ARGS=\"$KEEL_ARGS\" scripts/bench-streams.sh"
echo
echo "redis-server $(redis-server --version | awk '{print $3}' | cut -d= -f2); each run a fresh server,"
echo "XADD s * f v then XREAD COUNT 10 STREAMS s 0 on what it filled; medians of $RUNS runs."
echo
echo "| -P | command | Redis req/s | Keel req/s | Keel/Redis | Redis CPU us/req | Keel CPU us/req |"
echo "|---:|---|---:|---:|---:|---:|---:|"
for p in 1 16; do
	declare -A r=() c=()
	for kind in redis keel; do
		add_r=() add_c=() read_r=() read_c=()
		for _ in $(seq "$RUNS"); do
			start_server "$kind"
			read -r a b < <(rb_test "$p" XADD s '*' f v); add_r+=("$a"); add_c+=("$b")
			read -r a b < <(rb_test "$p" XREAD COUNT 10 STREAMS s 0); read_r+=("$a"); read_c+=("$b")
			stop_server
		done
		r[$kind-add]=$(m "${add_r[@]}"); c[$kind-add]=$(m "${add_c[@]}")
		r[$kind-read]=$(m "${read_r[@]}"); c[$kind-read]=$(m "${read_c[@]}")
	done
	for t in add read; do
		name=$([[ $t == add ]] && echo "XADD s * f v" || echo "XREAD COUNT 10 STREAMS s 0")
		awk -v p="$p" -v n="$name" -v rr="${r[redis-$t]}" -v kr="${r[keel-$t]}" \
			-v rc="${c[redis-$t]}" -v kc="${c[keel-$t]}" \
			'BEGIN{printf "| %s | %s | %.0f | %.0f | %.2fx | %.2f | %.2f |\n", p, n, rr, kr, kr/rr, rc, kc}'
	done
	unset r c
done
echo

echo "### Stream memory: $MEM_ENTRIES entries of XADD s * f v"
echo
echo "| server | used_memory growth bytes | bytes per entry |"
echo "|---|---:|---:|"
python3 - "$MEM_ENTRIES" >"$WORK/xadd.resp" <<'EOF'
import sys
one = b"*5\r\n$4\r\nXADD\r\n$1\r\ns\r\n$1\r\n*\r\n$1\r\nf\r\n$1\r\nv\r\n"
sys.stdout.buffer.write(one * int(sys.argv[1]))
EOF
for kind in redis keel; do
	start_server "$kind"
	u0=$(used "$PORT")
	redis-cli -p "$PORT" --pipe <"$WORK/xadd.resp" >/dev/null
	u1=$(used "$PORT")
	awk -v k="$kind" -v d=$((u1 - u0)) -v n="$MEM_ENTRIES" 'BEGIN{printf "| %s | %d | %.1f |\n", k, d, d / n}'
	stop_server
done
echo

#!/usr/bin/env bash
# Snapshots under load, Keel against Debian's redis-server in the same run:
# with KEYS keys (DEBUG POPULATE), a GET load (-c 50) runs while a SET load
# (-c 4) keeps writing, first alone, then while BGSAVE runs, then while
# BGREWRITEAOF runs. Reports the GET p99 of each, the peak memory of the
# server during each job (proportional set size of the server and any child
# it forked, sampled every 50 ms, so Redis's copy-on-write shows), the job's
# duration, and the time to load each server's own RDB at start-up.
#
# Environment: KEYS=10000000  GETS=3000000  KEEL_SERVER=...  KEEL_ARGS=...
set -euo pipefail
KEYS=${KEYS:-10000000}
GETS=${GETS:-3000000}
KEEL_ARGS=${KEEL_ARGS:-}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z "${KEEL_SERVER:-}" ]]; then
	KEEL_SERVER=$ROOT/target/release/keel-server
	(cd "$ROOT" && cargo build --release --bin keel-server >&2)
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/keel-snap.XXXXXX")
PID=""
trap '[[ -n "$PID" ]] && kill -9 $PID 2>/dev/null; rm -rf "$WORK"' EXIT
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"

# Proportional set size (KiB) of a process and its children.
pss() {
	local total=0 p
	for p in $1 $(pgrep -P "$1" || true); do
		total=$((total + $(awk '/^Pss:/ { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0)))
	done
	echo $total
}

start() { # name dir port
	if [[ $1 == redis ]]; then
		redis-server --port "$3" --bind 127.0.0.1 --save '' --appendonly no --dir "$2" \
			--enable-debug-command yes >"$2/log" 2>&1 &
	else
		"$KEEL_SERVER" --port "$3" --bind 127.0.0.1 --save '' --dir "$2" --enable-debug-command yes \
			$KEEL_ARGS >"$2/log" 2>&1 &
	fi
	PID=$!
	local t0; t0=$(date +%s.%N)
	until redis-cli -p "$3" ping 2>/dev/null | grep -q PONG; do sleep 0.01; done
	LOAD_S=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
}

# load port -> GET p99 (ms); a SET load runs beside it
load() {
	redis-benchmark -p "$1" -t set -c 4 -n $((GETS / 4)) -r "$KEYS" -d 16 --csv >/dev/null 2>&1 &
	local setter=$!
	redis-benchmark -p "$1" -t get -c 50 -n "$GETS" -r "$KEYS" --csv 2>/dev/null | tail -1 | tr -d '"' \
		| awk -F, '{ print $7 }'
	wait $setter || true
}

job_field() { redis-cli -p "$1" info persistence | tr -d '\r' | awk -F: -v f="$2" '$1 == f { print $2 }'; }

# during port job -> "p99 peak_kib seconds"
during() {
	local port=$1 cmd=$2 flag=$3 peak=0 t0 out
	t0=$(date +%s.%N)
	redis-cli -p "$port" "$cmd" >/dev/null
	( load "$port" >"$WORK/p99" ) &
	local loader=$!
	while kill -0 $loader 2>/dev/null || [[ $(job_field "$port" "$flag") == 1 ]]; do
		local now; now=$(pss "$PID"); ((now > peak)) && peak=$now
		if [[ $(job_field "$port" "$flag") == 0 && -z "${done_at:-}" ]]; then
			done_at=$(date +%s.%N)
		fi
		sleep 0.05
	done
	out=$(awk -v a="$t0" -v b="${done_at:-$(date +%s.%N)}" 'BEGIN { printf "%.1f", b - a }')
	unset done_at
	echo "$(cat "$WORK/p99") $peak $out"
}

declare -A R
for name in redis keel; do
	dir="$WORK/$name"; mkdir -p "$dir"; port=$(free_port)
	start "$name" "$dir" "$port"
	echo "  $name: populating $KEYS keys..." >&2
	redis-cli -p "$port" debug populate "$KEYS" >/dev/null
	sleep 2
	R[$name steady]=$(pss "$PID")
	echo "  $name: GET load alone..." >&2
	R[$name base]=$(load "$port")
	R[$name steady2]=$(pss "$PID")
	echo "  $name: during BGSAVE..." >&2
	R[$name bgsave]=$(during "$port" bgsave rdb_bgsave_in_progress)
	sleep 1
	echo "  $name: during BGREWRITEAOF..." >&2
	R[$name rewrite]=$(during "$port" bgrewriteaof aof_rewrite_in_progress)
	redis-cli -p "$port" save >/dev/null
	R[$name rdbsize]=$(stat -c %s "$dir/dump.rdb")
	kill -9 "$PID"; wait "$PID" 2>/dev/null || true
	start "$name" "$dir" "$port"
	R[$name loadtime]=$LOAD_S
	R[$name keys]=$(redis-cli -p "$port" dbsize)
	kill -9 "$PID"; wait "$PID" 2>/dev/null || true; PID=""
done

col() { echo "${R[$1]}" | awk -v c="$2" '{ print $c }'; }
echo "KEYS=$KEYS, GET load -c 50 -n $GETS with a SET load -c 4 beside it; Keel threads: ${KEEL_ARGS:-default ($(nproc))}."
echo
echo "| | Redis | Keel | Keel/Redis |"
echo "|---|---|---|---|"
row() { printf "| %s | %s | %s | %s |\n" "$1" "$2" "$3" "$(awk -v a="$3" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b }')"; }
for n in redis keel; do
	R[$n steadymb]=$(awk -v a="${R[$n steady2]}" 'BEGIN { printf "%.0f", a / 1024 }')
done
row "steady memory (PSS MiB, after the GET/SET load)" "${R[redis steadymb]}" "${R[keel steadymb]}"
row "GET p99 ms, no job" "${R[redis base]}" "${R[keel base]}"
for job in bgsave rewrite; do
	row "GET p99 ms during $job" "$(col "redis $job" 1)" "$(col "keel $job" 1)"
	for n in redis keel; do
		R[$n $job p]=$(awk -v a="$(col "$n $job" 1)" -v b="${R[$n base]}" 'BEGIN { printf "%.2f", a / b }')
		R[$n $job m]=$(awk -v a="$(col "$n $job" 2)" -v b="${R[$n steady2]}" 'BEGIN { printf "%.2f", a / b }')
	done
	row "  p99 during $job / p99 alone" "${R[redis $job p]}" "${R[keel $job p]}"
	row "peak PSS MiB during $job" "$(( $(col "redis $job" 2) / 1024 ))" "$(( $(col "keel $job" 2) / 1024 ))"
	row "  peak / steady" "${R[redis $job m]}" "${R[keel $job m]}"
	row "$job seconds" "$(col "redis $job" 3)" "$(col "keel $job" 3)"
done
row "RDB bytes" "${R[redis rdbsize]}" "${R[keel rdbsize]}"
row "start-up load seconds (own RDB)" "${R[redis loadtime]}" "${R[keel loadtime]}"
row "keys after load" "${R[redis keys]}" "${R[keel keys]}"

#!/usr/bin/env bash
# Persistence cost, Keel against Debian's redis-server in the same run, on the
# same disk: redis-benchmark SET -c 50 (seed 001's tests 3, 4 and 9) with
# random keys, 3-byte and 3000-byte values, under appendfsync no, everysec
# and always, plus Keel without the AOF as the everysec baseline. Servers run
# one at a time, alternating, each from an empty directory. Reports
# requests/s, p50/p99 and server CPU time per request. Prints Markdown.
#
# Environment:
#   N=1000000      requests per run        RUNS=1    runs per cell (median)
#   CLIENTS=50     redis-benchmark -c      KEYSPACE=1000000 (-r)
#   POLICIES="no everysec always"          SIZES="3 3000"
#   KEEL_SERVER=... (default: target/release/keel-server, built if needed)
#   KEEL_ARGS=...  extra keel-server options (e.g. "--threads 2")
#   BOTH_ARGS=...  extra options for both servers (e.g. "--auto-aof-rewrite-percentage 0")
#   DIR=...        where the files go (default: a fresh dir under $TMPDIR)

set -euo pipefail
N=${N:-1000000}
RUNS=${RUNS:-1}
CLIENTS=${CLIENTS:-50}
KEYSPACE=${KEYSPACE:-1000000}
POLICIES=${POLICIES:-"no everysec always"}
SIZES=${SIZES:-"3 3000"}
KEEL_ARGS=${KEEL_ARGS:-}
BOTH_ARGS=${BOTH_ARGS:-}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

die() { echo "bench-persistence: $*" >&2; exit 1; }
for tool in redis-server redis-benchmark redis-cli python3 awk; do
	command -v "$tool" >/dev/null || die "$tool not found (make deps installs it)"
done
if [[ -z "${KEEL_SERVER:-}" ]]; then
	KEEL_SERVER=$ROOT/target/release/keel-server
	(cd "$ROOT" && cargo build --release --bin keel-server >&2) || die "release build failed"
fi
WORK=${DIR:-$(mktemp -d "${TMPDIR:-/tmp}/keel-persist.XXXXXX")}
mkdir -p "$WORK"
PID=""
cleanup() { [[ -n "$PID" ]] && kill -9 "$PID" 2>/dev/null; true; }
trap cleanup EXIT

# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"
# Unlike bench-lib's median, prints nan when there are no numbers.
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) { print "nan"; exit }
	if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# run NAME POLICY SIZE -> "rps p50 p99 cpu_us_per_req"
run() {
	local name=$1 policy=$2 size=$3 port dir
	port=$(free_port)
	dir="$WORK/$name-$policy-$size"
	rm -rf "$dir"; mkdir -p "$dir"
	local aof=(--appendonly yes --appendfsync "$policy")
	[[ "$policy" == off ]] && aof=(--appendonly no)
	if [[ $name == redis ]]; then
		redis-server --port "$port" --bind 127.0.0.1 --save '' --dir "$dir" "${aof[@]}" \
			$BOTH_ARGS >"$dir/log" 2>&1 &
	else
		"$KEEL_SERVER" --port "$port" --bind 127.0.0.1 --save '' --dir "$dir" "${aof[@]}" \
			$KEEL_ARGS $BOTH_ARGS >"$dir/log" 2>&1 &
	fi
	PID=$!
	wait_up "$port" 200
	local before after out
	before=$(ticks "$PID")
	out=$(redis-benchmark -p "$port" -t set -c "$CLIENTS" -n "$N" -r "$KEYSPACE" -d "$size" --csv 2>/dev/null | tail -1)
	after=$(ticks "$PID")
	kill -9 "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; PID=""
	rm -rf "$dir"
	# "SET","rps","avg","min","p50","p95","p99","max"
	echo "$out" | tr -d '"' | awk -F, -v c=$((after - before)) -v t="$HZ" -v n="$N" \
		'{ printf "%s %s %s %.2f\n", $2, $5, $7, c / t * 1e6 / n }'
}

declare -A R
for size in $SIZES; do
	for policy in off $POLICIES; do
		for name in redis keel; do
			[[ $policy == off && $name == redis ]] && continue
			for i in $(seq "$RUNS"); do
				echo "  $name appendfsync=$policy -d $size run $i..." >&2
				R["$name $policy $size $i"]=$(run "$name" "$policy" "$size")
			done
		done
	done
done

field() { # name policy size column -> median over runs
	for i in $(seq "$RUNS"); do echo "${R["$1 $2 $3 $i"]}" | awk -v c="$4" '{ print $c }'; done | median
}

echo "Threads: redis-server 1 (plus its fsync thread), keel-server ${KEEL_ARGS:-default (one per core, $(nproc) here)} + AOF thread."
echo "N=$N, -c $CLIENTS, -r $KEYSPACE, runs=$RUNS (medians)${BOTH_ARGS:+, both servers with $BOTH_ARGS}."
echo
echo "| value | appendfsync | Redis req/s | Keel req/s | Keel/Redis | Redis p99 ms | Keel p99 ms | Redis CPU us/req | Keel CPU us/req |"
echo "|---|---|---|---|---|---|---|---|---|"
for size in $SIZES; do
	for policy in $POLICIES; do
		rr=$(field redis "$policy" "$size" 1); kr=$(field keel "$policy" "$size" 1)
		printf "| %s B | %s | %.0f | %.0f | %.2fx | %s | %s | %s | %s |\n" "$size" "$policy" "$rr" "$kr" \
			"$(awk -v a="$kr" -v b="$rr" 'BEGIN { print a / b }')" \
			"$(field redis "$policy" "$size" 3)" "$(field keel "$policy" "$size" 3)" \
			"$(field redis "$policy" "$size" 4)" "$(field keel "$policy" "$size" 4)"
	done
	[[ " $POLICIES " == *" everysec "* ]] || continue
	ko=$(field keel off "$size" 1); ke=$(field keel everysec "$size" 1)
	printf "| %s B | Keel without AOF | | %.0f | everysec/no-AOF %.2fx | | %s | | %s |\n" "$size" "$ko" \
		"$(awk -v a="$ke" -v b="$ko" 'BEGIN { print a / b }')" "$(field keel off "$size" 3)" "$(field keel off "$size" 4)"
done

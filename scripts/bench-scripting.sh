#!/usr/bin/env bash
# Scripting cost, Keel against Debian's redis-server in the same run:
# redis-benchmark -c 50 -r 1000000 with
#   eval     EVAL "return redis.call('set',KEYS[1],ARGV[1])" 1 key:__rand_int__ val
#   evalsha  the same script through EVALSHA (loaded first with SCRIPT LOAD)
#   undecl   EVALSHA of a script that SETs a key it did not declare (ARGV[1])
#   set      plain SET key:__rand_int__ val, the baseline a cached sha is compared with
# No persistence. Servers run one at a time, alternating, each fresh. Reports
# requests/s, p50 and server CPU time per request. Prints Markdown.
#
# Environment:
#   N=1000000   requests per run    RUNS=1 runs per cell (median)
#   CLIENTS=50  KEYSPACE=1000000    TESTS="eval evalsha undecl set"
#   KEEL_SERVER=... (default: target/release/keel-server, built if needed)
#   KEEL_ARGS=...   extra keel-server options (e.g. "--threads 2")

set -euo pipefail
N=${N:-1000000}
RUNS=${RUNS:-1}
CLIENTS=${CLIENTS:-50}
KEYSPACE=${KEYSPACE:-1000000}
TESTS=${TESTS:-"eval evalsha undecl set"}
KEEL_ARGS=${KEEL_ARGS:-}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

die() { echo "bench-scripting: $*" >&2; exit 1; }
for tool in redis-server redis-benchmark redis-cli python3 awk; do
	command -v "$tool" >/dev/null || die "$tool not found (make deps installs it)"
done
if [[ -z "${KEEL_SERVER:-}" ]]; then
	KEEL_SERVER=$ROOT/target/release/keel-server
	(cd "$ROOT" && cargo build --release --bin keel-server >&2) || die "release build failed"
fi
PID=""
cleanup() { [[ -n "$PID" ]] && kill -9 "$PID" 2>/dev/null; true; }
trap cleanup EXIT

SET_SCRIPT="return redis.call('set',KEYS[1],ARGV[1])"
UNDECL_SCRIPT="return redis.call('set',ARGV[1],ARGV[2])"

# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"
# Unlike bench-lib's median, prints nan when there are no numbers.
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) { print "nan"; exit }
	if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# run NAME TEST -> "rps p50 cpu_us_per_req"
run() {
	local name=$1 test=$2 port
	port=$(free_port)
	if [[ $name == redis ]]; then
		redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no >/dev/null 2>&1 &
	else
		"$KEEL_SERVER" --port "$port" --bind 127.0.0.1 --save '' --appendonly no $KEEL_ARGS >/dev/null 2>&1 &
	fi
	PID=$!
	wait_up "$port" 200
	local sha cmd
	case $test in
		eval) cmd=(eval "$SET_SCRIPT" 1 key:__rand_int__ val) ;;
		evalsha) sha=$(redis-cli -p "$port" script load "$SET_SCRIPT")
			cmd=(evalsha "$sha" 1 key:__rand_int__ val) ;;
		undecl) sha=$(redis-cli -p "$port" script load "$UNDECL_SCRIPT")
			cmd=(evalsha "$sha" 0 key:__rand_int__ val) ;;
		set) cmd=(set key:__rand_int__ val) ;;
	esac
	local before after out
	before=$(ticks "$PID")
	out=$(redis-benchmark -p "$port" -c "$CLIENTS" -n "$N" -r "$KEYSPACE" --csv "${cmd[@]}" 2>/dev/null | tail -1)
	after=$(ticks "$PID")
	kill -9 "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; PID=""
	echo "$out" | tr -d '"' | awk -F, -v c=$((after - before)) -v t="$HZ" -v n="$N" \
		'{ printf "%s %s %.2f\n", $(NF - 6), $(NF - 3), c / t * 1e6 / n }'
}

declare -A R
for test in $TESTS; do
	for name in redis keel; do
		rps=(); p50=(); cpu=()
		for _ in $(seq "$RUNS"); do
			read -r a b c < <(run "$name" "$test")
			rps+=("$a"); p50+=("$b"); cpu+=("$c")
		done
		R[$name,$test]="$(printf '%s\n' "${rps[@]}" | median) $(printf '%s\n' "${p50[@]}" | median) $(printf '%s\n' "${cpu[@]}" | median)"
	done
done

echo "| test | Redis req/s | Keel req/s | Keel/Redis | Redis p50 ms | Keel p50 ms | Redis CPU µs/req | Keel CPU µs/req |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for test in $TESTS; do
	read -r rr rp rc <<<"${R[redis,$test]}"
	read -r kr kp kc <<<"${R[keel,$test]}"
	ratio=$(awk -v a="$kr" -v b="$rr" 'BEGIN { printf "%.2fx", a / b }')
	echo "| $test | $rr | $kr | $ratio | $rp | $kp | $rc | $kc |"
done

#!/usr/bin/env bash
# Eviction quality and cost, Keel against Redis 7.0.15 in the same run. Prints
# Markdown.
#
# For each policy (allkeys-lru, allkeys-lfu) and each server: FLUSHALL, set
# maxmemory to the empty server's used_memory plus LIMIT_MB, SET every one of
# KEYS keys once in order (SIZE-byte values), run keel-bench's mixed load (zipf
# keys over the KEYS keys, SET:GET 1:4) for WARM seconds, CONFIG RESETSTAT,
# then measure for TIME
# seconds: req/s from keel-bench, hit ratio from INFO keyspace_hits/misses,
# evicted_keys and the keys held. The same load with maxmemory 0 gives the
# throughput cost of evicting. LIMIT_MB is picked so the limit holds about a
# quarter of the key space (the "held" column shows it).
#
# With RATE set, the policy runs send RATE requests/s in total (open loop)
# instead of as many as the server answers: the hit ratio then compares the
# policies alone. Every load uses the same seed, so the measured load repeats
# the warm-up's keys in order, and a server that answers faster has seen more
# of them when it is measured. The no-limit rows stay closed loop.
#
# Environment: KEYS=400000 SIZE=100 LIMIT_MB=20 WARM=5 TIME=10 CLIENTS=20
#              RATE= KEEL_ARGS="--threads 2"
set -euo pipefail
KEYS=${KEYS:-400000}
SIZE=${SIZE:-100}
LIMIT_MB=${LIMIT_MB:-20}
WARM=${WARM:-5}
TIME=${TIME:-10}
CLIENTS=${CLIENTS:-20}
RATE=${RATE:-}
KEEL_ARGS=${KEEL_ARGS:-"--threads 2"}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
cargo build --release --bin keel-server --bin keel-bench >&2
KEEL=$ROOT/target/release/keel-server
BENCH=$ROOT/target/release/keel-bench
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"
field() { redis-cli -p "$1" info "$2" | tr -d '\r' | awk -F: -v f="$3" '$1==f{print $2}'; }

KPORT=$(free_port)
# shellcheck disable=SC2086
"$KEEL" --port "$KPORT" --bind 127.0.0.1 --save "" --appendonly no $KEEL_ARGS >/dev/null 2>&1 &
PIDS+=($!)
RPORT=$(free_port)
redis-server --port "$RPORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize no >/dev/null 2>&1 &
PIDS+=($!)
wait_up "$KPORT"
wait_up "$RPORT"

load() { # port seconds [rate] -> req/s
	"$BENCH" mixed -p "$1" --ratio 1:4 --key-pattern zipf --key-max "$KEYS" \
		--data-size "$SIZE" --test-time "$2" -c "$CLIENTS" --threads 1 --seed 7 ${3:+--rate "$3"} |
		awk '/^SET:GET/{print $4}'
}

prefill() { # port: every key once, in order
	"$BENCH" mixed -p "$1" --ratio 1:0 --key-pattern sequential --key-max "$KEYS" \
		--data-size "$SIZE" -n "$KEYS" -c 4 --pipeline 16 --threads 1 >/dev/null
}

# One measurement: port policy limit_mb -> "req/s hit% evicted held"
measure() {
	local port=$1 policy=$2 mb=$3
	redis-cli -p "$port" config set maxmemory 0 >/dev/null
	redis-cli -p "$port" flushall >/dev/null
	sleep 0.5
	local base
	base=$(field "$port" memory used_memory)
	redis-cli -p "$port" config set maxmemory-policy "$policy" >/dev/null
	if [[ $mb != 0 ]]; then
		redis-cli -p "$port" config set maxmemory $((base + mb * 1024 * 1024)) >/dev/null
	fi
	local rate=
	if [[ $mb != 0 ]]; then rate=$RATE; fi
	prefill "$port"
	load "$port" "$WARM" "$rate" >/dev/null
	redis-cli -p "$port" config resetstat >/dev/null
	local rps hits misses ev held
	rps=$(load "$port" "$TIME" "$rate")
	hits=$(field "$port" stats keyspace_hits)
	misses=$(field "$port" stats keyspace_misses)
	ev=$(field "$port" stats evicted_keys)
	held=$(redis-cli -p "$port" dbsize)
	echo "$rps $(awk -v h="$hits" -v m="$misses" 'BEGIN{printf "%.1f", 100*h/(h+m)}') $ev $held"
}

echo "| policy | server | req/s | hit ratio | evicted | keys held (of $KEYS) |"
echo "|---|---|---:|---:|---:|---:|"
for policy in allkeys-lru allkeys-lfu; do
	for s in keel redis; do
		port=$KPORT
		[[ $s == redis ]] && port=$RPORT
		read -r rps hit ev held < <(measure "$port" "$policy" "$LIMIT_MB")
		echo "| $policy, maxmemory +${LIMIT_MB}mb | $s | $rps | $hit% | $ev | $held |"
	done
done
for s in keel redis; do
	port=$KPORT
	[[ $s == redis ]] && port=$RPORT
	read -r rps hit ev held < <(measure "$port" noeviction 0)
	echo "| no limit (maxmemory 0) | $s | $rps | $hit% | $ev | $held |"
done
echo
echo "keel-bench mixed --ratio 1:4 --key-pattern zipf --key-max $KEYS --data-size $SIZE" \
	"--test-time $TIME -c $CLIENTS --threads 1 --seed 7${RATE:+ --rate $RATE (policy runs)} (after a sequential SET of every key" \
	"and $WARM s of the same load); keel-server $KEEL_ARGS; $(nproc) cores"

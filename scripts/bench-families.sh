#!/usr/bin/env bash
# redis-benchmark's collection tests against keel-server and Debian's
# redis-server on this machine: for each test, runs alternate between the two
# servers (fresh server per run), each server pinned to CPU 0 and
# redis-benchmark to CPU 1. Reports the median requests/s, the server's CPU
# time per request (utime+stime from /proc), and Keel / Redis ratios, as
# Markdown.
#
# Environment:
#   N=1000000     requests per run (-n)
#   RUNS=2        runs per server and test (medians reported)
#   CLIENTS=50    -c
#   PIPELINE=1    -P
#   TESTS="lpush rpush lpop rpop sadd hset spop zadd zpopmin lrange_100"
#   KEEL_ARGS="--threads 1"   (one worker on the one pinned CPU, like Redis)
#
# Example: N=200000 RUNS=1 scripts/bench-families.sh
set -euo pipefail
N=${N:-1000000}
RUNS=${RUNS:-2}
CLIENTS=${CLIENTS:-50}
PIPELINE=${PIPELINE:-1}
TESTS=${TESTS:-"lpush rpush lpop rpop sadd hset spop zadd zpopmin lrange_100"}
KEEL_ARGS=${KEEL_ARGS:-"--threads 1"}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
cargo build --release --bin keel-server >&2
KEEL=$ROOT/target/release/keel-server

# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"

# One run: prints "requests/s server-us-per-request".
run_one() {
	local server=$1 test=$2 port pid t0 t1 rps
	port=$(free_port)
	if [[ $server == redis ]]; then
		taskset -c 0 redis-server --port "$port" --save '' --appendonly no >/dev/null 2>&1 &
	else
		# shellcheck disable=SC2086
		taskset -c 0 "$KEEL" --port "$port" --save "" $KEEL_ARGS >/dev/null 2>&1 &
	fi
	pid=$!
	wait_up "$port"
	t0=$(ticks "$pid")
	# The LRANGE tests print a fill step first; the last line is the test.
	rps=$(taskset -c 1 redis-benchmark -p "$port" -c "$CLIENTS" -n "$N" -P "$PIPELINE" -t "$test" --csv 2>/dev/null |
		tail -1 | cut -d, -f2 | tr -d '"')
	t1=$(ticks "$pid")
	redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
	wait "$pid" 2>/dev/null || true
	echo "$rps $(awk -v d=$((t1 - t0)) -v hz="$HZ" -v n="$N" 'BEGIN{printf "%.2f", d / hz * 1e6 / n}')"
}

echo "Command: N=$N RUNS=$RUNS CLIENTS=$CLIENTS PIPELINE=$PIPELINE KEEL_ARGS=\"$KEEL_ARGS\" scripts/bench-families.sh"
echo
echo "| test | Redis req/s | Keel req/s | ratio | Redis server us/req | Keel server us/req | CPU ratio |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for test in $TESTS; do
	r_rps=(); k_rps=(); r_cpu=(); k_cpu=()
	for _ in $(seq "$RUNS"); do
		read -r a b < <(run_one redis "$test"); r_rps+=("$a"); r_cpu+=("$b")
		read -r a b < <(run_one keel "$test"); k_rps+=("$a"); k_cpu+=("$b")
	done
	rr=$(printf '%s\n' "${r_rps[@]}" | median); kr=$(printf '%s\n' "${k_rps[@]}" | median)
	rc=$(printf '%s\n' "${r_cpu[@]}" | median); kc=$(printf '%s\n' "${k_cpu[@]}" | median)
	awk -v t="$test" -v rr="$rr" -v kr="$kr" -v rc="$rc" -v kc="$kc" 'BEGIN{
		printf "| %s | %.0f | %.0f | %.2fx | %.2f | %.2f | %.2fx |\n", toupper(t), rr, kr, kr/rr, rc, kc, (rc>0? kc/rc : 0)}'
done

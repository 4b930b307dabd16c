#!/usr/bin/env bash
# HyperLogLog against Debian's redis-server on this machine: PFADD of random
# elements to one key, PFCOUNT of one key, and PFCOUNT of ten keys (a merge
# of ten dense sketches per call), with redis-benchmark at -P 1 and -P 16.
# Runs alternate between the two servers (a fresh server per run, pinned to
# CPU 0; redis-benchmark on CPU 1). Before the tests, keys k1..k10 get FILL
# random elements each (dense) and one PFCOUNT, as each server would have
# them in use. Reports median requests/s, the server's CPU time per request
# (utime+stime from /proc) and Keel / Redis ratios, as Markdown.
#
# Environment:
#   N=1000000       requests per run for PFADD and single-key PFCOUNT (-n)
#   NMULTI=100000   requests per run for the ten-key PFCOUNT
#   FILL=100000     random elements per key k1..k10
#   RUNS=3          runs per server, test and pipeline depth (medians)
#   CLIENTS=50      -c
#   KEEL_ARGS="--threads 1"   (one worker on the one pinned CPU, like Redis)
#   KEEL_SERVER=...           (default target/release/keel-server, built if needed)
#   TESTS="pfadd pfcount1 pfcount10"
#
# Example: N=200000 NMULTI=20000 RUNS=1 scripts/bench-hll.sh
set -euo pipefail
N=${N:-1000000}
NMULTI=${NMULTI:-100000}
FILL=${FILL:-100000}
RUNS=${RUNS:-3}
CLIENTS=${CLIENTS:-50}
KEEL_ARGS=${KEEL_ARGS:-"--threads 1"}
TESTS=${TESTS:-"pfadd pfcount1 pfcount10"}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
if [[ -z "${KEEL_SERVER:-}" ]]; then
	KEEL_SERVER=$ROOT/target/release/keel-server
	cargo build --release --bin keel-server >&2
fi
KEEL=$KEEL_SERVER
PID=
cleanup() { [[ -n $PID ]] && kill "$PID" 2>/dev/null; true; }
trap cleanup EXIT
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"

KEYS10="k1 k2 k3 k4 k5 k6 k7 k8 k9 k10"

# One run of one test: prints "requests/s server-us-per-request".
run_one() {
	local server=$1 test=$2 pipeline=$3 port n t0 t1 rps
	port=$(free_port)
	if [[ $server == redis ]]; then
		taskset -c 0 redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no >/dev/null 2>&1 &
	else
		# shellcheck disable=SC2086
		taskset -c 0 "$KEEL" --port "$port" --bind 127.0.0.1 --save "" $KEEL_ARGS >/dev/null 2>&1 &
	fi
	PID=$!
	wait_up "$port"
	for k in $KEYS10; do
		taskset -c 1 redis-benchmark -p "$port" -c 10 -n "$FILL" -r 100000000 -P 64 PFADD "$k" __rand_int__ >/dev/null 2>&1
		redis-cli -p "$port" pfcount "$k" >/dev/null
	done
	n=$N
	case $test in
	pfadd) set -- PFADD hll __rand_int__ ;;
	pfcount1) set -- PFCOUNT k1 ;;
	# shellcheck disable=SC2086
	pfcount10) set -- PFCOUNT $KEYS10; n=$NMULTI ;;
	esac
	t0=$(ticks "$PID")
	rps=$(taskset -c 1 redis-benchmark -p "$port" -c "$CLIENTS" -n "$n" -r 100000000 -P "$pipeline" --csv "$@" 2>/dev/null |
		tail -1 | cut -d, -f2 | tr -d '"')
	t1=$(ticks "$PID")
	redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
	wait "$PID" 2>/dev/null || true
	PID=
	echo "$rps $(awk -v d=$((t1 - t0)) -v hz="$HZ" -v n="$n" 'BEGIN{printf "%.2f", d / hz * 1e6 / n}')"
}

echo "Command: N=$N NMULTI=$NMULTI FILL=$FILL RUNS=$RUNS CLIENTS=$CLIENTS KEEL_ARGS=\"$KEEL_ARGS\" TESTS=\"$TESTS\" scripts/bench-hll.sh"
echo
echo "| test | -P | Redis req/s | Keel req/s | ratio | Redis server us/req | Keel server us/req | CPU ratio |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for test in $TESTS; do
	for p in 1 16; do
		r_rps=(); k_rps=(); r_cpu=(); k_cpu=()
		for _ in $(seq "$RUNS"); do
			read -r a b < <(run_one redis "$test" "$p"); r_rps+=("$a"); r_cpu+=("$b")
			read -r a b < <(run_one keel "$test" "$p"); k_rps+=("$a"); k_cpu+=("$b")
		done
		rr=$(printf '%s\n' "${r_rps[@]}" | median); kr=$(printf '%s\n' "${k_rps[@]}" | median)
		rc=$(printf '%s\n' "${r_cpu[@]}" | median); kc=$(printf '%s\n' "${k_cpu[@]}" | median)
		case $test in
		pfadd) name="PFADD hll rand" ;;
		pfcount1) name="PFCOUNT k1" ;;
		pfcount10) name="PFCOUNT k1 .. k10" ;;
		esac
		awk -v t="$name" -v p="$p" -v rr="$rr" -v kr="$kr" -v rc="$rc" -v kc="$kc" 'BEGIN{
			printf "| %s | %s | %.0f | %.0f | %.2fx | %.2f | %.2f | %.2fx |\n", t, p, rr, kr, kr/rr, rc, kc, (rc>0? kc/rc : 0)}'
	done
done

#!/usr/bin/env bash
# Pub/sub throughput, Keel against Redis in one run: Debian's redis-server,
# keel-server --threads 1 and keel-server with its default thread count (one
# per CPU), each on a free loopback port, the cases run server after server so
# that all three see the same machine:
#   - fan-out: 1 publisher -> 1,000 subscribers of one channel;
#   - fan-in: 50 publishers -> 50 subscribers of one channel;
#   each with 100-byte messages, the publishers waiting for every reply (P1)
#   and with 16 PUBLISHes in flight (P16) (keel-bench pubsub);
#   - PUBLISH to a channel nobody listens on against GET of a missing key,
#   50 connections, P1 and P16 (redis-benchmark).
# Prints Markdown tables of throughput and of server CPU time, with Keel/Redis
# ratios.
#
#   SECONDS_PER_CASE=5 scripts/bench-pubsub.sh
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SECS=${SECONDS_PER_CASE:-5}
cd "$ROOT"
cargo build --release --bin keel-server --bin keel-bench >&2
BENCH=target/release/keel-bench
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"
RP=$(free_port); K1P=$(free_port); KNP=$(free_port)
redis-server --port "$RP" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >/dev/null 2>&1 & REDIS=$!
target/release/keel-server --port "$K1P" --bind 127.0.0.1 --save '' --threads 1 >/dev/null 2>&1 & KEEL1=$!
target/release/keel-server --port "$KNP" --bind 127.0.0.1 --save '' >/dev/null 2>&1 & KEELN=$!
trap 'kill $REDIS $KEEL1 $KEELN 2>/dev/null || true' EXIT
for p in "$RP" "$K1P" "$KNP"; do
	wait_up "$p"
done
threads() { ls "/proc/$1/task" | wc -l; }
echo "Machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); clients and servers share it."
echo "Command: SECONDS_PER_CASE=$SECS scripts/bench-pubsub.sh"
echo "Servers: redis-server $(redis-server --version | grep -o 'v=[0-9.]*' | cut -d= -f2) ($(threads $REDIS) threads)," \
	"keel-server --threads 1 ($(threads $KEEL1) threads), keel-server default ($(threads $KEELN) threads)."
echo "Tools: keel-bench pubsub with 2 threads of its own; redis-benchmark (one thread)."
echo

NAMES=(redis keel1 keeln)
PORTS=("$RP" "$K1P" "$KNP")
PIDS=("$REDIS" "$KEEL1" "$KEELN")
TICK_US=$((1000000 / $(getconf CLK_TCK)))
declare -A RATE CPU

# field NAME LINE: the number after "NAME " in a keel-bench pubsub line.
pubsub_case() { # case-id, then keel-bench pubsub options
	local id=$1; shift
	for i in 0 1 2; do
		local line
		line=$("$BENCH" pubsub -p "${PORTS[$i]}" --seconds "$SECS" --label "${NAMES[$i]}" "$@") || true
		echo "    $line" >&2
		RATE[$id,${NAMES[$i]}]=$(sed -n 's/.*delivered \([0-9]*\)\/s.*/\1/p' <<<"$line")
		CPU[$id,${NAMES[$i]}]=$(sed -n 's/.* \([0-9.]*\) us\/delivered.*/\1/p' <<<"$line")
	done
}

rb_case() { # case-id, pipeline, requests, command...
	local id=$1 pipe=$2 n=$3; shift 3
	for i in 0 1 2; do
		local line before after
		before=$(ticks "${PIDS[$i]}")
		line=$(redis-benchmark -p "${PORTS[$i]}" -c 50 -n "$n" -P "$pipe" -q "$@" | tr '\r' '\n' | grep 'requests per second' | tail -1)
		echo "    ${NAMES[$i]}: $* -P $pipe: $line" >&2
		RATE[$id,${NAMES[$i]}]=$(sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' <<<"$line" | cut -d. -f1)
		after=$(ticks "${PIDS[$i]}")
		CPU[$id,${NAMES[$i]}]=$(python3 -c "import sys; t, us, n = map(int, sys.argv[1:]); print(f'{t * us / n:.3f}')" \
			$((after - before)) "$TICK_US" "$n")
	done
}

ratio() { python3 -c "import sys; a, b = sys.argv[1:]; print(f'{float(a)/float(b):.2f}x' if a and b and float(b) else '?')" "$1" "$2"; }

CASES=()
run_pubsub() { CASES+=("$1|$2"); echo "$2" >&2; pubsub_case "$1" "${@:3}"; }
run_rb() { CASES+=("$1|$2"); echo "$2" >&2; rb_case "$1" "${@:3}"; }

run_pubsub fo1 "fan-out 1 -> 1000, P1 (delivered/s)" --publishers 1 --subscribers 1000 -d 100 -P 1
run_pubsub fo16 "fan-out 1 -> 1000, P16 (delivered/s)" --publishers 1 --subscribers 1000 -d 100 -P 16
run_pubsub fi1 "fan-in 50 -> 50, P1 (delivered/s)" --publishers 50 --subscribers 50 -d 100 -P 1
run_pubsub fi16 "fan-in 50 -> 50, P16 (delivered/s)" --publishers 50 --subscribers 50 -d 100 -P 16
# Sized to take a few seconds each on a 2-CPU machine.
run_rb get1 "GET missing key, P1 (requests/s)" 1 $((60000 * SECS)) GET bench:missing
run_rb pub1 "PUBLISH to nobody, P1 (requests/s)" 1 $((60000 * SECS)) PUBLISH bench:nobody hello
run_rb get16 "GET missing key, P16 (requests/s)" 16 $((300000 * SECS)) GET bench:missing
run_rb pub16 "PUBLISH to nobody, P16 (requests/s)" 16 $((300000 * SECS)) PUBLISH bench:nobody hello

echo "| case | Redis | Keel 1 thread | Keel default | Keel 1 / Redis | Keel default / Redis |"
echo "|---|---:|---:|---:|---:|---:|"
for c in "${CASES[@]}"; do
	id=${c%%|*}; title=${c#*|}
	r=${RATE[$id,redis]}; k1=${RATE[$id,keel1]}; kn=${RATE[$id,keeln]}
	echo "| $title | $r | $k1 | $kn | $(ratio "$k1" "$r") | $(ratio "$kn" "$r") |"
done
echo
echo "Server CPU time (microseconds; lower is better) per delivered message in the pub/sub cases"
echo "(keel-bench: the threads' run time), per request in redis-benchmark's (/proc/PID/stat utime + stime):"
echo
echo "| case | Redis | Keel 1 thread | Keel default | Keel 1 / Redis | Keel default / Redis |"
echo "|---|---:|---:|---:|---:|---:|"
for c in "${CASES[@]}"; do
	id=${c%%|*}; title=${c#*|}
	[[ -n ${CPU[$id,redis]} ]] || continue
	r=${CPU[$id,redis]}; k1=${CPU[$id,keel1]}; kn=${CPU[$id,keeln]}
	echo "| ${title% (*} | $r | $k1 | $kn | $(ratio "$k1" "$r") | $(ratio "$kn" "$r") |"
done

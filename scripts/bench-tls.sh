#!/usr/bin/env bash
# What TLS costs: redis-benchmark SET and GET (-P 1 and -P 16) against Keel's
# plain port, Keel's TLS port, Redis's plain port and Redis's TLS port, all in
# the same run, reporting requests/s and the server's CPU time per request
# (utime+stime from /proc/PID/stat around each run), then the ratios Keel
# TLS / Keel plain and Keel TLS / Redis TLS. Prints Markdown for BENCHMARKS.md.
#
# Environment:
#   N=100000        requests per redis-benchmark run
#   CLIENTS=50      redis-benchmark -c
#   KEEL_ARGS=...   extra keel-server options, e.g. "--threads 1"
#   KEEL_SERVER=... binary to test (default: target/release/keel-server, built if needed)

set -euo pipefail

N=${N:-100000}
CLIENTS=${CLIENTS:-50}
KEEL_ARGS=${KEEL_ARGS:-}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

for tool in redis-server redis-benchmark redis-cli openssl python3 awk; do
	command -v "$tool" >/dev/null || { echo "bench-tls: $tool not found" >&2; exit 1; }
done
if [[ -z "${KEEL_SERVER:-}" ]]; then
	KEEL_SERVER=$ROOT/target/release/keel-server
	(cd "$ROOT" && cargo build --release --bin keel-server >&2)
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/keel-bench-tls.XXXXXX")
PIDS=()
cleanup() {
	for pid in "${PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"

# A CA and a server certificate for 127.0.0.1.
(
	cd "$WORK"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 1 -subj "/CN=bench CA"
	openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=localhost"
	echo "subjectAltName=DNS:localhost,IP:127.0.0.1" >san.ext
	openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt \
		-days 1 -extfile san.ext
) >/dev/null 2>&1
TLS_ARGS=(--tls-cert-file "$WORK/server.crt" --tls-key-file "$WORK/server.key"
	--tls-ca-cert-file "$WORK/ca.crt" --tls-auth-clients no)

wait_port() {
	for _ in $(seq 100); do
		redis-cli -p "$1" ping >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "bench-tls: server on port $1 did not start" >&2
	exit 1
}

KP=$(free_port); KT=$(free_port); RP=$(free_port); RT=$(free_port)
# shellcheck disable=SC2086
"$KEEL_SERVER" --bind 127.0.0.1 --port "$KP" --tls-port "$KT" --save '' "${TLS_ARGS[@]}" \
	$KEEL_ARGS >"$WORK/keel.log" 2>&1 &
KEEL_PID=$!; PIDS+=("$KEEL_PID")
redis-server --bind 127.0.0.1 --port "$RP" --tls-port "$RT" --save '' --appendonly no \
	"${TLS_ARGS[@]}" >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!; PIDS+=("$REDIS_PID")
wait_port "$KP"; wait_port "$RP"

# run PID PORT TLS(yes/no) TEST PIPELINE -> "rps cpu_us_per_req"
run() {
	local pid=$1 port=$2 tls=$3 test=$4 pipe=$5 extra=()
	[[ $tls == yes ]] && extra=(--tls --cacert "$WORK/ca.crt")
	local before after rps
	before=$(ticks "$pid")
	rps=$(redis-benchmark -p "$port" "${extra[@]}" -c "$CLIENTS" -n "$N" -r 100000 -P "$pipe" \
		-t "$test" --csv 2>/dev/null | awk -F'","' 'NR==2 {print $2}')
	after=$(ticks "$pid")
	awk -v r="$rps" -v t=$((after - before)) -v hz="$HZ" -v n="$N" \
		'BEGIN {printf "%.0f %.2f\n", r, t / hz * 1e6 / n}'
}

threads_of() { awk '/^Threads:/ {print $2}' "/proc/$1/status"; }

echo "| Test | Keel plain | Keel TLS | Redis plain | Redis TLS | Keel TLS/plain | Keel TLS/Redis TLS |"
echo "|------|-----------:|---------:|------------:|----------:|---------------:|-------------------:|"
for pipe in 1 16; do
	for test in set get; do
		read -r kp_r kp_c < <(run "$KEEL_PID" "$KP" no "$test" "$pipe")
		read -r kt_r kt_c < <(run "$KEEL_PID" "$KT" yes "$test" "$pipe")
		read -r rp_r rp_c < <(run "$REDIS_PID" "$RP" no "$test" "$pipe")
		read -r rt_r rt_c < <(run "$REDIS_PID" "$RT" yes "$test" "$pipe")
		awk -v t="${test^^} -P $pipe" -v a="$kp_r" -v b="$kt_r" -v c="$rp_r" -v d="$rt_r" \
			-v ac="$kp_c" -v bc="$kt_c" -v cc="$rp_c" -v dc="$rt_c" 'BEGIN {
			printf "| %s req/s | %d | %d | %d | %d | %.2fx | %.2fx |\n", t, a, b, c, d, b / a, b / d
			printf "| %s CPU µs/req | %.2f | %.2f | %.2f | %.2f | %.2fx | %.2fx |\n", t, ac, bc, cc, dc, bc / ac, bc / dc
		}'
	done
done
echo
echo "Server threads: Keel $(threads_of "$KEEL_PID"), Redis $(threads_of "$REDIS_PID"); redis-benchmark: 1 thread, $CLIENTS clients, $N requests per run."

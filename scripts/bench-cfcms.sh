#!/usr/bin/env bash
# Cuckoo filter and count-min sketch benchmarks on keel-server (Debian's Redis
# has no RedisBloom, so throughput is compared within one Keel server, next to
# SET/GET, and memory against RedisBloom's sizing rules). Prints Markdown.
# Parts (PARTS="throughput memory" by default):
#
#   throughput  redis-benchmark -n N -r 100000000 -c 50, unpipelined and -P 16:
#               after CF.RESERVE cf 10000000 and CMS.INITBYPROB cms 0.0001 0.001,
#               in turn SET key:__rand_int__, CF.ADD cf __rand_int__,
#               CMS.INCRBY cms __rand_int__ 1, GET key:__rand_int__,
#               CF.EXISTS cf __rand_int__, CMS.QUERY cms __rand_int__; a fresh
#               server per run, medians of RUNS; server pinned to CPU 0,
#               redis-benchmark to CPU 1 (one thread each side, --threads 1);
#               server CPU per request from /proc.
#   memory      CF.INFO Size and MEMORY USAGE against RedisBloom's figure
#               (40 + 16 per sub-filter + buckets * bucket size) for three
#               capacities, and MEMORY USAGE of sketches against their counters
#               (width * depth * 4 bytes).
#
# Environment: N=1000000 RUNS=3 PARTS=... KEEL_ARGS="--threads 1"
set -euo pipefail
N=${N:-1000000}
RUNS=${RUNS:-3}
PARTS=${PARTS:-"throughput memory"}
KEEL_ARGS=${KEEL_ARGS:-"--threads 1"}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
cargo build --release --bin keel-server >&2
KEEL=$ROOT/target/release/keel-server
PID=
cleanup() { [[ -n $PID ]] && kill "$PID" 2>/dev/null; true; }
trap cleanup EXIT
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"




throughput() {
	echo "### CF.ADD / CF.EXISTS and CMS.INCRBY / CMS.QUERY next to SET / GET (one keel-server)"
	echo
	echo "Command: N=$N RUNS=$RUNS KEEL_ARGS=\"$KEEL_ARGS\" PARTS=throughput scripts/bench-cfcms.sh"
	echo
	echo "| -P | pair | baseline req/s | sketch req/s | ratio | baseline us/req | sketch us/req |"
	echo "|---:|---|---:|---:|---:|---:|---:|"
	local names=(set cfadd incr get cfex query)
	local cmds=("SET key:__rand_int__ xxx" "CF.ADD cf __rand_int__" "CMS.INCRBY cms __rand_int__ 1"
		"GET key:__rand_int__" "CF.EXISTS cf __rand_int__" "CMS.QUERY cms __rand_int__")
	for p in 1 16; do
		declare -A R=() C=()
		for _ in $(seq "$RUNS"); do
			start_server keel
			redis-cli -p "$PORT" cf.reserve cf 10000000 >/dev/null
			redis-cli -p "$PORT" cms.initbyprob cms 0.0001 0.001 >/dev/null
			for i in "${!names[@]}"; do
				local a c
				# shellcheck disable=SC2086
				read -r a c < <(rb_test "$p" -r 100000000 ${cmds[$i]})
				R[${names[$i]}]+="$a "
				C[${names[$i]}]+="$c "
			done
			stop_server
		done
		m() { printf '%s\n' $1 | median; }
		row() {
			awk -v p="$p" -v pair="$1" -v br="$(m "${R[$2]}")" -v fr="$(m "${R[$3]}")" \
				-v bc="$(m "${C[$2]}")" -v fc="$(m "${C[$3]}")" \
				'BEGIN{printf "| %s | %s | %.0f | %.0f | %.2fx | %.2f | %.2f |\n", p, pair, br, fr, fr/br, bc, fc}'
		}
		row "CF.ADD vs SET" set cfadd
		row "CF.EXISTS vs GET" get cfex
		row "CMS.INCRBY vs SET" set incr
		row "CMS.QUERY vs GET" get query
		unset R C
	done
	echo
}

memory() {
	echo "### Memory: CF.INFO Size and MEMORY USAGE against RedisBloom's sizes"
	echo
	echo "Command: PARTS=memory scripts/bench-cfcms.sh"
	echo
	echo "| value | CF.INFO Size | RedisBloom bytes | MEMORY USAGE |"
	echo "|---|---:|---:|---:|"
	start_server keel
	for c in 1000 1000000 100000000; do
		redis-cli -p "$PORT" cf.reserve "cf$c" "$c" >/dev/null
		local size mu
		size=$(redis-cli -p "$PORT" cf.info "cf$c" | sed -n 2p)
		mu=$(redis-cli -p "$PORT" memory usage "cf$c")
		awk -v c="$c" -v s="$size" -v m="$mu" 'BEGIN{
			b = 1; while (b < int(c / 2)) b *= 2;
			printf "| CF.RESERVE %d | %d | %d | %d |\n", c, s, 40 + 16 + b * 2, m}'
	done
	for wd in "2000 7" "100000 10"; do
		# shellcheck disable=SC2086
		redis-cli -p "$PORT" cms.initbydim cms $wd >/dev/null
		local mu
		mu=$(redis-cli -p "$PORT" memory usage cms)
		# shellcheck disable=SC2086
		set -- $wd
		echo "| CMS.INITBYDIM $1 $2 | - | $(($1 * $2 * 4)) counters | $mu |"
		redis-cli -p "$PORT" del cms >/dev/null
	done
	stop_server
	echo
}

for part in $PARTS; do "$part"; done

#!/usr/bin/env bash
# Top-k and t-digest benchmarks on keel-server (Debian's Redis has no
# RedisBloom, so the comparisons are within one Keel server, next to SET and
# GET, as for Bloom filters). Prints Markdown.
#
#   throughput  redis-benchmark -n N -r 100000000 -c 50, unpipelined and
#               -P 16, on a fresh server per run after
#               TOPK.RESERVE tk 50 2000 7 0.9 and TDIGEST.CREATE td: SET,
#               TOPK.ADD, TDIGEST.ADD, GET, TOPK.QUERY, TDIGEST.QUANTILE in
#               turn (so the reads find what the writes left); server pinned
#               to CPU 0, redis-benchmark to CPU 1; medians of RUNS; server
#               CPU time per request from /proc.
#   pairs       GET and TDIGEST.QUANTILE td 0.5 in alternation, PAIRS times on
#               one server, -P 16, after N TDIGEST.ADD and N SET: median req/s
#               and CPU per request of each, and the medians of the per-pair
#               ratios, which a shared machine's changing load disturbs least
#               (not in the default PARTS).
#   memory      the sizes TDIGEST.INFO reports and MEMORY USAGE for a few
#               shapes, next to RedisBloom's size formulas.
#
# Environment: N=1000000 RUNS=3 PARTS="throughput memory" KEEL_ARGS="--threads 1"
#              KEEL_SERVER=... (default target/release/keel-server, built if needed)
set -euo pipefail
N=${N:-1000000}
RUNS=${RUNS:-3}
PAIRS=${PAIRS:-9}
PARTS=${PARTS:-"throughput memory"}
KEEL_ARGS=${KEEL_ARGS:-"--threads 1"}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
if [[ -z "${KEEL_SERVER:-}" ]]; then
	KEEL_SERVER=$ROOT/target/release/keel-server
	cargo build --release --bin keel-server >&2
fi
KEEL=$KEEL_SERVER
PID=
cleanup() { [[ -n $PID ]] && kill "$PID" 2>/dev/null || true; }
trap cleanup EXIT
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"




throughput() {
	echo "### TOPK.* and TDIGEST.* next to SET / GET (one keel-server)"
	echo
	echo "Command: N=$N RUNS=$RUNS KEEL_ARGS=\"$KEEL_ARGS\" PARTS=throughput scripts/bench-topktd.sh"
	echo
	echo "| -P | pair | baseline req/s | sketch req/s | ratio | baseline us/req | sketch us/req |"
	echo "|---:|---|---:|---:|---:|---:|---:|"
	local names=(SET TOPK.ADD TDIGEST.ADD GET TOPK.QUERY TDIGEST.QUANTILE)
	for p in 1 16; do
		declare -A R=() C=()
		for _ in $(seq "$RUNS"); do
			start_server keel
			redis-cli -p "$PORT" topk.reserve tk 50 2000 7 0.9 >/dev/null
			redis-cli -p "$PORT" tdigest.create td >/dev/null
			local a c i=0
			for args in "SET key:__rand_int__ xxx" "TOPK.ADD tk __rand_int__" "TDIGEST.ADD td __rand_int__" \
				"GET key:__rand_int__" "TOPK.QUERY tk __rand_int__" "TDIGEST.QUANTILE td 0.5"; do
				# shellcheck disable=SC2086
				read -r a c < <(rb_test "$p" -r 100000000 $args)
				R[${names[$i]}]+="$a "
				C[${names[$i]}]+="$c "
				i=$((i + 1))
			done
			stop_server
		done
		m() { printf '%s\n' $1 | median; }
		row() {
			awk -v p="$p" -v pair="$2 vs $1" -v br="$(m "${R[$1]}")" -v fr="$(m "${R[$2]}")" \
				-v bc="$(m "${C[$1]}")" -v fc="$(m "${C[$2]}")" \
				'BEGIN{printf "| %s | %s | %.0f | %.0f | %.2fx | %.2f | %.2f |\n", p, pair, br, fr, fr/br, bc, fc}'
		}
		row SET TOPK.ADD
		row SET TDIGEST.ADD
		row GET TOPK.QUERY
		row GET TDIGEST.QUANTILE
		unset R C
	done
	echo
}

pairs() {
	echo "### TDIGEST.QUANTILE and GET in alternation (one keel-server, -P 16)"
	echo
	echo "Command: N=$N PAIRS=$PAIRS KEEL_ARGS=\"$KEEL_ARGS\" PARTS=pairs scripts/bench-topktd.sh"
	echo
	echo "| GET req/s | QUANTILE req/s | req/s ratio | GET us/req | QUANTILE us/req | CPU ratio |"
	echo "|---:|---:|---:|---:|---:|---:|"
	start_server keel
	redis-cli -p "$PORT" tdigest.create td >/dev/null
	rb_test 16 -r 100000000 TDIGEST.ADD td __rand_int__ >/dev/null
	rb_test 16 -r 100000000 SET key:__rand_int__ xxx >/dev/null
	local a c g gc rr=() cr=() G=() Q=() GC=() QC=()
	for _ in $(seq "$PAIRS"); do
		read -r g gc < <(rb_test 16 -r 100000000 GET key:__rand_int__)
		read -r a c < <(rb_test 16 -r 100000000 TDIGEST.QUANTILE td 0.5)
		G+=("$g") GC+=("$gc") Q+=("$a") QC+=("$c")
		rr+=("$(awk -v a="$a" -v b="$g" 'BEGIN{print a / b}')")
		cr+=("$(awk -v a="$c" -v b="$gc" 'BEGIN{print (b > 0 ? a / b : 0)}')")
	done
	stop_server
	med() { printf '%s\n' "$@" | median; }
	awk -v g="$(med "${G[@]}")" -v q="$(med "${Q[@]}")" -v rr="$(med "${rr[@]}")" \
		-v gc="$(med "${GC[@]}")" -v qc="$(med "${QC[@]}")" -v cr="$(med "${cr[@]}")" \
		'BEGIN{printf "| %.0f | %.0f | %.2fx | %.2f | %.2f | %.2fx |\n", g, q, rr, gc, qc, cr}'
	echo
}

memory() {
	echo "### Sizes against RedisBloom's"
	echo
	echo "RedisBloom reports a top-k as 2088 + width*depth*8 + k*24 bytes and a t-digest as"
	echo "8 + 16 * (6*compression + 10) bytes (TDIGEST.INFO \"Memory usage\")."
	echo
	echo "| value | RedisBloom bytes | TDIGEST.INFO Memory usage | Keel MEMORY USAGE |"
	echo "|---|---:|---:|---:|"
	start_server keel
	for shape in "10 8 7" "50 2000 7" "100 10000 10"; do
		read -r k w d <<<"$shape"
		redis-cli -p "$PORT" topk.reserve "tk:$k" "$k" "$w" "$d" 0.9 >/dev/null
		echo "| TOPK.RESERVE k=$k width=$w depth=$d | $((2088 + w * d * 8 + k * 24)) | - | $(redis-cli -p "$PORT" memory usage "tk:$k") |"
	done
	for comp in 100 500 1000; do
		redis-cli -p "$PORT" tdigest.create "td:$comp" compression "$comp" >/dev/null
		# shellcheck disable=SC2046
		redis-cli -p "$PORT" tdigest.add "td:$comp" $(seq 1 1000) >/dev/null
		local mu
		mu=$(redis-cli -p "$PORT" tdigest.info "td:$comp" | awk 'f{print; exit} /Memory usage/{f=1}')
		echo "| TDIGEST compression $comp, 1000 values | $((8 + 16 * (6 * comp + 10))) | $mu | $(redis-cli -p "$PORT" memory usage "td:$comp") |"
	done
	stop_server
	echo
}

for part in $PARTS; do "$part"; done

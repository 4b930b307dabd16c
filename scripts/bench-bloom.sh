#!/usr/bin/env bash
# Bloom filter benchmarks on keel-server (Debian's Redis has no RedisBloom, so
# the comparisons are within one Keel server, as the issue asks). Prints
# Markdown. Parts (PARTS="throughput memory layout dedup" by default):
#
#   throughput  redis-benchmark -n N -r 100000000 -c 50 BF.ADD/BF.EXISTS test
#               __rand_int__ after BF.RESERVE test 0.0001 10000000, next to
#               SET/GET on the same server (SET, BF.ADD, GET, BF.EXISTS in
#               turn), unpipelined and -P 16; server pinned to CPU 0,
#               redis-benchmark to CPU 1; medians of RUNS; server CPU time
#               per request from /proc.
#   memory      BF.RESERVE test 0.0001 C for C in 10M 30M 60M, then C inserts
#               (BF.MADD of 1000 random items, keel-bench): BF.INFO Size,
#               used_memory growth and RSS growth.
#   layout      a 60M filter at 1e-4 in each layout (default, LAYOUT BLOCKED):
#               server CPU ns per item of BF.MADD and BF.MEXISTS with 1000
#               items per call, 60M inserts.
#   dedup       scenarios/bloom-dedup.toml (seed 000) with 20, 150 and 300
#               workers each for inserts and checks (WARMUP, DURATION).
#
# Environment: N=1000000 RUNS=3 PARTS=... KEEL_ARGS="--threads 1"
#              LAYOUT_ITEMS=60000000 WARMUP=10s DURATION=20s
set -euo pipefail
N=${N:-1000000}
RUNS=${RUNS:-3}
PARTS=${PARTS:-"throughput memory layout dedup"}
KEEL_ARGS=${KEEL_ARGS:-"--threads 1"}
LAYOUT_ITEMS=${LAYOUT_ITEMS:-60000000}
WARMUP=${WARMUP:-10s}
DURATION=${DURATION:-20s}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
cargo build --release --bin keel-server --bin keel-bench >&2
KEEL=$ROOT/target/release/keel-server
BENCH=$ROOT/target/release/keel-bench
WORK=$(mktemp -d)
PID=
cleanup() {
	[[ -n $PID ]] && kill "$PID" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT

# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"

# Start a pinned keel-server on a free port: sets PORT and PID.
start() {
	PORT=$(free_port)
	# shellcheck disable=SC2086
	taskset -c 0 "$KEEL" --port "$PORT" --save "" $KEEL_ARGS >/dev/null 2>&1 &
	PID=$!
	wait_up "$PORT"
}

# "BF.MADD test __rand_int__ ... " with 1000 random items.
batch_args() {
	local cmd=$1
	printf '%s test' "$cmd"
	for _ in $(seq 1000); do printf ' __rand_int__'; done
}

# One redis-benchmark test against the running server: prints "req/s us/req".
rb_test() {
	local pipeline=$1 t0 t1 rps
	shift
	t0=$(ticks "$PID")
	rps=$(taskset -c 1 redis-benchmark -p "$PORT" -c 50 -n "$N" -r 100000000 -P "$pipeline" --csv "$@" 2>/dev/null |
		tail -1 | cut -d, -f2 | tr -d '"')
	t1=$(ticks "$PID")
	echo "$rps $(awk -v d=$((t1 - t0)) -v hz="$HZ" -v n="$N" 'BEGIN{printf "%.2f", d / hz * 1e6 / n}')"
}

throughput() {
	echo "### BF.ADD / BF.EXISTS next to SET / GET (one keel-server)"
	echo
	echo "Command: N=$N RUNS=$RUNS KEEL_ARGS=\"$KEEL_ARGS\" PARTS=throughput scripts/bench-bloom.sh"
	echo
	echo "Each run: a fresh server, BF.RESERVE test 0.0001 10000000, then SET, BF.ADD, GET, BF.EXISTS in"
	echo "that order (so GET and BF.EXISTS find what the writes left); medians of $RUNS runs."
	echo
	echo "| -P | pair | baseline req/s | bloom req/s | ratio | baseline us/req | bloom us/req |"
	echo "|---:|---|---:|---:|---:|---:|---:|"
	for p in 1 16; do
		local set_r=() set_c=() add_r=() add_c=() get_r=() get_c=() ex_r=() ex_c=() a c
		for _ in $(seq "$RUNS"); do
			start
			redis-cli -p "$PORT" bf.reserve test 0.0001 10000000 >/dev/null
			read -r a c < <(rb_test "$p" SET key:__rand_int__ xxx); set_r+=("$a"); set_c+=("$c")
			read -r a c < <(rb_test "$p" BF.ADD test __rand_int__); add_r+=("$a"); add_c+=("$c")
			read -r a c < <(rb_test "$p" GET key:__rand_int__); get_r+=("$a"); get_c+=("$c")
			read -r a c < <(rb_test "$p" BF.EXISTS test __rand_int__); ex_r+=("$a"); ex_c+=("$c")
			stop_server
		done
		row() {
			awk -v p="$p" -v pair="$1" -v br="$2" -v fr="$3" -v bc="$4" -v fc="$5" \
				'BEGIN{printf "| %s | %s | %.0f | %.0f | %.2fx | %.2f | %.2f |\n", p, pair, br, fr, fr/br, bc, fc}'
		}
		m() { printf '%s\n' "$@" | median; }
		row "BF.ADD vs SET" "$(m "${set_r[@]}")" "$(m "${add_r[@]}")" "$(m "${set_c[@]}")" "$(m "${add_c[@]}")"
		row "BF.EXISTS vs GET" "$(m "${get_r[@]}")" "$(m "${ex_r[@]}")" "$(m "${get_c[@]}")" "$(m "${ex_c[@]}")"
	done
	echo
}

# Fill the filter "test" with COUNT random items, 1000 per BF.MADD, 8
# pipelined calls per connection; prints server CPU ticks used.
fill() {
	local count=$1 cmd=${2:-BF.MADD} t0 t1
	t0=$(ticks "$PID")
	# shellcheck disable=SC2046
	taskset -c 1 "$BENCH" -p "$PORT" -c 4 -P 8 -n $((count / 1000)) -r 1000000000000 -q \
		$(batch_args "$cmd") >/dev/null
	t1=$(ticks "$PID")
	echo $((t1 - t0))
}

memory() {
	echo "### Filter memory at 1e-4"
	echo
	echo "Command: PARTS=memory scripts/bench-bloom.sh"
	echo
	echo "| capacity = inserts | BF.INFO Size bytes | RedisBloom bytes | used_memory growth MiB | RSS growth MiB | items counted |"
	echo "|---:|---:|---:|---:|---:|---:|"
	for c in 10000000 30000000 60000000; do
		start
		local u0 r0 size
		u0=$(used "$PORT"); r0=$(rss_kb "$PID")
		redis-cli -p "$PORT" bf.reserve test 0.0001 "$c" >/dev/null
		fill "$c" >/dev/null
		size=$(redis-cli -p "$PORT" bf.info test size)
		# RedisBloom: one link of floor(c * bpe) bits rounded up to 64, plus
		# its 32-byte chain and 64-byte link structs.
		awk -v c="$c" -v s="$size" -v u0="$u0" -v u1="$(used "$PORT")" -v r0="$r0" -v r1="$(rss_kb "$PID")" \
			-v n="$(redis-cli -p "$PORT" bf.card test)" 'BEGIN{
			bpe = -log(0.0001 * 0.5) / (0.480453013918201);
			bits = int(c * bpe); bits = int((bits + 63) / 64) * 64;
			printf "| %d | %d | %d | %.1f | %.1f | %d |\n", c, s, bits / 8 + 96, (u1-u0)/1048576, (r1-r0)/1024, n}'
		stop_server
	done
	echo
}

layout() {
	echo "### Blocked layout vs RedisBloom layout: $LAYOUT_ITEMS items at 1e-4"
	echo
	echo "Command: LAYOUT_ITEMS=$LAYOUT_ITEMS PARTS=layout scripts/bench-bloom.sh"
	echo
	echo "| layout | BF.INFO Size MiB | BF.MADD server ns/item | BF.MEXISTS server ns/item | false positives in 1M unseen |"
	echo "|---|---:|---:|---:|---:|"
	for layout in default blocked; do
		start
		if [[ $layout == blocked ]]; then
			redis-cli -p "$PORT" bf.reserve test 0.0001 "$LAYOUT_ITEMS" layout blocked >/dev/null
		else
			redis-cli -p "$PORT" bf.reserve test 0.0001 "$LAYOUT_ITEMS" >/dev/null
		fi
		local add_ticks exists_ticks size fp
		add_ticks=$(fill "$LAYOUT_ITEMS")
		exists_ticks=$(fill "$LAYOUT_ITEMS" BF.MEXISTS)
		size=$(redis-cli -p "$PORT" bf.info test size)
		# Unseen items: keel-bench draws 12-digit numbers; these have 13.
		fp=$(python3 - "$PORT" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
f = s.makefile("rb")
def cmd(*a):
    out = [b"*%d\r\n" % len(a)]
    for x in a:
        x = str(x).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(x), x))
    return b"".join(out)
hits = 0
for base in range(0, 1000000, 1000):
    s.sendall(cmd("BF.MEXISTS", "test", *[f"u{1000000000000 + base + i}" for i in range(1000)]))
    n = int(f.readline()[1:])
    for _ in range(n):
        hits += int(f.readline()[1:])
print(hits)
PY
)
		awk -v l="$layout" -v s="$size" -v a="$add_ticks" -v e="$exists_ticks" -v n="$LAYOUT_ITEMS" -v hz="$HZ" -v fp="$fp" 'BEGIN{
			printf "| %s | %.1f | %.1f | %.1f | %d |\n", l, s/1048576, a/hz*1e9/n, e/hz*1e9/n, fp}'
		stop_server
	done
	echo
}

dedup() {
	echo "### scenarios/bloom-dedup.toml at 20, 150, 300 workers (keel-server)"
	echo
	for w in 20 150 300; do
		sed -e "s/^workers = .*/workers = $w/" -e "s/^check_workers = .*/check_workers = $w/" \
			-e "s/^warmup = .*/warmup = \"$WARMUP\"/" -e "s/^duration = .*/duration = \"$DURATION\"/" \
			-e '/^\[\[target\]\]$/,/^$/d' scenarios/bloom-dedup.toml >"$WORK/dedup-$w.toml"
		start
		echo "Command: keel-bench run dedup.toml --target keel=127.0.0.1:PORT (bloom-dedup.toml with workers = check_workers = $w, warmup $WARMUP, duration $DURATION)"
		echo
		echo '```'
		taskset -c 1 "$BENCH" run "$WORK/dedup-$w.toml" --target "keel=127.0.0.1:$PORT" 2>&1
		echo '```'
		echo
		stop_server
	done
}

for part in $PARTS; do
	"$part"
done

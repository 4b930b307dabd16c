#!/usr/bin/env bash
# An 8-condition search over a 500k-id universe, the shape of seed study 003's price search,
# Keel against Debian's redis-server in the same run. Eight id sets of the seed's sizes
# (an offering ~10k ids, a group ~50k, a price spec ~250k, five characteristic values of
# half of all ids each) are loaded as sets on both servers and as Roaring bitmaps on Keel.
# redis-benchmark -c 50 then runs, one server at a time:
#   sintercard  SINTERCARD 8 s1..s8            (Redis and Keel: the intersection's size)
#   sinter      SINTER s1..s8                  (Redis and Keel: the ids)
#   rcard       R.INTERSECT r1..r8 CARD        (Keel: the same size from bitmaps)
#   rids        R.INTERSECT r1..r8             (Keel: the same ids from bitmaps)
#   rfirst      R.INTERSECT r1..r8 LIMIT 1     (Keel: the first match, as a lookup needs)
# and MEMORY USAGE of the eight keys. Prints Markdown with requests/s and server CPU per
# request; Keel/Redis ratios compare each Keel test with Redis's SINTER or SINTERCARD.
#
# Environment: N=20000 requests per test, CLIENTS=50, UNIVERSE=500000,
#   KEEL_SERVER=... (default target/release/keel-server, built if needed), KEEL_ARGS=...

set -euo pipefail
N=${N:-20000}
CLIENTS=${CLIENTS:-50}
UNIVERSE=${UNIVERSE:-500000}
KEEL_ARGS=${KEEL_ARGS:-}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PY:-$ROOT/.venv/bin/python}

die() { echo "bench-roaring: $*" >&2; exit 1; }
for tool in redis-server redis-benchmark redis-cli awk; do
	command -v "$tool" >/dev/null || die "$tool not found (make deps installs it)"
done
[[ -x $PY ]] || die "no $PY (make deps creates it)"
if [[ -z "${KEEL_SERVER:-}" ]]; then
	KEEL_SERVER=$ROOT/target/release/keel-server
	(cd "$ROOT" && cargo build --release --bin keel-server >&2) || die "release build failed"
fi
PID=""
cleanup() { [[ -n "$PID" ]] && kill -9 "$PID" 2>/dev/null; true; }
trap cleanup EXIT

# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"
# python3 may be missing where $PY is not.
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# load PORT BITMAPS(0|1): the same eight id sets on every run (fixed seed).
load() {
	"$PY" - "$1" "$2" "$UNIVERSE" <<'PYEOF'
import random, sys, redis
port, bitmaps, universe = int(sys.argv[1]), sys.argv[2] == "1", int(sys.argv[3])
r = redis.Redis(port=port)
rng = random.Random(3)
fractions = [10_000 / 500_000, 50_000 / 500_000, 1 / 2, 1 / 2, 1 / 2, 1 / 2, 1 / 2, 1 / 2]
for i, f in enumerate(fractions, 1):
    ids = sorted(rng.sample(range(universe), int(universe * f)))
    p = r.pipeline(transaction=False)
    for at in range(0, len(ids), 10_000):
        chunk = ids[at:at + 10_000]
        p.sadd(f"s{i}", *chunk)
        if bitmaps:
            p.execute_command("R.APPENDINTARRAY", f"r{i}", *chunk)
    p.execute()
card = r.sintercard(8, [f"s{i}" for i in range(1, 9)])
mem_s = sum(r.memory_usage(f"s{i}") for i in range(1, 9))
mem_r = sum(r.memory_usage(f"r{i}") for i in range(1, 9)) if bitmaps else 0
if bitmaps:
    got = r.execute_command("R.INTERSECT", *[f"r{i}" for i in range(1, 9)], "CARD")
    assert got == card, (got, card)
print(card, mem_s, mem_r)
PYEOF
}

# run NAME TEST... -> lines "test rps cpu_us_per_req", then "mem card sets_bytes bitmap_bytes"
run() {
	local name=$1; shift
	local port; port=$(free_port)
	if [[ $name == redis ]]; then
		redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no >/dev/null 2>&1 &
	else
		"$KEEL_SERVER" --port "$port" --bind 127.0.0.1 --save '' --appendonly no $KEEL_ARGS >/dev/null 2>&1 &
	fi
	PID=$!
	wait_up "$port" 200
	local mem; mem=$(load "$port" "$([[ $name == keel ]] && echo 1 || echo 0)")
	local s=(s1 s2 s3 s4 s5 s6 s7 s8) r=(r1 r2 r3 r4 r5 r6 r7 r8)
	for test in "$@"; do
		local cmd
		case $test in
			sintercard) cmd=(sintercard 8 "${s[@]}") ;;
			sinter) cmd=(sinter "${s[@]}") ;;
			rcard) cmd=(r.intersect "${r[@]}" card) ;;
			rids) cmd=(r.intersect "${r[@]}") ;;
			rfirst) cmd=(r.intersect "${r[@]}" limit 1) ;;
		esac
		local before after out
		before=$(ticks "$PID")
		out=$(redis-benchmark -p "$port" -c "$CLIENTS" -n "$N" --csv "${cmd[@]}" 2>/dev/null | tail -1)
		after=$(ticks "$PID")
		echo "$out" | tr -d '"' | awk -F, -v t="$test" -v c=$((after - before)) -v k="$HZ" -v n="$N" \
			'{ printf "%s %s %.1f\n", t, $(NF - 6), c / k * 1e6 / n }'
	done
	echo "mem $mem"
	kill -9 "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; PID=""
}

declare -A RPS CPU
while read -r t a b c; do
	if [[ $t == mem ]]; then REDIS_CARD=$a; REDIS_MEM=$b; else RPS[redis,$t]=$a; CPU[redis,$t]=$b; fi
done < <(run redis sintercard sinter)
while read -r t a b c; do
	if [[ $t == mem ]]; then KEEL_CARD=$a; KEEL_SETS=$b; KEEL_BITMAPS=$c; else RPS[keel,$t]=$a; CPU[keel,$t]=$b; fi
done < <(run keel sintercard sinter rcard rids rfirst)
[[ $REDIS_CARD == "$KEEL_CARD" ]] || die "the servers disagree on the intersection: $REDIS_CARD vs $KEEL_CARD"

echo "Intersection: $KEEL_CARD ids of $UNIVERSE. $(nproc) CPUs; redis-server 1 thread, keel-server ${KEEL_ARGS:-default threads}; redis-benchmark -c $CLIENTS -n $N."
echo
echo "| Keel test | Keel req/s | Keel CPU µs/req | Redis test | Redis req/s | Redis CPU µs/req | Keel/Redis req/s | Redis/Keel CPU |"
echo "|---|---:|---:|---|---:|---:|---:|---:|"
for pair in "sintercard sintercard" "sinter sinter" "rcard sintercard" "rids sinter" "rfirst sinter"; do
	read -r k r <<<"$pair"
	awk -v k="$k" -v r="$r" -v kr="${RPS[keel,$k]}" -v kc="${CPU[keel,$k]}" -v rr="${RPS[redis,$r]}" -v rc="${CPU[redis,$r]}" \
		'BEGIN { printf "| %s | %s | %s | %s | %s | %s | %.2fx | %.2fx |\n", k, kr, kc, r, rr, rc, kr / rr, rc / kc }'
done
echo
echo "MEMORY USAGE of the eight keys: Redis sets $REDIS_MEM bytes; Keel sets $KEEL_SETS bytes, Roaring bitmaps $KEEL_BITMAPS bytes."

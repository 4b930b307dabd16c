#!/usr/bin/env bash
# Reads of one hot key on many server threads: does the rate hold up as
# threads are added, or do the readers queue behind one another?
#
# For each thread count T in $THREADS a fresh keel-server --threads T is
# started on a free 127.0.0.1 port (--save '' --appendonly no) and given
#   hot   a 100-byte string
#   idx   a bitmap index of $ENTITIES entities, each with a colour (of 8),
#         a size (of 16) and a shape (of 4)
# then two redis-benchmark loads run against it, one after the other:
#   GET hot
#   IDX.SEARCH idx colour c3 size s7      (about $ENTITIES/128 ids back)
# with $CLIENTS connections, -P $PIPELINE and min(4, nproc) client threads,
# $N requests each. One line per point:
#   req/s       requests completed per second
#   x1          that rate over the rate at T=1 for the same command
#   srv-us/req  CPU time of the server process (all threads, user + system
#               from /proc/PID/stat) per request, in microseconds
# A shard lock held exclusively by readers shows as x1 falling below 1.00 as
# T grows; shared readers keep it at 1.00 or above, up to what the machine's
# cores allow (the client shares them here).
#
# Usage: scripts/bench-hotkey.sh [KEEL=path] [THREADS="1 2 4"] [N=200000]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
KEEL=${KEEL:-$ROOT/target/release/keel-server}
THREADS=${THREADS:-"1 2 4"}
N=${N:-200000}
CLIENTS=${CLIENTS:-50}
PIPELINE=${PIPELINE:-16}
ENTITIES=${ENTITIES:-20000}
# shellcheck source=bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"
CLIENT_THREADS=$(($(nproc) < 4 ? $(nproc) : 4))

load_data() {
	redis-cli -p "$PORT" set hot "$(head -c 100 /dev/zero | tr '\0' x)" >/dev/null
	redis-cli -p "$PORT" idx.create idx >/dev/null
	python3 - "$ENTITIES" <<'EOF' | redis-cli -p "$PORT" --pipe >/dev/null
import sys
def cmd(*a):
    out = [f"*{len(a)}\r\n"]
    for x in a:
        out.append(f"${len(x.encode())}\r\n{x}\r\n")
    return "".join(out)
for i in range(int(sys.argv[1])):
    sys.stdout.write(cmd("IDX.ADD", "idx", str(i), "colour", f"c{i % 8}",
                         "size", f"s{(i // 8) % 16}", "shape", f"p{(i // 128) % 4}"))
EOF
}

run_load() {
	local t0 t1 rps
	t0=$(ticks "$PID")
	rps=$(redis-benchmark -p "$PORT" -c "$CLIENTS" -n "$N" -P "$PIPELINE" --threads "$CLIENT_THREADS" \
		--csv "$@" 2>/dev/null | tail -1 | cut -d, -f2 | tr -d '"')
	t1=$(ticks "$PID")
	echo "$rps $(awk -v d=$((t1 - t0)) -v hz="$HZ" -v n="$N" 'BEGIN{printf "%.2f", d / hz * 1e6 / n}')"
}

declare -A BASE
printf '%-12s %3s %10s %6s %11s\n' command T req/s x1 srv-us/req
for t in $THREADS; do
	PORT=$(free_port)
	"$KEEL" --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --threads "$t" >/dev/null 2>&1 &
	PID=$!
	wait_up "$PORT"
	load_data
	for name in GET IDX.SEARCH; do
		if [[ $name == GET ]]; then
			read -r rps us < <(run_load GET hot)
		else
			read -r rps us < <(run_load IDX.SEARCH idx colour c3 size s7)
		fi
		BASE[$name]=${BASE[$name]:-$rps}
		printf '%-12s %3s %10.0f %6.2f %11s\n' "$name" "$t" "$rps" \
			"$(awk -v a="$rps" -v b="${BASE[$name]}" 'BEGIN{print a / b}')" "$us"
	done
	stop_server
done

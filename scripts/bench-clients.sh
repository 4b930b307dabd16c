#!/usr/bin/env bash
# Seed 004's workload (80% GET / 20% SET, 20-byte keys, 100-byte values) through
# keel-client, redis-rs (MultiplexedConnection), fred (auto-pipelining) and a
# naive one-request-per-round-trip client, against Debian's redis-server and
# keel-server started side by side on free ports.
#
#   SECONDS_PER_POINT=3 TASKS=1,16,256,1000 scripts/bench-clients.sh
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SECS=${SECONDS_PER_POINT:-3}
TASKS=${TASKS:-1,16,256,1000}
cd "$ROOT"
cargo build --release --bin keel-server --bin client-bench >&2
# shellcheck source=scripts/bench-lib.sh
source "$ROOT/scripts/bench-lib.sh"
KP=$(free_port); RP=$(free_port)
target/release/keel-server --port "$KP" --save '' >/dev/null 2>&1 & KEEL=$!
redis-server --port "$RP" --save '' --appendonly no >/dev/null 2>&1 & REDIS=$!
trap 'kill $KEEL $REDIS 2>/dev/null || true' EXIT
for p in "$KP" "$RP"; do
	wait_up "$p"
done
echo "Machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); client and server share it."
echo "Command: SECONDS_PER_POINT=$SECS TASKS=$TASKS scripts/bench-clients.sh"
for server in redis keel; do
	port=$RP; [[ $server == keel ]] && port=$KP
	echo
	echo "### Against $server-server"
	echo
	target/release/client-bench "redis://127.0.0.1:$port" --seconds "$SECS" --tasks "$TASKS"
done

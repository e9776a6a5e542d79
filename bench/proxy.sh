#!/bin/sh
# Throughput and per-request latency through cordon's allow-list proxy vs a direct loopback
# connection (issue 19). Loopback only: a Python server on 127.0.0.1 serves a 64 MiB body,
# and CORDON_TEST_RESOLVE (test-only) maps bench.test to it.
#   usage: bench/proxy.sh [path/to/cordon]      (needs curl, python3, root or user namespaces)
set -eu
CORDON=${1:-target/release/cordon}
DIR=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null; rm -rf "$DIR"' EXIT
head -c 67108864 /dev/zero > "$DIR/big"
echo small > "$DIR/small"
cd "$DIR"
python3 -m http.server 0 --bind 127.0.0.1 > "$DIR/server.out" 2>&1 &
SERVER=$!
while ! grep -q port "$DIR/server.out" 2>/dev/null; do sleep 0.1; done
PORT=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$DIR/server.out" | head -1)
export CORDON_TEST_RESOLVE="bench.test=127.0.0.1:$PORT"
N=200
SCRIPT='
t0=$(date +%s.%N); curl -sS -o /dev/null -w "%{speed_download}" "$1/big" > speed
t1=$(date +%s.%N)
i=0; while [ $i -lt '$N' ]; do curl -sS -o /dev/null "$1/small"; i=$((i+1)); done
t2=$(date +%s.%N)
echo "$(cat speed) $t1 $t2 $t0"'
report() {
  set -- $1
  awk -v s="$1" -v t0="$4" -v t1="$2" -v t2="$3" -v n=$N -v what="$WHAT" \
    'BEGIN { printf "%-28s %8.1f MiB/s   %6.2f ms per new connection+request\n", what, s/1048576, (t2-t1)*1000/n }'
}
WHAT="direct (no sandbox)"
report "$(sh -c "$SCRIPT" sh "http://127.0.0.1:$PORT")"
WHAT="direct (sandbox, --network)"
report "$("$CORDON" exec -a never --network -C "$DIR" -- sh -c "$SCRIPT" sh "http://127.0.0.1:$PORT")"
WHAT="via proxy (--allow-domain)"
report "$("$CORDON" exec -a never --allow-domain bench.test -C "$DIR" -- sh -c "$SCRIPT" sh "http://bench.test")"

#!/bin/sh
# SIGTERM-to-exit latency of a `cordon exec` whose start is stalled before the command exists:
# the workspace's `.git` is a FUSE mount that never answers, so the sandbox's pid 1 waits in
# the kernel (a wait only SIGKILL ends) while it plans the mount view. Target: well under 1 s.
#
# Usage (root, /dev/fuse, python3): bench/stalled_start.sh [CORDON] [RUNS]
set -eu
cordon=$(realpath "${1:-target/release/cordon}")
runs=${2:-10}
base=$(mktemp -d /var/tmp/cordon-bench-stall.XXXXXX)
cleanup() {
    [ -n "${fuse:-}" ] && kill "$fuse" 2>/dev/null
    umount -l "$base/ws/.git" 2>/dev/null || true
    rm -rf "$base"
}
trap cleanup EXIT
mkdir -p "$base/ws/.git"
python3 - "$base/ws/.git" <<'PY' &
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open("/dev/fuse", os.O_RDWR)
opts = f"fd={fd},rootmode=40000,user_id=0,group_id=0".encode()
if libc.mount(b"cordon-bench-silent", sys.argv[1].encode(), b"fuse", 0, opts) != 0:
    sys.exit("cannot mount FUSE: " + os.strerror(ctypes.get_errno()))
time.sleep(3600)
PY
fuse=$!
sleep 0.5
export HOME="$base" TMPDIR="$base" CORDON_HOME="$base/cordon-home"
cd "$base/ws"
i=0
while [ "$i" -lt "$runs" ]; do
    "$cordon" exec -s workspace-write -- true </dev/null >/dev/null 2>&1 &
    pid=$!
    sleep 0.3
    start=$(date +%s%N)
    kill -TERM "$pid"
    wait "$pid" || true
    end=$(date +%s%N)
    echo "run $i: $(( (end - start) / 1000 )) us"
    i=$((i + 1))
done

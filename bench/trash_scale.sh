#!/usr/bin/env bash
# What the trash costs a launch as it grows, and how fast runs empty it.
#
# A transactional run that keeps nothing leaves its directory in $CORDON_HOME/trash; the next
# runs remove what is there while their own command runs (`cordon exec` on a thread, the
# helper's own transaction in its applier). What a trash entry holds is what a command wrote
# to a `/tmp` layer of its own, so its size is the command's to choose. For each size (files
# in one flat directory of one trash entry: 1,000 — a build's scratch files — then 10 and 100
# times that), this plants the entry, then times RUNS launches of `true` through `cordon exec`
# and through `cordon sandbox` (wall time, ms, each with the files still left after it), and
# one `cordon exec -- sleep 1` (files removed while it ran).
#
# Then a tree deeper than removal descends at once (128 levels): one chain of 200 levels (just
# past it), 2,000 and 20,000. Each emptying removes the top of it and moves what lies deeper
# into a new trash entry; this times RUNS launches of `true` through `cordon exec` (the
# directories still in the trash after each), then counts the `cordon exec -- sleep 1` runs
# that empty it (at most 300).
#
#   bash bench/trash_scale.sh [CORDON] [RUNS]
set -euo pipefail
cordon=$(realpath "${1:-target/release/cordon}")
runs=${2:-5}
base=$(mktemp -d /var/tmp/cordon-bench-trash.XXXXXX)
trap 'rm -rf "$base"' EXIT
export HOME="$base/home" CORDON_HOME="$base/home/.cordon" TMPDIR="$base/tmp"
mkdir -p "$HOME" "$TMPDIR" "$base/ws"
ms() { echo $(( ($2 - $1) / 1000000 )); }
left() { find "$CORDON_HOME/trash" -type f 2>/dev/null | wc -l; }
plant() {
  rm -rf "$CORDON_HOME/trash"
  mkdir -p "$CORDON_HOME/trash/1000000000000000000-1-planted/flat"
  python3 -c "
import os, sys
d = sys.argv[1]
for i in range(int(sys.argv[2])):
    os.close(os.open(f'{d}/{i:07d}', os.O_CREAT | os.O_WRONLY, 0o600))
" "$CORDON_HOME/trash/1000000000000000000-1-planted/flat" "$1"
}
# One run first, so that CORDON_HOME's directories exist.
"$cordon" exec -a never -s workspace-write -C "$base/ws" -- true
echo "$(uname -r); $CORDON_HOME on $(df --output=fstype "$base" | tail -1)"
for size in 1000 10000 100000; do
  for launcher in "exec -a never -s workspace-write" "sandbox linux -s workspace-write --writes transaction"; do
    plant "$size"
    line="$size files, cordon ${launcher%% *}:"
    for _ in $(seq "$runs"); do
      start=$(date +%s%N)
      # shellcheck disable=SC2086
      "$cordon" $launcher -C "$base/ws" -- true
      line+=" $(ms "$start" "$(date +%s%N)") ms ($(left) left)"
    done
    echo "$line"
  done
  plant "$size"
  before=$(left)
  "$cordon" exec -a never -s workspace-write -C "$base/ws" -- sleep 1
  echo "$size files, cordon exec -- sleep 1: $((before - $(left))) removed while it ran"
done
dirs() { find "$CORDON_HOME/trash" -type d 2>/dev/null | wc -l; }
plant_deep() {
  rm -rf "$CORDON_HOME/trash"
  mkdir -p "$CORDON_HOME/trash"
  python3 -c "
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.mkdir('1000000000000000000-1-planted', dir_fd=fd)
for name in ['1000000000000000000-1-planted'] + ['d'] * (int(sys.argv[2]) - 1):
    inner = os.open(name, os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = inner
    os.mkdir('d', dir_fd=fd)
" "$CORDON_HOME/trash" "$1"
}
for levels in 200 2000 20000; do
  plant_deep "$levels"
  line="$levels levels, cordon exec -- true:"
  for _ in $(seq "$runs"); do
    start=$(date +%s%N)
    "$cordon" exec -a never -s workspace-write -C "$base/ws" -- true
    line+=" $(ms "$start" "$(date +%s%N)") ms ($(dirs) dirs)"
  done
  echo "$line"
  emptied=
  for n in $(seq 300); do
    "$cordon" exec -a never -s workspace-write -C "$base/ws" -- sleep 1
    # A run's own directory (about a dozen) is what is left once the tree is gone.
    if [ "$(dirs)" -lt 50 ]; then emptied=$n; break; fi
  done
  echo "$levels levels, cordon exec -- sleep 1 runs until emptied: ${emptied:-more than 300 ($(dirs) dirs left)}"
done

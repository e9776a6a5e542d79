#!/usr/bin/env bash
# What a preset run's upkeep of its workspace's cache costs as the cache grows, and what undoing
# a command's damage costs as the damage grows.
#
#   bash bench/preset_upkeep.sh [CORDON] [RUNS]
#
# 1. `cordon exec -a never --preset npm -- /bin/true` with the workspace's npm cache holding
#    0, 1,000, 10,000 and 100,000 files (hyperfine, interleaved): the upkeep writes and checks
#    a fixed few names, so the launch should not grow with the cache.
# 2. A command turns the cache's CACHEDIR.TAG into a tree of 1,000, 10,000 and 100,000 files
#    (SCALE=big adds 1,000,000) in directories of mode 0500; the next run's time (one run each)
#    is the removal's, bounded by the upkeep's time (what is left waits in the trash, and the
#    runs after it remove the rest: their times are printed too).
# Scratch directories under /var/tmp, removed at the end. Needs hyperfine.
set -euo pipefail
CORDON=$(realpath "${1:-target/release/cordon}")
RUNS=${2:-20}
command -v hyperfine >/dev/null || { echo "needs hyperfine" >&2; exit 2; }
# Outside /tmp, a writable root of every run, where $CORDON_HOME may not lie with a preset.
scratch=$(mktemp -d -p /var/tmp)
trap 'chmod -R u+rwx "$scratch" 2>/dev/null; rm -rf "$scratch"' EXIT
export HOME="$scratch/home" CORDON_HOME="$scratch/home/.cordon"
mkdir -p "$HOME"

cache_of() { # the npm cache of workspace $1
  local ws; ws=$(realpath "$1")
  for dir in "$CORDON_HOME"/workspaces/*; do
    [ "$(cat "$dir/workspace" 2>/dev/null)" = "$ws" ] && { echo "$dir/cache/npm"; return; }
  done
}

fill() { # N files in directories of 1,000
  local n=$1 dir=$2 i
  for ((i = 0; i < n; i++)); do
    ((i % 1000 == 0)) && mkdir -p "$dir/d$((i / 1000))"
    : > "$dir/d$((i / 1000))/f$i"
  done
}

commands=()
for n in 0 1000 10000 100000; do
  ws="$scratch/ws-$n"
  mkdir -p "$ws"
  (cd "$ws" && "$CORDON" exec -a never --preset npm -- /bin/true)
  fill "$n" "$(cache_of "$ws")/_cacache"
  commands+=(-n "cache of $n files" "$CORDON exec -C $ws -a never --preset npm -- /bin/true")
done
hyperfine -N --warmup 2 --runs "$RUNS" "${commands[@]}"

echo
echo "undoing a command's damage at CACHEDIR.TAG (one run each):"
sizes=(1000 10000 100000)
[ "${SCALE:-}" = big ] && sizes+=(1000000)
for n in "${sizes[@]}"; do
  ws="$scratch/damage-$n"
  mkdir -p "$ws"
  (cd "$ws" && "$CORDON" exec -a never --preset npm -- /bin/true)
  tag="$(cache_of "$ws")/CACHEDIR.TAG"
  rm -f "$tag"
  mkdir -p "$tag"
  fill "$n" "$tag"
  chmod 500 "$tag"/d*
  start=$(date +%s%N)
  (cd "$ws" && "$CORDON" exec -a never --preset npm -- /bin/true)
  end=$(date +%s%N)
  [ -f "$tag" ] || { echo "the tag was not restored" >&2; exit 1; }
  printf '  %7d files: %6.1f ms' "$n" "$(( (end - start) / 10000 ))e-2"
  trash="$(dirname "$(dirname "$(dirname "$tag")")")/trash"
  while [ -n "$(ls -A "$trash" 2>/dev/null)" ]; do
    start=$(date +%s%N)
    (cd "$ws" && "$CORDON" exec -a never --preset npm -- /bin/true 2>/dev/null)
    end=$(date +%s%N)
    printf ', then %.1f ms' "$(( (end - start) / 10000 ))e-2"
  done
  echo
done

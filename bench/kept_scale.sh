#!/usr/bin/env bash
# The walks over what commands leave in cordon's run state, at 1,000, 10,000 and 100,000
# entries (SIZES overrides):
#  - a launch that prunes the workspace's /tmp layer (once an hour: the stamp is removed to make
#    it due) holding N entries: each is listed and looked at. (Old entries cannot be made here:
#    age is judged by the change time too, which no program sets back; their removal is
#    remove_tree's, timed by bench/preset_upkeep.sh, at most a second a run.)
#  - `cordon held RUN --take PATH` of a held directory of N files (a copy, user-initiated).
#
#   bash bench/kept_scale.sh [CORDON]
set -euo pipefail
cordon=$(realpath "${1:-target/release/cordon}")
sizes=(${SIZES:-1000 10000 100000})
base=$(mktemp -d /var/tmp/cordon-bench-kept.XXXXXX)
trap 'rm -rf "$base"' EXIT
export HOME="$base/home" CORDON_HOME="$base/home/.cordon" TMPDIR=
mkdir -p "$HOME" "$base/ws"
git -C "$base/ws" init -q
ms() { python3 -c 'import sys,time; print(f"{(time.time()-float(sys.argv[1]))*1000:9.1f} ms")' "$1"; }
run() { "$cordon" exec -a never -C "$base/ws" -- "$@" >/dev/null 2>&1 || true; }
run true
upper=$(ls -d "$CORDON_HOME"/temporary/*/root%2Ftmp/upper)
stamp="$(dirname "$(dirname "$upper")")/.pruned"
echo "## a launch that prunes the workspace's /tmp layer"
for n in "${sizes[@]}"; do
  python3 -c 'import os, sys
for i in range(int(sys.argv[2])): open(os.path.join(sys.argv[1], f"e{i}"), "w").close()' "$upper" "$n"
  rm -f "$stamp"
  start=$(date +%s.%N); run true; took=$(ms "$start")
  start=$(date +%s.%N); run true; again=$(ms "$start")
  printf '%7d entries: launch that prunes %s; next launch (not due) %s\n' "$n" "$took" "$again"
  find "$upper" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
done
echo
echo "## cordon held RUN --take of a held directory of N files"
for n in "${sizes[@]}"; do
  run python3 -c "import os
os.makedirs('.git/hooks/many', exist_ok=True)
for i in range($n): open(f'.git/hooks/many/f{i}', 'w').write('x')"
  id=$("$cordon" held --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
  start=$(date +%s.%N)
  "$cordon" held "$id" --take "$base/ws/.git/hooks/many" >/dev/null
  printf '%7d files: take %s\n' "$n" "$(ms "$start")"
  "$cordon" held "$id" --drop >/dev/null
  rm -rf "$base/ws/.git/hooks/many"
done

#!/usr/bin/env bash
# What a run costs as the workspace grows: `cordon exec -a never -- /bin/true` with direct
# writes (a search of the workspace's repositories before the run and after it), with
# `--writes transaction` (no search: the write gate looks at the run's changes only) and as
# given (the default, `auto`: a transaction where a write layer can be made), and the bare
# helper (`codex-linux-sandbox`) with direct writes and with a transaction of its own (`--writes
# transaction`: its applier applies the run's changes before it exits), in git
# repositories holding 0, 5,000 and 50,000 directories (and 500,000 with SCALE=big: 100 times
# the everyday 5,000), interleaved by hyperfine in one run so the rows compare. Then the apply
# itself, timed: 10,000 new files, 1,000 modified files, and one modified 1 GiB file.
#
#   bash bench/workspace_scale.sh [CORDON] [RUNS]
#
# Everything lives under one directory in /var/tmp (CORDON_HOME too, so the write layers are
# on the workspace's file system and applying is renaming).
set -euo pipefail
cordon=$(realpath "${1:-target/release/cordon}")
runs=${2:-30}
command -v hyperfine >/dev/null || { echo "hyperfine is needed (apt-get install hyperfine)"; exit 3; }
base=$(mktemp -d /var/tmp/cordon-bench-scale.XXXXXX)
trap 'rm -rf "$base"' EXIT
export HOME="$base/home" CORDON_HOME="$base/cordon-home" TMPDIR="$base/tmp"
mkdir -p "$HOME" "$TMPDIR"

sizes=(0 5000 50000)
[ "${SCALE:-}" = big ] && sizes+=(500000)
# N directories, 100 per parent, three levels deep: src/mA/pB/dC.
make_tree() {
  local ws=$1 n=$2
  git init -q "$ws"
  python3 - "$ws" "$n" <<'PY'
import os, sys
ws, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    os.makedirs(os.path.join(ws, "src", f"m{i // 10000}", f"p{i // 100 % 100}", f"d{i % 100}"), exist_ok=True)
PY
}
helper="$base/codex-linux-sandbox"
ln -s "$cordon" "$helper"
policy='{"type":"workspace-write"}'
args=()
for n in "${sizes[@]}"; do
  make_tree "$base/ws-$n" "$n"
  ws="$base/ws-$n"
  args+=(--prepare true -n "direct, $n dirs" "$cordon exec -a never --writes direct -C $ws -- /bin/true")
  args+=(--prepare true -n "transaction, $n dirs" "$cordon exec -a never --writes transaction -C $ws -- /bin/true")
  args+=(--prepare true -n "default, $n dirs" "$cordon exec -a never -C $ws -- /bin/true")
  args+=(--prepare true -n "helper direct, $n dirs" "$helper --sandbox-policy-cwd $ws --sandbox-policy '$policy' -- /bin/true")
  args+=(--prepare true -n "helper transaction, $n dirs" "$helper --sandbox-policy-cwd $ws --sandbox-policy '$policy' --writes transaction -- /bin/true")
done
echo "## launch: cordon exec -a never -- /bin/true"
hyperfine -N --warmup 3 --runs "$runs" --export-markdown "$base/launch.md" "${args[@]}" >/dev/null
cat "$base/launch.md"
# What each direct run said it did not search (its protection ends there).
for n in "${sizes[@]}"; do
  said=$("$cordon" exec -a never --writes direct -C "$base/ws-$n" -- /bin/true 2>&1 >/dev/null | grep -c "not searched" || true)
  echo "direct, $n dirs: $said \"not searched\" warning(s)"
  said=$("$helper" --sandbox-policy-cwd "$base/ws-$n" --sandbox-policy "$policy" -- /bin/true 2>&1 >/dev/null | grep -c "not searched" || true)
  echo "helper direct, $n dirs: $said \"not searched\" warning(s)"
  said=$("$cordon" exec -a never --writes transaction -C "$base/ws-$n" -- /bin/true 2>&1 >/dev/null | grep -c "not searched" || true)
  echo "transaction, $n dirs: $said \"not searched\" warning(s)"
  said=$("$helper" --sandbox-policy-cwd "$base/ws-$n" --sandbox-policy "$policy" --writes transaction -- /bin/true 2>&1 >/dev/null | grep -c "not searched" || true)
  echo "helper transaction, $n dirs: $said \"not searched\" warning(s)"
done

echo
echo "## apply (one run each, wall time of the whole cordon exec; the command's own work included)"
ws="$base/ws-apply"
git init -q "$ws"
mkdir -p "$ws/mod" "$ws/big"
python3 - "$ws" <<'PY'
import os, sys
ws = sys.argv[1]
for i in range(1000):
    with open(os.path.join(ws, "mod", f"f{i}"), "w") as f:
        f.write("before\n")
PY
head -c 1073741824 /dev/zero >"$ws/big/file"
time_run() { # NAME SCRIPT
  local start end
  start=$(date +%s.%N)
  "$cordon" exec -a never "${@:3}" -C "$ws" -- sh -c "$2" >/dev/null
  end=$(date +%s.%N)
  printf '%-48s %8.3f s\n' "$1" "$(echo "$end - $start" | bc)"
}
new_files='python3 -c "import os
os.makedirs(\"new\", exist_ok=True)
for i in range(10000): open(f\"new/f{i}\", \"w\").write(\"x\")"'
modify='for f in mod/*; do echo after > "$f"; done'
append_big='echo tail >> big/file'
for mode in direct transaction; do
  rm -rf "$ws/new"
  time_run "$mode: 10,000 new files" "$new_files" --writes "$mode"
  time_run "$mode: 1,000 modified files" "$modify" --writes "$mode"
  time_run "$mode: one modified 1 GiB file" "$append_big" --writes "$mode"
done

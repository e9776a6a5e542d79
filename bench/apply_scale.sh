#!/usr/bin/env bash
# How the write gate's walks grow with what a command changes (`--writes transaction`): the
# apply walks exactly the change set, a deletion walks the deleted tree once for changes the
# host made during the run, and each changed directory looks up the repositories above it (one
# `git config` per repository, cached). Three sizes: 1,000 files (an everyday build), 10,000
# (10x) and 100,000 (100x), each as new files (100 to a directory), modified files, and one
# deleted tree; direct writes beside them. Then a tree deeper than the gate follows (256
# levels): held and named, never applied unjudged, never a failed run.
#
#   bash bench/apply_scale.sh [CORDON]
#
# Wall time of one `cordon exec` each, the command's own work included.
set -euo pipefail
cordon=$(realpath "${1:-target/release/cordon}")
base=$(mktemp -d /var/tmp/cordon-bench-apply.XXXXXX)
trap 'rm -rf "$base"' EXIT
export HOME="$base/home" CORDON_HOME="$base/cordon-home" TMPDIR="$base/tmp"
mkdir -p "$HOME" "$TMPDIR"
run() { # LABEL WORKSPACE MODE SCRIPT
  local start end
  start=$(date +%s.%N)
  "$cordon" exec -a never --writes "$3" -C "$2" -- sh -c "$4" >/dev/null 2>"$base/err" || true
  end=$(date +%s.%N)
  printf '%-44s %8.2f s  %s\n' "$1" "$(echo "$end - $start" | bc)" \
    "$(grep -o 'held back' "$base/err" | head -1)"
}
make_files='python3 -c "import os,sys
n=int(sys.argv[1]); d=sys.argv[2]
for i in range(n):
    p=os.path.join(d, f\"d{i // 100}\"); os.makedirs(p, exist_ok=True)
    open(os.path.join(p, f\"f{i}\"), \"w\").write(\"x\")" '
printf '%-44s %10s\n' "change (files)" "wall"
for n in 1000 10000 100000; do
  for mode in direct transaction; do
    ws="$base/ws-$mode-$n"
    git init -q "$ws"
    run "$mode: $n new files" "$ws" "$mode" "$make_files $n new"
    # Existing files, made outside, then modified inside.
    sh -c "cd $ws && $make_files $n old"
    run "$mode: $n modified files" "$ws" "$mode" "for d in old/*; do for f in \$d/*; do echo y > \$f; done; done"
    run "$mode: a deleted tree of $n files" "$ws" "$mode" "rm -rf old"
    rm -rf "$ws"
  done
done
ws="$base/ws-deep"
git init -q "$ws"
run "transaction: a tree 300 deep" "$ws" transaction \
  "python3 -c 'import os
for _ in range(300): os.mkdir(\"d\"); os.chdir(\"d\")
open(\"f\", \"w\").write(\"x\")'"
bottom="$ws/$(printf 'd/%.0s' $(seq 300))f"
[ -e "$bottom" ] && echo "deep: the file past the bound reached the workspace" || echo "deep: the file past 256 levels was held (named above), the rest applied"

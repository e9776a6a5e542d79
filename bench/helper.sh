#!/usr/bin/env bash
# Per-call cost of the sandbox: /bin/true bare vs through cordon's helper (with and without the
# mount view) vs bubblewrap, 200 runs each, no shell in between (hyperfine -N).
#
#   bash bench/helper.sh            # builds the release binary first
#   RUNS=500 bash bench/helper.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-200}
command -v hyperfine >/dev/null || { echo "needs hyperfine (apt-get install hyperfine)" >&2; exit 1; }
cargo build --release -q
bin=$(mktemp -d)
# The helper personality through a symlink, exactly as a caller that execs it directly.
ln -s "$PWD/target/release/cordon" "$bin/codex-linux-sandbox"
work=$(mktemp -d)
policy='{"type":"workspace-write"}'
helper="$bin/codex-linux-sandbox --sandbox-policy-cwd $work --sandbox-policy '$policy'"
cmds=(
  "/bin/true"
  "$helper -- /bin/true"
  "$helper --no-mount-view -- /bin/true"
)
names=("bare /bin/true" "cordon helper (mount view)" "cordon helper (Landlock+seccomp only)")
if command -v bwrap >/dev/null; then
  cmds+=("bwrap --ro-bind / / --dev /dev --bind $work $work --unshare-net /bin/true")
  names+=("bubblewrap")
fi
args=()
for i in "${!cmds[@]}"; do args+=(-n "${names[$i]}" "${cmds[$i]}"); done
hyperfine -N --warmup 20 --runs "$RUNS" --export-json "$bin/helper.json" "${args[@]}"
python3 - "$bin/helper.json" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
base = results[0]["median"]
print(f"\n{'variant':<40} {'median':>10} {'x bare':>8}")
for r in results:
    print(f"{r['command']:<40} {r['median']*1e3:>8.3f}ms {r['median']/base:>8.2f}")
PY
rm -rf "$bin" "$work"

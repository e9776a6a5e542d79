#!/usr/bin/env bash
# Per-call cost of the sandbox: /bin/true bare vs through cordon's helper (with and without the
# mount view; dynamically and statically linked builds) vs bubblewrap. 200 runs each, no shell
# in between (hyperfine -N).
#
#   bash bench/helper.sh
#   RUNS=500 bash bench/helper.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-200}
command -v hyperfine >/dev/null || { echo "needs hyperfine (apt-get install hyperfine)" >&2; exit 1; }
host=$(rustc -vV | sed -n 's/^host: //p')
cargo build --release -q
# Static-pie: no dynamic loader and no second libc start-up in the chain.
RUSTFLAGS='-C target-feature=+crt-static' cargo build --release -q --target "$host"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/dyn" "$tmp/static" "$tmp/work"
# The helper personality through a symlink, exactly as a caller that execs it directly.
ln -s "$PWD/target/release/cordon" "$tmp/dyn/codex-linux-sandbox"
ln -s "$PWD/target/$host/release/cordon" "$tmp/static/codex-linux-sandbox"
work="$tmp/work"
policy='{"type":"workspace-write"}'
args=(-n "bare /bin/true" "/bin/true")
for build in static dyn; do
  helper="$tmp/$build/codex-linux-sandbox --sandbox-policy-cwd $work --sandbox-policy '$policy'"
  args+=(-n "helper $build, mount view" "$helper -- /bin/true")
  args+=(-n "helper $build, Landlock+seccomp only" "$helper --no-mount-view -- /bin/true")
done
# The whole orchestrator: approval decision, spawn through the helper, classify (issue: <= 5 ms).
# CORDON_HOME must not lie inside a writable root (and /tmp is one).
home=$(mktemp -d -p /var/tmp cordon-bench-home.XXXXXX)
trap 'rm -rf "$tmp" "$home"' EXIT
args+=(-n "cordon exec -a never (static)" "$PWD/target/$host/release/cordon exec -a never -C $work -- /bin/true")
export CORDON_HOME="$home"
if command -v bwrap >/dev/null; then
  args+=(-n "bubblewrap" "bwrap --ro-bind / / --dev /dev --bind $work $work --unshare-net /bin/true")
fi
hyperfine -N --warmup 20 --runs "$RUNS" --export-json "$tmp/helper.json" "${args[@]}" >/dev/null
python3 - "$tmp/helper.json" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
base = results[0]["median"]
print(f"{'variant':<40} {'median':>9} {'mean':>9} {'x bare':>7}")
for r in results:
    print(f"{r['command']:<40} {r['median']*1e3:>7.3f}ms {r['mean']*1e3:>7.3f}ms {r['median']/base:>7.2f}")
PY

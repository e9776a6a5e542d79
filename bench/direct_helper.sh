#!/usr/bin/env bash
# What the helper's own step after the run costs when it is called directly (Codex, a harness):
# the same launch with and without `--caller cordon` (cordon's front ends pass it and keep the
# step themselves), in a fresh repository, `/bin/true`, workspace-write.
#
#   bash bench/direct_helper.sh [CORDON] [RUNS]
set -euo pipefail
cordon=$(realpath "${1:-target/release/cordon}")
runs=${2:-30}
command -v hyperfine >/dev/null || { echo "hyperfine is needed (apt-get install hyperfine)"; exit 3; }
ws=$(mktemp -d /var/tmp/cordon-direct-bench.XXXXXX)
trap 'rm -rf "$ws"' EXIT
git init -q "$ws"
policy='{"type":"workspace-write"}'
direct="$ws/direct.sh"; front="$ws/front.sh"
printf 'exec -a codex-linux-sandbox %q --sandbox-policy-cwd %q --sandbox-policy %q -- true\n' \
  "$cordon" "$ws" "$policy" >"$direct"
printf 'exec -a codex-linux-sandbox %q --caller cordon --sandbox-policy-cwd %q --sandbox-policy %q -- true\n' \
  "$cordon" "$ws" "$policy" >"$front"
cd "$ws"
hyperfine -N -w 3 -r "$runs" -n direct "bash $direct" -n caller-cordon "bash $front"

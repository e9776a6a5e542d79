#!/usr/bin/env bash
# Launch cost against the size of the host's mount table: cordon's helper (mount view + PID/IPC
# namespaces), bubblewrap with --unshare-pid --unshare-ipc, and the kernel's own floor — a bare
# `unshare -m --propagation unchanged /bin/true`, whose cost grows with the table because the
# kernel copies it into every new mount namespace — at 0, 100 and 1,000 extra mounts, each
# table built in a private mount namespace of its own (the host's is never touched).
#
#   sudo bash bench/mounts.sh                 # 120 runs per variant and size, in 4 rounds
#   RUNS=300 COUNTS="0 1000" sudo bash bench/mounts.sh --json results.json
#   SKIP_BUILD=1 sudo bash bench/mounts.sh    # the static release build in target/ as it is
#   CORDON=path/to/cordon SKIP_BUILD=1 sudo bash bench/mounts.sh   # another build
#
# The goal it checks: the helper's growth over its own base launch stays within 0.2 x that base
# plus the kernel's growth (the unshare floor's) at the same size — cordon's own work per host
# mount is then constant. Needs root (mounts), hyperfine and bubblewrap (installed from Debian
# when missing).
set -euo pipefail
RUNS=${RUNS:-120}
ROUNDS=${ROUNDS:-4}
WARMUP=${WARMUP:-5}
COUNTS=${COUNTS:-0 100 1000}
json_out=
while [ $# -gt 0 ]; do
  case $1 in
    --json) json_out=$(realpath -m "$2"); shift 2 ;;
    *) echo "usage: $0 [--json FILE]" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "mounts.sh: needs root (it builds mount tables)" >&2; exit 2; }
cd "$(dirname "$0")/.."

missing=()
command -v hyperfine >/dev/null || missing+=(hyperfine)
command -v bwrap >/dev/null || missing+=(bubblewrap)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get install -y -q "${missing[@]}" >/dev/null ||
    { apt-get update -q >/dev/null && apt-get install -y -q "${missing[@]}" >/dev/null; }
fi
host=$(rustc -vV | sed -n 's/^host: //p')
[ -n "${SKIP_BUILD:-}" ] ||
  RUSTFLAGS='-C target-feature=+crt-static' cargo build --release -q -p cordon --target "$host"
static=$(realpath "${CORDON:-$PWD/target/$host/release/cordon}")

tmp=$(mktemp -d -p /var/tmp cordon-bench-mounts.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/work" "$tmp/home" "$tmp/mnt"
ln -s "$static" "$tmp/bin/codex-linux-sandbox"
export CORDON_HOME=$tmp/home
work=$tmp/work
policy='{"type":"workspace-write"}'

for count in $COUNTS; do
  # One private mount namespace per size: the extra mounts (small tmpfs) exist only there, and
  # every variant below starts from that table.
  unshare -m --propagation private bash -s "$count" "$tmp" "$work" "$policy" "$RUNS" "$ROUNDS" "$WARMUP" <<'SH'
set -euo pipefail
count=$1 tmp=$2 work=$3 policy=$4 runs=$5 rounds=$6 warmup=$7
# An empty /tmp, as on a fresh machine: /tmp is a writable root of the policy, and what earlier
# runs left there would be searched for repositories at every launch (bench/compare.sh's
# PRIVATE_TMP=1 does the same).
mount -t tmpfs cordon-bench-tmp /tmp
for i in $(seq 1 "$count"); do
  mkdir -p "$tmp/mnt/$i"
  mount -t tmpfs -o size=4k "m$i" "$tmp/mnt/$i"
done
echo "mounts: $(wc -l </proc/self/mountinfo) in the table ($count extra)" >&2
cd "$work"
per_round=$(( (runs + rounds - 1) / rounds ))
names=("helper" "bubblewrap" "unshare floor")
cmds=("$tmp/bin/codex-linux-sandbox --sandbox-policy-cwd $work --sandbox-policy '$policy' -- /bin/true"
      "bwrap --ro-bind / / --dev /dev --bind $work $work --unshare-net --unshare-pid --unshare-ipc /bin/true"
      "unshare -m --propagation unchanged /bin/true")
for round in $(seq "$rounds"); do
  args=()
  for i in $(shuf -e 0 1 2); do args+=(-n "${names[$i]}" "${cmds[$i]}"); done
  hyperfine -N --warmup "$warmup" --runs "$per_round" \
    --export-json "$tmp/hf-$count-$round.json" "${args[@]}" >/dev/null
done
SH
done

python3 - "$tmp" "$COUNTS" "$json_out" <<'PY'
import glob, json, os, statistics, sys
tmp, counts, json_out = sys.argv[1], [int(c) for c in sys.argv[2].split()], sys.argv[3]
median = {}
for count in counts:
    pooled = {}
    for path in glob.glob(os.path.join(tmp, f"hf-{count}-*.json")):
        for r in json.load(open(path))["results"]:
            pooled.setdefault(r["command"], []).extend(r["times"])
    median[count] = {name: statistics.median(times) * 1e3 for name, times in pooled.items()}
base = counts[0]
print(f"{'extra mounts':>12} {'helper':>9} {'bubblewrap':>11} {'unshare floor':>14} "
      f"{'helper/bwrap':>13} {'helper growth':>14} {'allowed':>9}")
rows = []
for count in counts:
    m = median[count]
    growth = m["helper"] - median[base]["helper"]
    kernel = m["unshare floor"] - median[base]["unshare floor"]
    allowed = 0.2 * median[base]["helper"] + kernel
    rows.append({"extra_mounts": count, "helper_ms": m["helper"], "bwrap_ms": m["bubblewrap"],
                 "unshare_floor_ms": m["unshare floor"], "helper_growth_ms": growth,
                 "kernel_growth_ms": kernel, "allowed_growth_ms": allowed,
                 "within_goal": growth <= allowed})
    print(f"{count:>12} {m['helper']:>7.3f}ms {m['bubblewrap']:>9.3f}ms {m['unshare floor']:>12.3f}ms "
          f"{m['helper'] / m['bubblewrap']:>12.2f}x {growth:>12.3f}ms {allowed:>7.3f}ms"
          f"{'' if growth <= allowed else '  (over)'}")
if json_out:
    json.dump({"rows": rows}, open(json_out, "w"), indent=2)
PY

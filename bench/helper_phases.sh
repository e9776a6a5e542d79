#!/usr/bin/env bash
# Where the Linux helper spends one launch, step by step, on the committed code (HEAD).
#
# Copies HEAD into a scratch worktree, puts a mark before each step of
# sandbox-linux/src/run.rs (found by the line that starts it, so it follows the code as it
# moves), builds that copy statically into target/helper-phases, runs the helper RUNS times
# (workspace-write, no network, `/bin/true`) and prints the median time between consecutive
# marks. A mark costs a `clock_gettime` and a line on stderr. A step whose line is no longer
# found is said on stderr, and its time goes to the step before it.
#
#   bash bench/helper_phases.sh               # 80 launches, this machine's /tmp
#   PRIVATE_TMP=1 RUNS=200 bash bench/helper_phases.sh   # with an empty /tmp (root)
set -euo pipefail
RUNS=${RUNS:-80}
if [ -n "${PRIVATE_TMP:-}" ] && [ -z "${CORDON_BENCH_PRIVATE_TMP_ENTERED:-}" ]; then
  export CORDON_BENCH_PRIVATE_TMP_ENTERED=1
  exec unshare -m --propagation private \
    sh -c 'mount -t tmpfs cordon-bench-tmp /tmp && exec bash "$0" "$@"' "$0" "$@"
fi
cd "$(dirname "$0")/.."
repo=$PWD
copy=$(mktemp -d -p /var/tmp cordon-helper-phases.XXXXXX)
work=$(mktemp -d -p /tmp cordon-helper-phases-work.XXXXXX)
home=$(mktemp -d -p /var/tmp cordon-helper-phases-home.XXXXXX)
trap 'git -C "$repo" worktree remove --force "$copy" >/dev/null 2>&1 || rm -rf "$copy"; rm -rf "$work" "$home"' EXIT
git worktree add --detach -q "$copy" HEAD

python3 - "$copy/sandbox-linux/src/run.rs" <<'PY'
import sys
path = sys.argv[1]
# (the start of the line that begins a step, the name of what ends before it)
steps = [
    ("let mut policy = args", "start"),
    ("let mut devices = Vec::new();", "policy resolved"),
    ("// 1. The mount view: needs", "the home's reads planned"),
    ("let mut plan = plan_mount_view(", "namespace entered"),
    ("warn_unusable_git_files(&plan", "view planned"),
    ("let pid_namespace = match", "view built"),
    ("let proxy_port = match", "PID namespace, /proc mounted"),
    ("let mut reads = hidden_reads::plan", "the roots and the home's reads gathered"),
    ("let mut landlock_plan = landlock_rules::plan", "read rights planned"),
    ("let (landlock_enforced, rule_targets) = match", "Landlock rules planned"),
    ("let capabilities = caps::drop_all", "Landlock installed"),
    ("let installed = seccomp::build_program", "capabilities dropped"),
    ("supervisor.run(&prepare_exec", "seccomp installed, the rest"),
]
lines = open(path).read().split("\n")
out, found = [], set()
for line in lines:
    for start, name in steps:
        if line.strip().startswith(start) and name not in found:
            found.add(name)
            out.append(f'    crate::run::phase_mark("{name}");')
            break
    out.append(line)
for _, name in steps:
    if name not in found:
        print(f"helper_phases: no line starts the step ending with {name!r}", file=sys.stderr)
out.append('''
pub(crate) fn phase_mark(label: &str) {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    #[allow(clippy::undocumented_unsafe_blocks)]
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    eprintln!("PHASE {} {}", ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64, label);
}
''')
open(path, "w").write("\n".join(out))
PY

host=$(rustc -vV | sed -n 's/^host: //p')
(cd "$copy" && RUSTFLAGS='-C target-feature=+crt-static' CARGO_TARGET_DIR="$repo/target/helper-phases" \
  cargo build --release -q -p cordon --target "$host")
mkdir -p "$copy/bin"
ln -s "$repo/target/helper-phases/$host/release/cordon" "$copy/bin/codex-linux-sandbox"
log=$(mktemp -p /var/tmp cordon-helper-phases-log.XXXXXX)
cd "$work"
for _ in $(seq "$RUNS"); do
  CORDON_HOME=$home "$copy/bin/codex-linux-sandbox" --sandbox-policy-cwd "$work" \
    --sandbox-policy '{"type":"workspace-write"}' -- /bin/true 2>>"$log"
done
python3 - "$log" "$RUNS" <<'PY'
import collections, statistics, sys
runs, current = [], []
for line in open(sys.argv[1]):
    if not line.startswith("PHASE "):
        continue
    _, t, name = line.rstrip("\n").split(" ", 2)
    if name == "start" and current:
        runs.append(current)
        current = []
    current.append((name, int(t)))
runs.append(current)
steps = collections.OrderedDict()
for run in runs:
    for (_, t0), (name, t1) in zip(run, run[1:]):
        steps.setdefault(name, []).append((t1 - t0) / 1000)
print(f"helper, workspace-write, /bin/true: {len(runs)} launches, median µs per step")
total = 0.0
for name, times in steps.items():
    median = statistics.median(times)
    total += median
    print(f"{median:10.1f}  {name}")
print(f"{total:10.1f}  sum of the medians (first mark to last)")
PY
rm -f "$log"

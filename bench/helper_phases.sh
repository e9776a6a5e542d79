#!/usr/bin/env bash
# Where the Linux helper spends one launch, step by step, on the committed code (HEAD).
#
# Copies HEAD into a scratch worktree, puts a mark before each step of
# sandbox-linux/src/run.rs (found by the line that starts it, so it follows the code as it
# moves), builds that copy statically into target/helper-phases, runs the helper RUNS times
# (workspace-write, no network, `/bin/true`) and prints the median time between consecutive
# marks, then what the launch costs outside the marks and, in the same rounds, bubblewrap;
# with that, what the helper would cost if planning (and then Landlock) took no time at all —
# the floor under any lever that caches or skips them. A mark costs a `clock_gettime` and a
# line on stderr. A step whose line is no longer found is said on stderr, and its time goes
# to the step before it.
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
command -v bwrap >/dev/null || { echo "helper_phases: needs bubblewrap (apt-get install bubblewrap) for the rounds beside it" >&2; exit 2; }
cd "$work"
CORDON_HOME=$home python3 - "$copy/bin/codex-linux-sandbox" "$work" "$RUNS" <<'PY'
import collections, os, statistics, subprocess, sys, time
helper, work, runs_wanted = sys.argv[1], sys.argv[2], int(sys.argv[3])
helper_argv = [helper, "--sandbox-policy-cwd", work, "--sandbox-policy", '{"type":"workspace-write"}', "--", "/bin/true"]
bwrap_argv = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--bind", work, work,
              "--unshare-net", "--unshare-pid", "--unshare-ipc", "/bin/true"]
# Interleaved: a helper launch, then bubblewrap, RUNS times; times are CLOCK_MONOTONIC, the
# clock the marks use, so the launch splits into before the first mark (exec and start-up),
# the marked steps, and after the last (the command's exec, its exit, the namespaces' end).
steps, bwrap, before, after, whole = collections.OrderedDict(), [], [], [], []
for _ in range(runs_wanted):
    t0 = time.monotonic_ns()
    run = subprocess.run(helper_argv, stderr=subprocess.PIPE, text=True, check=True)
    t1 = time.monotonic_ns()
    marks = [(name, int(t)) for _, t, name in
             (line.split(" ", 2) for line in run.stderr.splitlines() if line.startswith("PHASE "))]
    for (_, a), (name, b) in zip(marks, marks[1:]):
        steps.setdefault(name, []).append((b - a) / 1000)
    before.append((marks[0][1] - t0) / 1000)
    after.append((t1 - marks[-1][1]) / 1000)
    whole.append((t1 - t0) / 1000)
    t0 = time.monotonic_ns()
    subprocess.run(bwrap_argv, check=True)
    bwrap.append((time.monotonic_ns() - t0) / 1000)
median = statistics.median
print(f"helper, workspace-write, /bin/true: {runs_wanted} launches, median µs per step")
print(f"{median(before):10.1f}  exec and start-up (before the first mark)")
total = 0.0
for name, times in steps.items():
    total += median(times)
    print(f"{median(times):10.1f}  {name}")
print(f"{total:10.1f}  sum of the medians (first mark to last)")
print(f"{median(after):10.1f}  the command's exec, its exit, the namespaces' end (after the last mark)")
print(f"{median(whole):10.1f}  the whole launch, as the caller sees it")
print(f"{median(bwrap):10.1f}  bubblewrap --unshare-net --unshare-pid --unshare-ipc, in the same rounds")
# What the helper would cost if a step took no time at all: the floor under each kind of lever.
planning = ("policy resolved", "the home's reads planned", "view planned",
            "the roots and the home's reads gathered", "read rights planned", "Landlock rules planned")
def without(names):
    return median([w - sum(steps[n][i] for n in names if n in steps) for i, w in enumerate(whole)])
free_plan = without(planning)
free_rules = without(planning + ("Landlock installed",))
b = median(bwrap)
print(f"{free_plan:10.1f}  the launch if planning took no time (a plan kept between launches at no cost): {free_plan / b:.2f}x bubblewrap")
print(f"{free_rules:10.1f}  ... and installing Landlock too: {free_rules / b:.2f}x bubblewrap")
print(f"{'':10}  the helper itself: {median(whole) / b:.2f}x bubblewrap")
PY

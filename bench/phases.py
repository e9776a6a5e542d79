#!/usr/bin/env python3
"""Where a sandboxed launch spends its time, phase by phase.

Builds the committed code (HEAD) with bench/phases.patch applied — a `mark(label)` at each
step of `cordon exec`'s front-end, the helper, the supervisor and the executor's spawn, which
appends the CLOCK_MONOTONIC time to the file named by CORDON_PHASE_LOG — and prints the median
time between consecutive marks over N launches of each path:

  helper    codex-linux-sandbox (workspace-write, no network) -- /bin/true
  exec      cordon exec -a never -s workspace-write -- /bin/true   (supervisor cloned as pid 1)
  executor  exec_command {"cmd": "true", "login": false} in a live `cordon executor`

The marks cost a few microseconds each (an open, a write and a close), so the phases add up
to a little more than an uninstrumented launch; compare phases with each other, and builds
with bench/ab.py. The build goes to target/phases (the first one takes minutes: LTO).

Usage: python3 bench/phases.py [--runs N] [helper] [exec] [executor]
"""
import argparse
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POLICY = '{"type":"workspace-write","writable_roots":[],"network_access":false}'


def build():
    """HEAD plus the patch, built into target/phases; returns the binary."""
    # Outside the repository: `git apply` inside a repository's subdirectory skips the paths
    # outside that directory, that is every path of the patch.
    src = tempfile.mkdtemp(prefix="cordon-phases-src-", dir="/var/tmp")
    archive = subprocess.run(["git", "-C", ROOT, "archive", "HEAD"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", src], input=archive, check=True)
    patch = os.path.join(ROOT, "bench", "phases.patch")
    applied = subprocess.run(["git", "apply", "-v", patch], cwd=src, capture_output=True,
                             text=True)
    if applied.returncode != 0 or "Applied patch" not in applied.stderr:
        sys.exit(f"bench/phases.patch no longer applies to HEAD; update it:\n{applied.stderr}")
    target = os.path.join(ROOT, "target", "phases")
    print(f"building HEAD + bench/phases.patch into {target} …", file=sys.stderr)
    try:
        subprocess.run(["cargo", "build", "--release", "-p", "cordon", "--target-dir", target],
                       cwd=src, check=True)
    finally:
        shutil.rmtree(src, ignore_errors=True)
    return os.path.join(target, "release", "cordon")


def marks(log):
    """The (time ns, label) lines of one launch, in time order."""
    with open(log) as f:
        rows = [line.split(" ", 2) for line in f if line.strip()]
    return sorted((int(t), label.strip()) for _, t, label in rows)


def summarize(title, launches):
    """Median of each step between consecutive marks, in the order of the first launch."""
    steps = collections.defaultdict(list)
    order = []
    totals = []
    for launch in launches:
        for (t0, a), (t1, b) in zip(launch, launch[1:]):
            key = f"{a} -> {b}"
            if key not in steps:
                order.append(key)
            steps[key].append((t1 - t0) / 1000)
        if len(launch) > 1:
            totals.append((launch[-1][0] - launch[0][0]) / 1000)
    print(f"\n{title} ({len(launches)} launches, median µs between marks)")
    for key in order:
        values = steps[key]
        if len(values) * 2 < len(launches):
            continue  # an ordering that only some launches took (two processes racing)
        print(f"  {statistics.median(values):8.1f}  {key}")
    if totals:
        print(f"  {statistics.median(totals):8.1f}  total, first mark to last")
    return {key: statistics.median(steps[key]) for key in order}


def run_launches(argv, runs, log, cwd):
    env = dict(os.environ, CORDON_PHASE_LOG=log)
    launches = []
    for i in range(runs + 10):
        if os.path.exists(log):
            os.unlink(log)
        subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
        if i >= 10:  # warm-up
            launches.append(marks(log))
    return launches


def helper(cordon, runs, log, work):
    link = os.path.join(work, "codex-linux-sandbox")
    if not os.path.exists(link):
        os.symlink(cordon, link)
    argv = [link, "--sandbox-policy-cwd", work, "--sandbox-policy", POLICY, "--", "/bin/true"]
    return summarize("helper: codex-linux-sandbox -- /bin/true",
                     run_launches(argv, runs, log, work))


def exec_(cordon, runs, log, work):
    argv = [cordon, "exec", "-a", "never", "-s", "workspace-write", "--", "/bin/true"]
    return summarize("cordon exec -a never -s workspace-write -- /bin/true",
                     run_launches(argv, runs, log, work))


def executor(cordon, runs, log, work):
    home = tempfile.mkdtemp(prefix="cordon-phases-home-", dir="/var/tmp")
    env = dict(os.environ, CORDON_HOME=home, CORDON_PHASE_LOG=log)
    proc = subprocess.Popen([cordon, "executor", "-C", work], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, env=env)
    launches = []
    try:
        for i in range(runs + 10):
            if os.path.exists(log):
                os.unlink(log)
            rid = f"p{i}"
            request = {"type": "call_tool", "requestId": rid, "toolName": "exec_command",
                       "arguments": {"cmd": "true", "login": False}}
            proc.stdin.write(json.dumps(request).encode() + b"\n")
            proc.stdin.flush()
            while json.loads(proc.stdout.readline()).get("requestId") != rid:
                pass
            if i >= 10:
                launches.append(marks(log))
    finally:
        proc.stdin.close()
        proc.wait()
        shutil.rmtree(home, ignore_errors=True)
    return summarize('executor: exec_command {"cmd": "true", "login": false}', launches)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("paths", nargs="*", default=["helper", "exec", "executor"])
    args = parser.parse_args()
    cordon = build()
    work = tempfile.mkdtemp(prefix="cordon-phases-work-", dir="/var/tmp")
    # Inside the writable root: the supervisor's marks are written from within the sandbox.
    log = os.path.join(work, "phases.log")
    uname = os.uname()
    print(f"machine: {os.cpu_count()} CPUs, Linux {uname.release}, "
          f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    try:
        for name, fn in [("helper", helper), ("exec", exec_), ("executor", executor)]:
            if name in args.paths:
                fn(cordon, args.runs, log, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

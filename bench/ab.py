#!/usr/bin/env python3
"""Side-by-side launch cost of two (or more) cordon builds, interleaved.

hyperfine runs one variant after another, and on a shared VM the machine's speed drifts by
10-15 % over the minutes that takes, so two builds measured in separate rows (or runs) differ by
more than most changes do. Here every round runs each command once, in a new random order, so
drift hits every variant alike; the table gives medians and the ratio to bare `/bin/true` of the
same rounds.

  python3 bench/ab.py before=/tmp/cordon-before after=target/release/cordon
  python3 bench/ab.py --runs 1000 --json ab.json a=BUILD_A b=BUILD_B

For each build: the helper (through a `codex-linux-sandbox` link) with the mount view and the
PID + IPC namespaces, with `--no-mount-view`; `cordon sandbox linux --full-auto`; `cordon exec -a
never -s workspace-write`, bare, with an environment value the secret filter must look at
with a pattern, and with resource limits (per-process ones; as root also those of
the whole tree, which cost a cgroup per command), and `cordon exec --yolo` (unsandboxed: a
keeper, and a kill-only cgroup where cordon can make one) — all running `/bin/true` in a scratch workspace, with CORDON_HOME
outside it — and one live `cordon executor` per build answering `exec_command {"cmd": "true",
"login": false}` (a JSON line in, the response line out), beside `bash -c true` spawned here,
which is what that call runs. Timing is posix_spawn to waitpid (or request to response) in
this process: a constant few tens of microseconds of Python on every row, bare included.

To build the "before" binary of a commit: git worktree add /tmp/before REV && cargo build
--release --manifest-path /tmp/before/Cargo.toml -p cordon --target-dir /tmp/before-target.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time


class Executor:
    """A live `cordon executor` on pipes; each call is one `exec_command "true"`."""

    def __init__(self, cordon, work, env):
        self.proc = subprocess.Popen([cordon, "executor", "-C", work], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.next = 0

    def __call__(self):
        self.next += 1
        request = {"type": "call_tool", "requestId": str(self.next), "toolName": "exec_command",
                   "arguments": {"cmd": "true", "login": False}}
        start = time.perf_counter()
        self.proc.stdin.write((json.dumps(request) + "\n").encode())
        self.proc.stdin.flush()
        response = json.loads(self.proc.stdout.readline())
        elapsed = time.perf_counter() - start
        text = response.get("outcome", {}).get("content", [{}])[0].get("text", "")
        if "exited with code 0" not in text:
            sys.exit(f"ab.py: the executor's call failed: {response}")
        return elapsed

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


# An environment value the secret filter has to look at with a pattern (it holds `pass`),
# and that is no secret.
HINT_ENV = {"CORDON_AB_TOX": "testenv.passenv+=OPENBLAS_*"}


def variants(label, cordon, links, work):
    link = os.path.join(links, label, "codex-linux-sandbox")
    os.makedirs(os.path.dirname(link), exist_ok=True)
    os.symlink(os.path.abspath(cordon), link)
    helper = [link, "--sandbox-policy-cwd", work, "--sandbox-policy", '{"type":"workspace-write"}']
    return [
        (f"{label}: helper, mount view + PID/IPC ns", helper + ["--", "/bin/true"]),
        (f"{label}: helper, --no-mount-view", helper + ["--no-mount-view", "--", "/bin/true"]),
        (f"{label}: cordon sandbox linux --full-auto",
         [cordon, "sandbox", "linux", "--full-auto", "-C", work, "--", "/bin/true"]),
        (f"{label}: cordon exec -a never -s workspace-write",
         [cordon, "exec", "-a", "never", "-s", "workspace-write", "-C", work, "--", "/bin/true"]),
        # The same with a value in the environment that holds one of the literals the secret
        # filter looks for (`pass`, as tox's settings do), so that its pattern is compiled.
        (f"{label}: cordon exec ... (a secret-filter hint in the env)",
         [cordon, "exec", "-a", "never", "-s", "workspace-write", "-C", work, "--", "/bin/true"],
         HINT_ENV),
        # Per-process limits only (rlimits set before the exec), then the limits of the whole
        # tree, which make, watch and remove a cgroup per command (root only).
        # Unsandboxed: the keeper, and (cgroup v2, root or a delegated subtree) the kill-only
        # cgroup the command joins.
        (f"{label}: cordon exec --yolo",
         [cordon, "exec", "--yolo", "-C", work, "--", "/bin/true"]),
        (f"{label}: cordon exec ... --limit open-files,file-size",
         [cordon, "exec", "-a", "never", "-s", "workspace-write", "-C", work,
          "--limit", "open-files=1024", "--limit", "file-size=1G", "--", "/bin/true"]),
    ] + ([
        (f"{label}: cordon exec ... --limit memory,pids,cpu",
         [cordon, "exec", "-a", "never", "-s", "workspace-write", "-C", work,
          "--limit", "memory=1G", "--limit", "pids=1024", "--limit", "cpu=60",
          "--", "/bin/true"]),
    ] if os.geteuid() == 0 else [])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("builds", nargs="+", metavar="LABEL=PATH")
    args = parser.parse_args()

    builds = []
    for build in args.builds:
        label, _, path = build.partition("=")
        if not path or not os.access(path, os.X_OK):
            sys.exit(f"ab.py: {build!r} is not LABEL=PATH of an executable")
        builds.append((label, os.path.abspath(path)))

    # Outside /tmp (a writable root): the helper links live here, and a helper inside a
    # writable root refuses to run without the mount view that would protect it.
    scratch = tempfile.mkdtemp(prefix="cordon-ab-", dir="/var/tmp")
    # CORDON_HOME must not lie inside a writable root (and /tmp is one).
    home = tempfile.mkdtemp(prefix="cordon-ab-home-", dir="/var/tmp")
    work = os.path.join(scratch, "work")
    os.mkdir(work)
    env = dict(os.environ, CORDON_HOME=home)
    null = os.open(os.devnull, os.O_RDWR)
    actions = [(os.POSIX_SPAWN_DUP2, null, fd) for fd in (0, 1, 2)]

    def spawn(argv, extra_env=None):
        spawn_env = dict(env, **(extra_env or {}))

        def run():
            start = time.perf_counter()
            pid = os.posix_spawn(argv[0], argv, spawn_env, file_actions=actions)
            _, status = os.waitpid(pid, 0)
            elapsed = time.perf_counter() - start
            if status != 0:
                sys.exit(f"ab.py: {' '.join(argv)} failed (wait status {status})")
            return elapsed
        return run

    os.chdir(work)
    rows = [("bare /bin/true", ["/bin/true"], spawn(["/bin/true"])),
            ("bash -c true", ["/bin/bash", "-c", "true"], spawn(["/bin/bash", "-c", "true"]))]
    executors = []
    for label, cordon in builds:
        for name, argv, *extra_env in variants(label, cordon, os.path.join(scratch, "links"), work):
            rows.append((name, argv, spawn(argv, *extra_env)))
        executors.append(Executor(cordon, work, env))
        rows.append((f"{label}: executor exec_command true (vs bash -c true)",
                     [cordon, "executor"], executors[-1]))

    for _ in range(args.warmup):
        for _, _, run in rows:
            run()
    samples = [[] for _ in rows]
    for _ in range(args.runs):
        order = list(range(len(rows)))
        random.shuffle(order)
        for i in order:
            samples[i].append(rows[i][2]())
    for executor in executors:
        executor.close()

    base = statistics.median(samples[0])
    load = open("/proc/loadavg").read().split()[:3]
    print(f"{args.runs} interleaved rounds, {os.cpu_count()} CPUs, Linux {os.uname().release}, "
          f"load {' '.join(load)} (after)")
    bash = statistics.median(samples[1])
    print(f"{'variant':<62} {'median':>9} {'p90':>9} {'x bare':>7}")
    results = []
    for (name, argv, _), times in zip(rows, samples):
        median = statistics.median(times)
        p90 = statistics.quantiles(times, n=10)[-1]
        extra = ""
        if "executor" in name:
            extra = f"  overhead {(median - bash) * 1e3:.3f}ms"
        print(f"{name:<62} {median * 1e3:>7.3f}ms {p90 * 1e3:>7.3f}ms "
              f"{median / base:>7.2f}{extra}")
        results.append({"name": name, "command": argv, "median_ms": median * 1e3,
                        "p90_ms": p90 * 1e3, "x_bare": median / base})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": args.runs, "results": results}, f, indent=2)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The oracle for forbidding and asking rules.

With the rules `rm` forbidden, `git push` forbidden and `touch` prompt, every generated command
runs for real in a throwaway directory where those programs are stubs (see `sandbox.py`); when
one of them ran, `cordon policy check` must answer ask or refuse for it under every approval
policy checked, never run. Prints a table per family and the violations; exit 0 when there are
none, 1 when there are, 2 when the harness itself does not see what it must (a plain
`rm` that leaves no trace), 3 when it cannot run here (the reason is printed).

    oracle.py --cordon target/debug/cordon --cases 3000 --seed 1 --jobs 2
"""

import argparse
import json
import os
import queue
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

import grammar  # noqa: E402
import sandbox  # noqa: E402
import wrappers as wrappers_module  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

RULES = """[[rule]]
prefix = ["rm"]
decision = "forbidden"

[[rule]]
prefix = ["git", "push"]
decision = "forbidden"

[[rule]]
prefix = ["touch"]
decision = "prompt"
"""

POLICIES = ["untrusted", "on-request", "on-failure", "never"]

# The program each wrapper family needs on this machine.
PROGRAMS = {"env-split": "env", "find": "find", "program-variable": "git",
            "loader": next((p for p in wrappers_module.LOADERS if os.path.exists(p)), "ld.so")}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cordon", required=True, help="the cordon binary to check")
    p.add_argument("--cases", type=int, default=3000, help="generated cases (besides the fixed)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--jobs", type=int, default=2, help="cases run at once")
    p.add_argument("--user", choices=["root", "nobody"], default="root",
                   help="who runs the cases and cordon (nobody: uid 65534; needs root)")
    p.add_argument("--timeout", type=float, default=3.0, help="seconds per case")
    p.add_argument("--policies", default=",".join(POLICIES))
    p.add_argument("--examples", type=int, default=3, help="violations shown per family")
    p.add_argument("--check-all", action="store_true",
                   help="ask cordon about every case, not only those where a stub ran")
    p.add_argument("--json", help="write the summary, the violations and the misses here")
    p.add_argument("--keep", action="store_true", help="keep the scratch directory")
    return p.parse_args()


def cannot_run(args):
    """Why the oracle cannot run here, or None."""
    for tool in ["unshare", "strace", "mount", "git", "bash"]:
        if shutil.which(tool) is None:
            return "%s is not installed" % tool
    if args.user == "nobody" and os.geteuid() != 0:
        return "--user nobody needs root (to drop to uid 65534 after the mounts)"
    probe = subprocess.run(["unshare", *sandbox.namespace_flags(), "true"],
                           capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return "cannot create a private mount namespace: %s" % probe.stderr.strip()
    probe = subprocess.run(["strace", "-f", "-qq", "-o", "/dev/null", "true"],
                           capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return "strace cannot trace here: %s" % probe.stderr.strip()
    return None


def unavailable_families():
    """Families whose program is not installed: {family: reason}."""
    missing = {}
    for family in grammar.WRAPPER_FAMILIES:
        program = PROGRAMS.get(family, family)
        if shutil.which(program, path=sandbox.CASE_ENV["PATH"]) is None:
            missing[family] = "%s is not installed" % program
    return missing


class Workers:
    """The sandbox workers, one case at a time each."""

    def __init__(self, config_path, jobs):
        self.idle = queue.Queue()
        self.processes = []
        for i in range(jobs):
            p = subprocess.Popen(
                ["unshare", *sandbox.namespace_flags(), sys.executable,
                 os.path.join(HERE, "sandbox.py"), "worker", config_path, str(i)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            self.processes.append(p)
            self.idle.put(p)

    def run(self, case):
        p = self.idle.get()
        try:
            p.stdin.write(json.dumps(case) + "\n")
            p.stdin.flush()
            line = p.stdout.readline()
            if not line:
                raise RuntimeError("a sandbox worker died (exit %s)" % p.wait())
            return json.loads(line)
        finally:
            self.idle.put(p)

    def close(self):
        for p in self.processes:
            p.stdin.close()
            p.wait()


class Cordon:
    def __init__(self, binary, home, workspace, nobody):
        self.prefix = [*(sandbox.NOBODY if nobody else []), binary]
        self.workspace = workspace
        self.env = {"PATH": sandbox.CASE_ENV["PATH"], "HOME": home, "CORDON_HOME": home}

    def decision(self, policy, argv):
        """`decision.kind` of `cordon policy check`, or `error: …`."""
        out = subprocess.run(
            [*self.prefix, "policy", "check", "-a", policy, "-C", self.workspace, "--", *argv],
            env=self.env, capture_output=True, text=True, check=False)
        try:
            return json.loads(out.stdout)["decision"]["kind"]
        except (ValueError, KeyError, TypeError):
            return "error: exit %s: %s" % (out.returncode, out.stderr.strip()[-200:])


def main():
    args = parse_args()
    reason = cannot_run(args)
    if reason:
        print("SKIP: " + reason)
        return 3
    missing = unavailable_families()
    for family, why in sorted(missing.items()):
        print("family %s skipped: %s" % (family, why))
    policies = args.policies.split(",")
    # Outside /tmp: cordon treats /tmp as a writable root by default.
    base = "/var/tmp" if os.path.isdir("/var/tmp") else None
    run_dir = tempfile.mkdtemp(prefix="cordon-oracle-", dir=base)
    os.chmod(run_dir, 0o755)
    try:
        return run(args, run_dir, policies, set(missing))
    except Exception:  # noqa: BLE001 - any failure of the harness is exit 2, never "violations"
        traceback.print_exc()
        print("HARNESS FAULT: the oracle failed (traceback on stderr)")
        return 2
    finally:
        if args.keep:
            print("scratch directory kept: " + run_dir)
        else:
            shutil.rmtree(run_dir, ignore_errors=True)


def run(args, run_dir, policies, skip):
    nobody = args.user == "nobody"
    home = os.path.join(run_dir, "home")
    os.makedirs(home)
    with open(os.path.join(home, "rules.toml"), "w") as f:
        f.write(RULES)
    os.chmod(home, 0o755)
    config = sandbox.prepare(run_dir, args.jobs, nobody)
    config_path = os.path.join(run_dir, "config.json")
    with open(config_path, "w") as f:
        json.dump(config, f)
    cordon = Cordon(os.path.abspath(args.cordon), home, os.path.join(run_dir, "fixture"), nobody)

    cases = list(grammar.fixed_cases(skip)) + list(grammar.cases(args.seed, args.cases, skip))
    started = time.monotonic()
    workers = Workers(config_path, args.jobs)
    progress = Progress(len(cases))

    def one(case):
        request = {"argv": case.argv, "stdin": case.stdin, "traced": case.traced,
                   "timeout": args.timeout}
        result = workers.run(request)
        result.update(family=case.family, argv=case.argv, intent=case.intent, decisions={})
        if result["ran"] or args.check_all:
            result["decisions"] = {p: cordon.decision(p, case.argv) for p in policies}
        progress.tick(is_violation(result))
        return result

    try:
        with ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(one, cases))
    finally:
        workers.close()
    elapsed = time.monotonic() - started

    broken = harness_faults(results)
    report = summarize(results, elapsed, args)
    print_report(report, args.examples)
    if args.json:
        missed = [r for r in results if r["intent"] and r["intent"] not in r["ran"]]
        with open(args.json, "w") as f:
            json.dump({"summary": report, "violations": [r for r in results if is_violation(r)],
                       "missed": missed}, f, indent=1)
    if broken:
        print("\nHARNESS FAULT (no conclusion can be drawn):")
        for line in broken:
            print("  " + line)
        return 2
    return 1 if report["violations"] else 0


class Progress:
    def __init__(self, total):
        self.total, self.done, self.violations = total, 0, 0
        self.lock, self.started = threading.Lock(), time.monotonic()

    def tick(self, violation):
        with self.lock:
            self.done += 1
            self.violations += violation
            if self.done % 1000 == 0:
                rate = self.done / (time.monotonic() - self.started)
                print("%d/%d cases, %.0f/s, %d violations so far" % (
                    self.done, self.total, rate, self.violations), file=sys.stderr)


def harness_faults(results):
    """What the harness must see in the fixed cases, and did not."""
    faults = []
    expected = {("rm", "-f", "victim"): ("rm", {"log", "strace"}),
                ("touch", "t"): ("touch", {"log", "strace"}),
                ("git", "push"): ("git push", {"trace2"}),
                ("busybox", "rm", "victim"): ("rm", {"log", "strace"})}
    for r in results:
        want = expected.pop(tuple(r["argv"]), None)
        if want is not None:
            program, sources = want
            seen = set(r["ran"].get(program, []))
            if not sources <= seen:
                faults.append("%s: %s seen by %s, expected %s (output: %s)" % (
                    shlex.join(r["argv"]), program, sorted(seen), sorted(sources), r["output"]))
        if r["family"] == "plain" and r["intent"] is None and r["ran"]:
            faults.append("%s ran %s" % (shlex.join(r["argv"]), sorted(r["ran"])))
    faults += ["%s was not run" % shlex.join(k) for k in expected if k[0] != "busybox"]
    return faults


def is_violation(result):
    return bool(result["ran"]) and any(d == "run" for d in result["decisions"].values())


def summarize(results, elapsed, args):
    families = {}
    for r in results:
        f = families.setdefault(r["family"], {"cases": 0, "ran": 0, "violations": 0,
                                              "missed": 0, "control_ran": 0, "errors": 0})
        f["cases"] += 1
        f["ran"] += bool(r["ran"])
        f["violations"] += is_violation(r)
        f["missed"] += bool(r["intent"]) and r["intent"] not in r["ran"]
        f["control_ran"] += r["intent"] is None and bool(r["ran"])
        f["errors"] += any(d.startswith("error") for d in r["decisions"].values())
    violations = [r for r in results if is_violation(r)]
    by_policy = {}
    for r in violations:
        for policy, d in r["decisions"].items():
            by_policy[policy] = by_policy.get(policy, 0) + (d == "run")
    return {
        "seed": args.seed, "user": args.user, "cases": len(results),
        "ran": sum(bool(r["ran"]) for r in results),
        "violations": len(violations), "violations_by_policy": by_policy,
        "timed_out": sum(r["timed_out"] for r in results),
        "seconds": round(elapsed, 1), "families": families,
        "examples": examples(violations),
    }


def examples(violations):
    """The shortest violations of each family first."""
    per_family = {}
    for r in sorted(violations, key=lambda r: len(shlex.join(r["argv"]))):
        per_family.setdefault(r["family"], []).append(
            {"argv": r["argv"], "ran": r["ran"], "decisions": r["decisions"]})
    return per_family


def print_report(report, shown):
    print("\n%-15s %6s %6s %6s %6s %6s" % ("family", "cases", "ran", "VIOL", "missed",
                                          "ctl-ran"))
    for name, f in sorted(report["families"].items(), key=lambda kv: -kv[1]["violations"]):
        print("%-15s %6d %6d %6d %6d %6d" % (name, f["cases"], f["ran"], f["violations"],
                                             f["missed"], f["control_ran"]))
    print("\n%d cases (seed %d, as %s) in %.1f s: a stub ran in %d, cordon let %d of them run "
          "(by policy: %s); %d timed out" % (
              report["cases"], report["seed"], report["user"], report["seconds"],
              report["ran"], report["violations"], report["violations_by_policy"],
              report["timed_out"]))
    if not report["violations"]:
        return
    print("\nviolations (command | what ran | decisions):")
    for family, items in sorted(report["examples"].items()):
        for item in items[:shown]:
            ran = ", ".join("%s (%s)" % (p, "+".join(s)) for p, s in sorted(item["ran"].items()))
            decisions = " ".join("%s=%s" % kv for kv in item["decisions"].items())
            command = shlex.join(item["argv"]).replace("\n", "\\n")
            print("  [%s] %s | %s | %s" % (family, command, ran, decisions))


if __name__ == "__main__":
    sys.exit(main())

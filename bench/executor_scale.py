#!/usr/bin/env python3
"""What an executor call costs as the workspace grows.

A `cordon executor` started in a git repository holding N directories (100 per parent, three
levels deep, as bench/workspace_scale.sh makes them), `exec_command {"cmd": "true", "login":
false}`: the first call (it makes the server's index of the repositories in its writable roots)
and then the p50/p95 of the following calls, interleaved across the sizes in rounds so that the
rows compare; against `bash -c true` spawned by this script. Also the executor's RSS after the
calls (the index lives there) and how many directories one call's command can create before the
next call pays more than usual (a tree of 1,000 new directories, then a call).

Usage: python3 bench/executor_scale.py [path/to/cordon [ROUNDS [SIZES...]]]
       (default: target/release/cordon, 5 rounds of 40 calls, sizes 0 5000 50000)
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CORDON = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/cordon")
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
SIZES = [int(n) for n in sys.argv[3:]] or [0, 5000, 50000]
CALLS = 40


def make_tree(ws, n):
    subprocess.run(["git", "init", "-q", ws], check=True)
    for i in range(n):
        os.makedirs(os.path.join(ws, "src", f"m{i // 10000}", f"p{i // 100 % 100}", f"d{i % 100}"), exist_ok=True)


class Executor:
    def __init__(self, base, ws):
        # CORDON_HOME outside every writable root.
        self.home = tempfile.mkdtemp(prefix="home-", dir=base)
        env = dict(os.environ, CORDON_HOME=self.home)
        self.proc = subprocess.Popen([CORDON, "executor", "-C", ws], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env)
        self.next = 0

    def call(self, arguments):
        self.next += 1
        rid = f"b{self.next}"
        line = json.dumps({"type": "call_tool", "requestId": rid, "toolName": "exec_command", "arguments": arguments})
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            message = json.loads(self.proc.stdout.readline())
            if message.get("requestId") == rid:
                outcome = message["outcome"]
                if outcome["status"] != "success":
                    raise RuntimeError(outcome)
                return outcome["content"][0]["text"]

    def timed(self, arguments):
        start = time.perf_counter()
        text = self.call(arguments)
        elapsed = (time.perf_counter() - start) * 1000
        assert "Process exited with code 0" in text, text
        return elapsed, text

    def rss_mib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def main():
    base = tempfile.mkdtemp(prefix="cordon-bench-exscale-", dir="/var/tmp")
    try:
        true = {"cmd": "true", "login": False}
        servers, first = {}, {}
        for n in SIZES:
            ws = os.path.join(base, f"ws-{n}")
            make_tree(ws, n)
            servers[n] = Executor(base, ws)
            first[n], text = servers[n].timed(true)
            if "not searched" in text:
                print(f"{n:,} dirs: the call says it did not search everything")
        times = {n: [] for n in SIZES}
        bash = []
        for _ in range(ROUNDS):
            for n in SIZES:
                for _ in range(CALLS):
                    times[n].append(servers[n].timed(true)[0])
            for _ in range(CALLS):
                start = time.perf_counter()
                subprocess.run(["bash", "-c", "true"], check=True)
                bash.append((time.perf_counter() - start) * 1000)
        bash_p50 = statistics.median(bash)
        empty = statistics.median(times[SIZES[0]])
        print(f"bash -c true: p50 {bash_p50:.2f} ms")
        print("| directories | first call | p50 | p95 | over bash -c true | vs. the first size | executor RSS |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for n in SIZES:
            t = sorted(times[n])
            p50 = statistics.median(t)
            p95 = t[int(len(t) * 0.95) - 1]
            print(f"| {n:,} | {first[n]:.1f} ms | {p50:.2f} ms | {p95:.2f} ms | +{p50 - bash_p50:.2f} ms | "
                  f"{p50 / empty:.2f}x | {servers[n].rss_mib():.1f} MiB |")
        # A call whose command makes 1,000 directories, and the call after it.
        n = SIZES[-1]
        made, _ = servers[n].timed({"cmd": "mkdir -p new && cd new && mkdir $(seq -f d%g 1000)", "login": False})
        after, text = servers[n].timed(true)
        if "not searched" in text:
            print(f"{n:,} dirs: the call after it says it did not search everything")
        print(f"{n:,} dirs: a call making 1,000 directories {made:.1f} ms, the call after it {after:.2f} ms")
        for server in servers.values():
            server.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

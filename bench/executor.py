#!/usr/bin/env python3
"""Executor benchmarks (sessions and the JSON-lines protocol):

  (a) 100 sequential write_stdin "echo hi\\n" round trips in one live `bash -i` PTY session: p50, p95
  (b) 100 MB of output drained through a PTY session: throughput, executor peak RSS
  (c) 64 live PTY sessions: executor RSS, and per session over the idle executor
  (d) 1000 short exec_command calls: open fds and child processes before and after
  (e) exec_command {"cmd": "true", "login": false} round trip, p50 and p95 over 500 calls (after
      50 warm-up calls), against `bash -c true` spawned by this script (the overhead
      a sandboxed command costs in a live executor)

Usage: python3 bench/executor.py [path/to/cordon [a b c d e]]   (default: target/release/cordon, all)
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CORDON = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/cordon")


class Executor:
    def __init__(self):
        # CORDON_HOME must not lie inside a writable root (/tmp is one).
        self.home = tempfile.mkdtemp(prefix="cordon-bench-home-", dir="/var/tmp")
        self.work = tempfile.mkdtemp(prefix="cordon-bench-work-", dir="/var/tmp")
        env = dict(os.environ, CORDON_HOME=self.home)
        self.proc = subprocess.Popen(
            [CORDON, "executor", "-C", self.work],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
        )
        self.next = 0

    def call(self, tool, arguments):
        self.next += 1
        rid = f"b{self.next}"
        line = json.dumps({"type": "call_tool", "requestId": rid, "toolName": tool, "arguments": arguments})
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            message = json.loads(self.proc.stdout.readline())
            if message.get("requestId") == rid:
                outcome = message["outcome"]
                if outcome["status"] != "success":
                    raise RuntimeError(outcome)
                return outcome["content"][0]["text"]

    def status(self, key):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])  # kB
        return 0

    def fds(self):
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def children(self):
        count = 0
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    with open(f"/proc/{pid}/stat") as f:
                        if int(f.read().rsplit(")", 1)[1].split()[1]) == self.proc.pid:
                            count += 1
                except OSError:
                    pass
        return count

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def session_id(text):
    for line in text.splitlines():
        if line.startswith("Process running with session ID "):
            return int(line.rsplit(" ", 1)[1])
    raise RuntimeError(text)


def round_trips():
    ex = Executor()
    sid = session_id(ex.call("exec_command", {"cmd": "bash --norc -i", "tty": True, "login": False, "yield_time_ms": 5000}))
    times = []
    for _ in range(100):
        start = time.perf_counter()
        text = ex.call("write_stdin", {"session_id": sid, "chars": "echo hi\n", "yield_time_ms": 5000})
        times.append((time.perf_counter() - start) * 1000)
        assert "hi" in text, text
    ex.close()
    times.sort()
    print(f"(a) write_stdin 'echo hi' round trip: p50 {statistics.median(times):.1f} ms, "
          f"p95 {times[94]:.1f} ms, max {times[-1]:.1f} ms (target p50 <= 20 ms)")


def drain():
    ex = Executor()
    size = 100_000_000
    start = time.perf_counter()
    text = ex.call("exec_command", {"cmd": f"head -c {size} /dev/zero | tr '\\0' x", "tty": True, "login": False,
                                    "yield_time_ms": 30000, "max_output_tokens": 1000})
    while "Process exited" not in text:
        text = ex.call("write_stdin", {"session_id": session_id(text), "yield_time_ms": 30000, "max_output_tokens": 1000})
    elapsed = time.perf_counter() - start
    hwm = ex.status("VmHWM")
    ex.close()
    print(f"(b) drained {size / 1e6:.0f} MB through a PTY in {elapsed:.2f} s: {size / 1e6 / elapsed:.0f} MB/s; "
          f"executor peak RSS {hwm / 1024:.1f} MiB (target >= 100 MB/s, RSS bounded)")


def many_sessions():
    ex = Executor()
    ex.call("exec_command", {"cmd": "true", "login": False})
    base = ex.status("VmRSS")
    for i in range(64):
        session_id(ex.call("exec_command", {"cmd": f"exec sleep 1000.{i}", "tty": True, "login": False, "yield_time_ms": 250}))
    rss = ex.status("VmRSS")
    ex.close()
    each = (rss - base) / 64 / 1024
    print(f"(c) 64 live PTY sessions: executor RSS {rss / 1024:.1f} MiB (idle {base / 1024:.1f} MiB): "
          f"{each:.2f} MiB per session (target <= 2 MiB each)")


def many_calls():
    ex = Executor()
    ex.call("exec_command", {"cmd": "true", "login": False})
    before = (ex.fds(), ex.children())
    start = time.perf_counter()
    for i in range(1000):
        ex.call("exec_command", {"cmd": f"echo {i}", "login": False, "tty": i % 2 == 0})
    elapsed = time.perf_counter() - start
    time.sleep(0.3)
    after = (ex.fds(), ex.children())
    ex.close()
    print(f"(d) 1000 short exec_command calls in {elapsed:.1f} s ({elapsed:.2f} ms each): "
          f"fds {before[0]} -> {after[0]}, child processes {before[1]} -> {after[1]}")


def command_overhead():
    ex = Executor()
    for _ in range(50):
        ex.call("exec_command", {"cmd": "true", "login": False})
    sandboxed = []
    for _ in range(500):
        start = time.perf_counter()
        text = ex.call("exec_command", {"cmd": "true", "login": False})
        sandboxed.append((time.perf_counter() - start) * 1000)
        assert "exited with code 0" in text, text
    ex.close()
    bare = []
    for _ in range(500):
        start = time.perf_counter()
        subprocess.run(["bash", "-c", "true"], check=True)
        bare.append((time.perf_counter() - start) * 1000)
    sandboxed.sort()
    bare.sort()
    p50, base = statistics.median(sandboxed), statistics.median(bare)
    print(f"(e) exec_command 'true' round trip: p50 {p50:.2f} ms, p95 {sandboxed[474]:.2f} ms; "
          f"bash -c true spawned here: p50 {base:.2f} ms; overhead {p50 - base:.2f} ms "
          f"(target <= 0.8 ms)")


if __name__ == "__main__":
    only = sys.argv[2:] or ["a", "b", "c", "d", "e"]
    for name, run in [("a", round_trips), ("b", drain), ("c", many_sessions), ("d", many_calls),
                      ("e", command_overhead)]:
        if name in only:
            run()

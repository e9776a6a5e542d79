#!/usr/bin/env python3
"""Remote executor round trip: what ssh adds once the connection is up.

  200 sequential `exec_command {"cmd": "true", "login": false}` calls, each timed from the
  request written to the result read, over
    (a) `cordon executor` on this machine,
    (b) `cordon executor --connect root@127.0.0.1:PORT` through a control master: this cordon
        decides (rules, approval policy) and sends the resolved form over the ssh channel to
        `cordon executor --serve-remote` on the "remote" (a throwaway sshd on loopback);
    (c) the same without a control master (one ssh connection of its own).
  Rounds alternate (a), (b), (c) so that machine load drifts over all three alike. Prints p50
  and p95 of each and the difference (b) - (a), the goal being <= 2 ms at p50, plus the time
  `--connect` takes to its first answer with and without the master.

Needs root (it starts sshd on a free loopback port with a throwaway host key and authorized
key, like tests/suite/remote.rs) and Debian's openssh-server.

Usage: sudo python3 bench/remote.py [path/to/cordon] [--json FILE]
       (default: target/release/cordon; build it with `cargo build --release`)
"""
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

args = [a for a in sys.argv[1:] if not a.startswith("--json")]
JSON_OUT = None
if "--json" in sys.argv:
    JSON_OUT = sys.argv[sys.argv.index("--json") + 1]
    args = [a for a in args if a != JSON_OUT]
CORDON = os.path.abspath(args[0] if args else "target/release/cordon")
CALLS = 200
ROUNDS = 4
ARGUMENTS = {"cmd": "true", "login": False}
SSHD = "/usr/sbin/sshd"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Sshd:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="cordon-bench-sshd-")
        os.chmod(self.dir, 0o755)
        for name in ("host_key", "client_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                            os.path.join(self.dir, name)], check=True)
        shutil.copy(os.path.join(self.dir, "client_key.pub"), os.path.join(self.dir, "authorized_keys"))
        os.makedirs("/run/sshd", exist_ok=True)
        self.port = free_port()
        config = os.path.join(self.dir, "sshd_config")
        with open(config, "w") as f:
            f.write(f"ListenAddress 127.0.0.1\nPort {self.port}\n"
                    f"HostKey {self.dir}/host_key\nAuthorizedKeysFile {self.dir}/authorized_keys\n"
                    "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
                    "StrictModes no\nPermitRootLogin prohibit-password\nPidFile none\nLogLevel ERROR\n")
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", config],
                                     stderr=open(os.path.join(self.dir, "sshd.log"), "w"))
        deadline = time.time() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.02)
        self.control_path = os.path.join(self.dir, "cm")

    def options(self, master):
        opts = ["StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null",
                f"IdentityFile={self.dir}/client_key", "IdentitiesOnly=yes", "BatchMode=yes",
                "LogLevel=ERROR"]
        if master:
            opts += ["ControlMaster=no", f"ControlPath={self.control_path}"]
        return opts

    def start_master(self):
        opts = self.options(False) + ["ControlMaster=yes", f"ControlPath={self.control_path}",
                                      "ControlPersist=600"]
        cmd = ["ssh", "-N", "-f", "-p", str(self.port)]
        for o in opts:
            cmd += ["-o", o]
        subprocess.run(cmd + ["root@127.0.0.1"], check=True)

    def stop(self):
        subprocess.run(["ssh", "-o", f"ControlPath={self.control_path}", "-O", "exit",
                        "root@127.0.0.1"], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class Executor:
    def __init__(self, extra, work, home):
        started = time.perf_counter()
        self.proc = subprocess.Popen([CORDON, "executor", "-C", work] + extra,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env=dict(os.environ, CORDON_HOME=home))
        self.send({"type": "list_tools", "requestId": "hello"})
        self.read_until("hello")
        self.ready_ms = (time.perf_counter() - started) * 1000

    def send(self, message):
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def read_until(self, rid):
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit("the executor closed its stdout")
            message = json.loads(line)
            if message.get("requestId") == rid:
                return message

    def calls(self, n, tag):
        times = []
        for i in range(n + 5):
            rid = f"{tag}{i}"
            start = time.perf_counter()
            self.send({"type": "call_tool", "requestId": rid, "toolName": "exec_command",
                       "arguments": ARGUMENTS})
            message = self.read_until(rid)
            elapsed = (time.perf_counter() - start) * 1000
            assert message["outcome"]["status"] == "success", message
            assert "Process exited with code 0" in message["outcome"]["content"][0]["text"], message
            if i >= 5:  # warm-up
                times.append(elapsed)
        return times

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=20)


def summary(name, times):
    times = sorted(times)
    p50 = statistics.median(times)
    p95 = times[int(len(times) * 0.95) - 1]
    print(f"{name:<48} p50 {p50:6.2f} ms   p95 {p95:6.2f} ms   ({len(times)} calls)")
    return {"p50_ms": round(p50, 3), "p95_ms": round(p95, 3), "calls": len(times)}


def main():
    if os.geteuid() != 0:
        raise SystemExit("run as root: the benchmark starts a throwaway sshd")
    sshd = Sshd()
    home = tempfile.mkdtemp(prefix="cordon-bench-home-", dir="/var/tmp")
    work = tempfile.mkdtemp(prefix="cordon-bench-work-", dir="/var/tmp")
    os.chmod(work, 0o777)
    host = f"root@127.0.0.1:{sshd.port}"

    def remote(master):
        extra = ["--connect", host, "--remote-cordon", CORDON]
        for o in sshd.options(master):
            extra += ["--ssh-option", o]
        return extra

    try:
        sshd.start_master()
        times = {"local": [], "master": [], "direct": []}
        ready = {"local": [], "master": [], "direct": []}
        per_round = CALLS // ROUNDS
        for r in range(ROUNDS):
            for name, extra in (("local", []), ("master", remote(True)), ("direct", remote(False))):
                ex = Executor(extra, work, home)
                ready[name].append(ex.ready_ms)
                times[name] += ex.calls(per_round, f"{name}{r}-")
                ex.close()
        load = open("/proc/loadavg").read().split()[:3]
        print(f"machine: {os.cpu_count()} CPUs, {os.uname().release}, load {' '.join(load)}")
        print(f"exec_command {json.dumps(ARGUMENTS)}, sequential, {CALLS} calls each "
              f"({ROUNDS} interleaved rounds)")
        results = {
            "local": summary("(a) cordon executor (local)", times["local"]),
            "ssh_control_master": summary("(b) --connect over ssh, control master", times["master"]),
            "ssh_own_connection": summary("(c) --connect over ssh, own connection", times["direct"]),
        }
        added = results["ssh_control_master"]["p50_ms"] - results["local"]["p50_ms"]
        added95 = results["ssh_control_master"]["p95_ms"] - results["local"]["p95_ms"]
        print(f"ssh adds (b - a): p50 {added:+.2f} ms, p95 {added95:+.2f} ms (goal: <= 2 ms at p50)")
        for name, label in (("master", "with control master"), ("direct", "own connection")):
            print(f"--connect ready (hello + list_tools), {label}: "
                  f"median {statistics.median(ready[name]):.1f} ms")
        results["added_p50_ms"] = round(added, 3)
        results["ready_ms"] = {k: round(statistics.median(v), 1) for k, v in ready.items()}
        if JSON_OUT:
            with open(JSON_OUT, "w") as f:
                json.dump(results, f, indent=2)
    finally:
        sshd.stop()
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


main()

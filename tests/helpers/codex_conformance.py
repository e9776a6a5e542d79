#!/usr/bin/env python3
"""Conformance of cordon's `codex-linux-sandbox` with the real Codex's helper protocol.

For each Codex profile (workspace-write, read-only, network on), runs `codex sandbox` under
`strace -f -e execve`, takes the exact argv Codex gives its Linux helper, and replays it with
each helper in its place — Codex's own (its binary under the name `codex-linux-sandbox`) and
cordon's — running probe commands instead of the captured one. Each probe's effect is checked
from outside (the file on disk, the listener that got a connection, what was printed). The two
helpers must agree, except where DIFFERENCES says how cordon differs, and then cordon must show
exactly that outcome.

Usage: codex_conformance.py --cordon BIN --codex NODE_MODULES_BIN_CODEX [--json FILE]
Exit 0 when everything agrees, 1 on a mismatch, 3 when the check cannot run here (first line
says why). Standard library only.
"""

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

CODEX_VERSION = "0.169.0"

# The profiles: `codex sandbox` arguments and a name.
PROFILES = {
    "workspace-write": ["-P", ":workspace"],
    "read-only": ["-P", ":read-only"],
    "network-on": [
        "-c", 'permissions.net.extends=":workspace"',
        "-c", "permissions.net.network.enabled=true",
        "-P", "net",
    ],
}

# (profile, probe) -> (cordon's outcome, why). Every other pair must match Codex exactly.
DIFFERENCES = {
    # A missing read-only name: Codex's helper mounts an empty read-only directory there (with a
    # placeholder on the host while the command runs); cordon's helper leaves nothing on the
    # host, lets the command create it and moves it aside when the command ends. Seen from
    # outside after the run, both leave no such name: the probes agree.
    # cordon hides credential stores; Codex's helper does not.
    ("workspace-write", "read-ssh-key"): ("no", "cordon hides ~/.ssh"),
    ("read-only", "read-ssh-key"): ("no", "cordon hides ~/.ssh"),
    ("network-on", "read-ssh-key"): ("no", "cordon hides ~/.ssh"),
    # With the network off, cordon's helper gives the command a network namespace of its own
    # with only loopback (a test suite's local server works; nothing leaves); Codex's refuses
    # IP sockets. Both leave the host's loopback out of reach (connect-host-loopback agrees).
    ("workspace-write", "listen-on-loopback-inside"): ("yes", "cordon's network off has a loopback"),
    ("read-only", "listen-on-loopback-inside"): ("yes", "cordon's network off has a loopback"),
}


def cannot_run(reason):
    print(f"codex conformance cannot run here: {reason}")
    sys.exit(3)


def decode_strace_hex(text):
    """A string strace printed with -xx: every byte as \\xNN."""
    return bytes(int(h, 16) for h in re.findall(r"\\x([0-9a-f]{2})", text)).decode(
        "utf-8", "surrogateescape")


def helper_argv(trace_path):
    """The first helper invocation Codex made (not its own inner stage): argv after argv[0]."""
    with open(trace_path, encoding="latin-1") as trace:
        for line in trace:
            if "execve(" not in line or "= 0" not in line:
                continue
            match = re.search(r'execve\("([^"]*)", \[(.*)\], ', line)
            if not match:
                continue
            args = [decode_strace_hex(a) for a in re.findall(r'"((?:\\x[0-9a-f]{2})*)"', match.group(2))]
            if not args or os.path.basename(args[0]) != "codex-linux-sandbox":
                continue
            if "--permission-profile" in args and "--apply-seccomp-then-exec" not in args:
                return args[1:]
    return None


class Listener:
    """A TCP listener on host loopback that counts connections."""

    def __init__(self, address="127.0.0.1"):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind((address, 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.stop = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
                self.connections += 1
                conn.close()
            except OSError:
                continue

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()


def probes(scratch, ws, listener):
    """name -> (shell command run inside, function reading the outcome from outside)."""
    outside = os.path.join(scratch, "outside")
    home = os.path.join(scratch, "home")
    tmpdir = os.path.join(scratch, "tmpdir")
    marker = os.path.basename(scratch)
    exists = lambda path: (lambda run: "yes" if os.path.lexists(path) else "no")  # noqa: E731
    printed = lambda text: (lambda run: "yes" if text in run.stdout else "no")  # noqa: E731
    connected = lambda run: "yes" if listener.connections else "no"  # noqa: E731
    connect = ("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected; exec 3>&-" % listener.port)
    listen_inside = (
        "python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen(); "
        "print(\"listening\")'")
    return {
        "write-inside": ("echo x > probe-inside", exists(os.path.join(ws, "probe-inside"))),
        "write-outside": ("echo x > %s/probe" % outside, exists(os.path.join(outside, "probe"))),
        "write-git-dir": ("touch .git/probe", exists(os.path.join(ws, ".git", "probe"))),
        "write-git-object": ("mkdir -p .git/objects/zz && touch .git/objects/zz/probe",
                             exists(os.path.join(ws, ".git", "objects", "zz", "probe"))),
        "read-git-head": ("cat .git/HEAD", printed("ref: refs/heads/")),
        "create-missing-read-only-entry": ("mkdir .agents", exists(os.path.join(ws, ".agents"))),
        "create-missing-codex-dir": ("mkdir .codex", exists(os.path.join(ws, ".codex"))),
        "write-slash-tmp": ("echo x > /tmp/%s-probe" % marker,
                            exists("/tmp/%s-probe" % marker)),
        "write-tmpdir": ("echo x > %s/probe" % tmpdir, exists(os.path.join(tmpdir, "probe"))),
        "read-ssh-key": ("cat %s/.ssh/id_ed25519" % home, printed("PRIVATE-KEY-MARKER")),
        "connect-host-loopback": (connect, connected),
        "listen-on-loopback-inside": (listen_inside, printed("listening")),
    }


def reset(scratch, ws):
    for path in [os.path.join(ws, "probe-inside"), os.path.join(scratch, "outside", "probe"),
                 os.path.join(ws, ".git", "probe"), os.path.join(scratch, "tmpdir", "probe"),
                 "/tmp/%s-probe" % os.path.basename(scratch)]:
        if os.path.lexists(path):
            os.unlink(path)
    for path in [os.path.join(ws, ".agents"), os.path.join(ws, ".codex"),
                 os.path.join(ws, ".git", "objects", "zz")]:
        shutil.rmtree(path, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cordon", required=True)
    parser.add_argument("--codex", required=True)
    parser.add_argument("--json")
    args = parser.parse_args()
    for tool in ["strace", "bwrap", "git", "python3"]:
        if not shutil.which(tool):
            cannot_run(f"{tool} is not installed (bash tests/setup.sh installs it)")
    if not os.path.exists(args.codex):
        cannot_run(f"the Codex CLI is not installed at {args.codex} (bash tests/setup.sh)")
    version = subprocess.run([args.codex, "--version"], capture_output=True, text=True).stdout
    if CODEX_VERSION not in version:
        cannot_run(f"expected codex-cli {CODEX_VERSION}, found {version.strip()!r}")

    scratch = tempfile.mkdtemp(prefix="cordon-codex-", dir="/var/tmp")
    try:
        return run(args, scratch, version.strip())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run(args, scratch, version):
    ws = os.path.join(scratch, "ws")
    for sub in ["ws", "outside", "home/.ssh", "tmpdir", "codex-home", "cordon-home",
                "codex-helper", "cordon-helper"]:
        os.makedirs(os.path.join(scratch, sub))
    with open(os.path.join(scratch, "home/.ssh/id_ed25519"), "w") as key:
        key.write("PRIVATE-KEY-MARKER\n")
    subprocess.run(["git", "init", "-q", ws], check=True)
    env = dict(os.environ, HOME=os.path.join(scratch, "home"), TMPDIR=os.path.join(scratch, "tmpdir"),
               CODEX_HOME=os.path.join(scratch, "codex-home"),
               CORDON_HOME=os.path.join(scratch, "cordon-home"), NO_COLOR="1")
    native = None
    results = []
    mismatches = []
    for profile, profile_args in PROFILES.items():
        trace = os.path.join(scratch, f"trace-{profile}")
        run_codex = subprocess.run(
            ["strace", "-f", "-qq", "-xx", "-s", "1000000", "-e", "trace=execve", "-o", trace,
             args.codex, "sandbox", *profile_args, "-C", ws, "--", "/bin/true"],
            env=env, capture_output=True, text=True, timeout=120)
        argv = helper_argv(trace)
        if argv is None:
            print(f"{profile}: codex sandbox ran no helper (exit {run_codex.returncode}): "
                  f"{run_codex.stderr.strip()[:500]}")
            return 1
        if native is None:
            with open(trace, encoding="latin-1") as text:
                for line in text:
                    found = re.search(r'execve\("((?:\\x[0-9a-f]{2})*)"', line)
                    path = found and decode_strace_hex(found.group(1))
                    if path and path.endswith("/codex-linux-sandbox"):
                        native = os.path.realpath(path)
                        break
            os.symlink(native, os.path.join(scratch, "codex-helper", "codex-linux-sandbox"))
            os.symlink(os.path.realpath(args.cordon),
                       os.path.join(scratch, "cordon-helper", "codex-linux-sandbox"))
        separator = argv.index("--")
        flags = argv[:separator]
        print(f"{profile}: Codex passes {' '.join(a if len(a) < 80 else a[:77] + '...' for a in flags)}")
        listener = Listener()
        try:
            for name, (script, outcome) in probes(scratch, ws, listener).items():
                row = {"profile": profile, "probe": name}
                for helper in ["codex", "cordon"]:
                    reset(scratch, ws)
                    listener.connections = 0
                    exe = os.path.join(scratch, f"{helper}-helper", "codex-linux-sandbox")
                    done = subprocess.run([exe, *flags, "--", "/bin/bash", "-c", script],
                                          cwd=ws, env=env, capture_output=True, text=True,
                                          timeout=60)
                    # Give the listener's accept loop a moment to count a connection.
                    threading.Event().wait(0.3)
                    row[helper] = outcome(done)
                    row[f"{helper}_exit"] = done.returncode
                    if done.returncode == 125:
                        row[f"{helper}_error"] = done.stderr.strip()[:300]
                reset(scratch, ws)
                expected = DIFFERENCES.get((profile, name))
                want = expected[0] if expected else row["codex"]
                row["expected_cordon"] = want
                if expected:
                    row["difference"] = expected[1]
                ok = row["cordon"] == want and row.get("cordon_exit") != 125
                print(f"  {name:32} codex={row['codex']:3} cordon={row['cordon']:3} "
                      f"{'ok' if ok else 'MISMATCH'}"
                      + (f" ({expected[1]})" if expected else "")
                      + (f" [{row['cordon_error']}]" if "cordon_error" in row else ""))
                if not ok:
                    mismatches.append(row)
                results.append(row)
        finally:
            listener.close()
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"codex": version, "results": results}, out, indent=1)
    print(f"codex conformance ({version}): {len(results)} checks, {len(mismatches)} mismatches")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())

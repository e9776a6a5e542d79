#!/usr/bin/env python3
"""Remote deadlines: how long `cordon exec --host` takes to give up on a far end that misbehaves,
and how much memory a flooding far end costs it.

No network: a stand-in ssh (tests/helpers/stand_in_ssh.py, the one the remote tests use) runs
`cordon executor --serve-remote` on this machine, or misbehaves in its place:

  mute, --timeout 2s     the far end never answers the hello   (expect 125 after ~2 s)
  mute                   the same without --timeout            (expect 125 after ~10 s)
  freeze, --timeout 3s   silent after the command started      (expect 124 after ~3 s)
  deaf                   silent after the hello, no --timeout  (expect 125 after ~31 s; --deaf)
  flood                  300 MB without a newline              (expect 125, peak RSS < 64 MiB)

Each case runs --rounds times (default 3); it prints the exit status seen, the median and the
range of the wall time, and for the flood the peak resident size of cordon and the stand-in
(RUSAGE_CHILDREN). Every run is killed with its process group after 120 s.

Usage: python3 bench/remote_deadlines.py [path/to/cordon] [--rounds N] [--deaf]
       (default: target/release/cordon; `cargo build --release`)
"""
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STAND_IN = os.path.join(HERE, "..", "tests", "helpers", "stand_in_ssh.py")
LIMIT = 120

argv = sys.argv[1:]
ROUNDS = 3
if "--rounds" in argv:
    i = argv.index("--rounds")
    ROUNDS = int(argv[i + 1])
    del argv[i : i + 2]
DEAF = "--deaf" in argv
argv = [a for a in argv if a != "--deaf"]
CORDON = os.path.abspath(argv[0] if argv else "target/release/cordon")


def stand_in(scratch):
    ssh = os.path.join(scratch, "ssh")
    with open(ssh, "w") as f:
        f.write(f'#!/bin/sh\nexec {sys.executable} {os.path.abspath(STAND_IN)} "$@"\n')
    os.chmod(ssh, 0o755)
    return ssh


def run(ssh, scratch, mode, args):
    """One run: (exit status, seconds, peak RSS of the children in KiB)."""
    command = [CORDON, "exec", "--host", "far", "--ssh-program", ssh, "--remote-cordon", CORDON,
               *args]
    env = dict(os.environ, CORDON_HOME=os.path.join(scratch, "home"), STAND_IN_SSH_MODE=mode)
    # Measured in a child of our own, so that RUSAGE_CHILDREN is this run's alone.
    probe = (
        "import resource, subprocess, sys, time, os, signal\n"
        "t = time.monotonic()\n"
        "p = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,"
        " stderr=subprocess.DEVNULL, start_new_session=True)\n"
        "try:\n    code = p.wait(timeout=float(sys.argv[1]))\n"
        "except subprocess.TimeoutExpired:\n    code = 'killed'\n"
        "took = time.monotonic() - t\n"
        "try:\n    os.killpg(p.pid, signal.SIGKILL)\nexcept ProcessLookupError:\n    pass\n"
        "p.wait()\n"
        "print(code, took, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, str(LIMIT), *command], env=env,
                         capture_output=True, text=True, check=True)
    code, took, rss = out.stdout.split()
    return code, float(took), int(rss)


CASES = [
    ("mute, --timeout 2s", "mute", ["--timeout", "2s", "-C", "/var/tmp", "--", "true"]),
    ("mute", "mute", ["-C", "/var/tmp", "--", "true"]),
    ("freeze, --timeout 3s", "freeze", ["--timeout", "3s", "-C", "/var/tmp", "--", "sleep", "30"]),
    ("flood (300 MB, no newline)", "flood",
     ["-s", "danger-full-access", "-C", "/var/tmp", "--", "true"]),
]
if DEAF:
    CASES.append(("deaf after hello", "deaf", ["-s", "danger-full-access", "-C", "/var/tmp", "--",
                                                "true"]))


def main():
    print(f"cordon: {CORDON}; {ROUNDS} round(s) per case; stand-in ssh, no network")
    with tempfile.TemporaryDirectory(prefix="cordon-bench-remote-", dir="/var/tmp") as scratch:
        ssh = stand_in(scratch)
        for name, mode, args in CASES:
            results = [run(ssh, scratch, mode, args) for _ in range(ROUNDS)]
            codes = sorted({code for code, _, _ in results})
            times = [took for _, took, _ in results]
            line = (f"{name:30} exit {','.join(codes):8} median {statistics.median(times):6.2f} s"
                    f"  range {min(times):.2f}-{max(times):.2f} s")
            if mode == "flood":
                line += f"  peak RSS {max(r for _, _, r in results) / 1024:.1f} MiB"
            print(line, flush=True)


if __name__ == "__main__":
    main()

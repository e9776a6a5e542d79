"""A stand-in for the ssh client in the remote tests: no network, the remote command runs on
this machine (`sh -c` of the last argument, as sshd would run it), and the far end misbehaves
as the environment says. cordon runs it as `--ssh-program` (through a small shell script).

  STAND_IN_SSH_MODE   pass (default): relay both ways
                      mute: never answer (the far end never starts)
                      freeze: relay until the first answer to exec_resolved, then nothing more
                        either way, with the connection held open (a silent partition)
                      flood: relay until the hello's answer, then 300 MB without a newline
                      no-doctor: relay, with the hello's doctor report stripped of its modes
                      chatter: relay until the hello's answer, then a million lines that are
                        not the protocol
                      deaf: relay until the hello's answer, then nothing more either way
  STAND_IN_SSH_LOG    a file: one JSON line per run with the arguments (ssh -G runs too)
  STAND_IN_SSH_G      what `ssh -G` prints (default: ssh's defaults for the keepalive)
"""

import json
import os
import subprocess
import sys
import threading
import time

FLOOD_BYTES = 300 * 1024 * 1024


def log(argv):
    path = os.environ.get("STAND_IN_SSH_LOG")
    if path:
        with open(path, "a") as out:
            out.write(json.dumps(argv) + "\n")


def hold():
    # Neither reads nor writes: what a frozen connection looks like to both sides.
    while True:
        time.sleep(3600)


def relay_input(child, frozen):
    for line in sys.stdin.buffer:
        if frozen.is_set():
            return
        child.stdin.write(line)
        child.stdin.flush()
    child.stdin.close()


def main():
    argv = sys.argv[1:]
    log(argv)
    if "-G" in argv:
        sys.stdout.write(os.environ.get(
            "STAND_IN_SSH_G", "user root\nserveraliveinterval 0\nserveralivecountmax 3\n"))
        return 0
    mode = os.environ.get("STAND_IN_SSH_MODE", "pass")
    if mode == "mute":
        hold()
    child = subprocess.Popen(["sh", "-c", argv[-1]], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    frozen = threading.Event()
    threading.Thread(target=relay_input, args=(child, frozen), daemon=True).start()
    out = sys.stdout.buffer
    for line in child.stdout:
        if mode == "no-doctor" and b'"hello_response"' in line:
            hello = json.loads(line)
            hello["doctor"] = {"kernel": hello["doctor"].get("kernel")}
            line = (json.dumps(hello) + "\n").encode()
        out.write(line)
        out.flush()
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if mode == "deaf" and message.get("type") == "hello_response":
            frozen.set()
            hold()
        if mode == "chatter" and message.get("type") == "hello_response":
            for _ in range(1000):
                out.write(b"not the protocol\n" * 1000)
            out.flush()
            hold()
        if mode == "flood" and message.get("type") == "hello_response":
            chunk = b"x" * (1024 * 1024)
            for _ in range(FLOOD_BYTES // len(chunk)):
                out.write(chunk)
            out.flush()
            hold()
        result = message.get("outcome", {}).get("result", {})
        if mode == "freeze" and result.get("sessionId") is not None:
            frozen.set()
            hold()
    return child.wait()


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        # cordon closed the link (what a flood is meant to make it do): ssh would just end.
        os._exit(255)

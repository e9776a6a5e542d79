"""Runs argv[2:] on a new pseudo-terminal and answers cordon's approval prompts.

argv[1]: comma-separated answers, typed one per prompt (a prompt is output ending in ">").
Prints the terminal transcript (answers marked " <answered>") and exits with the child's status.
"""
import os, pty, sys, time
answers = sys.argv[1].split(",") if sys.argv[1] else []
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
out = b""
deadline = time.time() + 150  # a slow ssh login (start-up files) can take a minute
while time.time() < deadline:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
    if answers and out.rstrip().endswith(b">"):
        # cordon discards input typed before its question: give it time to finish asking.
        time.sleep(0.3)
        os.write(fd, answers.pop(0).encode() + b"\n")
        out += b" <answered>\n"
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(status) & 0xff)

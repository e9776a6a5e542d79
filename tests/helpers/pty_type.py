"""Runs argv[2:] on a new pseudo-terminal (as its controlling terminal, like a shell would),
types argv[1] after half a second (Python escapes allowed: \\x03 is Ctrl-C), prints the
transcript and exits with the child's status."""
import os, pty, sys, time

pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
typed = sys.argv[1].encode().decode("unicode_escape").encode()
out = b""
start = time.time()
sent = False
while time.time() - start < 20:
    if not sent and time.time() - start > 0.5:
        os.write(fd, typed)
        sent = True
    try:
        import select
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            out += chunk
    except OSError:
        break
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
else:
    status = 0
if not done:
    _, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(status) & 0xFF)

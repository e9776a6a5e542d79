"""Runs argv[2:] on a new pseudo-terminal (as its controlling terminal, like a shell would),
types argv[1] once the transcript shows the text in $PTY_TYPE_AFTER (or after half a second when
it is unset), prints the transcript and exits with the child's status; with $PTY_OWNER the
terminal is handed to that uid first. Python escapes are allowed in argv[1]: \\x03 is Ctrl-C.

Waiting for a marker the command prints, rather than a fixed delay, keeps the test meaningful on
a slow machine (a VM under software emulation): typed too early, Ctrl-C would reach cordon
before the command held the terminal."""
import os, pty, select, signal, sys, time

after = os.environ.get("PTY_TYPE_AFTER", "").encode()
pid, fd = pty.fork()
if pid == 0:
    # A terminal's job gets the keyboard's signals: started in the background (`cmd &`,
    # `nohup`), this helper inherited SIGINT and SIGQUIT ignored, which would pass on to the
    # command and make Ctrl-C do nothing.
    for number in (signal.SIGINT, signal.SIGQUIT):
        signal.signal(number, signal.SIG_DFL)
    # The terminal belongs to the user the command runs as, as a login's does.
    if os.environ.get("PTY_OWNER"):
        os.fchown(0, int(os.environ["PTY_OWNER"]), -1)
    os.execv(sys.argv[2], sys.argv[2:])
typed = sys.argv[1].encode().decode("unicode_escape").encode()


def read_some(timeout):
    """What the terminal has within timeout: bytes, b"" when nothing came, None at its end."""
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            return b""
        return os.read(fd, 4096) or None
    except OSError:
        return None


out = b""
start = time.time()
sent = False
done = 0
while time.time() - start < 120:
    if not sent and ((after and after in out) or (not after and time.time() - start > 0.5)):
        os.write(fd, typed)
        sent = True
    chunk = read_some(0.05)
    if chunk is None:
        break
    out += chunk
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
if not done:
    os.kill(pid, 9)
    _, status = os.waitpid(pid, 0)
# The child has exited: what it wrote last may still sit in the terminal; read it all (EIO or
# a quiet half second ends it), or the transcript would end early under load.
while True:
    chunk = read_some(0.5)
    if not chunk:
        break
    out += chunk
sys.stdout.write(out.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(status) & 0xFF)

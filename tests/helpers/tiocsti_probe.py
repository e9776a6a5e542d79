# Tries to push "echo INJECTED" into the terminal on stdin and on /dev/tty with TIOCSTI and
# prints what happened for each. Run with `python3 -c` (the e2e tests include this text).
import fcntl, os, termios
for fd in (0, os.open("/dev/tty", os.O_RDWR)):
    try:
        for c in b"echo INJECTED\n":
            fcntl.ioctl(fd, termios.TIOCSTI, bytes([c]))
        print("injected via", fd)
    except OSError as e:
        print("refused", fd, e.errno)

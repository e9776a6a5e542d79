"""Wrappers: programs that run the command after their own options, spelled as their real
option grammars allow (clustered short options, values attached or apart, GNU optional values,
long options with `=`).

Each wrapper is a function `(rng, argv) -> Wrapped`: the argv that runs `argv` through it, plus
the standard input the wrapper needs to run it at all (`xargs` runs its command once per item).
"""

import shlex
from dataclasses import dataclass


@dataclass
class Wrapped:
    argv: list
    stdin: str = ""


def _prefix(name, spellings):
    def wrap(rng, argv):
        return Wrapped([name, *rng.choice(spellings), *argv])

    return wrap


ENV_OPTIONS = [
    [], ["-i"], ["-"], ["--ignore-environment"], ["-u", "HOME"], ["-uHOME"], ["--unset=HOME"],
    ["--unset", "HOME"], ["A=1"], ["A=1", "B=2"], ["-C", "."], ["-C."], ["--chdir=."],
    ["-i", "PATH=/usr/bin:/bin"], ["-iuHOME"], ["--default-signal=PIPE"],
    ["--ignore-signal=INT"], ["--block-signal=INT"], ["-v"], ["--debug"], ["--"],
    ["-u", "A", "--", "B=1"],
]

NICE_OPTIONS = [
    [], ["-n", "5"], ["-n5"], ["-5"], ["--adjustment=5"], ["--adjustment", "5"], ["-n", "-5"],
    ["-n19"], ["-n", "+3"], ["--"], ["-n", "1", "--"],
]

TIMEOUT_OPTIONS = [
    [], ["-s", "KILL"], ["-sKILL"], ["-s", "9"], ["--signal=TERM"], ["--signal", "HUP"],
    ["-k", "1"], ["-k1"], ["--kill-after=1"], ["--foreground"], ["--preserve-status"], ["-v"],
    ["--verbose"], ["-k", "5s", "-s", "INT"],
]
TIMEOUT_DURATIONS = ["10", "10s", "1m", "2.5", "1d", "0.5m", "30s", "0"]

STDBUF_OPTIONS = [
    ["-oL"], ["-o", "L"], ["-i0"], ["-e", "0"], ["--output=L"], ["-oL", "-eL"], ["--error=0"],
    ["-o0", "-i0"], ["-o", "1K"], ["--input", "0"],
]

SETSID_OPTIONS = [[], ["-w"], ["--wait"], ["-f", "-w"], ["-fw"], ["--fork", "--wait"]]

IONICE_OPTIONS = [
    ["-c2", "-n7"], ["-c", "3"], ["-c", "2", "-n", "0"], ["--class", "idle"],
    ["--class", "best-effort", "--classdata", "4"], ["-c1"], ["-t", "-c", "1"], ["-n", "3"],
    ["-c", "realtime", "-n2"], ["-tc3"],
]

TASKSET_OPTIONS = [
    ["0x1"], ["1"], ["-c", "0"], ["--cpu-list", "0"], ["-c", "0-1"], ["0x3"], ["ff"],
    ["--cpu-list", "0,1"], ["-c", "--", "0"],
]

CHRT_OPTIONS = [
    ["-o", "0"], ["-r", "1"], ["-f", "1"], ["-b", "0"], ["-i", "0"], ["--other", "0"], ["1"],
    ["--rr", "2"], ["--fifo", "1"], ["-R", "-r", "1"], ["--batch", "0"], ["--idle", "0"],
    ["-v", "-o", "0"],
]

FLOCK_OPTIONS = [
    [], ["-x"], ["-s"], ["-w", "1"], ["-w1"], ["-n"], ["-E", "3"], ["--timeout=1"], ["-o"],
    ["--close"], ["-e"], ["-F"], ["--verbose"], ["-xn"],
]
# In the case's own directory: a lock elsewhere may be held by another case or process.
FLOCK_TARGETS = ["lockf", ".", "./file.txt"]

SETPRIV_OPTIONS = [
    ["--reuid=0"], ["--reuid=0", "--regid=0", "--clear-groups"], ["--inh-caps=-all"],
    ["--no-new-privs"], ["--nnp"], ["--reset-env"], ["--ruid", "0"], ["--euid", "0"],
    ["--reuid", "root"], ["--rgid=0", "--egid=0", "--groups=0"], ["--pdeathsig", "clear"],
    ["--bounding-set=-all"], ["--keep-groups"], ["--"],
]

UNSHARE_OPTIONS = [
    [], ["-m"], ["--mount"], ["-u"], ["--uts"], ["-i"], ["-n"], ["--net"], ["-p", "-f"],
    ["-pf"], ["--fork", "--pid", "--mount-proc"], ["-U", "-r"], ["-Ur"],
    ["--user", "--map-root-user"], ["-C"], ["-T"], ["-m", "--propagation", "private"], ["-f"],
    ["--kill-child"], ["-r"], ["--setuid", "0"], ["-S", "0", "-G", "0"], ["-w", "."],
    ["--wd=."], ["-R", "/"], ["--"],
]

TIME_OPTIONS = [
    [], ["-p"], ["-f", "%e"], ["--format=%e"], ["-o", "/dev/null"], ["-q"], ["-v"],
    ["-a", "-o", "tout"], ["--portability"], ["--"],
]

STRACE_OPTIONS = [
    ["-f", "-qq", "-o", "/dev/null"], ["-o", "/dev/null"], ["-qq", "-e", "trace=none", "-o",
                                                            "/dev/null"],
    ["-c", "-o", "/dev/null"], ["-e", "signal=none", "-o", "/dev/null"], ["--output=/dev/null"],
    ["-f", "-e", "execve", "-o", "/dev/null"], ["-s", "100", "-o", "/dev/null"],
    ["-fqq", "-o/dev/null"], ["-o", "/dev/null", "--"],
]

SUDO_OPTIONS = [
    [], ["-u", "root"], ["-iu", "root"], ["-E"], ["--"], ["-n"], ["-H"], ["-u", "#0"],
    ["--user=root"], ["-E", "-u", "root", "--"],
]


def env_split(rng, argv):
    """`env -S 'STRING'` splits STRING into the command and its first arguments."""
    cut = rng.randint(1, len(argv))
    head, tail = shlex.join(argv[:cut]), argv[cut:]
    form = rng.randrange(5)
    if form == 0:
        return Wrapped(["env", "-S", head, *tail])
    if form == 1:
        return Wrapped(["env", "-S" + head, *tail])
    if form == 2:
        return Wrapped(["env", "--split-string=" + head, *tail])
    if form == 3:
        return Wrapped(["env", "-vS", head, *tail])
    return Wrapped(["env", "-i", "-S", head, *tail])


def timeout(rng, argv):
    options = rng.choice(TIMEOUT_OPTIONS)
    return Wrapped(["timeout", *options, rng.choice(TIMEOUT_DURATIONS), *argv])


def flock(rng, argv):
    options, target = rng.choice(FLOCK_OPTIONS), rng.choice(FLOCK_TARGETS)
    form = rng.randrange(3)
    if form == 0:
        return Wrapped(["flock", *options, target, *argv])
    # `-c`/`--command` are read only in the word after the lock file.
    return Wrapped(["flock", *options, target, rng.choice(["-c", "--command"]),
                    shlex.join(argv)])


XARGS_OPTIONS = [
    [], ["-0"], ["-r"], ["-n1"], ["-n", "1"], ["--max-args=1"], ["-e"], ["-eEOF"], ["-E", "EOF"],
    ["-l"], ["-l1"], ["-L1"], ["-L", "1"], ["-P2"], ["-P", "2"], ["--max-procs=2"], ["-t"],
    ["-x"], ["-s", "4096"], ["--no-run-if-empty"], ["-d", "\\n"], ["--delimiter=\\n"],
    ["-a", "items"], ["--arg-file=items"], ["-rn1"], ["-tr"], ["-0r"], ["-r", "--"],
]
XARGS_REPLACING = [["-i"], ["-I{}"], ["-I", "{}"], ["--replace"], ["--replace={}"], ["-ri"],
                   ["-i", "-r", "-P2"]]


def xargs(rng, argv):
    if rng.random() < 0.35:
        return Wrapped(["xargs", *rng.choice(XARGS_REPLACING), *argv, "{}"], "victim\n")
    return Wrapped(["xargs", *rng.choice(XARGS_OPTIONS), *argv], "victim\n")


WATCH_OPTIONS = [
    ["-n", "0.1"], ["-n0.1"], ["--interval=0.1"], ["-g"], ["--chgexit"], ["-e"], ["--errexit"],
    ["-t"], ["--no-title"], ["-d"], ["-p"], ["-c"], ["-w"], ["-n1", "-g"], ["-tn", "0.2"],
]


def watch(rng, argv):
    """`watch` repeats its command; `timeout 1` ends it."""
    options = rng.choice(WATCH_OPTIONS)
    form = rng.randrange(3)
    if form == 0:
        inner = ["watch", *options, rng.choice(["-x", "--exec"]), *argv]
    elif form == 1:
        inner = ["watch", *options, shlex.join(argv)]
    else:
        inner = ["watch", *options, *argv]
    return Wrapped(["timeout", "1", *inner])


def script(rng, argv):
    command = shlex.join(argv)
    forms = [
        ["script", "-qc", command, "/dev/null"],
        ["script", "-q", "-c", command, "/dev/null"],
        ["script", "--command", command, "-q", "/dev/null"],
        ["script", "-qec", command, "/dev/null"],
        ["script", "-q", "/dev/null", "-c", command],
        ["script", "--quiet", "--command=" + command, "/dev/null"],
        ["script", "-qfc", command, "/dev/null"],
        ["script", "-E", "never", "-qc", command, "/dev/null"],
        ["script", "-c", command, "-q", "typescript"],
    ]
    return Wrapped(rng.choice(forms))


def find_exec(rng, argv):
    start = rng.choice([[".", "-maxdepth", "0"], ["victim"], [".", "-name", "file.txt"],
                        ["-L", ".", "-maxdepth", "0"]])
    action = rng.choice([
        ["-exec", *argv, "{}", ";"], ["-exec", *argv, ";"], ["-execdir", *argv, ";"],
        ["-exec", *argv, "{}", "+"], ["-execdir", *argv, "{}", "+"],
    ])
    if rng.random() < 0.15:
        return Wrapped(["find", *start, "-ok", *argv, ";"], "y\n")
    return Wrapped(["find", *start, *action])


def parallel(rng, argv):
    options = rng.choice([[], ["-j1"], ["--will-cite"], ["-q"], ["-j", "2"], ["--jobs=1"]])
    return Wrapped(["parallel", *options, *argv, ":::", "x"])


# The applets busybox runs other commands with; the rest only work on their own arguments.
BUSYBOX_RUNNERS = ["env", "nice", "timeout", "setsid", "xargs", "sh", "ash", "find", "time",
                   "taskset", "ionice", "unshare", "setpriv", "chroot"]
BUSYBOX_APPLETS = {"rm", "touch", "ls", "cat", "echo", "true", "pwd", "wc", "grep"}


def busybox(rng, argv):
    """`busybox APPLET …`: the program itself as an applet, or a runner applet around it."""
    name = argv[0].rsplit("/", 1)[-1]
    if name in BUSYBOX_APPLETS and rng.random() < 0.5:
        return Wrapped(["busybox", name, *argv[1:]])
    runner = rng.choice(["env", "timeout", "setsid", "xargs", "sh", "ash", "find", "time",
                         "taskset", "ionice", "unshare", "chroot"])
    if runner in ("sh", "ash"):
        return Wrapped(["busybox", runner, "-c", shlex.join(argv)])
    if runner == "timeout":
        return Wrapped(["busybox", "timeout", "10", *argv])
    if runner == "xargs":
        return Wrapped(["busybox", "xargs", *argv], "victim\n")
    if runner == "find":
        return Wrapped(["busybox", "find", ".", "-maxdepth", "0", "-exec", *argv, ";"])
    if runner == "taskset":
        return Wrapped(["busybox", "taskset", "1", *argv])
    if runner == "ionice":
        return Wrapped(["busybox", "ionice", "-c2", "-n7", *argv])
    if runner == "chroot":
        return Wrapped(["busybox", "chroot", "/", *argv])
    return Wrapped(["busybox", runner, *argv])


LOADERS = ["/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"]


def loader(rng, argv):
    """The dynamic loader given the program's file: `ld-linux-x86-64.so.2 /usr/bin/rm …`."""
    import os
    import shutil

    found = [path for path in LOADERS if os.path.exists(path)]
    program = shutil.which(argv[0]) if found else None
    if not program:
        return Wrapped(argv)
    return Wrapped([found[0], *rng.choice([[], ["--"]]), program, *argv[1:]])


def program_variable(rng, argv):
    """A program git runs, named in a variable: git runs `CMD host git-upload-pack '/r'`
    through a shell, so the command's extra words are more files for rm or touch."""
    variable = rng.choice(["GIT_SSH_COMMAND", "GIT_SSH_COMMAND", "GIT_PROXY_COMMAND"])
    url = "ssh://h/r" if variable == "GIT_SSH_COMMAND" else "git://h/r"
    return Wrapped(["env", "%s=%s" % (variable, shlex.join(argv)), "git", "ls-remote", url])


WRAPPERS = {
    "loader": loader,
    "program-variable": program_variable,
    "env": _prefix("env", ENV_OPTIONS),
    "env-split": env_split,
    "nice": _prefix("nice", NICE_OPTIONS),
    "nohup": _prefix("nohup", [[], ["--"]]),
    "timeout": timeout,
    "stdbuf": _prefix("stdbuf", STDBUF_OPTIONS),
    "setsid": _prefix("setsid", SETSID_OPTIONS),
    "ionice": _prefix("ionice", IONICE_OPTIONS),
    "taskset": _prefix("taskset", TASKSET_OPTIONS),
    "chrt": _prefix("chrt", CHRT_OPTIONS),
    "flock": flock,
    "setpriv": _prefix("setpriv", SETPRIV_OPTIONS),
    "unshare": _prefix("unshare", UNSHARE_OPTIONS),
    "xargs": xargs,
    "busybox": busybox,
    "time": _prefix("time", TIME_OPTIONS),
    "strace": _prefix("strace", STRACE_OPTIONS),
    "watch": watch,
    "script": script,
    "find": find_exec,
    "sudo": _prefix("sudo", SUDO_OPTIONS),
    "parallel": parallel,
}

# Wrappers cheap and quiet enough to stack around anything.
STACKABLE = ["env", "env-split", "nice", "nohup", "timeout", "stdbuf", "setsid", "ionice",
             "taskset", "chrt", "flock", "setpriv", "unshare", "xargs", "time", "find", "script"]

"""Runs generated commands for real, where the programs the rules name only leave a trace.

Each worker is a process in a private mount namespace with no network (`unshare -m -n`; with
`-U -r` as well when not run as root). There, `rm`, `touch` and `busybox` are bind-mounted over
by stubs that append their name to the worker's log and delete nothing, and every git's system
config sends trace2 events to the worker's directory, so that `git push` reached through an
alias, autocorrection or `-c` is seen in git's own words (`cmd_name` push) whatever the
command does to its environment. A case runs in a fresh copy of a fixture directory, in a PID
namespace of its own (`unshare -p -f --kill-child`: a timeout ends everything it started), under
`strace -f -e trace=execve` as a second witness (busybox's applet is read from its argv there).

    sandbox.py worker CONFIG INDEX   # the worker loop: one JSON case in, one JSON result out
"""

import json
import os
import pwd
import re
import shutil
import subprocess
import sys

STUBBED = ["rm", "touch"]
CASE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "TERM": "dumb",
    "LANG": "C.UTF-8",
}
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]

STUB = """#!/bin/sh
# Stands in for {name}: records that it ran and deletes or creates nothing.
echo {name} >> {log}
exit 0
"""

# busybox runs its own applets in-process (no exec a stub could see): the applets that run
# other commands are replaced by the system's programs of the same name, so that what they run
# is seen; rm and touch only leave their record; the rest are busybox's own.
BUSYBOX_STUB = """#!/bin/bash
name=${{0##*/}}
if [[ $name == busybox ]]; then applet=${{1##*/}}; shift; else applet=$name; fi
echo "busybox $applet" >> {log}
case $applet in
  rm|touch) exit 0 ;;
{runners}
esac
exec -a "$applet" {real} "$@"
"""
BUSYBOX_RUNNERS = ["sh", "ash", "env", "timeout", "setsid", "xargs", "find", "time", "taskset",
                   "ionice", "unshare", "setpriv", "chroot", "nsenter", "watch"]

# Shell startup files a login shell (`bash -lc`, or any bash once `env -i` or
# `setpriv --reset-env` has dropped $HOME) reads from the user's home: emptied for the cases,
# which must not run what this machine's own profile runs (pyenv's init runs rm).
STARTUP_FILES = [".profile", ".bash_profile", ".bash_login", ".bashrc", ".bash_logout"]


def which_all(name):
    """Every executable `name` on the case's PATH, without duplicates."""
    found = []
    for directory in CASE_ENV["PATH"].split(":"):
        path = os.path.realpath(os.path.join(directory, name))
        if os.access(path, os.X_OK) and path not in found:
            found.append(path)
    return found


def git_system_configs():
    """The system config file of every git on PATH (`/etc/gitconfig`, `$prefix/etc/gitconfig`)."""
    paths = []
    for git in which_all("git"):
        out = subprocess.run([git, "config", "--system", "--edit"], env={"GIT_EDITOR": "echo"},
                             capture_output=True, text=True, check=False)
        path = out.stdout.strip()
        if out.returncode == 0 and path.startswith("/") and path not in paths:
            paths.append(path)
    return paths


def make_fixture(path, owner):
    """The directory every case starts in: files to remove, a lock file, a git repository
    whose config defines `alias.sync = push` and `help.autocorrect = immediate`."""
    os.makedirs(path)
    for name, text in [("victim", "v\n"), ("file.txt", "x\n"), ("items", "victim\n"),
                       ("lockf", "")]:
        with open(os.path.join(path, name), "w") as f:
            f.write(text)
    git = ["git", "-c", "init.defaultBranch=main", "-c", "user.name=o", "-c", "user.email=o@o"]
    for args in [["init", "-q"], ["add", "file.txt"], ["commit", "-qm", "fixture"],
                 ["config", "alias.sync", "push"], ["config", "help.autocorrect", "immediate"]]:
        subprocess.run([*git, *args], cwd=path, check=True, env=CASE_ENV,
                       stdout=subprocess.DEVNULL)
    shutil.rmtree(os.path.join(path, ".git", "hooks"))
    if owner is not None:
        chown_tree(path, owner)


def chown_tree(path, owner):
    os.chown(path, owner, owner)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chown(os.path.join(root, name), owner, owner, follow_symlinks=False)


def prepare(run_dir, jobs, nobody):
    """Writes the fixture, the stubs and each worker's directory under `run_dir`; returns the
    config every worker reads."""
    make_fixture(os.path.join(run_dir, "fixture"), 65534 if nobody else None)
    real_busybox = shutil.which("busybox", path=CASE_ENV["PATH"])
    if real_busybox:
        copy = os.path.join(run_dir, "busybox.real")
        shutil.copy(real_busybox, copy)
        real_busybox = copy
    gitconfigs = git_system_configs()
    config = {"run_dir": run_dir, "nobody": nobody, "workers": []}
    for i in range(jobs):
        w = os.path.join(run_dir, "w%d" % i)
        # What a case changes lives under `state`, a tmpfs of the worker's own (a fresh copy
        # of the fixture per case costs next to nothing there).
        state = os.path.join(w, "state")
        os.makedirs(state)
        log = os.path.join(state, "log")
        mounts = []
        for name in STUBBED:
            for target in which_all(name):
                mounts.append((write_stub(w, name, STUB.format(name=name, log=log)), target))
        empty = write_stub(w, "empty", "")
        for home in {home_of(0), home_of(65534)} - {None}:
            for name in STARTUP_FILES:
                if os.path.isfile(os.path.join(home, name)):
                    mounts.append((empty, os.path.join(home, name)))
        if real_busybox:
            text = BUSYBOX_STUB.format(log=log, real=real_busybox, runners=busybox_runners())
            for target in which_all("busybox"):
                mounts.append((write_stub(w, "busybox", text), target))
        for gitconfig in gitconfigs:
            mounts.append(overlay_gitconfig(w, gitconfig, os.path.join(state, "trace2")))
        config["workers"].append({"state": state, "mounts": mounts})
    return config


def busybox_runners():
    """`case` branches that run the system's program for each busybox applet that runs other
    commands (`sh` and `ash` are /bin/sh)."""
    lines = []
    for applet in BUSYBOX_RUNNERS:
        program = shutil.which("sh" if applet == "ash" else applet, path=CASE_ENV["PATH"])
        if program:
            lines.append('  %s) exec %s "$@" ;;' % (applet, program))
    return "\n".join(lines)


def home_of(uid):
    try:
        return pwd.getpwuid(uid).pw_dir
    except KeyError:
        return None


def write_stub(w, name, text):
    path = os.path.join(w, "stub-" + name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return path


def overlay_gitconfig(w, path, trace2):
    """A copy of git's system config (or of its directory, when the file does not exist and a
    bind mount needs something to cover) that also sends trace2 events to `trace2`."""
    trace = "[trace2]\n\teventTarget = %s\n" % trace2
    tag = re.sub(r"[^A-Za-z0-9]", "_", path)
    if os.path.exists(path):
        copy = os.path.join(w, "gitconfig" + tag)
        shutil.copy(path, copy)
        with open(copy, "a") as f:
            f.write("\n" + trace)
        os.chmod(copy, 0o644)
        return copy, path
    directory = os.path.dirname(path)
    copy = os.path.join(w, "etc" + tag)
    if os.path.isdir(directory):
        shutil.copytree(directory, copy, symlinks=True)
    else:
        os.makedirs(copy)
    with open(os.path.join(copy, os.path.basename(path)), "w") as f:
        f.write(trace)
    os.chmod(copy, 0o755)
    return copy, directory


def namespace_flags():
    """`unshare` flags for a worker: a private mount namespace without network; a user
    namespace too when not root."""
    flags = ["--mount", "--net", "--propagation", "private"]
    if os.geteuid() != 0:
        flags = ["--user", "--map-root-user", *flags]
    return flags


# The worker, inside its namespace.

def worker(config_path, index):
    with open(config_path) as f:
        config = json.load(f)
    me = config["workers"][index]
    state = me["state"]
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", state], check=True)
    for name, mode in [("trace2", 0o777), ("home", 0o755)]:
        os.mkdir(os.path.join(state, name))
        os.chmod(os.path.join(state, name), mode)
    for name in ["log", "execve"]:
        open(os.path.join(state, name), "w").close()
        os.chmod(os.path.join(state, name), 0o666)
    fixture = os.path.join(state, "fixture")
    shutil.copytree(os.path.join(config["run_dir"], "fixture"), fixture, symlinks=True)
    if config["nobody"]:
        chown_tree(os.path.join(state, "home"), 65534)
    for source, target in me["mounts"]:
        subprocess.run(["mount", "--bind", source, target], check=True)
    for line in sys.stdin:
        result = run_case(state, fixture, json.loads(line), config["nobody"])
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()


def run_case(state, fixture, case, nobody):
    here = os.path.join(state, "case")
    shutil.rmtree(here, ignore_errors=True)
    shutil.copytree(fixture, here, symlinks=True)
    if nobody:
        chown_tree(here, 65534)
    trace2, log, execs = (os.path.join(state, n) for n in ["trace2", "log", "execve"])
    for name in os.listdir(trace2):
        os.unlink(os.path.join(trace2, name))
    for path in [log, execs]:
        open(path, "w").close()
    argv = ["unshare", "--pid", "--fork", "--kill-child"]
    if nobody:
        argv += NOBODY
    if case["traced"]:
        argv += ["strace", "-f", "-qq", "-e", "trace=execve", "-e", "signal=none", "-s", "256",
                 "-o", execs, "--"]
    argv += case["argv"]
    env = dict(CASE_ENV, HOME=os.path.join(state, "home"))
    output = os.path.join(state, "output")
    timed_out = False
    with open(output, "wb") as out:
        try:
            done = subprocess.run(argv, cwd=here, env=env, input=case["stdin"].encode(),
                                  stdout=out, stderr=out, timeout=case["timeout"], check=False)
            code = done.returncode
        except subprocess.TimeoutExpired:
            timed_out, code = True, None
        except OSError as e:
            # The case cannot be started at all (E2BIG): it ran nothing.
            out.write(("cannot run: %s\n" % e).encode())
            code = None
    ran = {}
    for program in read_log(log):
        ran.setdefault(program, set()).add("log")
    for program in read_execs(execs):
        ran.setdefault(program, set()).add("strace")
    if git_pushed(trace2):
        ran.setdefault("git push", set()).add("trace2")
    with open(output, "rb") as f:
        f.seek(max(0, os.path.getsize(output) - 300))
        tail = f.read().decode(errors="replace")
    return {"ran": {p: sorted(s) for p, s in ran.items()}, "exit": code,
            "timed_out": timed_out, "output": tail}


def read_log(log):
    """Programs the stubs recorded: `rm`, `touch`, and busybox's applets of those names."""
    with open(log, errors="replace") as f:
        for line in f:
            words = line.split()
            if words[:1] == ["busybox"] and words[1:2] and words[1] in STUBBED:
                yield words[1]
            elif words[:1] and words[0] in STUBBED:
                yield words[0]


STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def read_execs(path):
    """Programs strace saw executed (execve returned 0), with busybox named by its applet."""
    pending = {}
    with open(path, errors="replace") as f:
        for line in f:
            pid, _, rest = line.lstrip().partition(" ")
            rest = rest.lstrip()
            if rest.startswith("execve("):
                strings = STRING.findall(rest.split("], ", 1)[0])
                if rest.rstrip().endswith("<unfinished ...>"):
                    pending[pid] = strings
                    continue
            elif rest.startswith("<... execve resumed>"):
                strings = pending.pop(pid, None)
            else:
                continue
            if strings and re.search(r"\) = 0$", rest.rstrip()):
                program = executed(strings[0], strings[1:])
                if program in STUBBED:
                    yield program


def executed(path, argv):
    name = os.path.basename(path)
    if name.startswith("busybox"):
        applet = os.path.basename(argv[0]) if argv else ""
        if applet.startswith("busybox"):
            applet = os.path.basename(argv[1]) if len(argv) > 1 else ""
        return applet
    return name


def git_pushed(trace2):
    """Whether any git process dispatched the `push` command (trace2 `cmd_name`)."""
    for name in os.listdir(trace2):
        with open(os.path.join(trace2, name), errors="replace") as f:
            for line in f:
                if '"cmd_name"' not in line:
                    continue
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if event.get("event") == "cmd_name" and event.get("name") == "push":
                    return True
    return False


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "worker":
        worker(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(__doc__)

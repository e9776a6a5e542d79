"""Commands from a grammar: a payload (a program the rules forbid or ask for, or a harmless
control), wrapped in wrappers and shell constructs, deterministic from a seed.

Every case names its family (what it exercises) and what it is meant to run, so that the report
can show which spellings were exercised and which were not. What a case really runs is decided by
running it, never by this intent.
"""

import random
import re
import subprocess
from dataclasses import dataclass

import shell
import wrappers

# The programs the oracle's rules file forbids or asks for, as the executor reports them.
RM, TOUCH, PUSH = "rm", "touch", "git push"

PAYLOADS = {
    RM: [["rm", "-f", "victim"], ["rm", "victim"], ["/bin/rm", "-f", "victim"],
         ["/usr/bin/rm", "-rf", "victim"], ["rm", "--", "victim"], ["rm", "-fv", "victim"]],
    TOUCH: [["touch", "t"], ["/usr/bin/touch", "-c", "t"], ["touch", "-d", "2000-01-01", "t"],
            ["/bin/touch", "t"]],
    PUSH: [["git", "push"], ["git", "push", "--dry-run"], ["git", "push", "origin", "HEAD"],
           ["/usr/bin/git", "push"]],
    None: [["ls"], ["ls", "-la"], ["cat", "file.txt"], ["echo", "hi"], ["git", "status"],
           ["git", "log", "-1"], ["true"], ["grep", "-c", "x", "file.txt"], ["pwd"],
           ["wc", "-l", "file.txt"], ["git", "diff"]],
}

# git spellings: the repository's own config (see the executor's fixture) defines the alias
# `sync = push` and `help.autocorrect = immediate`.
GIT_SPELLINGS = [
    (PUSH, ["git", "push"]),
    (PUSH, ["git", "-C", ".", "push"]),
    (PUSH, ["git", "--no-pager", "push"]),
    (PUSH, ["git", "-c", "a.b=c", "push"]),
    (PUSH, ["git", "--git-dir=.git", "push"]),
    (PUSH, ["git", "--work-tree", ".", "push"]),
    (PUSH, ["git", "--literal-pathspecs", "push"]),
    (PUSH, ["git", "-c", "alias.x=push", "x"]),
    (PUSH, ["env", "X=push", "git", "--config-env=alias.x=X", "x"]),
    (PUSH, ["git", "-c", "help.autocorrect=immediate", "psuh"]),
    (PUSH, ["git", "-c", "help.autocorrect=-1", "pusj"]),
    (PUSH, ["git", "sync"]),
    (PUSH, ["git", "psuh"]),
    # git's own dashed program, where Debian's git and a git built from source keep it.
    (PUSH, ["/usr/lib/git-core/git-push"]),
    (PUSH, ["/usr/local/libexec/git-core/git-push"]),
    (RM, ["git", "-c", "alias.x=!rm -f victim", "x"]),
    (RM, ["git", "-c", "core.fsmonitor=rm -f victim", "status"]),
    (TOUCH, ["git", "-c", "alias.t=!touch t", "t"]),
    (None, ["git", "status"]),
    (None, ["git", "-C", ".", "log", "-1"]),
    (None, ["git", "--no-pager", "diff"]),
]

WRAPPER_FAMILIES = list(wrappers.WRAPPERS)
WORD_FAMILIES = list(shell.WORDS)
STATEMENT_FAMILIES = list(shell.STATEMENTS)
OTHER_FAMILIES = ["plain", "git", "git-keys", "tool-options", "nest", "nice-deep",
                  "command-forms", "whole-command", "positional"]
FAMILIES = WRAPPER_FAMILIES + WORD_FAMILIES + STATEMENT_FAMILIES + OTHER_FAMILIES

# How often each family is drawn, relative to 1. `watch` takes a second per case.
WEIGHTS = {"watch": 0.2, "script": 0.6, "nest": 3, "git": 2, "plain": 0.5, "sudo": 0.5,
           "parallel": 0.5, "git-keys": 3, "tool-options": 2}


def documented_git_keys():
    """Every configuration key the installed git documents (`git help --config`), placeholders
    (`remote.<name>.url`, `alias.*`) filled with `x`, plus keys git reads but does not list."""
    try:
        listed = subprocess.run(["git", "help", "--config"], capture_output=True, text=True,
                                timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        listed = ""
    keys = [re.sub(r"<[^>]*>", "x", line.strip()).replace("*", "x")
            for line in listed.splitlines() if "." in line and not line.startswith("'git ")]
    return sorted(set(keys + UNLISTED_GIT_KEYS))


# Keys git reads that `git help --config` does not list.
UNLISTED_GIT_KEYS = ["tar.x.command", "tar.x.remote", "trailer.x.cmd", "trailer.x.command",
                     "init.templateDir", "uploadarchive.x", "core.x"]

# A key that names a tool is used once another key picks that tool: `man.x.cmd` with
# `man.viewer=x`.
COMPANION_KEYS = {"man.x.cmd": ["man.viewer=x"], "man.x.path": ["man.viewer=x"],
                  "browser.x.cmd": ["web.browser=x"], "browser.x.path": ["web.browser=x"],
                  "difftool.x.cmd": ["diff.tool=x"], "difftool.x.path": ["diff.tool=x"],
                  "mergetool.x.cmd": ["merge.tool=x"], "guitool.x.cmd": [],
                  "instaweb.browser": ["instaweb.httpd=x"]}

# git commands that read one key or another, with what they need.
GIT_CONSUMERS = [["status"], ["log", "-1"], ["diff", "HEAD"], ["show", "HEAD"],
                 ["archive", "--format=x", "HEAD"], ["help", "git"], ["help", "-w", "git"],
                 ["web--browse", "-b", "x", "http://127.0.0.1:9/"],
                 ["interpret-trailers", "--trailer", "x=1"], ["commit", "--allow-empty", "-qm", "x"],
                 ["x"], ["difftool", "-y", "HEAD"], ["branch"], ["tag", "-l"]]

# Values that run the payload where a key's value is a command, a program or a path.
GIT_KEY_VALUES = ["rm -f victim", "!rm -f victim", "rm -f victim; cat", "sh -c 'rm -f victim'",
                  "/bin/rm -f victim #"]

# Options that hand a tool code, from the tools' own documentation.
TOOL_OPTION_CASES = [
    (RM, ["make", "-f", "/dev/null", "--eval", "x: ; rm -f victim", "x"]),
    (RM, ["make", "-f", "/dev/null", "--eval=$(shell rm -f victim)"]),
    (RM, ["make", "-f", "/dev/null", "--ev", "$(shell rm -f victim)"]),
    (RM, ["make", "-f", "/dev/null", "-E", "$(shell rm -f victim)"]),
    (RM, ["make", "-sf", "/dev/null", "-E$(shell rm -f victim)"]),
    (RM, ["make", "-f", "/dev/null", "x!=rm -f victim"]),
    (RM, ["make", "-f", "/dev/null", "x=$(shell rm -f victim)", "--eval=y:=$(x)"]),
    (RM, ["make", "-f", "/dev/null", "MAKEFLAGS=--eval=$$(shell rm -f victim)"]),
    (RM, ["scriptlive", "-c", "rm -f victim", "-t", "/dev/null", "-I", "/dev/null"]),
    (None, ["make", "-f", "/dev/null", "-j2", "CFLAGS=-O2"]),
    (None, ["make", "-C", ".", "-f", "/dev/null", "-s"]),
]

# Wrappers the outer `strace` of the executor cannot trace through (ptrace does not nest).
UNTRACEABLE = {"strace"}

# Quoting a script inside a script multiplies its quotes: past this many bytes of argv a layer
# is left out (the kernel refuses an argument over 128 KiB).
MAX_ARGV_BYTES = 16384


@dataclass
class Case:
    family: str
    argv: list
    intent: str = None  # RM, TOUCH, PUSH or None (a control)
    stdin: str = ""
    traced: bool = True


class Builder:
    """One case, built from the inside out."""

    def __init__(self, rng, family, intent, argv):
        self.rng, self.family, self.intent, self.argv = rng, family, intent, argv
        self.stdin, self.traced = "", True
        self.docs = shell.Heredocs()

    def wrap(self, name):
        wrapped = wrappers.WRAPPERS[name](self.rng, self.argv)
        self.argv, self.stdin = wrapped.argv, wrapped.stdin or self.stdin
        if name in UNTRACEABLE:
            self.traced = False

    def script(self, word="plain", commands=(), statements=()):
        """Turns the command into a shell script with the given forms."""
        s = shell.simple_command(self.rng, self.argv, word)
        for form in commands:
            s = shell.COMMAND_FORMS[form](self.rng, s)
        for form in statements:
            s = shell.STATEMENTS[form](self.rng, s, self.docs)
        self.argv = shell.shell_argv(self.rng, s.text(), s.bash)

    def extras(self, skip, chance=0.35):
        """Sometimes a wrapper or a shell around what is there."""
        while self.rng.random() < chance:
            self.random_layer(skip)
            chance /= 2

    def random_layer(self, skip):
        """A wrapper or a shell around what is there, unless that makes the argv too long."""
        rng = self.rng
        before = (self.argv, self.stdin, self.traced)
        if rng.random() < 0.3:
            self.script(statements=rng.sample(STATEMENT_FAMILIES, rng.randint(0, 1)))
        else:
            self.wrap(rng.choice([w for w in wrappers.STACKABLE if w not in skip]))
        if sum(len(a) + 1 for a in self.argv) > MAX_ARGV_BYTES:
            self.argv, self.stdin, self.traced = before

    def case(self):
        return Case(self.family, self.argv, self.intent, self.stdin, self.traced)


def payload(rng):
    roll = rng.random()
    intent = RM if roll < 0.6 else TOUCH if roll < 0.72 else PUSH if roll < 0.85 else None
    return intent, list(rng.choice(PAYLOADS[intent]))


GIT_KEYS = documented_git_keys()

# GNU make's options as `make --help` lists them, each with a harmless value where it takes one:
# drawn around the spellings that hand make code, so that no option cordon reads hides one.
MAKE_OPTIONS = [["-b"], ["-m"], ["-B"], ["--always-make"], ["-d"], ["--debug=b"], ["-e"],
                ["--environment-overrides"], ["-i"], ["--ignore-errors"], ["-I", "."],
                ["--include-dir=."], ["-j2"], ["-j", "2"], ["--jobs=2"], ["-k"], ["--keep-going"],
                ["-l", "9"], ["--load-average=9"], ["-L"], ["--check-symlink-times"], ["-o", "x"],
                ["--old-file=x"], ["-O"], ["--output-sync=line"], ["-r"], ["--no-builtin-rules"],
                ["-R"], ["--no-builtin-variables"], ["-s"], ["--silent"], ["--quiet"],
                ["--no-silent"], ["-S"], ["--stop"], ["--trace"], ["-w"], ["--print-directory"],
                ["--no-print-directory"], ["-W", "x"], ["--what-if=x"],
                ["--warn-undefined-variables"], ["CFLAGS=-O2"], ["V=1"]]

# The spellings that hand make code, each running the payload.
MAKE_CODE = [["--eval=$(shell rm -f victim)"], ["--eval", "$(shell rm -f victim)"],
             ["--ev=$(shell rm -f victim)"], ["-E", "$(shell rm -f victim)"],
             ["-E$(shell rm -f victim)"], ["x!=rm -f victim"], ["y=$(shell rm -f victim)", "--eval=z:=$(y)"],
             ["MAKEFLAGS=--eval=$$(shell rm -f victim)"]]


def make_case(rng):
    """`make -f /dev/null` with options drawn from make's table around a code spelling (or none:
    a control)."""
    argv = ["make", "-f", "/dev/null"]
    for option in rng.sample(MAKE_OPTIONS, rng.randint(0, 3)):
        argv += option
    intent = None
    if rng.random() < 0.7:
        argv += rng.choice(MAKE_CODE)
        intent = RM
    for option in rng.sample(MAKE_OPTIONS, rng.randint(0, 2)):
        argv += option
    return intent, argv


def git_key_case(rng):
    """`git -c KEY=VALUE [-c COMPANION] COMMAND` (or `--config-env`) for any documented key."""
    key = rng.choice(GIT_KEYS)
    value = rng.choice(GIT_KEY_VALUES)
    consumer = rng.choice(GIT_CONSUMERS)
    argv = ["git"]
    for companion in COMPANION_KEYS.get(key, []):
        argv += ["-c", companion]
    if rng.random() < 0.2:
        return ["env", f"V={value}", *argv, f"--config-env={key}=V", *consumer]
    return [*argv, "-c", f"{key}={value}", *consumer]


def generate(rng, family, skip):
    """One case of `family`; wrappers in `skip` are not available here and are never used."""
    if family == "git-keys":
        b = Builder(rng, family, RM, git_key_case(rng))
        b.extras(skip, 0.3)
        return b.case()
    if family == "tool-options":
        intent, argv = make_case(rng) if rng.random() < 0.6 else rng.choice(TOOL_OPTION_CASES)
        b = Builder(rng, family, intent, list(argv))
        b.extras(skip, 0.3)
        return b.case()
    if family == "git":
        intent, argv = rng.choice(GIT_SPELLINGS)
        b = Builder(rng, family, intent, list(argv))
        b.extras(skip, 0.5)
        return b.case()
    b = Builder(rng, family, *payload(rng))
    if family in WRAPPER_FAMILIES:
        if rng.random() < 0.3:
            b.random_layer(skip)
        b.wrap(family)
    elif family in WORD_FAMILIES:
        commands = rng.sample(list(shell.COMMAND_FORMS), rng.randint(0, 1))
        b.script(family, commands, rng.sample(STATEMENT_FAMILIES, rng.randint(0, 1)))
    elif family in STATEMENT_FAMILIES:
        others = rng.sample(STATEMENT_FAMILIES, rng.randint(0, 2))
        statements = [family, *others] if rng.random() < 0.5 else [*others, family]
        b.script(rng.choice(["plain"] * 3 + WORD_FAMILIES), (), statements)
    elif family == "command-forms":
        b.script("plain", rng.sample(list(shell.COMMAND_FORMS), rng.randint(1, 2)))
    elif family == "whole-command":
        s = shell.whole_command(rng, b.argv)
        b.argv = shell.shell_argv(rng, s.text(), s.bash)
    elif family == "positional":
        b.argv = shell.positional_argv(rng, b.argv)
    elif family == "nest":
        for _ in range(rng.randint(2, 12)):
            b.random_layer(skip)
        return b.case()
    elif family == "nice-deep":
        for _ in range(rng.randint(8, 12)):
            b.wrap("nice")
        return b.case()
    b.extras(skip)
    return b.case()


def cases(seed, count, skip=frozenset()):
    """`count` cases from `seed`, drawn over the families not in `skip`."""
    rng = random.Random(seed)
    families = [f for f in FAMILIES if f not in skip]
    weights = [WEIGHTS.get(f, 1) for f in families]
    for _ in range(count):
        yield generate(rng, rng.choices(families, weights)[0], skip)


def fixed_cases(skip=frozenset()):
    """The spellings known to have slipped through, each spelled out."""
    listed = [
        ("plain", RM, ["rm", "-f", "victim"]),
        ("plain", TOUCH, ["touch", "t"]),
        ("plain", PUSH, ["git", "push"]),
        ("plain", None, ["ls"]),
        ("plain", None, ["git", "status"]),
        ("env", RM, ["env", "sh", "-c", "rm -f victim"]),
        ("nice", RM, ["nice", "bash", "-c", "rm -f victim"]),
        ("eval", RM, ["bash", "-c", "eval 'rm -f victim'"]),
        ("trap", RM, ["bash", "-c", "trap 'rm -f victim' EXIT"]),
        ("env-split", RM, ["env", "-S", "rm -f", "victim"]),
        ("xargs", RM, ["xargs", "-i", "rm", "-f", "{}"], "victim\n"),
        ("xargs", RM, ["xargs", "-e", "rm"], "victim\n"),
        ("sudo", RM, ["sudo", "-iu", "root", "rm", "victim"]),
        ("busybox", RM, ["busybox", "rm", "victim"]),
        ("taskset", RM, ["taskset", "1", "rm", "victim"]),
        ("flock", RM, ["flock", "lockf", "rm", "victim"]),
        ("setpriv", RM, ["setpriv", "--reuid=0", "rm", "victim"]),
        ("unshare", RM, ["unshare", "rm", "victim"]),
        ("chrt", RM, ["chrt", "-o", "0", "rm", "victim"]),
        ("strace", RM, ["strace", "-f", "-qq", "-o", "/dev/null", "rm", "victim"]),
        ("watch", RM, ["timeout", "1", "watch", "-n1", "-x", "rm", "victim"]),
        ("script", RM, ["script", "-qc", "rm victim", "/dev/null"]),
        ("parallel", RM, ["parallel", "rm", ":::", "victim"]),
        ("find", RM, ["find", ".", "-maxdepth", "0", "-exec", "rm", "victim", ";"]),
        ("nice-deep", RM, ["nice"] * 9 + ["rm", "victim"]),
        ("alias", RM, ["bash", "-c", "shopt -s expand_aliases\nalias x='rm -f'\nx victim"]),
        ("brace", RM, ["bash", "-c", "{r,}m -f victim"]),
        ("glob", RM, ["bash", "-c", "/bin/r[m] -f victim"]),
        ("parameter", RM, ["bash", "-c", "x=r; ${x}m -f victim"]),
        ("substitution", RM, ["bash", "-c", "$(printf r)m -f victim"]),
        ("git", PUSH, ["git", "-c", "alias.x=push", "x"]),
        ("git", PUSH, ["git", "-c", "help.autocorrect=immediate", "psuh"]),
        ("env", TOUCH, ["env", "sh", "-c", "touch t"]),
        # Keys that hand git a command but were read as plain data, and tools' code options.
        ("git-keys", RM, ["git", "-c", "tar.x.command=rm -f victim; cat", "archive",
                          "--format=x", "HEAD"]),
        ("git-keys", RM, ["git", "-c", "man.viewer=v", "-c", "man.v.cmd=rm -f victim", "help",
                          "git"]),
        ("git-keys", RM, ["git", "-c", "browser.v.cmd=rm -f victim", "web--browse", "-b", "v",
                          "http://127.0.0.1:9/"]),
        ("git-keys", RM, ["git", "-c", "trailer.x.cmd=rm -f victim", "interpret-trailers",
                          "--trailer", "x=1"]),
        *[("tool-options", intent, argv) for intent, argv in TOOL_OPTION_CASES],
    ]
    for family, intent, argv, *stdin in listed:
        if family in skip:
            continue
        yield Case(family, argv, intent, stdin[0] if stdin else "", family not in UNTRACEABLE)

"""Shell constructs: ways a `bash -c` / `sh -c` script can run a command without naming it
plainly.

A script is built from the inside out. The command word is spelled first (`{r,}m`, `${x}m`, an
alias…, with the lines that must come before it), then command-level forms (`x=1 rm`,
`command rm`, `rm 2>&1`), then statement-level forms that wrap the whole statement (`eval`,
`trap`, functions, here-documents fed to another shell, `if`/`for`/`case`, pipes and lists).
Forms that only bash understands say so, and the script is then run by bash.
"""

import shlex
from dataclasses import dataclass, field

q = shlex.quote


@dataclass
class Script:
    """Lines that must run first, then the statement; `bash` when a form needs bash."""

    before: list = field(default_factory=list)
    statement: str = ""
    bash: bool = False

    def text(self):
        return "\n".join([*self.before, self.statement])


# Command word spellings: (rng, word) -> (lines before, expression, needs bash).

def word_plain(rng, w):
    return [], q(w), False


def _split(rng, w):
    cut = rng.randint(1, len(w) - 1) if len(w) > 1 else 1
    return w[:cut], w[cut:]


def word_brace(rng, w):
    """`{r,}m` is `rm m`: harmless for rm and touch, whose extra word is one more file."""
    if w.rsplit("/", 1)[-1] in ("rm", "touch") and rng.random() < 0.5:
        head, tail = w[:-1], w[-1]
        return [], "%s{%s,}%s" % (head[:-1], head[-1], tail), True
    return [], "{%s,}" % w, True


def word_glob(rng, w):
    path = w if w.startswith("/") else rng.choice(["/bin/", "/usr/bin/"]) + w
    directory, name = path.rsplit("/", 1)
    i = rng.randrange(len(name))
    # `?` would match other programs too (`/bin/?m` is `/bin/nm` first).
    letter = rng.choice(["[%s]" % name[i], "[%s%s]" % (name[i], name[i].upper())])
    return [], "%s/%s%s%s" % (directory, name[:i], letter, name[i + 1:]), False


def word_parameter(rng, w):
    head, tail = _split(rng, w)
    forms = [
        (["x=%s" % q(head)], "${x}%s" % q(tail) if tail else "$x", False),
        ([], "${x:-%s}%s" % (head, tail), False),
        ([], "${x-%s}%s" % (head, tail), False),
        (["x=%s" % q(w)], "$x", False),
        (["x=%s" % q(w)], '"$x"', False),
        (["x=%s" % q("Z" + w)], "${x#Z}", False),
        (["x=%s" % q(w + "Z")], "${x%Z}", False),
        (["y=%s" % q(w), "x=y"], "${!x}", True),
        (["x=%s" % q(w.replace(head, "Z", 1))], "${x/Z/%s}" % head, True),
    ]
    return rng.choice(forms)


def word_substitution(rng, w):
    head, tail = _split(rng, w)
    return rng.choice([
        ([], "$(printf %%s %s)%s" % (q(head), tail), False),
        ([], "$(echo %s)" % q(w), False),
        ([], "`printf %%s %s`%s" % (q(head), tail), False),
        ([], '"$(printf %s)"%s' % (head, tail), False),
        ([], "$(printf r)m" if w == "rm" else "$(printf %s)%s" % (head, tail), False),
    ])


def word_quoting(rng, w):
    head, tail = _split(rng, w)
    return rng.choice([
        ([], "\\" + w, False),
        ([], head + "\\" + tail, False),
        ([], '"%s"%s' % (head, tail), False),
        ([], "'%s'%s" % (head, tail), False),
        ([], '"%s"' % w, False),
        ([], "''" + w, False),
        ([], '%s""%s' % (head, tail), False),
    ])


def word_ansi_c(rng, w):
    head, tail = _split(rng, w)
    letter, rest = tail[0], tail[1:]
    code = rng.choice(["\\x%02x" % ord(letter), "\\%03o" % ord(letter), "\\u%04x" % ord(letter)])
    return [], "%s$'%s'%s" % (head, code, rest), True


def word_continuation(rng, w):
    head, tail = _split(rng, w)
    return [], head + "\\\n" + tail, False


def word_alias(rng, w):
    """The alias is defined on a line of its own before the statement that uses it: bash
    expands aliases from the next line on, and not inside the compound command that defines
    them."""
    return rng.choice([
        (["shopt -s expand_aliases", "alias x=%s" % q(w)], "x", True),
        (["shopt -s expand_aliases; alias -- x=%s" % q(w)], "x", True),
        (["shopt -s expand_aliases", "alias x=%s y=%s" % (q(w + " "), q(""))], "x y", True),
    ])


def word_resolved_later(rng, w):
    """Words whose meaning the script decides: variables set by builtins, hashed names."""
    path = w if w.startswith("/") else "/usr/bin/" + w
    return rng.choice([
        (["printf -v c %%s %s" % q(w)], "$c", True),
        (["read -r c <<< %s" % q(w)], "$c", True),
        (["read -r c <<'EOW'", w, "EOW"], "$c", False),
        (["declare c=%s" % q(w)], "$c", True),
        (["export c=%s" % q(w)], "$c", False),
        (["hash -p %s x" % q(path)], "x", True),
        (["set -- %s" % q(w)], '"$1"', False),
        (["cd /usr/bin"], "./" + path.rsplit("/", 1)[-1] if path.startswith("/usr/bin/")
         else q(w), False),
    ])


WORDS = {
    "brace": word_brace, "glob": word_glob, "parameter": word_parameter,
    "substitution": word_substitution, "quoting": word_quoting, "ansi-c": word_ansi_c,
    "continuation": word_continuation, "alias": word_alias, "resolved-later": word_resolved_later,
}


def simple_command(rng, argv, word="plain"):
    """The command `argv` as a script, its command word spelled by `word`."""
    spell = WORDS.get(word, word_plain)
    before, expression, bash = spell(rng, argv[0])
    rest = " ".join(q(a) for a in argv[1:])
    statement = expression + (" " + rest if rest else "")
    if word == "resolved-later" and before == ["cd /usr/bin"]:
        # The statement runs from elsewhere: return so the case's other words still apply.
        statement = "%s; cd - >/dev/null" % statement
    return Script(before, statement, bash)


def whole_command(rng, argv):
    """Forms that carry the whole argv: arrays, IFS splitting, positional parameters."""
    words = " ".join(q(a) for a in argv)
    plain = all(a and all(c.isalnum() or c in "-_./{}" for c in a) for a in argv)
    forms = [
        Script(["a=(%s)" % words], '"${a[@]}"', True),
        Script(["set -- %s" % words], '"$@"', False),
        Script(["c=%s" % q(" ".join(argv))], "$c", False) if plain else None,
        Script(["IFS=,", "c=%s" % q(",".join(argv))], "$c", False) if plain else None,
    ]
    return rng.choice([f for f in forms if f is not None])


# Command-level forms: (rng, script) -> script, around one simple command.

def command_prefix(rng, s):
    prefix, bash = rng.choice([
        ("x=1 ", False), ("LC_ALL=C ", False), ("A=1 B=2 ", False), (">/dev/null ", False),
        ("2>/dev/null ", False), ("</dev/null ", False), ("command ", False),
        ("command -p ", False), ("command -- ", False), ("exec ", False),
        ("builtin command ", True), ("exec -a foo ", True), ("exec -c ", True),
        ("exec -l ", True), ("time ", False), ("time -p ", True), ("\\command ", False),
        ("builtin exec ", True), ("nohup ", False), ("env ", False), ("nice ", False),
    ])
    return Script(s.before, prefix + s.statement, s.bash or bash)


def command_suffix(rng, s):
    suffix, bash = rng.choice([
        (" 2>&1", False), (" >/dev/null", False), (" 2>/dev/null", False), (" </dev/null", False),
        (" >&2", False), (" &>/dev/null", True), (" 3>&1", False),
    ])
    return Script(s.before, s.statement + suffix, s.bash or bash)


COMMAND_FORMS = {"prefix": command_prefix, "redirect": command_suffix}


class Heredocs:
    """Fresh here-document delimiters, so that nested documents never end each other."""

    def __init__(self):
        self.count = 0

    def next(self):
        self.count += 1
        return "EOF%d" % self.count


# Statement-level forms: (rng, text, needs bash, delimiters) -> (text, needs bash). Forms that
# stay in the same shell wrap the statement alone and leave the lines before it where they are
# (an alias must be defined before the compound command that uses it); forms that start
# another shell or read a file take those lines with them.

def st_eval(rng, text, bash, docs):
    return rng.choice([
        ("eval %s" % q(text), bash),
        ("eval -- %s" % q(text), True),
        ("e=%s; eval \"$e\"" % q(text), bash),
        ("eval \"$(printf '%%s' %s)\"" % q(text), bash),
    ])


def st_trap(rng, text, bash, docs):
    return rng.choice([
        ("trap %s EXIT" % q(text), bash),
        ("trap %s 0" % q(text), bash),
        ("trap -- %s EXIT" % q(text), bash),
        ("trap %s ERR\nfalse" % q(text), True),
        ("trap %s DEBUG\n:" % q(text), True),
        ("trap %s USR1\nkill -USR1 $$" % q(text), bash),
    ])


def st_function(rng, text, bash, docs):
    return rng.choice([
        ("f() {\n%s\n}\nf" % text, bash),
        ("function f {\n%s\n}\nf" % text, True),
        ("f() (\n%s\n)\nf" % text, bash),
    ])


def st_source(rng, text, bash, docs):
    end = docs.next()
    write = rng.choice([
        "cat > s.sh <<'%s'\n%s\n%s" % (end, text, end),
        "printf '%%s\\n' %s > s.sh" % q(text),
    ])
    run, needs = rng.choice([(". ./s.sh", False), ("source ./s.sh", True), ("source s.sh", True)])
    return "%s\n%s" % (write, run), bash or needs


def st_stdin_shell(rng, text, bash, docs):
    """A shell reading its script from standard input."""
    shell = "bash" if bash else rng.choice(["bash", "sh"])
    end = docs.next()
    return rng.choice([
        ("%s <<'%s'\n%s\n%s" % (shell, end, text, end), bash),
        ("%s -s <<'%s'\n%s\n%s" % (shell, end, text, end), bash),
        ("bash <<< %s" % q(text), True),
        ("printf '%%s\\n' %s | %s" % (q(text), shell), bash),
        ("echo %s | %s" % (q(text), shell), bash),
        ("printf '%%s\\n' %s > s.sh\n%s < s.sh" % (q(text), shell), bash),
    ])


def st_nested_shell(rng, text, bash, docs):
    shell = "bash" if bash else rng.choice(["bash", "sh", "dash"])
    return rng.choice([
        ("%s -c %s" % (shell, q(text)), bash),
        ("bash -lc %s" % q(text), bash),
        ("%s -c %s x" % (shell, q(text)), bash),
    ])


def st_list(rng, text, bash, docs):
    body = "{ %s\n}" % text
    return rng.choice([
        ("true && %s" % body, bash), ("false || %s" % body, bash), ("echo x; %s" % text, bash),
        (": | %s" % body, bash), ("%s | cat" % body, bash), ("%s &\nwait" % body, bash),
        ("! %s" % body, bash), ("%s; true" % body, bash),
    ])


def st_subshell(rng, text, bash, docs):
    return rng.choice([
        ("( %s\n)" % text, bash), ("{ %s\n}" % text, bash), (": \"$(%s\n)\"" % text, bash),
        ("x=$(%s\n)" % text, bash), ("cat <( %s\n)" % text, True),
        ("echo \"$( %s\n)\" >/dev/null" % text, bash),
    ])


def st_compound(rng, text, bash, docs):
    return rng.choice([
        ("if true; then\n%s\nfi" % text, bash),
        ("if { %s\n}; then :; fi" % text, bash),
        ("for i in 1; do\n%s\ndone" % text, bash),
        ("case x in x)\n%s\n;; esac" % text, bash),
        ("while true; do\n%s\nbreak; done" % text, bash),
        ("until false; do\n%s\nbreak; done" % text, bash),
        ("[[ -n x ]] && { %s\n}" % text, True),
        ("for ((i = 0; i < 1; i++)); do\n%s\ndone" % text, True),
    ])


def st_evaluated(rng, text, bash, docs):
    """A value built at run time, from pieces that name no program, holding a subscript with a
    command substitution (`b[$(eval "$y")]`), then evaluated by bash as arithmetic or as a
    name: the substitution runs the statement."""
    hidden = "".join("\\x%02x" % b for b in text.encode())
    build = ("y=$(printf '%%b' '%s')\no=$(printf '\\x5b'); c=$(printf '\\x5d'); d='$'\n"
             "v=\"b${o}${d}(eval \\\"\\$y\\\")${c}\"" % hidden)
    evaluation = rng.choice([
        "RANDOM=v", "read OPTIND <<< v", "echo ${v:v}", "z=(1); echo ${z[v]}", "echo ${!v}",
        "echo $[v]", "z=([v]=1)", "declare -i n; n=v", "declare -n r=\"$v\"; r=1",
        "read \"$v\" <<< 1", "[ -v \"$v\" ]", "unset \"$v\"", "x=(1); echo ${#x[v]}",
        "echo ${v:0:v}", "local_f() { local -i n=v; }; local_f",
    ])
    return "%s\n%s >/dev/null" % (build, evaluation), True


def _same_shell(form):
    def apply(rng, s, docs):
        text, bash = form(rng, s.statement, s.bash, docs)
        return Script(s.before, text, bash)

    return apply


def _taking_lines(form):
    def apply(rng, s, docs):
        text, bash = form(rng, s.text(), s.bash, docs)
        return Script([], text, bash)

    return apply


STATEMENTS = {
    "eval": _same_shell(st_eval), "trap": _same_shell(st_trap),
    "function": _same_shell(st_function), "source": _taking_lines(st_source),
    "stdin-shell": _taking_lines(st_stdin_shell), "nested-shell": _taking_lines(st_nested_shell),
    "list": _same_shell(st_list), "subshell": _same_shell(st_subshell),
    "compound": _same_shell(st_compound), "evaluated": _taking_lines(st_evaluated),
}


def shell_argv(rng, text, bash):
    """The argv that runs script `text`; bash when the script needs it."""
    shells = [["bash", "-c"], ["bash", "-lc"], ["/bin/bash", "-c"], ["bash", "--norc", "-c"],
              ["bash", "-e", "-c"], ["bash", "-o", "pipefail", "-c"], ["bash", "-xc"],
              ["bash", "-euc"], ["/usr/bin/bash", "-c"]]
    if not bash:
        shells += [["sh", "-c"], ["/bin/sh", "-c"], ["dash", "-c"], ["sh", "-ec"]]
    argv = [*rng.choice(shells), text]
    if rng.random() < 0.1:
        argv += ["name", "arg"]
    return argv


def positional_argv(rng, argv):
    """The command handed to the shell as arguments after the script."""
    return rng.choice([
        ["bash", "-c", '"$@"', "_", *argv],
        ["sh", "-c", '"$@"', "_", *argv],
        ["sh", "-c", '$0 "$@"', *argv],
        ["bash", "-c", 'exec "$@"', "x", *argv],
        ["bash", "-c", '"$0" "$@"', *argv],
    ])

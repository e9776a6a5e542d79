//! Programs that run another program named in their arguments, read with each one's real
//! option grammar: which words are its options (clustered short options, values attached or
//! separate, GNU optional values that can only be attached, unambiguous abbreviations of long
//! options), which are its operands, and where the wrapped command starts.
//!
//! A wrapper whose grammar is not modelled here, an option a modelled wrapper does not know, or
//! an option that makes the wrapper compute what runs (`env -S`, `xargs -I` into the program
//! word) gives [`Unwrapped::Unreadable`]: rules then treat the command as possibly anything.

use std::borrow::Cow;

use crate::unmodelled_wrappers::{UNMODELLED, is_loader};
use crate::unreadable::{COMPUTED_WORD, Unreadable, is_code_variable};

/// What a wrapper call runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unwrapped<'a> {
    /// The wrapped command, starting at its program (words the wrapper fills in from its input
    /// stand as [`COMPUTED_WORD`]).
    Inner(Cow<'a, [String]>),
    /// The wrapper runs no other program here (`taskset -p`, `command -v x`, a bare `env`).
    Nothing,
    /// The program is not a wrapper: it is what runs.
    NotAWrapper,
    /// What runs cannot be read from the words.
    Unreadable(Unreadable),
}

/// How a wrapper reads its options.
struct Grammar {
    /// Short options that take a value, attached (`-n5`) or as the next word (`-n 5`).
    short_with_value: &'static str,
    /// Short options whose value, if any, is attached (GNU optional values: `-i{}`, `-e`).
    short_optional_value: &'static str,
    /// Short options without a value; they may be clustered (`-0r`).
    short_flags: &'static str,
    /// Long options that take a value (`--user=x` or `--user x`).
    long_with_value: &'static [&'static str],
    /// Long options whose value, if any, is attached (`--replace=R`).
    long_optional_value: &'static [&'static str],
    /// Long options without a value.
    long_flags: &'static [&'static str],
    /// Whether `NAME=VALUE` words before the command are environment assignments.
    assignments: bool,
    /// A `-NUMBER` word is an option (`nice -5`).
    numeric_options: bool,
    /// A lone `-` is an option (`env -`, the same as `env -i`).
    dash_is_option: bool,
}

const NO_GRAMMAR: Grammar = Grammar {
    short_with_value: "",
    short_optional_value: "",
    short_flags: "",
    long_with_value: &[],
    long_optional_value: &[],
    long_flags: &["help", "version"],
    assignments: false,
    numeric_options: false,
    dash_is_option: false,
};

const ENV: Grammar = Grammar {
    short_with_value: "uCS",
    short_flags: "i0v",
    long_with_value: &["unset", "chdir", "split-string", "argv0"],
    long_optional_value: &["block-signal", "default-signal", "ignore-signal"],
    long_flags: &["ignore-environment", "null", "debug", "list-signal-handling", "help", "version"],
    assignments: true,
    dash_is_option: true,
    ..NO_GRAMMAR
};

const NICE: Grammar = Grammar {
    short_with_value: "n",
    long_with_value: &["adjustment"],
    numeric_options: true,
    ..NO_GRAMMAR
};

const TIMEOUT: Grammar = Grammar {
    short_with_value: "sk",
    short_flags: "fpv",
    long_with_value: &["signal", "kill-after"],
    long_flags: &["foreground", "preserve-status", "verbose", "help", "version"],
    ..NO_GRAMMAR
};

const STDBUF: Grammar = Grammar {
    short_with_value: "ioe",
    long_with_value: &["input", "output", "error"],
    ..NO_GRAMMAR
};

const TIME: Grammar = Grammar {
    short_with_value: "fo",
    short_flags: "apqvV",
    long_with_value: &["format", "output"],
    long_flags: &["append", "portability", "quiet", "verbose", "help", "version"],
    ..NO_GRAMMAR
};

const SETSID: Grammar = Grammar {
    short_flags: "cfw",
    long_flags: &["ctty", "fork", "wait", "help", "version"],
    ..NO_GRAMMAR
};

const IONICE: Grammar = Grammar {
    short_with_value: "cnpPu",
    short_flags: "t",
    long_with_value: &["class", "classdata", "pid", "pgid", "uid"],
    long_flags: &["ignore", "help", "version"],
    ..NO_GRAMMAR
};

const SUDO: Grammar = Grammar {
    short_with_value: "CDgpRrTtUu",
    short_optional_value: "h",
    short_flags: "AbEeHiKklnPSsVvBN",
    long_with_value: &[
        "close-from",
        "chdir",
        "group",
        "prompt",
        "chroot",
        "role",
        "type",
        "command-timeout",
        "other-user",
        "user",
    ],
    long_optional_value: &["preserve-env", "host"],
    long_flags: &[
        "askpass",
        "background",
        "bell",
        "edit",
        "set-home",
        "help",
        "login",
        "remove-timestamp",
        "reset-timestamp",
        "list",
        "non-interactive",
        "preserve-groups",
        "stdin",
        "shell",
        "version",
        "validate",
        "no-update",
    ],
    assignments: true,
    ..NO_GRAMMAR
};

const DOAS: Grammar =
    Grammar { short_with_value: "aCu", short_flags: "Lns", long_flags: &[], ..NO_GRAMMAR };

const XARGS: Grammar = Grammar {
    short_with_value: "adEILnPs",
    short_optional_value: "eil",
    short_flags: "0oprtx",
    long_with_value: &[
        "arg-file",
        "delimiter",
        "max-lines",
        "max-args",
        "max-procs",
        "max-chars",
        "process-slot-var",
    ],
    long_optional_value: &["eof", "replace"],
    long_flags: &[
        "null",
        "open-tty",
        "interactive",
        "no-run-if-empty",
        "verbose",
        "exit",
        "show-limits",
        "help",
        "version",
    ],
    ..NO_GRAMMAR
};

const TASKSET: Grammar = Grammar {
    short_flags: "acpV",
    long_flags: &["all-tasks", "cpu-list", "pid", "help", "version"],
    ..NO_GRAMMAR
};

const CHRT: Grammar = Grammar {
    short_with_value: "TPD",
    short_flags: "abdefhimoprRv",
    long_with_value: &["sched-runtime", "sched-period", "sched-deadline"],
    long_flags: &[
        "all-tasks",
        "batch",
        "deadline",
        "ext",
        "fifo",
        "help",
        "idle",
        "max",
        "other",
        "pid",
        "rr",
        "reset-on-fork",
        "verbose",
        "version",
    ],
    ..NO_GRAMMAR
};

const EXEC: Grammar = Grammar { short_with_value: "a", short_flags: "cl", ..NO_GRAMMAR };
const COMMAND: Grammar = Grammar { short_flags: "pvV", ..NO_GRAMMAR };

/// Whether `name` is a program that runs another program named in its arguments.
pub(crate) fn is_wrapper(name: &str) -> bool {
    UNMODELLED.contains(&name)
        || is_loader(name)
        || matches!(
            name,
            "env"
                | "command"
                | "builtin"
                | "exec"
                | "nice"
                | "nohup"
                | "timeout"
                | "stdbuf"
                | "time"
                | "setsid"
                | "ionice"
                | "sudo"
                | "doas"
                | "xargs"
                | "taskset"
                | "chrt"
                | "busybox"
                | "toybox"
                | "find"
        )
}

/// What `name rest…` runs, `name` being a program's file name.
pub(crate) fn unwrap<'a>(name: &str, rest: &'a [String]) -> Unwrapped<'a> {
    let unreadable = |detail: String| Unwrapped::Unreadable(Unreadable::Wrapper { detail });
    if UNMODELLED.contains(&name) || is_loader(name) {
        return unreadable(format!("`{name}` runs what cordon does not read"));
    }
    // `ip netns exec NS CMD`, `ip vrf exec VRF CMD`.
    if name == "ip" && rest.iter().any(|word| word == "exec") {
        return unreadable("`ip … exec` runs what cordon does not read".to_owned());
    }
    let grammar = match name {
        "env" => &ENV,
        "command" => &COMMAND,
        "builtin" | "nohup" => &NO_GRAMMAR,
        "exec" => &EXEC,
        "nice" => &NICE,
        "timeout" => &TIMEOUT,
        "stdbuf" => &STDBUF,
        "time" => &TIME,
        "setsid" => &SETSID,
        "ionice" => &IONICE,
        "sudo" => &SUDO,
        "doas" => &DOAS,
        "xargs" => &XARGS,
        "taskset" => &TASKSET,
        "chrt" => &CHRT,
        "busybox" | "toybox" => return multi_call(name, rest),
        "find" => return find(rest),
        _ => return Unwrapped::NotAWrapper,
    };
    let parsed = match parse(grammar, rest) {
        Ok(parsed) => parsed,
        Err(UnknownOption(option)) => {
            return unreadable(format!("`{name}` with the option `{option}`"));
        }
    };
    if let Some(name) = parsed.assigned.iter().find(|name| is_code_variable(name)) {
        return Unwrapped::Unreadable(Unreadable::CodeVariable { name: name.clone() });
    }
    let has = |short: char, long: &str| parsed.options.iter().any(|o| o.is(short, long));
    let mut command = parsed.rest;
    match name {
        "env" if has('S', "split-string") => {
            return unreadable("`env -S` splits a string into the command".to_owned());
        }
        "command" if has('v', "") || has('V', "") => return Unwrapped::Nothing,
        "sudo" if has('e', "edit") => {
            return unreadable("`sudo -e` runs an editor".to_owned());
        }
        "ionice" if has('p', "pid") || has('P', "pgid") || has('u', "uid") => {
            return Unwrapped::Nothing;
        }
        "taskset" | "chrt" if has('p', "pid") => return Unwrapped::Nothing,
        // The operands before the command: timeout's DURATION, taskset's MASK, chrt's PRIORITY.
        "timeout" | "taskset" | "chrt" => command = command.get(1..).unwrap_or_default(),
        "xargs" => {
            if command.is_empty() {
                return Unwrapped::Nothing; // runs `echo`
            }
            // xargs completes the command from its input: with a replacement string, every
            // word holding it; otherwise more words at the end (`xargs git` may run `git push`).
            let replace = parsed.options.iter().find_map(Parsed::replace_string);
            let filled: Vec<String> = match replace {
                Some(replace) => command
                    .iter()
                    .map(|w| {
                        if w.contains(replace.as_str()) {
                            COMPUTED_WORD.to_owned()
                        } else {
                            w.clone()
                        }
                    })
                    .collect(),
                None => command.iter().cloned().chain([COMPUTED_WORD.to_owned()]).collect(),
            };
            return Unwrapped::Inner(Cow::Owned(filled));
        }
        _ => {}
    }
    if command.is_empty() { Unwrapped::Nothing } else { Unwrapped::Inner(Cow::Borrowed(command)) }
}

/// `busybox APPLET …`: the applet is the program; `busybox --list` and the like run nothing.
fn multi_call<'a>(name: &str, rest: &'a [String]) -> Unwrapped<'a> {
    let command = match rest.split_first() {
        Some((first, after)) if first == "--" => after,
        _ => rest,
    };
    match command.first() {
        None => Unwrapped::Nothing,
        Some(applet) if applet.starts_with('-') => {
            Unwrapped::Unreadable(Unreadable::Wrapper { detail: format!("`{name} {applet}`") })
        }
        Some(_) => Unwrapped::Inner(Cow::Borrowed(command)),
    }
}

/// `find` runs programs only through its actions; a command template cannot be read as one
/// command (`{}` may be its program, `+` batches), so those calls are unreadable.
fn find(rest: &[String]) -> Unwrapped<'_> {
    const RUNS: &[&str] = &["-exec", "-execdir", "-ok", "-okdir"];
    match rest.iter().find(|word| RUNS.contains(&word.as_str())) {
        Some(action) => Unwrapped::Unreadable(Unreadable::Wrapper {
            detail: format!("`find {action}` runs a command template"),
        }),
        None => Unwrapped::Nothing,
    }
}

/// One option as given.
#[derive(Debug)]
struct Parsed {
    short: Option<char>,
    long: Option<&'static str>,
    value: Option<String>,
}

impl Parsed {
    fn is(&self, short: char, long: &str) -> bool {
        self.short == Some(short) || (!long.is_empty() && self.long == Some(long))
    }

    /// xargs' replacement string: `-I R`, `-i[R]`, `--replace[=R]` (default `{}`).
    fn replace_string(&self) -> Option<String> {
        match (self.short, self.long) {
            (Some('I'), _) => self.value.clone(),
            (Some('i'), _) | (_, Some("replace")) => {
                Some(self.value.clone().unwrap_or_else(|| "{}".to_owned()))
            }
            _ => None,
        }
    }
}

/// An option word the wrapper's grammar does not know (or one missing its value).
struct UnknownOption(String);

struct ParsedCall<'a> {
    options: Vec<Parsed>,
    /// The names of `NAME=VALUE` assignments before the command.
    assigned: Vec<String>,
    rest: &'a [String],
}

/// Reads the options at the start of `words` (stopping at `--`, which is dropped, or at the
/// first operand, as a wrapper's `getopt` with a leading `+` does). Returns the word of an
/// option the grammar does not know.
fn parse<'a>(grammar: &Grammar, words: &'a [String]) -> Result<ParsedCall<'a>, UnknownOption> {
    let mut options = Vec::new();
    let mut assigned = Vec::new();
    let mut index = 0;
    while let Some(word) = words.get(index) {
        index += 1;
        if word == "--" {
            break;
        }
        if grammar.dash_is_option && word == "-" {
            continue;
        }
        if grammar.assignments && is_assignment(word) {
            assigned.extend(word.split_once('=').map(|(name, _)| name.to_owned()));
            continue;
        }
        if let Some(long) = word.strip_prefix("--") {
            let (given, attached) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value.to_owned())),
                None => (long, None),
            };
            let name = long_option(grammar, given).ok_or_else(|| UnknownOption(word.clone()))?;
            let value = if grammar.long_with_value.contains(&name) && attached.is_none() {
                index += 1;
                Some(words.get(index - 1).ok_or_else(|| UnknownOption(word.clone()))?.clone())
            } else if grammar.long_flags.contains(&name) && attached.is_some() {
                return Err(UnknownOption(word.clone()));
            } else {
                attached
            };
            options.push(Parsed { short: None, long: Some(name), value });
            continue;
        }
        let Some(cluster) = word.strip_prefix('-').filter(|c| !c.is_empty()) else {
            index -= 1; // the first operand
            break;
        };
        if grammar.numeric_options && cluster.bytes().all(|b| b.is_ascii_digit()) {
            options.push(Parsed { short: Some('0'), long: None, value: Some(cluster.to_owned()) });
            continue;
        }
        for (at, letter) in cluster.char_indices() {
            let attached = &cluster[at + letter.len_utf8()..];
            if grammar.short_with_value.contains(letter) {
                let value = if attached.is_empty() {
                    index += 1;
                    words.get(index - 1).ok_or_else(|| UnknownOption(word.clone()))?.clone()
                } else {
                    attached.to_owned()
                };
                options.push(Parsed { short: Some(letter), long: None, value: Some(value) });
                break;
            }
            if grammar.short_optional_value.contains(letter) {
                let value = (!attached.is_empty()).then(|| attached.to_owned());
                options.push(Parsed { short: Some(letter), long: None, value });
                break;
            }
            if !grammar.short_flags.contains(letter) {
                return Err(UnknownOption(word.clone()));
            }
            options.push(Parsed { short: Some(letter), long: None, value: None });
        }
    }
    // Assignments may follow the options and a `--` (`env -u A -- B=1 cmd`).
    while grammar.assignments && words.get(index).is_some_and(|w| is_assignment(w)) {
        assigned
            .extend(words.get(index).and_then(|w| w.split_once('=')).map(|(n, _)| n.to_owned()));
        index += 1;
    }
    Ok(ParsedCall { options, assigned, rest: words.get(index..).unwrap_or_default() })
}

/// The long option `given` names: itself, or the one option it abbreviates unambiguously.
fn long_option(grammar: &Grammar, given: &str) -> Option<&'static str> {
    let all = || {
        grammar
            .long_with_value
            .iter()
            .chain(grammar.long_optional_value)
            .chain(grammar.long_flags)
            .copied()
    };
    if given.is_empty() {
        return None;
    }
    if let Some(exact) = all().find(|name| *name == given) {
        return Some(exact);
    }
    let mut candidates = all().filter(|name| name.starts_with(given));
    let first = candidates.next()?;
    candidates.next().is_none().then_some(first)
}

/// `NAME=VALUE` as `env` and `sudo` read it before the command.
pub(crate) fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

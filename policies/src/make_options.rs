//! GNU make's command line, read with make's own option table (`make --help` and the manual's
//! "Summary of Options"): make runs recipes from a makefile, which is a file and so read by
//! make's name, but some of its words are makefile text of their own. Those are code given on
//! the command line:
//! - `--eval=STRING` / `-E STRING`: a makefile statement (`$(shell …)`, a rule with a recipe);
//! - `-f -`, `-f /dev/stdin` and other streams: a makefile from standard input;
//! - a variable definition whose value make expands (`$` in it, or a value the shell computes:
//!   `$(shell …)`), a shell assignment (`NAME!=command`), one that sets what runs recipes, adds
//!   options or makefiles (`SHELL`, `.SHELLFLAGS`, `MAKESHELL`, `MAKEFLAGS`, `GNUMAKEFLAGS`,
//!   `MFLAGS`, `MAKEFILES`), or a program or recipe of make's built-in rules (`CC`, `RM`, …, and
//!   the dotted recipe variables such as `LINK.c`: the manual's "Variables Used by Implicit
//!   Rules").
//!
//! An option not in the table is unknown, and unknown counts as code; so does a word the shell
//! computes, unless it is one word standing as the value of an option that takes a plain value
//! (`-C "$dir"`, `-j"$(nproc)"`). A variable a project's own makefile uses as a program
//! (`PYTHON=…`) changes what its recipes run; like a tool's configuration, that is make's
//! behaviour, judged by make's name.

use crate::unreadable::{COMPUTED_NUMBER, COMPUTED_ONE_WORD, COMPUTED_WORD};

/// Short options that take no value.
const SHORT_FLAGS: &str = "bmBdehikLnpqrRsStvw";
/// Short options that take a value (attached or the next word); `E` is code.
const SHORT_WITH_VALUE: &str = "CfIoWE";
/// Short options whose value is optional: attached, or (`-j`, `-l`) a number as the next word.
const SHORT_OPTIONAL: &str = "jlO";

/// Long options: name, whether it takes a value (`Some(true)` required, `Some(false)` optional,
/// `None` none), and whether its value is makefile text or names a makefile.
const LONG: &[(&str, Option<bool>, Value)] = &[
    ("always-make", None, Value::Plain),
    ("assume-new", Some(true), Value::Plain),
    ("assume-old", Some(true), Value::Plain),
    ("check-symlink-times", None, Value::Plain),
    ("debug", Some(false), Value::Plain),
    ("directory", Some(true), Value::Plain),
    ("dry-run", None, Value::Plain),
    ("environment-overrides", None, Value::Plain),
    ("eval", Some(true), Value::Code),
    ("file", Some(true), Value::Makefile),
    ("help", None, Value::Plain),
    ("ignore-errors", None, Value::Plain),
    ("include-dir", Some(true), Value::Plain),
    ("jobs", Some(false), Value::Plain),
    ("jobserver-auth", Some(true), Value::Plain),
    ("jobserver-style", Some(true), Value::Plain),
    ("just-print", None, Value::Plain),
    ("keep-going", None, Value::Plain),
    ("load-average", Some(false), Value::Plain),
    ("makefile", Some(true), Value::Makefile),
    ("max-load", Some(false), Value::Plain),
    ("new-file", Some(true), Value::Plain),
    ("no-builtin-rules", None, Value::Plain),
    ("no-builtin-variables", None, Value::Plain),
    ("no-keep-going", None, Value::Plain),
    ("no-print-directory", None, Value::Plain),
    ("no-silent", None, Value::Plain),
    ("old-file", Some(true), Value::Plain),
    ("output-sync", Some(false), Value::Plain),
    ("print-data-base", None, Value::Plain),
    ("print-directory", None, Value::Plain),
    ("question", None, Value::Plain),
    ("quiet", None, Value::Plain),
    ("recon", None, Value::Plain),
    ("shuffle", Some(false), Value::Plain),
    ("silent", None, Value::Plain),
    ("stop", None, Value::Plain),
    ("touch", None, Value::Plain),
    ("trace", None, Value::Plain),
    ("version", None, Value::Plain),
    ("warn-undefined-variables", None, Value::Plain),
    ("what-if", Some(true), Value::Plain),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Value {
    Plain,
    Code,
    Makefile,
}

/// Variables whose value decides what runs recipes, adds options or makefiles to make itself,
/// or names a program of make's built-in rules.
const CODE_VARIABLES: &[&str] = &[
    "SHELL",
    ".SHELLFLAGS",
    "MAKESHELL",
    "MAKEFLAGS",
    "GNUMAKEFLAGS",
    "MFLAGS",
    "MAKEFILES",
    "AR",
    "AS",
    "CC",
    "CXX",
    "CPP",
    "FC",
    "M2C",
    "PC",
    "CO",
    "GET",
    "LEX",
    "YACC",
    "LINT",
    "MAKEINFO",
    "TEX",
    "TEXI2DVI",
    "WEAVE",
    "CWEAVE",
    "TANGLE",
    "CTANGLE",
    "RM",
    "LD",
    "OUTPUT_OPTION",
];

/// Why make's words `args` carry code or cannot be read, or `None` when they carry none.
pub(crate) fn make_code(args: &[String]) -> Option<String> {
    let mut index = 0;
    let mut options_end = false;
    while let Some(arg) = args.get(index) {
        index += 1;
        if arg.contains(COMPUTED_WORD) {
            // A computed word may be any option or a definition, unless it is one word that
            // starts with an option whose value it is (`-j"$(nproc)"`, `--directory="$d"`).
            let known = arg.strip_prefix(COMPUTED_ONE_WORD);
            if !known.is_some_and(computed_value_is_plain) {
                return Some("a word of make's command line is computed by the shell".to_owned());
            }
            continue;
        }
        if options_end || !arg.starts_with('-') || arg == "-" {
            if let Some(why) = definition_code(arg) {
                return Some(why);
            }
            continue;
        }
        if arg == "--" {
            options_end = true;
            continue;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (given, attached) = match long.split_once('=') {
                Some((given, value)) => (given, Some(value.to_owned())),
                None => (long, None),
            };
            let Some((name, takes, kind)) = long_option(given) else {
                return Some(format!("make's option `--{given}` is not one cordon knows"));
            };
            let value = match (takes, attached) {
                (None, Some(_)) => return Some(format!("make's `--{name}` takes no value")),
                (Some(true), None) => {
                    index += 1;
                    args.get(index - 1).cloned()
                }
                (_, attached) => attached,
            };
            if let Some(why) = value_code(kind, name, value.as_deref()) {
                return Some(why);
            }
            continue;
        }
        // A cluster of short options: `-sj4`, `-kC dir`, `-Eexpr`.
        let letters: Vec<char> = arg[1..].chars().collect();
        let mut at = 0;
        while let Some(&letter) = letters.get(at) {
            at += 1;
            let attached: String = letters[at..].iter().collect();
            if SHORT_FLAGS.contains(letter) {
                continue;
            }
            if SHORT_WITH_VALUE.contains(letter) {
                let value = if attached.is_empty() {
                    index += 1;
                    args.get(index - 1).cloned()
                } else {
                    Some(attached)
                };
                let kind = match letter {
                    'E' => Value::Code,
                    'f' => Value::Makefile,
                    _ => Value::Plain,
                };
                if let Some(why) = value_code(kind, &format!("-{letter}"), value.as_deref()) {
                    return Some(why);
                }
                break;
            }
            if SHORT_OPTIONAL.contains(letter) {
                let numeric_next = args.get(index).is_some_and(|next| {
                    !next.is_empty() && next.chars().all(|c| c.is_ascii_digit() || c == '.')
                });
                if attached.is_empty() && letter != 'O' && numeric_next {
                    index += 1;
                }
                break;
            }
            return Some(format!("make's option `-{letter}` is not one cordon knows"));
        }
    }
    None
}

/// Whether a word that starts with `known` and continues with a computed part is a plain
/// option's value: `-j…`, `-C…` (a short option with a value, alone in its cluster) or
/// `--jobs=…` (an exact long option with a plain value).
fn computed_value_is_plain(known: &str) -> bool {
    if let Some(long) = known.strip_prefix("--") {
        return long.strip_suffix('=').is_some_and(|name| {
            LONG.iter().any(|(option, takes, kind)| {
                *option == name && takes.is_some() && *kind == Value::Plain
            })
        });
    }
    let mut letters = known.strip_prefix('-').unwrap_or_default().chars();
    match (letters.next(), letters.next()) {
        (Some(letter), None) => "CIoWjlO".contains(letter),
        _ => false,
    }
}

/// The long option `given` names: exact, or the one option it abbreviates.
fn long_option(given: &str) -> Option<(&'static str, Option<bool>, Value)> {
    if given.is_empty() {
        return None;
    }
    if let Some(exact) = LONG.iter().find(|(name, ..)| *name == given) {
        return Some(*exact);
    }
    let mut candidates = LONG.iter().filter(|(name, ..)| name.starts_with(given));
    match (candidates.next(), candidates.next()) {
        (Some(only), None) => Some(*only),
        _ => None,
    }
}

fn value_code(kind: Value, option: &str, value: Option<&str>) -> Option<String> {
    // A computed value: one word keeps it a value (unless it names a makefile, which may be a
    // stream); anything that may split can hold options of its own.
    if let Some(value) = value.filter(|v| v.contains(COMPUTED_WORD)) {
        let one_word = value.starts_with(COMPUTED_ONE_WORD) || value == COMPUTED_NUMBER;
        if !one_word || kind != Value::Plain {
            return Some(format!("make's `{option}` is given a value the shell computes"));
        }
        return None;
    }
    match (kind, value) {
        (Value::Code, _) => Some(format!("make's `{option}` evaluates makefile text it is given")),
        (Value::Makefile, Some(file))
            if file == "-" || file.starts_with("/dev/") || file.starts_with("/proc/") =>
        {
            Some(format!("make's `{option} {file}` reads a makefile from a stream"))
        }
        (Value::Makefile | Value::Plain, _) => None,
    }
}

/// Why a command-line word that defines a variable carries code, if it does.
fn definition_code(word: &str) -> Option<String> {
    let (name, value) = word.split_once('=')?;
    if name.ends_with('!') {
        return Some(format!("make's `{name}=` runs a shell command"));
    }
    let bare = name.trim_end_matches([':', '+', '?']).trim();
    let bare = bare.strip_prefix("override ").unwrap_or(bare).trim();
    if CODE_VARIABLES.contains(&bare) || bare.contains('.') {
        return Some(format!("make's `{bare}=` decides how recipes run"));
    }
    if value.contains('$') || name.contains('$') {
        return Some(format!("make expands `{word}`, and an expansion may run a shell command"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn makefile_text_on_the_command_line_is_code() {
        for args in [
            &["-f", "/dev/null", "--eval", "x: ; rm -f v", "x"][..],
            &["--eval=$(shell rm -f v)"],
            &["--ev", "x"],
            &["-E", "x"],
            &["-sEx"],
            &["-kE", "x"],
            &["-f", "-"],
            &["-f/dev/stdin"],
            &["--file=/proc/self/fd/0"],
            &["x!=rm -f v"],
            &["SHELL=/bin/rm"],
            &["override SHELL:=/bin/rm"],
            &[".SHELLFLAGS=-c rm"],
            &["MAKEFLAGS=--eval=x"],
            &["CC=$(shell rm -f v)"],
            &["--no-such-option"],
            &["-Z"],
            &["--"],
            &["--e"],
            &["--silent=yes"],
            &["\u{0}\""],
            &["\u{0}\"-E"],
            &["\u{0}\"--eval="],
            &["\u{0}\"-sj"],
            &["-C", "\u{0}", "all"],
            &["-f", "\u{0}\""],
            &["\u{0}\"PREFIX="],
            &["CC=rm"],
            &["LINK.c=rm"],
            &["MAKEFILES=/dev/stdin"],
        ] {
            let args = words(args);
            if args == ["--"] || args == ["--e"] {
                // `--` alone is plain; `--e` is ambiguous (environment-overrides, eval).
                assert_eq!(make_code(&args).is_some(), args == ["--e"], "{args:?}");
                continue;
            }
            assert!(make_code(&args).is_some(), "{args:?}");
        }
    }

    #[test]
    fn everyday_make_calls_are_plain() {
        for args in [
            &["test"][..],
            &["-j4", "build"],
            &["-j", "8", "all"],
            &["-C", "sub", "install"],
            &["-f", "Makefile.ci", "check"],
            &["--directory=sub", "-k", "-s"],
            &["-sj", "test"],
            &["CFLAGS=-O2", "V=1", "PREFIX=/usr/local", "DESTDIR=out"],
            &["-n", "--no-print-directory", "-O"],
            &["--jobs", "lint"],
            &["--dry", "x"],
            &["\u{0}\"-j", "build"],
            &["\u{0}\"--directory=", "all"],
            &["-C", "\u{0}\"", "all"],
        ] {
            assert_eq!(make_code(&words(args)), None, "{args:?}");
        }
    }
}

//! Command normalization for rules, so that no spelling of a command escapes a rule its plain
//! spelling would meet: the program
//! by its basename, transparent wrappers unwrapped, git's global options skipped.
//!
//! Also the list of programs that run arbitrary code given to them (shells, wrappers,
//! interpreters): "always allow" is never recorded for those, since a prefix rule for `sh`
//! would approve every `sh -c …`.

use crate::script_words::MULTI_CALL;

/// Programs that run another program named in their arguments.
const WRAPPERS: &[&str] = &[
    "env",
    "command",
    "builtin",
    "exec",
    "nice",
    "nohup",
    "timeout",
    "stdbuf",
    "time",
    "xargs",
    "sudo",
    "doas",
    "su",
    "runuser",
    "setsid",
    "setpriv",
    "unshare",
    "nsenter",
    "chroot",
    "ionice",
    "taskset",
    "chrt",
    "flock",
    "watch",
    "strace",
    "ltrace",
    "gdb",
    "script",
    "parallel",
    "find",
    "codex-linux-sandbox",
    "cordon",
    "firejail",
    "bwrap",
    "systemd-run",
];

/// Interpreters that run code given on the command line or in a file.
const INTERPRETERS: &[&str] = &[
    "python",
    "python2",
    "python3",
    "node",
    "nodejs",
    "deno",
    "bun",
    "perl",
    "ruby",
    "php",
    "lua",
    "luajit",
    "tclsh",
    "wish",
    "Rscript",
    "R",
    "julia",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "osascript",
    "pwsh",
    "powershell",
    "java",
    "jshell",
    "scala",
    "groovy",
    "irb",
    "erl",
    "elixir",
    "iex",
    "ghci",
    "runghc",
    "swift",
    "make",
    "gmake",
    "npx",
    "pnpx",
    "bunx",
    "eval",
    "source",
    ".",
];

/// The file name of a program word (`/usr/bin/git` -> `git`, `git` -> `git`). Any path
/// counts here: it is used to find what a command *might* be, for rules that forbid or ask.
pub fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Whether the program runs arbitrary code given in its arguments (a shell, a wrapper such as
/// `env` or `xargs`, an interpreter such as `python3`): no prefix rule can describe what such a
/// command does. Versioned names count too (`python3.12`, `node18`).
pub fn runs_arbitrary_code(program: &str) -> bool {
    let name = basename(program);
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
    crate::script_words::is_shell_name(program)
        || MULTI_CALL.contains(&name)
        || [name, stem].iter().any(|n| WRAPPERS.contains(n) || INTERPRETERS.contains(n))
}

/// How many wrappers deep [`normalize`] unwraps (`env nice timeout 5 git push`); the cap bounds
/// the work on hostile input.
const MAX_UNWRAP: usize = 8;

/// The command as rules that forbid or ask see it: the program by its basename, transparent
/// wrappers (`env`, `command`, `builtin`, `exec`, `nice`, `nohup`, `timeout`, `stdbuf`, `time`,
/// `sudo`, `doas`, `setsid`, `ionice`, `xargs`) unwrapped, git's global options (`-C`, `-c`,
/// `--git-dir`, `--no-pager`, …) skipped. Each wrapper's own options are skipped as that
/// program parses them; an option it does not know stops the unwrapping there (the wrapper
/// itself is then the program, which is what a rule for it would match).
pub fn normalize(command: &[String]) -> Vec<String> {
    let mut words: &[String] = command;
    for _ in 0..MAX_UNWRAP {
        let Some((first, rest)) = words.split_first() else { break };
        match unwrap_wrapper(basename(first), rest) {
            Some(inner) if !inner.is_empty() => words = inner,
            _ => break,
        }
    }
    let Some((first, rest)) = words.split_first() else { return Vec::new() };
    let program = basename(first).to_owned();
    let rest = if program == "git" { skip_git_global_options(rest) } else { rest };
    std::iter::once(program).chain(rest.iter().cloned()).collect()
}

/// The wrapped command of `name rest…`, or `None` when `name` is not a wrapper (or its options
/// are not understood).
fn unwrap_wrapper<'a>(name: &str, rest: &'a [String]) -> Option<&'a [String]> {
    match name {
        "env" => {
            skip_options(rest, &["-u", "--unset", "-C", "--chdir", "-S", "--split-string"], |w| {
                w.contains('=') && !w.starts_with('-') // NAME=value assignments
            })
        }
        "command" | "builtin" | "nohup" | "setsid" => skip_options(rest, &[], |_| false),
        "exec" => skip_options(rest, &["-a"], |_| false),
        "time" => skip_options(rest, &["-f", "-o", "--format", "--output"], |_| false),
        "nice" => skip_options(rest, &["-n", "--adjustment"], |_| false),
        "ionice" => {
            skip_options(rest, &["-c", "-n", "-p", "-P", "-u", "--class", "--classdata"], |_| false)
        }
        "stdbuf" => {
            skip_options(rest, &["-i", "-o", "-e", "--input", "--output", "--error"], |_| false)
        }
        "sudo" | "doas" => skip_options(
            rest,
            &[
                "-u",
                "-g",
                "-C",
                "-D",
                "-h",
                "-p",
                "-r",
                "-t",
                "-U",
                "-T",
                "--user",
                "--group",
                "--chdir",
                "--host",
                "--prompt",
                "--role",
                "--type",
                "--other-user",
                "--command-timeout",
                "--close-from",
            ],
            |w| w.contains('=') && !w.starts_with('-'),
        ),
        "timeout" => {
            let after = skip_options(rest, &["-s", "--signal", "-k", "--kill-after"], |_| false)?;
            after.get(1..) // the DURATION operand
        }
        "xargs" => skip_options(
            rest,
            &[
                "-a",
                "-d",
                "-E",
                "-e",
                "-I",
                "-i",
                "-L",
                "-l",
                "-n",
                "-P",
                "-s",
                "--arg-file",
                "--delimiter",
                "--eof",
                "--replace",
                "--max-lines",
                "--max-args",
                "--max-procs",
                "--max-chars",
                "--process-slot-var",
            ],
            |_| false,
        ),
        _ => None,
    }
}

/// Skips leading options (`-x`, `--long`, `--long=v`, and for the options in `with_value`
/// their separate value; attached short values like `-n5` or `-iL` count as one word) and the
/// words `also_skip` accepts; stops at `--` (skipped) or the first operand.
fn skip_options<'a>(
    words: &'a [String],
    with_value: &[&str],
    also_skip: impl Fn(&str) -> bool,
) -> Option<&'a [String]> {
    let mut index = 0;
    while let Some(word) = words.get(index) {
        if word == "--" {
            return words.get(index + 1..);
        }
        if also_skip(word) {
            index += 1;
            continue;
        }
        if !word.starts_with('-') || word == "-" {
            break;
        }
        let takes_separate_value = with_value.contains(&word.as_str());
        index += if takes_separate_value { 2 } else { 1 };
    }
    words.get(index..)
}

/// git's options before the subcommand, with the ones that take a separate value.
fn skip_git_global_options(words: &[String]) -> &[String] {
    const WITH_VALUE: &[&str] = &[
        "-C",
        "-c",
        "--git-dir",
        "--work-tree",
        "--namespace",
        "--exec-path",
        "--super-prefix",
        "--config-env",
        "--attr-source",
        "--list-cmds",
    ];
    let mut index = 0;
    while let Some(word) = words.get(index) {
        if word == "--" {
            index += 1;
            break;
        }
        if !word.starts_with('-') {
            break;
        }
        index += if WITH_VALUE.contains(&word.as_str()) { 2 } else { 1 };
    }
    words.get(index..).unwrap_or_default()
}

#[cfg(test)]
#[path = "normalize_tests.rs"]
mod tests;

//! The known-safe list: read-only commands that `untrusted` runs without asking.
//!
//! Being known-safe never lifts the sandbox; it only skips the question. The list is
//! deliberately short and every check errs towards "not safe": a command that can run another
//! program (`env CMD`, `xargs`, `find -exec`, `rg --pre`, `git -c`) or write a file (`sort -o`,
//! `sed -i`, `uniq IN OUT`, `git log --output`) is not on it in that form. GNU tools and git
//! accept unambiguous abbreviations of long options (`--out` for `--output`) and options after
//! operands, so every argument is checked, and any abbreviation of a dangerous option counts.

use crate::shell_script::{MAX_SHELL_NESTING, plain_shell_commands, program_name};

/// Commands that only read or print, whatever their arguments.
const ALWAYS_SAFE: &[&str] = &[
    "basename", "cat", "cut", "df", "dirname", "du", "echo", "false", "grep", "head", "id", "ls",
    "nl", "pwd", "readlink", "realpath", "rev", "seq", "stat", "tac", "tail", "tr", "true",
    "uname", "wc", "which", "whoami",
];

/// `find` actions that run programs, delete, or write files.
const FIND_UNSAFE_PREFIXES: &[&str] = &["-exec", "-ok", "-delete", "-fprint", "-fls"];

/// `git` subcommands that only read the repository.
const GIT_READ_ONLY_SUBCOMMANDS: &[&str] = &["status", "log", "diff", "show"];

/// Long `git` options that run programs (external diff, textconv filters, a pager, other
/// binaries), write files, or point git at other configuration.
const GIT_UNSAFE_LONG_OPTIONS: &[&str] = &[
    "output",
    "ext-diff",
    "textconv",
    "exec",
    "exec-path",
    "upload-pack",
    "receive-pack",
    "paginate",
    "config",
    "config-env",
    "git-dir",
    "work-tree",
];

/// Long `rg` options that run programs: preprocessors, decompressors, the hostname helper.
const RG_UNSAFE_LONG_OPTIONS: &[&str] = &["pre", "pre-glob", "search-zip", "hostname-bin"];

/// Whether `command` is on the known-safe list. `bash|sh|zsh -c|-lc SCRIPT` is safe only if SCRIPT
/// is plain words joined by `&&`, `||`, `;`, `|` (see [`plain_shell_commands`]) and every inner
/// command is safe. Never panics on any input.
pub fn is_known_safe(command: &[String]) -> bool {
    is_safe_at_depth(command, 0)
}

/// Builtins of every shell the known-safe list accepts: inside a script the shell runs them
/// itself, without looking a program up.
const SHELL_BUILTINS: &[&str] = &["echo", "false", "printf", "pwd", "true"];

/// The program words of a known-safe command that are looked up as files when it runs: its
/// first word, and inside a plain shell script every command's program but the shell's own
/// builtins. The caller checks that each resolves to a file the command cannot have planted.
pub fn known_safe_programs(command: &[String]) -> Vec<String> {
    let mut programs = Vec::new();
    let mut pending = vec![(command.to_vec(), 0)];
    while let Some((current, depth)) = pending.pop() {
        let Some(first) = current.first() else { continue };
        if depth == 0 || !SHELL_BUILTINS.contains(&first.as_str()) {
            programs.push(first.clone());
        }
        if depth < MAX_SHELL_NESTING {
            if let Some(inner) = plain_shell_commands(&current) {
                pending.extend(inner.into_iter().map(|c| (c, depth + 1)));
            }
        }
    }
    programs
}

fn is_safe_at_depth(command: &[String], depth: usize) -> bool {
    if let Some(inner) = plain_shell_commands(command) {
        // An empty script does nothing, but there is nothing to vouch for either.
        return depth < MAX_SHELL_NESTING
            && !inner.is_empty()
            && inner.iter().all(|c| is_safe_at_depth(c, depth + 1));
    }
    let Some((first, args)) = command.split_first() else {
        return false;
    };
    let Some(name) = program_name(first) else {
        return false;
    };
    if ALWAYS_SAFE.contains(&name) {
        return true;
    }
    match name {
        // `env` with arguments runs a program (or changes the environment of one).
        "env" => args.is_empty(),
        // `printf -v NAME` assigns a shell variable (PATH, say) that changes what later words run.
        "printf" => !args.iter().any(|a| a.starts_with("-v")),
        "date" => !args.iter().any(|a| is_long_option(a, "set") || is_short_option(a, 's')),
        // `-C` writes a compiled magic file; `-z`/`-Z` may run decompressors found on PATH.
        "file" => !args.iter().any(|a| {
            is_long_option(a, "compile")
                || is_long_option(a, "uncompress")
                || is_long_option(a, "uncompress-noreport")
                || is_short_option(a, 'C')
                || is_short_option(a, 'z')
                || is_short_option(a, 'Z')
        }),
        "sort" => !args.iter().any(|a| {
            is_long_option(a, "output")
                || is_long_option(a, "compress-program")
                || is_short_option(a, 'o')
        }),
        "uniq" => uniq_is_safe(args),
        "find" => !args.iter().any(|a| FIND_UNSAFE_PREFIXES.iter().any(|p| a.starts_with(p))),
        "sed" => sed_is_safe(args),
        "rg" => !args.iter().any(|a| {
            RG_UNSAFE_LONG_OPTIONS.iter().any(|o| is_long_option(a, o)) || is_short_option(a, 'z')
        }),
        "git" => git_is_safe(args),
        _ => false,
    }
}

/// Whether `arg` is the long option `name` or may be read as an abbreviation of it
/// (`--out=f` is `--output=f` to getopt_long and to git's option parser).
fn is_long_option(arg: &str, name: &str) -> bool {
    let Some(given) = arg.strip_prefix("--") else {
        return false;
    };
    let given = given.split_once('=').map_or(given, |(key, _)| key);
    !given.is_empty() && name.starts_with(given)
}

/// Whether `arg` is a cluster of short options (`-rno`) that contains `flag`. The letter may
/// also be part of another option's value (`-tx`): then the command is called unsafe, which
/// only costs a question.
fn is_short_option(arg: &str, flag: char) -> bool {
    arg.strip_prefix('-').is_some_and(|rest| !rest.starts_with('-') && rest.contains(flag))
}

/// `uniq [OPTION]… [INPUT [OUTPUT]]` writes OUTPUT: safe with at most one operand.
fn uniq_is_safe(args: &[String]) -> bool {
    const TAKES_VALUE: &[&str] =
        &["-f", "-s", "-w", "--skip-fields", "--skip-chars", "--check-chars"];
    let mut operands = 0;
    let mut only_operands = false;
    let mut skip_value = false;
    for arg in args {
        if skip_value {
            skip_value = false;
        } else if only_operands || arg == "-" || !arg.starts_with('-') {
            operands += 1;
        } else if arg == "--" {
            only_operands = true;
        } else {
            skip_value = TAKES_VALUE.contains(&arg.as_str());
        }
    }
    operands <= 1
}

/// `sed -n RANGEp [FILE]…`: print a line range and nothing else. Any other script may write
/// (`w`), execute (`e`) or edit in place (`-i`).
fn sed_is_safe(args: &[String]) -> bool {
    let [flag, script, files @ ..] = args else {
        return false;
    };
    flag == "-n" && is_print_range(script) && files.iter().all(|f| !f.starts_with('-'))
}

/// `10p`, `1,5p`, `$p`, `3,$p`.
fn is_print_range(script: &str) -> bool {
    let Some(range) = script.strip_suffix('p') else {
        return false;
    };
    let is_address = |a: &str| a == "$" || (!a.is_empty() && a.bytes().all(|b| b.is_ascii_digit()));
    match range.split_once(',') {
        Some((start, end)) => is_address(start) && is_address(end),
        None => is_address(range),
    }
}

/// `git status|log|diff|show` with no global options but `--no-pager`/`-P` (so no `-c`, `-C`,
/// `--git-dir`, `-p`) and none of the options that run programs or write files. `-c`/`-o`
/// after the subcommand are refused too: they are config/output flags in other git commands,
/// and refusing them only costs a question.
fn git_is_safe(args: &[String]) -> bool {
    let mut words = args.iter().skip_while(|a| *a == "--no-pager" || *a == "-P");
    let Some(subcommand) = words.next() else {
        return false;
    };
    GIT_READ_ONLY_SUBCOMMANDS.contains(&subcommand.as_str())
        && !words.any(|arg| {
            GIT_UNSAFE_LONG_OPTIONS.iter().any(|o| is_long_option(arg, o))
                || arg.starts_with("-c")
                || arg.starts_with("-o")
        })
}

#[cfg(test)]
#[path = "safe_commands_tests.rs"]
mod tests;

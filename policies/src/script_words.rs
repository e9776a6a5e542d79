//! Every word that might be a program name in a shell call's inline script, for scripts that are
//! not plain.
//!
//! [`plain_shell_commands`](crate::plain_shell_commands) gives exact commands, but only for plain
//! scripts. For any other script (`\rm`, `r\<newline>m`, `"rm"`, `$(rm x)`, `x=1 rm`, `rm 2>&1`,
//! other shells) rule matching still needs to know whether a `forbidden` or `prompt` program
//! appears anywhere. [`script_words`] answers with a deliberately crude over-approximation:
//! it removes every kind of quoting and escaping, splits on everything a shell might split on, and
//! reads the result again (up to [`MAX_READINGS`] times) so that scripts nested in quotes are seen
//! too. It cannot see names a script computes (`$x`, the output of `$(…)`, a glob that expands to
//! `/bin/rm`, `eval` of a built string): a caller that needs certainty must treat a non-plain
//! script as able to run anything.

/// Programs that are shells: given a script, they run anything in it.
const SHELLS: &[&str] = &[
    "sh", "bash", "rbash", "zsh", "dash", "ksh", "mksh", "lksh", "pdksh", "oksh", "ash", "hush",
    "yash", "posh", "fish", "csh", "tcsh", "elvish", "nu", "xonsh", "ion", "rc", "es",
];

/// Multi-call binaries whose first argument names the applet (`busybox sh -c …`).
pub(crate) const MULTI_CALL: &[&str] = &["busybox", "toybox"];

/// How many times the words are read again for scripts nested in quotes: `bash -c "sh -c 'rm'"`
/// needs two readings, and each nesting level needs one more quoting level.
const MAX_READINGS: usize = 6;

/// Characters at which a shell (any of them) might end a word or start an expansion: blanks,
/// operators, redirections, grouping, expansion, assignment, brace-expansion commas, history and
/// comments, and any quoting or escape left over.
const SPLIT_AT: &[char] = &[
    ' ', '\t', '\n', '\r', '\x0b', '\x0c', ';', '|', '&', '(', ')', '<', '>', '{', '}', '$', '`',
    '=', ',', '!', '#', '\'', '"', '\\',
];

/// Whether `command` runs a shell: its program's file name (any directory, a leading `-` as in a
/// login shell's `-bash`, a version suffix as in `ksh93` or `bash-5.2`) is a known shell, or it
/// is `busybox`/`toybox` running one. True with or without a script: `bash script.sh` and a bare
/// `bash` run arbitrary code too.
pub fn is_shell_call(command: &[String]) -> bool {
    shell_arguments(command).is_some()
}

/// The arguments after the shell (after `busybox sh`), if `command` runs a shell.
fn shell_arguments(command: &[String]) -> Option<&[String]> {
    let (program, args) = command.split_first()?;
    if is_shell_name(program) {
        return Some(args);
    }
    let (applet, args) = args.split_first()?;
    (MULTI_CALL.contains(&file_name(program)) && is_shell_name(applet)).then_some(args)
}

/// Whether `program` names a shell (`/bin/bash`, `-zsh`, `bash5.2`): the one list of shells,
/// shared with [`crate::normalize::runs_arbitrary_code`].
pub(crate) fn is_shell_name(program: &str) -> bool {
    let name = file_name(program).trim_start_matches('-');
    let name = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
    SHELLS.contains(&name)
}

/// The part after the last `/`.
fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Whether the shell's arguments carry an inline script: a short-option cluster with `c`
/// (`-c`, `-lc`, `-ec`, `-xc`, `+c`, anywhere among the arguments, in any order), or fish's
/// `--command`, `-C`, `--init-command`.
fn has_inline_script(args: &[String]) -> bool {
    args.iter().any(|arg| {
        if let Some(long) = arg.strip_prefix("--") {
            // getopt_long accepts any unambiguous abbreviation (`--comm=…`).
            let name = long.split_once('=').map_or(long, |(name, _)| name);
            return !name.is_empty()
                && ("command".starts_with(name) || "init-command".starts_with(name));
        }
        arg.strip_prefix(['-', '+']).is_some_and(|letters| letters.contains(['c', 'C']))
    })
}

/// The inline script of a shell call (`bash -lc S`, `sh -c -- S`, `zsh -o x -c S`, `fish
/// --command=S`): the first operand after the options, or the value attached to a long
/// `--command=`. `None` when there is none or it cannot be located.
pub(crate) fn inline_script(command: &[String]) -> Option<&str> {
    let args = shell_arguments(command)?;
    if !has_inline_script(args) {
        return None;
    }
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        index += 1;
        if arg == "--" {
            return args.get(index).map(String::as_str);
        }
        if let Some(long) = arg.strip_prefix("--") {
            match long.split_once('=') {
                Some((name, value)) if "command".starts_with(name) && !name.is_empty() => {
                    return Some(value);
                }
                _ if matches!(long, "rcfile" | "init-file") => index += 1,
                _ => {}
            }
            continue;
        }
        if let Some(letters) = arg.strip_prefix(['-', '+']) {
            if letters.contains(['o', 'O']) {
                index += 1; // `-o OPTION`
            }
            continue;
        }
        return Some(arg);
    }
    None
}

/// For a shell call with an inline script (`bash -lc S`, `sh -c -- S`, `bash -l -c S`,
/// `bash --login -c S`, `zsh -o x -c S`, `busybox sh -c S`, `fish --command=S`, …): every word
/// that might be a program name anywhere in it, with the file name of each path (`/bin/rm`
/// yields `/bin/rm` and `rm`), sorted and without duplicates. All the shell's arguments are read,
/// not only the script: telling the script apart from option values and positional parameters
/// differs between shells, and reading more only adds words.
///
/// `None` when `command` is not a shell call or carries no inline script (`bash script.sh`,
/// `sh -s`, a bare `bash` reading stdin): then the code is not on the command line at all.
///
/// Never panics; the work is linear in the input times [`MAX_READINGS`].
pub fn script_words(command: &[String]) -> Option<Vec<String>> {
    let args = shell_arguments(command)?;
    if !has_inline_script(args) {
        return None;
    }
    let mut words = Vec::new();
    for arg in args {
        collect_words(arg, &mut words);
    }
    let paths: Vec<String> = words
        .iter()
        .filter(|w| w.contains('/'))
        .map(|w| file_name(w).to_owned())
        .filter(|name| !name.is_empty())
        .collect();
    words.extend(paths);
    words.sort();
    words.dedup();
    Some(words)
}

/// Adds the words of `text` and of its readings with quoting removed, as often as that changes
/// the text (up to [`MAX_READINGS`]).
fn collect_words(text: &str, words: &mut Vec<String>) {
    let mut current = text.replace("\\\n", "");
    for _ in 0..MAX_READINGS {
        // Quotes and backslashes simply deleted, as a naive reader would (`"r"m`, `\rm`).
        let naive: String = current.chars().filter(|c| !matches!(c, '\'' | '"' | '\\')).collect();
        // Quotes read as a shell reads them, `$'…'` decoded (`r$'\x6d'` is `rm`).
        let unquoted = unquote(&current);
        // Expansions taken to be empty (`r${x}m` and `r$(true)m` are `rm` when they are).
        let without_expansions = unquote(&drop_expansions(&current));
        for reading in [&current, &naive, &unquoted, &without_expansions] {
            split_words(reading, words);
        }
        let next = unquoted.replace("\\\n", "");
        if next == current {
            break;
        }
        current = next;
    }
}

fn split_words(text: &str, words: &mut Vec<String>) {
    words.extend(text.split(SPLIT_AT).filter(|w| !w.is_empty()).map(str::to_owned));
}

/// One level of quote removal: `'…'` verbatim, `"…"` and `$"…"` without the quotes (a backslash
/// keeps the character after it), `$'…'` with its escapes decoded, a backslash outside quotes
/// dropped (and a backslash-newline with it). Unbalanced quotes run to the end of the text.
fn unquote(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(next) => out.push(next),
            },
            '\'' => out.extend(chars.by_ref().take_while(|&c| c != '\'')),
            '"' => double_quoted(&mut chars, &mut out),
            '$' if chars.peek() == Some(&'\'') => {
                chars.next();
                ansi_c_quoted(&mut chars, &mut out);
            }
            '$' if chars.peek() == Some(&'"') => {
                chars.next();
                double_quoted(&mut chars, &mut out);
            }
            _ => out.push(c),
        }
    }
    out
}

fn double_quoted(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, out: &mut String) {
    while let Some(c) = chars.next() {
        match c {
            '"' => return,
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(next) => out.push(next),
            },
            _ => out.push(c),
        }
    }
}

/// The inside of `$'…'` after the opening quote, decoded as bash does (`\x6d`, `\155`, `\u006d`,
/// `\n`, `\cM`, …); an escape bash does not know keeps its character.
fn ansi_c_quoted(chars: &mut std::iter::Peekable<std::str::Chars<'_>>, out: &mut String) {
    while let Some(c) = chars.next() {
        if c == '\'' {
            return;
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(escape) = chars.next() else {
            return;
        };
        let decoded = match escape {
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'e' | 'E' => Some('\x1b'),
            'f' => Some('\x0c'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\x0b'),
            'x' => read_number(chars, 16, 2, None),
            'u' => read_number(chars, 16, 4, None),
            'U' => read_number(chars, 16, 8, None),
            '0'..='7' => read_number(chars, 8, 3, Some(escape)),
            'c' => chars.next().and_then(|c| char::from_u32(u32::from(c) & 0x1f)),
            other => Some(other),
        };
        out.extend(decoded);
    }
}

/// The character whose code is `first` and up to `max_digits` digits in `radix` (in total).
fn read_number(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    radix: u32,
    max_digits: usize,
    first: Option<char>,
) -> Option<char> {
    let mut digits: String = first.into_iter().collect();
    while digits.len() < max_digits {
        match chars.peek() {
            Some(d) if d.is_digit(radix) => {
                digits.push(*d);
                chars.next();
            }
            _ => break,
        }
    }
    u32::from_str_radix(&digits, radix).ok().and_then(char::from_u32)
}

/// `text` with parameter expansions (`$x`, `${…}`, `$1`, `$@`), command substitutions (`$(…)`,
/// `` `…` ``) and arithmetic (`$((…))`) removed, brackets balanced naively.
fn drop_expansions(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek().copied()) {
            ('$', Some(open @ ('(' | '{'))) => {
                let close = if open == '(' { ')' } else { '}' };
                let mut depth = 0usize;
                for inner in chars.by_ref() {
                    if inner == open {
                        depth += 1;
                    } else if inner == close {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            break;
                        }
                    }
                }
            }
            ('$', Some(name)) if name.is_ascii_alphanumeric() || name == '_' => {
                while chars.peek().is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_') {
                    chars.next();
                }
            }
            ('$', Some('@' | '*' | '#' | '?' | '-' | '$' | '!')) => {
                chars.next();
            }
            ('`', _) => {
                for inner in chars.by_ref() {
                    if inner == '`' {
                        break;
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
#[path = "script_words_tests.rs"]
mod tests;

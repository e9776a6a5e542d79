//! Whether a `sed` or `awk` command line runs other programs: sed's `e` command and the `e`
//! flag of `s///`, awk's `system()` and pipes, or a script cordon cannot see (from a file, or
//! a word the shell computes). Options are read in every spelling getopt takes (clusters such
//! as `-nes/…/e`, attached values, abbreviated long options such as `--expr=`); a script whose
//! syntax goes beyond what is followed here (groups, custom delimiters, address flags,
//! escapes, `;` that may lie inside a regex) counts as running commands when it holds an `e`
//! at all, which only costs a question.

use crate::unreadable::COMPUTED_WORD;

/// Whether a long option `given` (without `--`, before any `=`) may name `name`.
fn abbreviates(given: &str, name: &str) -> bool {
    !given.is_empty() && name.starts_with(given)
}

/// A sed command line that runs commands (GNU `e`, the `e` flag of `s///`), or whose script
/// cordon cannot see (`-f`, a computed word): `--sandbox` turns both off.
pub(crate) fn sed_runs_commands(args: &[String]) -> bool {
    if args
        .iter()
        .any(|a| a.len() > 3 && a.starts_with("--sa") && "--sandbox".starts_with(a.as_str()))
    {
        return false;
    }
    if args.iter().any(|a| a.contains(COMPUTED_WORD)) {
        return true;
    }
    let mut scripts: Vec<String> = Vec::new();
    let mut given_by_option = false;
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        index += 1;
        if arg == "--" {
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (given, attached) = match long.split_once('=') {
                Some((given, value)) => (given, Some(value.to_owned())),
                None => (long, None),
            };
            if abbreviates(given, "file") {
                return true;
            }
            if abbreviates(given, "expression") {
                given_by_option = true;
                let script = attached.or_else(|| args.get(index).cloned());
                index += usize::from(long.split_once('=').is_none());
                scripts.extend(script);
            } else if abbreviates(given, "line-length") && attached.is_none() {
                index += 1;
            }
            continue;
        }
        if let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.is_empty()) {
            for (at, letter) in cluster.char_indices() {
                let attached = &cluster[at + letter.len_utf8()..];
                match letter {
                    'f' => return true,
                    'e' => {
                        given_by_option = true;
                        if attached.is_empty() {
                            scripts.extend(args.get(index).cloned());
                            index += 1;
                        } else {
                            scripts.push(attached.to_owned());
                        }
                        break;
                    }
                    'l' => {
                        index += usize::from(attached.is_empty());
                        break;
                    }
                    // `-i[SUFFIX]`, `-s`, `-n`, `-E`, `-r`, `-u`, `-z`: the rest is a suffix or flags.
                    'i' => break,
                    _ => {}
                }
            }
            continue;
        }
        if !given_by_option {
            scripts.push(arg.clone());
            break;
        }
    }
    scripts.iter().any(|script| sed_script_runs(script))
}

/// Whether one sed script has an `e` command or an `s` command with the `e` flag.
fn sed_script_runs(script: &str) -> bool {
    if !script.contains('e') {
        return false;
    }
    // Beyond the simple syntax followed below: count any `e` as a command.
    if script.contains(['{', '}', '\\', ';', '\n', 'I', 'M']) {
        return true;
    }
    let command = script.trim_start();
    // Skip an address: numbers, `$`, `/re/`, ranges, `!`, `~`, `+`, spaces.
    let mut chars = command.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_ascii_digit() || matches!(c, '$' | ',' | '!' | '~' | ' ' | '+') {
            chars.next();
        } else if c == '/' {
            chars.next();
            for inner in chars.by_ref() {
                if inner == '/' {
                    break;
                }
            }
        } else {
            break;
        }
    }
    let rest: String = chars.collect();
    match rest.chars().next() {
        Some('e') => true,
        Some('s') => {
            let mut parts = rest.chars().skip(1);
            let Some(delimiter) = parts.next() else { return false };
            let body: String = parts.collect();
            let pieces: Vec<&str> = body.split(delimiter).collect();
            pieces.len() != 3 || pieces[2].contains('e')
        }
        // Any other command: `a`, `i`, `c` texts and `w` files hold no command; `y` neither.
        _ => false,
    }
}

/// An awk program that runs commands (`system(…)`, a pipe to or from a command), or one
/// cordon cannot see (from a file, gawk's `--exec`/`-E`, an extension, a computed word).
/// Only the program text counts (`-F'|'` is a field separator).
pub(crate) fn awk_runs_commands(args: &[String]) -> bool {
    let mut programs = Vec::new();
    let mut given_by_option = false;
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        index += 1;
        if arg.contains(COMPUTED_WORD) {
            return true;
        }
        if arg == "--" {
            if !given_by_option {
                programs.extend(args.get(index).cloned());
            }
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (given, attached) = match long.split_once('=') {
                Some((given, value)) => (given, Some(value.to_owned())),
                None => (long, None),
            };
            if ["file", "exec", "include", "load"].iter().any(|name| abbreviates(given, name)) {
                return true;
            }
            if abbreviates(given, "source") {
                given_by_option = true;
                programs.extend(attached.clone().or_else(|| args.get(index).cloned()));
            }
            let takes_value =
                ["source", "assign", "field-separator"].iter().any(|name| abbreviates(given, name));
            if takes_value && attached.is_none() {
                index += 1;
            }
            continue;
        }
        if let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.is_empty()) {
            let Some(letter) = cluster.chars().next() else { continue };
            let attached = &cluster[letter.len_utf8()..];
            match letter {
                'f' | 'E' | 'i' | 'l' => return true,
                'e' => {
                    given_by_option = true;
                    if attached.is_empty() {
                        programs.extend(args.get(index).cloned());
                        index += 1;
                    } else {
                        programs.push(attached.to_owned());
                    }
                }
                'F' | 'v' if attached.is_empty() => index += 1,
                _ => {}
            }
            continue;
        }
        if !given_by_option {
            programs.push(arg.clone());
        }
        break;
    }
    // A `|` that is not `||` is a pipe to or from a command (`print | c`, `cmd | getline`),
    // or an alternation in a regex, which only costs a question.
    programs.iter().any(|program| {
        let compact: String = program.chars().filter(|c| !c.is_whitespace()).collect();
        compact.contains("system(")
            || compact.contains("@load")
            || compact.replace("||", "").contains('|')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn every_spelling_of_a_sed_that_runs_commands_is_found() {
        for command in [
            &["s/x/rm x/e", "f"][..],
            &["-n", "s/x;y/rm x/ep", "f"],
            &["-nes/^/rm x/e", "f"],
            &["-n", "-e", "1e rm x"],
            &["--expr=s/^/rm x/e", "f"],
            &["--expression", "1e rm x"],
            &["/x/Ie rm x", "f"],
            &["\\%x%e rm x", "f"],
            &["1{e rm x\n}", "f"],
            &["-f", "script.sed"],
            &["--fi=script.sed"],
            &["-nf", "script.sed"],
            &["\u{0}", "f"],
        ] {
            assert!(sed_runs_commands(&words(command)), "{command:?}");
        }
        for command in [
            &["-n", "10p", "f"][..],
            &["s/a/b/g", "f"],
            &["-i", "s/a/b/", "f"],
            &["--sandbox", "s/x/rm x/e"],
        ] {
            assert!(!sed_runs_commands(&words(command)), "{command:?}");
        }
    }

    #[test]
    fn every_spelling_of_an_awk_that_runs_commands_is_found() {
        for command in [
            &["BEGIN{system(\"rm x\")}"][..],
            &["-F:", "{print | \"sh\"}"],
            &["-E", "prog.awk"],
            &["--exec=prog.awk"],
            &["--fi", "prog.awk"],
            &["--source={print|\"sh\"}"],
            &["-v", "x=1", "\u{0}"],
            &["{ c = \"sh\"; print | c }"],
        ] {
            assert!(awk_runs_commands(&words(command)), "{command:?}");
        }
        assert!(!awk_runs_commands(&words(&["-F|", "{print $1}", "f"])));
    }
}

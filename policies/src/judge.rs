//! What rules and the known-safe list judge for one argv: the command itself,
//! every inner command of a plain `bash -lc SCRIPT` (nested ones too), and, for a script that
//! is not plain, every word of it that might name a program.
//!
//! The decision built on it ([`RuleSet::evaluate`](crate::RuleSet::evaluate)) is never more
//! permissive for a script than for any single command in it: a `forbidden` match anywhere
//! refuses, a `prompt` match anywhere asks, and a script runs unasked only when *each* inner
//! command is known-safe or allowed by a rule.

use crate::reading::read_command;
use crate::script_reading::read_script;
use crate::script_words::{inline_script, is_shell_call, script_words};
use crate::shell_script::{MAX_SHELL_NESTING, plain_shell_commands};
use crate::unreadable::{COMPUTED_WORD, Unreadable};

/// One thing to judge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unit {
    /// A simple command whose words are exactly what will run.
    Command(Vec<String>),
    /// A shell call with an inline script (`bash -lc SCRIPT`): a rule for the shell itself
    /// applies to it, but what runs is judged through its other units.
    ShellCall(Vec<String>),
    /// The words of a shell script that is not plain (redirections, variables, quoting
    /// tricks, another shell…): any of them may be a program. Never allowed unasked.
    Opaque(Vec<String>),
    /// Something whose programs cannot be read: it may be anything.
    Unreadable(Unreadable),
}

/// The units of `command`: for a plain shell script its inner commands (recursively, up to
/// [`MAX_SHELL_NESTING`] levels), for any other inline script the words that may be programs
/// and the commands tree-sitter-bash reads in it, for a wrapper around a shell the shell's
/// script, and whatever cannot be read.
pub(crate) fn units(command: &[String]) -> Vec<Unit> {
    let mut all = Vec::new();
    let mut pending = vec![(command.to_vec(), 0)];
    while let Some((current, depth)) = pending.pop() {
        // The command as it runs once its wrappers are gone (`env sh -c …` runs `sh -c …`).
        let unwrapped = match read_command(&current) {
            Ok(words) => words,
            Err(why) => {
                all.push(Unit::Unreadable(why));
                all.push(Unit::Command(current));
                continue;
            }
        };
        let shell = if is_shell_call(&current) {
            current.clone()
        } else if is_shell_call(&unwrapped) {
            all.push(Unit::Command(current.clone()));
            unwrapped
        } else {
            all.push(Unit::Command(current));
            continue;
        };
        if depth >= MAX_SHELL_NESTING {
            all.push(Unit::Unreadable(Unreadable::TooDeep));
        }
        let plain = if depth < MAX_SHELL_NESTING { plain_shell_commands(&shell) } else { None };
        match (plain, script_words(&shell)) {
            (Some(inner), _) => {
                pending.extend(inner.into_iter().rev().map(|c| (c, depth + 1)));
                all.push(Unit::ShellCall(shell));
            }
            (None, Some(words)) => {
                all.push(Unit::Opaque(words));
                match inline_script(&shell) {
                    Some(script) if script.contains(COMPUTED_WORD) => {
                        all.push(Unit::Unreadable(Unreadable::ComputedProgram {
                            word: "the script".to_owned(),
                        }));
                    }
                    Some(script) if depth < MAX_SHELL_NESTING => {
                        let reading = read_script(script);
                        all.extend(reading.unreadable.map(Unit::Unreadable));
                        pending.extend(reading.commands.into_iter().rev().map(|c| (c, depth + 1)));
                    }
                    Some(_) => {}
                    None => all.push(Unit::Unreadable(Unreadable::Unparsed)),
                }
                all.push(Unit::ShellCall(shell));
            }
            // A shell without an inline script (`bash build.sh`): the command itself.
            (None, None) => all.push(Unit::Command(shell)),
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn plain_scripts_unfold_and_other_scripts_become_opaque() {
        assert_eq!(
            units(&argv(&["bash", "-c", "ls && git push"])),
            vec![
                Unit::ShellCall(argv(&["bash", "-c", "ls && git push"])),
                Unit::Command(argv(&["ls"])),
                Unit::Command(argv(&["git", "push"])),
            ]
        );
        let opaque = units(&argv(&["dash", "-c", "rm x 2>&1"]));
        assert!(matches!(&opaque[0], Unit::Opaque(words) if words.contains(&"rm".to_owned())));
        assert_eq!(opaque[1], Unit::ShellCall(argv(&["dash", "-c", "rm x 2>&1"])));
        assert_eq!(
            units(&argv(&["bash", "build.sh"])),
            vec![Unit::Command(argv(&["bash", "build.sh"]))]
        );
    }
}

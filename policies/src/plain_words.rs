//! The words of a plain shell script, read by a deliberately tiny lexer.
//!
//! tree-sitter-bash is a highlighting grammar, not bash: it takes backslash-newline for
//! whitespace between two words (bash deletes it and joins them), so `find . -\<nl>delete` looked
//! like `find . - delete`. This lexer is the second, independent reading that
//! [`plain_shell_commands`](crate::plain_shell_commands) requires to agree with tree-sitter. It
//! accepts only a language small enough that bash, dash and zsh read every accepted byte the same
//! way, and refuses everything else:
//!
//! - blanks are spaces and tabs; commands are separated by `&&`, `||`, `|`, `;` and newlines,
//!   with bash's rules on where an empty command is a syntax error;
//! - a word is a run of parts with nothing between them: bare characters from
//!   `A-Za-z0-9-_./:=,+@%`, `'…'` (taken verbatim), and `"…"` without `$`, `` ` `` or `\`;
//! - so no backslash anywhere outside single quotes (escapes and line continuations), no `$`
//!   (expansions, `$'…'`, `$"…"`), no globs or extglobs (`* ? [ ] ( ) !`), no braces or `~`, no
//!   `#` (a comment at a word start, a zsh glob operator elsewhere), no redirections, no `&`;
//! - a word may not start with an unquoted `=` (zsh expands `=ls` to a path);
//! - a command's first word may not be a reserved word of bash, zsh or ksh (`time`, `coproc`,
//!   `function`, `foreach`, `noglob`, …), contain `=` (`a=b` is an assignment), or start with `-`
//!   (zsh's `-` precommand modifier) or `%` (bash runs `%x` as `fg %x`, even in `bash -c`; found
//!   by the differential test).
//!
//! The differential test (`policies/tests/`) runs every script this lexer accepts through bash
//! and compares the words bash executes with these.

/// Reserved words of bash, zsh and ksh (and zsh's reserved-word forms of declaration builtins).
/// In command position they are syntax, not a program; a quoted spelling (`'time'`) would run a
/// program, but refusing it too only costs a question.
pub(crate) const RESERVED_WORDS: &[&str] = &[
    "!",
    "[[",
    "]]",
    "{",
    "}",
    "case",
    "coproc",
    "do",
    "done",
    "elif",
    "else",
    "esac",
    "fi",
    "for",
    "function",
    "if",
    "in",
    "select",
    "then",
    "time",
    "until",
    "while",
    "foreach",
    "end",
    "repeat",
    "always",
    "nocorrect",
    "noglob",
    "declare",
    "export",
    "float",
    "integer",
    "local",
    "readonly",
    "typeset",
];

/// Where the lexer stands after the last token.
#[derive(Clone, Copy, PartialEq, Eq)]
enum After {
    /// The start of the script or a newline after a command: a command or more newlines.
    Start,
    /// A `;`: a command, a newline or the end.
    Semicolon,
    /// `&&`, `||`, `|`: a command must follow (newlines may come first).
    Connector,
    /// A word of the current command.
    Word,
}

/// The commands of `script` if it is in the plain language above, else `None`.
pub(crate) fn lex_plain_commands(script: &str) -> Option<Vec<Vec<String>>> {
    let bytes = script.as_bytes();
    let mut commands = Vec::new();
    let mut current: Vec<String> = Vec::new();
    let mut after = After::Start;
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        let next = bytes.get(i + 1).copied();
        match byte {
            b' ' | b'\t' => i += 1,
            b'\n' => {
                if after == After::Word {
                    commands.push(finish_command(&mut current)?);
                }
                if after != After::Connector {
                    after = After::Start;
                }
                i += 1;
            }
            b';' | b'&' | b'|' => {
                // An operator must end a command: `; ls`, `ls ;;`, `ls && ;` are syntax errors.
                if after != After::Word {
                    return None;
                }
                commands.push(finish_command(&mut current)?);
                (after, i) = match (byte, next) {
                    (b';', Some(b';' | b'&')) => return None,
                    (b';', _) => (After::Semicolon, i + 1),
                    (b'&', Some(b'&')) | (b'|', Some(b'|')) => (After::Connector, i + 2),
                    (b'|', Some(b'&')) | (b'&', _) => return None,
                    _ => (After::Connector, i + 1),
                };
            }
            _ => {
                let (word, end) = lex_word(bytes, i)?;
                current.push(word);
                after = After::Word;
                i = end;
            }
        }
    }
    match after {
        After::Connector => None,
        After::Word => {
            commands.push(finish_command(&mut current)?);
            Some(commands)
        }
        After::Start | After::Semicolon => Some(commands),
    }
}

/// Takes the words of the current command, refusing a first word the shell would not run as a
/// program name.
fn finish_command(current: &mut Vec<String>) -> Option<Vec<String>> {
    let command = std::mem::take(current);
    is_program_name(command.first()?).then_some(command)
}

/// Whether every shell runs a command whose first word is `name` as the program (or builtin or
/// function) `name`: see the module docs.
pub(crate) fn is_program_name(name: &str) -> bool {
    !RESERVED_WORDS.contains(&name) && !name.contains('=') && !name.starts_with(['-', '%'])
}

/// One word starting at `start`: its value and the index just after it.
fn lex_word(bytes: &[u8], start: usize) -> Option<(String, usize)> {
    let mut value = Vec::new();
    let mut i = start;
    while let Some(&byte) = bytes.get(i) {
        match byte {
            b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' => break,
            b'\'' => {
                let len = bytes.get(i + 1..)?.iter().position(|&b| b == b'\'')?;
                value.extend_from_slice(bytes.get(i + 1..i + 1 + len)?);
                i += len + 2;
            }
            b'"' => {
                let len = bytes.get(i + 1..)?.iter().position(|&b| b == b'"')?;
                let content = bytes.get(i + 1..i + 1 + len)?;
                // Inside double quotes `$`, backticks and backslashes still act.
                if content.iter().any(|b| matches!(b, b'$' | b'`' | b'\\')) {
                    return None;
                }
                value.extend_from_slice(content);
                i += len + 2;
            }
            b'=' if i == start => return None,
            _ if is_plain_bare_byte(byte) => {
                value.push(byte);
                i += 1;
            }
            _ => return None,
        }
    }
    Some((String::from_utf8(value).ok()?, i))
}

/// An unquoted character every shell takes literally. A whitelist, so that anything a shell
/// might treat specially is refused.
pub(crate) fn is_plain_bare_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"-_./:=,+@%".contains(&byte)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn commands(list: &[&[&str]]) -> Option<Vec<Vec<String>>> {
        Some(list.iter().map(|c| c.iter().map(|w| (*w).to_owned()).collect()).collect())
    }

    #[test]
    fn plain_scripts_lex_into_words() {
        assert_eq!(lex_plain_commands(""), commands(&[]));
        assert_eq!(lex_plain_commands("\n \n"), commands(&[]));
        assert_eq!(
            lex_plain_commands("ls -la&&pwd||echo 'a b';cat \"x\ty\"|wc -l\n"),
            commands(&[
                &["ls", "-la"],
                &["pwd"],
                &["echo", "a b"],
                &["cat", "x\ty"],
                &["wc", "-l"]
            ])
        );
        assert_eq!(
            lex_plain_commands("ls &&\n\n pwd |\n wc;\nx"),
            commands(&[&["ls"], &["pwd"], &["wc"], &["x"]])
        );
        assert_eq!(
            lex_plain_commands("'a'\"b\"c '' \"\" 'x\\\ny' a=b ''="),
            commands(&[&["abc", "", "", "x\\\ny", "a=b", "="]])
        );
    }

    #[test]
    fn everything_outside_the_plain_language_is_refused() {
        for script in [
            "find . -\\\ndelete",
            "r\\\nm x",
            "ls \\\n-l",
            "ls\\ x",
            "echo \"a\\\nb\"",
            "echo $'x'",
            "echo $\"x\"",
            "echo a#b",
            "echo #b",
            "ls *",
            "ls a?",
            "ls [a]",
            "ls a]",
            "echo {a,b}",
            "echo ~",
            "echo =ls",
            "echo !x",
            "echo @(a)",
            "ls > f",
            "ls &",
            "ls |& wc",
            "ls ;; pwd",
            "ls ;& pwd",
            "; ls",
            "ls; ;",
            "ls\n;",
            "ls &&",
            "ls |",
            "&& ls",
            "ls ||| wc",
            "echo 'unterminated",
            "echo \"unterminated",
            "time ls",
            "coproc ls",
            "\"time\" ls",
            "foreach x",
            "a=b ls",
            "\"a\"=b",
            "- ls",
            "%1",
            "%-exec x",
            "ls\r",
        ] {
            assert_eq!(lex_plain_commands(script), None, "{script:?}");
        }
    }
}

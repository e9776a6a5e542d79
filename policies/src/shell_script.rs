//! `bash|sh|zsh -c|-lc SCRIPT`: the plain commands inside a shell script.
//!
//! A script counts as *plain* only when tree-sitter-bash parses it, without errors, into simple
//! commands made of literal words joined by `&&`, `||`, `;`, `|` (or newlines). Anything the shell
//! would expand, redirect or run in another way (variables, `$(…)`, backticks, globs, `~`, braces,
//! backslash escapes, assignments, redirections, heredocs, subshells, `&`, functions, control flow,
//! comments) makes the whole script non-plain: then no inner command can be trusted to be what it
//! looks like, and callers treat the call as one opaque command.
//!
//! The words returned must be exactly the words bash executes: a rule or the known-safe list
//! that judged other words would judge the wrong command. tree-sitter-bash alone
//! does not guarantee that (it skips a backslash-newline that bash deletes, joining two words), so
//! every byte it leaves outside its nodes must be a blank or a newline, and an independent strict
//! lexer ([`crate::plain_words`]) must read the same commands. A differential test
//! (`policies/tests/suite/bash_differential.rs`) checks the result against real bash.

use tree_sitter::{Node, Parser};

use crate::plain_words::{is_plain_bare_byte, is_program_name, lex_plain_commands};

/// How deep `bash -c "bash -c '…'"` nesting is followed. Each level must be quoted inside the
/// previous one, so real scripts stay shallow; the cap bounds the work on hostile input.
pub(crate) const MAX_SHELL_NESTING: usize = 4;

/// Directories whose programs are taken to be the ones their names say (`/usr/bin/git` is `git`).
/// Other paths (`./git`, `/tmp/git`) are never treated as the well-known program of that name:
/// a sandboxed command could have written them.
const SYSTEM_BIN_DIRS: [&str; 2] = ["/bin/", "/usr/bin/"];

/// The name a command's first word runs as: the word itself when it has no `/`, the file name
/// for a program in a system directory, `None` for any other path (or an empty word).
pub(crate) fn program_name(word: &str) -> Option<&str> {
    if word.is_empty() {
        return None;
    }
    if !word.contains('/') {
        return Some(word);
    }
    SYSTEM_BIN_DIRS
        .iter()
        .filter_map(|dir| word.strip_prefix(dir))
        .find(|name| !name.is_empty() && !name.contains('/'))
}

/// The script of `bash|sh|zsh -c|-lc SCRIPT` (exactly three words), or `None`.
fn shell_script(command: &[String]) -> Option<&str> {
    let [shell, flag, script] = command else {
        return None;
    };
    let is_shell = matches!(program_name(shell), Some("bash" | "sh" | "zsh"));
    (is_shell && matches!(flag.as_str(), "-c" | "-lc")).then_some(script.as_str())
}

/// The plain inner commands of `bash|sh|zsh -c|-lc SCRIPT` (`None` when argv is not such a
/// shell call or the script is not plain words joined by `&&`, `||`, `;`, `|`). An empty script
/// yields `Some(vec![])`.
pub fn plain_shell_commands(command: &[String]) -> Option<Vec<Vec<String>>> {
    let script = shell_script(command)?;
    // Only printable ASCII reaches the parser: tree-sitter-bash 0.25.1 crashes (SIGSEGV in its
    // scanner) on `{` followed by a character from U+E0000 up, found by the never-panics
    // property test, and a classifier that crashes is a denial of service on every command an
    // agent sends. 300 000 random ASCII scripts heavy in shell syntax parsed without a crash.
    // A script with other characters is simply not plain (it is asked about under untrusted).
    if !only_plain_characters(script) {
        return None;
    }
    // Two independent readings must agree: a tiny lexer that only accepts what bash, dash and
    // zsh read alike, and tree-sitter-bash with every skipped byte accounted for. The lexer
    // goes first, so tree-sitter only ever sees scripts in that tiny language.
    let lexed = lex_plain_commands(script)?;
    let parsed = tree_sitter_commands(script)?;
    (lexed == parsed).then_some(lexed)
}

/// Whether the script is printable ASCII (plus tab and newline): see [`plain_shell_commands`].
fn only_plain_characters(script: &str) -> bool {
    script.bytes().all(|b| matches!(b, b' '..=b'~' | b'\t' | b'\n'))
}

/// The commands tree-sitter-bash sees, read as plain words. Every byte of the script must belong
/// to a node that is read here or to a gap that only holds blanks (and, between statements,
/// newlines): tree-sitter skips some bytes bash acts on (a backslash-newline is whitespace to it,
/// bash deletes it and joins the words around it).
fn tree_sitter_commands(script: &str) -> Option<Vec<Vec<String>>> {
    let mut parser = Parser::new();
    parser.set_language(&tree_sitter_bash::LANGUAGE.into()).ok()?;
    let tree = parser.parse(script, None)?;
    let root = tree.root_node();
    if root.kind() != "program" || root.has_error() {
        return None;
    }
    let before = script.get(..root.start_byte())?;
    let after = script.get(root.end_byte()..)?;
    if !is_gap(before, STATEMENT_GAP) || !is_gap(after, STATEMENT_GAP) {
        return None;
    }
    plain_commands(root, script)
}

/// What may lie between the statements and operators of a script.
const STATEMENT_GAP: &[u8] = b" \t\n";
/// What may lie between the words of a command.
const WORD_GAP: &[u8] = b" \t";

fn is_gap(text: &str, allowed: &[u8]) -> bool {
    text.bytes().all(|b| allowed.contains(&b))
}

/// The children of `node`, provided the source text not covered by them (before, between and
/// after them, within `node`) only holds bytes from `allowed`.
fn children_covering<'tree>(
    node: Node<'tree>,
    src: &str,
    allowed: &[u8],
) -> Option<Vec<Node<'tree>>> {
    let mut cursor = node.walk();
    let children: Vec<Node<'tree>> = node.children(&mut cursor).collect();
    let mut position = node.start_byte();
    for child in &children {
        if child.start_byte() < position || !is_gap(src.get(position..child.start_byte())?, allowed)
        {
            return None;
        }
        position = child.end_byte();
    }
    (position <= node.end_byte() && is_gap(src.get(position..node.end_byte())?, allowed))
        .then_some(children)
}

/// Walks the statements of a `program` node in source order. Iterative on purpose: `a && b && …`
/// nests one `list` node per operator, and a recursive walk would let a long script overflow the
/// stack.
fn plain_commands(root: Node<'_>, src: &str) -> Option<Vec<Vec<String>>> {
    let mut commands = Vec::new();
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        match node.kind() {
            "command" => commands.push(plain_command(node, src)?),
            "program" | "list" | "pipeline" => {
                let children = children_covering(node, src, STATEMENT_GAP)?;
                for child in children.into_iter().rev() {
                    if child.is_named() {
                        stack.push(child);
                    } else if !matches!(child.kind(), "&&" | "||" | ";" | "|" | "\n")
                        || !is_exact_token(child, src)
                    {
                        // `&`, `|&`, `;;`, stray `$`, …
                        return None;
                    }
                }
            }
            _ => return None,
        }
    }
    Some(commands)
}

/// A `command` node whose children are a `command_name` and plain arguments only (assignments,
/// redirections and the like are other child kinds and make it non-plain), separated by blanks.
fn plain_command(node: Node<'_>, src: &str) -> Option<Vec<String>> {
    let children = children_covering(node, src, WORD_GAP)?;
    let mut words = Vec::new();
    let mut previous_end = None;
    for child in children {
        // Two words with nothing between them would be one word to the shell.
        if previous_end == Some(child.start_byte()) {
            return None;
        }
        previous_end = Some(child.end_byte());
        let word_node = if child.kind() == "command_name" {
            let [name] = children_covering(child, src, b"")?[..] else {
                return None;
            };
            if !words.is_empty() {
                return None;
            }
            name
        } else {
            child
        };
        words.push(plain_word(word_node, src)?);
    }
    is_program_name(words.first()?).then_some(words)
}

/// Whether an anonymous token spans exactly its own text (tree-sitter-bash lets a token span
/// the blanks before it, as the closing `"` of `"\t"` does).
fn is_exact_token(node: Node<'_>, src: &str) -> bool {
    src.get(node.byte_range()) == Some(node.kind())
}

/// The literal value of one argument: a bare word, a `'…'` or expansion-free `"…"` string, or a
/// concatenation of those (`--name="x"`), with no byte left between the parts.
fn plain_word(node: Node<'_>, src: &str) -> Option<String> {
    if !node.is_named() {
        return None;
    }
    let text = src.get(node.byte_range())?;
    match node.kind() {
        "word" | "number" => is_plain_bare_word(text).then(|| text.to_owned()),
        "raw_string" => text.strip_prefix('\'')?.strip_suffix('\'').map(str::to_owned),
        "string" => {
            // The value is the source between the quotes, not the children's text: the closing
            // `"` token of `"\t"` spans the tab. Without `$`, backticks and backslashes (which
            // still act inside double quotes) that source is taken literally.
            let content = text.strip_prefix('"')?.strip_suffix('"')?;
            let mut cursor = node.walk();
            let only_content = node
                .children(&mut cursor)
                .all(|child| matches!(child.kind(), "\"" | "string_content"));
            (only_content && !content.contains(['$', '`', '\\', '"'])).then(|| content.to_owned())
        }
        "concatenation" => {
            let mut value = String::new();
            for child in children_covering(node, src, b"")? {
                if child.kind() == "concatenation" {
                    return None;
                }
                value.push_str(&plain_word(child, src)?);
            }
            Some(value)
        }
        _ => None,
    }
}

/// An unquoted word the shell takes literally: see [`is_plain_bare_byte`]. A leading `=` is
/// refused too: zsh expands `=ls` to the path of `ls`.
fn is_plain_bare_word(text: &str) -> bool {
    !text.is_empty() && !text.starts_with('=') && text.bytes().all(is_plain_bare_byte)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn hostile_bytes_never_reach_the_parser() {
        // Found by the never-panics property test (minimised): these make tree-sitter-bash
        // 0.25.1 crash with SIGSEGV. They are refused before parsing.
        for crash in ["{\u{e01b0}", "x{\u{e0100}", "{\u{e0001}"] {
            assert_eq!(plain_shell_commands(&["bash".into(), "-c".into(), crash.into()]), None);
        }
        assert!(!only_plain_characters("echo caf\u{e9}"));
        assert!(only_plain_characters("ls -la && git log --format=\"%h\" | wc -l; echo 'a b'\n"));
    }

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    fn inner(script: &str) -> Option<Vec<Vec<String>>> {
        plain_shell_commands(&argv(&["bash", "-lc", script]))
    }

    #[test]
    fn plain_scripts_split_into_commands_in_order() {
        assert_eq!(
            inner("ls -la && pwd || echo 'a b' ; cat \"x y\" | wc -l"),
            Some(vec![
                argv(&["ls", "-la"]),
                argv(&["pwd"]),
                argv(&["echo", "a b"]),
                argv(&["cat", "x y"]),
                argv(&["wc", "-l"]),
            ])
        );
        assert_eq!(inner("ls\npwd;"), Some(vec![argv(&["ls"]), argv(&["pwd"])]));
        assert_eq!(
            inner("git log --format=\"%h\" -n 10 '' \"\""),
            Some(vec![argv(&["git", "log", "--format=%h", "-n", "10", "", ""])])
        );
        assert_eq!(inner("\"ls\" 'a'\"b\"c"), Some(vec![argv(&["ls", "abc"])]));
        assert_eq!(inner(""), Some(vec![]));
    }

    #[test]
    fn anything_the_shell_would_expand_or_redirect_is_not_plain() {
        for script in [
            "ls > f",
            "ls 2>/dev/null",
            "cat < f",
            "cat <<EOF\nx\nEOF",
            "cat <<< x",
            "echo $(id)",
            "echo `id`",
            "echo \"$(id)\"",
            "echo $HOME",
            "echo \"$HOME\"",
            "echo \"a$\"",
            "echo ${x}",
            "echo $((1+2))",
            "echo $'x'",
            "echo \\$x",
            "echo \"a\\\"b\"",
            "ls *.rs",
            "ls ?",
            "ls [ab]",
            "echo a{b,c}",
            "echo ~/x",
            "echo ~",
            "echo =ls",
            "a=b ls",
            "(ls)",
            "{ ls; }",
            "ls &",
            "ls |& wc",
            "! ls",
            "ls # comment",
            "if true; then ls; fi",
            "for f in a; do ls; done",
            "f() { ls; }",
            "ls &&",
            ";",
            "echo $",
            "[[ -f x ]]",
            "echo <(ls)",
        ] {
            assert_eq!(inner(script), None, "{script:?}");
        }
    }

    #[test]
    fn only_three_word_shell_calls_with_c_or_lc_are_unwrapped() {
        assert_eq!(
            plain_shell_commands(&argv(&["/bin/bash", "-c", "ls"])),
            Some(vec![argv(&["ls"])])
        );
        assert_eq!(
            plain_shell_commands(&argv(&["/usr/bin/zsh", "-lc", "ls"])),
            Some(vec![argv(&["ls"])])
        );
        assert_eq!(plain_shell_commands(&argv(&["sh", "-c", "ls"])), Some(vec![argv(&["ls"])]));
        for not_a_shell_call in [
            argv(&["bash", "-c"]),
            argv(&["bash", "-c", "ls", "x"]),
            argv(&["bash", "-x", "ls"]),
            argv(&["bash", "-l", "-c", "ls"]),
            argv(&["fish", "-c", "ls"]),
            argv(&["./bash", "-c", "ls"]),
            argv(&["/tmp/bash", "-c", "ls"]),
            argv(&["ls", "-c", "x"]),
            argv(&[]),
        ] {
            assert_eq!(plain_shell_commands(&not_a_shell_call), None, "{not_a_shell_call:?}");
        }
    }

    #[test]
    fn program_names_come_from_bare_words_and_system_dirs_only() {
        assert_eq!(program_name("git"), Some("git"));
        assert_eq!(program_name("/usr/bin/git"), Some("git"));
        assert_eq!(program_name("/bin/ls"), Some("ls"));
        assert_eq!(program_name("./git"), None);
        assert_eq!(program_name("/usr/bin/x/git"), None);
        assert_eq!(program_name("/usr/bin/"), None);
        assert_eq!(program_name(""), None);
    }

    #[test]
    fn line_continuations_never_split_or_hide_words() {
        // tree-sitter-bash reads a backslash-newline as a blank, bash deletes it and
        // joins the words around it (`-\<nl>exec` is `-exec`).
        for script in [
            "find . -maxdepth 0 -\\\nexec sh -c 'id > PWNED' ';'",
            "tr\\\nuncate -s0 a",
            "find . -\\\ndelete",
            "git log --\\\noutput=f",
            "r\\\nm -f x",
            "ls \\\n-l",
            "ls\\\n",
            "\\\nls",
        ] {
            assert_eq!(inner(script), None, "{script:?}");
        }
    }

    #[test]
    fn differentials_found_against_real_bash_are_fixed() {
        // Found by the differential test (tests/suite/bash_differential.rs), each minimised.
        // tree-sitter-bash lets the closing quote of `"\t"` span the tab: the word lost it.
        assert_eq!(inner("x \"\t\"a \"\n\""), Some(vec![argv(&["x", "\ta", "\n"])]));
        // bash runs `%x` as `fg %x`, and `time`, `coproc` are keywords, not programs.
        for script in ["%x 2", "time x", "coproc x", "x; time \"*\""] {
            assert_eq!(inner(script), None, "{script:?}");
        }
    }

    #[test]
    fn long_operator_chains_do_not_overflow_the_stack() {
        let script = vec!["true"; 20_000].join(" && ");
        assert_eq!(inner(&script).map(|c| c.len()), Some(20_000));
    }
}

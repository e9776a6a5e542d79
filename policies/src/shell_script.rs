//! `bash|sh|zsh -c|-lc SCRIPT`: the plain commands inside a shell script (DESIGN §4).
//!
//! A script counts as *plain* only when tree-sitter-bash parses it, without errors, into simple
//! commands made of literal words joined by `&&`, `||`, `;`, `|` (or newlines). Anything the shell
//! would expand, redirect or run in another way (variables, `$(…)`, backticks, globs, `~`, braces,
//! backslash escapes, assignments, redirections, heredocs, subshells, `&`, functions, control flow,
//! comments) makes the whole script non-plain: then no inner command can be trusted to be what it
//! looks like, and callers treat the call as one opaque command.

use tree_sitter::{Node, Parser};

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
    let mut parser = Parser::new();
    parser.set_language(&tree_sitter_bash::LANGUAGE.into()).ok()?;
    let tree = parser.parse(script, None)?;
    let root = tree.root_node();
    if root.kind() != "program" || root.has_error() {
        return None;
    }
    plain_commands(root, script)
}

/// Whether the script is printable ASCII (plus tab and newline): see [`plain_shell_commands`].
fn only_plain_characters(script: &str) -> bool {
    script.bytes().all(|b| matches!(b, b' '..=b'~' | b'\t' | b'\n'))
}

/// Every command a rule should see for `command`: the command itself, then (for plain shell
/// scripts, up to [`MAX_SHELL_NESTING`] levels deep) each inner command.
pub(crate) fn commands_for_rules(command: &[String]) -> Vec<Vec<String>> {
    let mut all = vec![command.to_vec()];
    let mut pending = vec![(command.to_vec(), 0)];
    while let Some((current, depth)) = pending.pop() {
        if depth >= MAX_SHELL_NESTING {
            continue;
        }
        for inner in plain_shell_commands(&current).unwrap_or_default() {
            all.push(inner.clone());
            pending.push((inner, depth + 1));
        }
    }
    all
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
                let mut cursor = node.walk();
                let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
                for child in children.into_iter().rev() {
                    if child.is_named() {
                        stack.push(child);
                    } else if !matches!(child.kind(), "&&" | "||" | ";" | "|") {
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
/// redirections and the like are other child kinds and make it non-plain).
fn plain_command(node: Node<'_>, src: &str) -> Option<Vec<String>> {
    let mut cursor = node.walk();
    let mut words = Vec::new();
    for child in node.children(&mut cursor) {
        let word_node = if child.kind() == "command_name" {
            if !words.is_empty() || child.named_child_count() != 1 || child.child_count() != 1 {
                return None;
            }
            child.named_child(0)?
        } else {
            child
        };
        words.push(plain_word(word_node, src)?);
    }
    (!words.is_empty()).then_some(words)
}

/// The literal value of one argument: a bare word, a `'…'` or expansion-free `"…"` string, or a
/// concatenation of those (`--name="x"`).
fn plain_word(node: Node<'_>, src: &str) -> Option<String> {
    if !node.is_named() {
        return None;
    }
    let text = src.get(node.byte_range())?;
    match node.kind() {
        "word" | "number" => is_plain_bare_word(text).then(|| text.to_owned()),
        "raw_string" => text.strip_prefix('\'')?.strip_suffix('\'').map(str::to_owned),
        "string" => {
            let mut cursor = node.walk();
            let mut value = String::new();
            for child in node.children(&mut cursor) {
                match child.kind() {
                    "\"" if !child.is_named() => {}
                    "string_content" => {
                        let content = src.get(child.byte_range())?;
                        // Inside double quotes `$`, backticks and backslashes still act.
                        if content.contains(['$', '`', '\\']) {
                            return None;
                        }
                        value.push_str(content);
                    }
                    _ => return None,
                }
            }
            Some(value)
        }
        "concatenation" => {
            let mut cursor = node.walk();
            let mut value = String::new();
            for child in node.children(&mut cursor) {
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

/// An unquoted word the shell takes literally. A whitelist, so that globs (`* ? [`), braces,
/// `~`, `$`, backslashes, `#` and anything else a shell might treat specially are refused.
/// A leading `=` is refused too: zsh expands `=ls` to the path of `ls`.
fn is_plain_bare_word(text: &str) -> bool {
    !text.is_empty()
        && !text.starts_with('=')
        && text.chars().all(|c| c.is_alphanumeric() || "-_./:=,+@%".contains(c))
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
    fn rule_matching_sees_nested_shell_commands() {
        let command = argv(&["bash", "-c", "ls && sh -c 'git push'"]);
        assert_eq!(
            commands_for_rules(&command),
            vec![
                command.clone(),
                argv(&["ls"]),
                argv(&["sh", "-c", "git push"]),
                argv(&["git", "push"]),
            ]
        );
    }

    #[test]
    fn long_operator_chains_do_not_overflow_the_stack() {
        let script = vec!["true"; 20_000].join(" && ");
        assert_eq!(inner(&script).map(|c| c.len()), Some(20_000));
    }
}

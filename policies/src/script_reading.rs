//! Every command of a shell script that is not plain, read as far as tree-sitter-bash allows:
//! each `command` node anywhere in the tree (inside substitutions, subshells, functions, control
//! flow) with its literal words, a computed argument standing as a placeholder — and whatever
//! makes the script unreadable: a computed program word, a builtin that runs or redefines code
//! (`eval`, `trap`, `alias`, `source`, `hash`, …), a shell fed a script on standard input, an
//! assignment to a variable that loads code, a parse error.
//!
//! This reading is one of two: [`crate::script_words`] still collects every word that might be
//! a program, so a command tree-sitter splits differently from bash is still seen by its words.

use tree_sitter::{Node, Parser};

use crate::evaluated_names::evaluated_name;
use crate::unreadable::{
    CODE_BUILTINS, COMPUTED_NUMBER, COMPUTED_ONE_WORD, COMPUTED_WORD, Unreadable,
    code_builtin_runs_code, is_code_variable,
};

/// What tree-sitter-bash reads in one script.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ScriptReading {
    /// Each command with a literal program word, its computed arguments as [`COMPUTED_WORD`].
    pub commands: Vec<Vec<String>>,
    /// The first reason the script cannot be read, if any.
    pub unreadable: Option<Unreadable>,
}

/// Reads `script` (the inline script of a shell call).
pub(crate) fn read_script(script: &str) -> ScriptReading {
    // bash deletes a backslash-newline before it splits words; tree-sitter-bash treats it as
    // a blank. Characters outside printable ASCII stand as a letter: bash takes them as part
    // of a word, and tree-sitter-bash crashes on some of them.
    let source: String = script
        .replace("\\\n", "")
        .chars()
        .map(|c| if c == '\t' || c == '\n' || (' '..='~').contains(&c) { c } else { 'x' })
        .collect();
    let mut reading = ScriptReading::default();
    let Some(tree) = parse_within_budget(&source) else {
        reading.unreadable = Some(Unreadable::Unparsed);
        return reading;
    };
    let root = tree.root_node();
    if root.has_error() {
        reading.unreadable = Some(Unreadable::Unparsed);
    }
    // Arithmetic evaluates variables' values as expressions, and a subscript in one runs the
    // command substitutions it holds (`i='a[$(cmd)]'; echo $((i))`); `${x@P}` expands a value
    // as a prompt, substitutions included. Neither shows in the script's own words.
    // (A substring offset, `${x:$n}`, is among the places `evaluated_name` finds.)
    for (marker, name) in [("((", "arithmetic"), ("@P", "${…@P}"), ("[[", "[[")] {
        if source.contains(marker) {
            reading.unreadable.get_or_insert(Unreadable::Builtin { name: name.to_owned() });
        }
    }
    // `read GIT_SSH_COMMAND; export GIT_SSH_COMMAND` sets one without an assignment.
    if let Some(name) = named_code_variable(&source) {
        reading.unreadable.get_or_insert(Unreadable::CodeVariable { name });
    }
    if let Some(name) = evaluated_name(&source) {
        reading.unreadable.get_or_insert(Unreadable::Builtin { name: name.to_owned() });
    }
    let mut stack = vec![root];
    while let Some(node) = stack.pop() {
        match node.kind() {
            "command" => read_command_node(node, &source, &mut reading),
            // `[ -v NAME ]` evaluates NAME's subscript; `unset`, `export`, `declare` … with a
            // computed word take its value as a name, subscript included.
            "test_command" | "unset_command" | "declaration_command"
                if names_from_values(node, &source) =>
            {
                let name = source.get(node.byte_range()).unwrap_or_default();
                let name: String = name.split_whitespace().next().unwrap_or_default().into();
                reading.unreadable.get_or_insert(Unreadable::Builtin { name });
            }
            "variable_assignment" => {
                if let Some(name) = assigned_name(node, &source).filter(|n| is_code_variable(n)) {
                    reading.unreadable.get_or_insert(Unreadable::CodeVariable { name });
                }
            }
            _ => {}
        }
        let mut cursor = node.walk();
        stack.extend(node.children(&mut cursor));
    }
    reading
}

/// How long tree-sitter may take over one script. Its error recovery on unbalanced input is
/// quadratic within single steps (`${` fifty thousand times took over a minute), so no count
/// of steps bounds it; a script given up is unparsed, so unreadable, which decides nothing in
/// its favour. Ordinary scripts of a megabyte parse in a fraction of this.
const PARSE_TIME_BUDGET: std::time::Duration = std::time::Duration::from_secs(2);

/// `source` parsed by tree-sitter-bash, or `None` when that fails or exceeds the budget.
fn parse_within_budget(source: &str) -> Option<tree_sitter::Tree> {
    let mut parser = Parser::new();
    parser.set_language(&tree_sitter_bash::LANGUAGE.into()).ok()?;
    let bytes = source.as_bytes();
    let mut read = |offset: usize, _: tree_sitter::Point| bytes.get(offset..).unwrap_or_default();
    let deadline = std::time::Instant::now() + PARSE_TIME_BUDGET;
    let mut give_up = |_: &tree_sitter::ParseState| std::time::Instant::now() > deadline;
    let options = tree_sitter::ParseOptions::new().progress_callback(&mut give_up);
    parser.parse_with_options(&mut read, None, Some(options))
}

/// The first variable in `source` that loads code or names a program
/// ([`is_code_variable`]), other than where its value is read (`$EDITOR`, `${PAGER}`).
fn named_code_variable(source: &str) -> Option<String> {
    // The shell removes quotes and backslashes from a word before it takes it for a name
    // (`export GIT_C\ONFIG_COUNT=1`, `export "BASH_ENV=x"`): so does this search.
    let source: String = source.chars().filter(|c| !matches!(c, '\\' | '\'' | '"')).collect();
    let source = source.as_str();
    let mut at = 0;
    let bytes = source.as_bytes();
    while at < bytes.len() {
        let is_name = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        if !is_name(bytes[at]) {
            at += 1;
            continue;
        }
        let end = (at..bytes.len()).find(|&i| !is_name(bytes[i])).unwrap_or(bytes.len());
        let before = at.checked_sub(1).and_then(|i| bytes.get(i)).copied();
        let name = source.get(at..end).unwrap_or_default();
        if !matches!(before, Some(b'$' | b'{' | b'#' | b'!')) && is_code_variable(name) {
            return Some(name.to_owned());
        }
        at = end;
    }
    None
}

/// Whether a test, `unset` or declaration takes a name from a value: `-v`/`-R` in a test, or
/// an operand the shell computes.
fn names_from_values(node: Node<'_>, source: &str) -> bool {
    if node.kind() == "test_command" {
        return test_command_evaluates(node, source);
    }
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
    children.iter().any(|child| match child.kind() {
        "variable_assignment" | "variable_name" | "comment" => false,
        _ => literal(*child, source).is_none(),
    })
}

/// Whether a `[ … ]` evaluates one of its words as code, judged on its words as bash splits
/// them (tree-sitter's nesting of the operators is not bash's). `[[ … ]]` always may: it
/// evaluates arithmetic operands.
fn test_command_evaluates(node: Node<'_>, source: &str) -> bool {
    let mut words = Vec::new();
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        match child.kind() {
            "[" | "]" => {}
            "[[" | "]]" => return true,
            _ => test_words(child, source, &mut words),
        }
    }
    crate::test_builtin::test_evaluates(&words)
}

/// The words of one part of a `[ … ]`, in order.
fn test_words(node: Node<'_>, source: &str, words: &mut Vec<String>) {
    match node.kind() {
        "unary_expression" | "binary_expression" | "parenthesized_expression" => {
            let mut cursor = node.walk();
            for child in node.children(&mut cursor) {
                test_words(child, source, words);
            }
        }
        _ if !node.is_named() || node.kind() == "test_operator" => {
            words.push(source.get(node.byte_range()).unwrap_or_default().to_owned());
        }
        _ => words.push(word_value(node, source)),
    }
}

/// A word's value: its literal text, or a stand-in for a word the shell computes:
/// [`COMPUTED_NUMBER`] for a special parameter that is always a number (`"$?"`, `"$#"`, a
/// length), [`COMPUTED_ONE_WORD`] when it stays one word (followed by its literal start, if it
/// has one: `-j"$(nproc)"` is `COMPUTED_ONE_WORD` then `-j`), else [`COMPUTED_WORD`]. Every
/// stand-in starts with the NUL of [`COMPUTED_WORD`], so nothing takes it for an option.
fn word_value(node: Node<'_>, source: &str) -> String {
    if let Some(text) = literal(node, source) {
        return text;
    }
    let text = source.get(node.byte_range()).unwrap_or_default();
    if is_numeric_special(text) {
        return COMPUTED_NUMBER.to_owned();
    }
    if stays_one_word(node, source) {
        return format!("{COMPUTED_ONE_WORD}{}", literal_prefix(node, source));
    }
    COMPUTED_WORD.to_owned()
}

/// `"$?"`, `"$#"`, `"$$"`, `"$!"`, `"${#name}"`, `"${#name[@]}"` (quoted or not): values the
/// shell makes, always a number.
fn is_numeric_special(text: &str) -> bool {
    let inner = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')).unwrap_or(text);
    if matches!(inner, "$?" | "$#" | "$$" | "$!" | "${?}" | "${#}" | "${$}" | "${!}") {
        return true;
    }
    inner.strip_prefix("${#").and_then(|t| t.strip_suffix('}')).is_some_and(|name| {
        let name = name.strip_suffix("[@]").or_else(|| name.strip_suffix("[*]")).unwrap_or(name);
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// The literal start of a concatenation (`-j` of `-j"$(nproc)"`), so that what the word
/// begins with stays known: an option's name with its value computed.
fn literal_prefix(node: Node<'_>, source: &str) -> String {
    let mut prefix = String::new();
    if node.kind() == "concatenation" {
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            match literal(child, source) {
                Some(text) => prefix.push_str(&text),
                None => break,
            }
        }
    }
    prefix
}

/// Whether the shell keeps this word as one word whatever it expands to: a `"…"` string
/// without an `@` expansion (`"$@"`, `"${a[@]}"` are several words), or a concatenation of
/// those and literal parts (no unquoted expansion to split, no glob to expand).
fn stays_one_word(node: Node<'_>, source: &str) -> bool {
    let text = source.get(node.byte_range()).unwrap_or_default();
    match node.kind() {
        "string" => !text.contains('@'),
        "raw_string" => true,
        "concatenation" => {
            let mut cursor = node.walk();
            let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
            children.iter().all(|child| match child.kind() {
                "string" | "raw_string" => stays_one_word(*child, source),
                _ => literal(*child, source).is_some(),
            })
        }
        _ => false,
    }
}

/// One `command` node: its words, or why its program cannot be read.
fn read_command_node(node: Node<'_>, source: &str, reading: &mut ScriptReading) {
    let mut words = Vec::new();
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        match child.kind() {
            "command_name" => {
                let mut inner = child.walk();
                let name = child.named_children(&mut inner).next();
                match name.and_then(|n| literal(n, source)) {
                    Some(name) => words.push(name),
                    None => {
                        let text = source.get(child.byte_range()).unwrap_or_default();
                        let word: String = text.chars().take(60).collect();
                        reading.unreadable.get_or_insert(Unreadable::ComputedProgram { word });
                        return;
                    }
                }
            }
            _ if words.is_empty() => {} // assignments and redirections before the program
            kind if kind.ends_with("redirect") => {}
            _ if child.is_named() => {
                words.push(word_value(child, source));
            }
            _ => {}
        }
    }
    let Some(program) = words.first() else { return };
    let name = program.rsplit('/').next().unwrap_or(program);
    if CODE_BUILTINS.contains(&name) && code_builtin_runs_code(name, &words[1..]) {
        reading.unreadable.get_or_insert(Unreadable::Builtin { name: name.to_owned() });
    }
    reading.commands.push(words);
}

/// The name a `variable_assignment` assigns.
fn assigned_name(node: Node<'_>, source: &str) -> Option<String> {
    let name = node.child_by_field_name("name").or_else(|| node.named_child(0))?;
    source.get(name.byte_range()).map(str::to_owned)
}

/// The value of a word the shell takes literally: a bare word without expansion, glob, brace
/// or tilde characters (backslash escapes removed), a `'…'` string, a `"…"` string without
/// expansions, or a concatenation of those. `None` for anything the shell computes.
fn literal(node: Node<'_>, source: &str) -> Option<String> {
    let text = source.get(node.byte_range())?;
    match node.kind() {
        "word" | "number" => {
            // A blank inside a bare word is tree-sitter-bash reading differently from bash
            // (it can take a newline into the next statement's first word).
            if text.contains(['$', '`', '*', '?', '[', ']', '{', '}', '~'])
                || text.starts_with('=')
                || text.contains(char::is_whitespace)
            {
                return None;
            }
            Some(unescape(text))
        }
        "raw_string" => text.strip_prefix('\'')?.strip_suffix('\'').map(str::to_owned),
        "string" => {
            let content = text.strip_prefix('"')?.strip_suffix('"')?;
            let mut cursor = node.walk();
            let only_content = node
                .children(&mut cursor)
                .all(|child| matches!(child.kind(), "\"" | "string_content"));
            (only_content && !content.contains(['$', '`'])).then(|| unescape(content))
        }
        "concatenation" => {
            let mut value = String::new();
            let mut cursor = node.walk();
            for child in node.children(&mut cursor) {
                value.push_str(&literal(child, source)?);
            }
            Some(value)
        }
        _ => None,
    }
}

/// A backslash keeps the character after it.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            out.extend(chars.next());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn words(text: &str) -> Vec<String> {
        text.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn commands_are_found_everywhere_in_the_tree() {
        let reading =
            read_script("x=1 cargo test 2>&1 | tee log; echo $(rm -f y) && (cd a && make)");
        assert_eq!(reading.unreadable, None);
        for command in ["cargo test", "tee log", "rm -f y", "cd a", "make"] {
            assert!(reading.commands.contains(&words(command)), "{command}: {reading:?}");
        }
        assert!(reading.commands.iter().any(|c| c[0] == "echo" && c[1] == COMPUTED_WORD));
    }

    #[test]
    fn computed_programs_code_builtins_and_code_variables_are_unreadable() {
        for script in [
            "{r,}m x",
            "/bin/r[m] x",
            "${x}m y",
            "$(printf r)m y",
            "`echo rm` y",
            "eval 'rm x'",
            "trap 'rm x' EXIT",
            "alias l=rm; l x",
            "source ./x.sh",
            ". ./x.sh",
            "hash -p /bin/rm ls; ls",
            "BASH_ENV=./x bash -c true",
            "export BASH_ENV=./x; bash -c true",
            "ls (",
            "x=r\n\\command ${x}m -fv victim",
        ] {
            assert!(read_script(script).unreadable.is_some(), "{script}");
        }
    }

    #[test]
    fn quoting_and_escapes_read_as_bash_reads_them() {
        let reading = read_script("\\rm a; \"rm\" b; 'r'm c; r\\\nm d");
        for command in ["rm a", "rm b", "rm c", "rm d"] {
            assert!(reading.commands.contains(&words(command)), "{command}: {reading:?}");
        }
    }
}

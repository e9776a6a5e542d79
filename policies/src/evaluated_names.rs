//! Places where bash evaluates a variable's *value* as an arithmetic expression, or uses it as
//! a variable name: there a value that holds a subscript with a command substitution
//! (`v='b[$(cmd)]'`) runs the command — and the value can be built at run time from pieces
//! that show no program name (`a=r; b=m; y="\$($a$b x)"`), so no reading of the script's words
//! sees it.
//!
//! [`evaluated_name`] finds the places in a script's text; a script holding one cannot be read.
//! Every check errs towards finding one: a false find costs a question.
//!
//! The places (each tried against bash 5): `$[…]`; in `${…}` an indirection (`${!v}`), a
//! subscript that is not a number (`${a[v]}`, `${#a[v]}`, `${a[-v]}`) or a substring offset or
//! length that is not a number (`${v:v}`, `${v: v}`, `${v:(v)}`, `${@:v}`, `${v:1:v}`); a
//! subscript that holds a name or an expansion anywhere (`a[v]=1`, `([v]=1)`, `unset 'a[v]'`);
//! the integer and nameref attributes (`declare -i`, `local -n`, …); and the variables bash
//! keeps as integers, which evaluate what is assigned to them however it is assigned
//! (`RANDOM=v`, `read OPTIND`, `for HISTCMD in v`).

/// Variables whose assignment bash evaluates as arithmetic, whatever declares them.
const INTEGER_VARIABLES: &[&str] = &["RANDOM", "SRANDOM", "OPTIND", "HISTCMD"];

/// Builtins that give a variable attributes, among them integer (`-i`) and nameref (`-n`).
const DECLARATION_BUILTINS: &[&str] = &["declare", "typeset", "local", "export", "readonly"];

/// The first place in `source` where bash may evaluate a value as arithmetic or as a name,
/// described for a message; `None` when there is none.
pub(crate) fn evaluated_name(source: &str) -> Option<&'static str> {
    if source.contains("$[") {
        return Some("$[…]");
    }
    if let Some(found) = expansions(source).find_map(expansion_evaluates) {
        return Some(found);
    }
    if subscript_with_name(source) {
        return Some("a[…]");
    }
    if declares_attribute(source) {
        return Some("declare -i/-n");
    }
    if assigns_integer_variable(source) {
        return Some("an integer variable");
    }
    None
}

/// The inside of every `${…}` in `source` (nested ones too, each on its own), braces matched
/// in one pass (an unclosed one runs to the end): linear in the length of the script.
fn expansions(source: &str) -> impl Iterator<Item = &str> {
    let bytes = source.as_bytes();
    let mut open = Vec::new();
    let mut found = Vec::new();
    for (at, &byte) in bytes.iter().enumerate() {
        match byte {
            b'{' if at > 0 && bytes[at - 1] == b'$' => open.push(Some(at + 1)),
            b'{' => open.push(None),
            b'}' => {
                if let Some(Some(start)) = open.pop() {
                    found.push((start, at));
                }
            }
            _ => {}
        }
    }
    found.extend(open.into_iter().flatten().map(|start| (start, bytes.len())));
    found.into_iter().filter_map(move |(start, end)| source.get(start..end))
}

/// What in one `${…}` (its inside) bash evaluates: an indirection, a subscript or a substring
/// offset or length that is not a plain number.
fn expansion_evaluates(inner: &str) -> Option<&'static str> {
    // `${!}` is the last background job's pid; `${!v}`, `${!v[@]}`, `${!v*}` read `v`'s value
    // or keys as names.
    if inner.starts_with('!') && inner.len() > 1 {
        return Some("${!…}");
    }
    let inner = inner.strip_prefix('#').filter(|rest| !rest.is_empty()).unwrap_or(inner);
    let name_end = inner
        .char_indices()
        .find(|&(index, c)| {
            !(c.is_ascii_alphanumeric() || c == '_' || (index == 0 && "@*#?$!-".contains(c)))
        })
        .map_or(inner.len(), |(index, _)| index);
    let mut rest = inner.get(name_end..).unwrap_or_default();
    if let Some(subscript) = rest.strip_prefix('[') {
        let (index, after) = subscript.split_once(']').unwrap_or((subscript, ""));
        if !is_number_or_all(index) {
            return Some("${a[…]}");
        }
        rest = after;
    }
    if let Some(range) = rest.strip_prefix(':') {
        // `${v:-x}`, `${v:=x}`, `${v:+x}`, `${v:?x}` are defaults, not a substring.
        if !range.starts_with(['-', '=', '+', '?']) && !is_number_or_all(&range.replace(':', "")) {
            return Some("${v:…}");
        }
    }
    None
}

/// A subscript or offset bash cannot evaluate to anything but itself: digits, signs and
/// blanks, or `@`/`*` (all elements).
fn is_number_or_all(text: &str) -> bool {
    let text = text.trim();
    text == "@"
        || text == "*"
        || text.chars().all(|c| c.is_ascii_digit() || c == '-' || c == '+' || c == ' ')
}

/// Whether `source` has a subscript that holds a name or an expansion: after a name
/// (`a[v]=1`, `unset 'a[v]'`, `read 'a[v]'`) or as an array literal's key (`([v]=1)`).
/// Linear: the next `]` and the count of name characters before each byte are computed once.
fn subscript_with_name(source: &str) -> bool {
    let bytes = source.as_bytes();
    let is_name = |c: u8| c.is_ascii_alphabetic() || c == b'_' || c == b'$' || c == b'`';
    let mut names_before = Vec::with_capacity(bytes.len() + 1);
    names_before.push(0usize);
    for &byte in bytes {
        let last = names_before.last().copied().unwrap_or(0);
        names_before.push(last + usize::from(is_name(byte)));
    }
    let mut next_close = vec![bytes.len(); bytes.len() + 1];
    for at in (0..bytes.len()).rev() {
        next_close[at] = if bytes[at] == b']' { at } else { next_close[at + 1] };
    }
    bytes.iter().enumerate().any(|(at, &b)| {
        if b != b'[' {
            return false;
        }
        let close = next_close[at + 1];
        let after_name =
            at > 0 && bytes.get(at - 1).is_some_and(|&p| p.is_ascii_alphanumeric() || p == b'_');
        let key = bytes.get(close + 1) == Some(&b'=')
            || bytes.get(close + 1..close + 3) == Some(b"+=".as_slice());
        (after_name || key) && names_before[close] > names_before[at + 1]
    })
}

/// Whether a declaration builtin is given the integer or nameref attribute (`declare -i`,
/// `local -in`, `typeset +n`), or an option cordon cannot read (`declare "$o" x`).
fn declares_attribute(source: &str) -> bool {
    let words: Vec<&str> =
        source.split(|c: char| c.is_whitespace() || ";&|()".contains(c)).collect();
    words.iter().enumerate().any(|(at, word)| {
        let name = word.trim_start_matches('\\').trim_matches(['\'', '"']);
        if !DECLARATION_BUILTINS.contains(&name) {
            return false;
        }
        // Options come first; the first other word ends them (one pass over each run of
        // options, so the whole check stays linear).
        for option in words.iter().skip(at + 1).filter(|w| !w.is_empty()) {
            if option.starts_with(['$', '`', '"', '\'']) {
                return true;
            }
            match option.strip_prefix(['-', '+']) {
                Some(letters) if letters.contains(['i', 'n']) => return true,
                Some(_) => {}
                None => return false,
            }
        }
        false
    })
}

/// Whether `source` names one of bash's integer variables other than to read its value
/// (`$RANDOM`, `${RANDOM}`): as an assignment, a `read` or `for` target, a declaration.
fn assigns_integer_variable(source: &str) -> bool {
    INTEGER_VARIABLES.iter().any(|name| {
        source.match_indices(name).any(|(at, _)| {
            let before = source.get(..at).and_then(|b| b.chars().next_back());
            let after = source.get(at + name.len()..).and_then(|a| a.chars().next());
            let whole = !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                && !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
            whole && !matches!(before, Some('$' | '{' | '#' | '!'))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_place_bash_evaluates_a_value_is_found() {
        for script in [
            "echo $[v]",
            "echo ${!v}",
            "echo ${!v*}",
            "z=(1); echo ${z[v]}",
            "echo ${#x[x]}",
            "echo ${x[-v]}",
            "echo ${x:-${z[v]}}",
            "echo ${v:v}",
            "echo ${v: v}",
            "echo ${v:(v)}",
            "echo ${z[@]:v}",
            "echo ${v:1:v}",
            "echo \"${@:v}\"",
            "z[v]=1",
            "z[v]+=1",
            "z=([v]=1)",
            "unset 'x[v]'",
            "read 'a[$i]'",
            "declare -i x=v",
            "declare -ai z=(v)",
            "local -i x",
            "typeset +i x",
            "declare -n r=v",
            "export -n x",
            "declare \"$o\" x",
            "declare   -i\tx=v",
            "RANDOM=v",
            "SRANDOM=v",
            "export RANDOM=v",
            "read OPTIND <<< v",
            "for HISTCMD in v; do :; done",
            "declare OPTIND=v",
        ] {
            assert!(evaluated_name(script).is_some(), "{script}");
        }
    }

    #[test]
    fn plain_expansions_and_numbers_are_not() {
        for script in [
            "echo $x ${x} ${#x} ${x:-d} ${x:=d} ${x:+d} ${x:?d} ${x/a/b} ${x%.c}",
            "echo ${a[0]} ${a[@]} ${#a[*]} ${a[-1]} ${x:1} ${x: -2} ${x:1:2}",
            "echo $RANDOM ${RANDOM} $OPTIND",
            "ls *.[ch] x[0-9]",
            "declare x=1; local y; export PATH=/bin",
            "echo ${!}",
        ] {
            assert_eq!(evaluated_name(script), None, "{script}");
        }
    }
}

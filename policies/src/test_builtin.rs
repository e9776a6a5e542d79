//! Whether bash's `test` / `[` builtin evaluates one of its operands as code: `-v NAME` and
//! `-R NAME` read a variable name whose subscript bash evaluates as arithmetic (`a[$(cmd)]`
//! runs `cmd`); the arithmetic comparisons (`-eq`, `-lt`, …) parse their operands as integers
//! in `[`/`test` but evaluate them in `[[`, and are kept unreadable with a computed operand in
//! either. Every other form compares strings or looks at files and evaluates nothing.
//!
//! The operands are placed as bash places them (`test.c`, POSIX by argument count): with one to
//! four arguments the operators are known from their positions; with more, or with a computed
//! word that the shell may split into several words or none, a computed word may itself become
//! `-v`, so the call is unreadable.

use crate::unreadable::{COMPUTED_NUMBER, COMPUTED_ONE_WORD, COMPUTED_WORD};

/// Unary operators that evaluate nothing (`-v` and `-R` are not among them).
const UNARY: &[&str] = &[
    "-a", "-b", "-c", "-d", "-e", "-f", "-g", "-h", "-k", "-p", "-r", "-s", "-t", "-u", "-w", "-x",
    "-O", "-G", "-L", "-S", "-N", "-n", "-z", "-o",
];

/// Binary operators on strings and files.
const STRING_BINARY: &[&str] = &["=", "==", "!=", "<", ">", "-nt", "-ot", "-ef", "-a", "-o"];

/// Binary operators on integers.
const ARITHMETIC_BINARY: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];

/// Whether `test` (or `[`, without its closing `]`) with these arguments may evaluate one of
/// them as code. Computed words stand as [`COMPUTED_WORD`] (any number of words),
/// [`COMPUTED_ONE_WORD`] (exactly one word, its value unknown, its literal start after it) or
/// [`COMPUTED_NUMBER`] (one word, a number).
pub(crate) fn test_evaluates(args: &[String]) -> bool {
    let splits = |a: &String| {
        a.contains(COMPUTED_WORD) && !a.starts_with(COMPUTED_ONE_WORD) && a != COMPUTED_NUMBER
    };
    if args.iter().any(splits) {
        return true;
    }
    // `-v NAME`/`-R NAME` evaluate NAME's subscript: only a literal name without one is safe,
    // and only where no computed word could be another `-v`.
    if let Some(at) = args.iter().position(|a| a == "-v" || a == "-R") {
        let plain_name = args.get(at + 1).is_some_and(|name| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        let names = args.iter().filter(|a| *a == "-v" || *a == "-R").count();
        return !(plain_name && names == 1 && !args.iter().any(|a| a.contains(COMPUTED_WORD)));
    }
    evaluates(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// A computed word whose value is not known to be a number.
fn computed(word: &str) -> bool {
    word.starts_with(COMPUTED_ONE_WORD)
}

fn evaluates(args: &[&str]) -> bool {
    if !args.iter().any(|a| computed(a)) {
        return false;
    }
    match args {
        [] | [_] => false,
        // A literal first word is `!`, a unary operator (`UNARY`; `-v`, `-R` were refused
        // above) or an error; a computed one could be `-v`.
        [first, _] => computed(first) || !(*first == "!" || UNARY.contains(first)),
        [left, op, right] => {
            if ARITHMETIC_BINARY.contains(op) {
                // bash's `[` reads these operands as integers without evaluating them, but
                // zsh's evaluates them as arithmetic: a computed operand that may be anything
                // stays unreadable; a number the shell makes (`"$?"`, `"$#"`) is a number.
                return computed(left) || computed(right);
            }
            if STRING_BINARY.contains(op) {
                return false;
            }
            match (*left, *right) {
                // A computed middle word could only be a binary operator, which in `[`
                // evaluates nothing, or a string.
                ("(", ")") => false,
                _ if computed(op) => true,
                ("!", _) => evaluates(&args[1..]),
                _ => true,
            }
        }
        [first, rest @ ..] if rest.len() == 3 => match (*first, rest[2]) {
            ("!", _) => evaluates(rest),
            ("(", ")") => evaluates(&rest[..2]),
            _ => true,
        },
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter()
            .map(|w| match *w {
                "Q" => COMPUTED_ONE_WORD.to_owned(),
                "P" => format!("{COMPUTED_ONE_WORD}x"),
                "N" => COMPUTED_NUMBER.to_owned(),
                "U" => COMPUTED_WORD.to_owned(),
                w => w.to_owned(),
            })
            .collect()
    }

    #[test]
    fn file_and_string_tests_evaluate_nothing() {
        for args in [
            &["-f", "package.json"][..],
            &["-f", "Q"],
            &["-d", "Q"],
            &["!", "-d", "Q"],
            &["-z", "Q"],
            &["Q"],
            &["Q", "=", "Q"],
            &["Q", "!=", "x"],
            &["1", "-eq", "1"],
            &["(", "Q", ")"],
            &["!", "Q", "=", "x"],
            &["-n", "x", "-a", "-f", "y"],
            &["N", "-ne", "0"],
            &["N", "-gt", "0"],
            &["P", "=", "xy"],
            &["-v", "HOME"],
        ] {
            assert!(!test_evaluates(&words(args)), "{args:?}");
        }
    }

    #[test]
    fn names_arithmetic_and_words_that_may_split_are_unreadable() {
        for args in [
            &["-v", "Q"][..],
            &["-R", "x", "-a", "-v", "y"],
            &["Q", "-eq", "1"],
            &["1", "-gt", "Q"],
            &["Q", "x"],
            &["x", "Q", "y"],
            &["-f", "U"],
            &["U"],
            &["-n", "Q", "-a", "-f", "y"],
            &["-v", "a[x]"],
            &["-v", "HOME", "-a", "Q"],
            &["(", "Q", ")", "Q"],
        ] {
            assert!(test_evaluates(&words(args)), "{args:?}");
        }
    }
}

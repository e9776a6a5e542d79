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

use crate::unreadable::{COMPUTED_ONE_WORD, COMPUTED_WORD};

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
/// them as code. Computed words stand as [`COMPUTED_WORD`] (any number of words) or
/// [`COMPUTED_ONE_WORD`] (exactly one word, its value unknown).
pub(crate) fn test_evaluates(args: &[String]) -> bool {
    if args.iter().any(|a| a == "-v" || a == "-R") {
        return true;
    }
    if args.iter().any(|a| a.contains(COMPUTED_WORD) && a != COMPUTED_ONE_WORD) {
        return true;
    }
    evaluates(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

fn computed(word: &str) -> bool {
    word == COMPUTED_ONE_WORD
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
        ] {
            assert!(!test_evaluates(&words(args)), "{args:?}");
        }
    }

    #[test]
    fn names_arithmetic_and_words_that_may_split_are_unreadable() {
        for args in [
            &["-v", "x"][..],
            &["-v", "Q"],
            &["-R", "x"],
            &["Q", "-eq", "1"],
            &["1", "-gt", "Q"],
            &["Q", "x"],
            &["x", "Q", "y"],
            &["-f", "U"],
            &["U"],
            &["-n", "Q", "-a", "-f", "y"],
        ] {
            assert!(test_evaluates(&words(args)), "{args:?}");
        }
    }
}

//! Property: a shell script is never more permissive than its commands. If
//! `bash -lc SCRIPT` is known-safe, every command bash runs for SCRIPT is known-safe on its own.
//!
//! The generator is its own oracle: it starts from the commands (word values) and spells each
//! word in one of the ways whose meaning to bash is fixed — bare, `'…'`, `"…"`, `$'…'`, a
//! backslash before a character, a backslash-newline inside a word (bash deletes it), a
//! backslash-newline after a blank between words — so the commands bash runs are known without
//! asking the checker.

use cordon_policies::is_known_safe;
use proptest::prelude::*;

/// Words around the edges of the known-safe list.
const NAMES: &[&str] = &[
    "ls", "cat", "find", "git", "sed", "rg", "sort", "uniq", "rm", "truncate", "tr", "echo", "env",
    "date", "file", "xargs", "sh",
];
const ARGS: &[&str] = &[
    "-exec",
    "-delete",
    "-n",
    "1,5p",
    "--output=f",
    "--out=f",
    "log",
    "status",
    "-c",
    "x",
    "-o",
    "--pre=sh",
    ".",
    "-maxdepth",
    "0",
    "-s0",
    "a",
    "-fprint",
    "id",
    ";",
    "-",
    "--",
    "w",
    "1e",
    "-i",
    "--ext-diff",
    "uncate",
    "m",
    "-rf",
    "a b",
    "$x",
    "*",
];

/// Bytes a bare word may hold without meaning anything to a shell.
fn is_bare(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"-_./:,+@%".contains(&byte)
}

/// Spells `value` so that bash reads exactly `value`, in a way chosen by `choices`.
fn spell(value: &str, choices: &mut impl Iterator<Item = u8>) -> String {
    let mut out = String::new();
    if value.is_empty() {
        return "''".to_owned();
    }
    let mut rest = value;
    while !rest.is_empty() {
        let choice = choices.next().unwrap_or(0);
        let take = 1 + usize::from(choice >> 4) % rest.len();
        let take = (1..=take).rev().find(|&n| rest.is_char_boundary(n)).unwrap_or(rest.len());
        let (part, tail) = rest.split_at(take);
        let first_in_word = out.is_empty();
        match choice % 8 {
            // A backslash-newline deleted by bash: never first (that would be a blank line join
            // with the previous word's separator, which is fine too, but keeps the oracle simple).
            0 if !first_in_word => {
                out.push_str("\\\n");
                continue;
            }
            1 if !part.contains('\'') => out.push_str(&format!("'{part}'")),
            2 if !part.contains(['"', '$', '`', '\\', '!']) => out.push_str(&format!("\"{part}\"")),
            3 if !part.contains(['\'', '\\']) => out.push_str(&format!("$'{part}'")),
            4 if !part.contains('\n') => part.chars().for_each(|c| out.push_str(&format!("\\{c}"))),
            _ if part.bytes().all(is_bare) && !(first_in_word && part.starts_with('=')) => {
                out.push_str(part);
            }
            _ if !part.contains('\'') => out.push_str(&format!("'{part}'")),
            _ => part.chars().for_each(|c| out.push_str(&format!("\\{c}"))),
        }
        rest = tail;
    }
    out
}

fn command() -> impl Strategy<Value = Vec<String>> {
    (
        prop::sample::select(NAMES),
        prop::collection::vec(prop::sample::select(ARGS), 0..4),
        prop::option::weighted(0.1, prop::collection::vec(prop::sample::select(NAMES), 1..3)),
    )
        .prop_map(|(name, args, nested)| {
            let mut words = vec![name.to_owned()];
            words.extend(args.iter().map(|a| (*a).to_owned()));
            if let Some(nested) = nested {
                // `sh -c 'ls && rm'`: a nested script as one word.
                words = vec!["sh".to_owned(), "-c".to_owned(), nested.join(" && ")];
            }
            words
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn a_known_safe_script_only_runs_known_safe_commands(
        commands in prop::collection::vec(command(), 1..4),
        operators in prop::collection::vec(
            prop::sample::select(&[" && ", " || ", "; ", " | ", "\n", ";", "|"][..]),
            3,
        ),
        blanks in prop::collection::vec(
            prop::sample::select(&[" ", "\t", "  ", " \\\n", " \\\n\t"][..]),
            16,
        ),
        choices in prop::collection::vec(any::<u8>(), 64),
    ) {
        let mut choices = choices.into_iter().cycle();
        let mut blanks = blanks.into_iter().cycle();
        let mut script = String::new();
        for (i, command) in commands.iter().enumerate() {
            if i > 0 {
                script.push_str(operators[i - 1]);
            }
            for (j, word) in command.iter().enumerate() {
                if j > 0 {
                    script.push_str(blanks.next().unwrap_or(" "));
                }
                script.push_str(&spell(word, &mut choices));
            }
        }
        let call = vec!["bash".to_owned(), "-lc".to_owned(), script];
        if is_known_safe(&call) {
            for command in &commands {
                prop_assert!(is_known_safe(command), "{call:?} is known-safe, {command:?} is not");
            }
        }
    }
}

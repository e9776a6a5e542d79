//! A program word's file name, and the list of programs that run arbitrary code given to them (shells, wrappers,
//! interpreters): "always allow" is never recorded for those, since a prefix rule for `sh`
//! would approve every `sh -c …`.

use crate::script_words::MULTI_CALL;
use crate::wrappers::is_wrapper;

/// Interpreters that run code given on the command line or in a file.
const INTERPRETERS: &[&str] = &[
    "python",
    "python2",
    "python3",
    "node",
    "nodejs",
    "deno",
    "bun",
    "perl",
    "ruby",
    "php",
    "lua",
    "luajit",
    "tclsh",
    "wish",
    "Rscript",
    "R",
    "julia",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "osascript",
    "pwsh",
    "powershell",
    "java",
    "jshell",
    "scala",
    "groovy",
    "irb",
    "erl",
    "elixir",
    "iex",
    "ghci",
    "runghc",
    "swift",
    "make",
    "gmake",
    "npx",
    "pnpx",
    "bunx",
    "eval",
    "source",
    ".",
];

/// The file name of a program word (`/usr/bin/git` -> `git`, `git` -> `git`). Any path
/// counts here: it is used to find what a command *might* be, for rules that forbid or ask.
pub fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Whether the program runs arbitrary code given in its arguments (a shell, a wrapper such as
/// `env` or `xargs`, an interpreter such as `python3`): no prefix rule can describe what such a
/// command does. Versioned names count too (`python3.12`, `node18`).
pub fn runs_arbitrary_code(program: &str) -> bool {
    let name = basename(program);
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
    crate::script_words::is_shell_name(program)
        || MULTI_CALL.contains(&name)
        || [name, stem].iter().any(|n| is_wrapper(n) || INTERPRETERS.contains(n))
}

#[cfg(test)]
#[path = "normalize_tests.rs"]
mod tests;

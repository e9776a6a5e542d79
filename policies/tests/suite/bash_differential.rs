//! Differential test: every generated script that `plain_shell_commands` calls plain
//! is run by real bash, and the words bash executes must be exactly the checker's words.
//!
//! How bash's words are observed cheaply: one long-running bash process reads the scripts
//! (NUL-separated) and `eval`s each one. `eval` hands its string to the same parser and the same
//! command loop as `bash -c` (`parse_and_execute`), so quoting, continuations, comments and word
//! splitting are read identically; to keep that argument honest, every 40th script is instead
//! run by a child `bash -c SCRIPT`. Every command name the grammar can produce is a shell
//! function (which also shadows any builtin of that name), and `command_not_found_handle` catches
//! any other name (PATH is empty): both print their argv, in one `write`, to fd 3. `&&` and `||`
//! skip commands, so each script runs twice, once with every command succeeding and once with
//! every command failing: together the two runs reach every command. Pipeline members run
//! concurrently, so a script's commands are compared as a sorted set.
//!
//! `CORDON_DIFF_CORPUS=N` sets the number of generated scripts (default 20 000);
//! `CORDON_DIFF_SEED=S` the seed. bash missing is a failure, not a skip.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::Instant;

use cordon_policies::plain_shell_commands;

/// Command names the generator uses; each becomes a recording shell function.
const FUNCTION_NAMES: &[&str] = &["cmdA", "cmdB", "find", "git", "rm", "ls", "tr", "truncate", "x"];

/// Names bash treats as syntax (or an assignment) in command position, plus a `-`.
const SYNTAX_NAMES: &[&str] =
    &["time", "coproc", "!", "[[", "if", "function", "{", "a=b", "-", "select", "foreach"];

/// Bare fragments that every shell takes literally.
const PLAIN_PARTS: &[&str] = &[
    "a",
    "cmdA",
    "-x",
    "--output=f",
    "-exec",
    "x.y",
    "a=b",
    "1",
    "%",
    "@",
    ",",
    ":",
    "+",
    "/",
    "-",
    "--",
    "rm",
    "b_c",
    "2",
];

/// Fragments with a special meaning somewhere in some shell.
const TRICKY_PARTS: &[&str] = &[
    "*",
    "?",
    "[a]",
    "]",
    "[",
    "{a,b}",
    "{",
    "}",
    "~",
    "~/x",
    "#",
    "a#b",
    "\\",
    "\\\n",
    "\\ ",
    "\\a",
    "\\#",
    "$x",
    "${x}",
    "$(cmdA)",
    "`cmdA`",
    "$'a\\nb'",
    "$'\\x41'",
    "$\"a\"",
    "$",
    "!",
    "!x",
    "@(a)",
    "+(a)",
    "!(a)",
    "<",
    ">",
    "2>",
    "<<EOF\nx\nEOF\n",
    "<<-EOF\n\tx\n\tEOF\n",
    "<<<x",
    "(",
    ")",
    "&",
    "=x",
    "=",
    "\u{e9}",
    "\u{ff0d}",
    "\u{2010}",
    "\u{a0}",
    "\r",
    "\x0b",
    "'",
    "\"",
    ";",
    "|",
    "^",
    "=ls",
    "a=~/x",
    "#x\n",
];

/// Contents for `'…'` and `"…"`.
const QUOTED_CONTENTS: &[&str] = &[
    "a b", "", "x\\\ny", "$x", "#", "*", "\n", "a\\", "!x", "`cmdA`", "'", "\"", "\\\"", "-exec",
    " ; rm ", "\t", "~", "{a,b}",
];

/// What may separate two words.
const BLANKS: &[&str] = &[" ", " ", " ", "\t", "  ", "\\\n", " \\\n ", " \\\n", "\n"];

/// Blanks every shell reads alike.
const PLAIN_BLANKS: &[&str] = &[" ", " ", "\t", "  "];

/// Separators every shell reads alike.
const PLAIN_SEPARATORS: &[&str] =
    &[" && ", " || ", "; ", " | ", "\n", ";", "&&", "|", "||", "\n\n"];

/// What may separate two commands.
const SEPARATORS: &[&str] = &[
    " && ", " || ", "; ", " | ", "\n", ";", "&&", "|", "||", "\\\n", " & ", "\n\n", ";;", " &&\n",
    "|\n", " ;\n", "\n;", " |& ", " # c\n", "\\\n&& ",
];

/// splitmix64: deterministic, fast, no dependency. `tricky` is the chance, in percent, that a
/// generated piece is one of the tricky kinds; each script draws its own, so that the corpus
/// holds both scripts that are plain and scripts that are almost plain.
struct Rng(u64, usize);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % u64::try_from(n).unwrap_or(1)).unwrap_or(0)
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    /// `tricky` with the script's chance of a tricky piece, else `plain`.
    fn pick_either<'a>(&mut self, plain: &[&'a str], tricky: &[&'a str]) -> &'a str {
        if self.chance(self.1) { self.pick(tricky) } else { self.pick(plain) }
    }
}

/// Writes `text` in a random quoting: bare, `'…'`, `"…"`, split by `''`, or with a
/// backslash-newline or backslash inside.
fn spell(rng: &mut Rng, text: &str, out: &mut String) {
    let cut = if text.is_empty() { 0 } else { rng.below(text.len()) };
    let (head, tail) = text.split_at(if text.is_char_boundary(cut) { cut } else { 0 });
    if rng.chance(rng.1) {
        match rng.below(3) {
            0 => write!(out, "{head}\\\n{tail}").unwrap_or(()),
            1 => write!(out, "\\{text}").unwrap_or(()),
            _ => write!(out, "{head}\\{tail}").unwrap_or(()),
        }
        return;
    }
    match rng.below(10) {
        0 => write!(out, "'{text}'").unwrap_or(()),
        1 => write!(out, "\"{text}\"").unwrap_or(()),
        2 => write!(out, "{head}''{tail}").unwrap_or(()),
        3 => write!(out, "{head}\"\"{tail}").unwrap_or(()),
        _ => out.push_str(text),
    }
}

fn word(rng: &mut Rng, out: &mut String) {
    for _ in 0..1 + rng.below(3) {
        if rng.chance(rng.1) {
            out.push_str(rng.pick(TRICKY_PARTS));
            continue;
        }
        match rng.below(20) {
            0..=5 => write!(out, "'{}'", rng.pick(QUOTED_CONTENTS)).unwrap_or(()),
            6..=8 => write!(out, "\"{}\"", rng.pick(QUOTED_CONTENTS)).unwrap_or(()),
            9 if rng.chance(rng.1) => {
                write!(out, "$'{}'", rng.pick(QUOTED_CONTENTS)).unwrap_or(());
            }
            _ => {
                let part = rng.pick(PLAIN_PARTS);
                spell(rng, part, out);
            }
        }
    }
}

fn script(rng: &mut Rng) -> String {
    rng.1 = [0, 1, 3, 10, 30][rng.below(5)];
    let mut out = String::new();
    if rng.chance(rng.1) {
        out.push_str(rng.pick(&["\n", " ", "\\\n", ";", "# c\n"]));
    }
    for command in 0..1 + rng.below(4) {
        if command > 0 {
            out.push_str(rng.pick_either(PLAIN_SEPARATORS, SEPARATORS));
        }
        let name = if rng.chance(8) { rng.pick(SYNTAX_NAMES) } else { rng.pick(FUNCTION_NAMES) };
        spell(rng, name, &mut out);
        for _ in 0..rng.below(5) {
            out.push_str(rng.pick_either(PLAIN_BLANKS, BLANKS));
            word(rng, &mut out);
        }
    }
    if rng.chance(rng.1) {
        out.push_str(rng.pick(&[";", "\n", " ", "\\\n", " #", "&&", "\\"]));
    }
    out
}

/// The driver. Every command ends in `__cordon_record`, which prints the argv to fd 3 in one
/// write: `\x1f` after each word, `\x1e` after the command, and newlines in words as `\x1c`
/// (bash's stdout is line-buffered: a newline would split the write, and pipeline members
/// would interleave); `\x1d` ends a script. A record is a mode byte (`e`: run with `eval`, `c`:
/// run by a child `bash -c`), the command names to define as recording functions separated by
/// spaces, `\x1f`, and the script. The functions shadow builtins (`:`, `echo`) and let a name
/// with a `/` be observed (bash looks up functions before paths); any other name reaches
/// `command_not_found_handle`, PATH being empty. The driver calls what it needs through
/// `builtin`, so a recording function named `eval` or `printf` cannot break it.
const DRIVER: &str = r#"exec 3>&1 >/dev/null 2>/dev/null
__cordon_record() {
  builtin local o
  builtin printf -v o '%s\x1f' "$@"
  o=${o//$'\n'/$'\x1c'}
  builtin printf '%s\x1e' "$o" >&3
  builtin return "$st"
}
command_not_found_handle() { __cordon_record "$@"; }
builtin export -f __cordon_record command_not_found_handle
builtin export PATH=/nonexistent-cordon-diff
body='{ __cordon_record "$FUNCNAME" "$@"; }'
while IFS= builtin read -r -d '' s; do
  mode=${s:0:1} s=${s:1} names=${s%%$'\x1f'*} s=${s#*$'\x1f'}
  for n in $names; do builtin eval "$n() $body"; builtin export -f "$n"; done
  for st in 0 1; do
    builtin export st
    if [[ $mode = e ]]; then builtin eval "$s"; else "$BASH" -c "$s"; fi </dev/null
  done
  for n in $names; do builtin unset -f "$n"; done
  builtin printf '\x1d' >&3
done
"#;

/// A script for the driver, with the command names the driver must define for it.
struct Run<'a> {
    script: &'a str,
    names: Vec<&'a str>,
}

/// Runs the scripts through one bash and returns, per script, the sorted commands it ran.
fn bash_commands(runs: &[Run<'_>]) -> Vec<Vec<Vec<String>>> {
    let dir = tempfile::tempdir().expect("temp dir");
    let driver_path = dir.path().join("driver.sh");
    std::fs::write(&driver_path, DRIVER).expect("write driver");
    let mut input = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        // A child bash imports exported functions only under plain identifiers.
        let child = i % 40 == 39 && run.names.iter().all(|n| is_identifier(n));
        input.push(if child { b'c' } else { b'e' });
        input.extend_from_slice(run.names.join(" ").as_bytes());
        input.push(0x1f);
        input.extend_from_slice(run.script.as_bytes());
        input.push(0);
    }
    let input_path = dir.path().join("scripts");
    std::fs::write(&input_path, input).expect("write scripts");
    let output = Command::new("bash")
        .arg(&driver_path)
        .current_dir(dir.path())
        .stdin(std::fs::File::open(&input_path).expect("open scripts"))
        .stderr(Stdio::inherit())
        .output()
        .expect("bash must be installed: this test fails rather than skip");
    assert!(output.status.success(), "driver failed: {:?}", output.status);
    let text = String::from_utf8(output.stdout).expect("bash printed only plain words");
    let mut per_script: Vec<&str> = text.split('\x1d').collect();
    assert_eq!(per_script.pop(), Some(""), "output must end with a script marker");
    per_script
        .into_iter()
        .map(|ran| {
            let mut commands: Vec<Vec<String>> = ran
                .split_terminator('\x1e')
                .map(|c| c.split_terminator('\x1f').map(|w| w.replace('\x1c', "\n")).collect())
                .collect();
            commands.sort();
            commands.dedup();
            commands
        })
        .collect()
}

fn is_identifier(name: &str) -> bool {
    name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
}

/// Whether the driver can define a function named `name` with `eval "NAME() …"`.
fn is_function_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./:,+@%".contains(&b))
}

#[test]
fn plain_scripts_are_read_exactly_as_bash_reads_them() {
    let corpus: usize =
        std::env::var("CORDON_DIFF_CORPUS").ok().and_then(|n| n.parse().ok()).unwrap_or(20_000);
    let seed: u64 =
        std::env::var("CORDON_DIFF_SEED").ok().and_then(|n| n.parse().ok()).unwrap_or(23);
    let started = Instant::now();
    let mut rng = Rng(seed, 0);
    let scripts: Vec<String> = (0..corpus).map(|_| script(&mut rng)).collect();
    let mut unobservable = 0;
    let plain: Vec<(&str, Vec<Vec<String>>)> = scripts
        .iter()
        .filter_map(|s| {
            let argv = vec!["bash".to_owned(), "-c".to_owned(), s.clone()];
            plain_shell_commands(&argv).map(|commands| (s.as_str(), commands))
        })
        .filter(|(_, commands)| {
            // A name with a `/` is observed through a function of that name, which the driver
            // can only define for names made of plain characters.
            let observable =
                commands.iter().all(|c| !c[0].contains('/') || is_function_name(&c[0]));
            unobservable += usize::from(!observable);
            observable
        })
        .collect();
    let runs: Vec<Run<'_>> = plain
        .iter()
        .map(|(script, commands)| {
            let mut names: Vec<&str> =
                commands.iter().map(|c| c[0].as_str()).filter(|n| is_function_name(n)).collect();
            names.sort_unstable();
            names.dedup();
            Run { script, names }
        })
        .collect();
    // Two batches, one bash each, on two threads.
    let (first, second) = runs.split_at(runs.len() / 2);
    let (ran_first, ran_second) = std::thread::scope(|scope| {
        let a = scope.spawn(|| bash_commands(first));
        let b = bash_commands(second);
        (a.join().expect("first batch"), b)
    });
    let ran: Vec<_> = ran_first.into_iter().chain(ran_second).collect();
    assert_eq!(ran.len(), plain.len(), "bash reported a different number of scripts");
    let mut differences = String::new();
    for ((script, checker), bash) in plain.iter().zip(&ran) {
        let mut checker = checker.clone();
        checker.sort();
        checker.dedup();
        if &checker != bash {
            writeln!(differences, "{script:?}\n  checker: {checker:?}\n  bash:    {bash:?}")
                .unwrap_or(());
        }
    }
    let summary = format!(
        "{corpus} scripts generated (seed {seed}), {} plain and run by bash \
         ({unobservable} plain but unobservable skipped) in {:.1?}",
        plain.len(),
        started.elapsed()
    );
    let _ = writeln!(std::io::stderr(), "{summary}");
    assert!(differences.is_empty(), "{summary}; differences:\n{differences}");
    // A corpus where nothing is plain would test nothing.
    assert!(plain.len() * 10 >= corpus, "{summary}: too few plain scripts");
}

//! Reading an argv as the program that will really run: wrappers unwrapped with their own
//! option grammar, git's global options skipped, and every place where the words do not say
//! what runs reported as [`Unreadable`].
//!
//! An unreadable command is not refused here: it is a command that *might* be anything, so
//! every `prompt` and `forbidden` rule may apply to it and nothing may approve it unasked.
//! Programs that run other code by design (`make`, `npm test`, `python3 script.py`, `bash
//! build.sh`) are read by their own name: the code they run is a file, not the command line.

use crate::normalize::basename;
use crate::script_words::is_shell_name;
use crate::stream_editors::{awk_runs_commands, sed_runs_commands};
use crate::unreadable::{
    CODE_BUILTINS, COMPUTED_WORD, NAME_BUILTINS, Unreadable, code_builtin_runs_code,
};
use crate::wrappers::{Unwrapped, unwrap};

/// How many wrappers deep [`read_command`] unwraps (`env nice timeout 5 git push`); deeper
/// nesting is unreadable rather than cut short.
const MAX_UNWRAP: usize = 8;

/// Interpreters and the options that hand them code on the command line, each from the tool's
/// own manual or `--help`.
const INLINE_CODE: &[(&str, &[&str])] = &[
    // python(1): `-c command`.
    ("python", &["-c"]),
    ("pypy", &["-c"]),
    // node(1): `-e`, `-p`, `--eval`, `--print`.
    ("node", &["-e", "-p", "--eval", "--print"]),
    ("nodejs", &["-e", "-p", "--eval", "--print"]),
    // `deno eval CODE`.
    ("deno", &["eval"]),
    // `bun --help`: `-e`/`--eval`, `-p`/`--print`.
    ("bun", &["-e", "--eval", "-p", "--print"]),
    // perlrun(1): `-e`, `-E`, and `-M`/`-m`, whose text is spliced into `use MODULE …;`
    // (`-M'strict;system(…)'`).
    ("perl", &["-e", "-E", "-M", "-m"]),
    // ruby(1): `-e`.
    ("ruby", &["-e"]),
    // php(1): `-r` code, `-B`/`-R`/`-E` code before, for and after each input line.
    ("php", &["-r", "-B", "-R", "-E"]),
    // lua(1): `-e stat`.
    ("lua", &["-e"]),
    ("luajit", &["-e"]),
    // Rscript(1) and R(1): `-e expr`.
    ("Rscript", &["-e"]),
    ("R", &["-e"]),
    // julia(1): `-e`, `-E`, `--eval`, `--print`.
    ("julia", &["-e", "-E", "--eval", "--print"]),
    // osascript(1): `-e statement`.
    ("osascript", &["-e"]),
    // pwsh: `-Command`, `-c`, and `-EncodedCommand`, `-ec`.
    ("pwsh", &["-c", "-command", "-Command", "-ec", "-EncodedCommand", "-encodedcommand"]),
    ("powershell", &["-c", "-command", "-Command", "-ec", "-EncodedCommand", "-encodedcommand"]),
    // erl(1): `-eval Expr`.
    ("erl", &["-eval"]),
    // elixir: `-e`/`--eval`.
    ("elixir", &["-e", "--eval"]),
    // groovy and scala: `-e`.
    ("groovy", &["-e"]),
    ("scala", &["-e"]),
    // ghc(1): `-e expr` (ghc, ghci).
    ("ghc", &["-e"]),
    ("ghci", &["-e"]),
    // npx(1): `-c`/`--call` runs a shell command.
    ("npx", &["-c", "--call"]),
    // java(1): the `-XX:OnError` and `-XX:OnOutOfMemoryError` commands.
    ("java", &["-XX:OnError", "-XX:OnOutOfMemoryError"]),
];

/// Programs that run a command given in one of these options.
const RUNS_WITH_OPTION: &[(&str, &[&str])] = &[
    (
        "tar",
        &[
            "--to-command",
            "--use-compress-program",
            "-I",
            "--checkpoint-action",
            "--info-script",
            "--new-volume-script",
            "-F",
            "--rsh-command",
            "--rmt-command",
        ],
    ),
    ("zip", &["-TT", "--unzip-command"]),
    ("rsync", &["-e", "--rsh", "--rsync-path"]),
    ("ssh", &["-o", "-F"]),
    ("scp", &["-S", "-o", "-F"]),
    ("sftp", &["-S", "-D", "-o", "-F"]),
    ("man", &["-P", "--pager", "-H", "--html"]),
    ("vim", &["-c", "--cmd", "-S", "-s", "-es", "-Es", "-e"]),
    ("vi", &["-c", "--cmd", "-S", "-s", "-es", "-Es", "-e"]),
    ("nvim", &["-c", "--cmd", "-S", "-s", "-es", "-Es", "-e", "--headless"]),
    ("ex", &["-c", "--cmd", "-S", "-s"]),
    ("emacs", &["--eval", "-l", "--load", "--batch", "-batch", "--script", "-f", "--funcall"]),
    // Any initial command (`+CMD`) may be `!` or `|` after others; a lesskey file binds keys
    // to shell commands.
    ("less", &["+", "-+", "--lesskey-src", "--lesskey-file"]),
];

/// The command as rules see it: the program by its file name, wrappers unwrapped, git's
/// global options skipped — or why that cannot be read.
pub fn read_command(command: &[String]) -> Result<Vec<String>, Unreadable> {
    let mut words: Vec<String> = command.to_vec();
    let mut depth = 0;
    loop {
        let Some((first, rest)) = words.split_first() else { return Ok(Vec::new()) };
        if first.contains(COMPUTED_WORD) {
            return Err(Unreadable::ComputedProgram { word: "…".to_owned() });
        }
        let inner = match unwrap(basename(first), rest) {
            Unwrapped::NotAWrapper | Unwrapped::Nothing => break,
            Unwrapped::Unreadable(why) => return Err(why),
            Unwrapped::Inner(inner) => inner.into_owned(),
        };
        depth += 1;
        if depth > MAX_UNWRAP {
            return Err(Unreadable::TooDeep);
        }
        words = inner;
    }
    let Some((first, rest)) = words.split_first() else { return Ok(Vec::new()) };
    let program = basename(first).to_owned();
    // git's commands as the programs of its exec path (`/usr/lib/git-core/git-push`).
    if let Some(subcommand) = program.strip_prefix("git-").filter(|s| !s.is_empty()) {
        let args = std::iter::once(subcommand.to_owned()).chain(rest.iter().cloned());
        let args: Vec<String> = args.collect();
        let rest = crate::git_reading::read_git(&args)?;
        return Ok(std::iter::once("git".to_owned()).chain(rest).collect());
    }
    if CODE_BUILTINS.contains(&program.as_str()) && code_builtin_runs_code(&program, rest) {
        return Err(Unreadable::Builtin { name: program });
    }
    // `test -v 'a[$(cmd)]'` evaluates the subscript; `test -f "$f"` evaluates nothing.
    if matches!(program.as_str(), "test" | "[") {
        let operands = match (program.as_str(), rest.split_last()) {
            ("[", Some((last, operands))) if last == "]" => operands,
            _ => rest,
        };
        if crate::test_builtin::test_evaluates(operands) {
            return Err(Unreadable::Builtin { name: program });
        }
    }
    // A subscript or arithmetic operand with an expansion is evaluated, command substitutions
    // included (`declare -i`, `printf -v 'a[$(cmd)]'`, `read "$v"`).
    if NAME_BUILTINS.contains(&program.as_str())
        && rest.iter().any(|a| {
            // In a script, a word the shell computes stands as COMPUTED_WORD: its value is
            // the name (`read "$v"`, `wait -p "$v"`).
            a.contains(['$', '`']) || a.contains(COMPUTED_WORD) || a == "-v" || a.starts_with("-i")
        })
    {
        return Err(Unreadable::Builtin { name: program });
    }
    if matches!(program.as_str(), "make" | "gmake")
        && let Some(detail) = crate::make_options::make_code(rest)
    {
        return Err(Unreadable::ToolWords { detail });
    }
    if let Some(interpreter) = inline_code(&program, rest) {
        return Err(Unreadable::InlineCode { interpreter });
    }
    if reads_code_from_stdin(&program, rest) {
        return Err(Unreadable::ScriptOnStdin { shell: program });
    }
    if is_shell_name(&program) && reads_stdin(rest) {
        return Err(Unreadable::ScriptOnStdin { shell: program });
    }
    let rest = if program == "git" { crate::git_reading::read_git(rest)? } else { rest.to_vec() };
    Ok(std::iter::once(program).chain(rest).collect())
}

/// `python3 -c CODE`, `node -e CODE`, `perl -E CODE`, `awk` with `system(…)` or a pipe: the
/// interpreter's name when its command line carries code that may run programs.
fn inline_code(program: &str, args: &[String]) -> Option<String> {
    let stem = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
    if matches!(stem, "awk" | "gawk" | "mawk" | "nawk") {
        return awk_runs_commands(args).then(|| program.to_owned());
    }
    if stem == "sed" {
        return sed_runs_commands(args).then(|| program.to_owned());
    }
    // `python3 -m timeit STMT`, `-m pdb -c CMD`: modules that run code given as arguments;
    // `-m code` reads it from standard input.
    if matches!(stem, "python" | "pypy") {
        let module = args.iter().enumerate().find_map(|(i, a)| match a.strip_prefix("-m") {
            Some("") => args.get(i + 1).map(String::as_str),
            Some(attached) => Some(attached),
            None => None,
        });
        if module.is_some_and(|m| matches!(m, "timeit" | "pdb" | "code" | "cProfile" | "profile")) {
            return Some(program.to_owned());
        }
    }
    if crate::command_interpreters::runs_given_code(stem, args) {
        return Some(program.to_owned());
    }
    if let Some((_, options)) = RUNS_WITH_OPTION.iter().find(|(name, _)| *name == stem) {
        // tar's old style: a first word without a dash is a cluster of options.
        let old_style = (stem == "tar")
            .then(|| args.first().filter(|a| !a.starts_with('-')).map(|a| format!("-{a}")))
            .flatten();
        let given = args
            .iter()
            .chain(old_style.as_ref())
            .any(|arg| options.iter().any(|o| option_given(arg, o)));
        return given.then(|| program.to_owned());
    }
    let (_, options) = INLINE_CODE.iter().find(|(name, _)| *name == stem)?;
    let given = args.iter().take_while(|a| *a != "--").any(|arg| {
        options.iter().any(|o| {
            arg == o
                || arg.starts_with(&format!("{o}="))
                // a cluster ending in the code option: `python3 -Ic`, `perl -ne`
                || (o.len() == 2 && arg.starts_with('-') && !arg.starts_with("--")
                    && arg.contains(&o[1..]))
        })
    });
    given.then(|| program.to_owned())
}

/// Whether `arg` may give the option `option`: a long option or any abbreviation of it
/// (getopt_long takes `--to-com=…` for `--to-command=…`), a short option anywhere in a cluster
/// (`-avze CMD`, `-cvIrm`: the letter may also be another option's value, which only costs a
/// question), any other spelling as a prefix (`-TT…`, `+…`).
fn option_given(arg: &str, option: &str) -> bool {
    if let Some(name) = option.strip_prefix("--") {
        let Some(given) = arg.strip_prefix("--") else { return false };
        let given = given.split_once('=').map_or(given, |(key, _)| key);
        return !given.is_empty() && name.starts_with(given);
    }
    let mut letters = option.chars();
    if let (Some('-'), Some(letter), None) = (letters.next(), letters.next(), letters.next())
        && letter.is_ascii_alphabetic()
    {
        return arg.starts_with('-') && !arg.starts_with("--") && arg[1..].contains(letter);
    }
    arg.starts_with(option)
}

/// Whether a shell with these arguments reads its script from standard input: no inline
/// script (`-c`) and no script file operand, or `-s`.
fn reads_stdin(args: &[String]) -> bool {
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        index += 1;
        if arg == "--" || arg == "-" {
            return args.get(index).is_none() || arg == "-";
        }
        if let Some(long) = arg.strip_prefix("--") {
            if long.starts_with("comm") || long.starts_with("init-command") {
                return false;
            }
            if matches!(long, "rcfile" | "init-file") {
                index += 1;
            }
            continue;
        }
        if let Some(letters) = arg.strip_prefix(['-', '+']) {
            if letters.contains(['c', 'C']) {
                return false;
            }
            if letters.contains('s') {
                return true;
            }
            if letters.contains('o') || letters.contains('O') {
                index += 1; // `-o OPTION`
            }
            continue;
        }
        // A script file, unless it is standard input or a pipe under another name
        // (`bash /dev/stdin <<< …`, `bash <(…)`, `bash /proc/self/fd/0`).
        return is_stream_file(arg);
    }
    true
}

/// Whether a script operand names a stream rather than a file the command line shows:
/// `/dev/stdin`, `/dev/fd/N`, `/proc/…/fd/N`, any other device, or a word the shell computes
/// (a process substitution `<(…)` among them).
fn is_stream_file(operand: &str) -> bool {
    operand.contains(COMPUTED_WORD) || operand.starts_with("/dev/") || operand.starts_with("/proc/")
}

/// An interpreter with no script operand (or `-`): it reads its program from standard input,
/// which a here-document or a pipe fills (`python3 - <<EOF`, `… | perl`).
fn reads_code_from_stdin(program: &str, args: &[String]) -> bool {
    let stem = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
    const READ_STDIN: &[&str] = &[
        "python", "pypy", "node", "nodejs", "perl", "ruby", "php", "lua", "jshell", "irb", "iex",
        "ghci", "swift", "erl", "groovysh", "scala",
    ];
    if !READ_STDIN.contains(&stem) {
        return false;
    }
    // `python3 -m module` and `-V`/`--version` do not read a program from stdin.
    let module_or_info = args.iter().any(|a| {
        a == "-m"
            || a.starts_with("-m") && stem == "python"
            || a == "-V"
            || a.starts_with("--vers")
            || a == "--help"
            || a == "-h"
    });
    let operand = args.iter().find(|a| !a.starts_with('-') || a.as_str() == "-");
    !module_or_info && operand.is_none_or(|a| a == "-" || is_stream_file(a))
}

//! Why cordon cannot tell from a command's words which programs it runs, and the words and
//! names that make it so.

use std::fmt;

/// Why cordon cannot tell from a command's words which programs it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreadable {
    /// A wrapper that computes what it runs, or whose options cordon does not model.
    Wrapper { detail: String },
    /// Wrappers nested deeper than cordon follows.
    TooDeep,
    /// A program word the shell computes (`$x`, `$(…)`, a glob, a brace expansion).
    ComputedProgram { word: String },
    /// A shell builtin that runs or redefines code (`eval`, `trap`, `alias`, `source`, …).
    Builtin { name: String },
    /// A shell reading its script from standard input or a here-document.
    ScriptOnStdin { shell: String },
    /// An interpreter given code on its command line (`python3 -c`, `node -e`).
    InlineCode { interpreter: String },
    /// A program given code, or a program to run, in one of its options or operands, or an
    /// option cordon does not know for a program whose options it models (`make --eval`).
    ToolWords { detail: String },
    /// A git command whose meaning comes from configuration (aliases, `-c core.*`, a
    /// non-builtin subcommand).
    Git { detail: String },
    /// A variable that makes a program load code from a file or run a program it names
    /// (`BASH_ENV`, `LD_PRELOAD`, `GIT_SSH_COMMAND`).
    CodeVariable { name: String },
    /// A script tree-sitter-bash does not parse cleanly.
    Unparsed,
}

impl fmt::Display for Unreadable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unreadable::Wrapper { detail } => write!(f, "{detail}"),
            Unreadable::TooDeep => write!(f, "wrappers nest deeper than cordon follows"),
            Unreadable::ComputedProgram { word } => {
                write!(f, "the program name `{word}` is computed by the shell")
            }
            Unreadable::Builtin { name } => write!(f, "the script uses `{name}`"),
            Unreadable::ScriptOnStdin { shell } => {
                write!(f, "`{shell}` reads its script from standard input")
            }
            Unreadable::InlineCode { interpreter } => {
                write!(f, "`{interpreter}` runs code given on its command line")
            }
            Unreadable::Git { detail } | Unreadable::ToolWords { detail } => write!(f, "{detail}"),
            Unreadable::CodeVariable { name } => {
                write!(f, "`{name}` makes a program load code or run a program it names")
            }
            Unreadable::Unparsed => write!(f, "cordon cannot parse the script"),
        }
    }
}

impl serde::Serialize for Unreadable {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Builtins that run code given as text or from a file, or change what a name runs.
pub(crate) const CODE_BUILTINS: &[&str] = &[
    "eval",
    "trap",
    "alias",
    "source",
    ".",
    "hash",
    "enable",
    "fc",
    "shopt",
    "unalias",
    "coproc",
    "complete",
    "compgen",
    "bind",
    "mapfile",
    "readarray",
    "select",
    "let",
];

/// Whether the builtin `name`, one of [`CODE_BUILTINS`], runs or redefines code with these
/// arguments. Only `trap` has forms that do neither: `trap -l`, `trap -p [SIG…]` print, and
/// `trap - SIG…` / `trap '' SIG…` reset or ignore signals.
pub(crate) fn code_builtin_runs_code(name: &str, args: &[String]) -> bool {
    if name != "trap" {
        return true;
    }
    let args = match args.split_first() {
        Some((first, rest)) if first == "--" => rest,
        _ => args,
    };
    if args.iter().any(|a| a.contains(COMPUTED_WORD)) {
        return true;
    }
    !matches!(args.first().map(String::as_str), None | Some("-l" | "-p" | "-" | ""))
}

/// Builtins that take variable names, where a subscript (`a[$(cmd)]`) is evaluated as
/// arithmetic and so runs the command substitution in it.
pub(crate) const NAME_BUILTINS: &[&str] = &[
    "read", "printf", "unset", "declare", "typeset", "local", "export", "readonly", "[[", "shift",
    "exit", "return", "wait",
];

/// A word the shell computes, standing where an argument was (never a real argv word: an
/// argv cannot hold NUL).
pub(crate) const COMPUTED_WORD: &str = "\u{0}";

/// A computed word the shell keeps as exactly one word (its expansions are all inside double
/// quotes: no splitting, no globbing). It holds [`COMPUTED_WORD`], so whatever treats a computed
/// word as unknown still does.
pub(crate) const COMPUTED_ONE_WORD: &str = "\u{0}\"";

/// A computed word that is always a number (`"$?"`, `"$#"`, `"${#a[@]}"`): one word whose
/// value no command can choose. It holds [`COMPUTED_WORD`] too.
pub(crate) const COMPUTED_NUMBER: &str = "\u{0}#";

/// Variables that make a program load code from a file named in them.
const CODE_VARIABLES: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    "PS4",
    "SHELLOPTS",
    "BASHOPTS",
    "LD_PRELOAD",
    "LD_AUDIT",
    "LD_LIBRARY_PATH",
    "GIT_EXEC_PATH",
    "GIT_CONFIG",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "NODE_OPTIONS",
    "PERL5OPT",
    "RUBYOPT",
    // make reads options (`--eval`) and makefiles from these.
    "MAKEFLAGS",
    "GNUMAKEFLAGS",
    "MFLAGS",
    "MAKEFILES",
    // Allow git transports that run commands (`ext::`).
    "GIT_ALLOW_PROTOCOL",
    "GIT_PROTOCOL_FROM_USER",
];

/// Variables that name a program another program runs (git's ssh, pager, editor, external
/// diff, askpass and proxy; `less`'s input preprocessor; `man`'s pager; the compiler wrappers)
/// or options that do (`TAR_OPTIONS=--to-command=…`): the words of their values never reach
/// the rules as a command.
const PROGRAM_VARIABLES: &[&str] = &[
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_PAGER",
    "PAGER",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "EDITOR",
    "VISUAL",
    "GIT_EXTERNAL_DIFF",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_PROXY_COMMAND",
    "GIT_TEMPLATE_DIR",
    "LESSOPEN",
    "LESSCLOSE",
    "LESS",
    "LESSKEYIN",
    "MANPAGER",
    "MANOPT",
    "TAR_OPTIONS",
    "RSYNC_RSH",
    "RSYNC_CONNECT_PROG",
    "RUSTC",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTDOC",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "GCONV_PATH",
    "PERL5LIB",
    "PERL5DB",
    "RUBYLIB",
    "PYTHONHOME",
    "BROWSER",
    "SHELL",
];

/// Whether assigning `name` makes a later program load code from a file or run a program the
/// value names.
pub(crate) fn is_code_variable(name: &str) -> bool {
    CODE_VARIABLES.contains(&name)
        || PROGRAM_VARIABLES.contains(&name)
        || name.starts_with("GIT_CONFIG_")
        || name.starts_with("BASH_FUNC_")
        || name.starts_with("LD_")
        || ["_COMMAND", "_EDITOR", "_PAGER", "_ASKPASS", "_WRAPPER", "_RUNNER"]
            .iter()
            .any(|suffix| name.ends_with(suffix))
}

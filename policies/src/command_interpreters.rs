//! Programs that run a shell command or code given on their command line or read from their
//! standard input, beyond the interpreters' `-c`/`-e` options and the options listed with
//! them: node's `data:` imports, sqlite3's and psql's meta-commands, ed's and ex's `!`, vim's
//! `+CMD`, tclsh fed a script on standard input, wget's askpass program, less's key file.

/// Whether `program` (a file name, version suffix trimmed) given `args` runs code that is not
/// in a file the command line names.
pub(crate) fn runs_given_code(stem: &str, args: &[String]) -> bool {
    let value_of = |index: usize, option: &str| -> Option<String> {
        let arg = args.get(index)?;
        match arg.strip_prefix(option) {
            Some("") => args.get(index + 1).cloned(),
            Some(rest) if option.starts_with("--") => rest.strip_prefix('=').map(str::to_owned),
            Some(rest) => Some(rest.to_owned()),
            None => None,
        }
    };
    match stem {
        // `node --import data:text/javascript,…`: a module given inline.
        "node" | "nodejs" | "bun" | "deno" => (0..args.len()).any(|index| {
            ["--import", "--require", "-r", "--loader", "--experimental-loader"]
                .iter()
                .filter_map(|option| value_of(index, option))
                // Node takes the scheme in any case and after blanks.
                .any(|value| value.trim_start().to_ascii_lowercase().starts_with("data:"))
        }),
        // Dot-commands (`.shell`, `.system`, `.once |cmd`, `.read '|cmd'`) given as arguments,
        // with `-cmd`, from `-init`, or read from standard input (no SQL argument).
        "sqlite3" | "sqlite" => {
            let operands: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
            args.iter().any(|a| a.trim_start().starts_with('.') || a == "-cmd" || a == "-init")
                || operands.len() < 2
        }
        // Meta-commands (`\!`, `\o |cmd`) and `COPY … PROGRAM`, in `-c`, in a file or on
        // standard input.
        "psql" => {
            let given = |a: &String| a.contains('\\') || a.to_ascii_lowercase().contains("program");
            let has_command = args.iter().any(|a| a == "-c" || a.starts_with("--command"));
            args.iter().any(|a| a == "-f" || a.starts_with("--file"))
                || !has_command
                || args.iter().any(given)
        }
        // Editors whose commands (`!cmd` among them) come from standard input.
        "ed" | "ex" => true,
        // `vim +CMD`: an Ex command, `+!cmd` runs a shell command.
        "vim" | "vi" | "nvim" | "view" | "vimdiff" | "gvim" => {
            args.iter().any(|a| a.starts_with('+'))
        }
        // No script operand: the script comes from standard input.
        "tclsh" | "wish" | "expect" => args.iter().all(|a| a.starts_with('-')),
        "wget" => args.iter().any(|a| {
            ["--use-askpass", "--execute", "--config"].iter().any(|o| a.starts_with(o))
                || (a.starts_with('-') && !a.starts_with("--") && a.contains('e'))
        }),
        "less" => args.iter().any(|a| a.starts_with("-k") || a.starts_with("--lesskey")),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn code_given_on_the_command_line_or_standard_input_is_found() {
        for (program, args) in [
            ("node", &["--import", "data:text/javascript,x", "a.js"][..]),
            ("node", &["--import=data:text/javascript,x"]),
            ("node", &["--experimental-loader", "data:text/javascript,x", "a.js"]),
            ("sqlite3", &[":memory:", ".shell rm x"]),
            ("sqlite3", &["-cmd", ".system rm x", "db", "select 1"]),
            ("sqlite3", &["db"]),
            ("psql", &["-c", "\\! rm x"]),
            ("psql", &["-c", "COPY t FROM PROGRAM 'rm x'"]),
            ("psql", &["db"]),
            ("ed", &["-s", "f"]),
            ("vim", &["+!rm x"]),
            ("vi", &["+:!rm x", "f"]),
            ("tclsh", &[]),
            ("wget", &["--use-askpass=rm x", "http://h/"]),
            ("less", &["-k", "keys", "f"]),
        ] {
            assert!(runs_given_code(program, &words(args)), "{program} {args:?}");
        }
        for (program, args) in [
            ("node", &["--import", "./setup.mjs", "a.js"][..]),
            ("sqlite3", &["db", "select 1"]),
            ("psql", &["-c", "select 1"]),
            ("vim", &["f"]),
            ("tclsh", &["x.tcl"]),
            ("wget", &["-q", "http://h/"]),
        ] {
            assert!(!runs_given_code(program, &words(args)), "{program} {args:?}");
        }
    }
}

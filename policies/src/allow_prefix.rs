//! The prefix an "always allow" answer records: a program and its subcommand (`cargo test`,
//! `git commit`), and only where a prefix of that shape says what it allows.

use crate::git_reading::is_git_command;
use crate::normalize::runs_arbitrary_code;

/// Programs whose first operand is a subcommand. Any other program's first operand is a file,
/// a pattern or a value (`touch f`, `grep x`), and a rule for the program alone would allow
/// every use of it, so no prefix is offered for them.
const WITH_SUBCOMMANDS: &[&str] = &[
    "apt",
    "apt-get",
    "aws",
    "az",
    "brew",
    "bun",
    "bundle",
    "cabal",
    "cargo",
    "cmake",
    "composer",
    "conda",
    "dart",
    "deno",
    "docker",
    "dotnet",
    "flutter",
    "gcloud",
    "gh",
    "git",
    "glab",
    "go",
    "gradle",
    "helm",
    "just",
    "kubectl",
    "mix",
    "mvn",
    "nix",
    "npm",
    "pip",
    "pip3",
    "pipenv",
    "pnpm",
    "podman",
    "poetry",
    "rails",
    "rake",
    "rustup",
    "stack",
    "swift",
    "systemctl",
    "task",
    "terraform",
    "tofu",
    "uv",
    "yarn",
    "zig",
];

/// The prefix "always allow" would record for `command`: its program word and subcommand.
/// `None` when the program takes no subcommand, the second word is not one (a flag, a path, a
/// value), or the program runs arbitrary code (a shell, a wrapper, an interpreter) — and for
/// a git subcommand git does not ship (an alias or a program on `PATH`).
pub fn always_allow_prefix(command: &[String]) -> Option<Vec<String>> {
    let [first, second, ..] = command else { return None };
    let name = first.rsplit('/').next().unwrap_or(first);
    if runs_arbitrary_code(first) || !WITH_SUBCOMMANDS.contains(&name) {
        return None;
    }
    let subcommand = second.starts_with(|c: char| c.is_ascii_lowercase())
        && second.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !subcommand || (name == "git" && !is_git_command(second)) {
        return None;
    }
    Some(vec![first.clone(), second.clone()])
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn a_prefix_is_a_program_and_its_subcommand() {
        assert_eq!(always_allow_prefix(&words("cargo test --release")), Some(words("cargo test")));
        assert_eq!(always_allow_prefix(&words("git commit -m x")), Some(words("git commit")));
        assert_eq!(always_allow_prefix(&words("npm run build")), Some(words("npm run")));
    }

    #[test]
    fn no_prefix_without_a_subcommand_or_for_code_runners_and_git_aliases() {
        for command in [
            "touch f",
            "rm -rf /",
            "cat ./x.txt",
            "git --version",
            "git",
            "git co main",
            "git -c alias.x=push x",
            "cargo +nightly test",
            "sh -c x",
            "bash -lc cargo",
            "env FOO=1 rm",
            "xargs rm",
            "sudo rm",
            "python3 -c x",
            "nice cargo test",
            "make test",
        ] {
            assert_eq!(always_allow_prefix(&words(command)), None, "{command}");
        }
    }
}

//! Whether git tracks a file, asked of git itself: a change to a tracked file shows in the
//! user's `git status` and `git diff`, so it is the user's to review; an untracked one may not.

use std::path::{Path, PathBuf};

/// The `git` a check runs: the first on `PATH` in an absolute directory outside every path of
/// `writable` (so never one a sandboxed command could have put there); `/usr/bin/git` when
/// `PATH` has none.
pub(crate) fn trusted_git(writable: &[PathBuf]) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute() && !writable.iter().any(|root| dir.starts_with(root)))
        .map(|dir| dir.join("git"))
        .find(|git| git.is_file())
        .unwrap_or_else(|| PathBuf::from("/usr/bin/git"))
}

/// Whether `git` tracks `file` and shows its changes (not `skip-worktree`, not
/// `assume-unchanged`), in the repository that holds it, reading `index` instead of the
/// repository's own when given. Git runs with no configuration but the repository's own and
/// with its file-system monitor off, so the question runs nothing a config names.
pub(crate) fn shows_changes(git: &Path, file: &Path, index: Option<&Path>) -> bool {
    let (Some(dir), Some(name)) = (file.parent(), file.file_name()) else { return false };
    let mut command = std::process::Command::new(git);
    command
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .args(["-c", "core.fsmonitor=false", "ls-files", "-v", "--error-unmatch", "--"])
        .arg(name)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if let Some(index) = index {
        command.env("GIT_INDEX_FILE", index);
    }
    // `H path`: tracked and shown; `S` is skip-worktree, a small letter assume-unchanged.
    command
        .output()
        .ok()
        .filter(|out| out.status.success())
        .is_some_and(|out| out.stdout.starts_with(b"H "))
}

//! Where git keeps what it runs code from, for the mount view's protected paths.
//!
//! Git executes what its configs say (`core.fsmonitor`, `core.hooksPath`, filter and diff
//! drivers, …) and its hooks. Besides a root's own `.git/config` and `.git/hooks` (the
//! protected-path list), a checkout may be a linked worktree or a submodule whose `.git` is a
//! pointer file naming the real git dir, and `git status` in a superproject runs git inside
//! every submodule checkout, reading the config its pointer file names. These functions find
//! those places as they are when the sandbox starts (before the command can change them).
//! Everything here only reads, and gives up quietly on what it cannot read: a missing answer
//! means fewer protected paths, never an error.

use std::path::{Path, PathBuf};

/// How deep and how many submodule git dirs are looked at (nested submodules, names with `/`).
const MAX_DEPTH: usize = 8;
const MAX_GIT_DIRS: usize = 256;

/// Where the git metadata of a writable root lives: `root/.git` when it is a directory, or the
/// directory a `.git` pointer file names (worktrees, submodules), plus its `commondir`.
pub fn git_dirs(root: &Path) -> Vec<PathBuf> {
    let dot_git = root.join(".git");
    let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
        return Vec::new();
    };
    if meta.is_dir() {
        return vec![dot_git];
    }
    let Some(git_dir) = pointer_target(&dot_git) else {
        return Vec::new();
    };
    let mut dirs = vec![git_dir.clone()];
    if let Ok(common) = std::fs::read_to_string(git_dir.join("commondir")) {
        dirs.push(git_dir.join(common.trim()));
    }
    dirs
}

/// The git dir a `.git` pointer file (`gitdir: PATH`) names, relative to the file's directory.
fn pointer_target(pointer: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(pointer).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    Some(pointer.parent()?.join(target))
}

/// The `.git` pointer files of the submodule checkouts whose git dirs live under
/// `git_dir/modules` (nested ones too): each git dir's `core.worktree` names its checkout.
pub fn submodule_pointer_files(git_dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut budget = MAX_GIT_DIRS;
    walk_modules(&git_dir.join("modules"), 0, &mut budget, &mut found);
    found
}

fn walk_modules(dir: &Path, depth: usize, budget: &mut usize, found: &mut Vec<PathBuf>) {
    if depth > MAX_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        if *budget == 0 {
            return;
        }
        let path = entry.path();
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        if path.join("config").is_file() {
            *budget -= 1;
            if let Some(checkout) = core_worktree(&path) {
                let pointer = checkout.join(".git");
                if std::fs::symlink_metadata(&pointer).is_ok_and(|m| m.is_file()) {
                    found.push(pointer);
                }
            }
            walk_modules(&path.join("modules"), depth + 1, budget, found);
        } else {
            // A submodule name with `/` in it: an intermediate directory.
            walk_modules(&path, depth + 1, budget, found);
        }
    }
}

/// `core.worktree` of the git dir at `git_dir`, resolved against it.
fn core_worktree(git_dir: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(git_dir.join("config")).ok()?;
    let mut in_core = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_core = line.eq_ignore_ascii_case("[core]");
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        if in_core && key.trim().eq_ignore_ascii_case("worktree") {
            return Some(git_dir.join(value.trim().trim_matches('"')));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn submodule_checkouts_are_found_through_core_worktree_nested_and_with_slashes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let module = |name: &str, worktree: &str| {
            let git_dir = root.join(".git/modules").join(name);
            std::fs::create_dir_all(&git_dir).unwrap();
            std::fs::write(git_dir.join("config"), format!("[core]\n\tworktree = {worktree}\n"))
                .unwrap();
        };
        module("a", "../../../a");
        module("libs/b", "../../../../libs/b");
        module("a/modules/c", "../../../../../a/c");
        for checkout in ["a", "libs/b", "a/c"] {
            std::fs::create_dir_all(root.join(checkout)).unwrap();
            std::fs::write(root.join(checkout).join(".git"), "gitdir: somewhere\n").unwrap();
        }
        let mut found: Vec<PathBuf> = submodule_pointer_files(&root.join(".git"))
            .into_iter()
            .map(|p| std::fs::canonicalize(p).unwrap())
            .collect();
        found.sort();
        let mut expected: Vec<PathBuf> = ["a/.git", "a/c/.git", "libs/b/.git"]
            .iter()
            .map(|p| std::fs::canonicalize(root.join(p)).unwrap())
            .collect();
        expected.sort();
        assert_eq!(found, expected);
    }

    #[test]
    fn a_pointer_file_names_its_git_dir_relative_to_itself() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".git"), "gitdir: ../main/.git/worktrees/w\n").unwrap();
        assert_eq!(git_dirs(dir.path()), [dir.path().join("../main/.git/worktrees/w")]);
    }
}

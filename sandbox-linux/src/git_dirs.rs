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

use cordon_policies::{StartFileError, file_kind, read_start_file};

/// How deep and how many directories of `modules/` are looked at (nested submodules, names
/// with `/`): every directory counts, so a command cannot slow later starts down with a wide
/// tree of empty ones.
const MAX_DEPTH: usize = 8;
const MAX_GIT_DIRS: usize = 1024;

/// A pointer file or `commondir` names one path: anything larger is not git's.
const MAX_POINTER_BYTES: u64 = 64 * 1024;
/// A git config (the submodule configs read for `core.worktree`, and the size git's own files
/// may have before they count as planted).
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// The files in a `.git` directory that git reads before anything else; one that is a FIFO or a
/// device hangs every git command there (and `/dev/zero` fills its memory).
const GIT_DIR_START_FILES: [&str; 3] = ["HEAD", "config", "commondir"];

/// A git file that is not a small regular file (a FIFO, a device, a link to one, or oversized):
/// neither the helper nor git can use it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnusableGitFile {
    pub path: PathBuf,
    /// Completes a sentence that starts with the path: `is a FIFO, not a regular file`.
    pub why: String,
}

/// What [`git_dirs`] found in a writable root.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GitDirs {
    /// Where the git metadata lives: `root/.git` when it is a directory, or the directory a
    /// `.git` pointer file names (worktrees, submodules), plus its `commondir`.
    pub dirs: Vec<PathBuf>,
    /// Files on the way that could not be used; they are kept read-only, so the command cannot
    /// turn one into a pointer the helper never saw.
    pub unusable: Vec<UnusableGitFile>,
}

/// Finds the git metadata of a writable root (see [`GitDirs`]). Every file is read without
/// blocking and without following a final symlink ([`read_start_file`]).
pub fn git_dirs(root: &Path) -> GitDirs {
    let dot_git = root.join(".git");
    let mut found = GitDirs::default();
    let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
        return found;
    };
    if meta.is_dir() {
        for name in GIT_DIR_START_FILES {
            let path = dot_git.join(name);
            if let Some(why) = unusable_by_git(&path) {
                found.unusable.push(UnusableGitFile { path, why });
            }
        }
        found.dirs.push(dot_git);
        return found;
    }
    let Some(git_dir) = pointer_target(&dot_git, &mut found.unusable) else {
        return found;
    };
    let commondir = git_dir.join("commondir");
    match read_start_file(&commondir, MAX_POINTER_BYTES) {
        Ok(Some(common)) => {
            let common = String::from_utf8_lossy(&common);
            found.dirs.push(git_dir.join(common.trim()));
        }
        Ok(None) => {}
        Err(error) => found.unusable.push(unusable_file(&commondir, &error)),
    }
    found.dirs.insert(0, git_dir);
    found
}

/// The git dir a `.git` pointer file (`gitdir: PATH`) names, relative to the file's directory.
/// A `.git` that is a symbolic link is followed as git follows it: a directory it leads to is
/// the git dir (where it lies, which may be a place the search for repositories skips, such as
/// `node_modules/`), a regular file it leads to is read.
fn pointer_target(pointer: &Path, unusable: &mut Vec<UnusableGitFile>) -> Option<PathBuf> {
    let text = match read_start_file(pointer, MAX_POINTER_BYTES) {
        Ok(text) => text?,
        Err(StartFileError::SymbolicLink) => match std::fs::metadata(pointer) {
            Ok(meta) if meta.is_dir() => return std::fs::canonicalize(pointer).ok(),
            Ok(meta) if meta.is_file() && meta.len() <= MAX_POINTER_BYTES => {
                let target = std::fs::canonicalize(pointer).ok()?;
                read_start_file(&target, MAX_POINTER_BYTES).ok()??
            }
            _ => {
                let why = unusable_by_git(pointer).unwrap_or_else(|| "is unreadable".to_owned());
                unusable.push(UnusableGitFile { path: pointer.to_path_buf(), why });
                return None;
            }
        },
        Err(error) => {
            unusable.push(unusable_file(pointer, &error));
            return None;
        }
    };
    let text = String::from_utf8_lossy(&text);
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    Some(pointer.parent()?.join(target))
}

fn unusable_file(path: &Path, error: &StartFileError) -> UnusableGitFile {
    UnusableGitFile { path: path.to_path_buf(), why: error.to_string() }
}

/// Why git could not use the file at `path` (following links, as git does), without opening
/// it; `None` when it is missing or a small regular file.
fn unusable_by_git(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.is_file() {
        return (meta.len() > MAX_CONFIG_BYTES)
            .then(|| StartFileError::TooLarge { cap: MAX_CONFIG_BYTES }.to_string());
    }
    let link = if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink()) {
        "a symbolic link to "
    } else {
        ""
    };
    Some(format!("is {link}{}, not a regular file", file_kind(&meta.file_type())))
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
        *budget -= 1;
        if path.join("config").is_file() {
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

/// Every `core.hooksPath` the config of the git dir at `git_dir` may make git take (relative
/// ones from `top`, where hooks run; `~/` from `home`): hooks there run like the git dir's own
/// (husky and friends point it into the worktree). Git takes the last; all are given, as an
/// include may be conditional.
pub fn core_hooks_paths(git_dir: &Path, top: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let reading = ConfigReading::of(git_dir, home);
    reading.values("core.hookspath").map(|value| expand(value, top, home)).collect()
}

/// The checkout of the linked worktree whose git dir is `worktree_git_dir`
/// (`.git/worktrees/NAME`), as its `gitdir` file names it: where its hooks run from.
pub fn linked_worktree_top(worktree_git_dir: &Path) -> Option<PathBuf> {
    let text = read_start_file(&worktree_git_dir.join("gitdir"), MAX_POINTER_BYTES).ok()??;
    let text = String::from_utf8(text).ok()?;
    let pointer = worktree_git_dir.join(text.trim_end_matches(['\n', '\r']));
    pointer.parent().map(cordon_policies::lexically_normal)
}

/// Where hooks run from for the git dir `git_dir`: the checkout a `.git` directory lies in, or
/// a linked worktree's checkout.
pub fn hooks_top(git_dir: &Path) -> Option<PathBuf> {
    if git_dir.file_name().is_some_and(|name| name == ".git") {
        return git_dir.parent().map(Path::to_path_buf);
    }
    linked_worktree_top(git_dir)
}

/// The files the config of the git dir at `git_dir` includes (`include.path` and every
/// `includeIf.*.path`, whatever the condition, followed as git follows them), whether or not
/// they exist: git reads each as part of the repository's configuration.
pub fn config_includes(git_dir: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    ConfigReading::of(git_dir, home).includes
}

/// `core.worktree` of the git dir at `git_dir` (the last, as git takes it), resolved against it.
fn core_worktree(git_dir: &Path) -> Option<PathBuf> {
    let reading = ConfigReading::of(git_dir, None);
    reading.values("core.worktree").last().map(|value| git_dir.join(value))
}

/// How deep includes are followed (git's own limit).
const MAX_INCLUDE_DEPTH: usize = 10;

/// A git dir's configuration read as git reads it (`cordon_policies::git_config_entries`),
/// its includes followed.
#[derive(Debug, Default)]
struct ConfigReading {
    entries: Vec<cordon_policies::GitConfigEntry>,
    includes: Vec<PathBuf>,
}

impl ConfigReading {
    /// The configuration git reads in `git_dir`: for a linked worktree's git dir, the common
    /// one's config (its `commondir`) and then its own `config.worktree`.
    fn of(git_dir: &Path, home: Option<&Path>) -> Self {
        let mut reading = ConfigReading::default();
        // A FIFO or a huge file there is not read (git would hang on it; nothing to follow).
        let common = read_start_file(&git_dir.join("commondir"), MAX_POINTER_BYTES)
            .ok()
            .flatten()
            .and_then(|text| String::from_utf8(text).ok())
            .map(|text| git_dir.join(text.trim_end_matches(['\n', '\r'])));
        match common {
            Some(common) => reading.read(&common.join("config"), home, 0),
            None => reading.read(&git_dir.join("config"), home, 0),
        }
        reading.read(&git_dir.join("config.worktree"), home, 0);
        reading
    }

    fn read(&mut self, file: &Path, home: Option<&Path>, depth: usize) {
        // Unreadable (a FIFO, oversized, refused by git): git reads nothing of it either, or
        // fails; `.git/modules`, where submodule configs live, is read-only as a whole.
        let Ok(Some(text)) = read_start_file(file, MAX_CONFIG_BYTES) else { return };
        let text = String::from_utf8_lossy(&text);
        let Some(entries) = cordon_policies::git_config_entries(&text, false) else { return };
        let dir = file.parent().unwrap_or(Path::new("/"));
        for (key, value) in entries {
            let include =
                key == "include.path" || (key.starts_with("includeif.") && key.ends_with(".path"));
            if let (true, Some(value)) = (include, &value) {
                let target = expand(value, dir, home);
                if !self.includes.contains(&target) {
                    self.includes.push(target.clone());
                    if depth < MAX_INCLUDE_DEPTH {
                        self.read(&target, home, depth + 1);
                    }
                }
                continue;
            }
            self.entries.push((key, value));
        }
    }

    /// The values of `key` (lower-case section and name), in git's reading order.
    fn values<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.entries
            .iter()
            .filter(move |(name, _)| name == key)
            .filter_map(|(_, value)| value.as_deref())
    }
}

/// A path as git takes it from a config: `~/` from `home`, relative from `dir`; `..` taken
/// by its text (so that where it lies is judged by where it leads).
fn expand(value: &str, dir: &Path, home: Option<&Path>) -> PathBuf {
    let path = match (value.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => dir.join(value),
    };
    cordon_policies::lexically_normal(&path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn hooks_paths_and_includes_are_read_as_git_reads_them() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path();
        let git_dir = top.join(".git");
        std::fs::create_dir_all(&git_dir).unwrap();
        std::fs::create_dir_all(top.join("tools")).unwrap();
        // The key on the header's line, a repeated key (git takes the last), an include and a
        // conditional one, both followed.
        std::fs::write(
            git_dir.join("config"),
            "[core] hooksPath = first\n[core]\n\thooksPath = \"second\"\n\
             [include]\n\tpath = ../tools/gitconfig\n\
             [includeIf \"gitdir:/nowhere/\"]\n\tpath = ../tools/never\n",
        )
        .unwrap();
        std::fs::write(top.join("tools/gitconfig"), "[core]hooksPath=.husky\n").unwrap();
        assert_eq!(
            core_hooks_paths(&git_dir, top, None),
            vec![top.join("first"), top.join("second"), top.join(".husky")]
        );
        assert_eq!(
            config_includes(&git_dir, None),
            vec![top.join("tools/gitconfig"), top.join("tools/never")]
        );
    }

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
        assert_eq!(git_dirs(dir.path()).dirs, [dir.path().join("../main/.git/worktrees/w")]);
    }

    fn mkfifo(path: &Path) {
        nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    }

    #[test]
    fn a_fifo_a_link_to_a_device_and_an_oversized_pointer_are_unusable_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let dot_git = dir.path().join(".git");
        mkfifo(&dot_git);
        let found = git_dirs(dir.path());
        assert_eq!(found.dirs, Vec::<PathBuf>::new());
        assert_eq!(
            found.unusable,
            [UnusableGitFile {
                path: dot_git.clone(),
                why: "is a FIFO, not a regular file".into()
            }]
        );

        std::fs::remove_file(&dot_git).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &dot_git).unwrap();
        let why = &git_dirs(dir.path()).unusable[0].why;
        assert_eq!(why, "is a symbolic link to a device, not a regular file");

        std::fs::remove_file(&dot_git).unwrap();
        std::fs::File::create(&dot_git).unwrap().set_len(MAX_POINTER_BYTES + 1).unwrap();
        let why = &git_dirs(dir.path()).unusable[0].why;
        assert_eq!(why, &format!("is more than the {MAX_POINTER_BYTES} bytes cordon reads"));
    }

    #[test]
    fn fifos_in_a_git_directory_and_a_fifo_commondir_are_unusable() {
        let dir = tempfile::tempdir().unwrap();
        let dot_git = dir.path().join(".git");
        std::fs::create_dir(&dot_git).unwrap();
        for name in ["HEAD", "config", "commondir"] {
            mkfifo(&dot_git.join(name));
        }
        let found = git_dirs(dir.path());
        assert_eq!(found.dirs, std::slice::from_ref(&dot_git));
        let paths: Vec<PathBuf> = found.unusable.iter().map(|u| u.path.clone()).collect();
        assert_eq!(
            paths,
            [dot_git.join("HEAD"), dot_git.join("config"), dot_git.join("commondir")]
        );

        let other = tempfile::tempdir().unwrap();
        let worktree = other.path().join("wt");
        std::fs::create_dir(&worktree).unwrap();
        std::fs::write(worktree.join(".git"), "gitdir: ../w\n").unwrap();
        let git_dir = worktree.join("../w");
        std::fs::create_dir_all(&git_dir).unwrap();
        mkfifo(&git_dir.join("commondir"));
        let found = git_dirs(&worktree);
        assert_eq!(found.dirs, std::slice::from_ref(&git_dir));
        assert_eq!(found.unusable[0].path, git_dir.join("commondir"));
    }
}

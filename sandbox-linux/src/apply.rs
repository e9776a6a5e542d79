//! Applying a run's write layers to the writable roots, through the write gate: the one way a
//! change a sandboxed command made to a layered root reaches it.
//!
//! The input is exactly the set of changes: each layer's upper directory (`crate::write_layer`),
//! read after the command's last process is gone and its overlay with it. Each change is judged
//! (`cordon_policies::git_dir_entry` and the rest of the gate) and either applied or held back:
//!
//! - a new file, link or tree is renamed into place (one `rename` for a whole new tree, after
//!   every entry in it was judged and what is held moved out); a modified file replaces the
//!   old one by rename; a whiteout deletes; an opaque directory replaces the old one;
//! - on the roots' side every step works from directory descriptors opened with `O_NOFOLLOW`
//!   from the root down, never from a path a link could redirect;
//! - setuid and setgid bits and the overlay's own `user.overlay.*` attributes are dropped;
//! - what is held back is moved to `DIR/held/I/PATH`, where the user can look at it and take
//!   it in by hand;
//! - a file the host changed during the run (its change time is not older than the run's
//!   start) is a conflict: the host's version stays, the command's is held.
//!
//! The upper directory is its own journal: an applied change is gone from it, so an apply that
//! was stopped half-way (a killed cordon) is finished by running it again, and nothing is
//! applied twice.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use cordon_policies::{GitDirEntry, Held};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// The largest configuration, plan or pointer file the gate reads; a larger one is held.
const READ_CAP: u64 = 1024 * 1024;

/// What the gate needs to know besides the changes.
#[derive(Debug, Clone, Default)]
pub struct ApplyContext {
    /// The user's home directory: its start-up files are held, and the git configuration
    /// there is where the global include graph starts.
    pub home: Option<PathBuf>,
    /// One-component names the policy protects at the top of each root (`.envrc`, `.vscode`,
    /// …): held when the command makes them.
    pub protected_names: Vec<OsString>,
    /// When the run started (seconds, nanoseconds), by the clock file times use: a file whose
    /// change time is not older was changed outside the sandbox during the run.
    pub started: (i64, i64),
    /// The writable roots the command wrote directly (`/tmp`, `$TMPDIR`; canonical): a link
    /// or pointer that leads there leads to what the gate never saw.
    pub direct_roots: Vec<PathBuf>,
}

/// A change that was not applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldChange {
    /// Where it would have gone.
    pub path: PathBuf,
    pub why: Held,
    /// Where it is kept.
    pub kept_at: PathBuf,
}

/// What an apply did.
#[derive(Debug, Default)]
pub struct ApplyReport {
    /// How many changes reached the roots.
    pub applied: usize,
    pub held: Vec<HeldChange>,
    /// Changes that could be neither applied nor held (they stay in the upper directory).
    pub failed: Vec<(PathBuf, std::io::Error)>,
}

/// Applies every layer in `dir` (the `--writes-to` directory of a run whose command is gone).
pub fn apply_layers(dir: &Path, context: &ApplyContext) -> ApplyReport {
    let mut report = ApplyReport::default();
    let global_includes = global_include_targets(context.home.as_deref());
    let mut indexes: Vec<u32> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .collect();
    indexes.sort_unstable();
    let layered: Vec<PathBuf> = indexes
        .iter()
        .filter_map(|index| std::fs::read_link(dir.join(index.to_string()).join("root")).ok())
        .collect();
    for index in indexes {
        let base = dir.join(index.to_string());
        let Ok(root) = std::fs::read_link(base.join("root")) else { continue };
        let upper = base.join("upper");
        if !upper.is_dir() {
            continue;
        }
        // The layer was mounted `volatile`: its writes reach the disk here, once, before any of
        // them is renamed into the root.
        if let Ok(fd) = open_dir_at(rustix::fs::CWD, &upper) {
            let _ = rustix::fs::syncfs(&fd);
        }
        let root_fd = match open_dir_at(rustix::fs::CWD, &root) {
            Ok(fd) => fd,
            Err(error) => {
                report.failed.push((root.clone(), error.into()));
                continue;
            }
        };
        let mut layer = Layer {
            context,
            root: &root,
            root_fd: &root_fd,
            upper: &upper,
            held_dir: dir.join("held").join(index.to_string()),
            deferred_dir: dir.join("deferred").join(index.to_string()),
            deferred: Vec::new(),
            layered: &layered,
            includes: global_includes.clone(),
            report: &mut report,
        };
        layer.apply_dir(Path::new(""), None);
        layer.apply_deferred();
        // The work directory holds the overlay's leftovers (whiteout caches) and nothing of
        // the command's; the kernel makes its inner directory with no permissions at all.
        remove_work_dir(&base.join("work"));
    }
    report
}

/// Where in a git directory an entry is: the git directory (relative to the root) and the
/// components below it.
#[derive(Debug, Clone)]
struct InGit {
    git_dir: PathBuf,
    inner: Vec<String>,
}

struct Layer<'a> {
    context: &'a ApplyContext,
    root: &'a Path,
    root_fd: &'a OwnedFd,
    upper: &'a Path,
    held_dir: PathBuf,
    /// Where deferred changes wait (`GitVerdict::Defer`), and which they are.
    deferred_dir: PathBuf,
    deferred: Vec<PathBuf>,
    /// Every layered root of the run.
    layered: &'a [PathBuf],
    /// Files a git configuration includes (absolute), judged as configurations.
    includes: Vec<PathBuf>,
    report: &'a mut ApplyReport,
}

impl Layer<'_> {
    /// Applies the upper directory's `rel` (a directory the roots have too: merged).
    fn apply_dir(&mut self, rel: &Path, git: Option<&InGit>) {
        let Ok(entries) = std::fs::read_dir(self.upper.join(rel)) else { return };
        let mut names: Vec<OsString> =
            entries.filter_map(Result::ok).map(|entry| entry.file_name()).collect();
        names.sort();
        for name in names {
            let path = rel.join(&name);
            self.apply_entry(&path, &name, git);
        }
        // The directory's own mode, when the command changed it (never set-id bits).
        if !rel.as_os_str().is_empty() {
            if let (Ok(upper_meta), Ok(Some(parent))) =
                (std::fs::symlink_metadata(self.upper.join(rel)), self.real_parent(rel))
            {
                let name = rel.file_name().unwrap_or_default();
                if let Ok(real) = rustix::fs::statat(&parent, name, AtFlags::SYMLINK_NOFOLLOW) {
                    let wanted = upper_meta.mode() & 0o1777;
                    if real.st_mode & 0o7777 != wanted {
                        if let Ok(fd) = open_dir_at(&parent, name) {
                            let _ = rustix::fs::fchmod(&fd, Mode::from_raw_mode(wanted));
                        }
                    }
                }
            }
            let _ = std::fs::remove_dir(self.upper.join(rel));
        }
    }

    fn apply_entry(&mut self, rel: &Path, name: &OsStr, git: Option<&InGit>) {
        let upper_path = self.upper.join(rel);
        let Ok(meta) = std::fs::symlink_metadata(&upper_path) else { return };
        let kind = meta.file_type();
        let parent = match self.real_parent(rel) {
            Ok(Some(parent)) => parent,
            // The directory it goes in is gone from the host: the host removed it during the run.
            Ok(None) => return self.hold(rel, Held::Conflict),
            Err(error) => return self.fail(rel, error),
        };
        let real = rustix::fs::statat(&parent, name, AtFlags::SYMLINK_NOFOLLOW).ok();
        if kind.is_char_device() && meta.rdev() == 0 {
            // A whiteout: the command deleted what the root has here.
            let Some(real) = real else {
                let _ = std::fs::remove_file(&upper_path);
                return;
            };
            if self.changed_during_run(&real) {
                return self.hold(rel, Held::Conflict);
            }
            match remove_at(&parent, name) {
                Ok(()) => {
                    self.report.applied += 1;
                    let _ = std::fs::remove_file(&upper_path);
                }
                Err(error) => self.fail(rel, error.into()),
            }
            return;
        }
        let git_here = self.git_place(rel, name, kind, git);
        if kind.is_dir() {
            let opaque = is_opaque(&upper_path);
            let real_is_dir =
                real.as_ref().is_some_and(|st| FileType::from_raw_mode(st.st_mode).is_dir());
            if real_is_dir && !opaque {
                if let Some(GitVerdict::Hold(why)) = &git_here.verdict {
                    return self.hold(rel, why.clone());
                }
                return self.apply_dir(rel, git_here.inside.as_ref());
            }
            // A new tree, or one that replaces what the root had: judged entry by entry, what
            // is held moved out, then put in place whole.
            if let Some(GitVerdict::Hold(why)) = &git_here.verdict {
                return self.hold(rel, why.clone());
            }
            if let Some(why) = self.top_level_hold(rel, name, kind) {
                return self.hold(rel, why);
            }
            self.judge_tree(rel, git_here.inside.as_ref());
            return self.put_in_place(rel, name, &parent, real.as_ref());
        }
        let verdict = match git_here.verdict {
            Some(verdict) => verdict,
            None => self.judge_outside_git(rel, name, &meta, real.as_ref()),
        };
        match verdict {
            GitVerdict::Hold(why) => return self.hold(rel, why),
            GitVerdict::Defer => return self.defer(rel),
            GitVerdict::Pass => {}
        }
        if real.as_ref().is_some_and(|real| self.changed_during_run(real)) {
            return self.hold(rel, Held::Conflict);
        }
        self.put_in_place(rel, name, &parent, real.as_ref());
    }

    /// What the gate says of `rel` by its place in a git directory, and the place below it
    /// when it is a directory.
    fn git_place(
        &mut self,
        rel: &Path,
        name: &OsStr,
        kind: std::fs::FileType,
        git: Option<&InGit>,
    ) -> GitPlace {
        let is_dir = kind.is_dir();
        let name_text = name.to_string_lossy().into_owned();
        let starts_git_dir = is_dir && (name == ".git" || self.looks_like_git_dir(rel));
        let inside = match git {
            Some(git) => {
                let mut inner = git.inner.clone();
                inner.push(name_text);
                let parts: Vec<&str> = inner.iter().map(String::as_str).collect();
                let entry = cordon_policies::git_dir_entry(&parts);
                if entry == GitDirEntry::Modules && is_dir && starts_git_dir {
                    // A submodule's git directory: its own rules from its top.
                    return GitPlace {
                        verdict: Some(GitVerdict::Pass),
                        inside: Some(InGit { git_dir: rel.to_path_buf(), inner: Vec::new() }),
                    };
                }
                let verdict = match entry {
                    // git makes no links in its directories: one there leads its next read
                    // (of a worktree's state, of objects, of a config) to where the gate never
                    // looked.
                    _ if kind.is_symlink() => GitVerdict::Hold(Held::GitDirectory),
                    GitDirEntry::Ordinary => GitVerdict::Pass,
                    GitDirEntry::Modules if is_dir => GitVerdict::Pass,
                    GitDirEntry::Modules | GitDirEntry::Other => {
                        GitVerdict::Hold(Held::GitDirectory)
                    }
                    GitDirEntry::Config | GitDirEntry::Todo | GitDirEntry::CommonDir if is_dir => {
                        GitVerdict::Hold(Held::GitDirectory)
                    }
                    GitDirEntry::Config => {
                        let git_dir = self.root.join(&git.git_dir);
                        let root = self.root.to_path_buf();
                        self.judge_text(rel, name, |before, after| {
                            cordon_policies::repository_config_change_held(
                                before, after, &git_dir, &root,
                            )
                            .then_some(Held::GitConfig)
                        })
                    }
                    GitDirEntry::Todo => self.judge_text(rel, name, |before, after| {
                        cordon_policies::todo_change_held(before, after).then_some(Held::GitTodo)
                    }),
                    GitDirEntry::CommonDir => {
                        let worktree_dir = self.root.join(rel.parent().unwrap_or(rel));
                        let git_dir = self.root.join(&git.git_dir);
                        self.judge_text(rel, name, |_, after| {
                            (!cordon_policies::commondir_leads_back(after, &worktree_dir, &git_dir))
                                .then_some(Held::GitPointer)
                        })
                    }
                };
                return GitPlace {
                    verdict: Some(verdict),
                    inside: Some(InGit { git_dir: git.git_dir.clone(), inner }),
                };
            }
            None if starts_git_dir => Some(InGit { git_dir: rel.to_path_buf(), inner: Vec::new() }),
            None => None,
        };
        GitPlace { verdict: None, inside }
    }

    /// Whether the directory `rel` is a git directory once the run's changes are in: it holds
    /// `HEAD` and any of `objects`, `refs` or `commondir` (git takes the last two from where a
    /// `commondir` leads), in the upper directory or the root: a directory that is almost a git
    /// directory is judged as one.
    fn looks_like_git_dir(&self, rel: &Path) -> bool {
        let here = |name: &str| {
            std::fs::symlink_metadata(self.upper.join(rel).join(name)).is_ok()
                || std::fs::symlink_metadata(self.root.join(rel).join(name)).is_ok()
        };
        here("HEAD") && ["objects", "refs", "commondir"].iter().any(|name| here(name))
    }

    /// The gate's verdict on a file outside every git directory.
    fn judge_outside_git(
        &mut self,
        rel: &Path,
        name: &OsStr,
        meta: &std::fs::Metadata,
        real: Option<&rustix::fs::Stat>,
    ) -> GitVerdict {
        let kind = meta.file_type();
        if kind.is_fifo() || kind.is_socket() || kind.is_block_device() || kind.is_char_device() {
            return GitVerdict::Hold(Held::Special);
        }
        if let Some(why) = self.top_level_hold(rel, name, kind) {
            return GitVerdict::Hold(why);
        }
        if name == ".git" {
            // A pointer file: it must lead to a git directory inside this root, by a way no
            // link redirects; where it leads is known once the rest is in place.
            if !kind.is_file() {
                return GitVerdict::Hold(Held::GitPointer);
            }
            let dir = self.root.join(rel.parent().unwrap_or(Path::new("")));
            let root = self.root.to_path_buf();
            return match self.judge_text(rel, name, |_, after| {
                (!cordon_policies::pointer_stays_inside(after, &dir, &root))
                    .then_some(Held::GitPointer)
            }) {
                GitVerdict::Pass => GitVerdict::Defer,
                other => other,
            };
        }
        if kind.is_symlink() && self.leads_where_writes_are_direct(rel) {
            return GitVerdict::Hold(Held::LeadsOut);
        }
        if let Some(tool) = cordon_policies::tool_loading(rel) {
            let tracked = real.is_some() && kind.is_file() && self.tracked(rel);
            if !tracked {
                return GitVerdict::Hold(Held::ToolConfig { tool });
            }
        }
        let absolute = self.root.join(rel);
        if self.includes.contains(&absolute) || self.included_by_a_repository(rel) {
            if !kind.is_file() {
                return GitVerdict::Hold(Held::GitConfig);
            }
            return self.judge_text(rel, name, |before, after| {
                cordon_policies::config_change_held(before, after).then_some(Held::GitConfig)
            });
        }
        GitVerdict::Pass
    }

    /// Whether the link at `rel` (in the upper directory) leads into a place the command
    /// writes directly (`/tmp`, `$TMPDIR`): what it finds there never passed this gate.
    fn leads_where_writes_are_direct(&self, rel: &Path) -> bool {
        let Ok(target) = std::fs::read_link(self.upper.join(rel)) else { return true };
        let dir = self.root.join(rel.parent().unwrap_or(Path::new("")));
        let joined = if target.is_absolute() { target } else { dir.join(target) };
        let lexical = cordon_policies::lexically_normal(&joined);
        let resolved = std::fs::canonicalize(&lexical).ok();
        std::iter::once(lexical).chain(resolved).any(|place| {
            self.context.direct_roots.iter().any(|direct| place.starts_with(direct))
                && !self.layered.iter().any(|layered| place.starts_with(layered))
        })
    }

    /// Sets the upper directory's `rel` aside until the rest of the layer is applied.
    fn defer(&mut self, rel: &Path) {
        let staged = self.deferred_dir.join(rel);
        let moved = staged
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::rename(self.upper.join(rel), &staged));
        match moved {
            Ok(()) => self.deferred.push(rel.to_path_buf()),
            Err(error) => self.fail(rel, error),
        }
    }

    /// Puts the deferred pointer files in place once the rest of the layer is: each must lead,
    /// as the kernel now resolves it (links and all), into this root and nowhere the command
    /// writes directly.
    fn apply_deferred(&mut self) {
        for rel in std::mem::take(&mut self.deferred) {
            let staged = self.deferred_dir.join(&rel);
            let dir = self.root.join(rel.parent().unwrap_or(Path::new("")));
            let leads_inside = cordon_policies::read_start_file(&staged, READ_CAP)
                .ok()
                .flatten()
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .and_then(|text| {
                    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim().to_owned();
                    std::fs::canonicalize(dir.join(target)).ok()
                })
                .is_some_and(|place| {
                    place.starts_with(self.root)
                        && !self.context.direct_roots.iter().any(|direct| {
                            place.starts_with(direct) && !self.root.starts_with(direct)
                        })
                });
            // Its directory may have gone into the root whole meanwhile.
            let back = self
                .upper
                .join(&rel)
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::rename(&staged, self.upper.join(&rel)));
            if let Err(error) = back {
                self.fail(&rel, error);
                continue;
            }
            if !leads_inside {
                self.hold(&rel, Held::GitPointer);
                continue;
            }
            let name = rel.file_name().unwrap_or_default().to_owned();
            match self.real_parent(&rel) {
                Ok(Some(parent)) => {
                    let real = rustix::fs::statat(&parent, &name, AtFlags::SYMLINK_NOFOLLOW).ok();
                    if real.as_ref().is_some_and(|real| self.changed_during_run(real)) {
                        self.hold(&rel, Held::Conflict);
                    } else {
                        self.put_in_place(&rel, &name, &parent, real.as_ref());
                    }
                }
                Ok(None) => self.hold(&rel, Held::Conflict),
                Err(error) => self.fail(&rel, error),
            }
        }
    }

    /// What is held wherever it is made: a start-up file of the user's, one of the policy's
    /// protected names at the top of the root, a link where a tool's configuration directory
    /// goes (`.cargo` leading elsewhere).
    fn top_level_hold(&self, rel: &Path, name: &OsStr, kind: std::fs::FileType) -> Option<Held> {
        let absolute = self.root.join(rel);
        if let Some(home) = &self.context.home {
            if cordon_policies::home_start_up_paths(home).any(|path| path == absolute) {
                return Some(Held::StartUp);
            }
        }
        let at_top = rel.parent().is_some_and(|parent| parent.as_os_str().is_empty());
        if at_top && self.context.protected_names.iter().any(|protected| protected == name) {
            return Some(Held::StartUp);
        }
        if kind.is_symlink() {
            let leads = cordon_policies::LOADED_FROM_PARENTS.iter().any(|(pattern, _)| {
                pattern.split_once('/').is_some_and(|(first, _)| name == first)
            });
            if leads || name == ".git" {
                return Some(Held::GitPointer);
            }
        }
        None
    }

    /// Judges every entry of a new tree at `rel` in the upper directory, moving what is held
    /// out of it, and clears what must not reach the root (set-id bits, overlay attributes).
    fn judge_tree(&mut self, rel: &Path, git: Option<&InGit>) {
        strip(&self.upper.join(rel));
        let Ok(entries) = std::fs::read_dir(self.upper.join(rel)) else { return };
        let mut names: Vec<OsString> =
            entries.filter_map(Result::ok).map(|entry| entry.file_name()).collect();
        names.sort();
        for name in names {
            let path = rel.join(&name);
            let upper_path = self.upper.join(&path);
            let Ok(meta) = std::fs::symlink_metadata(&upper_path) else { continue };
            let kind = meta.file_type();
            if kind.is_char_device() && meta.rdev() == 0 {
                // A whiteout in a new tree hides nothing.
                let _ = std::fs::remove_file(&upper_path);
                continue;
            }
            let place = self.git_place(&path, &name, kind, git);
            if let Some(GitVerdict::Hold(why)) = place.verdict {
                self.hold(&path, why);
                continue;
            }
            if kind.is_dir() {
                if let Some(why) = self.top_level_hold(&path, &name, kind) {
                    self.hold(&path, why);
                    continue;
                }
                self.judge_tree(&path, place.inside.as_ref());
                continue;
            }
            if place.verdict.is_none() {
                // What the root had there, when its directory is not new too.
                let real = match self.real_parent_or_none(&path) {
                    Ok(Some(parent)) => {
                        rustix::fs::statat(&parent, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)
                            .ok()
                    }
                    _ => None,
                };
                match self.judge_outside_git(&path, &name, &meta, real.as_ref()) {
                    GitVerdict::Hold(why) => {
                        self.hold(&path, why);
                        continue;
                    }
                    GitVerdict::Defer => {
                        self.defer(&path);
                        continue;
                    }
                    GitVerdict::Pass => {}
                }
            }
            strip(&upper_path);
        }
    }

    /// Judges a text file by `held(before, after)`: `before` what the root holds at `rel` (empty
    /// when nothing, or not a regular file), `after` the upper directory's. A file that is not a
    /// regular file, is over the cap or is not UTF-8 is held.
    fn judge_text(
        &mut self,
        rel: &Path,
        name: &OsStr,
        held: impl FnOnce(&str, &str) -> Option<Held>,
    ) -> GitVerdict {
        let unreadable = || GitVerdict::Hold(Held::GitConfig);
        let after = match cordon_policies::read_start_file(&self.upper.join(rel), READ_CAP) {
            Ok(Some(bytes)) => bytes,
            _ => return unreadable(),
        };
        let Ok(after) = String::from_utf8(after) else { return unreadable() };
        let before = match self.real_parent_or_none(rel) {
            Ok(Some(parent)) => read_at(&parent, name).unwrap_or_default(),
            _ => String::new(),
        };
        match held(&before, &after) {
            Some(why) => GitVerdict::Hold(why),
            None => GitVerdict::Pass,
        }
    }

    /// Whether git tracks the root's `rel` (so a change to it shows in `git diff`): asked of git
    /// in the repository that holds it, with no configuration but the repository's own.
    fn tracked(&self, rel: &Path) -> bool {
        let file = self.root.join(rel);
        let Some(dir) = file.parent() else { return false };
        std::process::Command::new("git")
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_OPTIONAL_LOCKS", "0")
            .args(["-c", "core.fsmonitor=false", "ls-files", "--error-unmatch", "--"])
            .arg(file.file_name().unwrap_or_default())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    }

    /// Whether a repository that holds `rel` (found by walking up from it, in the root and
    /// above) includes it from its configuration.
    fn included_by_a_repository(&mut self, rel: &Path) -> bool {
        let absolute = self.root.join(rel);
        let mut dir = absolute.parent();
        while let Some(here) = dir {
            let git = here.join(".git");
            let config = if git.is_dir() {
                Some(git.join("config"))
            } else if git.is_file() {
                std::fs::read_to_string(&git).ok().and_then(|text| {
                    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim().to_owned();
                    Some(here.join(target).join("config"))
                })
            } else {
                None
            };
            if let Some(config) = config {
                let mut targets = Vec::new();
                include_targets(&config, self.context.home.as_deref(), &mut targets, 0);
                if targets.contains(&absolute) {
                    return true;
                }
            }
            dir = here.parent();
        }
        false
    }

    /// Moves the upper directory's `rel` into the root, replacing what is there.
    fn put_in_place(
        &mut self,
        rel: &Path,
        name: &OsStr,
        parent: &OwnedFd,
        real: Option<&rustix::fs::Stat>,
    ) {
        let upper_path = self.upper.join(rel);
        strip(&upper_path);
        let upper_parent =
            match open_dir_at(rustix::fs::CWD, upper_path.parent().unwrap_or(self.upper)) {
                Ok(fd) => fd,
                Err(error) => return self.fail(rel, error.into()),
            };
        let upper_is_dir = std::fs::symlink_metadata(&upper_path).is_ok_and(|m| m.is_dir());
        // A directory cannot be renamed over a non-empty one, nor a file over a directory:
        // what the root has there goes first.
        let replaces_dir = real.is_some_and(|st| FileType::from_raw_mode(st.st_mode).is_dir());
        if replaces_dir || (upper_is_dir && real.is_some()) {
            if let Err(error) = remove_at(parent, name) {
                return self.fail(rel, error.into());
            }
        }
        match rustix::fs::renameat(&upper_parent, name, parent, name) {
            Ok(()) => self.report.applied += 1,
            Err(rustix::io::Errno::XDEV) => match copy_into(&upper_path, parent, name) {
                Ok(()) => {
                    self.report.applied += 1;
                    let _ = remove_path(&upper_path);
                }
                Err(error) => self.fail(rel, error),
            },
            Err(error) => self.fail(rel, error.into()),
        }
    }

    /// Moves the upper directory's `rel` to the held directory, and says so.
    fn hold(&mut self, rel: &Path, why: Held) {
        let kept_at = self.held_dir.join(rel);
        let moved = kept_at
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::rename(self.upper.join(rel), &kept_at));
        match moved {
            Ok(()) => self.report.held.push(HeldChange { path: self.root.join(rel), why, kept_at }),
            Err(error) => self.fail(rel, error),
        }
    }

    fn fail(&mut self, rel: &Path, error: std::io::Error) {
        self.report.failed.push((self.root.join(rel), error));
    }

    /// Whether the host changed `real` while the command ran.
    fn changed_during_run(&self, real: &rustix::fs::Stat) -> bool {
        let (sec, nsec) = self.context.started;
        (real.st_ctime, real.st_ctime_nsec as i64) >= (sec, nsec)
    }

    /// The root's directory that holds `rel`, opened from the root down without following a
    /// link; `Ok(None)` when one on the way is missing or not a directory.
    fn real_parent(&self, rel: &Path) -> std::io::Result<Option<OwnedFd>> {
        self.real_parent_or_none(rel)
    }

    fn real_parent_or_none(&self, rel: &Path) -> std::io::Result<Option<OwnedFd>> {
        let mut fd = rustix::io::dup(self.root_fd)?;
        for component in rel.parent().into_iter().flat_map(Path::iter) {
            match open_dir_at(&fd, component) {
                Ok(next) => fd = next,
                Err(
                    rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR | rustix::io::Errno::LOOP,
                ) => {
                    return Ok(None);
                }
                Err(error) => return Err(error.into()),
            }
        }
        Ok(Some(fd))
    }
}

#[derive(Debug, Clone)]
enum GitVerdict {
    Pass,
    Hold(Held),
    /// Judged again once the rest of the layer is in place (a `.git` pointer file).
    Defer,
}

struct GitPlace {
    /// `None` outside git directories: the rest of the gate decides.
    verdict: Option<GitVerdict>,
    /// The place below this entry when it is a directory in (or starting) a git directory.
    inside: Option<InGit>,
}

fn open_dir_at(dir: impl AsFd, name: impl rustix::path::Arg) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// The text of the regular file `name` in `dir`, if it is one under the cap.
fn read_at(dir: &OwnedFd, name: &OsStr) -> Option<String> {
    use std::io::Read;
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    if !FileType::from_raw_mode(st.st_mode).is_file() || st.st_size as u64 > READ_CAP {
        return None;
    }
    let mut text = String::new();
    std::fs::File::from(fd).take(READ_CAP).read_to_string(&mut text).ok()?;
    Some(text)
}

/// Removes `name` in `dir`, a whole tree when it is a directory, never following a link.
fn remove_at(dir: &OwnedFd, name: &OsStr) -> rustix::io::Result<()> {
    let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
    if !FileType::from_raw_mode(st.st_mode).is_dir() {
        return rustix::fs::unlinkat(dir, name, AtFlags::empty());
    }
    let sub = open_dir_at(dir, name)?;
    let mut names = Vec::new();
    for entry in rustix::fs::Dir::read_from(&sub)? {
        let entry = entry?;
        let entry_name = entry.file_name().to_bytes();
        if entry_name != b"." && entry_name != b".." {
            names.push(OsStr::from_bytes(entry_name).to_owned());
        }
    }
    for entry in names {
        remove_at(&sub, &entry)?;
    }
    rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR)
}

/// Removes an overlay's work directory, whose directories the kernel made with mode 000.
fn remove_work_dir(work: &Path) {
    let mut dirs = vec![work.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
        for entry in std::fs::read_dir(&dir).into_iter().flatten().filter_map(Result::ok) {
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                dirs.push(entry.path());
            }
        }
    }
    let _ = std::fs::remove_dir_all(work);
}

/// Removes a path of the upper directory (cordon's own), whatever it is.
fn remove_path(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(error) => Err(error),
    }
}

/// Copies the upper directory's `from` to `name` in `dir` (the upper directory is on another
/// file system than the root): a file to a temporary name first and renamed over, a link made
/// anew, a directory made and filled.
fn copy_into(from: &Path, dir: &OwnedFd, name: &OsStr) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(from)?;
    let mode = Mode::from_raw_mode(meta.mode() & 0o1777);
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(from)?;
        let _ = rustix::fs::unlinkat(dir, name, AtFlags::empty());
        return Ok(rustix::fs::symlinkat(&target, dir, name)?);
    }
    if meta.is_dir() {
        match rustix::fs::mkdirat(dir, name, mode) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(error) => return Err(error.into()),
        }
        let sub = open_dir_at(dir, name)?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            copy_into(&entry.path(), &sub, &entry.file_name())?;
        }
        return Ok(());
    }
    let mut temporary = OsString::from(".");
    temporary.push(name);
    temporary.push(".cordon-apply");
    let _ = rustix::fs::unlinkat(dir, temporary.as_os_str(), AtFlags::empty());
    let fd = rustix::fs::openat(
        dir,
        temporary.as_os_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        mode,
    )?;
    let mut out = std::fs::File::from(fd);
    std::io::copy(&mut std::fs::File::open(from)?, &mut out)?;
    out.set_permissions(std::fs::Permissions::from_mode(meta.mode() & 0o1777))?;
    Ok(rustix::fs::renameat(dir, temporary.as_os_str(), dir, name)?)
}

/// Whether the upper directory `path` is opaque (it replaced the root's directory whole).
fn is_opaque(path: &Path) -> bool {
    let mut value = [0u8; 4];
    ["user.overlay.opaque", "trusted.overlay.opaque"].iter().any(|attribute| {
        rustix::fs::lgetxattr(path, *attribute, &mut value[..])
            .is_ok_and(|len| value[..len].first() == Some(&b'y'))
    })
}

/// Drops what must not reach the root from an upper entry: set-user-ID and set-group-ID bits,
/// and the overlay's attributes (its own and what the command wrote under that name, which
/// the overlay stores escaped under the same prefix).
fn strip(path: &Path) {
    let Ok(meta) = std::fs::symlink_metadata(path) else { return };
    if meta.file_type().is_symlink() {
        return;
    }
    if meta.mode() & 0o6000 != 0 {
        let _ =
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(meta.mode() & 0o1777));
    }
    let mut names = vec![0u8; 64 * 1024];
    let Ok(len) = rustix::fs::llistxattr(path, &mut names[..]) else { return };
    for attribute in names[..len].split(|byte| *byte == 0).filter(|name| !name.is_empty()) {
        if attribute.starts_with(b"user.overlay.") || attribute.starts_with(b"trusted.overlay.") {
            let _ = rustix::fs::lremovexattr(path, OsStr::from_bytes(attribute));
        }
    }
}

/// The files the user's own git configuration includes, with every condition taken as true:
/// `~/.gitconfig`, `$XDG_CONFIG_HOME/git/config` (or `~/.config/git/config`) and
/// `/etc/gitconfig`, and what they include, to any depth git allows.
fn global_include_targets(home: Option<&Path>) -> Vec<PathBuf> {
    let mut targets = Vec::new();
    let mut starts = vec![PathBuf::from("/etc/gitconfig")];
    if let Some(home) = home {
        starts.push(home.join(".gitconfig"));
        let xdg = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|dir| dir.is_absolute())
            .unwrap_or_else(|| home.join(".config"));
        starts.push(xdg.join("git/config"));
    }
    for start in starts {
        include_targets(&start, home, &mut targets, 0);
    }
    targets
}

/// How deep git follows includes.
const INCLUDE_DEPTH: usize = 10;

/// Adds what the configuration `file` includes (`include.path`, `includeIf.*.path`), resolved as
/// git resolves them, to `targets`, and what those include.
fn include_targets(file: &Path, home: Option<&Path>, targets: &mut Vec<PathBuf>, depth: usize) {
    if depth > INCLUDE_DEPTH {
        return;
    }
    let Ok(Some(bytes)) = cordon_policies::read_start_file(file, READ_CAP) else { return };
    let text = String::from_utf8_lossy(&bytes);
    let base = file.parent().unwrap_or(Path::new("/"));
    for value in cordon_policies::git_include_paths(&text) {
        let path = match value.strip_prefix("~/") {
            Some(rest) => match home {
                Some(home) => home.join(rest),
                None => continue,
            },
            None if Path::new(&value).is_absolute() => PathBuf::from(&value),
            None => base.join(&value),
        };
        // By the path git opens, and by where it leads.
        let resolved = std::fs::canonicalize(&path).ok();
        for candidate in std::iter::once(path).chain(resolved) {
            if !targets.contains(&candidate) {
                targets.push(candidate.clone());
                include_targets(&candidate, home, targets, depth + 1);
            }
        }
    }
}

#[cfg(test)]
#[path = "apply_tests.rs"]
mod tests;

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

use crate::apply_record::Before;
use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// The largest configuration, plan or pointer file the gate reads; a larger one is held.
const READ_CAP: u64 = 1024 * 1024;

/// How deep the apply follows a tree: deeper, it is held whole (a deletion there is kept as a
/// conflict), never judged in part.
const MAX_DEPTH: usize = 256;

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

/// Whether any layer in `dir` holds a change to apply: an entry in an upper directory, or
/// pointer files a stopped apply set aside. A run without one has nothing to journal, sync or
/// judge.
pub fn layers_hold_changes(dir: &Path) -> bool {
    let nonempty =
        |path: &Path| std::fs::read_dir(path).map_or(true, |mut entries| entries.next().is_some());
    if std::fs::symlink_metadata(dir.join("deferred")).is_ok() {
        return true;
    }
    std::fs::read_dir(dir).into_iter().flatten().filter_map(Result::ok).any(|entry| {
        let numbered = entry.file_name().to_str().is_some_and(|name| name.parse::<u32>().is_ok());
        let upper = entry.path().join("upper");
        numbered && upper.is_dir() && nonempty(&upper)
    })
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
        // Pointer files a stopped apply had set aside go back to be judged again.
        restore_deferred(&dir.join("deferred").join(index.to_string()), &upper);
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
            fresh_git_dirs: Vec::new(),
            emptied: std::collections::HashMap::new(),
            repository_facts: std::collections::HashMap::new(),
            repository_configs: std::collections::HashMap::new(),
            git: std::cell::OnceCell::new(),
            includes: global_includes.clone(),
            record: crate::apply_record::Record::open(dir, index, &root),
            report: &mut report,
            root_in_git_dir: false,
        };
        // A root that is (or lies in) a git directory — `--add-dir REPO/.git` — has its
        // changes judged as that git directory's entries; so has a root the run makes one (a
        // bare repository git would find from there).
        let around = git_dir_around(&root).or_else(|| {
            layer
                .looks_like_git_dir(Path::new(""))
                .then(|| InGit { git_dir: PathBuf::new(), inner: Vec::new() })
        });
        layer.root_in_git_dir = around.is_some();
        layer.apply_dir(Path::new(""), around.as_ref());
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

/// The git directory `root` is or lies in (`HEAD` beside `objects`, `refs` or `commondir`), as
/// the place a walk from the root starts in: the root itself as `""`, one above it by its
/// absolute path.
fn git_dir_around(root: &Path) -> Option<InGit> {
    let is_git_dir = |dir: &Path| {
        let here = |name: &str| std::fs::symlink_metadata(dir.join(name)).is_ok();
        here("HEAD") && ["objects", "refs", "commondir"].iter().any(|name| here(name))
    };
    let dir = root.ancestors().find(|dir| is_git_dir(dir))?;
    let inner = root
        .strip_prefix(dir)
        .ok()?
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    let git_dir = if dir == root { PathBuf::new() } else { dir.to_path_buf() };
    Some(InGit { git_dir, inner })
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
    /// Directories this run makes git directories (they were not before).
    fresh_git_dirs: Vec<PathBuf>,
    /// [`Layer::empties_repository`] of each git directory asked about.
    emptied: std::collections::HashMap<PathBuf, bool>,
    /// [`Layer::repository_config`] of each repository read.
    repository_configs: std::collections::HashMap<PathBuf, std::rc::Rc<RepositoryConfig>>,
    /// [`Layer::git`], found once.
    git: std::cell::OnceCell<PathBuf>,
    /// [`Layer::repositories_above`] of each directory asked about.
    repository_facts: std::collections::HashMap<PathBuf, std::rc::Rc<RepositoryFacts>>,
    /// Files a git configuration includes (absolute), judged as configurations.
    includes: Vec<PathBuf>,
    /// What was applied and what it replaced.
    record: crate::apply_record::Record,
    report: &'a mut ApplyReport,
    /// The root is (or lies in, or the run makes it) a git directory.
    root_in_git_dir: bool,
}

impl Layer<'_> {
    /// Applies the upper directory's `rel` (a directory the roots have too: merged).
    fn apply_dir(&mut self, rel: &Path, git: Option<&InGit>) {
        if rel.components().count() > MAX_DEPTH {
            self.hold(rel, Held::Unjudged);
            return;
        }
        let entries = match std::fs::read_dir(self.upper.join(rel)) {
            Ok(entries) => entries,
            Err(error) => {
                // Nothing of it is applied; what could not be listed is named.
                self.fail(rel, error);
                return;
            }
        };
        let mut names: Vec<OsString> =
            entries.filter_map(Result::ok).map(|entry| entry.file_name()).collect();
        // `.git` last: what is judged against the repository as it was (is a file tracked?)
        // is judged before the run's own git changes are in.
        names.sort_by_key(|name| (name == ".git", name.clone()));
        for name in names {
            let path = rel.join(&name);
            self.apply_entry(&path, &name, git);
        }
        // The directory's own mode, when the command changed it (never set-user-ID).
        if !rel.as_os_str().is_empty() {
            if let (Ok(upper_meta), Ok(Some(parent))) =
                (std::fs::symlink_metadata(self.upper.join(rel)), self.real_parent(rel))
            {
                let name = rel.file_name().unwrap_or_default();
                if let Ok(real) = rustix::fs::statat(&parent, name, AtFlags::SYMLINK_NOFOLLOW) {
                    let wanted = upper_meta.mode() & 0o3777 & writable_by(git);
                    if real.st_mode & 0o7777 != upper_meta.mode() & 0o7777 {
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
            Ok(None) => {
                self.hold(rel, Held::Conflict);
                return;
            }
            Err(error) => return self.fail(rel, error),
        };
        let real = rustix::fs::statat(&parent, name, AtFlags::SYMLINK_NOFOLLOW).ok();
        if kind.is_char_device() && meta.rdev() == 0 {
            // A whiteout: the command deleted what the root has here.
            let Some(real) = real else {
                let _ = std::fs::remove_file(&upper_path);
                return;
            };
            if git.is_some_and(|git| self.empties_repository(git)) {
                self.hold(rel, Held::RemovesRepository);
                return;
            }
            if let Some(why) =
                self.replacing_hold(rel, name, &parent, (&real, Replacing::Delete), git)
            {
                self.hold(rel, why);
                return;
            }
            // Moved into the run's keeping rather than removed, where it can be.
            let before = self.record.keep(&parent, name, rel, false);
            let removed = match before {
                Before::Kept(_) => Ok(()),
                _ => remove_at(&parent, name),
            };
            match removed {
                Ok(()) => {
                    self.report.applied += 1;
                    self.record.note(self.root.join(rel), before, None);
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
                    self.hold(rel, why.clone());
                    return;
                }
                return self.apply_dir(rel, git_here.inside.as_ref());
            }
            // A new tree, or one that replaces what the root had: judged entry by entry, what
            // is held moved out, then put in place whole.
            if let Some(GitVerdict::Hold(why)) = &git_here.verdict {
                self.hold(rel, why.clone());
                return;
            }
            if let Some(why) = self.top_level_hold(rel, name, kind) {
                self.hold(rel, why);
                return;
            }
            if let Some(why) = real.as_ref().and_then(|real| {
                self.replacing_hold(rel, name, &parent, (real, Replacing::Overwrite), git)
            }) {
                self.hold(rel, why);
                return;
            }
            if self.judge_tree(rel, git_here.inside.as_ref()) == Judged::Incomplete {
                self.hold(rel, Held::Unjudged);
                return;
            }
            return self.put_in_place(rel, name, &parent, real.as_ref());
        }
        let verdict = match git_here.verdict {
            Some(verdict) => verdict,
            None => self.judge_outside_git(rel, name, &meta, real.as_ref()),
        };
        match verdict {
            GitVerdict::Hold(why) => {
                self.hold(rel, why);
                return;
            }
            GitVerdict::Defer => {
                self.defer(rel);
                return;
            }
            GitVerdict::Pass => {}
        }
        if let Some(why) = real.as_ref().and_then(|real| {
            self.replacing_hold(rel, name, &parent, (real, Replacing::Overwrite), git)
        }) {
            self.hold(rel, why);
            return;
        }
        if git_here.inside.is_some() {
            drop_world_write(&upper_path);
        }
        self.put_in_place(rel, name, &parent, real.as_ref());
    }

    /// Why what the root has at `rel` must not be deleted or replaced: a repository (its
    /// history goes with it), or something the host changed during the run — the entry itself
    /// or, for a directory, anything in it.
    fn replacing_hold(
        &self,
        rel: &Path,
        name: &OsStr,
        parent: &OwnedFd,
        (real, how): (&rustix::fs::Stat, Replacing),
        git: Option<&InGit>,
    ) -> Option<Held> {
        let is_dir = FileType::from_raw_mode(real.st_mode).is_dir();
        // Inside a git directory only a submodule's git directory (under `modules/`) is a
        // repository of its own; at its top, what makes it one.
        let repository = match git {
            None => is_dir && (name == ".git" || self.was_git_dir(rel)),
            // A file there rewritten is judged by its content; removed, or a directory there
            // replaced, the repository goes.
            Some(git) if git.inner.is_empty() => {
                (how == Replacing::Delete || is_dir)
                    && ["HEAD", "objects", "refs", "config", "commondir"]
                        .iter()
                        .any(|top| name == *top)
            }
            Some(git) => {
                git.inner.first().is_some_and(|first| first == "modules")
                    && is_dir
                    && self.was_git_dir(rel)
            }
        };
        if repository {
            return Some(Held::RemovesRepository);
        }
        if self.changed_during_run(real) {
            return Some(Held::Conflict);
        }
        if is_dir && self.changed_within(parent, name, 0) {
            return Some(Held::Conflict);
        }
        None
    }

    /// Whether anything in the root's directory `name` (in `dir`) was changed during the run.
    fn changed_within(&self, dir: &OwnedFd, name: &OsStr, depth: usize) -> bool {
        // Too deep to look at whole: kept, as if changed.
        if depth > MAX_DEPTH {
            return true;
        }
        let Ok(sub) = open_dir_at(dir, name) else { return false };
        let Ok(entries) = rustix::fs::Dir::read_from(&sub) else { return false };
        for entry in entries.filter_map(Result::ok) {
            let entry_name = OsStr::from_bytes(entry.file_name().to_bytes()).to_owned();
            if entry_name == "." || entry_name == ".." {
                continue;
            }
            let Ok(st) =
                rustix::fs::statat(&sub, entry_name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)
            else {
                continue;
            };
            if self.changed_during_run(&st)
                || (FileType::from_raw_mode(st.st_mode).is_dir()
                    && self.changed_within(&sub, &entry_name, depth + 1))
            {
                return true;
            }
        }
        false
    }

    /// What in the root's directory `rel` (not a git directory before the run) git would take
    /// as its own once it is one, and no run judged as such: links, special files, a
    /// configuration that may run code, hooks, or anything git does not write in its own work.
    fn unjudged_git_files(&self, rel: &Path) -> Option<Held> {
        let dir = self.root.join(rel);
        for entry in std::fs::read_dir(&dir).into_iter().flatten().filter_map(Result::ok) {
            let name = entry.file_name();
            // Rewritten by this run, so judged now (a configuration as a new one: what it
            // held before was never judged); but a merged `hooks/` keeps what it had.
            if name != "hooks"
                && std::fs::symlink_metadata(self.upper.join(rel).join(&name)).is_ok()
            {
                continue;
            }
            let Ok(kind) = entry.file_type() else { return Some(Held::GitDirectory) };
            if kind.is_symlink() || is_special(kind) {
                return Some(Held::GitDirectory);
            }
            let text = name.to_string_lossy();
            match cordon_policies::git_dir_entry(&[text.as_ref()]) {
                GitDirEntry::Ordinary if text == "hooks" => {
                    let upper_hooks = self.upper.join(rel).join("hooks");
                    let planted = std::fs::read_dir(entry.path())
                        .into_iter()
                        .flatten()
                        .filter_map(Result::ok)
                        .filter(|hook| {
                            // One the run deleted (a whiteout) or rewrote is judged by the run.
                            std::fs::symlink_metadata(upper_hooks.join(hook.file_name())).is_err()
                        })
                        .any(|hook| !hook.file_name().to_string_lossy().ends_with(".sample"));
                    if planted {
                        return Some(Held::GitDirectory);
                    }
                }
                GitDirEntry::Ordinary => {}
                GitDirEntry::Config => {
                    let text = cordon_policies::read_start_file(&entry.path(), READ_CAP)
                        .ok()
                        .flatten()
                        .and_then(|bytes| String::from_utf8(bytes).ok());
                    if text.is_none_or(|text| cordon_policies::config_change_held("", &text)) {
                        return Some(Held::GitConfig);
                    }
                }
                GitDirEntry::Todo
                | GitDirEntry::CommonDir
                | GitDirEntry::Options
                | GitDirEntry::Exclude
                | GitDirEntry::Modules
                | GitDirEntry::Other => return Some(Held::GitDirectory),
            }
        }
        None
    }

    /// Whether the run's deletions leave the git directory `git` (one it deletes in: under
    /// `objects/`, `refs/` or `packed-refs`) without the objects or the refs it had before:
    /// `git gc` and `git branch -d` delete there too, but never the last of either.
    fn empties_repository(&mut self, git: &InGit) -> bool {
        let first = git.inner.first().map(String::as_str);
        if !matches!(first, Some("objects" | "refs" | "packed-refs")) {
            return false;
        }
        // A git directory above the root (the root is its `objects/`): its other half is not
        // the run's to look at through the layer.
        if git.git_dir.is_absolute() {
            return false;
        }
        if let Some(known) = self.emptied.get(&git.git_dir) {
            return *known;
        }
        let dir = &git.git_dir;
        let objects = |listing: &dyn Fn(&Path) -> Vec<OsString>| {
            let packs = listing(&dir.join("objects/pack"))
                .iter()
                .any(|name| name.to_string_lossy().ends_with(".pack"));
            packs
                || listing(&dir.join("objects")).iter().any(|name| {
                    let text = name.to_string_lossy();
                    text.len() == 2
                        && text.chars().all(|c| c.is_ascii_hexdigit())
                        && !listing(&dir.join("objects").join(name)).is_empty()
                })
        };
        let refs = |listing: &dyn Fn(&Path) -> Vec<OsString>| {
            !listing(&dir.join("refs/heads")).is_empty()
                || !listing(&dir.join("refs/tags")).is_empty()
                || listing(dir).iter().any(|name| name == "packed-refs")
        };
        let emptied = {
            let before = |rel: &Path| names_in(&self.root.join(rel));
            let after = |rel: &Path| self.merged_names(rel);
            (objects(&before) && !objects(&after)) || (refs(&before) && !refs(&after))
        };
        self.emptied.insert(dir.clone(), emptied);
        emptied
    }

    /// The names in the root's directory `rel` once the run's changes are in: the root's, less
    /// what the run deleted (or all of them, where it replaced the directory), and the run's.
    fn merged_names(&self, rel: &Path) -> Vec<OsString> {
        let upper = self.upper.join(rel);
        let mut names: Vec<OsString> =
            if is_opaque(&upper) { Vec::new() } else { names_in(&self.root.join(rel)) };
        for entry in std::fs::read_dir(&upper).into_iter().flatten().filter_map(Result::ok) {
            let name = entry.file_name();
            let whiteout = entry
                .metadata()
                .is_ok_and(|meta| meta.file_type().is_char_device() && meta.rdev() == 0);
            names.retain(|known| *known != name);
            if !whiteout {
                names.push(name);
            }
        }
        names
    }

    /// Whether the root's directory `rel` was a git directory before the run.
    fn was_git_dir(&self, rel: &Path) -> bool {
        let here = |name: &str| std::fs::symlink_metadata(self.root.join(rel).join(name)).is_ok();
        here("HEAD") && ["objects", "refs", "commondir"].iter().any(|name| here(name))
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
                    // A FIFO where git reads `HEAD` stalls every git command after.
                    _ if is_special(kind) => GitVerdict::Hold(Held::Special),
                    GitDirEntry::Ordinary => GitVerdict::Pass,
                    GitDirEntry::Modules if is_dir => GitVerdict::Pass,
                    GitDirEntry::Modules | GitDirEntry::Other => {
                        GitVerdict::Hold(Held::GitDirectory)
                    }
                    GitDirEntry::Config
                    | GitDirEntry::Todo
                    | GitDirEntry::CommonDir
                    | GitDirEntry::Options
                    | GitDirEntry::Exclude
                        if is_dir =>
                    {
                        GitVerdict::Hold(Held::GitDirectory)
                    }
                    GitDirEntry::Config => {
                        let git_dir = self.root.join(&git.git_dir);
                        // Into the root, through no link, and never into a git directory:
                        // a work tree there makes each checkout write git's own files.
                        let leads_inside = |path: &Path| {
                            path.strip_prefix(self.root).is_ok_and(|inside| {
                                !self.root_in_git_dir
                                    && !self.merged_path_has_link(inside)
                                    && !inside.ancestors().any(|rel| {
                                        rel.file_name().is_some_and(|name| name == ".git")
                                            || self.looks_like_git_dir(rel)
                                    })
                            })
                        };
                        let after = self.upper_text(rel);
                        // A git directory this run made one: its configuration is new to git.
                        let before = if self.fresh_git_dirs.contains(&git.git_dir) {
                            String::new()
                        } else {
                            self.root_text(rel)
                        };
                        match after {
                            Some(after)
                                if !cordon_policies::repository_config_change_held(
                                    &before,
                                    &after,
                                    &git_dir,
                                    leads_inside,
                                ) =>
                            {
                                GitVerdict::Pass
                            }
                            _ => GitVerdict::Hold(Held::GitConfig),
                        }
                    }
                    GitDirEntry::Options => self.judge_text(rel, |before, after| {
                        cordon_policies::options_change_held(before, after).then_some(Held::GitTodo)
                    }),
                    GitDirEntry::Exclude => self.judge_text(rel, |before, after| {
                        cordon_policies::exclude_change_held(before, after)
                            .then_some(Held::GitDirectory)
                    }),
                    GitDirEntry::Todo => self.judge_text(rel, |before, after| {
                        cordon_policies::todo_change_held(before, after).then_some(Held::GitTodo)
                    }),
                    GitDirEntry::CommonDir => {
                        let worktree_dir = self.root.join(rel.parent().unwrap_or(rel));
                        let git_dir = self.root.join(&git.git_dir);
                        self.judge_text(rel, |_, after| {
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
            None if starts_git_dir => {
                // A directory this run makes a git directory: what it held before was never
                // judged as git's.
                if name != ".git" && !self.was_git_dir(rel) {
                    if let Some(why) = self.unjudged_git_files(rel) {
                        return GitPlace { verdict: Some(GitVerdict::Hold(why)), inside: None };
                    }
                    self.fresh_git_dirs.push(rel.to_path_buf());
                }
                Some(InGit { git_dir: rel.to_path_buf(), inner: Vec::new() })
            }
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
        if is_special(kind) {
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
            return match self.judge_text(rel, |_, after| {
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
        let above = self.repositories_above(absolute.parent().unwrap_or(self.root));
        if above.hooks.iter().any(|hooks| absolute.starts_with(hooks)) {
            return GitVerdict::Hold(Held::Hook);
        }
        // A link on the way to a file git reads as configuration or runs as a hook leads git
        // to a file this gate never judged as one.
        if kind.is_symlink() {
            let below = |target: &PathBuf| target.starts_with(&absolute);
            if above.hooks.iter().any(below) {
                return GitVerdict::Hold(Held::Hook);
            }
            if above.includes.iter().chain(&self.includes).any(below) {
                return GitVerdict::Hold(Held::GitConfig);
            }
        }
        // Any file shaped like a git configuration that gained a key git runs is held wherever
        // it lies: whatever includes it (another repository, `~user/`, a condition met later)
        // need not be found first.
        if kind.is_file() && self.shaped_config_gained_code(rel) {
            return GitVerdict::Hold(Held::GitConfig);
        }
        if self.includes.contains(&absolute) || above.includes.contains(&absolute) {
            if !kind.is_file() {
                return GitVerdict::Hold(Held::GitConfig);
            }
            return self.judge_text(rel, |before, after| {
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
    fn defer(&mut self, rel: &Path) -> Judged {
        match move_to(&self.upper.join(rel), &self.deferred_dir.join(rel)) {
            Ok(()) => {
                self.deferred.push(rel.to_path_buf());
                Judged::Whole
            }
            Err(error) => {
                self.fail(rel, error);
                Judged::Incomplete
            }
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
                    let target = cordon_policies::gitfile_target(&text)?.to_owned();
                    std::fs::canonicalize(dir.join(target)).ok()
                })
                .is_some_and(|place| {
                    place.starts_with(self.root)
                        && !self.context.direct_roots.iter().any(|direct| {
                            place.starts_with(direct) && !self.root.starts_with(direct)
                        })
                });
            // Its directory may have gone into the root whole meanwhile.
            if let Err(error) = move_to(&staged, &self.upper.join(&rel)) {
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
                Ok(None) => {
                    self.hold(&rel, Held::Conflict);
                }
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
    fn judge_tree(&mut self, rel: &Path, git: Option<&InGit>) -> Judged {
        if rel.components().count() > MAX_DEPTH {
            return Judged::Incomplete;
        }
        strip(&self.upper.join(rel));
        if git.is_some() {
            drop_world_write(&self.upper.join(rel));
        }
        // A directory that cannot be listed whole (no read right, a path too long to name)
        // cannot be judged: the caller holds the tree.
        let Ok(entries) = std::fs::read_dir(self.upper.join(rel)) else {
            return Judged::Incomplete;
        };
        let Ok(mut names) = entries
            .map(|entry| entry.map(|entry| entry.file_name()))
            .collect::<Result<Vec<OsString>, _>>()
        else {
            return Judged::Incomplete;
        };
        // `.git` last, as in a merged directory.
        names.sort_by_key(|name| (name == ".git", name.clone()));
        let mut judged = Judged::Whole;
        for name in names {
            let path = rel.join(&name);
            let upper_path = self.upper.join(&path);
            let Ok(meta) = std::fs::symlink_metadata(&upper_path) else {
                return Judged::Incomplete;
            };
            let kind = meta.file_type();
            if kind.is_char_device() && meta.rdev() == 0 {
                // A whiteout in a new tree hides nothing.
                let _ = std::fs::remove_file(&upper_path);
                continue;
            }
            let place = self.git_place(&path, &name, kind, git);
            if let Some(GitVerdict::Hold(why)) = place.verdict {
                judged = judged.and(self.hold(&path, why));
                continue;
            }
            if kind.is_dir() {
                if let Some(why) = self.top_level_hold(&path, &name, kind) {
                    judged = judged.and(self.hold(&path, why));
                    continue;
                }
                if self.judge_tree(&path, place.inside.as_ref()) == Judged::Incomplete {
                    // Held whole where it can be moved; else the tree above it is.
                    judged = judged.and(self.hold(&path, Held::Unjudged));
                }
                continue;
            }
            if place.verdict.is_none() {
                // What the root had there, when its directory is not new too.
                let real = match self.real_parent(&path) {
                    Ok(Some(parent)) => {
                        rustix::fs::statat(&parent, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)
                            .ok()
                    }
                    _ => None,
                };
                match self.judge_outside_git(&path, &name, &meta, real.as_ref()) {
                    GitVerdict::Hold(why) => {
                        judged = judged.and(self.hold(&path, why));
                        continue;
                    }
                    GitVerdict::Defer => {
                        judged = judged.and(self.defer(&path));
                        continue;
                    }
                    GitVerdict::Pass => {}
                }
            }
            strip(&upper_path);
            if place.inside.is_some() {
                drop_world_write(&upper_path);
            }
        }
        judged
    }

    /// Judges a text file by `held(before, after)`: `before` what the root holds at `rel` (empty
    /// when nothing, or not a regular file), `after` the upper directory's. A file that is not a
    /// regular file, is over the cap or is not UTF-8 is held.
    fn judge_text(
        &mut self,
        rel: &Path,
        held: impl FnOnce(&str, &str) -> Option<Held>,
    ) -> GitVerdict {
        let Some(after) = self.upper_text(rel) else { return GitVerdict::Hold(Held::GitConfig) };
        match held(&self.root_text(rel), &after) {
            Some(why) => GitVerdict::Hold(why),
            None => GitVerdict::Pass,
        }
    }

    /// Whether the upper directory's `rel` reads as a git configuration and gained a key git
    /// runs. A file whose first 4 KiB git would already refuse (any line that is no
    /// configuration: git then reads nothing of the file) is not read further.
    fn shaped_config_gained_code(&self, rel: &Path) -> bool {
        use std::io::Read;
        const HEAD: u64 = 4096;
        let Ok(file) = std::fs::File::open(self.upper.join(rel)) else { return false };
        let mut head = Vec::with_capacity(HEAD as usize + 1);
        if file.take(HEAD + 1).read_to_end(&mut head).is_err() {
            return false;
        }
        let whole = head.len() as u64 <= HEAD;
        head.truncate(HEAD as usize);
        // A character cut at the end reads as a replacement character: where git takes a key
        // only ASCII letters, digits and `-` pass anyway, and elsewhere it changes nothing.
        let head = String::from_utf8_lossy(&head);
        if cordon_policies::git_config_entries(&head, !whole).is_none() {
            return false;
        }
        // Shaped like one, but too big or not text to read whole: held (git would read it).
        let Some(after) = self.upper_text(rel) else { return true };
        cordon_policies::git_config_shaped(&after)
            && cordon_policies::git_config_gained_known_code(&self.root_text(rel), &after)
    }

    /// The git the gate asks (what a repository's index tracks, where its hooks are): the first
    /// on `PATH` in a directory outside every writable root, so never one a sandboxed command
    /// could have put there; `/usr/bin/git` when `PATH` has none.
    fn git(&self) -> &Path {
        self.git.get_or_init(|| {
            let writable: Vec<PathBuf> =
                self.layered.iter().chain(&self.context.direct_roots).cloned().collect();
            crate::git_tracked::trusted_git(&writable)
        })
    }

    /// The upper directory's `rel` as text: a regular file under the cap, in UTF-8.
    fn upper_text(&self, rel: &Path) -> Option<String> {
        let bytes = cordon_policies::read_start_file(&self.upper.join(rel), READ_CAP).ok()??;
        String::from_utf8(bytes).ok()
    }

    /// What the root holds at `rel` as text (empty when nothing, or not a regular file).
    fn root_text(&self, rel: &Path) -> String {
        let name = rel.file_name().unwrap_or_default();
        match self.real_parent(rel) {
            Ok(Some(parent)) => read_at(&parent, name).unwrap_or_default(),
            _ => String::new(),
        }
    }

    /// Whether a directory on the way to `rel` (below the root) is a link, once the run's
    /// changes are in: the upper directory's entry where it has one, else the root's.
    fn merged_path_has_link(&self, rel: &Path) -> bool {
        let mut here = PathBuf::new();
        for component in rel.iter() {
            here.push(component);
            let meta = std::fs::symlink_metadata(self.upper.join(&here))
                .or_else(|_| std::fs::symlink_metadata(self.root.join(&here)));
            match meta {
                Ok(meta) if meta.file_type().is_symlink() => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
        }
        false
    }

    /// Whether git tracks the root's `rel` (so a change to it shows in `git diff`): asked of git
    /// in the repository that holds it, with no configuration but the repository's own.
    ///
    /// Tracked before the run, and, when the run rewrote the repository's index, still tracked
    /// there without `skip-worktree` or `assume-unchanged` (either would keep the change out of
    /// `git status` and `git diff`).
    fn tracked(&self, rel: &Path) -> bool {
        let file = self.root.join(rel);
        if !crate::git_tracked::shows_changes(self.git(), &file, None) {
            return false;
        }
        // The index the run wrote, if it wrote one: the repository's top is the nearest
        // directory above with a `.git` directory.
        let top = file.ancestors().skip(1).find(|dir| dir.join(".git").is_dir());
        let new_index = top
            .and_then(|top| top.strip_prefix(self.root).ok())
            .map(|inside| self.upper.join(inside).join(".git/index"))
            .filter(|index| index.is_file());
        match new_index {
            Some(index) => crate::git_tracked::shows_changes(self.git(), &file, Some(&index)),
            None => true,
        }
    }

    /// What the repositories that hold the directory `dir` (found by walking up from it, in
    /// the root and above, as they were before the run) make git read or run from files:
    /// what their configurations include, and where their hooks are. Asked once per directory.
    fn repositories_above(&mut self, dir: &Path) -> std::rc::Rc<RepositoryFacts> {
        if let Some(known) = self.repository_facts.get(dir) {
            return std::rc::Rc::clone(known);
        }
        let mut facts = RepositoryFacts::default();
        // Every `core.hooksPath` of the repositories above (and the user's global one), and
        // every directory above that is a repository's top once the run's changes are in (a
        // worktree or repository the run made included): a relative hooks path is taken from
        // each such top, as git takes it from whichever repository it runs in.
        let mut hook_values: Vec<String> = Vec::new();
        let mut tops: Vec<PathBuf> = Vec::new();
        let mut here = Some(dir);
        while let Some(top) = here {
            // A `.git` of the run's, in the layer or set aside until the rest is in.
            let made_here = top.strip_prefix(self.root).is_ok_and(|inside| {
                [self.upper, self.deferred_dir.as_path()]
                    .iter()
                    .any(|base| std::fs::symlink_metadata(base.join(inside).join(".git")).is_ok())
            });
            let git = top.join(".git");
            if made_here || std::fs::symlink_metadata(&git).is_ok() {
                tops.push(top.to_path_buf());
            }
            let config = if git.is_dir() {
                Some(git.join("config"))
            } else if git.is_file() {
                std::fs::read_to_string(&git).ok().and_then(|text| {
                    let target = cordon_policies::gitfile_target(&text)?.to_owned();
                    Some(top.join(target).join("config"))
                })
            } else {
                None
            };
            if let Some(config) = config {
                let read = self.repository_config(top, &config);
                facts.includes.extend(read.includes.iter().cloned());
                hook_values.extend(read.hooks.iter().cloned());
            }
            here = top.parent();
        }
        for value in &hook_values {
            let value = Path::new(value);
            if value.is_absolute() {
                facts.hooks.push(resolved(value));
                continue;
            }
            facts.hooks.extend(tops.iter().map(|top| resolved(&top.join(value))));
        }
        let facts = std::rc::Rc::new(facts);
        self.repository_facts.insert(dir.to_path_buf(), std::rc::Rc::clone(&facts));
        facts
    }

    /// What the repository at `top` (its configuration `config`) includes and its
    /// `core.hooksPath`: read once per repository (one `git config` run), however many changed
    /// directories lie below it.
    fn repository_config(&mut self, top: &Path, config: &Path) -> std::rc::Rc<RepositoryConfig> {
        if let Some(known) = self.repository_configs.get(top) {
            return std::rc::Rc::clone(known);
        }
        let mut found = Vec::new();
        include_targets(config, self.context.home.as_deref(), &mut found, 0);
        let includes = found.into_iter().flat_map(Included::names).collect();
        let hooks = hooks_path(self.git(), top, self.context.home.as_deref());
        let read = std::rc::Rc::new(RepositoryConfig { includes, hooks });
        self.repository_configs.insert(top.to_path_buf(), std::rc::Rc::clone(&read));
        read
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
        // what the root has there goes first — into the run's keeping where it can. A file
        // replaced by a file is kept by a second name, and stays in place until the new one
        // is renamed over it.
        let replaces_dir = real.is_some_and(|st| FileType::from_raw_mode(st.st_mode).is_dir());
        let moved_out = replaces_dir || (upper_is_dir && real.is_some());
        let before = match real {
            None => Before::Absent,
            Some(_) => self.record.keep(parent, name, rel, !moved_out),
        };
        if moved_out && !matches!(before, Before::Kept(_)) {
            if let Err(error) = remove_at(parent, name) {
                return self.fail(rel, error.into());
            }
        }
        let placed = match rustix::fs::renameat(&upper_parent, name, parent, name) {
            Ok(()) => Ok(()),
            Err(rustix::io::Errno::XDEV) => copy_into(&upper_path, parent, name).map(|()| {
                let _ = remove_path(&upper_path);
            }),
            Err(error) => Err(error.into()),
        };
        match placed {
            Ok(()) => {
                self.report.applied += 1;
                let after = crate::apply_record::Stamp::of_at(parent, name);
                self.record.note(self.root.join(rel), before, after);
            }
            Err(error) => {
                // What was moved out of the way goes back.
                if let (true, Before::Kept(kept)) = (moved_out, &before) {
                    let _ = self.record.put_back(kept, parent, name);
                }
                self.fail(rel, error);
            }
        }
    }

    /// Moves the upper directory's `rel` to the held directory, and says so. `Incomplete` when
    /// it could not be moved: it is still in the upper directory, and a tree holding it must
    /// not be put in place.
    fn hold(&mut self, rel: &Path, why: Held) -> Judged {
        let kept_at = self.held_dir.join(rel);
        match move_to(&self.upper.join(rel), &kept_at) {
            Ok(()) => {
                self.report.held.push(HeldChange { path: self.root.join(rel), why, kept_at });
                Judged::Whole
            }
            Err(error) => {
                self.fail(rel, error);
                Judged::Incomplete
            }
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

/// How a change replaces what the root has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Replacing {
    /// Removed (a whiteout).
    Delete,
    /// Replaced by the run's own file, link or directory.
    Overwrite,
}

/// Whether every entry of a tree was judged (and what is held moved out of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Judged {
    Whole,
    Incomplete,
}

impl Judged {
    fn and(self, other: Judged) -> Judged {
        match (self, other) {
            (Judged::Whole, Judged::Whole) => Judged::Whole,
            _ => Judged::Incomplete,
        }
    }
}

#[derive(Debug, Clone)]
enum GitVerdict {
    Pass,
    Hold(Held),
    /// Judged again once the rest of the layer is in place (a `.git` pointer file).
    Defer,
}

/// What one repository's configuration makes git read or run.
#[derive(Debug)]
struct RepositoryConfig {
    /// Files it includes (absolute).
    includes: Vec<PathBuf>,
    /// Its `core.hooksPath`, as git reads it (relative or not).
    hooks: Option<String>,
}

/// What the repositories above a directory make git read or run.
#[derive(Debug, Default)]
struct RepositoryFacts {
    /// Files their configurations include (absolute).
    includes: Vec<PathBuf>,
    /// Their hooks directories set by `core.hooksPath` (absolute).
    hooks: Vec<PathBuf>,
}

/// `path` through its links where it exists, else by its names.
fn resolved(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| cordon_policies::lexically_normal(path))
}

/// `core.hooksPath` of the repository whose work tree is `top`, as git itself reads its
/// configuration (every spelling it accepts, includes, the user's global configuration; `~/`
/// expanded), relative or not.
fn hooks_path(program: &Path, top: &Path, home: Option<&Path>) -> Option<String> {
    let mut git = std::process::Command::new(program);
    git.current_dir(top)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .args(["-c", "safe.directory=*", "config", "--path", "--get", "core.hooksPath"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    match home {
        Some(home) => git.env("HOME", home),
        None => git.env_remove("HOME"),
    };
    let output = git.output().ok()?;
    let value = String::from_utf8(output.stdout).ok()?;
    let value = value.trim_end_matches('\n');
    if !output.status.success() || value.is_empty() {
        return None;
    }
    Some(value.to_owned())
}

struct GitPlace {
    /// `None` outside git directories: the rest of the gate decides.
    verdict: Option<GitVerdict>,
    /// The place below this entry when it is a directory in (or starting) a git directory.
    inside: Option<InGit>,
}

/// A FIFO, socket or device node.
fn is_special(kind: std::fs::FileType) -> bool {
    kind.is_fifo() || kind.is_socket() || kind.is_block_device() || kind.is_char_device()
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
    remove_below(dir, name, 0)
}

fn remove_below(dir: &OwnedFd, name: &OsStr, depth: usize) -> rustix::io::Result<()> {
    if depth > MAX_DEPTH {
        return Err(rustix::io::Errno::LOOP);
    }
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
        remove_below(&sub, &entry, depth + 1)?;
    }
    rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR)
}

/// Moves what `deferred` holds (files at their paths below the upper directory) back into
/// `upper`.
fn restore_deferred(deferred: &Path, upper: &Path) {
    let mut dirs = vec![PathBuf::new()];
    while let Some(rel) = dirs.pop() {
        for entry in
            std::fs::read_dir(deferred.join(&rel)).into_iter().flatten().filter_map(Result::ok)
        {
            let path = rel.join(entry.file_name());
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                dirs.push(path);
                continue;
            }
            let _ = move_to(&entry.path(), &upper.join(&path));
        }
    }
    let _ = std::fs::remove_dir_all(deferred);
}

/// Renames `from` (in cordon's run directory) to `to`, making the directories `to` needs.
fn move_to(from: &Path, to: &Path) -> std::io::Result<()> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::rename(from, to)
}

/// The names in `dir` (none when it cannot be read).
fn names_in(dir: &Path) -> Vec<OsString> {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|entry| entry.file_name())
        .collect()
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

/// Inside a git directory nothing the command made or changed reaches the root writable by
/// every user (a `.git/hooks` made anew with mode 0777 would let anyone on the machine plant a
/// hook the owner's next commit runs). Write for the group stays: a shared repository
/// (`core.sharedRepository`) needs it.
fn drop_world_write(path: &Path) {
    let Ok(meta) = std::fs::symlink_metadata(path) else { return };
    if !meta.file_type().is_symlink() && meta.mode() & 0o002 != 0 {
        let _ =
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(meta.mode() & 0o7775));
    }
}

/// The mode bits a directory's own mode change may keep (see [`drop_world_write`]).
fn writable_by(git: Option<&InGit>) -> u32 {
    if git.is_some() { !0o002 } else { !0 }
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
/// `/etc/gitconfig`, and what they include, to any depth git allows: each by the path git
/// opens and by where it leads.
pub(crate) fn global_include_targets(home: Option<&Path>) -> Vec<PathBuf> {
    global_includes(home).into_iter().flat_map(Included::names).collect()
}

/// A file the user's global configuration includes directly, by the path git opens; and,
/// when the including file lies where a sandboxed command may once have written it (anywhere
/// but the top of the home directory, git's directory under `~/.config` — both read-only in
/// every sandbox — and `/etc`: a dotfiles checkout `~/.gitconfig` links to), that file.
pub(crate) struct DirectInclude {
    pub file: PathBuf,
    pub from_writable: Option<PathBuf>,
}

/// What the global configuration files include directly. What an included file includes in
/// turn is left out: it may lie in a directory a run once wrote, and name anything.
pub(crate) fn direct_includes(home: &Path) -> Vec<DirectInclude> {
    let xdg_git = xdg_config(home).join("git");
    let mut out = Vec::new();
    for start in global_config_files(Some(home)) {
        let Ok(real) = std::fs::canonicalize(&start) else { continue };
        let trusted = real.parent() == Some(home)
            || real.starts_with(&xdg_git)
            || real.starts_with(home.join(".config/git"))
            || real.starts_with("/etc");
        let mut found = Vec::new();
        // At the deepest level git follows: this file's own includes, nothing below.
        include_targets(&real, Some(home), &mut found, INCLUDE_DEPTH);
        out.extend(found.into_iter().map(|included| DirectInclude {
            file: included.written,
            from_writable: (!trusted).then(|| real.clone()),
        }));
    }
    out
}

/// `$XDG_CONFIG_HOME` when absolute, else `~/.config`.
fn xdg_config(home: &Path) -> PathBuf {
    std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .unwrap_or_else(|| home.join(".config"))
}

/// The global configuration files git reads: `/etc/gitconfig`, `~/.gitconfig` and
/// `$XDG_CONFIG_HOME/git/config`.
fn global_config_files(home: Option<&Path>) -> Vec<PathBuf> {
    let mut starts = vec![PathBuf::from("/etc/gitconfig")];
    if let Some(home) = home {
        starts.push(home.join(".gitconfig"));
        starts.push(xdg_config(home).join("git/config"));
    }
    starts
}

fn global_includes(home: Option<&Path>) -> Vec<Included> {
    let mut found = Vec::new();
    for start in global_config_files(home) {
        // The user's own files, which a dotfile manager often keeps as links.
        let start = std::fs::canonicalize(&start).unwrap_or(start);
        include_targets(&start, home, &mut found, 0);
    }
    found
}

/// One included file: the path git opens, and where it leads when that is another.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Included {
    written: PathBuf,
    resolved: Option<PathBuf>,
}

impl Included {
    fn names(self) -> impl Iterator<Item = PathBuf> {
        std::iter::once(self.written).chain(self.resolved)
    }
}

/// How deep git follows includes.
const INCLUDE_DEPTH: usize = 10;

/// Adds what the configuration `file` includes (`include.path`, `includeIf.*.path`), resolved as
/// git resolves them, to `found`, and what those include.
fn include_targets(file: &Path, home: Option<&Path>, found: &mut Vec<Included>, depth: usize) {
    if depth > INCLUDE_DEPTH {
        return;
    }
    let Ok(Some(bytes)) = cordon_policies::read_start_file(file, READ_CAP) else { return };
    let text = String::from_utf8_lossy(&bytes);
    let base = file.parent().unwrap_or(Path::new("/"));
    for value in cordon_policies::git_include_paths(&text) {
        let path = match value.strip_prefix('~') {
            // `~/…` is the user's home, `~name/…` another user's, as git expands them.
            Some(rest) => {
                let (user, rest) = rest.split_once('/').unwrap_or((rest, ""));
                let home = match user {
                    "" => home.map(Path::to_path_buf),
                    user => nix::unistd::User::from_name(user).ok().flatten().map(|u| u.dir),
                };
                match home {
                    Some(home) => home.join(rest),
                    None => continue,
                }
            }
            None if Path::new(&value).is_absolute() => PathBuf::from(&value),
            None => base.join(&value),
        };
        if found.iter().any(|known| known.written == path) {
            continue;
        }
        let resolved = std::fs::canonicalize(&path).ok().filter(|real| *real != path);
        found.push(Included { written: path.clone(), resolved: resolved.clone() });
        // What it includes in turn, read where it leads.
        include_targets(resolved.as_deref().unwrap_or(&path), home, found, depth + 1);
    }
}

#[cfg(test)]
#[path = "apply_tests.rs"]
mod tests;

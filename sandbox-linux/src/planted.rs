//! Names that run code later but that a read-only binding cannot keep from being created: git's
//! redirections and hooks in every git dir of the writable roots (a new `commondir`, `hooks/`,
//! `config.worktree`, a linked worktree's `commondir`, `exec` lines or a merge strategy added to
//! a paused rebase) and the start-up files under `$HOME` that do not exist yet. [`Watch`] notes
//! their state before a command runs and moves aside what the command created or replaced.
//!
//! Everything is reached from a directory opened before the run (`O_PATH | O_NOFOLLOW`), one
//! component at a time without following a symbolic link, and renamed within that directory to
//! an unguessable name: a command that swaps a directory for a link, or squats on the name the
//! file would be moved to, cannot make cordon rename anything elsewhere or leave the file in
//! place. A planted symbolic link on the way is what is moved aside.

use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nix::fcntl::AtFlags;

pub use crate::aside::Planted;
use crate::aside::{move_away, open_dir};

/// What identifies a file's state: inode and change time (which no call can set back).
type Stamp = (u64, i64, i64);

/// What identifies a directory wherever it is: device and inode.
type Identity = (u64, u64);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Check {
    /// Planted when it appears; one that existed is never moved.
    Name,
    /// A name the sandbox binds read-only where it exists: planted when it appears, or when it
    /// was replaced during the run (another inode; a file changed at all). A bind does not
    /// survive its name being renamed over outside the sandbox — by another run moving aside
    /// what it planted, or by the user's own git, which writes its files by renaming a new one
    /// over them — and the command may then write the name anew.
    Bound,
    /// A name that existed and was bound read-only: planted when another file or directory is
    /// there after the run (another inode), as when a concurrent run's after-run step renamed
    /// the bound one away and the command made the name anew. Written in place, it is the same
    /// inode (the user's own edit of an existing `.envrc` is not moved).
    Replaced,
    /// A file or link git reads as configuration or runs as a hook (an include, a hook under
    /// `core.hooksPath`): planted when it appears or changed at all (another inode, or a new
    /// change time: a link the bind could not cover replaced by a file, whose inode may be the
    /// one the link just freed).
    Unchanged,
    /// A git dir's `config`, bound as [`Check::Bound`], with its text before the run (`None`:
    /// there was none, or it could not be read): changed during the run, it is planted when it
    /// gained a line that may run code ([`cordon_policies::git_config_gained_code`]) or has a
    /// second name (a hard link, which would stay writable where the bind covers this one), so
    /// the lines git writes while the user works (`git push -u`) leave it in place.
    Config(Option<String>),
    /// A rebase todo list, with the commands (`exec` lines) it held before the run (`None`:
    /// there was none): planted when it holds a command it did not hold, or cannot be read as
    /// git would read it (a link, a non-regular or oversized file).
    Commands(Option<Vec<String>>),
}

#[derive(Debug)]
struct Watched {
    /// An existing directory, opened before the run.
    anchor: Arc<OwnedFd>,
    anchor_path: PathBuf,
    /// The components from the anchor to the watched name, each with its stamp before the run
    /// (`None`: it did not exist).
    rel: Vec<(OsString, Option<Stamp>)>,
    check: Check,
}

/// What [`Watch::move_aside`] did after a run.
#[derive(Debug, Default)]
pub struct AfterRun {
    /// What was moved aside (or could not be).
    pub planted: Vec<Planted>,
    /// Directories of the writable roots the search for repositories the command created had
    /// no allowance left for: one made there keeps whatever it was given.
    pub unsearched: Vec<PathBuf>,
}

/// The state of the watched names before a run.
#[derive(Debug, Default)]
pub struct Watch {
    watched: Vec<Watched>,
    /// Each git dir, opened, with the linked worktrees its `worktrees/` held before the run.
    worktrees: Vec<(Arc<OwnedFd>, PathBuf, Vec<OsString>)>,
    /// The writable roots, opened, for the repositories a command creates in them.
    roots: Vec<(Arc<OwnedFd>, PathBuf)>,
    /// The git dirs that existed before the run, and what they were (when they could be
    /// opened): a directory the command put in one's place under its name is new.
    known: Vec<(PathBuf, Option<Identity>)>,
    /// Git dirs (and linked worktrees' own) with no `modules/` before the run: one the command
    /// adds holds repositories it created (an existing `modules/` is read-only in the sandbox).
    without_modules: Vec<PathBuf>,
    /// Where the repositories the command created are found after the run.
    search: Search,
    /// When the watch began (seconds since the epoch).
    started: i64,
    /// The directories opened as anchors so far, by path: the watched names of one directory
    /// (a root's protected names) share one descriptor.
    anchors: Vec<(PathBuf, Arc<OwnedFd>)>,
}

/// What [`Watch::judge_file`] found.
enum Judged {
    Planted(Planted),
    /// It could not be looked at.
    NotLookedAt,
}

/// How a file [`Watch::judge_file`] looks at is known to have been written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Written {
    /// It was made or moved in during the watch (an event said so).
    Arrived,
    /// Its change time is not older than the watch.
    ByChangeTime,
}

/// How [`Watch::move_aside`] finds the repositories a command created.
#[derive(Debug, Default)]
enum Search {
    /// A walk of the roots (bounded: what it does not reach is reported).
    #[default]
    Walk,
    /// An index kept current: the repositories that appeared or changed since the mark.
    Index { index: Arc<crate::RepositoryIndex>, since: crate::Mark },
}

const GIT_NAMES: [&str; 4] = ["commondir", "config.worktree", "hooks", "config"];
const REBASE_DIRS: [&str; 2] = ["rebase-merge", "rebase-apply"];
const REBASE_NAMES: [&str; 2] = ["strategy", "strategy_opts"];

impl Watch {
    /// Notes the state of the watched names in every git dir of `git_dirs` and of every path in
    /// `start_up` (absolute paths that lie inside a writable root), and which git dirs the
    /// `roots` hold, so that one the command creates is looked at too.
    pub fn before(roots: &[PathBuf], git_dirs: &[PathBuf], start_up: &[PathBuf]) -> Watch {
        let mut watch = Watch {
            started: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |since| i64::try_from(since.as_secs()).unwrap_or(i64::MAX)),
            ..Watch::default()
        };
        for root in roots {
            if let Some(anchor) = watch.anchor(root) {
                watch.roots.push((anchor, root.clone()));
            }
        }
        // What a git dir's config includes is its configuration too, and hooks run where
        // `core.hooksPath` leads (from each checkout's top, a linked worktree's too): one that
        // does not exist yet (inside a root) is watched for appearing, as a start-up file is;
        // one that does (bound read-only, or a link the bind cannot cover) for being replaced,
        // every link on the way from its root included.
        let mut appearing = start_up.to_vec();
        let (missing, existing) = code_paths(git_dirs, roots);
        appearing.extend(missing);
        for git_dir in git_dirs {
            // The caller's walk of the same roots (the git dirs it passes are those inside
            // them): a git dir found after the run and not among these is new.
            let anchor = watch.anchor(git_dir);
            let real = std::fs::canonicalize(git_dir).unwrap_or_else(|_| git_dir.clone());
            watch.known.push((real, anchor.as_deref().and_then(identity)));
            let Some(anchor) = anchor else { continue };
            let mut add = |rel: &[&OsStr], check: Check| {
                watch.add(&anchor, git_dir, rel, check);
            };
            for name in GIT_NAMES {
                let check = match name {
                    "config" => Check::Config(
                        crate::new_repositories::config_at(&anchor, OsStr::new(name))
                            .ok()
                            .flatten(),
                    ),
                    _ => Check::Bound,
                };
                add(&[name.as_ref()], check);
            }
            let existing = linked_worktrees(git_dir);
            for worktree in &existing {
                for name in ["commondir", "config.worktree"] {
                    add(&["worktrees".as_ref(), worktree, name.as_ref()], Check::Bound);
                }
            }
            // The state of a paused rebase, cherry-pick or revert, in the git dir and in each
            // linked worktree's own.
            let mut prefixes: Vec<Vec<&OsStr>> = vec![Vec::new()];
            prefixes.extend(existing.iter().map(|w| vec!["worktrees".as_ref(), w.as_os_str()]));
            for prefix in &prefixes {
                let under = |names: &[&'static str]| joined(prefix, names);
                for dir in REBASE_DIRS {
                    let todo: PathBuf = under(&[dir, "git-rebase-todo"]).iter().collect();
                    let commands = exec_commands(&git_dir.join(todo)).ok().flatten();
                    add(&under(&[dir, "git-rebase-todo"]), Check::Commands(commands));
                    for name in REBASE_NAMES {
                        add(&under(&[dir, name]), Check::Name);
                    }
                }
                add(&under(&["sequencer", "opts"]), Check::Name);
            }
            // Its own `modules/` and each linked worktree's.
            let own = std::iter::once(git_dir.clone());
            let linked = existing.iter().map(|worktree| git_dir.join("worktrees").join(worktree));
            for dir in own.chain(linked) {
                if std::fs::symlink_metadata(dir.join("modules")).is_err() {
                    watch.without_modules.push(dir);
                }
            }
            watch.worktrees.push((anchor, git_dir.clone(), existing));
        }
        for path in &appearing {
            watch.watch_appearing(path);
        }
        for path in &existing {
            watch.watch_from_root(path);
        }
        watch
    }

    /// Watches `path`, which does not exist, for appearing: anchored at the deepest directory
    /// on its way that exists now.
    fn watch_appearing(&mut self, path: &Path) {
        let mut anchor_path = path.parent().map(Path::to_path_buf);
        while let Some(dir) = &anchor_path {
            let opened = self.anchors.iter().any(|(path, _)| path == dir);
            if opened || std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
                break;
            }
            anchor_path = dir.parent().map(Path::to_path_buf);
        }
        let Some(anchor_path) = anchor_path else { return };
        let Some(anchor) = self.anchor(&anchor_path) else { return };
        let Ok(rest) = path.strip_prefix(&anchor_path) else { return };
        let rel: Vec<&OsStr> = rest.components().map(|c| c.as_os_str()).collect();
        self.add(&anchor, &anchor_path, &rel, Check::Name);
    }

    /// Also watches what git reads as configuration or runs as hooks, inside the roots, for the
    /// git dirs `outside` the roots whose checkouts lie inside them (a linked worktree of a
    /// repository elsewhere: its hooks run from `core.hooksPath` in the checkout).
    pub fn watch_code_paths_of(&mut self, outside: &[PathBuf]) {
        let roots: Vec<PathBuf> = self.roots.iter().map(|(_, root)| root.clone()).collect();
        let (missing, existing) = code_paths(outside, &roots);
        for path in &missing {
            self.watch_appearing(path);
        }
        for path in &existing {
            self.watch_from_root(path);
        }
    }

    /// Watches `path` (inside a root) for being replaced — a file or link for being changed at
    /// all — from the root it lies in: a link on the way that changed is moved aside as well.
    fn watch_from_root(&mut self, path: &Path) {
        let Some((anchor, root)) = self
            .roots
            .iter()
            .find(|(_, root)| path.starts_with(root))
            .map(|(anchor, root)| (Arc::clone(anchor), root.clone()))
        else {
            return;
        };
        let Ok(rest) = path.strip_prefix(&root) else { return };
        let rel: Vec<&OsStr> = rest.components().map(|c| c.as_os_str()).collect();
        // A hooks directory changes whenever a hook in it does (the user's own `husky install`
        // during a call): replaced is what counts there.
        let check = match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.is_dir() => Check::Replaced,
            _ => Check::Unchanged,
        };
        if !rel.is_empty() {
            self.add(&anchor, &root, &rel, check);
        }
    }

    /// Also watches each path of `existing` (absolute, inside a writable root) for being
    /// replaced during the run ([`Check::Replaced`]): one that does not exist now is watched
    /// for appearing, as the `start_up` paths of [`Watch::before`] are.
    pub fn watch_replaced(&mut self, existing: &[PathBuf]) {
        for path in existing {
            let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else { continue };
            let Some(anchor) = self.anchor(parent) else { continue };
            self.add(&anchor, parent, &[name], Check::Replaced);
        }
    }

    /// Finds the repositories the command creates in `index` (kept current by the caller),
    /// among those that appeared or changed after `since`, instead of walking the roots.
    pub fn search_index(&mut self, index: Arc<crate::RepositoryIndex>, since: crate::Mark) {
        self.search = Search::Index { index, since };
    }

    /// The descriptors the watch holds open (the directories it reaches its names from).
    pub(crate) fn descriptors(&self) -> Vec<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        let watched = self.watched.iter().map(|w| w.anchor.as_raw_fd());
        let worktrees = self.worktrees.iter().map(|(fd, ..)| fd.as_raw_fd());
        let roots = self.roots.iter().map(|(fd, _)| fd.as_raw_fd());
        watched.chain(worktrees).chain(roots).collect()
    }

    /// How many git dirs are watched (each held open until [`Watch::move_aside`]).
    pub fn repositories(&self) -> usize {
        self.known.len()
    }

    /// The directory `dir` opened (never through a final link), once per watch; `None` when it
    /// is not a directory that can be opened.
    fn anchor(&mut self, dir: &Path) -> Option<Arc<OwnedFd>> {
        if let Some((_, anchor)) = self.anchors.iter().find(|(path, _)| path == dir) {
            return Some(Arc::clone(anchor));
        }
        let anchor = Arc::new(open_dir(None, dir.as_os_str())?);
        self.anchors.push((dir.to_path_buf(), Arc::clone(&anchor)));
        Some(anchor)
    }

    fn add(&mut self, anchor: &Arc<OwnedFd>, anchor_path: &Path, rel: &[&OsStr], check: Check) {
        let mut stamps = Vec::new();
        let mut path = anchor_path.to_path_buf();
        for name in rel {
            path.push(name);
            stamps.push((name.to_os_string(), stamp(&path)));
        }
        self.watched.push(Watched {
            anchor: Arc::clone(anchor),
            anchor_path: anchor_path.to_path_buf(),
            rel: stamps,
            check,
        });
    }

    /// Moves aside (renames to `NAME.cordon-planted-RANDOM` in its own directory; removes it
    /// when that fails) every watched name the command created or replaced, and what it
    /// planted in repositories it created; returns them, with the directories the search for
    /// new repositories had no allowance left for.
    pub fn move_aside(&self) -> AfterRun {
        let mut planted = Vec::new();
        let mut unsearched = Vec::new();
        for watched in &self.watched {
            if let Some(found) = watched.planted() {
                if !planted.iter().any(|p: &Planted| p.path == found.path) {
                    planted.push(found);
                }
            }
        }
        // A linked worktree added during the run: its own git dir is one the command made.
        // Its redirection goes (git then takes the directory for a repository of its own), and
        // so does whatever it holds that a repository the command created may not: a config, a
        // hook, a paused rebase — whether or not the walk finds its checkout.
        for (git_dir, path, existing) in &self.worktrees {
            let Some(worktrees) = open_dir(Some(git_dir), OsStr::new("worktrees")) else {
                continue;
            };
            for name in worktrees_in(&worktrees) {
                if existing.contains(&name) {
                    continue;
                }
                let Some(worktree) = open_dir(Some(&worktrees), &name) else { continue };
                let at = path.join("worktrees").join(&name);
                planted.extend(crate::new_repositories::planted(&worktree, &at));
                planted.extend(crate::new_modules::planted(&worktree, &at, &mut unsearched));
                // Hooks where `core.hooksPath` leads from its checkout, made with it.
                let top = crate::git_dirs::linked_worktree_top(&at);
                for hooks in
                    top.iter().flat_map(|top| crate::git_dirs::core_hooks_paths(path, top, None))
                {
                    planted.extend(self.move_aside_inside_root(&hooks));
                }
            }
        }
        // A repository the command created: what would run code in it later.
        if !self.roots.is_empty() {
            let roots: Vec<PathBuf> = self.roots.iter().map(|(_, path)| path.clone()).collect();
            let indexed = match &self.search {
                Search::Index { index, since } => index.changes_since(*since, &roots),
                Search::Walk => None,
            };
            let git_dirs = match indexed {
                Some(changes) => {
                    unsearched.extend(changes.unsearched);
                    let arrived = changes.arrived.iter().map(|file| (file, Written::Arrived));
                    let known = changes
                        .tool_files
                        .iter()
                        .filter(|file| !changes.arrived.contains(file))
                        .map(|file| (file, Written::ByChangeTime));
                    for (file, written) in arrived.chain(known) {
                        match self.judge_file(file, written) {
                            Some(Judged::Planted(found)) => planted.push(found),
                            Some(Judged::NotLookedAt) => unsearched.push(file.clone()),
                            None => {}
                        }
                    }
                    changes.git_dirs
                }
                None => {
                    let walk = crate::repositories::RepositoryWalk::of(&roots);
                    unsearched.extend(walk.unsearched());
                    walk.git_dirs()
                }
            };
            for named in git_dirs {
                // Where it really is: a `.git` pointer may name it through a link, `..` or
                // /proc/self/cwd, and the place is what the command could have written. One
                // that cannot be reached (a directory on the way made unreadable) is said to be
                // not looked at.
                let git_dir = match std::fs::canonicalize(&named) {
                    Ok(git_dir) => git_dir,
                    Err(error) if error.kind() == std::io::ErrorKind::PermissionDenied => {
                        unsearched.push(named);
                        continue;
                    }
                    Err(_) => continue,
                };
                if !roots.iter().any(|root| git_dir.starts_with(root)) {
                    continue;
                }
                let Some(dir) = self.open_inside_root(&git_dir) else {
                    // Inside a root but not reachable without a link: not looked at.
                    unsearched.push(git_dir);
                    continue;
                };
                if self.was_known(&git_dir, &dir) {
                    continue;
                }
                planted.extend(crate::new_repositories::planted(&dir, &git_dir));
                planted.extend(crate::new_modules::planted(&dir, &git_dir, &mut unsearched));
                // Its linked worktrees' own git dirs, made by the command as well.
                let Some(worktrees) = open_dir(Some(&dir), OsStr::new("worktrees")) else {
                    continue;
                };
                for name in worktrees_in(&worktrees) {
                    let at = git_dir.join("worktrees").join(&name);
                    let Some(worktree) = open_dir(Some(&worktrees), &name) else { continue };
                    planted.extend(crate::new_repositories::planted(&worktree, &at));
                    planted.extend(crate::new_modules::planted(&worktree, &at, &mut unsearched));
                }
            }
        }
        // A `modules/` the command added to a git dir or a linked worktree's: submodule git
        // dirs there are reused by the user's next `git submodule update`, checkout or not.
        for path in &self.without_modules {
            let Some(dir) = self.open_inside_root(path) else { continue };
            planted.extend(crate::new_modules::planted(&dir, path, &mut unsearched));
        }
        AfterRun { planted, unsearched }
    }

    /// A FIFO, or a file a tool loads from a directory and its parents, written while the
    /// watch ran: moved aside, as the write gate holds it. Writing directly, the command wrote
    /// the repository's index too, so whether git tracks the file says nothing (and asking
    /// git there would run what the command configured): every such file is moved aside.
    fn judge_file(&self, path: &Path, written: Written) -> Option<Judged> {
        let (parent, name) = (path.parent()?, path.file_name()?);
        let Some(dir) = self.open_inside_root(parent) else {
            // Not reachable without a link, or a directory on the way made unreadable: what
            // cannot be looked at is said to be so (the command may hand it back later).
            return crate::owner_read::exists_as_owner(path).then_some(Judged::NotLookedAt);
        };
        let st = match nix::sys::stat::fstatat(&dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(st) => Some(st),
            // Its directory's search permission taken away: moved aside unseen (the move gives
            // the owner's permission back for the moment).
            Err(nix::errno::Errno::EACCES) => None,
            Err(_) => return None,
        };
        if let Some(st) = st {
            let fifo = st.st_mode & libc::S_IFMT == libc::S_IFIFO;
            if !fifo && cordon_policies::tool_loading(path).is_none() {
                return None;
            }
            // The file system's clock is coarse: a second's margin.
            if written == Written::ByChangeTime && st.st_ctime < self.started.saturating_sub(1) {
                return None;
            }
        }
        Some(Judged::Planted(move_away(&dir, name, path)))
    }

    /// Whether the git dir `dir` (opened, at its real place `path`) existed there before the
    /// run: the same directory under the same name. Another directory under a known name is
    /// new: the command can rename away a git dir whose files are not bound read-only (one
    /// still empty) and make its own in its place. So is a known one moved elsewhere: only one
    /// with nothing bound in it can be moved, and at its new place (a new checkout's `.git`)
    /// whatever it holds was put there by the command. By name only for one that could not be
    /// opened before.
    fn was_known(&self, path: &Path, dir: &OwnedFd) -> bool {
        let now = identity(dir);
        self.known
            .iter()
            .any(|(known, before)| known == path && before.is_none_or(|before| now == Some(before)))
    }

    /// Moves aside `path` (inside one of the roots, reached without following a link), when
    /// it exists.
    fn move_aside_inside_root(&self, path: &Path) -> Option<Planted> {
        let (parent, name) = (path.parent()?, path.file_name()?);
        let dir = self.open_inside_root(parent)?;
        nix::sys::stat::fstatat(&dir, name, AtFlags::AT_SYMLINK_NOFOLLOW).ok()?;
        Some(move_away(&dir, name, path))
    }

    /// `path`, a directory inside one of the roots, opened one component at a time from the
    /// root opened before the run, never through a symbolic link.
    fn open_inside_root(&self, path: &Path) -> Option<OwnedFd> {
        let (anchor, root) = self.roots.iter().find(|(_, root)| path.starts_with(root))?;
        let rest = path.strip_prefix(root).ok()?;
        let mut dir = open_dir(Some(anchor), OsStr::new("."))?;
        for component in rest.components() {
            dir = open_dir(Some(&dir), component.as_os_str())?;
        }
        Some(dir)
    }
}

impl Watched {
    /// Walks from the anchor to the name without following links; moves aside the first
    /// component that is new or changed (a link or directory planted on the way, or the name
    /// itself), or a todo list that gained `exec` lines.
    fn planted(&self) -> Option<Planted> {
        let mut dir: Arc<OwnedFd> = Arc::clone(&self.anchor);
        let mut path = self.anchor_path.clone();
        let last = self.rel.len().checked_sub(1)?;
        for (i, (name, before)) in self.rel.iter().enumerate() {
            path.push(name);
            let st = nix::sys::stat::fstatat(&*dir, name.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW)
                .ok()?;
            let now = stamp_of(&st);
            let changed = before.is_none_or(|before| before != now);
            if i == last {
                let replaced = before.is_some_and(|before| before.0 != now.0);
                let file = st.st_mode & libc::S_IFMT == libc::S_IFREG;
                let planted = match &self.check {
                    Check::Name => before.is_none(),
                    // A file written in place (its change time: a write, or a second name
                    // given to it, which would stay writable where the bind covers this one)
                    // when no bind kept it, too.
                    Check::Bound => before.is_none() || if file { changed } else { replaced },
                    Check::Replaced => before.is_none() || replaced,
                    Check::Unchanged => changed,
                    // Changed at all (its inode reused, or written in place from outside):
                    // judged by what it gained.
                    Check::Config(text) => {
                        before.is_none() || (changed && config_gained_code(text, &dir, name))
                    }
                    Check::Commands(before) => match exec_commands(&path) {
                        Err(()) => true,
                        Ok(None) => false,
                        Ok(Some(now)) => now.iter().any(|command| {
                            before.as_ref().is_none_or(|before| !before.contains(command))
                        }),
                    },
                };
                return planted.then(|| move_away(&dir, name, &path));
            }
            let is_link = st.st_mode & libc::S_IFMT == libc::S_IFLNK;
            if is_link && changed {
                // A link planted on the way: git would follow it.
                return Some(move_away(&dir, name, &path));
            }
            // An unchanged link of the user's own is not followed (nothing planted behind it
            // can be reached without following it): the walk ends there.
            dir = Arc::new(open_dir(Some(&dir), name)?);
        }
        None
    }
}

/// What the configs of `git_dirs` include and where their hooks run (from each checkout's top,
/// linked worktrees' too), inside `roots`: those missing now, and those that exist.
fn code_paths(git_dirs: &[PathBuf], roots: &[PathBuf]) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (mut missing, mut existing) = (Vec::new(), Vec::new());
    for git_dir in git_dirs {
        let mut tops: Vec<PathBuf> = crate::git_dirs::hooks_top(git_dir).into_iter().collect();
        tops.extend(linked_worktrees(git_dir).iter().filter_map(|name| {
            crate::git_dirs::linked_worktree_top(&git_dir.join("worktrees").join(name))
        }));
        let hooks =
            tops.iter().flat_map(|top| crate::git_dirs::core_hooks_paths(git_dir, top, None));
        for path in crate::git_dirs::config_includes(git_dir, None).into_iter().chain(hooks) {
            if !roots.iter().any(|root| path.starts_with(root)) {
                continue;
            }
            if std::fs::symlink_metadata(&path).is_err() {
                missing.push(path);
            } else {
                existing.push(path);
            }
        }
    }
    (missing, existing)
}

fn identity(dir: &OwnedFd) -> Option<Identity> {
    #[allow(clippy::useless_conversion)]
    nix::sys::stat::fstat(dir).ok().map(|st| (u64::from(st.st_dev), u64::from(st.st_ino)))
}

fn stamp(path: &Path) -> Option<Stamp> {
    nix::sys::stat::lstat(path).ok().map(|st| stamp_of(&st))
}

#[allow(clippy::useless_conversion)]
fn stamp_of(st: &nix::sys::stat::FileStat) -> Stamp {
    (u64::from(st.st_ino), st.st_ctime, st.st_ctime_nsec)
}

/// The linked worktrees a git dir's `worktrees/` holds (directories, not links to them), as
/// its owner when the command made it unreadable ([`crate::owner_read`]). The same listing
/// before and after a run, so that one unreadable before is not taken as all new after.
fn linked_worktrees(git_dir: &Path) -> Vec<OsString> {
    open_dir(None, git_dir.join("worktrees").as_os_str())
        .map(|worktrees| worktrees_in(&worktrees))
        .unwrap_or_default()
}

/// The directories in `worktrees`, an opened `worktrees/` of a git dir (see
/// [`linked_worktrees`]).
fn worktrees_in(worktrees: &OwnedFd) -> Vec<OsString> {
    crate::owner_read::entries_as_owner(worktrees)
        .unwrap_or_default()
        .into_iter()
        .filter(|(_, kind)| *kind == Some(rustix::fs::FileType::Directory))
        .map(|(name, _)| name)
        .collect()
}

/// Whether the config `name` in `dir` gained, over `before`, a line that may run code; one that
/// is there but cannot be read as a small regular file of text counts.
fn config_gained_code(before: &Option<String>, dir: &OwnedFd, name: &OsStr) -> bool {
    match crate::new_repositories::config_at(dir, name) {
        Ok(Some(now)) => {
            cordon_policies::git_config_gained_code(before.as_deref().unwrap_or_default(), &now)
        }
        Ok(None) => false,
        Err(()) => true,
    }
}

/// `prefix`, then `names`: the components from a git dir to one of its files.
fn joined<'a>(prefix: &[&'a OsStr], names: &[&'static str]) -> Vec<&'a OsStr> {
    prefix.iter().copied().chain(names.iter().map(|name| OsStr::new(*name))).collect()
}

/// The command lines of a rebase todo list (`exec`/`x`, then a space or a tab, as git reads
/// them); `Ok(None)` when there is none, `Err` when it is there but not as a small regular file
/// (git would still follow a link or read a huge file).
fn exec_commands(todo: &Path) -> Result<Option<Vec<String>>, ()> {
    let text = cordon_policies::read_start_file(todo, 16 * 1024 * 1024).map_err(|_| ())?;
    Ok(text.map(|text| {
        String::from_utf8_lossy(&text)
            .lines()
            .filter(|line| matches!(line.split_whitespace().next(), Some("exec" | "x")))
            .map(|line| line.trim().to_owned())
            .collect()
    }))
}

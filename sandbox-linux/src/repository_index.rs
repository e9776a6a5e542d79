//! The repositories of a long-lived server's writable roots, kept current by inotify.
//!
//! An executor or MCP server runs many commands in the same roots. Searching them before and
//! after every call costs as much as the workspace is large, and a bounded search gives up
//! where the workspace is larger than its bound. The index reads the roots once, with the same
//! rules as [`crate::find_repositories`] (never into a git dir, `node_modules` or a marked
//! build `target/`; a link from where the user works into those is followed once), and from
//! then on follows what changes: each directory it reads has an inotify watch, and an event
//! in it — an entry created, deleted or renamed, a `.git` pointer rewritten — updates that
//! directory alone. A directory that appears is read when its event arrives, and its new
//! repositories are marked as changed at that moment.
//!
//! So a call costs what changed since the last one: [`RepositoryIndex::walk_for`] gives the
//! repositories for the mount view and a mark; [`RepositoryIndex::changed_git_dirs`] gives the
//! git dirs of the repositories that appeared or changed since a mark — what the check after a
//! call looks at. When the kernel's event queue overflows, the index reads everything again
//! and takes every repository for changed. When it cannot watch every directory (the
//! machine's `fs.inotify.max_user_watches`), it says so once and its callers search as before.
//!
//! Paths are as the events give them: a directory swapped for a link between an event and its
//! reading is not followed (the reading opens without following links, and a watch is added
//! with `IN_DONT_FOLLOW`), and what the index reports is opened again, without following links,
//! by whoever acts on it.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::ffi::OsStr;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use nix::errno::Errno;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};
use rustix::fs::FileType;

use crate::repositories::{Looked, Repositories, RepositoryWalk};

/// A point in the index's history (see [`RepositoryIndex::changed_git_dirs`]).
pub type Mark = u64;

/// What changed in some roots after a mark.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// The git dirs of the repositories that appeared or changed (as pointer files name them).
    pub git_dirs: Vec<PathBuf>,
    /// Files a tool loads from a directory and its parents, and FIFOs, written or made (all of
    /// them after the kernel's queue overflowed: the caller judges by their change time).
    pub files: Vec<PathBuf>,
    /// Directories the index could not watch: searched instead.
    pub unsearched: Vec<PathBuf>,
}

/// Why the index cannot stand in for a search.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexUnusable {
    #[error("no inotify instance could be made: {0}")]
    NoInstance(Errno),
    #[error(
        "the roots hold more directories than this machine lets one user watch \
         (fs.inotify.max_user_watches)"
    )]
    WatchLimit,
    #[error("a writable root could not be watched: {path}: {errno}")]
    Root { path: PathBuf, errno: Errno },
}

/// The events a watched directory reports: its entries appearing, going and being rewritten.
fn mask() -> AddWatchFlags {
    AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_MOVED_FROM
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_CLOSE_WRITE
        | AddWatchFlags::IN_MOVE_SELF
        | AddWatchFlags::IN_DELETE_SELF
        | AddWatchFlags::IN_ONLYDIR
        | AddWatchFlags::IN_DONT_FOLLOW
}

/// Names whose coming, going or rewriting changes what a directory is to git.
const SHAPE: [&str; 6] = [".git", "HEAD", "objects", "refs", "commondir", "CACHEDIR.TAG"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A working tree: it holds a `.git`.
    Worktree,
    /// Shaped as a git dir itself.
    Bare,
}

#[derive(Debug, Clone, Copy)]
struct Repo {
    kind: Kind,
    /// When it appeared or last changed.
    changed: Mark,
}

#[derive(Debug)]
struct Watched {
    wd: WatchDescriptor,
    /// Which root it lies in.
    root: usize,
    /// Its subdirectories are not read (a marked build `target/`).
    cache: bool,
}

#[derive(Debug)]
struct State {
    inotify: Inotify,
    roots: Vec<PathBuf>,
    by_wd: HashMap<WatchDescriptor, PathBuf>,
    dirs: BTreeMap<PathBuf, Watched>,
    repos: BTreeMap<PathBuf, Repo>,
    /// Directories the caller owns but could not watch or read: a search goes there instead.
    unsearched: BTreeSet<PathBuf>,
    /// Directories read because a link leads there from where the user works.
    linked: HashSet<PathBuf>,
    /// Files written or made since the first reading that a tool loads from a directory and
    /// its parents (`rust-toolchain.toml`, `.cargo/config.toml`, …), and FIFOs: when.
    files: BTreeMap<PathBuf, Mark>,
    /// The first reading is under way: what it finds existed before any call.
    first_reading: bool,
    /// Roots that are caches cordon made (nobody runs git there): not read.
    skipped_roots: Vec<usize>,
    clock: Mark,
    unusable: Option<IndexUnusable>,
}

/// The repositories of a fixed set of writable roots, kept current (see the module's docs).
#[derive(Debug)]
pub struct RepositoryIndex {
    state: Mutex<State>,
}

impl RepositoryIndex {
    /// Reads `roots` (canonical directories) and watches them; an error when the machine
    /// cannot watch them all.
    pub fn new(roots: &[PathBuf]) -> Result<RepositoryIndex, IndexUnusable> {
        let inotify = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)
            .map_err(IndexUnusable::NoInstance)?;
        let skipped_roots = (0..roots.len())
            .filter(|&i| crate::repositories::presets_cache(&roots[i], roots))
            .collect();
        let mut state = State {
            inotify,
            roots: roots.to_vec(),
            by_wd: HashMap::new(),
            dirs: BTreeMap::new(),
            repos: BTreeMap::new(),
            unsearched: BTreeSet::new(),
            linked: HashSet::new(),
            files: BTreeMap::new(),
            first_reading: true,
            skipped_roots,
            clock: 0,
            unusable: None,
        };
        state.read_all_apart();
        state.first_reading = false;
        match state.unusable.take() {
            Some(why) => Err(why),
            None => Ok(RepositoryIndex { state: Mutex::new(state) }),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The inotify descriptor, for a caller that wants [`RepositoryIndex::catch_up`] called
    /// whenever events wait (so the kernel's queue does not overflow between calls).
    pub fn descriptor(&self) -> std::io::Result<OwnedFd> {
        self.state().inotify.as_fd().try_clone_to_owned()
    }

    /// Takes in every event that waits.
    pub fn catch_up(&self) {
        self.state().catch_up();
    }

    /// The repositories of `roots` as they are now, and a mark for
    /// [`RepositoryIndex::changed_git_dirs`]; `None` when a root is not one of the index's or
    /// the index became unusable (then search).
    pub fn walk_for(&self, roots: &[PathBuf]) -> Option<(RepositoryWalk, Mark)> {
        let mut state = self.state();
        state.catch_up();
        if state.unusable.is_some() {
            return None;
        }
        let mut found = Vec::new();
        for root in roots {
            let i = state.roots.iter().position(|known| known == root)?;
            found.push((root.clone(), state.repositories_of(i)));
        }
        let mark = state.clock;
        Some((RepositoryWalk::from_roots(found), mark))
    }

    /// What changed in `roots` after `since` (see [`Changes`]); `None` when the index cannot
    /// say (then search).
    pub fn changes_since(&self, since: Mark, roots: &[PathBuf]) -> Option<Changes> {
        let mut state = self.state();
        state.catch_up();
        if state.unusable.is_some() {
            return None;
        }
        let indices: Vec<usize> = roots
            .iter()
            .map(|root| state.roots.iter().position(|known| known == root))
            .collect::<Option<_>>()?;
        let inside = |path: &Path| indices.iter().any(|&i| path.starts_with(&state.roots[i]));
        let mut changes = Changes::default();
        for (path, repo) in &state.repos {
            if repo.changed <= since || !inside(path) {
                continue;
            }
            match repo.kind {
                Kind::Bare => changes.git_dirs.push(path.clone()),
                Kind::Worktree => changes.git_dirs.extend(crate::git_dirs::git_dirs(path).dirs),
            }
        }
        changes.git_dirs.sort();
        changes.git_dirs.dedup();
        changes.files = state
            .files
            .iter()
            .filter(|(path, changed)| **changed > since && inside(path))
            .map(|(path, _)| path.clone())
            .collect();
        changes.unsearched = state.unsearched.iter().filter(|dir| inside(dir)).cloned().collect();
        Some(changes)
    }

    /// How many directories are watched (for benchmarks and `-v`).
    pub fn watched(&self) -> usize {
        self.state().dirs.len()
    }
}

impl State {
    /// [`State::read_all`] on a thread of its own, which ends before this returns: what the
    /// reading allocates lies in that thread's own allocator arena, apart from the memory this
    /// process's one thread keeps using. A server that forks for every call (the helper's
    /// child) then does not copy the index's pages each time the child allocates.
    fn read_all_apart(&mut self) {
        let apart = std::thread::scope(|scope| {
            std::thread::Builder::new().spawn_scoped(scope, || self.read_all()).map(|t| t.join())
        });
        if apart.is_err() {
            self.read_all();
        }
        // The thread is joined, but the kernel may list it for a moment longer: a caller that
        // forks only when this process has one thread would not, for that moment.
        for _ in 0..100 {
            if crate::sys::single_threaded() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
    }

    /// Reads every root again: the first reading, and after the queue overflowed (every
    /// repository then counts as changed). Watches of directories gone are removed.
    fn read_all(&mut self) {
        self.clock += 1;
        let before: Vec<WatchDescriptor> = self.by_wd.keys().copied().collect();
        self.by_wd.clear();
        self.dirs.clear();
        self.repos.clear();
        self.unsearched.clear();
        self.linked.clear();
        self.files.clear();
        for i in 0..self.roots.len() {
            if self.skipped_roots.contains(&i) {
                continue;
            }
            let root = self.roots[i].clone();
            // The root's own repository, whatever the reading finds below.
            if std::fs::symlink_metadata(root.join(".git")).is_ok() {
                self.repos.insert(root.clone(), Repo { kind: Kind::Worktree, changed: self.clock });
            }
            if let Err(errno) = self.inotify.add_watch(&root, mask()) {
                self.unusable = Some(match errno {
                    Errno::ENOSPC => IndexUnusable::WatchLimit,
                    errno => IndexUnusable::Root { path: root, errno },
                });
                return;
            }
            self.read_tree(root, i);
            if self.unusable.is_some() {
                return;
            }
        }
        for wd in before {
            if !self.by_wd.contains_key(&wd) {
                let _ = self.inotify.rm_watch(wd);
            }
        }
    }

    /// Watches and reads `top` (in root `root`) and every directory below it that the search
    /// would enter; repositories found count as changed now.
    fn read_tree(&mut self, top: PathBuf, root: usize) {
        let mut queue = std::collections::VecDeque::from([top]);
        while let Some(dir) = queue.pop_front() {
            let wd = match self.inotify.add_watch(&dir, mask()) {
                Ok(wd) => wd,
                Err(Errno::ENOSPC) => {
                    self.unusable = Some(IndexUnusable::WatchLimit);
                    return;
                }
                // Gone, or a link or file now: nothing to follow there.
                Err(Errno::ENOENT | Errno::ENOTDIR | Errno::ELOOP) => continue,
                Err(Errno::EACCES) => {
                    // Not readable: git still reaches what its owner made unreadable, so that
                    // one is searched instead.
                    if crate::repositories::owned_by_caller(&dir) {
                        self.unsearched.insert(dir);
                    }
                    continue;
                }
                // Too long a path, or the kernel short of memory: searched instead.
                Err(_) => {
                    self.unsearched.insert(dir);
                    continue;
                }
            };
            let looked = match crate::repositories::list(&dir) {
                Some(entries) => {
                    if !self.first_reading {
                        for (name, kind) in &entries {
                            self.note_file(&dir, name, *kind);
                        }
                    }
                    Looked::from_listing(&dir, entries)
                }
                None => {
                    if crate::repositories::owned_by_caller(&dir) {
                        self.unsearched.insert(dir.clone());
                    }
                    Looked::by_name(&dir)
                }
            };
            self.by_wd.insert(wd, dir.clone());
            self.note_shape(&dir, &looked);
            let root_path = &self.roots[root];
            let cache = looked.cache && crate::repositories::cache_skipped(root_path, &dir);
            self.dirs.insert(dir.clone(), Watched { wd, root, cache });
            if cache {
                continue;
            }
            queue.extend(looked.children);
            for link in looked.links {
                if let Some(target) = self.linked_target(&link, root) {
                    queue.push_back(target);
                }
            }
        }
    }

    /// Where the link `link` leads, when that is a directory inside root `root` that the
    /// reading skips and that was not read through a link before.
    fn linked_target(&mut self, link: &Path, root: usize) -> Option<PathBuf> {
        let target = std::fs::canonicalize(link).ok()?;
        let root_path = &self.roots[root];
        (target.starts_with(root_path)
            && target.is_dir()
            && crate::repositories::inside_skipped(root_path, &target)
            && !self.dirs.contains_key(&target)
            && self.linked.insert(target.clone()))
        .then_some(target)
    }

    /// Records what `dir` is to git, as `looked` says: a change of kind is a change now.
    fn note_shape(&mut self, dir: &Path, looked: &Looked) {
        let kind = if looked.bare {
            Some(Kind::Bare)
        } else if looked.dot_git {
            Some(Kind::Worktree)
        } else {
            None
        };
        match kind {
            Some(kind) => {
                let repo = Repo { kind, changed: self.clock };
                self.repos.insert(dir.to_path_buf(), repo);
            }
            None => {
                self.repos.remove(dir);
            }
        }
    }

    /// Takes in every waiting event; reads everything again after an overflow.
    fn catch_up(&mut self) {
        if self.unusable.is_some() {
            return;
        }
        let mut overflowed = false;
        loop {
            let events = match self.inotify.read_events() {
                Ok(events) => events,
                Err(Errno::EINTR) => continue,
                // EAGAIN: nothing more waits. Anything else: nothing can be read.
                Err(_) => break,
            };
            if events.is_empty() {
                break;
            }
            self.clock += 1;
            for event in events {
                if event.mask.contains(AddWatchFlags::IN_Q_OVERFLOW) {
                    overflowed = true;
                }
                if overflowed {
                    continue;
                }
                self.take(event.wd, event.mask, event.name.as_deref());
            }
        }
        if overflowed {
            self.read_all_apart();
        }
    }

    /// One event of the directory watched as `wd`.
    fn take(&mut self, wd: WatchDescriptor, mask: AddWatchFlags, name: Option<&OsStr>) {
        if mask.contains(AddWatchFlags::IN_IGNORED) {
            // The watch is gone (its directory deleted, or removed here): so is the directory.
            if let Some(dir) = self.by_wd.remove(&wd) {
                if self.dirs.get(&dir).is_some_and(|watched| watched.wd == wd) {
                    self.forget_tree(&dir);
                }
            }
            return;
        }
        let Some(dir) = self.by_wd.get(&wd).cloned() else { return };
        let Some(name) = name else {
            // The directory itself moved or went: a root that did cannot be followed.
            let is_root = self.roots.contains(&dir);
            if is_root
                && mask.intersects(AddWatchFlags::IN_MOVE_SELF | AddWatchFlags::IN_DELETE_SELF)
            {
                self.unusable = Some(IndexUnusable::Root { path: dir, errno: Errno::ENOENT });
            }
            return;
        };
        let Some(watched) = self.dirs.get(&dir) else { return };
        let (root, cache) = (watched.root, watched.cache);
        let child = dir.join(name);
        let arrived = mask.intersects(AddWatchFlags::IN_CREATE | AddWatchFlags::IN_MOVED_TO);
        let left = mask.intersects(AddWatchFlags::IN_DELETE | AddWatchFlags::IN_MOVED_FROM);
        if mask.contains(AddWatchFlags::IN_ISDIR) {
            if left {
                self.forget_tree(&child);
            } else if arrived && !cache && !skipped_name(name) {
                self.read_tree(child, root);
            }
        } else if arrived && !cache {
            let kind = rustix::fs::lstat(&child).ok().map(|st| FileType::from_raw_mode(st.st_mode));
            // A link from where the user works into what the reading skips.
            if kind == Some(FileType::Symlink) {
                if let Some(target) = self.linked_target(&child, root) {
                    self.read_tree(target, root);
                }
            }
            self.note_file(&dir, name, kind);
        } else if mask.contains(AddWatchFlags::IN_CLOSE_WRITE) && !cache {
            self.note_file(&dir, name, Some(FileType::RegularFile));
        }
        if SHAPE.iter().any(|shape| name == *shape) {
            self.look_again(&dir, root);
        }
    }

    /// `dir` after a change to one of the names that make it a repository or a cache.
    fn look_again(&mut self, dir: &Path, root: usize) {
        let looked = match crate::repositories::list(dir) {
            Some(entries) => Looked::from_listing(dir, entries),
            None => Looked::by_name(dir),
        };
        self.note_shape(dir, &looked);
        let cache = looked.cache && crate::repositories::cache_skipped(&self.roots[root], dir);
        let Some(watched) = self.dirs.get_mut(dir) else { return };
        if watched.cache == cache {
            return;
        }
        watched.cache = cache;
        if cache {
            // Marked as a build's cache now: what lies below is no longer followed.
            let below: Vec<PathBuf> = self
                .dirs
                .range(dir.to_path_buf()..)
                .skip(1)
                .take_while(|(path, _)| path.starts_with(dir))
                .filter(|(path, _)| path.parent() == Some(dir))
                .map(|(path, _)| path.clone())
                .collect();
            for child in below {
                self.forget_tree(&child);
            }
        } else {
            for child in looked.children {
                if !self.dirs.contains_key(&child) {
                    self.read_tree(child, root);
                }
            }
        }
    }

    /// Stops following `top` and everything below it (deleted, or renamed: a renamed tree is
    /// read again at its new name when that event comes).
    fn forget_tree(&mut self, top: &Path) {
        let gone: Vec<PathBuf> = self
            .dirs
            .range(top.to_path_buf()..)
            .take_while(|(path, _)| path.starts_with(top))
            .map(|(path, _)| path.clone())
            .collect();
        for path in gone {
            if let Some(watched) = self.dirs.remove(&path) {
                if self.by_wd.remove(&watched.wd).is_some() {
                    let _ = self.inotify.rm_watch(watched.wd);
                }
            }
            self.repos.remove(&path);
            self.unsearched.remove(&path);
            self.linked.remove(&path);
            let files: Vec<PathBuf> = self
                .files
                .range(path.clone()..)
                .take_while(|(file, _)| file.starts_with(&path))
                .filter(|(file, _)| file.parent() == Some(path.as_path()))
                .map(|(file, _)| file.clone())
                .collect();
            for file in files {
                self.files.remove(&file);
            }
        }
    }

    /// Notes `dir`'s entry `name` (of `kind`, when known) as written now when a tool loads it
    /// from a directory and its parents, or it is a FIFO.
    fn note_file(&mut self, dir: &Path, name: &OsStr, kind: Option<FileType>) {
        let fifo = kind == Some(FileType::Fifo);
        if !fifo && !cordon_policies::tool_loading_name(name) {
            return;
        }
        let path = dir.join(name);
        if fifo || cordon_policies::tool_loading(&path).is_some() {
            self.files.insert(path, self.clock);
        }
    }

    /// What the index knows of root `i`, shaped as a search's finding.
    fn repositories_of(&self, i: usize) -> Repositories {
        let root = &self.roots[i];
        let mut found = Repositories::default();
        if self.skipped_roots.contains(&i) {
            return found;
        }
        for (path, repo) in
            self.repos.range(root.clone()..).take_while(|(p, _)| p.starts_with(root))
        {
            match repo.kind {
                Kind::Worktree => found.worktrees.push(path.clone()),
                Kind::Bare => found.bare.push(path.clone()),
            }
        }
        found.unsearched = self
            .unsearched
            .range(root.clone()..)
            .take_while(|p| p.starts_with(root))
            .cloned()
            .collect();
        found
    }
}

/// Directory names never read (as the search skips them).
fn skipped_name(name: &OsStr) -> bool {
    crate::repositories::SKIPPED.iter().any(|skipped| name == *skipped)
}

#[cfg(test)]
#[path = "repository_index_tests.rs"]
mod tests;

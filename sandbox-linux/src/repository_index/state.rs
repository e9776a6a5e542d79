//! The index's state and how each event changes it.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::sys::inotify::{AddWatchFlags, Inotify, WatchDescriptor};
use rustix::fs::FileType;

use super::{Changes, IndexUnusable, Mark, SHAPE, mask};
use crate::repositories::{Looked, Repositories};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A working tree: it holds a `.git`.
    Worktree,
    /// Shaped as a git dir itself.
    Bare,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Repo {
    pub(super) kind: Kind,
    /// When it appeared or last changed.
    pub(super) changed: Mark,
}

#[derive(Debug)]
pub(super) struct Watched {
    wd: WatchDescriptor,
    /// Which root it lies in.
    root: usize,
    /// Its subdirectories are not read (a marked build `target/`).
    cache: bool,
}

#[derive(Debug)]
pub(super) struct State {
    pub(super) inotify: Inotify,
    pub(super) roots: Vec<PathBuf>,
    by_wd: HashMap<WatchDescriptor, PathBuf>,
    pub(super) dirs: BTreeMap<PathBuf, Watched>,
    repos: BTreeMap<PathBuf, Repo>,
    /// Directories that could not be watched or read: a search goes there instead, and the
    /// index tries them again at each call.
    unsearched: BTreeSet<PathBuf>,
    /// Directories read because a link leads there from where the user works.
    linked: HashSet<PathBuf>,
    /// Files a tool loads from a directory and its parents, and FIFOs, that were made or moved
    /// in since the first reading: when.
    arrived: BTreeMap<PathBuf, Mark>,
    /// Every file a tool loads from a directory and its parents in the directories read.
    tool_files: BTreeSet<PathBuf>,
    /// Symbolic links from where the user works into what the reading skips, or leading
    /// nowhere yet: where they lead is looked at again at each call.
    links: BTreeMap<PathBuf, usize>,
    /// Directories whose entries came, went or were swapped in the events being taken in: read
    /// again once all of them are in (a swap's events name both sides before either is read).
    moved: BTreeMap<PathBuf, usize>,
    /// The first reading is under way: what it finds existed before any call.
    pub(super) first_reading: bool,
    /// Roots that are caches cordon made (nobody runs git there): not read.
    skipped_roots: Vec<usize>,
    pub(super) clock: Mark,
    pub(super) unusable: Option<IndexUnusable>,
}

impl State {
    pub(super) fn new(inotify: Inotify, roots: Vec<PathBuf>, skipped_roots: Vec<usize>) -> State {
        State {
            inotify,
            roots,
            by_wd: HashMap::new(),
            dirs: BTreeMap::new(),
            repos: BTreeMap::new(),
            unsearched: BTreeSet::new(),
            linked: HashSet::new(),
            arrived: BTreeMap::new(),
            tool_files: BTreeSet::new(),
            links: BTreeMap::new(),
            moved: BTreeMap::new(),
            first_reading: true,
            skipped_roots,
            clock: 0,
            unusable: None,
        }
    }

    /// [`State::read_all`] on a thread of its own, which ends before this returns: what the
    /// reading allocates lies in that thread's own allocator arena, apart from the memory this
    /// process's one thread keeps using. A server that forks for every call (the helper's
    /// child) then does not copy the index's pages each time the child allocates.
    pub(super) fn read_all_apart(&mut self) {
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
        self.links.clear();
        self.moved.clear();
        self.tool_files.clear();
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
                // Out of watches at the first reading: the index cannot stand in for a search.
                Err(Errno::ENOSPC) if self.first_reading => {
                    self.unusable = Some(IndexUnusable::WatchLimit);
                    return;
                }
                // Gone, or a link or file now: nothing to follow there.
                Err(Errno::ENOENT | Errno::ENOTDIR | Errno::ELOOP) => continue,
                // Another user's private directory (`/tmp/systemd-private-…`): the command,
                // running as this user, cannot write there either.
                Err(Errno::EACCES) if !could_be_the_commands(&dir) => continue,
                // Not readable now (a mode the command may set and take back), out of watches
                // later (a command can spend them), too long a path: searched instead, and
                // tried again at each call.
                Err(_) => {
                    self.unsearched.insert(dir);
                    continue;
                }
            };
            let looked = match crate::repositories::list(&dir) {
                Some(entries) => {
                    for (name, kind) in &entries {
                        self.note_file(&dir, name, *kind);
                    }
                    Looked::from_listing(&dir, entries)
                }
                None => {
                    if could_be_the_commands(&dir) {
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
                if let Some(target) = self.follow_link(link, root) {
                    queue.push_back(target);
                }
            }
        }
    }

    /// Where the link `link` (in root `root`) leads, when that is a directory inside the root
    /// that the reading skips and has not read: to be read. A link that leads there, or nowhere
    /// yet, is remembered and looked at again at each call.
    fn follow_link(&mut self, link: PathBuf, root: usize) -> Option<PathBuf> {
        // Past the links remembered, one more is not even resolved: its directory is searched.
        if self.links.len() >= MAX_LINKS && !self.links.contains_key(&link) {
            if let Some(dir) = link.parent() {
                self.unsearched.insert(dir.to_path_buf());
            }
            return None;
        }
        let root_path = &self.roots[root];
        let Ok(target) = std::fs::canonicalize(&link) else {
            self.remember_link(link, root);
            return None;
        };
        if !target.starts_with(root_path)
            || !crate::repositories::inside_skipped(root_path, &target)
        {
            return None;
        }
        self.remember_link(link, root);
        (target.is_dir() && !self.dirs.contains_key(&target) && self.linked.insert(target.clone()))
            .then_some(target)
    }

    /// Remembers `link` to be looked at again at each call; past [`MAX_LINKS`], the directory
    /// holding it is searched at each call instead (a command can make links by the thousand).
    fn remember_link(&mut self, link: PathBuf, root: usize) {
        if self.links.len() < MAX_LINKS || self.links.contains_key(&link) {
            self.links.insert(link, root);
        } else if let Some(dir) = link.parent() {
            self.unsearched.insert(dir.to_path_buf());
        }
    }

    /// At a call: links remembered that now lead to a directory not read, directories that could
    /// not be watched before, and the moved ones not read yet.
    pub(super) fn look_again_at_what_may_have_come(&mut self) {
        // What is found now was found after the marks handed out so far.
        self.clock += 1;
        let links: Vec<(PathBuf, usize)> =
            self.links.iter().map(|(link, root)| (link.clone(), *root)).collect();
        // A target read through a link and forgotten since (deleted, made again) is read anew.
        let dirs = &self.dirs;
        self.linked.retain(|target| dirs.contains_key(target));
        for (link, root) in links {
            if std::fs::symlink_metadata(&link).is_err() {
                self.links.remove(&link);
                continue;
            }
            if let Some(target) = self.follow_link(link, root) {
                self.read_tree(target, root);
            }
        }
        let unsearched: Vec<PathBuf> = std::mem::take(&mut self.unsearched).into_iter().collect();
        for dir in unsearched {
            let root = self.roots.iter().position(|root| dir.starts_with(root));
            match (root, std::fs::symlink_metadata(&dir)) {
                (Some(root), Ok(_)) => self.read_tree(dir, root),
                // Still behind a directory made unsearchable: tried again at the next call.
                (Some(_), Err(error)) if error.kind() == std::io::ErrorKind::PermissionDenied => {
                    self.unsearched.insert(dir);
                }
                _ => {}
            }
        }
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
    pub(super) fn catch_up(&mut self) {
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
            return;
        }
        // Directories that came, went or were swapped: each side forgotten, then read again
        // where it is a directory now.
        let moved = std::mem::take(&mut self.moved);
        for path in moved.keys() {
            self.forget_tree(path);
        }
        for (path, root) in moved {
            let parent_read = path
                .parent()
                .and_then(|parent| self.dirs.get(parent))
                .is_some_and(|watched| !watched.cache);
            let is_dir = std::fs::symlink_metadata(&path).is_ok_and(|meta| meta.is_dir());
            let name_read = path.file_name().is_some_and(|name| !skipped_name(name));
            if parent_read && is_dir && name_read {
                self.read_tree(path, root);
            }
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
            if left || arrived {
                self.moved.insert(child, root);
            }
        } else if left {
            self.tool_files.remove(&child);
            self.arrived.remove(&child);
            self.links.remove(&child);
        } else if arrived && !cache {
            let kind = rustix::fs::lstat(&child).ok().map(|st| FileType::from_raw_mode(st.st_mode));
            // A link from where the user works into what the reading skips.
            if kind == Some(FileType::Symlink) {
                if let Some(target) = self.follow_link(child, root) {
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
            let below = |file: &&PathBuf| file.parent() == Some(path.as_path());
            let arrived: Vec<PathBuf> = self.arrived.keys().filter(below).cloned().collect();
            for file in arrived {
                self.arrived.remove(&file);
            }
            let tools: Vec<PathBuf> = self.tool_files.iter().filter(below).cloned().collect();
            for file in tools {
                self.tool_files.remove(&file);
            }
        }
    }

    /// Notes `dir`'s entry `name` (of `kind`, when known) when a tool loads it from a directory
    /// and its parents, or it is a FIFO: known from now on, and — but at the first reading —
    /// arrived now.
    fn note_file(&mut self, dir: &Path, name: &OsStr, kind: Option<FileType>) {
        let fifo = kind == Some(FileType::Fifo);
        if !fifo && !cordon_policies::tool_loading_name(name) {
            return;
        }
        let path = dir.join(name);
        let tool = cordon_policies::tool_loading(&path).is_some();
        if tool {
            self.tool_files.insert(path.clone());
        }
        if (fifo || tool) && !self.first_reading {
            self.arrived.insert(path, self.clock);
        }
    }

    /// What changed in the roots `indices` after `since`.
    pub(super) fn changes_since(&mut self, since: Mark, indices: &[usize]) -> Changes {
        let roots = &self.roots;
        let inside = |path: &Path| indices.iter().any(|&i| path.starts_with(&roots[i]));
        let mut changes = Changes::default();
        let mut unreachable = Vec::new();
        for (path, repo) in &self.repos {
            if repo.changed <= since || !inside(path) {
                continue;
            }
            match repo.kind {
                Kind::Bare => changes.git_dirs.push(path.clone()),
                Kind::Worktree => {
                    let found = crate::git_dirs::git_dirs(path).dirs;
                    // Its `.git` made unreachable (a directory on the way made unsearchable
                    // by the command, which may hand it back later): named now, and read again
                    // at each call until it can be, when it counts as changed.
                    if found.is_empty()
                        && std::fs::symlink_metadata(path.join(".git")).is_err_and(|error| {
                            error.kind() == std::io::ErrorKind::PermissionDenied
                        })
                    {
                        unreachable.push(path.clone());
                    }
                    changes.git_dirs.extend(found);
                }
            }
        }
        for path in unreachable {
            changes.unsearched.push(path.clone());
            self.unsearched.insert(path);
        }
        changes.git_dirs.sort();
        changes.git_dirs.dedup();
        changes.arrived = self
            .arrived
            .iter()
            .filter(|(path, changed)| **changed > since && inside(path))
            .map(|(path, _)| path.clone())
            .collect();
        changes.tool_files = self.tool_files.iter().filter(|path| inside(path)).cloned().collect();
        let roots = &self.roots;
        let inside = |path: &Path| indices.iter().any(|&i| path.starts_with(&roots[i]));
        changes.unsearched.extend(self.unsearched.iter().filter(|dir| inside(dir)).cloned());
        changes.unsearched.sort();
        changes.unsearched.dedup();
        changes
    }

    /// What the index knows of root `i`, shaped as a search's finding.
    pub(super) fn repositories_of(&self, i: usize) -> Repositories {
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

/// Whether `dir`, which this process may not read, may still be the command's: owned by this
/// user, or behind a directory on the way whose search permission was taken away (then who owns
/// it cannot be told).
fn could_be_the_commands(dir: &Path) -> bool {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) => {
            use std::os::unix::fs::MetadataExt;
            meta.uid() == nix::unistd::geteuid().as_raw()
        }
        Err(error) => error.kind() == std::io::ErrorKind::PermissionDenied,
    }
}

/// How many links the index looks at again at each call.
const MAX_LINKS: usize = 4096;

/// Directory names never read (as the search skips them).
fn skipped_name(name: &OsStr) -> bool {
    crate::repositories::SKIPPED.iter().any(|skipped| name == *skipped)
}

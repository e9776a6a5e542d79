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
//! Files a tool loads from a directory and its parents (`rust-toolchain.toml`,
//! `.cargo/config.toml`, …) are known too: every one in the roots, so that the check after a call
//! can tell by its change time whether it was written (through any name, a hard link included),
//! and those that arrived with a tree the command moved in (whose change time is old) or were
//! made as FIFOs, by the event.
//!
//! Paths are as the events give them: a directory swapped for a link between an event and its
//! reading is not followed (the reading opens without following links, and a watch is added
//! with `IN_DONT_FOLLOW`), and what the index reports is opened again, without following links,
//! by whoever acts on it.

mod state;

use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, PoisonError};

use nix::errno::Errno;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};

use crate::repositories::RepositoryWalk;
use state::State;

/// A point in the index's history (see [`RepositoryIndex::changes_since`]).
pub type Mark = u64;

/// What changed in some roots after a mark.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// The git dirs of the repositories that appeared or changed (as pointer files name them).
    pub git_dirs: Vec<PathBuf>,
    /// Files a tool loads from a directory and its parents, and FIFOs, made or moved in since
    /// the mark (certainly the command's, whatever their change time says).
    pub arrived: Vec<PathBuf>,
    /// Every file a tool loads from a directory and its parents that the roots hold: the caller
    /// judges by its change time whether it was written since.
    pub tool_files: Vec<PathBuf>,
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
pub(super) fn mask() -> AddWatchFlags {
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
pub(super) const SHAPE: [&str; 6] =
    [".git", "HEAD", "objects", "refs", "commondir", "CACHEDIR.TAG"];

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
        let mut state = State::new(inotify, roots.to_vec(), skipped_roots);
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
    /// [`RepositoryIndex::changes_since`]; `None` when a root is not one of the index's or
    /// the index became unusable (then search).
    pub fn walk_for(&self, roots: &[PathBuf]) -> Option<(RepositoryWalk, Mark)> {
        let mut state = self.state();
        state.catch_up();
        state.look_again_at_what_may_have_come();
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
        state.look_again_at_what_may_have_come();
        if state.unusable.is_some() {
            return None;
        }
        let indices: Vec<usize> = roots
            .iter()
            .map(|root| state.roots.iter().position(|known| known == root))
            .collect::<Option<_>>()?;
        Some(state.changes_since(since, &indices))
    }

    /// How many directories are watched (for benchmarks and `-v`).
    pub fn watched(&self) -> usize {
        self.state().dirs.len()
    }
}

#[cfg(test)]
#[path = "repository_index_tests.rs"]
mod tests;

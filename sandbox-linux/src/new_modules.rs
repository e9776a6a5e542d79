//! A `modules/` a sandboxed command created in a git dir: git keeps submodule git dirs there
//! and reuses one at the user's next `git submodule update`, checkout or not, so whatever git
//! would take for a git dir anywhere below is a repository the command created.
//!
//! Searched without the repository walk's exemptions (`node_modules`, cache marks): none of
//! them belongs inside a git dir. A directory is cleaned as a git dir when it holds `HEAD` or
//! `commondir` (a superset of what git accepts: its `objects` and `refs` may be links, or come
//! from a `commondir`), and a symbolic link is moved aside wherever it lies — git makes none
//! there, and one would lead git to a git dir outside what is searched.
//!
//! Depth first, with one open directory per level, and at most [`MAX_OPEN`] levels: however the
//! command shapes the tree, the search cannot run this process out of descriptors. Whatever it
//! does not look at — past the allowance, too deep, or a directory it could not open or list —
//! is reported as not searched, never passed over in silence.

use std::ffi::{OsStr, OsString};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use nix::fcntl::AtFlags;
use rustix::fs::FileType;

use crate::aside::{Planted, move_away, open_dir};

/// How many directories below one new `modules/` are looked at.
const MAX_DIRECTORIES: usize = 20_000;

/// How many directories are open at once: the depth searched below a new `modules/`.
const MAX_OPEN: usize = 256;

/// A directory being searched: opened, where it is, and its subdirectories still to search.
struct Level {
    dir: OwnedFd,
    at: PathBuf,
    pending: Vec<OsString>,
}

/// Cleans `modules` in the git dir `git_dir` (opened, at `path`), which had none before the
/// run: a `modules` that is not a directory is moved aside whole. Directories not looked at go
/// to `unsearched`.
pub(crate) fn planted(
    git_dir: &OwnedFd,
    path: &Path,
    unsearched: &mut Vec<PathBuf>,
) -> Vec<Planted> {
    let name = OsStr::new("modules");
    let mut planted = Vec::new();
    let Ok(st) = nix::sys::stat::fstatat(git_dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) else {
        return planted;
    };
    let at = path.join(name);
    if st.st_mode & libc::S_IFMT != libc::S_IFDIR {
        planted.push(move_away(git_dir, name, &at));
        return planted;
    }
    let Some(top) = open_searching(git_dir, name) else {
        unsearched.push(at);
        return planted;
    };
    let mut left = MAX_DIRECTORIES - 1;
    let mut levels: Vec<Level> = Vec::new();
    levels.extend(search(top, at, &mut planted, unsearched));
    loop {
        let depth = levels.len();
        let Some(level) = levels.last_mut() else { break };
        let Some(name) = level.pending.pop() else {
            levels.pop();
            continue;
        };
        let at = level.at.join(&name);
        if left == 0 || depth >= MAX_OPEN {
            unsearched.push(at);
            continue;
        }
        let Some(sub) = open_searching(&level.dir, &name) else {
            match kind_of(&level.dir, &name) {
                // Turned into a link since it was listed: moved aside like any other.
                Ok(FileType::Symlink) => planted.push(move_away(&level.dir, &name, &at)),
                Ok(FileType::Directory) => unsearched.push(at),
                Err(errno) if errno != nix::errno::Errno::ENOENT => unsearched.push(at),
                // Gone, or not a directory (a file whose kind the listing did not give).
                Ok(_) | Err(_) => {}
            }
            continue;
        };
        left -= 1;
        levels.extend(search(sub, at, &mut planted, unsearched));
    }
    planted
}

/// Looks at one directory: cleans it when it holds a git dir's names, moves its links aside;
/// returns it with its subdirectories, or `None` (and `at` in `unsearched`) when it cannot be
/// listed.
fn search(
    dir: OwnedFd,
    at: PathBuf,
    planted: &mut Vec<Planted>,
    unsearched: &mut Vec<PathBuf>,
) -> Option<Level> {
    let Some(entries) = crate::owner_read::entries_as_owner(&dir) else {
        unsearched.push(at);
        return None;
    };
    if entries.iter().any(|(name, _)| name == "HEAD" || name == "commondir") {
        planted.extend(crate::new_repositories::planted(&dir, &at));
    }
    // Listed again: what was just moved aside is not looked at twice.
    let Some(entries) = crate::owner_read::entries_as_owner(&dir) else {
        unsearched.push(at);
        return None;
    };
    let mut pending = Vec::new();
    for (name, kind) in entries {
        match kind {
            Some(FileType::Symlink) => planted.push(move_away(&dir, &name, &at.join(&name))),
            // A kind the listing does not give is asked for when the entry is opened: a
            // directory is searched, a link moved aside like any other.
            Some(FileType::Directory) | None => pending.push(name),
            Some(_) => {}
        }
    }
    Some(Level { dir, at, pending })
}

/// `name` in `dir` opened as a directory, never through a link; with search permission given
/// back to `dir` when its owner, this process's user, took it away.
fn open_searching(dir: &OwnedFd, name: &OsStr) -> Option<OwnedFd> {
    open_dir(Some(dir), name)
        .or_else(|| crate::owner_read::searching_as_owner(dir, || open_dir(Some(dir), name)))
}

/// What `name` in `dir` is, a final link not followed.
fn kind_of(dir: &OwnedFd, name: &OsStr) -> nix::Result<FileType> {
    nix::sys::stat::fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW)
        .map(|st| FileType::from_raw_mode(st.st_mode))
}

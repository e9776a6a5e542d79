//! A `modules/` a sandboxed command created in a git dir: git keeps submodule git dirs there
//! and reuses one at the user's next `git submodule update`, checkout or not, so whatever git
//! would take for a git dir anywhere below is a repository the command created.
//!
//! Searched without the repository walk's exemptions (`node_modules`, cache marks): none of
//! them belongs inside a git dir. A directory is cleaned as a git dir when it holds `HEAD` or
//! `commondir` (a superset of what git accepts: its `objects` and `refs` may be links, or come
//! from a `commondir`), and a symbolic link is moved aside wherever it lies — git makes none
//! there, and one would lead git to a git dir outside what is searched.

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use nix::fcntl::AtFlags;
use rustix::fs::FileType;

use crate::aside::{Planted, move_away, open_dir};

/// How many directories below one new `modules/` are looked at.
const MAX_DIRECTORIES: usize = 20_000;

/// Cleans `modules` in the git dir `git_dir` (opened, at `path`), which had none before the
/// run: a `modules` that is not a directory is moved aside whole. Directories past the
/// allowance go to `unsearched`.
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
    let Some(top) =
        open_dir(Some(git_dir), name).filter(|_| st.st_mode & libc::S_IFMT == libc::S_IFDIR)
    else {
        planted.push(move_away(git_dir, name, &path.join(name)));
        return planted;
    };
    let mut queue = VecDeque::from([(top, path.join(name))]);
    let mut left = MAX_DIRECTORIES;
    while let Some((dir, at)) = queue.pop_front() {
        if left == 0 {
            unsearched.push(at);
            unsearched.extend(queue.into_iter().map(|(_, at)| at));
            break;
        }
        left -= 1;
        let listed = |dir: &OwnedFd| crate::owner_read::entries_as_owner(dir).unwrap_or_default();
        if listed(&dir).iter().any(|(name, _)| name == "HEAD" || name == "commondir") {
            planted.extend(crate::new_repositories::planted(&dir, &at));
        }
        // Listed again: what was just moved aside is not looked at twice.
        for (name, kind) in listed(&dir) {
            match kind {
                Some(FileType::Symlink) => planted.push(move_away(&dir, &name, &at.join(&name))),
                Some(FileType::Directory) | None => {
                    // A kind the listing does not give is asked for: a directory is searched,
                    // a link moved aside like any other.
                    if let Some(sub) = open_dir(Some(&dir), &name) {
                        queue.push_back((sub, at.join(&name)));
                    } else if kind.is_none() && is_link(&dir, &name) {
                        planted.push(move_away(&dir, &name, &at.join(&name)));
                    }
                }
                Some(_) => {}
            }
        }
    }
    planted
}

fn is_link(dir: &OwnedFd, name: &OsStr) -> bool {
    nix::sys::stat::fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW)
        .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFLNK)
}

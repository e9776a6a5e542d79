//! Moving aside what a command planted: renamed within a directory cordon opened itself, to a
//! name the command cannot guess, never through a symbolic link.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::Mode;

/// What a command planted, and where cordon moved it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planted {
    pub path: PathBuf,
    /// `None` when it could be neither moved nor removed (it is still in place).
    pub moved_to: Option<PathBuf>,
}

/// Renames `name` in `dir` to an unguessable name beside it; a file that cannot be renamed is
/// removed. Reports where it went (`None`: it is still in place). A directory the caller owns
/// but the command made unwritable (`chmod 0555 .git/hooks`: git still runs the hooks in it)
/// gets write permission back for the move, and its mode restored after it.
pub(crate) fn move_away(dir: &OwnedFd, name: &OsStr, path: &Path) -> Planted {
    let moved_to = rename_aside(dir, name, path)
        .or_else(|| crate::owner_read::as_writing_owner(dir, || rename_aside(dir, name, path)));
    Planted { path: path.to_path_buf(), moved_to }
}

/// [`move_away`]'s rename (or removal) with the permissions `dir` has now.
fn rename_aside(dir: &OwnedFd, name: &OsStr, path: &Path) -> Option<PathBuf> {
    use std::hash::{BuildHasher, Hasher};
    for _ in 0..4 {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        let mut aside = name.to_owned();
        aside.push(format!(".cordon-planted-{:016x}", hasher.finish()));
        // Only when nothing has that name (a command cannot guess it; checked anyway).
        if nix::sys::stat::fstatat(dir, aside.as_os_str(), AtFlags::AT_SYMLINK_NOFOLLOW).is_ok() {
            continue;
        }
        if nix::fcntl::renameat(dir, name, dir, aside.as_os_str()).is_ok() {
            return Some(path.with_file_name(aside));
        }
    }
    nix::unistd::unlinkat(dir, name, nix::unistd::UnlinkatFlags::NoRemoveDir)
        .ok()
        .map(|()| PathBuf::from("(removed)"))
}

/// Opens the directory `name` (relative to `dir`, or a path) without following a final link.
pub(crate) fn open_dir(dir: Option<&OwnedFd>, name: &OsStr) -> Option<OwnedFd> {
    let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    match dir {
        Some(dir) => nix::fcntl::openat(dir, name, flags, Mode::empty()).ok(),
        None => nix::fcntl::open(name, flags, Mode::empty()).ok(),
    }
}

//! Listing a directory its owner made unreadable to itself.
//!
//! A sandboxed command may write the directories of its writable roots, and so change their
//! modes: a directory made `0311` can still be entered by name — git, run there later, finds
//! a repository and its hooks in it — but not listed, so a search that lists directories to
//! find what the command left behind would pass over it. When the caller owns such a
//! directory, it may give itself read permission back: the listing here does so for the
//! moment of the listing and restores the mode the directory had.
//!
//! Before a command runs and after it has ended: while a command runs (another session of an
//! executor), it may take the permission away again, and the directory is then reported as not
//! searched, as one the caller does not own.

use std::ffi::OsString;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// One entry of a directory: its name and its kind as the directory gives it (`None` when it
/// cannot be had).
pub(crate) type Entry = (OsString, Option<FileType>);

/// The entries of the directory `dir` (opened with any flags, `O_PATH` included), read through
/// a new descriptor for it; `None` when it cannot be read.
pub(crate) fn read_entries(dir: impl AsFd) -> Option<Vec<Entry>> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(dir, ".", flags, Mode::empty()).ok()?;
    read_open(fd)
}

/// The entries of `fd`, a directory open for reading, which the reader owns from here on.
pub(crate) fn read_open(fd: OwnedFd) -> Option<Vec<Entry>> {
    use std::os::unix::ffi::OsStrExt;
    let mut reader = rustix::fs::Dir::new(fd).ok()?;
    let mut entries = Vec::new();
    while let Some(entry) = reader.read() {
        let entry = entry.ok()?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let kind = match entry.file_type() {
            FileType::Unknown => reader.fd().ok().and_then(|fd| {
                rustix::fs::statat(fd, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW)
                    .ok()
                    .map(|st| FileType::from_raw_mode(st.st_mode))
            }),
            kind => Some(kind),
        };
        entries.push((std::ffi::OsStr::from_bytes(name).to_os_string(), kind));
    }
    Some(entries)
}

/// The entries of the directory `dir`, as [`read_entries`]; when it cannot be read because its
/// owner, this process's user, took read permission away, with that permission given back for
/// the listing and the directory's mode restored after it.
pub(crate) fn entries_as_owner(dir: impl AsFd) -> Option<Vec<Entry>> {
    read_entries(&dir).or_else(|| as_owner(&dir, 0o400, || read_entries(&dir)))
}

/// Runs `change` (a rename or removal in the directory `dir`) with write and search permission
/// given back to the directory's owner, this process's user, when the command took them away,
/// and the directory's mode restored after it; `None` when the caller does not own `dir`, or
/// already had both permissions (then taking them back is not what failed).
pub(crate) fn as_writing_owner<T>(dir: impl AsFd, change: impl FnOnce() -> Option<T>) -> Option<T> {
    as_owner(dir, 0o300, change)
}

/// Runs `open` (of an entry of the directory `dir`) with search permission given back to the
/// directory's owner, this process's user, when the command took it away, and the mode
/// restored after it; `None` when the caller does not own `dir` or could search it already.
pub(crate) fn searching_as_owner<T>(dir: impl AsFd, open: impl FnOnce() -> Option<T>) -> Option<T> {
    as_owner(dir, 0o100, open)
}

/// Runs `action` with the owner permission bits `wanted` added to the directory `dir`'s mode,
/// when this process's user owns it and lacks one of them; the mode is restored after it.
/// `None` without running it otherwise.
fn as_owner<T>(dir: impl AsFd, wanted: u32, action: impl FnOnce() -> Option<T>) -> Option<T> {
    let st = rustix::fs::fstat(&dir).ok()?;
    let mode = st.st_mode & 0o7777;
    let own = st.st_uid == nix::unistd::geteuid().as_raw();
    if FileType::from_raw_mode(st.st_mode) != FileType::Directory || !own || mode & wanted == wanted
    {
        return None;
    }
    // The descriptor names the inode itself: a name swapped since it was opened changes
    // nothing here. Its /proc entry is how chmod reaches a descriptor opened with O_PATH.
    let by_descriptor = format!("/proc/self/fd/{}", dir.as_fd().as_raw_fd());
    rustix::fs::chmod(by_descriptor.as_str(), Mode::from_raw_mode(mode | wanted)).ok()?;
    let done = action();
    // Should the mode not come back, the owner keeps the permissions it may give itself.
    let _ = rustix::fs::chmod(by_descriptor.as_str(), Mode::from_raw_mode(mode));
    done
}

/// Whether something is at `path` as far as this process can tell: an `lstat` that succeeds,
/// or one refused for permission (a directory on the way made unreadable by its owner).
pub(crate) fn exists_as_owner(path: &std::path::Path) -> bool {
    match std::fs::symlink_metadata(path) {
        Ok(_) => true,
        Err(error) => error.kind() == std::io::ErrorKind::PermissionDenied,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn open_path(path: &std::path::Path) -> OwnedFd {
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        rustix::fs::open(path, flags, Mode::empty()).unwrap()
    }

    #[test]
    fn an_owners_unreadable_directory_is_listed_and_keeps_its_mode() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("hidden");
        std::fs::create_dir_all(dir.join("inner")).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o311)).unwrap();
        let names: Vec<OsString> =
            entries_as_owner(open_path(&dir)).unwrap().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, vec![OsString::from("inner")]);
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o311);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

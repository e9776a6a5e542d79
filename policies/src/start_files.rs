//! Reading a file before a command runs, when a sandboxed command may have planted it.
//!
//! cordon's config and rules, a workspace's `.cordon/rules.toml`, and the `.git` pointer files,
//! `commondir`s and submodule configs the helper follows are all reachable from an earlier
//! sandboxed command. Each is opened without following a final symlink and without blocking
//! (`O_NOFOLLOW | O_NONBLOCK`: a FIFO cannot hang cordon, a link to `/dev/zero` cannot grow it
//! without bound), must be a regular file by the opened descriptor's own `fstat` (no check of
//! the path that could be swapped before the open), and is read to at most a cap. Kernel files
//! (`/proc/self/mountinfo`), which report no size, are read non-blocking up to a cap too.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Why a file was not read. Its [`std::fmt::Display`] completes a sentence that starts with the
/// file's path (`PATH: is a FIFO, not a regular file`).
#[derive(Debug, thiserror::Error)]
pub enum StartFileError {
    #[error("is a symbolic link")]
    SymbolicLink,
    #[error("is {0}, not a regular file")]
    NotRegular(&'static str),
    #[error("is more than the {cap} bytes cordon reads")]
    TooLarge { cap: u64 },
    #[error("cannot open: {0}")]
    Open(#[source] std::io::Error),
    #[error("cannot read: {0}")]
    Read(#[source] std::io::Error),
}

/// The contents of the regular file at `path`, at most `cap` bytes; `Ok(None)` when nothing is
/// there (or a directory on the way is missing).
pub fn read_start_file(path: &Path, cap: u64) -> Result<Option<Vec<u8>>, StartFileError> {
    let file = match open_non_blocking(path, libc::O_NOFOLLOW) {
        Ok(file) => file,
        Err(error) if error.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
        Err(error) if error.raw_os_error() == Some(libc::ENOTDIR) => return Ok(None),
        Err(error) if error.raw_os_error() == Some(libc::ELOOP) => {
            return Err(StartFileError::SymbolicLink);
        }
        Err(error) => return Err(StartFileError::Open(error)),
    };
    let meta = file.metadata().map_err(StartFileError::Read)?;
    if !meta.file_type().is_file() {
        return Err(StartFileError::NotRegular(file_kind(&meta.file_type())));
    }
    if meta.len() > cap {
        return Err(StartFileError::TooLarge { cap });
    }
    read_capped(file, cap).map(Some)
}

/// A kernel file (`/proc`, `/sys`), read non-blocking to at most `cap` bytes: such files report
/// no size, so the cap is what bounds the read.
pub fn read_kernel_file(path: &Path, cap: u64) -> Result<Vec<u8>, StartFileError> {
    let file = open_non_blocking(path, 0).map_err(StartFileError::Open)?;
    read_capped(file, cap)
}

fn open_non_blocking(path: &Path, extra: libc::c_int) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        // O_NOCTTY: a terminal planted in its place never becomes cordon's controlling one.
        // O_CLOEXEC is std's own on every open.
        .custom_flags(extra | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
}

/// Reads one byte past `cap`, so a file that grew after `fstat` is refused, not cut.
fn read_capped(file: File, cap: u64) -> Result<Vec<u8>, StartFileError> {
    // Room for a usual file up front: the kernel then fills it in one or two reads instead of
    // std's doubling reads from 32 bytes up (a kernel file reports no size to start from).
    let mut bytes = Vec::with_capacity(usize::try_from(cap.min(16 * 1024)).unwrap_or(0));
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes).map_err(StartFileError::Read)?;
    if bytes.len() as u64 > cap {
        return Err(StartFileError::TooLarge { cap });
    }
    Ok(bytes)
}

/// What a file that is not a regular one is, for a message (`a FIFO`, `a device`, …).
pub fn file_kind(file_type: &std::fs::FileType) -> &'static str {
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_block_device() || file_type.is_char_device() {
        "a device"
    } else {
        "not a file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_read_and_missing_ones_are_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        assert!(read_start_file(&path, 16).unwrap().is_none());
        assert!(read_start_file(&path.join("under"), 16).unwrap().is_none());
        std::fs::write(&path, "gitdir: x\n").unwrap();
        assert_eq!(read_start_file(&path, 16).unwrap().unwrap(), b"gitdir: x\n");
    }

    #[test]
    fn links_fifos_directories_devices_and_oversized_files_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let fifo = dir.path().join("fifo");
        let status = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(status.success());
        let big = dir.path().join("big");
        std::fs::File::create(&big).unwrap().set_len(17).unwrap();
        for (path, says) in [
            (link.as_path(), "is a symbolic link"),
            (fifo.as_path(), "is a FIFO, not a regular file"),
            (dir.path(), "is a directory, not a regular file"),
            (Path::new("/dev/zero"), "is a device, not a regular file"),
            (big.as_path(), "is more than the 16 bytes cordon reads"),
        ] {
            assert_eq!(read_start_file(path, 16).unwrap_err().to_string(), says);
        }
    }

    #[test]
    fn kernel_files_are_read_up_to_the_cap() {
        assert!(read_kernel_file(Path::new("/proc/self/status"), 1 << 20).is_ok());
        assert!(matches!(
            read_kernel_file(Path::new("/dev/zero"), 1024),
            Err(StartFileError::TooLarge { cap: 1024 })
        ));
    }
}

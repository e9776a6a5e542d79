//! Binding what a view keeps: a place held open before something covers it and bound back
//! after, and a mount made read-only. Shared by the mount view, the sandbox's `/dev` and its
//! `/proc`.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::mount::{MsFlags, mount};

use crate::error::HelperError;
use crate::sys::Recursion;

const MOUNT_ATTR_RDONLY: u64 = 0x0000_0001;

/// Opens `path` (`O_PATH`, a final symlink not followed) to bind it after something covers it.
pub(crate) fn hold(path: &Path) -> nix::Result<std::os::fd::OwnedFd> {
    use nix::fcntl::OFlag;
    let flags = OFlag::O_PATH | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW;
    nix::fcntl::open(path, flags, nix::sys::stat::Mode::empty())
}

/// Binds what `held` (from [`hold`]) refers to onto `target`, through `/proc/self/fd/N` —
/// resolved by whichever `/proc` is mounted now, which always shows this process.
pub(crate) fn bind_held(
    held: &std::os::fd::OwnedFd,
    target: &Path,
    flags: MsFlags,
) -> nix::Result<()> {
    use std::os::fd::AsRawFd;
    let source = format!("/proc/self/fd/{}", held.as_raw_fd());
    mount(Some(source.as_str()), target, None::<&str>, flags, None::<&str>)
}

/// Makes the mount at `path` read-only (with `Recursive`, every mount under it too).
pub(crate) fn set_read_only(path: &Path, recursion: Recursion) -> Result<(), HelperError> {
    let what = || format!("making {} read-only", path.display());
    let c_path = CString::new(path.as_os_str().as_bytes()).map_err(|e| HelperError::MountView {
        what: what(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, e),
    })?;
    crate::sys::mount_setattr(&c_path, recursion, MOUNT_ATTR_RDONLY, 0)
        .map_err(|source| HelperError::MountView { what: what(), source })
}

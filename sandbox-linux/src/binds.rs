//! Binding what a view keeps: a place held open before something covers it and bound back
//! after, a mount made read-only, and device nodes made unusable or usable again. Shared by the
//! mount view, the sandbox's `/dev` and its `/proc`.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::mount::{MsFlags, mount};

use crate::error::HelperError;
use crate::sys::Recursion;

const MOUNT_ATTR_RDONLY: u64 = 0x0000_0001;
const MOUNT_ATTR_NODEV: u64 = 0x0000_0004;

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
    setattr(path, recursion, MOUNT_ATTR_RDONLY, 0, "read-only")
}

/// Makes the mounts at and under `path` read-only and their device nodes unusable: a disk's
/// node outside `/dev` (a second `devtmpfs`, a container's or chroot's `/dev` on disk) opens
/// nothing, whoever owns it.
pub(crate) fn set_read_only_without_devices(path: &Path) -> Result<(), HelperError> {
    let attributes = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NODEV;
    setattr(path, Recursion::Recursive, attributes, 0, "read-only without devices")
}

/// Makes the device nodes on the mounts at and under `path` unusable (a writable root's).
pub(crate) fn set_without_devices(path: &Path) -> Result<(), HelperError> {
    setattr(path, Recursion::Recursive, MOUNT_ATTR_NODEV, 0, "without devices")
}

/// Makes the device node (or the device directory) mounted at `path` usable again, on that
/// mount alone. Where the host's own mount has device nodes off (the setting is then locked in
/// this namespace) it stays so, as outside.
pub(crate) fn allow_devices(path: &Path) -> Result<(), HelperError> {
    match setattr(path, Recursion::Single, 0, MOUNT_ATTR_NODEV, "with its devices") {
        Err(HelperError::MountView { source, .. })
            if source.raw_os_error() == Some(libc::EPERM) =>
        {
            Ok(())
        }
        other => other,
    }
}

fn setattr(
    path: &Path,
    recursion: Recursion,
    set: u64,
    clear: u64,
    made: &str,
) -> Result<(), HelperError> {
    let what = || format!("making {} {made}", path.display());
    let c_path = CString::new(path.as_os_str().as_bytes()).map_err(|e| HelperError::MountView {
        what: what(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, e),
    })?;
    crate::sys::mount_setattr(&c_path, recursion, set, clear)
        .map_err(|source| HelperError::MountView { what: what(), source })
}

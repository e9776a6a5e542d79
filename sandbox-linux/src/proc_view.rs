//! The PID namespace's own `/proc`: a fresh, read-only proc mounted by the supervisor (pid 1)
//! inside the mount view, with whatever covered parts of the old one put back on top.

use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};

use crate::binds::{bind_held, hold};
use crate::error::HelperError;

/// Which `/proc` the command sees in its PID namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcView {
    /// A fresh, read-only proc of the new namespace: only the sandbox's processes.
    Private,
    /// The kernel refused a new proc (e.g. a user namespace where the host's /proc has parts
    /// covered): the host's, which shows host pids the command cannot address; the reason.
    Host(String),
}

/// Mounts a fresh read-only proc on `/proc` for the PID namespace this process is pid 1 of,
/// and puts every mount that covered part of the old `/proc`
/// ([`crate::mount_view::MountPlan::proc_covers`]: a container's masks, a read-only
/// `/proc/sys`, binfmt_misc) back on top, so nothing hidden before shows. Called inside the
/// mount view only (a private mount namespace; nothing reaches the host).
pub fn mount_fresh_proc(covers: &[PathBuf]) -> Result<ProcView, HelperError> {
    let proc_root = Path::new("/proc");
    let covers: Vec<(&PathBuf, std::os::fd::OwnedFd)> = covers
        .iter()
        .map(|path| {
            hold(path).map(|fd| (path, fd)).map_err(|e| HelperError::MountView {
                what: format!("keeping {} covered", path.display()),
                source: e.into(),
            })
        })
        .collect::<Result<_, _>>()?;
    let flags = MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    if let Err(e) = mount(Some("proc"), proc_root, Some("proc"), flags, None::<&str>) {
        return Ok(ProcView::Host(format!("cannot mount a new /proc: {e}")));
    }
    for (path, fd) in &covers {
        // The new proc resolves `/proc/self/fd/N`: it shows this process.
        match bind_held(fd, path, MsFlags::MS_BIND | MsFlags::MS_REC) {
            Ok(()) => {}
            // Not in the new proc (another namespace's pid directory): nothing to cover.
            Err(nix::Error::ENOENT) => {}
            Err(e) => {
                return Err(HelperError::MountView {
                    what: format!("covering {} again", path.display()),
                    source: e.into(),
                });
            }
        }
    }
    Ok(ProcView::Private)
}

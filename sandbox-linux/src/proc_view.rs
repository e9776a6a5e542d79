//! The PID namespace's own `/proc`: a fresh, read-only proc mounted by the supervisor (pid 1)
//! inside the mount view, with whatever covered parts of the old one put back on top.

use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};

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
/// and puts every mount that covered part of the old `/proc` ([`crate::mount_view::MountPlan::proc_covers`]: a
/// container's masks, a read-only `/proc/sys`, binfmt_misc) back on top, so nothing hidden
/// before shows. Called inside the mount view only (a private mount namespace; nothing reaches the host).
pub fn mount_fresh_proc(covers: &[PathBuf]) -> Result<ProcView, HelperError> {
    use std::os::fd::AsRawFd;
    let proc_root = Path::new("/proc");
    let covers: Vec<(PathBuf, std::os::fd::OwnedFd)> = covers
        .iter()
        .map(|path| {
            let flags = nix::fcntl::OFlag::O_PATH
                | nix::fcntl::OFlag::O_CLOEXEC
                | nix::fcntl::OFlag::O_NOFOLLOW;
            nix::fcntl::open(path.as_path(), flags, nix::sys::stat::Mode::empty())
                .map(|fd| (path.clone(), fd))
                .map_err(|e| HelperError::MountView {
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
        // `/proc/self/fd/N` is resolved through the new proc, which shows this process.
        let source = format!("/proc/self/fd/{}", fd.as_raw_fd());
        match mount(
            Some(source.as_str()),
            path,
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        ) {
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

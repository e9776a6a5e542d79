//! The spawner's shortcut: a child cloned straight into new PID + IPC namespaces, where it is
//! pid 1, runs the helper as the supervisor itself.
//!
//! ```text
//! spawner (cordon executor, MCP server)
//!  └─ supervisor: pid 1 of the new namespaces from its first instruction; builds the mount
//!      │          view, mounts /proc, confines itself
//!      └─ the command (pid 2)
//! ```
//! The usual tree has the helper between the spawner and the supervisor, and the helper forks
//! the supervisor after `unshare(CLONE_NEWPID)`: a fork of a copy of the spawner and an exit
//! more per command. Here the spawner's child is already in
//! the namespaces, so it needs no second process. What the helper did outside is not needed by
//! a spawner that gives the command no terminal (pipes): it waits for its own child, its
//! SIGKILL of the child's group ends the whole namespace (pid 1 dies, the kernel kills the
//! rest), and the exit code it reads is the command's (128 + N for a signal, as it reports
//! anyway: pid 1 cannot die of a signal it sends itself). Signals from outside reach pid 1
//! only through a handler, so the supervisor installs one for each signal it forwards.
//!
//! The exit code cannot say whether the command died of a signal (`exit 137` and SIGKILL read
//! the same): a spawner that needs to know puts a pipe on descriptor 3
//! ([`NamespaceInit::with_status_report`]), and the supervisor writes the command's raw wait
//! status there before it exits, as it does to the helper ([`read_status_report`]).
//!
//! An unprivileged spawner cannot make PID namespaces in its own user namespace: the clone
//! then makes a user namespace too (mapping only the caller's own ids, as the helper's mount
//! view does), and the child writes its maps before anything else.

use std::io;
use std::os::fd::OwnedFd;

use crate::sys;

/// How the child was cloned: what [`init_namespaces`] must finish before the helper runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NamespaceInit {
    user: UserNamespace,
    status: StatusReport,
}

/// Where the supervisor reports the command's raw wait status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StatusReport {
    /// Nowhere: its exit code says it (128 + N for signal N).
    ExitCodeOnly,
    /// Also on [`STATUS_REPORT_FD`].
    OnDescriptor3,
}

/// The descriptor a spawner that asked for [`NamespaceInit::with_status_report`] puts the
/// write end of its pipe on (close-on-exec, so the command never has it).
pub const STATUS_REPORT_FD: std::os::fd::RawFd = 3;

impl NamespaceInit {
    /// The spawner has put a pipe on [`STATUS_REPORT_FD`] for the command's raw wait status.
    #[must_use]
    pub fn with_status_report(self) -> NamespaceInit {
        NamespaceInit { status: StatusReport::OnDescriptor3, ..self }
    }

    pub(crate) fn status_report(self) -> StatusReport {
        self.status
    }
}

/// The command's raw wait status from the read end of a [`STATUS_REPORT_FD`] pipe, once the
/// supervisor has exited; `None` when it wrote none (it failed before the command ran, and its
/// exit code says why, e.g. 125). The pipe holds a start report first when the command ran.
pub fn read_status_report(pipe: &OwnedFd) -> Option<libc::c_int> {
    let mut buf = [0u8; 2 * super::Report::LEN];
    let mut len = 0;
    while len < buf.len() {
        match nix::unistd::read(pipe, &mut buf[len..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => len += n,
        }
    }
    buf[..len].chunks_exact(super::Report::LEN).find_map(|chunk| {
        let mut report = [0u8; super::Report::LEN];
        report.copy_from_slice(chunk);
        match super::Report::decode(report) {
            Some(super::Report::Exited(status)) => Some(status),
            Some(super::Report::Started | super::Report::Stopped) | None => None,
        }
    })
}

/// Whether the supervisor behind the read end of a [`STATUS_REPORT_FD`] pipe has started the
/// command: it reports that first, so any byte in the pipe says so. Nothing is read, so
/// [`read_status_report`] still finds the whole report. A spawner that must end a run kills a
/// supervisor that has not started the command instead of passing it a signal: pid 1 of a
/// namespace that is still setting up has no handler for it, and may be in a wait only SIGKILL
/// ends.
pub fn command_started(pipe: &OwnedFd) -> bool {
    use std::os::fd::AsFd;
    sys::bytes_queued(pipe.as_fd()).is_some_and(|n| n > 0)
}

/// Whether the clone made a user namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UserNamespace {
    /// The spawner's own (it could make PID namespaces: root).
    Shared,
    /// A new one, in which the child maps the spawner's ids (read before the clone: inside,
    /// before the maps, they read as the overflow id).
    Own { uid: libc::uid_t, gid: libc::gid_t },
}

/// Both sides of [`clone_namespace_init`].
#[derive(Debug)]
pub enum ClonedInit {
    /// The spawner: the child's pid (in the spawner's namespace) and a pidfd to wait on.
    Parent { pid: libc::pid_t, pidfd: OwnedFd },
    /// The child, pid 1 of new PID + IPC namespaces. It must end in
    /// [`crate::run_in_process`] (or `_exit`): it is a copy of the spawner.
    Child(NamespaceInit),
}

/// Forks into new PID + IPC namespaces, with a user namespace too when the caller may not
/// make them in its own. `Ok(None)` when the kernel allows neither (no user namespaces for
/// this user, a container without CAP_SYS_ADMIN, a kernel without `CLONE_PIDFD`): the caller
/// starts the helper the usual way, which finds out what is possible and reports it.
///
/// # Safety
///
/// This process has one thread, as for a `fork` whose child allocates; the child
/// ([`ClonedInit::Child`]) ends in [`crate::run_in_process`] or `_exit`, never returning to
/// the caller's code (it is a copy of the caller, with the caller's descriptors and locks).
pub unsafe fn clone_namespace_init() -> io::Result<Option<ClonedInit>> {
    let namespaces = libc::CLONE_NEWPID | libc::CLONE_NEWIPC;
    let (uid, gid) = (nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw());
    let attempts = [
        (namespaces, UserNamespace::Shared),
        (namespaces | libc::CLONE_NEWUSER, UserNamespace::Own { uid, gid }),
    ];
    for (flags, user) in attempts {
        // SAFETY: one thread, and a child that never returns to the caller's code (this
        // function's contract).
        match unsafe { sys::clone_into_namespaces(flags) } {
            Ok(sys::Cloned::Parent { pid, pidfd }) => {
                return Ok(Some(ClonedInit::Parent { pid, pidfd }));
            }
            Ok(sys::Cloned::Child) => {
                let init = NamespaceInit { user, status: StatusReport::ExitCodeOnly };
                return Ok(Some(ClonedInit::Child(init)));
            }
            Err(error) if refused(&error) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(None)
}

/// A clone the kernel will not do here, as opposed to one that failed for want of memory or
/// processes.
fn refused(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::EPERM | libc::EINVAL | libc::ENOSPC | libc::EUSERS | libc::EACCES)
    )
}

/// Finishes what the clone started, first thing in the child: the user namespace's maps.
pub(crate) fn init_namespaces(init: NamespaceInit) -> Result<(), crate::HelperError> {
    match init.user {
        UserNamespace::Shared => Ok(()),
        UserNamespace::Own { uid, gid } => crate::mount_view::map_own_ids(uid, gid)
            .map_err(|(what, source)| crate::HelperError::Containment { what, source }),
    }
}

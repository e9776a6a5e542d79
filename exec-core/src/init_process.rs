//! Waiting for a sandbox supervisor that is this process's own child, cloned as pid 1 of the
//! command's namespaces (`sys::spawn_namespace_init`): its exit is read from a pidfd, and the
//! command's raw wait status from the pipe it reports on.

use std::os::fd::OwnedFd;

use tokio::io::unix::AsyncFd;

use crate::sys::{self, InitChild};

/// The supervisor's side a spawner keeps; killed if dropped before it exited (as tokio's
/// `kill_on_drop`).
pub struct InitProcess {
    pid: i32,
    pidfd: AsyncFd<OwnedFd>,
    status: OwnedFd,
    reaped: bool,
}

impl InitProcess {
    /// Takes the pidfd and the status pipe of `child`, leaving its output pipes to the caller.
    pub fn watch(pid: i32, pidfd: OwnedFd, status: OwnedFd) -> std::io::Result<InitProcess> {
        Ok(InitProcess { pid, pidfd: sys::watch_pidfd(pidfd)?, status, reaped: false })
    }

    /// Splits an [`InitChild`] into its output pipes and the process to wait for.
    pub fn from_child(child: InitChild) -> std::io::Result<(InitProcess, OwnedFd, OwnedFd)> {
        let InitChild { pid, pidfd, stdout, stderr, status } = child;
        Ok((InitProcess::watch(pid, pidfd, status)?, stdout, stderr))
    }

    /// Its pid in this process's namespace, also its process group's id.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The command's raw wait status (as `waitpid` gives it) once the supervisor has exited;
    /// the supervisor's own when it reported none (it failed before the command ran).
    pub async fn wait(&mut self) -> std::io::Result<libc::c_int> {
        loop {
            let mut ready = self.pidfd.readable().await?;
            if let Some(own) = sys::reap_init(ready.get_inner())? {
                self.reaped = true;
                return Ok(cordon_sandbox_linux::read_status_report(&self.status).unwrap_or(own));
            }
            ready.clear_ready();
        }
    }
}

/// What ends a run of an [`InitProcess`] from outside while its owner waits for it.
pub struct InitHandle {
    pidfd: OwnedFd,
    status: OwnedFd,
}

impl InitHandle {
    /// Whether the supervisor has started the command (it reports that before anything else).
    pub fn command_started(&self) -> bool {
        cordon_sandbox_linux::command_started(&self.status)
    }

    /// SIGKILL to the supervisor: it dies, and the kernel kills the rest of its namespace.
    pub fn kill(&self) {
        sys::kill_pidfd(&self.pidfd);
    }
}

impl InitProcess {
    /// A handle of its own on the supervisor (copies of its pidfd and status pipe).
    pub fn handle(&self) -> std::io::Result<InitHandle> {
        Ok(InitHandle {
            pidfd: self.pidfd.get_ref().try_clone()?,
            status: self.status.try_clone()?,
        })
    }
}

impl Drop for InitProcess {
    fn drop(&mut self) {
        if !self.reaped {
            // Pid 1 dies, and the kernel kills the rest of its namespace.
            sys::kill_pidfd(self.pidfd.get_ref());
        }
    }
}

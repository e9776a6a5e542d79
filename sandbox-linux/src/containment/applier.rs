//! The applier of a transaction of the helper's own (`crate::own_transaction`): a process
//! forked before the helper unshares or confines anything, which applies the run's write
//! layers to the roots once the command is over.
//!
//! It reads, on a pipe from the helper: the supervisor's pid (once it exists), then a byte
//! when the helper has seen the supervisor exit. That byte starts the apply; the helper waits
//! for the applier to be done (the pipe back closes) before it exits, so its caller finds the
//! changes in place. End of file before the pid: the helper failed before the command could
//! start, the layers are empty, and applying them only clears the run away. End of file after
//! the pid and before the byte: the helper was killed while the command ran (a harness's
//! timeout) — the applier waits until the supervisor, and with it every process of the
//! command, is gone, and keeps the run's changes unapplied for the user, as any run stopped
//! half-way.

use std::os::fd::{AsRawFd, OwnedFd};

use crate::apply::ApplyContext;
use crate::own_transaction::OpenTransaction;
use crate::sys;

/// What the helper sends when the command is over.
const GO: u8 = b'g';
/// What the applier sends when it has applied (or kept) the run.
const DONE: u8 = b'd';

/// The helper's ends of the pipes to its applier.
#[derive(Debug)]
pub struct Applier {
    to: OwnedFd,
    from: OwnedFd,
    pid: libc::pid_t,
    /// The run's directory, to name when the applier stops before it is done.
    run: std::path::PathBuf,
}

/// Forks the applier, which takes `run` with it.
///
/// # Safety
///
/// This process has one thread.
pub(crate) unsafe fn start(
    run: Box<dyn OpenTransaction>,
    context: ApplyContext,
) -> Result<Applier, crate::HelperError> {
    let setup = |what: &'static str| {
        move |source: nix::Error| crate::HelperError::Containment { what, source: source.into() }
    };
    let (down_read, down_write) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(setup("creating a pipe"))?;
    let (up_read, up_write) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(setup("creating a pipe"))?;
    // SAFETY: one thread (this function's contract).
    let forked = unsafe { sys::fork() }.map_err(|source| crate::HelperError::Containment {
        what: "forking the applier",
        source,
    })?;
    match forked {
        sys::Forked::Parent { child } => {
            drop((down_read, up_write));
            // The run's locks are one open file each, shared with the applier: dropping them
            // here would unlock them for both. They stay open (close-on-exec) until this
            // process exits.
            let dir = run.layers_dir().to_path_buf();
            std::mem::forget(run);
            Ok(Applier { to: down_write, from: up_read, pid: child, run: dir })
        }
        sys::Forked::Child => {
            drop((down_write, up_read));
            let _ = nix::unistd::setsid();
            // Not readable by the command, which runs as the same user.
            let _ = nix::sys::prctl::set_dumpable(false);
            let mut keep = run.descriptors();
            keep.extend([2, down_read.as_raw_fd(), up_write.as_raw_fd()]);
            super::helper::close_all_but(&keep);
            let said = applies(run, context, &down_read);
            if let Some(text) = said {
                crate::messages::warning(text);
            }
            let _ = nix::unistd::write(&up_write, &[DONE]);
            drop(up_write);
            sys::exit_now(0)
        }
    }
}

/// The applier's part: waits for the helper's word, then applies or keeps; what to say.
fn applies(
    run: Box<dyn OpenTransaction>,
    context: ApplyContext,
    from_helper: &OwnedFd,
) -> Option<String> {
    let mut pid = [0u8; 4];
    if super::helper::read_exact(from_helper, &mut pid).is_err() {
        return run.apply(context);
    }
    let supervisor = libc::pid_t::from_ne_bytes(pid);
    // The command is starting: until the helper's word comes, this process has time.
    // Its word, or the end of its pipe, ends the tidying.
    run.tidy_while_it_runs(&|| super::ready_now(from_helper).is_some());
    let mut byte = [0u8; 1];
    if super::helper::read_exact(from_helper, &mut byte).is_ok() && byte[0] == GO {
        return run.apply(context);
    }
    while super::helper::process_running(supervisor) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    run.keep_unapplied()
}

impl Applier {
    /// Tells the applier which process to wait for.
    pub(super) fn tell(&self, supervisor: libc::pid_t) {
        let _ = nix::unistd::write(&self.to, &supervisor.to_ne_bytes());
    }

    /// The command is over: lets the applier apply, and waits until it is done. `Err` names
    /// the run when the applier ended without saying it was done (killed): its changes are
    /// not in place.
    pub(super) fn finish(self) -> Result<(), crate::HelperError> {
        let _ = nix::unistd::write(&self.to, &[GO]);
        drop(self.to);
        let mut byte = [0u8; 1];
        let mut done = false;
        loop {
            match nix::unistd::read(&self.from, &mut byte) {
                Ok(0) => break,
                Ok(_) => done |= byte[0] == DONE,
                Err(nix::Error::EINTR) => {}
                Err(_) => break,
            }
        }
        let _ = sys::wait_raw(self.pid, sys::Wait::Block);
        match done {
            true => Ok(()),
            false => Err(crate::HelperError::ApplyStopped(self.run)),
        }
    }
}

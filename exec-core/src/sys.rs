//! The `unsafe` of exec-core: registering the child's pre-exec step.

use std::os::unix::process::CommandExt;

/// Makes the child get SIGKILL when the thread that spawned it dies (`PR_SET_PDEATHSIG`), so
/// killing cordon (even with SIGKILL) kills the command too.
///
/// The kernel delivers the signal when the spawning *thread* exits: callers spawn from a
/// thread that lives as long as they wait for the child (cordon uses a current-thread runtime).
pub fn kill_with_parent(command: &mut std::process::Command) {
    let parent = nix::unistd::getpid();
    // SAFETY: the closure runs in the forked child before exec and only makes two
    // async-signal-safe system calls (prctl, getppid) and `_exit`; it allocates nothing and
    // touches no lock.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl: then nothing would signal us.
            if libc::getppid() != parent.as_raw() {
                libc::_exit(124);
            }
            Ok(())
        });
    }
}

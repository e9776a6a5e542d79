//! The `unsafe` of exec-core: registering the child's pre-exec step.

/// Prepares the child between fork and exec:
/// - `PR_SET_PDEATHSIG`: it gets SIGKILL when the thread that spawned it dies, so killing
///   cordon (even with SIGKILL) kills the command too. The kernel delivers the signal when the
///   spawning *thread* exits: callers spawn from a thread that lives as long as they wait for
///   the child (cordon uses a current-thread runtime).
/// - every descriptor above stderr is marked close-on-exec (`close_range`), so descriptors
///   cordon's own caller leaked to it (a harness's sockets, a terminal master) never reach the
///   sandboxed command.
#[cfg(target_os = "linux")]
pub fn prepare_child(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    let parent = nix::unistd::getpid();
    // SAFETY: the closure runs in the forked child before exec and only makes
    // async-signal-safe system calls (prctl, getppid, close_range) and `_exit`; it allocates
    // nothing and touches no lock.
    unsafe {
        command.pre_exec(move || {
            const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
            // Older kernels (before 5.11) lack the flag: then only cordon's own descriptors,
            // which are close-on-exec already, are handled.
            libc::syscall(
                libc::SYS_close_range,
                3 as libc::c_uint,
                libc::c_uint::MAX,
                CLOSE_RANGE_CLOEXEC,
            );
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

/// Elsewhere (macOS) there is no parent-death signal or `close_range`; cordon's own
/// descriptors are close-on-exec and the process group is still killed on exit and timeout.
#[cfg(not(target_os = "linux"))]
pub fn prepare_child(_command: &mut std::process::Command) {}

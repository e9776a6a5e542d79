//! Every `unsafe` call of the helper, each a thin wrapper with its safety argument.
//!
//! All of these act on the calling thread only; the helper is single-threaded.

use std::io;

fn check(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 { Err(io::Error::last_os_error()) } else { Ok(ret) }
}

fn check_int(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 { Err(io::Error::last_os_error()) } else { Ok(ret) }
}

/// The kernel's Landlock ABI version, 0 when Landlock is missing or disabled.
pub fn landlock_abi() -> i32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a NULL attribute pointer, size 0 and the VERSION flag the kernel reads no
    // memory and only returns the ABI number (or an error).
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    i32::try_from(ret).unwrap_or(0).max(0)
}

/// `prctl(PR_SET_SECUREBITS, bits)`.
pub fn set_securebits(bits: libc::c_ulong) -> io::Result<()> {
    // SAFETY: PR_SET_SECUREBITS takes an integer argument and touches no user memory.
    check_int(unsafe { libc::prctl(libc::PR_SET_SECUREBITS, bits, 0, 0, 0) }).map(drop)
}

/// Drops every capability from the bounding set (`PR_CAPBSET_DROP` until the kernel says the
/// number is past its last capability, so capabilities newer than this code are dropped too).
pub fn drop_bounding_set() -> io::Result<()> {
    for cap in 0..64 {
        // SAFETY: PR_CAPBSET_DROP takes an integer argument and touches no user memory.
        let ret = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) };
        if ret < 0 {
            let err = io::Error::last_os_error();
            return match err.raw_os_error() {
                Some(libc::EINVAL) if cap > 0 => Ok(()),
                _ => Err(err),
            };
        }
    }
    Ok(())
}

/// Clears the ambient capability set.
pub fn clear_ambient_set() -> io::Result<()> {
    // SAFETY: PR_CAP_AMBIENT/CLEAR_ALL takes integer arguments and touches no user memory.
    check_int(unsafe {
        libc::prctl(libc::PR_CAP_AMBIENT, libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong, 0, 0, 0)
    })
    .map(drop)
}

/// Empties the effective, permitted and inheritable sets (`capset` with all zero).
pub fn clear_capability_sets() -> io::Result<()> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Default, Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    let mut header = Header { version: LINUX_CAPABILITY_VERSION_3, pid: 0 };
    let data = [Data::default(); 2];
    // SAFETY: header and data are valid, correctly laid out (version 3 takes two data
    // elements) and live for the duration of the call; the kernel only reads data.
    check(unsafe { libc::syscall(libc::SYS_capset, &raw mut header, data.as_ptr()) }).map(drop)
}

/// Restores the default SIGPIPE disposition: Rust's runtime ignores SIGPIPE, and an ignored
/// signal stays ignored across `execve`, which would change how `yes | head` behaves.
pub fn reset_sigpipe() {
    // SAFETY: installing SIG_DFL runs no handler code; SIGPIPE is a valid signal.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// `mount_setattr(AT_FDCWD, path, AT_RECURSIVE?, attr)` — flips mount attributes (read-only)
/// on a whole mount tree in one call.
pub fn mount_setattr(
    path: &std::ffi::CStr,
    recursive: Recursion,
    attr_set: u64,
    attr_clr: u64,
) -> io::Result<()> {
    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }
    let attr = MountAttr { attr_set, attr_clr, propagation: 0, userns_fd: 0 };
    let flags = match recursive {
        Recursion::Recursive => libc::AT_RECURSIVE,
        Recursion::Single => 0,
    };
    // SAFETY: `path` is NUL-terminated, `attr` is a valid `struct mount_attr` whose size is
    // passed; both outlive the call and the kernel only reads them.
    check(unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags,
            &raw const attr,
            std::mem::size_of::<MountAttr>(),
        )
    })
    .map(drop)
}

/// Whether a mount-tree operation applies to submounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recursion {
    Recursive,
    Single,
}

/// Runs `child` in a forked child process and returns its exit status (used by `doctor` to
/// probe what the kernel allows without changing the calling process).
pub fn in_forked_child(child: fn() -> i32) -> io::Result<i32> {
    // SAFETY: callers are single-threaded CLI paths (`doctor`) that run before any runtime or
    // thread exists; the child only makes raw system calls and leaves with `_exit`.
    let pid = check_int(unsafe { libc::fork() })?;
    if pid == 0 {
        let code = child();
        // SAFETY: `_exit` ends the child without running the parent's destructors or atexit
        // handlers twice.
        unsafe { libc::_exit(code) }
    }
    let mut status: libc::c_int = 0;
    // SAFETY: `status` is a valid out-pointer; `pid` is our own child.
    check_int(unsafe { libc::waitpid(pid, &raw mut status, 0) })?;
    Ok(if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    })
}

/// `unshare(flags)` for probes: returns 0 on success, 1 on failure (child exit status).
pub fn unshare_probe(flags: libc::c_int) -> i32 {
    // SAFETY: unshare takes an integer and changes only the calling (forked) process.
    i32::from(unsafe { libc::unshare(flags) } != 0)
}

/// Whether the kernel has seccomp filters: `PR_SET_SECCOMP` with a NULL program fails with
/// `EFAULT` when filter mode exists, `EINVAL` when it does not.
pub fn seccomp_filter_supported() -> bool {
    // SAFETY: a NULL program pointer makes the kernel fail with EFAULT before installing
    // anything; no memory is read or written on our side.
    let ret = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER as libc::c_ulong,
            std::ptr::null::<libc::c_void>(),
            0,
            0,
        )
    };
    ret < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EFAULT)
}

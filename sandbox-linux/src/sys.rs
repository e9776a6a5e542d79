//! Every `unsafe` call of the helper, each a thin wrapper with its safety argument.
//!
//! All of these act on the calling thread only; the helper is single-threaded. A wrapper whose
//! soundness depends on its caller (one thread in the process, a descriptor nobody else owns)
//! is an `unsafe fn` whose `# Safety` section says what the caller must make true.

use std::io;
use std::path::{Path, PathBuf};

use crate::error::ForkError;

fn check(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 { Err(io::Error::last_os_error()) } else { Ok(ret) }
}

fn check_int(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 { Err(io::Error::last_os_error()) } else { Ok(ret) }
}

/// The kernel's Landlock ABI version, 0 when Landlock is missing or disabled.
pub fn landlock_abi() -> i32 {
    landlock_version().unwrap_or(0)
}

/// The kernel's Landlock ABI version, or the errno that says why there is none: `ENOSYS`
/// (compiled out) or `EOPNOTSUPP` (compiled in but not enabled at boot).
pub fn landlock_version() -> Result<i32, i32> {
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
    if ret < 0 {
        return Err(io::Error::last_os_error().raw_os_error().unwrap_or(libc::ENOSYS));
    }
    Ok(i32::try_from(ret).unwrap_or(0))
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

#[repr(C)]
struct CapabilityHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Default, Clone, Copy)]
struct CapabilityData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// Whether `CAP_DAC_READ_SEARCH` is in this thread's effective set (in its own user
/// namespace): then it can list any directory whose owner its namespace maps.
pub fn can_read_search_own_files() -> bool {
    let mut header = CapabilityHeader { version: LINUX_CAPABILITY_VERSION_3, pid: 0 };
    let mut data = [CapabilityData::default(); 2];
    // SAFETY: header and data are valid, correctly laid out (version 3 takes two data
    // elements) and live for the duration of the call; the kernel writes only data.
    let ret = unsafe { libc::syscall(libc::SYS_capget, &raw mut header, data.as_mut_ptr()) };
    // <linux/capability.h>
    const CAP_DAC_READ_SEARCH: u32 = 2;
    ret == 0 && data[0].effective & (1 << CAP_DAC_READ_SEARCH) != 0
}

/// Empties the effective, permitted and inheritable sets (`capset` with all zero).
pub fn clear_capability_sets() -> io::Result<()> {
    let mut header = CapabilityHeader { version: LINUX_CAPABILITY_VERSION_3, pid: 0 };
    let data = [CapabilityData::default(); 2];
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

/// Closes every descriptor from `lowest` up except `keep` (`close_range`; on kernels before
/// 5.9 the ones `/proc/self/fd` lists).
///
/// # Safety
///
/// No code that owns one of the closed descriptors (an `OwnedFd`, a `File`, a runtime's
/// epoll) may run again in this process: it would use or close a number that is no longer
/// its own, and may by then name another file. The caller never returns to such code, as
/// after an exec.
pub unsafe fn close_descriptors_from(lowest: libc::c_int, keep: Option<libc::c_int>) {
    let first = libc::c_uint::try_from(lowest).unwrap_or(3);
    let keep = keep.and_then(|fd| libc::c_uint::try_from(fd).ok()).filter(|fd| *fd >= first);
    // The ranges around the kept one (a `c_int`, so `kept + 1` cannot overflow); an empty one
    // is skipped.
    let ranges = match keep {
        Some(kept) => [kept.checked_sub(1).map(|below| (first, below)), Some((kept + 1, u32::MAX))],
        None => [Some((first, u32::MAX)), None],
    };
    let mut failed = false;
    for (from, to) in ranges.into_iter().flatten().filter(|(from, to)| from <= to) {
        // SAFETY: close_range takes integers; no owner of a closed descriptor runs again (this
        // function's contract).
        failed |= unsafe { libc::syscall(libc::SYS_close_range, from, to, 0) } < 0;
    }
    if failed {
        let kept = keep.and_then(|fd| libc::c_int::try_from(fd).ok());
        for fd in descriptors_above_stderr().into_iter().filter(|fd| *fd >= lowest) {
            if Some(fd) == kept {
                continue;
            }
            // SAFETY: as above (this function's contract); a number that is not open (the
            // listing's own) is EBADF.
            unsafe {
                libc::close(fd);
            }
        }
    }
}

/// Closes every descriptor marked close-on-exec except `keep`, as an `execve` would; the
/// others stay open.
///
/// # Safety
///
/// As for [`close_descriptors_from`]: no owner of a descriptor marked close-on-exec may run
/// again in this process.
pub unsafe fn close_cloexec_descriptors(keep: Option<libc::c_int>) {
    for fd in descriptors_above_stderr().into_iter().filter(|fd| Some(*fd) != keep) {
        // SAFETY: F_GETFD and close take integers; no owner of a descriptor marked
        // close-on-exec runs again (this function's contract).
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 && flags & libc::FD_CLOEXEC != 0 {
                libc::close(fd);
            }
        }
    }
}

/// Closes every inherited (not close-on-exec) descriptor above stderr that is a directory or
/// opened with `O_PATH`: either resolves through the caller's mounts, around the sandbox's view
/// (its read-only and device-less mounts), whoever meant to pass it. Returns how many it
/// closed. Descriptors this process opened itself are close-on-exec and stay.
pub fn close_inherited_directories() -> usize {
    let mut closed = 0;
    for fd in inherited_above_stderr() {
        if path_like(fd) {
            // SAFETY: an inherited descriptor: nothing in this process owns it (it is not
            // close-on-exec, and everything this process opens is).
            unsafe {
                libc::close(fd);
            }
            closed += 1;
        }
    }
    closed
}

/// Whether `fd` is a directory or was opened with `O_PATH`.
fn path_like(fd: libc::c_int) -> bool {
    // SAFETY: F_GETFL and fstat take an integer and a buffer of ours; a number that is not
    // open fails with EBADF.
    unsafe {
        let status = libc::fcntl(fd, libc::F_GETFL);
        let mut stat: libc::stat = std::mem::zeroed();
        status >= 0
            && (status & libc::O_PATH != 0
                || (libc::fstat(fd, &raw mut stat) == 0
                    && stat.st_mode & libc::S_IFMT == libc::S_IFDIR))
    }
}

/// Puts `/dev/null` in place of each of fds 0-2 that is a directory or an `O_PATH`
/// descriptor; returns how many.
pub fn replace_directory_stdio() -> usize {
    let mut replaced = 0;
    for fd in 0..3 {
        if !path_like(fd) {
            continue;
        }
        // SAFETY: open takes a NUL-terminated path; dup2 and close take integers. The new
        // descriptor takes the stream's number, which std's stdio handles keep using.
        unsafe {
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
            if null >= 0 {
                libc::dup2(null, fd);
                libc::close(null);
            } else {
                libc::close(fd);
            }
        }
        replaced += 1;
    }
    replaced
}

/// A descriptor the caller handed on that reaches a named file through the caller's own mount,
/// where the mount view's read-only mounts do not apply: a regular file open read-only, or a
/// device node (a terminal, `/dev/null`) or named pipe in any mode. Through it the command
/// could change the file's mode, owner, times and extended attributes — which take ownership,
/// not write access — and, through `/proc/self/fd/N`, reopen it for writing where the caller's
/// mount allows.
#[derive(Debug)]
pub struct HandedFile {
    fd: libc::c_int,
    /// The file's (device, inode).
    file: (libc::dev_t, libc::ino_t),
    kind: HandedKind,
    /// The name it was reached by, when that name still led to it before the view.
    name: Option<PathBuf>,
    status: libc::c_int,
    /// The file's owner.
    owner: libc::uid_t,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HandedKind {
    File,
    /// A device node, with the device it stands for.
    Device(libc::dev_t),
    Fifo,
}

impl HandedFile {
    /// The name it was reached by; `None` when that name no longer led to it (a mount
    /// detached or covered since it was opened, a deleted file's).
    pub fn name(&self) -> Option<&Path> {
        self.name.as_deref()
    }

    pub fn fd(&self) -> libc::c_int {
        self.fd
    }

    /// Whether it is a terminal (which the sandbox's `/dev` gives a name of its own).
    pub fn is_terminal(&self) -> bool {
        matches!(self.kind, HandedKind::Device(_)) && is_terminal(self.fd)
    }

    /// Whether this process's effective user owns the file.
    fn owned_by_caller(&self) -> bool {
        // SAFETY: geteuid cannot fail.
        self.owner == unsafe { libc::geteuid() }
    }

    /// A pty's master side: opened again by name it would be a new pty.
    fn is_pty_master(&self) -> bool {
        self.kind == HandedKind::Device(libc::makedev(5, 2))
    }
}

/// Whether `fd` is a terminal.
pub fn is_terminal(fd: libc::c_int) -> bool {
    // SAFETY: isatty takes an integer; a number that is not open is not a terminal.
    unsafe { libc::isatty(fd) == 1 }
}

/// The inherited descriptors: fds 0-2 and those above that are not close-on-exec.
fn handed_descriptors() -> Vec<libc::c_int> {
    (0..3).chain(inherited_above_stderr()).collect()
}

/// The inherited descriptors ([`handed_descriptors`]) that reach a named file around the view
/// ([`HandedFile`]): a regular file open read-only with a link left, on a mount the caller can
/// write; a device node or a named pipe on any mount. A regular file opened for writing is the
/// caller's to hand on; unnamed pipes and sockets change nothing. Looked at before the
/// mount view changes what names resolve to.
pub fn handed_files() -> Vec<HandedFile> {
    handed_descriptors().into_iter().filter_map(handed_file).collect()
}

fn handed_file(fd: libc::c_int) -> Option<HandedFile> {
    // SAFETY: fcntl, fstat and fstatvfs take an integer and buffers of ours; a number that is
    // not open fails with EBADF.
    let (status, stat, on_writable_mount) = unsafe {
        let status = libc::fcntl(fd, libc::F_GETFL);
        let mut stat: libc::stat = std::mem::zeroed();
        let mut vfs: libc::statvfs = std::mem::zeroed();
        if status < 0
            || libc::fstat(fd, &raw mut stat) != 0
            || libc::fstatvfs(fd, &raw mut vfs) != 0
        {
            return None;
        }
        (status, stat, vfs.f_flag & libc::ST_RDONLY == 0)
    };
    if status & libc::O_PATH != 0 {
        return None;
    }
    let read_only = status & libc::O_ACCMODE == libc::O_RDONLY;
    // A read-only mount keeps a regular file's content and metadata as they are, but not a
    // device's or a named pipe's: those open for writing on one, and the caller's mount is not
    // `nodev` as the view's are.
    let kind = match stat.st_mode & libc::S_IFMT {
        libc::S_IFREG if read_only && on_writable_mount && stat.st_nlink > 0 => HandedKind::File,
        libc::S_IFCHR | libc::S_IFBLK => HandedKind::Device(stat.st_rdev),
        // A named pipe's inode is on disk; an unnamed one's (pipefs) has no name to reach.
        libc::S_IFIFO if !on_pipefs(fd) => HandedKind::Fifo,
        _ => return None,
    };
    let file = (stat.st_dev, stat.st_ino);
    let name = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok().filter(|name| {
        use std::os::unix::fs::MetadataExt;
        name.is_absolute()
            && std::fs::metadata(name).is_ok_and(|meta| {
                (meta.dev(), meta.ino()) == file
                    && match kind {
                        HandedKind::Device(rdev) => meta.rdev() == rdev,
                        HandedKind::File | HandedKind::Fifo => true,
                    }
            })
    });
    Some(HandedFile { fd, file, kind, name, status, owner: stat.st_uid })
}

/// Whether `fd` is an unnamed pipe's end (its inode on the kernel's pipe file system).
fn on_pipefs(fd: libc::c_int) -> bool {
    const PIPEFS_MAGIC: libc::c_long = 0x5049_5045;
    // SAFETY: fstatfs takes an integer and a buffer of ours.
    unsafe {
        let mut fs: libc::statfs = std::mem::zeroed();
        libc::fstatfs(fd, &raw mut fs) == 0 && fs.f_type as libc::c_long == PIPEFS_MAGIC
    }
}

/// What [`give_handed_files_through_view`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct GivenThroughView {
    /// Replaced by the same file opened through the view.
    pub replaced: usize,
    /// Closed (`/dev/null` in place of a standard stream), with their names: not the same
    /// file by any of its names in the view.
    pub closed: Vec<(libc::c_int, Option<PathBuf>)>,
    /// Terminals left as handed: the view has no name for them.
    pub terminals_left: usize,
}

/// Where the view may show a handed file, and how to know it there.
pub struct ViewNames<'a> {
    /// The names to try, in order, for each file.
    pub names: &'a dyn Fn(&HandedFile) -> Vec<PathBuf>,
    /// The devices of the layered roots' own directories: a file below one shows through its
    /// overlay with the overlay's device and the same inode number.
    pub layered_devices: &'a [libc::dev_t],
    /// The layered roots: a named pipe below one is another pipe through the overlay, so the
    /// caller's stays (its mode is the workspace's, and no code runs from a pipe).
    pub layered_roots: &'a [PathBuf],
}

/// Gives the command each of `files` opened through the view instead — the same file, by one
/// of its names there, in the same access mode and at the same offset — so the view's mounts
/// decide what can be done to it. One the view does not show is closed; a terminal the view has
/// no name for, and a named pipe in a layered root, are left. A pty's master side is never opened again by name: it is closed. Must
/// run in the view's mount namespace, before the command starts.
pub fn give_handed_files_through_view(
    files: &[HandedFile],
    names: &ViewNames<'_>,
) -> GivenThroughView {
    let mut given = GivenThroughView::default();
    for file in files {
        let layered_pipe = file.kind == HandedKind::Fifo
            && file
                .name
                .as_deref()
                .is_some_and(|name| names.layered_roots.iter().any(|root| name.starts_with(root)));
        if layered_pipe {
            continue;
        }
        let reopened = file.name.is_some()
            && !file.is_pty_master()
            && (names.names)(file)
                .iter()
                .any(|name| reopen_in_view(file, name, names.layered_devices));
        if reopened {
            given.replaced += 1;
        } else if !file.is_pty_master() && file.is_terminal() {
            // Only its owner can change its mode (a terminal of root's after `su` is not).
            if file.owned_by_caller() {
                given.terminals_left += 1;
            }
        } else {
            close_or_null(file.fd);
            given.closed.push((file.fd, file.name.clone()));
        }
    }
    given
}

/// Puts the file at `name` in the view in place of `file`'s descriptor when it is the same
/// file; whether it did.
fn reopen_in_view(file: &HandedFile, name: &Path, layered_devices: &[libc::dev_t]) -> bool {
    use std::os::unix::ffi::OsStrExt;
    const OVERLAYFS_SUPER_MAGIC: libc::c_long = 0x794c_7630;
    let Ok(name) = std::ffi::CString::new(name.as_os_str().as_bytes()) else { return false };
    // Non-blocking: a named pipe's write end opens only where a reader is (ENXIO otherwise:
    // then closed), and neither end waits for the other side.
    let flags = (file.status & libc::O_ACCMODE)
        | libc::O_NOFOLLOW
        | libc::O_NOCTTY
        | libc::O_NONBLOCK
        | libc::O_CLOEXEC;
    // SAFETY: open takes a NUL-terminated path of ours; the rest take integers and buffers of
    // ours. The new descriptor is close-on-exec until dup3 puts it at the handed descriptor's
    // number, which the caller handed on and nothing in this process owns (or std's stdio
    // handles keep using).
    unsafe {
        let view = libc::open(name.as_ptr(), flags);
        if view < 0 {
            return false;
        }
        let mut seen: libc::stat = std::mem::zeroed();
        let mut fs: libc::statfs = std::mem::zeroed();
        let same_inode = |seen: &libc::stat| (seen.st_dev, seen.st_ino) == file.file;
        let same = libc::fstat(view, &raw mut seen) == 0
            && match file.kind {
                HandedKind::Device(rdev) => same_inode(&seen) && seen.st_rdev == rdev,
                HandedKind::Fifo => {
                    same_inode(&seen) && seen.st_mode & libc::S_IFMT == libc::S_IFIFO
                }
                HandedKind::File => {
                    seen.st_mode & libc::S_IFMT == libc::S_IFREG
                        && (same_inode(&seen)
                            || (seen.st_ino == file.file.1
                                && layered_devices.contains(&file.file.0)
                                && libc::fstatfs(view, &raw mut fs) == 0
                                && fs.f_type as libc::c_long == OVERLAYFS_SUPER_MAGIC))
                }
            };
        let offset = match file.kind {
            HandedKind::File => libc::lseek(file.fd, 0, libc::SEEK_CUR),
            HandedKind::Device(_) | HandedKind::Fifo => -1,
        };
        let replaced = same
            && libc::fcntl(view, libc::F_SETFL, file.status & !libc::O_ACCMODE) == 0
            && (offset < 0 || libc::lseek(view, offset, libc::SEEK_SET) == offset)
            && libc::dup3(view, file.fd, 0) == file.fd;
        libc::close(view);
        replaced
    }
}

/// Closes an inherited descriptor, or puts `/dev/null` in place of a standard stream.
fn close_or_null(fd: libc::c_int) {
    // SAFETY: open takes a NUL-terminated path; dup2 and close take integers. The descriptor
    // is one the caller handed on, which nothing in this process owns (std's stdio handles
    // keep using 0-2, which get `/dev/null`).
    unsafe {
        if fd < 3 {
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
            if null >= 0 {
                libc::dup2(null, fd);
                libc::close(null);
                return;
            }
        }
        libc::close(fd);
    }
}

/// The descriptors above stderr that are not close-on-exec: what the caller passed on
/// (everything this process opens itself is close-on-exec).
fn inherited_above_stderr() -> Vec<libc::c_int> {
    let mut fds = descriptors_above_stderr();
    fds.retain(|fd| {
        // SAFETY: F_GETFD takes an integer; a number that is not open (the listing's own)
        // fails with EBADF.
        let flags = unsafe { libc::fcntl(*fd, libc::F_GETFD) };
        flags >= 0 && flags & libc::FD_CLOEXEC == 0
    });
    fds
}

/// The open descriptors above stderr, from `/proc/self/fd`: listed first, closed after by the
/// callers, so the listing's own descriptor is gone by then (EBADF).
fn descriptors_above_stderr() -> Vec<libc::c_int> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else { return Vec::new() };
    dir.flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse().ok())
        .filter(|fd| *fd > 2)
        .collect()
}

/// Puts every signal that has a handler back to its default disposition, as an `execve` does
/// (ignored signals stay ignored). One `sigaction` per signal rather than reading the caught
/// set from `/proc/self/status`, for which the kernel formats the whole file.
pub fn reset_caught_signals() {
    for signal in 1..=libc::SIGRTMAX() {
        if signal == libc::SIGKILL || signal == libc::SIGSTOP {
            continue;
        }
        // SAFETY: `sigaction` with a NULL new action only fills `current`, a zeroed plain
        // struct; installing SIG_DFL runs no handler code.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &raw mut current) == 0
                && current.sa_sigaction != libc::SIG_DFL
                && current.sa_sigaction != libc::SIG_IGN
            {
                libc::signal(signal, libc::SIG_DFL);
            }
        }
    }
}

/// Sets `PATH` (or unsets it, for `None`), which `execvpe` searches for the command: glibc
/// takes it from this process's environment, not from the one it hands the command. Through
/// libc, not `std::env`: a caller's spawn forks while holding std's environment lock, which
/// its child inherits locked.
///
/// # Safety
///
/// This process has one thread: `setenv` may move the environment while another thread reads
/// it (`getenv`, `std::env`, a libc function that looks up a variable), which is a
/// use-after-free there.
pub unsafe fn set_search_path(path: Option<&std::ffi::OsString>) {
    use std::os::unix::ffi::OsStrExt;
    let value = path.and_then(|p| std::ffi::CString::new(p.as_bytes()).ok());
    // SAFETY: no other thread exists to read the environment while it changes (this
    // function's contract); both strings are NUL-terminated and live across the calls (setenv
    // copies them).
    unsafe {
        match value {
            Some(value) => libc::setenv(c"PATH".as_ptr(), value.as_ptr(), 1),
            None => libc::unsetenv(c"PATH".as_ptr()),
        };
    }
}

/// `_exit(code)`: ends this process without running exit handlers or flushing buffers it
/// inherited from the process that forked it.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: `_exit` takes an integer and does not return.
    unsafe { libc::_exit(code) }
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

/// The kernel's calls that enumerate mounts by id (Linux 6.8): the same numbers on x86_64 and
/// aarch64, the two architectures the helper supports.
const SYS_STATMOUNT: libc::c_long = 457;
const SYS_LISTMOUNT: libc::c_long = 458;

/// `struct mnt_id_req` of the first version: which mount, and a mask or a cursor.
#[repr(C)]
struct MountIdRequest {
    size: u32,
    spare: u32,
    mnt_id: u64,
    param: u64,
}

/// The unique ids of the mounts beneath `mount_id` (a unique id, as `statx` gives with
/// `STATX_MNT_ID_UNIQUE`), in this process's mount namespace. `ENOSYS` on kernels before 6.8.
pub fn listmount(mount_id: u64) -> io::Result<Vec<u64>> {
    const BATCH: usize = 512;
    let mut ids = Vec::new();
    let mut cursor = 0;
    loop {
        let request = MountIdRequest {
            size: std::mem::size_of::<MountIdRequest>() as u32,
            spare: 0,
            mnt_id: mount_id,
            param: cursor,
        };
        let mut batch = [0u64; BATCH];
        // SAFETY: `request` is a valid first-version `struct mnt_id_req` whose size it carries;
        // `batch` has room for the BATCH ids passed as its length; both outlive the call, the
        // kernel reads the first and writes at most BATCH ids into the second.
        let count = check(unsafe {
            libc::syscall(SYS_LISTMOUNT, &raw const request, batch.as_mut_ptr(), BATCH, 0)
        })? as usize;
        ids.extend_from_slice(&batch[..count.min(BATCH)]);
        match batch[..count.min(BATCH)].last() {
            Some(&last) if count == BATCH => cursor = last,
            _ => return Ok(ids),
        }
    }
}

/// Where the mount `mount_id` (a unique id) is mounted, relative to this process's root.
/// `ENOSYS` on kernels before 6.8.
pub fn statmount_point(mount_id: u64) -> io::Result<std::path::PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    const STATMOUNT_MNT_POINT: u64 = 0x10;
    // `struct statmount`: 512 bytes of fixed fields, then the strings.
    const FIXED: usize = 512;
    const MASK_AT: usize = 8;
    const MNT_POINT_AT: usize = 108;
    let request = MountIdRequest {
        size: std::mem::size_of::<MountIdRequest>() as u32,
        spare: 0,
        mnt_id: mount_id,
        param: STATMOUNT_MNT_POINT,
    };
    let mut size = FIXED + 4096;
    loop {
        // u64 words: the kernel writes the fixed part's u64 fields aligned.
        let mut buf = vec![0u64; size / 8];
        // SAFETY: `request` is a valid `struct mnt_id_req` whose size it carries; `buf` is
        // `size` bytes, 8-aligned, and passed with that length; the kernel writes at most that.
        let ret =
            unsafe { libc::syscall(SYS_STATMOUNT, &raw const request, buf.as_mut_ptr(), size, 0) };
        match check(ret) {
            Err(e) if e.raw_os_error() == Some(libc::EOVERFLOW) && size < (1 << 20) => {
                size *= 4;
                continue;
            }
            Err(e) => return Err(e),
            Ok(_) => {}
        }
        let bytes: Vec<u8> = buf.iter().flat_map(|word| word.to_ne_bytes()).collect();
        let mut mask = [0u8; 8];
        mask.copy_from_slice(&bytes[MASK_AT..MASK_AT + 8]);
        let mut mnt_point = [0u8; 4];
        mnt_point.copy_from_slice(&bytes[MNT_POINT_AT..MNT_POINT_AT + 4]);
        let (mask, mnt_point) = (u64::from_ne_bytes(mask), u32::from_ne_bytes(mnt_point));
        let invalid = || io::Error::from_raw_os_error(libc::EINVAL);
        if mask & STATMOUNT_MNT_POINT == 0 {
            return Err(invalid());
        }
        let rest = bytes.get(FIXED + mnt_point as usize..).ok_or_else(invalid)?;
        let end = rest.iter().position(|&b| b == 0).ok_or_else(invalid)?;
        return Ok(std::ffi::OsStr::from_bytes(&rest[..end]).into());
    }
}

/// Whether a mount-tree operation applies to submounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recursion {
    Recursive,
    Single,
}

/// Whether this process has a single thread, which a fork whose child allocates needs (see
/// [`fork`]). `false` also when `/proc/self/task` cannot be read: then nobody can tell.
pub fn single_threaded() -> bool {
    std::fs::read_dir("/proc/self/task").is_ok_and(|tasks| tasks.count() == 1)
}

/// Runs `child` in a forked child process and returns its exit status (used by `doctor` to
/// probe what the kernel allows without changing the calling process). The children allocate,
/// so this refuses ([`ForkError::Threaded`]) in a process with more than one thread.
pub fn in_forked_child(child: fn() -> i32) -> Result<i32, ForkError> {
    if !single_threaded() {
        return Err(ForkError::Threaded);
    }
    // SAFETY: this process has one thread (checked just above; only that thread could have
    // started another since, and it did not), so the child is a whole copy in which every lock
    // is free and `child` may allocate; it leaves with `_exit`.
    let pid = check_int(unsafe { libc::fork() }).map_err(ForkError::Fork)?;
    if pid == 0 {
        let code = child();
        // SAFETY: `_exit` ends the child without running the parent's destructors or atexit
        // handlers twice.
        unsafe { libc::_exit(code) }
    }
    let mut status: libc::c_int = 0;
    // SAFETY: `status` is a valid out-pointer; `pid` is our own child.
    check_int(unsafe { libc::waitpid(pid, &raw mut status, 0) }).map_err(ForkError::Wait)?;
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

/// Whether this process is the parent or the child after [`fork`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forked {
    Parent { child: libc::pid_t },
    Child,
}

/// `fork()` of the helper (process containment: the supervisor).
///
/// # Safety
///
/// This process has one thread. The child is a copy of the calling thread only: a lock another
/// thread held at the fork (the allocator's, stdout's, the environment's) would stay held in
/// the child for ever, and the helper's child allocates and runs ordinary code.
pub unsafe fn fork() -> io::Result<Forked> {
    // SAFETY: this process has one thread (this function's contract), so the child is a
    // complete copy in which every lock is free and allocation is safe.
    let pid = check_int(unsafe { libc::fork() })?;
    Ok(if pid == 0 { Forked::Child } else { Forked::Parent { child: pid } })
}

/// Both sides of [`clone_into_namespaces`].
#[derive(Debug)]
pub enum Cloned {
    Parent { pid: libc::pid_t, pidfd: std::os::fd::OwnedFd },
    Child,
}

/// `clone(flags | CLONE_PIDFD | SIGCHLD)` on the caller's stack: a `fork` whose child starts
/// in the new namespaces `flags` name, with a pidfd for the parent to wait on.
///
/// Unlike glibc's `fork`, the raw system call leaves glibc's record of the thread id in the
/// child as the parent's: only `raise`/`pthread_kill` read it, and the child (the supervisor)
/// never calls them: it leaves with `_exit`.
///
/// # Safety
///
/// As for [`fork`]: this process has one thread. Also, the child must leave with `_exit` (or
/// an exec), never return to code that relies on glibc's cached thread id.
pub unsafe fn clone_into_namespaces(flags: libc::c_int) -> io::Result<Cloned> {
    use std::os::fd::FromRawFd;
    let mut pidfd: libc::c_int = -1;
    let flags = libc::c_ulong::try_from(flags | libc::CLONE_PIDFD | libc::SIGCHLD)
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: with no new stack the child continues on a copy of this stack, as after `fork`;
    // this process has one thread (this function's contract), so every lock is free in the
    // copy and allocating is safe. CLONE_PIDFD writes one int to `pidfd`, which lives across the call; the last two
    // arguments (child tid, TLS) are unused without their flags.
    let ret = check(unsafe {
        libc::syscall(
            libc::SYS_clone,
            flags,
            std::ptr::null_mut::<libc::c_void>(),
            &raw mut pidfd,
            std::ptr::null_mut::<libc::c_int>(),
            0 as libc::c_ulong,
        )
    })?;
    if ret == 0 {
        return Ok(Cloned::Child);
    }
    let pid = libc::pid_t::try_from(ret).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: the kernel returned a new descriptor in `pidfd` that nothing else owns.
    Ok(Cloned::Parent { pid, pidfd: unsafe { std::os::fd::OwnedFd::from_raw_fd(pidfd) } })
}

/// The spawner's side of `--proxy-fd`: lets `command`'s child inherit `fd` by clearing its
/// close-on-exec flag in the child, between fork and exec. In the calling process it stays
/// close-on-exec, so no other child started meanwhile (by another thread) inherits it. Steps
/// run in the order they were registered: register this after any step that marks every
/// descriptor close-on-exec. `fd` lives as long as the command does.
pub fn keep_open_in_child<F>(command: &mut std::process::Command, fd: F)
where
    F: std::os::fd::AsRawFd + Send + Sync + 'static,
{
    use std::os::unix::process::CommandExt;
    // Read here, not in the child: `F`'s `as_raw_fd` is the caller's code, which the child of a
    // threaded process may not run.
    let number = fd.as_raw_fd();
    // SAFETY: the closure runs in the forked child before exec and makes two fcntl calls on a
    // descriptor number; it allocates nothing and takes no lock. `fd` is only held there (never
    // dropped: the child execs or exits), and it keeps the descriptor open in this process
    // until the command is dropped, after the fork.
    unsafe {
        command.pre_exec(move || {
            // Named, so that the closure owns `fd` and with it the descriptor.
            let _owner = &fd;
            let flags = libc::fcntl(number, libc::F_GETFD);
            if flags < 0 || libc::fcntl(number, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Takes ownership of descriptor `fd`, which the spawner passed to this process by number
/// (`--proxy-fd`), once it is known to be open, and marks it close-on-exec: from here on it can
/// reach no program this process executes, whatever path the set-up takes.
///
/// # Safety
///
/// As for [`adopt_descriptor`], except that `fd` may be closed (that is an error here).
pub unsafe fn adopt_inherited_descriptor(fd: libc::c_int) -> io::Result<std::os::fd::OwnedFd> {
    // SAFETY: F_GETFD reads the flags of a descriptor number and changes nothing; a number that
    // is not open fails with EBADF.
    let flags = check_int(unsafe { libc::fcntl(fd, libc::F_GETFD) })?;
    // SAFETY: F_SETFD changes only the flags of `fd`, which is open (checked above).
    check_int(unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) })?;
    // SAFETY: `fd` is open (checked above) and nobody else owns it (this function's contract).
    Ok(unsafe { adopt_descriptor(fd) })
}

/// Takes ownership of descriptor `fd`, which a spawner left open for this process.
///
/// # Safety
///
/// `fd` is open, and nothing else in this process owns it or will close it: the returned
/// `OwnedFd` closes it when dropped, and a second owner would close the number again, by then
/// perhaps another file's.
pub unsafe fn adopt_descriptor(fd: libc::c_int) -> std::os::fd::OwnedFd {
    use std::os::fd::FromRawFd;
    // SAFETY: an open descriptor with no other owner (this function's contract).
    unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }
}

/// Whether `signal` is ignored (`SIG_IGN`) in this process: inherited so (`nohup`), it stays so
/// for the command, and nothing of the helper's acts on it.
pub fn signal_ignored(signal: libc::c_int) -> bool {
    // SAFETY: `sigaction` with a NULL new action only fills `current`, a zeroed plain struct.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &raw mut current) == 0
            && current.sa_sigaction == libc::SIG_IGN
    }
}

/// How many bytes wait to be read on the pipe `fd` (`FIONREAD`); `None` when that cannot be
/// asked.
pub fn bytes_queued(fd: std::os::fd::BorrowedFd<'_>) -> Option<usize> {
    use std::os::fd::AsRawFd;
    let mut count: libc::c_int = 0;
    // SAFETY: FIONREAD on a descriptor we borrow writes one c_int through the pointer, which
    // points at `count`.
    let result = unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD as _, &raw mut count) };
    if result < 0 {
        return None;
    }
    usize::try_from(count).ok()
}

extern "C" fn queue_signal(_signal: libc::c_int) {}

/// Installs a handler that does nothing for each of `signals`, which the caller keeps blocked
/// and reads from a signalfd: pid 1 of a PID namespace is sent only the signals it has a handler
/// for (besides SIGKILL and SIGSTOP from outside), whatever its mask.
pub fn catch_signals(signals: &[libc::c_int]) -> io::Result<()> {
    for signal in signals {
        // SAFETY: `action` is a zeroed plain struct filled before use; the handler is an
        // `extern "C"` function that touches nothing, so it is async-signal-safe.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = queue_signal as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&raw mut action.sa_mask);
            check_int(libc::sigaction(*signal, &raw const action, std::ptr::null_mut()))?;
        }
    }
    Ok(())
}

/// `waitpid(pid, &status, WNOHANG?)` returning the raw status, so that a death by any signal
/// (real-time ones included, which nix's `WaitStatus` cannot represent) is passed on as it is.
/// `Ok(None)`: nothing to report yet (only with [`Wait::NoHang`]).
pub fn wait_raw(pid: libc::pid_t, wait: Wait) -> io::Result<Option<(libc::pid_t, libc::c_int)>> {
    let flags = match wait {
        Wait::Block => 0,
        Wait::NoHang => libc::WNOHANG,
        Wait::NoHangUntraced => libc::WNOHANG | libc::WUNTRACED,
    };
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: `status` is a valid out-pointer for the duration of the call.
        let ret = unsafe { libc::waitpid(pid, &raw mut status, flags) };
        if ret < 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(err);
        }
        return Ok(if ret == 0 { None } else { Some((ret, status)) });
    }
}

/// Whether [`wait_raw`] blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    Block,
    NoHang,
    /// `WNOHANG | WUNTRACED`: stopped children are reported too.
    NoHangUntraced,
}

/// Dies of `signal` as the command did (so the caller sees the same wait status), without a
/// core dump of the helper (the command dumped its own). Returns only if the signal does not
/// terminate (its default action is to ignore or stop).
pub fn die_of_signal(signal: libc::c_int) {
    let no_core = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: setrlimit reads a valid rlimit; signal() installs SIG_DFL (no handler code);
    // sigprocmask reads a valid, initialised set; kill targets this process only.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, &raw const no_core);
        libc::signal(signal, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        libc::sigaddset(&raw mut set, signal);
        libc::sigprocmask(libc::SIG_UNBLOCK, &raw const set, std::ptr::null_mut());
        libc::kill(libc::getpid(), signal);
    }
}

/// `kill(pid, signal)` with a raw signal number (the forwarded ones and `SIGKILL`).
pub fn send_signal(pid: libc::pid_t, signal: libc::c_int) -> io::Result<()> {
    // SAFETY: kill takes integers and touches no memory.
    check_int(unsafe { libc::kill(pid, signal) }).map(drop)
}

/// Makes `fd` non-blocking and has the kernel send this process SIGIO when it becomes readable
/// (`O_ASYNC` with `F_SETOWN`); the caller blocks SIGIO and reads it from a signalfd.
pub fn signal_when_readable(fd: std::os::fd::BorrowedFd<'_>) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = fd.as_raw_fd();
    // SAFETY: fcntl on a descriptor the caller owns, with integer arguments only.
    unsafe {
        check_int(libc::fcntl(fd, libc::F_SETOWN, libc::getpid()))?;
        let flags = check_int(libc::fcntl(fd, libc::F_GETFL))?;
        check_int(libc::fcntl(fd, libc::F_SETFL, flags | libc::O_ASYNC | libc::O_NONBLOCK))?;
    }
    Ok(())
}

/// `tcgetpgrp(fd)`: the foreground process group of the terminal `fd` is open on, when it is
/// this process's controlling terminal.
/// Which of fds 0-2, if any, is this process's controlling terminal: a character device whose
/// device number is the `tty_nr` of `/proc/self/stat`. (`tcgetpgrp` alone would also answer
/// for a pty's master side, which is no controlling terminal.) The terminal's number is read
/// once, at the first call, and kept: later the helper's `/proc` may be the command's PID
/// namespace's, where it has no entry of its own. Call it before that (the helper does at its
/// start).
pub fn controlling_terminal_on_stdio() -> Option<libc::c_int> {
    static CONTROLLING: std::sync::OnceLock<Option<libc::dev_t>> = std::sync::OnceLock::new();
    let controlling = (*CONTROLLING.get_or_init(controlling_terminal))?;
    // `/dev/tty` itself (5, 0) opened by the caller is its controlling terminal too, when the
    // terminal answers for this session.
    let dev_tty = libc::makedev(5, 0);
    (0..3).find(|fd| {
        // SAFETY: fstat takes an integer and a buffer of ours; a closed number fails (EBADF).
        let rdev = unsafe {
            let mut stat: libc::stat = std::mem::zeroed();
            (libc::fstat(*fd, &raw mut stat) == 0 && stat.st_mode & libc::S_IFMT == libc::S_IFCHR)
                .then_some(stat.st_rdev)
        };
        rdev == Some(controlling) || (rdev == Some(dev_tty) && foreground_group(*fd).is_ok())
    })
}

/// The device number of this process's controlling terminal, from `/proc/self/stat`.
fn controlling_terminal() -> Option<libc::dev_t> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // After the command name in parentheses: state, ppid, pgrp, session, tty_nr.
    let (_, rest) = stat.rsplit_once(')')?;
    let tty_nr: u64 = rest.split_whitespace().nth(4)?.parse().ok()?;
    if tty_nr == 0 {
        return None;
    }
    // The kernel's encoding: minor in bits 0-7 and 20-31, major in bits 8-19.
    let (major, minor) = ((tty_nr >> 8) & 0xfff, (tty_nr & 0xff) | ((tty_nr >> 12) & 0xfff00));
    Some(libc::makedev(u32::try_from(major).ok()?, u32::try_from(minor).ok()?))
}

pub fn foreground_group(fd: libc::c_int) -> io::Result<libc::pid_t> {
    // SAFETY: tcgetpgrp takes an integer and touches no user memory of ours.
    check_int(unsafe { libc::tcgetpgrp(fd) })
}

/// `tcsetpgrp(fd, group)`: makes `group` the terminal's foreground process group.
pub fn set_foreground_group(fd: libc::c_int, group: libc::pid_t) -> io::Result<()> {
    // SAFETY: tcsetpgrp takes integers and touches no user memory of ours.
    check_int(unsafe { libc::tcsetpgrp(fd, group) }).map(drop)
}

/// `getpgrp()`.
/// Stops this process as a terminal's SIGTSTP would: the kernel decides, and drops the stop
/// when the process group is orphaned (no job-control shell above it would ever continue it).
/// SIGTSTP must be blocked and not caught; it is unblocked for the moment of delivery. Returns
/// whether the process was stopped (and has been continued since: the SIGCONT that did it is
/// pending, for the caller to read).
pub fn stop_as_a_job() -> bool {
    // SAFETY: getpid cannot fail.
    stop_by_tstp(unsafe { libc::getpid() })
}

/// Stops this process's whole process group as a terminal's SIGTSTP would stop a job (see
/// [`stop_as_a_job`]): what a job-control shell runs as the job — a wrapper with cordon in
/// it — stops with it, so the shell sees the job stopped. Returns whether this process was
/// stopped (and has been continued since).
pub fn stop_group_as_a_job() -> bool {
    stop_by_tstp(0)
}

/// Sends SIGTSTP to `target` (a pid, or 0 for this process's group) and lets it reach this
/// process; whether it stopped it.
fn stop_by_tstp(target: libc::pid_t) -> bool {
    // SAFETY: sigset operations on a local set, kill and sigprocmask on integers and that set;
    // single-threaded (the helper's wait loop), so the signal is this thread's.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        libc::sigaddset(&raw mut set, libc::SIGTSTP);
        libc::kill(target, libc::SIGTSTP);
        libc::sigprocmask(libc::SIG_UNBLOCK, &raw const set, std::ptr::null_mut());
        libc::sigprocmask(libc::SIG_BLOCK, &raw const set, std::ptr::null_mut());
        let mut pending: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut pending);
        libc::sigpending(&raw mut pending);
        libc::sigismember(&raw const pending, libc::SIGCONT) == 1
    }
}

pub fn own_group() -> libc::pid_t {
    // SAFETY: getpgrp cannot fail and touches no memory.
    unsafe { libc::getpgrp() }
}

/// Sets the `IFF_UP` flag of the loopback interface `lo` (a fresh network namespace has it
/// down). Needs CAP_NET_ADMIN in the namespace's user namespace.
pub fn loopback_up() -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let socket = std::net::UdpSocket::bind("127.0.0.1:0")
        .or_else(|_| {
            // Binding needs loopback up on some kernels; a socket alone is enough for ioctl.
            std::net::UdpSocket::bind("0.0.0.0:0")
        })
        .or_else(|_| std::net::UdpSocket::bind("[::]:0"));
    let socket = socket?;
    // SAFETY: `ifreq` is plain old data; all-zero is a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
        *slot = *byte as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS reads the NUL-terminated name and writes the flags into the
    // `ifreq` we own, which outlives the call.
    check_int(unsafe {
        libc::ioctl(socket.as_raw_fd(), libc::SIOCGIFFLAGS as _, &raw mut request)
    })?;
    // SAFETY: the union member the kernel just filled for SIOCGIFFLAGS is `ifru_flags`.
    unsafe {
        request.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    }
    // SAFETY: as above; SIOCSIFFLAGS only reads the `ifreq`.
    check_int(unsafe {
        libc::ioctl(socket.as_raw_fd(), libc::SIOCSIFFLAGS as _, &raw const request)
    })
    .map(drop)
}

/// How the command's child is set up between `clone` and `execvpe` ([`spawn_command`]).
pub struct CommandSpawn<'a> {
    /// Looked up in `PATH` as `execvp` does (a script without `#!` runs under `/bin/sh`).
    pub file: &'a std::ffi::CStr,
    pub argv: &'a [std::ffi::CString],
    pub envp: &'a [std::ffi::CString],
    pub group: CommandGroup,
    pub parent_death: ParentDeathSignal,
    /// Set in the child before its exec; a limit that cannot be set fails the start (exit 126).
    pub rlimits: &'a [cordon_policies::ProcessLimit],
}

/// `strings` as the NULL-terminated array of pointers `execvpe` takes; the pointers are valid
/// for as long as `strings` is.
fn null_terminated(strings: &[std::ffi::CString]) -> Vec<*const libc::c_char> {
    strings.iter().map(|s| s.as_ptr()).chain(std::iter::once(std::ptr::null())).collect()
}

/// The command's process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandGroup {
    /// The supervisor's.
    Inherited,
    /// A group of its own, which takes the terminal `foreground` (a descriptor) when given.
    Own { foreground: Option<libc::c_int> },
    /// A session of its own, with no controlling terminal.
    Session,
}

/// Whether the command gets SIGKILL when the supervisor dies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParentDeathSignal {
    Kill,
    Unset,
}

/// The child [`spawn_command`] started: it has exec'd the command, or failed to with
/// `exec_error` and exited 127 (not found) or 126 (any other reason).
#[derive(Debug)]
pub struct Spawned {
    pub pid: libc::pid_t,
    pub exec_error: Option<io::Error>,
}

/// What the child reads (the spawn and its pointer arrays) and writes (the errno of a failed
/// exec); it lives on the parent's stack, which the child shares.
struct SpawnShared<'a> {
    spawn: &'a CommandSpawn<'a>,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    errno: std::sync::atomic::AtomicI32,
}

/// Starts the command as `posix_spawn` does: `clone(CLONE_VM | CLONE_VFORK)`, so the child
/// borrows this process's memory instead of copying its page tables, and this process sleeps
/// until the child has exec'd (or exited). A `fork` of the supervisor costs a copy of every
/// page table and a copy-on-write fault for each page either side writes next; on the helper's
/// few megabytes that would be the largest single cost of a launch after the exec itself.
///
/// The child runs on a stack of its own and makes only system calls (and `execvpe`, which
/// keeps its `PATH` buffer on that stack and allocates nothing): it must not touch the heap or
/// any lock, which are the parent's.
pub fn spawn_command(spawn: &CommandSpawn<'_>) -> io::Result<Spawned> {
    // Built here, before the clone: the child may not allocate.
    let shared = SpawnShared {
        spawn,
        argv: null_terminated(spawn.argv),
        envp: null_terminated(spawn.envp),
        errno: std::sync::atomic::AtomicI32::new(0),
    };
    // execvpe keeps a path buffer (at most PATH_MAX + NAME_MAX) on the stack, and for a script
    // without `#!` the shell's argv (one pointer per argument): room for both, with margin.
    let size = 64 * 1024 + std::mem::size_of_val(shared.argv.as_slice());
    let mut stack: Vec<u8> = Vec::with_capacity(size);
    // The stack grows down from its (16-byte aligned) top; the memory is only written by the
    // child, never read as bytes by Rust.
    let top = (stack.as_mut_ptr() as usize + size) & !15;
    // SAFETY: `command_child` gets a pointer to `shared`, which outlives the child's use of it:
    // with CLONE_VFORK this call returns only after the child has exec'd or exited, and both
    // end its use of this memory. `top` is the aligned top of `size` bytes we own. The child
    // makes only async-signal-safe calls (see `command_child`).
    let pid = check_int(unsafe {
        libc::clone(
            command_child,
            top as *mut libc::c_void,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&raw const shared).cast_mut().cast::<libc::c_void>(),
        )
    })?;
    drop(stack);
    let errno = shared.errno.load(std::sync::atomic::Ordering::Relaxed);
    Ok(Spawned { pid, exec_error: (errno != 0).then(|| io::Error::from_raw_os_error(errno)) })
}

/// The command's child: process group, terminal, parent-death signal, signal state, exec.
extern "C" fn command_child(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `SpawnShared` of `spawn_command`, alive until this child execs or
    // exits (CLONE_VFORK holds the parent until then).
    let shared = unsafe { &*arg.cast::<SpawnShared<'_>>() };
    let spawn = shared.spawn;
    // SAFETY: only system calls on integers and on sigsets and pointer arrays that live on
    // this stack or in the parent's (suspended) memory; nothing allocates or takes a lock.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        if spawn.group == CommandGroup::Session {
            libc::setsid();
        }
        if let CommandGroup::Own { foreground } = spawn.group {
            libc::setpgid(0, 0);
            if let Some(fd) = foreground {
                // The new group is in the background until this call, and tcsetpgrp from the
                // background raises SIGTTOU unless it is blocked. Before the exec, so that the
                // command's first read of the terminal does not stop it.
                libc::sigemptyset(&raw mut set);
                libc::sigaddset(&raw mut set, libc::SIGTTOU);
                libc::sigprocmask(libc::SIG_BLOCK, &raw const set, std::ptr::null_mut());
                libc::tcsetpgrp(fd, libc::getpgrp());
            }
        }
        if spawn.parent_death == ParentDeathSignal::Kill {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
        }
        // Rust ignores SIGPIPE, and an ignored signal stays ignored across execve (`yes |
        // head` would then not end); the command starts with nothing blocked. This child has
        // its own signal dispositions (no CLONE_SIGHAND).
        reset_sigpipe();
        if let Err(error) = set_process_limits(spawn.rlimits) {
            let errno = error.raw_os_error().unwrap_or(libc::EINVAL);
            shared.errno.store(errno, std::sync::atomic::Ordering::Relaxed);
            libc::_exit(crate::error::EXIT_SETUP_FAILED);
        }
        libc::sigemptyset(&raw mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &raw const set, std::ptr::null_mut());
        libc::execvpe(spawn.file.as_ptr(), shared.argv.as_ptr(), shared.envp.as_ptr());
        let errno = io::Error::last_os_error().raw_os_error().unwrap_or(libc::ENOEXEC);
        shared.errno.store(errno, std::sync::atomic::Ordering::Relaxed);
        // An `Os` error: nothing is allocated.
        libc::_exit(crate::error::exec_exit_code(&io::Error::from_raw_os_error(errno)))
    }
}

/// `SO_ATTACH_FILTER` (26 on every architecture cordon builds for; the libc crate does not
/// export it for glibc targets).
const SO_ATTACH_FILTER: libc::c_int = 26;

/// Attaches the classic BPF program `filter` to `socket` (`SO_ATTACH_FILTER`): the kernel
/// queues only the packets it keeps.
pub fn attach_socket_filter(
    socket: &impl std::os::fd::AsRawFd,
    filter: &[libc::sock_filter],
) -> io::Result<()> {
    let len =
        u16::try_from(filter.len()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let program = libc::sock_fprog { len, filter: filter.as_ptr().cast_mut() };
    // SAFETY: `program` points at `filter`, `len` instructions long, both alive for the call;
    // the kernel copies the program and does not keep the pointer.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_ATTACH_FILTER,
            std::ptr::from_ref(&program).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if rc == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

/// Sets each per-process limit, soft and hard, never above the hard limit in place (a limit
/// is an upper bound: one above what the process may have already holds). `RLIMIT_CPU`'s hard
/// limit is a second above the soft one, so a process first gets SIGXCPU, which names the
/// limit, and SIGKILL only if it ignores that. Async-signal-safe: system calls on integers on
/// this stack, nothing allocated (it runs in a child that shares the parent's memory).
pub fn set_process_limits(limits: &[cordon_policies::ProcessLimit]) -> io::Result<()> {
    use cordon_policies::ProcessLimit;
    for limit in limits {
        let (resource, soft, extra) = match *limit {
            ProcessLimit::Data(value) => (libc::RLIMIT_DATA, value, 0),
            ProcessLimit::Processes(value) => (libc::RLIMIT_NPROC, value, 0),
            ProcessLimit::CpuSeconds(value) => (libc::RLIMIT_CPU, value, 1),
            ProcessLimit::FileSize(value) => (libc::RLIMIT_FSIZE, value, 0),
            ProcessLimit::OpenFiles(value) => (libc::RLIMIT_NOFILE, value, 0),
        };
        let mut current = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit and setrlimit read and write the one struct on this stack.
        unsafe {
            check_int(libc::getrlimit(resource, &raw mut current))?;
            let hard = current.rlim_max.min(soft.saturating_add(extra));
            let wanted = libc::rlimit { rlim_cur: soft.min(hard), rlim_max: hard };
            check_int(libc::setrlimit(resource, &raw const wanted))?;
        }
    }
    Ok(())
}

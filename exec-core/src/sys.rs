//! The `unsafe` of exec-core: registering the child's pre-exec step.
//!
//! A function whose soundness depends on its caller (a thread the caller must not start, a
//! descriptor nobody else owns) is an `unsafe fn` whose `# Safety` section says what the caller
//! must make true.

#[cfg(target_os = "linux")]
mod keeper;
#[cfg(target_os = "linux")]
pub use keeper::{CommandGroup, KeptCgroup, keep_unsandboxed};

/// Prepares the child between fork and exec:
/// - `PR_SET_PDEATHSIG`: it gets SIGKILL when the thread that spawned it dies, so killing
///   cordon (even with SIGKILL) kills the command too. The kernel delivers the signal when the
///   spawning *thread* exits: callers spawn from a thread that lives as long as they wait for
///   the child (cordon uses a current-thread runtime).
/// - every descriptor above stderr is marked close-on-exec (`close_range`), so descriptors
///   cordon's own caller leaked to it (a harness's sockets, a terminal master) never reach the
///   sandboxed command.
/// - a process group of its own ([`Terminal::Foreground`]) or a session of its own
///   ([`Terminal::Detach`]); either way the group id is the child's pid.
#[cfg(target_os = "linux")]
pub fn prepare_child(command: &mut std::process::Command, terminal: Terminal) {
    use std::os::unix::process::CommandExt;
    let parent = nix::unistd::getpid();
    let take_terminal = terminal == Terminal::Foreground;
    let controlling = terminal == Terminal::Controlling;
    let detach = own_group_or_session(command, terminal);
    let open_files = original_open_file_limit();
    // SAFETY: the closure runs in the forked child before exec and only makes
    // async-signal-safe system calls (prctl, getppid, close_range, signal, tcsetpgrp, getpid,
    // setsid, ioctl, getrlimit, setrlimit) and `_exit`; it allocates nothing and touches no lock.
    unsafe {
        command.pre_exec(move || {
            mark_descriptors_close_on_exec();
            restore_open_files(open_files);
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl: then nothing would signal us.
            if libc::getppid() != parent.as_raw() {
                libc::_exit(124);
            }
            // The child is the leader of its own process group by now (`process_group(0)`
            // runs before this hook). When cordon's group is the terminal's foreground, make the
            // child's group the foreground instead, as a shell does for a job, so the command can
            // read the terminal and Ctrl-C reaches it. Run in the background (`cordon exec … &`)
            // the terminal stays the shell's: the command stops when it reads, and cordon with
            // it, until the shell continues the job in the foreground.
            if take_terminal && libc::tcgetpgrp(0) == libc::getpgid(parent.as_raw()) {
                // A group that is not the foreground gets SIGTTOU for this call: ignore it.
                let previous = libc::signal(libc::SIGTTOU, libc::SIG_IGN);
                libc::tcsetpgrp(0, libc::getpid());
                libc::signal(libc::SIGTTOU, previous);
            }
            if detach && libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if controlling {
                become_terminal_session()?;
            }
            Ok(())
        });
    }
}

/// In a child that has just started a session of its own, with a new terminal on stdin:
/// makes that terminal the session's controlling terminal (so the window size, Ctrl-C and
/// hang-up reach the command) and gives the signals a terminal delivers their default
/// actions, as a login on a fresh terminal has them (an executor started with `nohup` must not
/// hand its ignored SIGHUP to a shell that should die with its terminal). Async-signal-safe.
fn become_terminal_session() -> std::io::Result<()> {
    // SAFETY: `ioctl(TIOCSCTTY)` and `signal` take integers and change only this (forked)
    // process's terminal and dispositions.
    unsafe {
        if libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        for signal in [libc::SIGHUP, libc::SIGINT, libc::SIGQUIT, libc::SIGTERM, libc::SIGCHLD] {
            libc::signal(signal, libc::SIG_DFL);
        }
    }
    Ok(())
}

/// The soft limit of open files cordon started with, once it raised its own (0 before).
#[cfg(target_os = "linux")]
static ORIGINAL_OPEN_FILES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Records the soft limit of open files cordon started with, when it raises its own: the
/// commands it starts get it back. The first one recorded stays.
#[cfg(target_os = "linux")]
pub fn record_original_open_files(soft: u64) {
    let _ = ORIGINAL_OPEN_FILES.compare_exchange(
        0,
        soft,
        std::sync::atomic::Ordering::SeqCst,
        std::sync::atomic::Ordering::SeqCst,
    );
}

/// The soft limit of open files cordon started with, if it raised its own.
#[cfg(target_os = "linux")]
fn original_open_file_limit() -> Option<u64> {
    match ORIGINAL_OPEN_FILES.load(std::sync::atomic::Ordering::SeqCst) {
        0 => None,
        soft => Some(soft),
    }
}

/// In a child cordon starts: the soft limit of open files cordon was started with (`soft`, when
/// cordon raised its own), not the one cordon raised. Only `getrlimit` and `setrlimit`, which
/// are async-signal-safe.
#[cfg(target_os = "linux")]
fn restore_open_files(soft: Option<u64>) {
    let Some(soft) = soft else { return };
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: two system calls on a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) == 0 {
            limit.rlim_cur = soft.min(limit.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &raw const limit);
        }
    }
}

/// Makes `command`'s child enter the directory `dir` with `fchdir`, instead of changing to a
/// path that may lead elsewhere by the time the child starts. `command` holds `dir` until it
/// is dropped, so the descriptor is open whenever it is spawned.
pub fn enter_directory_in_child<F>(command: &mut std::process::Command, dir: F)
where
    F: std::os::fd::AsRawFd + Send + Sync + 'static,
{
    use std::os::unix::process::CommandExt;
    // Read here: `F`'s `as_raw_fd` is the caller's code, which the forked child may not run.
    let number = dir.as_raw_fd();
    // SAFETY: the closure runs in the forked child before exec and makes one async-signal-safe
    // system call on a descriptor the child inherited (close-on-exec, so open until the exec;
    // `dir`, which the closure owns, keeps it open in this process until after the fork).
    unsafe {
        command.pre_exec(move || {
            // Named, so that the closure owns `dir` and with it the descriptor.
            let _owner = &dir;
            if libc::fchdir(number) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Marks every descriptor above stderr close-on-exec (`close_range` with
/// `CLOSE_RANGE_CLOEXEC`), so that descriptors cordon's own caller leaked to it never reach the
/// sandboxed command. Async-signal-safe: one system call, nothing allocated. Older kernels
/// (before 5.11) lack the flag: then only cordon's own descriptors, which are close-on-exec
/// already, are handled.
#[cfg(target_os = "linux")]
fn mark_descriptors_close_on_exec() {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    // SAFETY: close_range takes integers and changes only descriptor flags.
    unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            CLOSE_RANGE_CLOEXEC,
        );
    }
}

/// `process_group(0)` unless the child is to start a session (`setsid` in its pre-exec hook,
/// which a group leader could not do); true for the session.
fn own_group_or_session(command: &mut std::process::Command, terminal: Terminal) -> bool {
    use std::os::unix::process::CommandExt;
    match terminal {
        Terminal::Foreground => {
            command.process_group(0);
            false
        }
        Terminal::Detach | Terminal::Controlling => true,
    }
}

/// Makes `command`'s child join a cgroup, first thing after the fork, by writing `0` (itself)
/// to each `cgroup.procs` descriptor in `procs` (all of one command cgroup, which `owner`
/// keeps open), and set `limits` (rlimits) — so that nothing the command starts is ever
/// outside the cgroup or above the limits. Register it before every other pre-exec step.
#[cfg(target_os = "linux")]
pub fn limit_child<O>(
    command: &mut std::process::Command,
    owner: O,
    procs: Vec<std::os::fd::RawFd>,
    limits: Vec<cordon_policies::ProcessLimit>,
) where
    O: Send + Sync + 'static,
{
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec and makes only
    // async-signal-safe system calls (write, getrlimit, setrlimit) on descriptors the child
    // inherited (close-on-exec, so open until the exec; `owner`, which the closure owns, keeps
    // them open in this process until after the fork) and on integers; the vectors were built
    // before the fork and are only read.
    unsafe {
        command.pre_exec(move || {
            let _owner = &owner;
            join_cgroup(&procs)?;
            cordon_sandbox_linux::set_process_limits(&limits)
        });
    }
}

/// Writes `0` to each `cgroup.procs` descriptor: this process joins each cgroup.
/// Async-signal-safe.
#[cfg(target_os = "linux")]
fn join_cgroup(procs: &[std::os::fd::RawFd]) -> std::io::Result<()> {
    for fd in procs {
        // SAFETY: write takes a descriptor and one byte of a static string.
        if unsafe { libc::write(*fd, b"0".as_ptr().cast(), 1) } != 1 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// What a forked child needs to run the Linux helper itself instead of exec'ing it: the
/// helper's arguments, the command's environment and its cwd.
#[cfg(target_os = "linux")]
#[derive(Debug, Clone, Copy)]
pub struct InProcessHelper<'a> {
    pub args: &'a cordon_sandbox_linux::HelperArgs,
    pub env: &'a [(std::ffi::OsString, std::ffi::OsString)],
    pub cwd: &'a std::path::Path,
}

/// One exec fewer: when `plan` carries the helper's arguments and this process is
/// single-threaded, makes `command`'s forked child run the Linux helper with the plan's
/// environment instead of exec'ing the helper binary (see
/// `cordon_sandbox_linux::run_in_process`); otherwise leaves `command` as it is. A child
/// forked from a threaded process may not allocate, so the check comes first. The hook runs
/// last, after stdio, the process group and [`prepare_child`]'s, and never returns.
///
/// # Safety
///
/// `command` is spawned before this process starts another thread: the check here finds one
/// thread, and only this thread can start a second, so its answer holds at the fork only if
/// the caller starts none in between.
#[cfg(target_os = "linux")]
pub unsafe fn run_helper_in_child(
    command: &mut std::process::Command,
    plan: Option<InProcessHelper<'_>>,
) {
    use std::os::unix::process::CommandExt;
    let Some(plan) = plan else { return };
    if !cordon_sandbox_linux::single_threaded() {
        tracing::debug!("the helper is exec'd: this process has more than one thread");
        return;
    }
    tracing::debug!("the helper runs in the forked child");
    let args = plan.args.clone();
    let env = plan.env.to_vec();
    let hook = move || -> std::io::Result<()> {
        // SAFETY: the child of a fork of a one-thread process (checked above, and this
        // function's contract), so no lock is held by a vanished thread and the helper may
        // allocate, as the exec'd helper would. It closes the descriptors an exec would close:
        // `prepare_child`'s hook, which ran before this one, marked every descriptor above
        // stderr close-on-exec (cordon's own are anyway), and this child never returns to code
        // that owns one. The plan's `--proxy-fd` is its hand-over socket, whose owner (the
        // plan, in this child's copy of memory) never runs again here.
        unsafe {
            cordon_sandbox_linux::run_in_process(
                &args,
                &env,
                cordon_sandbox_linux::InheritedDescriptors::AllCloseOnExec,
                cordon_sandbox_linux::InProcessStart::Plain,
            )
        }
    };
    // SAFETY: the hook runs in the forked child before exec, and may run ordinary code there
    // because the process is single-threaded until the fork (above).
    unsafe { command.pre_exec(hook) };
}

/// A sandboxed command's supervisor started by [`spawn_namespace_init`], with the read ends of
/// its output pipes.
#[cfg(target_os = "linux")]
pub struct InitChild {
    /// In this process's PID namespace; also the id of its process group (it leads a session).
    pub pid: i32,
    /// Readable when it has exited; [`reap_init`] then collects its status.
    pub pidfd: std::os::fd::OwnedFd,
    pub stdout: std::os::fd::OwnedFd,
    pub stderr: std::os::fd::OwnedFd,
    /// The read end of the pipe on which it reports the command's raw wait status
    /// (`cordon_sandbox_linux::read_status_report`).
    pub status: std::os::fd::OwnedFd,
}

/// Starts `plan`'s command without a terminal (stdin `/dev/null` or this process's own, as
/// `stdin` says; stdout and stderr on pipes)
/// through a child cloned straight into new PID + IPC namespaces, which runs the helper as the
/// namespace's pid 1 (`cordon_sandbox_linux::clone_namespace_init`): one fork and one exit
/// fewer than a forked child that runs the helper, which forks the supervisor. The child is
/// set up as [`prepare_child`] sets one up (a session of its own, parent-death signal,
/// descriptors above stderr closed).
///
/// `Ok(None)`, and nothing started, when this way does not apply: no in-process helper (a
/// configured `linux_sandbox_exe`), no mount view wanted, a threaded process, a cwd that is
/// not a directory (the usual spawn reports that), or a kernel that refuses the namespaces.
#[cfg(target_os = "linux")]
pub fn spawn_namespace_init(
    plan: Option<InProcessHelper<'_>>,
    stdin: InitStdin,
    cgroup: &[std::os::fd::RawFd],
) -> std::io::Result<Option<InitChild>> {
    use cordon_policies::MountViewRequirement;
    use cordon_sandbox_linux::ClonedInit;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    let Some(plan) = plan else { return Ok(None) };
    let args = plan.args;
    // The child moves its status pipe onto that number: a descriptor the helper is to keep
    // must be above it (the network proxy numbers its hand-over socket so).
    let declined = if args.proxy_fd.is_some_and(|fd| fd <= cordon_sandbox_linux::STATUS_REPORT_FD) {
        Some("the proxy's descriptor is too low")
    } else if args.request.mount_view == MountViewRequirement::Disabled {
        Some("no mount view")
    } else if !plan.cwd.is_dir() {
        Some("the cwd is not a directory")
    } else if !standard_descriptors_open() {
        Some("stdin, stdout or stderr is closed")
    } else if !pidfd_wait_supported() {
        Some("the kernel cannot wait on a pidfd")
    } else if !cordon_sandbox_linux::single_threaded() {
        Some("this process has more than one thread")
    } else {
        None
    };
    if let Some(why) = declined {
        tracing::debug!(why, "the supervisor is not cloned into new namespaces");
        return Ok(None);
    }
    let stdin = match stdin {
        InitStdin::Null => Some(OwnedFd::from(std::fs::File::open("/dev/null")?)),
        InitStdin::Inherit => None,
    };
    let (stdout, stdout_child) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    let (stderr, stderr_child) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    let (status, status_child) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
    // To tell whether this process died before the child set its parent-death signal (the
    // child's `getppid` is 0 in its namespace, so that cannot say).
    // SAFETY: pidfd_open takes integers and returns a new descriptor or -1.
    let parent = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) };
    let parent = i32::try_from(parent)
        .ok()
        .filter(|fd| *fd >= 0)
        .ok_or_else(std::io::Error::last_os_error)?;
    // SAFETY: a new descriptor that nothing else owns.
    let parent = unsafe { OwnedFd::from_raw_fd(parent) };
    // SAFETY: this process has one thread (checked above; since then this thread opened files
    // and pipes and started nothing), and the child below ends in `run_in_process` or `_exit`.
    match unsafe { cordon_sandbox_linux::clone_namespace_init() }? {
        None => {
            tracing::debug!("the kernel refuses new PID namespaces here: the helper starts it");
            Ok(None)
        }
        Some(ClonedInit::Parent { pid, pidfd }) => {
            tracing::debug!(pid, "the supervisor is cloned into new PID + IPC namespaces");
            // The child has its ends; reading the status pipe must not block on an early exit.
            nix::fcntl::fcntl(
                &status,
                nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
            )?;
            Ok(Some(InitChild { pid, pidfd, stdout, stderr, status }))
        }
        Some(ClonedInit::Child(init)) => {
            // SAFETY: this is the cloned child, pid 1 of its namespaces, a copy of this
            // single-threaded process. It makes only system calls on descriptors it owns and
            // leaves with `_exit` if one fails; `run_in_process` never returns.
            unsafe {
                let report = cordon_sandbox_linux::STATUS_REPORT_FD;
                let set_up = join_cgroup(cgroup).is_ok()
                    && stdin.as_ref().is_none_or(|fd| libc::dup2(fd.as_raw_fd(), 0) >= 0)
                    && libc::dup2(stdout_child.as_raw_fd(), 1) >= 0
                    && libc::dup2(stderr_child.as_raw_fd(), 2) >= 0
                    // Close-on-exec there too: the supervisor's, never the command's.
                    && (status_child.as_raw_fd() == report
                        || libc::dup3(status_child.as_raw_fd(), report, libc::O_CLOEXEC) >= 0)
                    && libc::setsid() >= 0
                    && libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0)
                        == 0;
                if !set_up {
                    libc::_exit(cordon_sandbox_linux::EXIT_SETUP_FAILED);
                }
                let mut alive =
                    libc::pollfd { fd: parent.as_raw_fd(), events: libc::POLLIN, revents: 0 };
                if libc::poll(&raw mut alive, 1, 0) != 0 {
                    libc::_exit(124);
                }
            }
            // Every descriptor above stderr is closed by the helper (`AllCloseOnExec`): this
            // process's own are all close-on-exec, and a caller's leaked ones are marked so
            // here, as in `prepare_child`. The one the helper is told about (`--proxy-fd`) it
            // keeps.
            mark_descriptors_close_on_exec();
            restore_open_files(original_open_file_limit());
            // SAFETY: a clone of a one-thread process (above) that never returns to code that
            // owns a descriptor; descriptor 3 is the status pipe put there above, and the
            // plan's `--proxy-fd` is its hand-over socket, whose owner (the plan, in this
            // child's copy of memory) never runs again here.
            unsafe {
                cordon_sandbox_linux::run_in_process(
                    args,
                    plan.env,
                    cordon_sandbox_linux::InheritedDescriptors::AllCloseOnExec,
                    cordon_sandbox_linux::InProcessStart::NamespaceInit(init.with_status_report()),
                )
            }
        }
    }
}

/// Registers a descriptor (a socket) with the runtime, to learn when it becomes readable.
pub fn watch_readable(
    fd: std::os::fd::OwnedFd,
) -> std::io::Result<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>> {
    // SAFETY: an `OwnedFd` reports the descriptor it owns, which stays open, on the same
    // file, until the `AsyncFd` drops it.
    unsafe { tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
        .map_err(std::io::Error::from)
}

/// Registers an [`InitChild`]'s pidfd with the runtime, to learn when it becomes readable
/// (the child exited).
#[cfg(target_os = "linux")]
pub fn watch_pidfd(
    pidfd: std::os::fd::OwnedFd,
) -> std::io::Result<tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>> {
    // SAFETY: an `OwnedFd` reports the descriptor it owns, which stays open, on the same
    // pidfd, until the `AsyncFd` drops it.
    unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE)
    }
    .map_err(std::io::Error::from)
}

/// Whether the kernel waits on pidfds (`waitid(P_PIDFD)`, Linux 5.4; `CLONE_PIDFD` alone is
/// 5.2): asked once, with a descriptor that cannot be a pidfd — EBADF where `P_PIDFD` exists,
/// EINVAL where it does not (and for a negative id, so the id is the largest positive one).
#[cfg(target_os = "linux")]
fn pidfd_wait_supported() -> bool {
    const NO_DESCRIPTOR: libc::id_t = i32::MAX as libc::id_t;
    static SUPPORTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SUPPORTED.get_or_init(|| {
        // SAFETY: `info` is a zeroed plain struct; the id names no descriptor, so the kernel
        // only validates the arguments.
        let ret = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(libc::P_PIDFD, NO_DESCRIPTOR, &raw mut info, libc::WEXITED | libc::WNOHANG)
        };
        ret < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EBADF)
    })
}

/// Whether descriptors 0, 1 and 2 are open, so that every descriptor opened for the child is
/// above them and none is overwritten when the child moves its pipes to 0-2 (a caller that
/// closed one gets std's spawn, which handles that).
#[cfg(target_os = "linux")]
fn standard_descriptors_open() -> bool {
    // SAFETY: F_GETFD reads a descriptor's flags and changes nothing.
    (0..3).all(|fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0)
}

/// Sends SIGKILL to the process a pidfd refers to (no pid that could have been reused).
#[cfg(target_os = "linux")]
pub fn kill_pidfd(pidfd: &std::os::fd::OwnedFd) {
    use std::os::fd::AsRawFd;
    // SAFETY: pidfd_send_signal takes a descriptor we own, a signal number and no siginfo.
    unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            libc::SIGKILL,
            std::ptr::null::<libc::siginfo_t>(),
            0 as libc::c_uint,
        );
    }
}

/// Where an [`InitChild`]'s stdin comes from.
#[cfg(target_os = "linux")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitStdin {
    Null,
    /// This process's (a pipe or a file; never a terminal, which this way does not hand over).
    Inherit,
}

/// The raw wait status of an [`InitChild`] that has exited, reaping it; `Ok(None)` while it
/// runs.
#[cfg(target_os = "linux")]
pub fn reap_init(pidfd: &std::os::fd::OwnedFd) -> std::io::Result<Option<i32>> {
    use std::os::fd::AsRawFd;
    let id = libc::id_t::try_from(pidfd.as_raw_fd())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EBADF))?;
    // SAFETY: `info` is a zeroed plain struct the kernel fills; the pidfd is ours.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        if libc::waitid(libc::P_PIDFD, id, &raw mut info, libc::WEXITED | libc::WNOHANG) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if info.si_pid() == 0 {
            return Ok(None);
        }
        let status = info.si_status();
        Ok(Some(match info.si_code {
            libc::CLD_EXITED => (status & 0xff) << 8,
            libc::CLD_DUMPED => status | 0x80,
            _ => status,
        }))
    }
}

/// Elsewhere (macOS) there is no parent-death signal or `close_range`: the process group is
/// still killed on exit and timeout, and every descriptor above stderr is marked close-on-exec
/// one by one (up to the descriptor table size, at most 65536), so descriptors cordon's caller
/// leaked to it never reach `sandbox-exec` and the command.
#[cfg(not(target_os = "linux"))]
pub fn prepare_child(command: &mut std::process::Command, terminal: Terminal) {
    use std::os::unix::process::CommandExt;
    let detach = own_group_or_session(command, terminal);
    let controlling = terminal == Terminal::Controlling;
    // SAFETY: the closure runs in the forked child before exec and only calls
    // async-signal-safe functions (getdtablesize, fcntl, setsid, ioctl, signal); it allocates
    // nothing.
    unsafe {
        command.pre_exec(move || {
            let top = libc::getdtablesize().clamp(3, 65_536);
            for fd in 3..top {
                let flags = libc::fcntl(fd, libc::F_GETFD);
                if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
                    libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
                }
            }
            if detach && libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if controlling {
                become_terminal_session()?;
            }
            Ok(())
        });
    }
}

/// What the child does with cordon's terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Terminal {
    /// Takes the terminal on its stdin as its foreground process group (`cordon exec` on a
    /// terminal: the command reads it, Ctrl-C and job control reach it).
    Foreground,
    /// Starts a session of its own, with no controlling terminal: a command whose stdin is
    /// not a terminal has no business with cordon's, and cannot open `/dev/tty` to write
    /// escape sequences to it or push input into it.
    Detach,
    /// Starts a session of its own whose controlling terminal is the (new) terminal on its
    /// stdin: a PTY session.
    Controlling,
}

/// Whether this process's group is the foreground of the terminal on stdin.
pub fn in_the_foreground() -> bool {
    // SAFETY: tcgetpgrp and getpgrp take and return integers.
    unsafe { libc::tcgetpgrp(0) == libc::getpgrp() }
}

/// What [`reclaim_terminal`] may take the terminal back from.
#[derive(Debug, Clone, Copy)]
pub struct Reclaim {
    /// The child's process group, which was given the terminal.
    pub child: Option<libc::pid_t>,
    /// Whether cordon's group had the terminal when it started the child.
    pub had_terminal: bool,
}

/// Gives the terminal on stdin back to cordon's own process group after the child had it, with
/// its output flowing: a child that stopped it (`tcflow(TCOOFF)`) would keep the relay of its
/// own output from ending, and cordon from showing anything. Only when cordon had the terminal
/// to give, and only from the child's group, a group that is gone, or one of the sandbox's
/// (another PID namespace: the command's own job control made it) — waited for a moment while
/// it dies, as after a timeout, when the command is still being killed. A live group of
/// cordon's own PID namespace is the shell's (cordon was put in the background since), and a
/// group that cannot be signalled (EPERM) is not gone.
pub fn reclaim_terminal(reclaim: Reclaim) {
    // SAFETY: `signal` swaps the SIGTTOU disposition (a background group's tcsetpgrp or tcflow
    // would stop us) and restores it; `tcgetpgrp`/`kill`/`tcsetpgrp`/`getpgrp`/`tcflow` take
    // and return plain integers (signal 0 only checks that the group exists).
    unsafe {
        let previous = libc::signal(libc::SIGTTOU, libc::SIG_IGN);
        let own = libc::getpgrp();
        let foreground = libc::tcgetpgrp(0);
        let gone = |group: libc::pid_t| {
            libc::kill(-group, 0) != 0
                && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
        };
        if reclaim.had_terminal && foreground > 0 && foreground != own {
            let leader = pid_namespace_of(foreground);
            let ours = Some(foreground) == reclaim.child
                || leader
                    .as_ref()
                    .is_some_and(|namespace| Some(namespace) != pid_namespace_of(0).as_ref());
            if ours || leader.is_none() {
                // Killed with the run (a timeout, a closed pipe): its namespace ends in moments.
                for _ in 0..100 {
                    if gone(foreground) {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
            }
            if ours || gone(foreground) {
                libc::tcsetpgrp(0, own);
            }
        }
        libc::tcflow(0, libc::TCOON);
        libc::signal(libc::SIGTTOU, previous);
    }
}

/// The PID namespace of the process `pid` (0: this process), by its link; `None` when it is
/// gone (a process group may outlive its leader).
fn pid_namespace_of(pid: libc::pid_t) -> Option<std::path::PathBuf> {
    let path =
        if pid == 0 { "/proc/self/ns/pid".to_owned() } else { format!("/proc/{pid}/ns/pid") };
    std::fs::read_link(path).ok()
}

/// Whether the child `pid` has stopped since this was last asked (a stop is reported once).
#[cfg(target_os = "linux")]
pub fn child_stopped(pid: libc::pid_t) -> bool {
    let Ok(id) = libc::id_t::try_from(pid) else { return false };
    // SAFETY: `info` is a zeroed plain struct the kernel fills; waitid with only WSTOPPED
    // reaps nothing.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        libc::waitid(libc::P_PID, id, &raw mut info, libc::WSTOPPED | libc::WNOHANG) == 0
            && info.si_pid() == pid
            && info.si_code == libc::CLD_STOPPED
    }
}

/// Stops this process's group as a terminal's SIGTSTP stops a job — the kernel drops the stop
/// where the group is orphaned — then, continued, continues the stopped child's `group`,
/// first handing it the terminal when the shell gave the terminal to this process's group
/// (`fg`); continued in the background (`bg`), the terminal stays the shell's.
#[cfg(target_os = "linux")]
pub fn stop_with_child(group: libc::pid_t) {
    // SAFETY: kill and tcsetpgrp take integers. This group is the terminal's
    // foreground when tcsetpgrp is called, so it raises no SIGTTOU.
    unsafe {
        libc::kill(0, libc::SIGTSTP);
        if in_the_foreground() {
            libc::tcsetpgrp(0, group);
        }
        libc::kill(-group, libc::SIGCONT);
    }
}

/// Makes this process a child subreaper: orphans of the commands it starts are reparented to
/// it instead of init, so [`kill_orphans`] can end them. A long-lived server (the executor)
/// keeps such an orphan as a zombie after it exits, until its own shutdown reaps it.
#[cfg(target_os = "linux")]
pub fn become_subreaper() {
    let _ = nix::sys::prctl::set_child_subreaper(true);
}

#[cfg(not(target_os = "linux"))]
pub fn become_subreaper() {}

/// Kills (SIGKILL) and reaps every child process this process has left — after the command's
/// own child was waited for, those are orphans reparented here — until none is left, however
/// deep the tree (each round ends one generation), or a minute has passed (then a warning: a
/// descendant this process may not kill).
#[cfg(target_os = "linux")]
pub fn kill_orphans() {
    use nix::sys::signal::{Signal, kill};
    use nix::sys::wait::{WaitPidFlag, waitpid};
    use nix::unistd::Pid;
    let me = std::process::id();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let orphans = children_of(me);
        if orphans.is_empty() {
            return;
        }
        if std::time::Instant::now() > deadline {
            tracing::warn!(
                left = orphans.len(),
                "orphans of the command outlived a minute of killing"
            );
            return;
        }
        for pid in &orphans {
            let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
        }
        for pid in orphans {
            // A killed orphan is a zombie until waited for; its own children come to us next.
            let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::__WALL));
        }
    }
}

#[cfg(not(target_os = "linux"))]
pub fn kill_orphans() {}

/// This process's children as its threads' `children` files list them; `None` when the kernel
/// has no such files.
#[cfg(target_os = "linux")]
fn children_from_task_lists() -> Option<Vec<i32>> {
    let mut children = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let list = std::fs::read_to_string(task.path().join("children")).ok()?;
        children.extend(list.split_whitespace().filter_map(|pid| pid.parse::<i32>().ok()));
    }
    Some(children)
}

/// The pids whose parent is `parent` (this process): from `/proc/self/task/*/children` (one
/// small file per thread of ours), else — a kernel without `CONFIG_PROC_CHILDREN` — by reading
/// every `/proc/*/stat`, which costs a millisecond or more on a busy machine.
#[cfg(target_os = "linux")]
fn children_of(parent: u32) -> Vec<i32> {
    if let Some(children) = children_from_task_lists() {
        return children;
    }
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).ok().is_some_and(|stat| {
                // `pid (comm) state ppid …`: comm may hold spaces and parentheses.
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(parent)
            })
        })
        .collect()
}

/// A close-on-exec duplicate of `fd` numbered `lowest` or above (`F_DUPFD_CLOEXEC`).
pub fn duplicate_at_or_above(
    fd: std::os::fd::BorrowedFd<'_>,
    lowest: std::os::fd::RawFd,
) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::{AsRawFd, FromRawFd};
    // SAFETY: F_DUPFD_CLOEXEC reads a descriptor we borrow and returns a new one or -1.
    let duplicate = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, lowest) };
    if duplicate < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel just created `duplicate` for this call; nothing else owns it.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(duplicate) })
}

/// Takes ownership of a descriptor this process just received with `SCM_RIGHTS`.
///
/// # Safety
///
/// `fd` is a number the kernel installed in this process for a message the caller just
/// received, and it is adopted once: the returned `OwnedFd` is its only owner and closes it.
pub unsafe fn adopt_received_fd(fd: std::os::fd::RawFd) -> std::os::fd::OwnedFd {
    use std::os::fd::FromRawFd;
    // SAFETY: an open descriptor with no other owner (this function's contract).
    unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) }
}

/// Whether `signal` is ignored (`SIG_IGN`) in this process.
pub fn signal_ignored(signal: libc::c_int) -> bool {
    // SAFETY: `sigaction` with a NULL new action only fills `current`, a zeroed plain struct.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &raw mut current) == 0
            && current.sa_sigaction == libc::SIG_IGN
    }
}

/// Bytes waiting to be read from `fd` (`FIONREAD`; on a terminal: input its reader has not
/// taken yet). `None` when the descriptor cannot say.
pub fn queued_bytes(fd: std::os::fd::RawFd) -> Option<usize> {
    let mut count: libc::c_int = 0;
    // SAFETY: FIONREAD writes one c_int through the pointer, which points at `count`. A stale
    // descriptor number only makes the call fail (EBADF) or ask another file; nothing else is
    // touched.
    let result = unsafe { libc::ioctl(fd, libc::FIONREAD as _, &mut count) };
    if result < 0 {
        return None;
    }
    usize::try_from(count).ok()
}

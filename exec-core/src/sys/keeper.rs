//! Keeping an unsandboxed command's whole tree from outliving cordon, even when cordon is
//! killed with SIGKILL.
//!
//! A sandboxed command lives in the helper's PID namespace, which dies with the helper. An
//! unsandboxed one (`--yolo`, `danger-full-access`, an approved retry without the sandbox, an
//! executor session that runs so) has no helper, and its parent-death signal reaches only the
//! process cordon started: a `setsid` daemon or a plain background child would be reparented
//! to init and live on. So the child cordon forks becomes the command's keeper, and forks the
//! command, between cordon's fork and the command's exec:
//!
//! ```text
//! cordon
//!  └─ keeper: cordon's child, a child subreaper; its parent-death signal (SIGHUP) and the
//!      │       command's exit wake it, and it kills its descendants until none is left, then
//!      │       exits like the command
//!      └─ the command, in the keeper's process group (or a group of its own that holds the
//!         terminal, the keeper passing signals on)
//! ```
//!
//! Where cordon has a cgroup for it (cgroup v2), the command — not the keeper — joins a cgroup
//! of its own in the keeper's fork, before its exec, and the keeper ends the tree by writing
//! `1` to that cgroup's `cgroup.kill`: the kernel kills every process in it at once, however
//! deep the tree and however fast it forks, and the keeper, outside it, lives on to reap them
//! and report the command's status. Then, and without a cgroup, it kills what is left of its
//! descendants.
//!
//! Every orphan of the command's tree is reparented to the keeper, never to init. When cordon
//! dies the keeper ends the tree; when cordon kills the keeper's group (a timeout, a closed
//! session), cordon itself, a subreaper too, ends the orphans that come to it. The command stays
//! in the host's PID namespace: the ids it sees are the host's, as they are outside cordon (a
//! PID namespace without a mount namespace would show it the host's `/proc` with ids that name
//! nothing in its own, and a user namespace would break setuid programs). What the keeper
//! cannot end: a descendant that changed its real uid (a `sudo` child of an unprivileged
//! caller), and everything once the keeper itself is killed with SIGKILL.
//!
//! All of this runs in a child forked from a process that may have threads, so it allocates
//! nothing and takes no lock: raw system calls only, `clone` without glibc's fork handlers.
//! Tested end to end (`tests/suite/unsandboxed_containment.rs`): cordon and the executor
//! killed with SIGKILL leave no child of the command, as root and as uid 65534.

use std::io;
use std::os::fd::RawFd;
use std::os::unix::process::CommandExt;

/// Where the command's process group is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandGroup {
    /// The keeper's (the group cordon signals and kills): its signals reach the command
    /// directly, and nothing is passed on.
    Keeper,
    /// A group of its own that takes the terminal on stdin as its foreground (a PTY session,
    /// whose foreground leader is watched for an idle prompt); the keeper passes the signals it
    /// is sent on.
    OwnForeground,
}

/// The signals the keeper passes on to a command with a group of its own.
const FORWARDED: [libc::c_int; 9] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGWINCH,
    libc::SIGCONT,
];

/// `si_code` of a signal the kernel itself sent (a terminal's INT, QUIT, WINCH).
const SI_KERNEL: libc::c_int = 0x80;

/// The cgroup that holds an unsandboxed command's tree, as its keeper uses it.
#[derive(Debug)]
pub struct KeptCgroup<O> {
    /// `cgroup.procs` descriptors the command writes `0` to, joining each leaf.
    pub join: Vec<RawFd>,
    /// `cgroup.kill`, which the keeper writes `1` to when the tree must end.
    pub kill: Option<RawFd>,
    /// The cgroup's directory, which the command is started in by `clone3(CLONE_INTO_CGROUP)`
    /// where the kernel has it (then `join` is not needed).
    pub into: Option<RawFd>,
    /// What keeps the descriptors open in this process until the fork.
    pub owner: O,
}

/// Makes `command`'s child the keeper of the command it forks (see the module docs). Register
/// it last: the steps before it run in the keeper (and are inherited), the exec in the command.
pub fn keep_unsandboxed<O: Send + Sync + 'static>(
    command: &mut std::process::Command,
    group: CommandGroup,
    cgroup: KeptCgroup<O>,
) {
    // SAFETY: the closure runs in the forked child before exec. It makes only async-signal-safe
    // system calls (sigprocmask, clone, clone3, prctl, getppid, getpid, close_range, setpgid,
    // tcsetpgrp, sigwaitinfo, wait4, kill, open, read, write, nanosleep, setrlimit, signal) and
    // `_exit`, on stack values and on the descriptors `cgroup` holds (close-on-exec, open until
    // the exec; `owner` keeps them open in this process until after the fork); the vector was
    // built before the fork and is only read. It allocates nothing and touches no lock.
    // `clone` is the raw system call (no glibc fork handlers, which take locks another thread
    // may have held).
    unsafe {
        command.pre_exec(move || {
            let _owner = &cgroup.owner;
            keep(group, &cgroup.join, cgroup.kill.unwrap_or(-1), cgroup.into.unwrap_or(-1))
        });
    }
}

/// The keeper: forks the command (returns in it, to exec), then reaps, passes signals on and,
/// when the command has exited or cordon is gone, ends the tree and exits like the command.
///
/// # Safety
///
/// In a forked child, before exec; see [`keep_unsandboxed`].
unsafe fn keep(group: CommandGroup, join: &[RawFd], kill: RawFd, into: RawFd) -> io::Result<()> {
    // SAFETY: plain system calls on stack values (this function's contract).
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut before: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&raw mut all);
        // Nothing may end the keeper by surprise from here on (SIGKILL aside); its signals,
        // cordon's death (SIGHUP) among them, are read below. The command gets the mask back.
        libc::sigprocmask(libc::SIG_SETMASK, &raw const all, &raw mut before);
        let restore = |error: io::Error| {
            libc::sigprocmask(libc::SIG_SETMASK, &raw const before, std::ptr::null_mut());
            Err(error)
        };
        let cordon = libc::getppid();
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0
            || libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGHUP as libc::c_ulong, 0, 0, 0) != 0
        {
            return restore(io::Error::last_os_error());
        }
        // Born in its cgroup where the kernel can (no migration, which waits for an RCU grace
        // period); else forked, and moved in before anything of it runs.
        let mut command = if into >= 0 { fork_into(into) } else { -1 };
        let born_inside = command >= 0;
        if command < 0 {
            command = raw_fork();
        }
        if command < 0 {
            return restore(io::Error::last_os_error());
        }
        if command == 0 {
            // A command that cannot join does not run (its tree limits, if any, would not
            // hold).
            for fd in join.iter().filter(|_| !born_inside) {
                if libc::write(*fd, b"0".as_ptr().cast(), 1) != 1 {
                    return restore(io::Error::last_os_error());
                }
            }
            if group == CommandGroup::OwnForeground {
                // SIGTTOU is blocked: a background group may take the terminal.
                libc::setpgid(0, 0);
                libc::tcsetpgrp(0, libc::getpgrp());
            }
            libc::sigprocmask(libc::SIG_SETMASK, &raw const before, std::ptr::null_mut());
            return Ok(());
        }
        // Every descriptor but `cgroup.kill`: the command's output pipes and terminal, and the
        // spawner's exec-error pipe, whose end of file tells it the command started.
        close_all_but(kill);
        let mut status = None;
        while status.is_none() {
            let (signal, code) = next_signal();
            if signal == libc::SIGCHLD {
                status = reap(command);
                continue;
            }
            if libc::getppid() != cordon {
                // cordon is gone (killed): so is everything here.
                end_tree(kill);
                exit_like(libc::SIGKILL)
            }
            if group == CommandGroup::OwnForeground && code != SI_KERNEL && signal > 0 {
                libc::kill(command, signal);
            }
        }
        end_tree(kill);
        exit_like(status.unwrap_or(libc::SIGKILL))
    }
}

/// Closes every descriptor but `keep` (none when it is negative).
fn close_all_but(keep: RawFd) {
    let close = |first: libc::c_uint, last: libc::c_uint| {
        // SAFETY: close_range takes integers.
        unsafe { libc::syscall(libc::SYS_close_range, first, last, 0) };
    };
    match libc::c_uint::try_from(keep) {
        Ok(keep) => {
            if keep > 0 {
                close(0, keep - 1);
            }
            close(keep.saturating_add(1), libc::c_uint::MAX);
        }
        Err(_) => close(0, libc::c_uint::MAX),
    }
}

/// Ends the command's tree: the cgroup killed whole where there is one (`kill` a descriptor of
/// its `cgroup.kill`), then every descendant left (one that moved itself out of the cgroup, or
/// all of them without one) killed and reaped.
fn end_tree(kill: RawFd) {
    if kill >= 0 {
        // SAFETY: write takes a descriptor and one byte of a static string.
        unsafe { libc::write(kill, b"1".as_ptr().cast(), 1) };
    }
    kill_descendants();
}

/// A fork by the raw `clone` system call (`SIGCHLD` to the parent when the child ends).
///
/// # Safety
///
/// In a forked child, before exec; the child continues on a copy of this stack.
unsafe fn raw_fork() -> libc::pid_t {
    // SAFETY: clone without CLONE_VM and without a new stack is a fork; the remaining
    // arguments (parent tid, child tid, tls) are unused without the flags that name them.
    let pid =
        unsafe { libc::syscall(libc::SYS_clone, libc::c_long::from(libc::SIGCHLD), 0, 0, 0, 0) };
    libc::pid_t::try_from(pid).unwrap_or(-1)
}

/// `struct clone_args` of clone3(2) up to `cgroup` (the kernel's `CLONE_ARGS_SIZE_VER2`).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// clone3's flag for a child that starts in the cgroup `cgroup` names.
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// A fork whose child starts in the cgroup v2 directory `cgroup` (a descriptor); -1 where the
/// kernel cannot (no clone3, no CLONE_INTO_CGROUP: before Linux 5.7), and the caller forks.
///
/// # Safety
///
/// In a forked child, before exec; the child continues on a copy of this stack.
unsafe fn fork_into(cgroup: RawFd) -> libc::pid_t {
    let Ok(cgroup) = u64::try_from(cgroup) else { return -1 };
    let args = CloneArgs {
        flags: CLONE_INTO_CGROUP,
        exit_signal: libc::SIGCHLD as u64,
        cgroup,
        ..CloneArgs::default()
    };
    // SAFETY: clone3 without CLONE_VM and without a stack is a fork; it reads `args`, of the
    // size given, on this stack.
    let pid = unsafe {
        libc::syscall(libc::SYS_clone3, &raw const args, std::mem::size_of::<CloneArgs>())
    };
    libc::pid_t::try_from(pid).unwrap_or(-1)
}

/// Exits with the code, or dies of the signal, that a raw wait status describes (without a
/// core dump of its own).
///
/// # Safety
///
/// In a forked child; every signal is blocked.
unsafe fn exit_like(status: libc::c_int) -> ! {
    // SAFETY: plain system calls on stack values (this function's contract).
    unsafe {
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            let no_core = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
            libc::setrlimit(libc::RLIMIT_CORE, &raw const no_core);
            libc::signal(signal, libc::SIG_DFL);
            libc::kill(libc::getpid(), signal);
            let mut only: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&raw mut only);
            libc::sigaddset(&raw mut only, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &raw const only, std::ptr::null_mut());
            libc::_exit(128 + signal)
        }
        libc::_exit(libc::WEXITSTATUS(status))
    }
}

/// The next pending signal of [`FORWARDED`] and SIGCHLD, with its `si_code`.
fn next_signal() -> (libc::c_int, libc::c_int) {
    // SAFETY: a signal set and a siginfo on the stack, filled by the kernel.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        libc::sigaddset(&raw mut set, libc::SIGCHLD);
        for signal in FORWARDED {
            libc::sigaddset(&raw mut set, signal);
        }
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let signal = libc::sigwaitinfo(&raw const set, &raw mut info);
        (signal, info.si_code)
    }
}

/// Reaps every child that has ended; the raw status of `command` if it was one of them.
fn reap(command: libc::pid_t) -> Option<libc::c_int> {
    let mut found = None;
    loop {
        let mut status = 0;
        // SAFETY: wait4 writes the status through a pointer to a stack value.
        let pid = unsafe {
            libc::wait4(-1, &raw mut status, libc::WNOHANG | libc::__WALL, std::ptr::null_mut())
        };
        if pid <= 0 {
            return found;
        }
        if pid == command {
            found = Some(status);
        }
    }
}

/// How long the keeper goes on killing: time, not rounds, bounds it, since each round ends one
/// generation of a chain (the children of each killed process come here next) and a chain can
/// be thousands deep. Past it is only a descendant this process may not kill.
const KILL_FOR_SECONDS: libc::time_t = 60;

/// Kills (SIGKILL) and reaps this subreaper's children until none is left, however deep the
/// tree, or [`KILL_FOR_SECONDS`] have passed.
fn kill_descendants() {
    let started = monotonic_seconds();
    loop {
        let mut any = false;
        each_child(|pid| {
            any = true;
            // SAFETY: kill takes integers.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        });
        let _ = reap(0);
        if !any || monotonic_seconds().saturating_sub(started) > KILL_FOR_SECONDS {
            return;
        }
        // The killed processes' children are reparented here once those have exited.
        let pause = libc::timespec { tv_sec: 0, tv_nsec: 200_000 };
        // SAFETY: nanosleep reads the struct it is given.
        unsafe { libc::nanosleep(&raw const pause, std::ptr::null_mut()) };
    }
}

/// Seconds of the monotonic clock (no allocation, no lock: this runs in a forked child).
fn monotonic_seconds() -> libc::time_t {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the struct it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &raw mut now) };
    now.tv_sec
}

/// Calls `each` with every pid in this thread's `children` file (CONFIG_PROC_CHILDREN),
/// parsed as it is read.
fn each_child(mut each: impl FnMut(libc::pid_t)) {
    // SAFETY: open of a static C string, reads into a stack buffer, close of what was opened.
    unsafe {
        let fd =
            libc::open(c"/proc/thread-self/children".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return;
        }
        let mut buf = [0u8; 512];
        let mut pid: libc::pid_t = 0;
        loop {
            let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            let Ok(n @ 1..) = usize::try_from(n) else { break };
            for byte in &buf[..n] {
                if byte.is_ascii_digit() {
                    pid = pid.saturating_mul(10).saturating_add(libc::pid_t::from(byte - b'0'));
                } else if pid > 0 {
                    each(pid);
                    pid = 0;
                }
            }
        }
        if pid > 0 {
            each(pid);
        }
        libc::close(fd);
    }
}

//! Keeping an unsandboxed command's whole tree from outliving cordon, even when cordon is
//! killed with SIGKILL.
//!
//! A sandboxed command lives in the helper's PID namespace, which dies with the helper. An
//! unsandboxed one (`--yolo`, `danger-full-access`, an approved retry without the sandbox, an
//! executor session that runs so) has no helper, and its parent-death signal reaches only the
//! process cordon started: a `setsid` daemon or a plain background child would be reparented
//! to init and live on. So the child cordon forks splits once more, between its fork and the
//! command's exec:
//!
//! ```text
//! cordon
//!  └─ relay: cordon's child, dies with cordon (parent-death SIGKILL); waits, passes signals
//!      │      on, exits like the command
//!      └─ keeper: a child subreaper in a process group of its own; wakes when the relay dies
//!          │       (its parent-death signal) or the command exits, and kills its descendants
//!          │       until none is left
//!          └─ the command, in the relay's process group (or a group of its own that holds
//!             the terminal)
//! ```
//!
//! Every orphan of the command's tree is reparented to the keeper, never to init, so a kill of
//! the relay's group (cordon's timeout, an executor closing the session) or cordon's death
//! leaves the keeper to end what is left. The command stays in the host's PID namespace: the ids
//! it sees are the host's, as they are outside cordon (a PID namespace without a mount
//! namespace would show it the host's `/proc` with ids that name nothing in its own, and a
//! user namespace would break setuid programs). What the keeper cannot end: a descendant that
//! changed its real uid (a `sudo` child of an unprivileged caller), and everything once the
//! keeper itself is killed with SIGKILL.
//!
//! All of this runs in a child forked from a process that may have threads, so it allocates
//! nothing and takes no lock: raw system calls only, `clone` without glibc's fork handlers.

use std::io;
use std::os::unix::process::CommandExt;

/// Where the command's process group is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandGroup {
    /// The relay's (the group cordon signals and kills): its signals reach the command
    /// directly, and nothing is passed on.
    Relay,
    /// A group of its own that takes the terminal on stdin as its foreground (a PTY session,
    /// whose foreground leader is watched for an idle prompt); the relay passes the signals it
    /// receives on, through the keeper.
    OwnForeground,
}

/// The signals the relay and the keeper pass on.
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

/// The exit code of a relay whose keeper could not start the command.
const EXIT_NOT_STARTED: libc::c_int = 125;

/// Makes `command`'s child split into the relay, the keeper and the command (see the module
/// docs). Register it last: the steps before it run in the relay (and are inherited), the
/// exec in the command.
pub fn keep_unsandboxed(command: &mut std::process::Command, group: CommandGroup) {
    // SAFETY: the closure runs in the forked child before exec. It makes only async-signal-safe
    // system calls (sigprocmask, pipe2, clone, prctl, getppid, getpid, close_range, setpgid,
    // tcsetpgrp, sigwaitinfo, wait4, kill, open, read, write, nanosleep, setrlimit, signal)
    // and `_exit`, on stack values; it allocates nothing and touches no lock. `clone` is the raw
    // system call (no glibc fork handlers, which take locks another thread may have held).
    unsafe {
        command.pre_exec(move || split(group));
    }
}

/// # Safety
///
/// In a forked child, before exec; see [`keep_unsandboxed`].
unsafe fn split(group: CommandGroup) -> io::Result<()> {
    // SAFETY: plain system calls on stack values (this function's contract).
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut before: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&raw mut all);
        // Nothing may end the relay or the keeper by surprise from here on; the command gets
        // the mask back.
        libc::sigprocmask(libc::SIG_SETMASK, &raw const all, &raw mut before);
        let mut report = [0; 2];
        if libc::pipe2(report.as_mut_ptr(), libc::O_CLOEXEC) < 0 {
            let error = io::Error::last_os_error();
            libc::sigprocmask(libc::SIG_SETMASK, &raw const before, std::ptr::null_mut());
            return Err(error);
        }
        let [report_read, report_write] = report;
        let relay = libc::getpid();
        let keeper = raw_fork();
        if keeper < 0 {
            let error = io::Error::last_os_error();
            libc::close(report_read);
            libc::close(report_write);
            libc::sigprocmask(libc::SIG_SETMASK, &raw const before, std::ptr::null_mut());
            return Err(error);
        }
        if keeper > 0 {
            libc::close(report_write);
            relay_waits(keeper, report_read, group)
        }
        libc::close(report_read);
        keep(Keeper { group, relay, report: report_write }, &before)
    }
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

/// The keeper's state.
struct Keeper {
    group: CommandGroup,
    /// The relay's pid: while it is the keeper's parent, the relay lives.
    relay: libc::pid_t,
    /// Where the command's raw wait status goes.
    report: libc::c_int,
}

/// The keeper: starts the command (returns in it, to exec), then reaps, passes signals on and,
/// when the command has exited or the relay is gone, ends the tree and exits.
///
/// # Safety
///
/// In a forked child, before exec; every signal is blocked; `before` is the mask the command
/// gets.
unsafe fn keep(keeper: Keeper, before: &libc::sigset_t) -> io::Result<()> {
    // SAFETY: plain system calls on stack values (this function's contract).
    unsafe {
        // SIGHUP stays blocked: it is read below, like every signal here.
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0
            || libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGHUP as libc::c_ulong, 0, 0, 0) != 0
            || libc::getppid() != keeper.relay
        {
            libc::_exit(EXIT_NOT_STARTED);
        }
        let command = raw_fork();
        if command < 0 {
            libc::_exit(EXIT_NOT_STARTED);
        }
        if command == 0 {
            libc::close(keeper.report);
            if keeper.group == CommandGroup::OwnForeground {
                // SIGTTOU is blocked: a background group may take the terminal.
                libc::setpgid(0, 0);
                libc::tcsetpgrp(0, libc::getpgrp());
            }
            libc::sigprocmask(libc::SIG_SETMASK, before, std::ptr::null_mut());
            return Ok(());
        }
        // Out of the relay's group (the command stays there): a kill of that group (a
        // timeout, a session closed) ends the relay, and the keeper then ends the rest.
        libc::setpgid(0, 0);
        // Every descriptor but the report pipe: the command's output pipes and terminal, the
        // spawner's exec-error pipe (whose end of file tells it the command started).
        close_all_but(keeper.report);
        let mut status = None;
        while status.is_none() {
            let (signal, sender) = wait_signal();
            if signal == libc::SIGCHLD {
                status = reap(command);
                continue;
            }
            if libc::getppid() != keeper.relay {
                // The relay is gone (cordon was killed, or its group): so is everything here.
                kill_descendants();
                libc::_exit(EXIT_NOT_STARTED);
            }
            if keeper.group == CommandGroup::OwnForeground && sender == keeper.relay && signal > 0 {
                libc::kill(command, signal);
            }
        }
        kill_descendants();
        let raw = status.unwrap_or(libc::SIGKILL).to_ne_bytes();
        libc::write(keeper.report, raw.as_ptr().cast(), raw.len());
        libc::_exit(0)
    }
}

/// The relay: waits for the keeper, passes signals on when the command has a group of its
/// own, and ends like the command. Never returns.
///
/// # Safety
///
/// In a forked child, before exec; every signal is blocked.
unsafe fn relay_waits(keeper: libc::pid_t, report: libc::c_int, group: CommandGroup) -> ! {
    // SAFETY: plain system calls on stack values (this function's contract).
    unsafe {
        close_all_but(report);
        let own = loop {
            let (signal, code) = wait_signal_code();
            if signal == libc::SIGCHLD {
                let mut status = 0;
                if libc::wait4(
                    keeper,
                    &raw mut status,
                    libc::WNOHANG | libc::__WALL,
                    std::ptr::null_mut(),
                ) == keeper
                {
                    break status;
                }
            } else if group == CommandGroup::OwnForeground && code != SI_KERNEL && signal > 0 {
                libc::kill(keeper, signal);
            }
        };
        let mut raw = [0u8; 4];
        let status = if libc::read(report, raw.as_mut_ptr().cast(), raw.len()) == 4 {
            i32::from_ne_bytes(raw)
        } else {
            own
        };
        exit_like(status)
    }
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

/// Closes every descriptor but `keep` (the standard ones too).
fn close_all_but(keep: libc::c_int) {
    // SAFETY: close_range takes integers and closes descriptors of this (forked) process,
    // which owns no Rust object that uses them again.
    unsafe {
        if keep > 0 {
            libc::syscall(libc::SYS_close_range, 0 as libc::c_uint, (keep - 1) as libc::c_uint, 0);
        }
        libc::syscall(libc::SYS_close_range, (keep + 1) as libc::c_uint, libc::c_uint::MAX, 0);
    }
}

/// The next pending signal of [`FORWARDED`] and SIGCHLD, with its sender's pid.
fn wait_signal() -> (libc::c_int, libc::pid_t) {
    let (signal, _, sender) = next_signal();
    (signal, sender)
}

/// The next pending signal of [`FORWARDED`] and SIGCHLD, with its `si_code`.
fn wait_signal_code() -> (libc::c_int, libc::c_int) {
    let (signal, code, _) = next_signal();
    (signal, code)
}

fn next_signal() -> (libc::c_int, libc::c_int, libc::pid_t) {
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
        (signal, info.si_code, if signal > 0 { info.si_pid() } else { 0 })
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

/// Kills (SIGKILL) and reaps this subreaper's children until none is left: the children of
/// each killed one come here next. Bounded, for a descendant it may not kill.
fn kill_descendants() {
    for _ in 0..1000 {
        let mut any = false;
        each_child(|pid| {
            any = true;
            // SAFETY: kill takes integers.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        });
        let _ = reap(0);
        if !any {
            return;
        }
        let pause = libc::timespec { tv_sec: 0, tv_nsec: 1_000_000 };
        // SAFETY: nanosleep reads the struct it is given.
        unsafe { libc::nanosleep(&raw const pause, std::ptr::null_mut()) };
    }
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

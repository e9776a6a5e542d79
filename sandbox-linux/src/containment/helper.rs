//! The helper's side of the split: wait for the supervisor, forward signals to it, act on its
//! reports, and exit like the command.

use std::os::fd::{AsFd, OwnedFd};

use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};

use super::{Report, SI_KERNEL, TAKE_TERMINAL, TO_GROUP, Terminal, helper_signals};
use crate::sys::{self, Wait};

/// The helper's side: forward signals until the supervisor exits, then exit like the command.
///
/// It blocks in `read` on a signalfd, never in `poll`: the executor decides that an
/// interactive session is back at its prompt when the terminal's foreground group leader (this
/// process, until the command takes the terminal) sits in `poll`/`select` or `read(0)`. Reports
/// from the supervisor therefore arrive as SIGIO (`O_ASYNC` on the pipe).
pub(super) fn helper_waits(
    supervisor: libc::pid_t,
    terminal: Terminal,
    to_supervisor: &OwnedFd,
    from_supervisor: &OwnedFd,
    after_run: AfterCommand,
) -> ! {
    let mut reports = Vec::new();
    let mut command_status = None;
    let mut started = false;
    // Reads what the supervisor sent so far (the pipe is non-blocking) and acts on it.
    let mut read_reports = |command_status: &mut Option<libc::c_int>, started: &mut bool| {
        let mut buf = [0u8; 64];
        while let Ok(n @ 1..) = nix::unistd::read(from_supervisor, &mut buf) {
            reports.extend_from_slice(&buf[..n]);
        }
        while reports.len() >= Report::LEN {
            let mut message = [0u8; Report::LEN];
            message.copy_from_slice(&reports[..Report::LEN]);
            reports.drain(..Report::LEN);
            match Report::decode(message) {
                Some(Report::Started) => *started = true,
                Some(Report::Stopped) => stop_with_the_command(to_supervisor),
                Some(Report::Exited(status)) => {
                    *started = true;
                    *command_status = Some(status);
                }
                None => {}
            }
        }
    };
    let async_reports = sys::signal_when_readable(from_supervisor.as_fd());
    let signals = SignalFd::with_flags(&helper_signals(), SfdFlags::SFD_CLOEXEC);
    let status = match (signals, async_reports) {
        (Ok(signals), Ok(())) => loop {
            match signals.read_signal() {
                Ok(Some(info)) if info.ssi_signo == Signal::SIGIO as u32 => {
                    read_reports(&mut command_status, &mut started);
                }
                Ok(Some(info)) if info.ssi_signo == Signal::SIGCHLD as u32 => {
                    read_reports(&mut command_status, &mut started);
                    match sys::wait_raw(supervisor, Wait::NoHang) {
                        Ok(None) => {}
                        done => break done,
                    }
                }
                Ok(Some(info)) if ends_a_run(info.ssi_signo) => {
                    read_reports(&mut command_status, &mut started);
                    if !started {
                        // Still setting up: nothing there reads signals yet.
                        let _ = sys::send_signal(supervisor, libc::SIGKILL);
                        let _ = sys::wait_raw(supervisor, Wait::Block);
                        let signal = libc::c_int::try_from(info.ssi_signo).unwrap_or(libc::SIGTERM);
                        exit_like(signal);
                    }
                    forward(to_supervisor, &info, terminal);
                }
                Ok(Some(info)) if info.ssi_signo == Signal::SIGTSTP as u32 => {
                    // Ctrl-Z (or `kill -TSTP`): the job stops, the command's group with it
                    // when the terminal does not reach that group (a session of its own,
                    // whose group is orphaned: only SIGSTOP stops it), and `fg` or `bg`
                    // continues both (SIGCONT, forwarded below). Whether this process stops
                    // the kernel decides (not where nothing would continue it: no job-control
                    // shell above); when it does not, the command's group goes on too.
                    let own_group = terminal == Terminal::None;
                    let to_group = |signal: libc::c_int| {
                        let byte = TO_GROUP | u8::try_from(signal).unwrap_or(0);
                        let _ = nix::unistd::write(to_supervisor, &[byte]);
                    };
                    if own_group {
                        to_group(libc::SIGSTOP);
                    }
                    if !sys::stop_as_a_job() && own_group {
                        to_group(libc::SIGCONT);
                    }
                }
                Ok(Some(info)) => {
                    if info.ssi_signo == Signal::SIGCONT as u32
                        && matches!(Terminal::of_helper(), Terminal::Foreground(_))
                    {
                        // `fg` after a stop: the shell gave the terminal back to this group.
                        let _ = nix::unistd::write(to_supervisor, &[TAKE_TERMINAL]);
                    }
                    forward(to_supervisor, &info, terminal);
                }
                Ok(None) | Err(nix::Error::EINTR) => {}
                Err(_) => break sys::wait_raw(supervisor, Wait::Block),
            }
        },
        // Cannot read signals: wait without forwarding them.
        _ => sys::wait_raw(supervisor, Wait::Block),
    };
    let supervisor_status = match status {
        Ok(status) => status.map_or(0, |(_, status)| status),
        Err(error) => {
            crate::messages::error(format_args!("waiting for the sandboxed command: {error}"));
            sys::exit_now(crate::EXIT_SETUP_FAILED)
        }
    };
    // The supervisor wrote its last report before it exited: it is in the pipe now.
    read_reports(&mut command_status, &mut started);
    // Nothing of the command is left (the namespace ended with its pid 1, or the subreaper
    // killed the rest): what it created where the policy keeps names read-only goes.
    if let Some((watch, sweeper)) = after_run.watch {
        if started {
            report_after_run(&watch.move_aside());
        }
        if let Some(sweeper) = sweeper {
            let _ = nix::unistd::write(&sweeper, &[SWEPT]);
        }
    }
    // The changes reach the roots before the caller learns the command is over.
    if let Some(applier) = after_run.applier
        && let Err(error) = applier.finish()
    {
        give_terminal_back(terminal);
        crate::messages::error(&error);
        sys::exit_now(error.exit_code());
    }
    give_terminal_back(terminal);
    // No report: the supervisor failed before the command ran (its own exit code, e.g. 125)
    // or was killed.
    exit_like(command_status.unwrap_or(supervisor_status))
}

/// The steps after the command, with the sweeper that does the watch's when the helper cannot.
pub(super) struct AfterCommand {
    pub watch: Option<(crate::planted::Watch, Option<OwnedFd>)>,
    pub applier: Option<super::Applier>,
}

/// What the helper sends its sweeper when it did the step after the run itself.
const SWEPT: u8 = b'd';

/// Forks the sweeper: the step after the run in a process of its own, which a SIGKILL of the
/// helper (a harness's timeout kills its whole group) does not end. Forked before the PID
/// namespace exists, so it stays outside it; in a session of its own, holding none of the
/// helper's descriptors but stderr, the pipe whose write end it returns and `watch`'s. It reads
/// the supervisor's pid, then waits: [`SWEPT`] (the helper did the step) ends it; end of file
/// (the helper is gone) makes it wait until the supervisor has ended — and with it, as the
/// namespace's pid 1, every process of the command — then move aside what `watch` finds
/// planted. `None` when it cannot be started: the helper's own step still runs.
pub(super) fn start_sweeper(watch: &crate::planted::Watch) -> Option<OwnedFd> {
    use std::os::fd::AsRawFd;
    let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).ok()?;
    // SAFETY: the helper has one thread (split's contract).
    match unsafe { sys::fork() } {
        Ok(sys::Forked::Parent { .. }) => Some(write),
        Ok(sys::Forked::Child) => {
            drop(write);
            let _ = nix::unistd::setsid();
            let mut keep = watch.descriptors();
            keep.extend([2, read.as_raw_fd()]);
            close_all_but(&keep);
            let mut pid = [0u8; 4];
            if read_exact(&read, &mut pid).is_err() {
                // The helper went away before it started the supervisor: nothing ran.
                sys::exit_now(0);
            }
            let supervisor = libc::pid_t::from_ne_bytes(pid);
            let mut byte = [0u8; 1];
            if read_exact(&read, &mut byte).is_ok() {
                sys::exit_now(0);
            }
            while process_running(supervisor) {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            report_after_run(&watch.move_aside());
            sys::exit_now(0)
        }
        Err(_) => None,
    }
}

/// Tells the sweeper which process to wait for.
pub(super) fn tell_sweeper(sweeper: &OwnedFd, supervisor: libc::pid_t) {
    let _ = nix::unistd::write(sweeper, &supervisor.to_ne_bytes());
}

/// Fills `buf` from `fd`; `Err` at end of file first.
pub(super) fn read_exact(fd: &OwnedFd, buf: &mut [u8]) -> Result<(), ()> {
    let mut at = 0;
    while at < buf.len() {
        match nix::unistd::read(fd, &mut buf[at..]) {
            Ok(0) => return Err(()),
            Ok(n) => at += n,
            Err(nix::Error::EINTR) => {}
            Err(_) => return Err(()),
        }
    }
    Ok(())
}

/// Closes every descriptor of this process but `keep`.
pub(super) fn close_all_but(keep: &[std::os::fd::RawFd]) {
    let open: Vec<std::os::fd::RawFd> = std::fs::read_dir("/proc/self/fd")
        .map(|dir| {
            dir.flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
                .collect()
        })
        .unwrap_or_default();
    for fd in open.into_iter().filter(|fd| !keep.contains(fd)) {
        let _ = nix::unistd::close(fd);
    }
}

/// Whether `pid` is a process that has not exited (a zombie has).
pub(super) fn process_running(pid: libc::pid_t) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // The state follows the command name, which is in parentheses and may hold any byte.
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|state| state != 'Z' && state != 'X')
    })
}

/// One line naming what was moved aside (the first five), so the caller knows where it went.
fn report_after_run(after: &crate::planted::AfterRun) {
    // Quoted (no byte of a planted name reaches the terminal raw), and each cut to a line's
    // worth: a path is as long as the command makes it.
    let quoted =
        |path: &std::path::Path| cordon_policies::abbreviate(&format!("{path:?}"), 200).text;
    let planted = &after.planted;
    if !planted.is_empty() {
        let named: Vec<String> = planted
            .iter()
            .take(5)
            .map(|p| match &p.moved_to {
                Some(to) => format!("{} -> {}", quoted(&p.path), quoted(to)),
                None => format!("{} (could not be moved)", quoted(&p.path)),
            })
            .collect();
        let more = planted.len().saturating_sub(5);
        crate::messages::warning(format_args!(
            "the command created what git, a shell or another tool would later run code from; \
             moved aside: {}{}",
            named.join(", "),
            if more > 0 { format!(" and {more} more") } else { String::new() },
        ));
    }
    if let Some(first) = after.unsearched.first() {
        let more = match after.unsearched.len() {
            1 => String::new(),
            n => format!(" and {} more", n - 1),
        };
        crate::messages::warning(format_args!(
            "not searched after the run for repositories the command created (too many \
             directories or repositories, too deep, or not readable): {}{more}; git run there \
             later may obey a config or hooks the command wrote: look before using git there",
            quoted(first)
        ));
    }
}

/// Sends a signal the helper received on to the supervisor. One the kernel sent for a terminal
/// (Ctrl-C, Ctrl-\, a hang-up, a window size) went to this process's group: it reached the
/// command too when the command shares that terminal, and is not sent again; handed none of
/// it, the command is in a session of its own that the terminal does not signal, and its whole
/// group gets the signal from here, as a shell's foreground job would.
fn forward(to_supervisor: &OwnedFd, info: &libc::signalfd_siginfo, terminal: Terminal) {
    let signal = u8::try_from(info.ssi_signo).unwrap_or(0);
    let kernels = info.ssi_code == SI_KERNEL;
    let byte = if !kernels {
        signal
    } else if terminal == Terminal::None && info.ssi_signo != Signal::SIGWINCH as u32 {
        TO_GROUP | signal
    } else if info.ssi_signo == Signal::SIGHUP as u32 {
        // The terminal hung up: the command's group, stopped in the background after a
        // Ctrl-Z whose shell is gone, got nothing from it and would wait for ever.
        TO_GROUP | signal
    } else {
        return;
    };
    // EPIPE: the supervisor is exiting; SIGCHLD follows.
    let _ = nix::unistd::write(to_supervisor, &[byte]);
}

/// The command stopped (Ctrl-Z at the terminal it was handed, or a stop it sent itself): the
/// job it runs in stops as the terminal would stop it, and `fg` continues it (SIGCONT,
/// forwarded). Whether the job stops the kernel decides: not where nothing would continue it
/// (no job-control shell above), and then the command goes on, as a stop there does nothing to
/// a program run directly.
fn stop_with_the_command(to_supervisor: &OwnedFd) {
    if !sys::stop_group_as_a_job() {
        let byte = TO_GROUP | u8::try_from(libc::SIGCONT).unwrap_or(0);
        let _ = nix::unistd::write(to_supervisor, &[byte]);
    }
}

/// Whether `signal` ends a run that has not started its command yet: hangup, interrupt and
/// terminate, unless this process inherited it ignored (`nohup`); blocked, an ignored signal
/// still reaches the signalfd.
fn ends_a_run(signal: u32) -> bool {
    let Ok(signal) = libc::c_int::try_from(signal) else { return false };
    matches!(signal, libc::SIGHUP | libc::SIGINT | libc::SIGTERM) && !sys::signal_ignored(signal)
}

/// When the terminal's foreground group is the command's, now empty, makes the helper's group
/// the foreground again, as it was before the command took it: a caller without job control
/// (`sh -c 'cordon sandbox linux -- vi; read x'`) would otherwise be stopped by its next read.
fn give_terminal_back(terminal: Terminal) {
    let Some(fd) = terminal.fd() else { return };
    let Ok(foreground) = sys::foreground_group(fd) else { return };
    let own = sys::own_group();
    // Signal 0 to the group: ESRCH when no process is left in it.
    if foreground == own || foreground <= 0 || sys::send_signal(-foreground, 0).is_ok() {
        return;
    }
    // From a background group tcsetpgrp raises SIGTTOU, which would stop the helper.
    let mut ttou = SigSet::empty();
    ttou.add(Signal::SIGTTOU);
    let _ = ttou.thread_block();
    let _ = sys::set_foreground_group(fd, own);
}

/// Exits with the code, or dies of the signal, that `status` (a raw wait status) describes.
fn exit_like(status: libc::c_int) -> ! {
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        sys::die_of_signal(signal);
        sys::exit_now(128 + signal)
    }
    sys::exit_now(libc::WEXITSTATUS(status))
}

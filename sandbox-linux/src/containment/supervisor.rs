//! The supervisor's side: run the command, forward what the helper sends, reap, and when the
//! command exits leave nothing behind.

use std::os::fd::AsFd;

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::Signal;
use nix::sys::signalfd::{SfdFlags, SignalFd};

use super::{
    Containment, Report, SI_KERNEL, Supervisor, TAKE_TERMINAL, TO_GROUP, Terminal, watched,
};
use crate::command::PreparedCommand;
use crate::error::HelperError;
use crate::landlock_rules::RuleTargets;
use crate::sys::{self, CommandGroup, ParentDeathSignal, Spawned, Wait};

/// What the supervisor knows while the command runs.
struct Watch {
    command: libc::pid_t,
    containment: Containment,
    /// The command's raw wait status once it has exited.
    status: Option<libc::c_int>,
    /// The command stopped and the helper has not been told yet.
    stopped: bool,
    terminal: Terminal,
    /// Forwardable signals the supervisor received itself from outside (by signal number):
    /// a `killpg` to the helper's group, which reached the command too if it is still there.
    received: [bool; 65],
    /// Where signals for the command come from.
    source: SignalSource,
}

/// How signals meant for the command reach the supervisor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SignalSource {
    /// The helper forwards what it receives over the pipe.
    Helper,
    /// The supervisor is its spawner's child: what it receives from outside is for the
    /// command, which has a group of its own that no `killpg` from outside reaches.
    Outside,
}

impl Watch {
    fn drain(&mut self, signals: &SignalFd) {
        while let Ok(Some(info)) = signals.read_signal() {
            if info.ssi_signo == Signal::SIGCHLD as u32 {
                while let Ok(Some((pid, status))) = sys::wait_raw(-1, Wait::NoHangUntraced) {
                    if pid != self.command {
                        continue;
                    }
                    if libc::WIFSTOPPED(status) {
                        self.stopped |= self.mirror_stop(libc::WSTOPSIG(status));
                    } else {
                        self.status = Some(status);
                    }
                }
            } else if info.ssi_code != SI_KERNEL && self.sent_from_outside(info.ssi_pid) {
                match self.source {
                    SignalSource::Helper => {
                        if let Some(slot) = self.received.get_mut(info.ssi_signo as usize) {
                            *slot = true;
                        }
                    }
                    SignalSource::Outside => {
                        // The spawner passes on what ends the job (a terminal's Ctrl-C that
                        // reached it) to the group it would have signalled: the whole of the
                        // command's.
                        let signal = libc::c_int::try_from(info.ssi_signo).unwrap_or(0);
                        let whole_job = matches!(
                            signal,
                            libc::SIGHUP | libc::SIGINT | libc::SIGQUIT | libc::SIGTERM
                        );
                        signal_job(self.target(whole_job), signal);
                    }
                }
            }
        }
    }

    /// Whether the helper should stop because the command stopped with `signal`: only for
    /// job control on a terminal (Ctrl-Z, a background read or write, a SIGSTOP the command
    /// sent itself, which would otherwise leave it stopped in the terminal's foreground with
    /// the shell waiting), where the shell that sees the job stop sends SIGCONT to the helper's
    /// group later. Under the subreaper the
    /// command shares the helper's group, and the terminal's signal stopped the helper already.
    ///
    /// Mirroring a stop the terminal already delivered to the helper would race with `fg`: the
    /// shell's SIGCONT resumes this supervisor before it reaches the command, so a stop read
    /// then is stale, and stopping the helper again would hand the terminal back to the shell
    /// under a command that is running.
    fn mirror_stop(&self, signal: libc::c_int) -> bool {
        let command = nix::unistd::Pid::from_raw(self.command);
        let shares_our_group =
            nix::unistd::getpgid(Some(command)).ok() == nix::unistd::getpgid(None).ok();
        self.terminal.fd().is_some()
            && !shares_our_group
            && matches!(signal, libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU | libc::SIGSTOP)
    }

    /// Whether a sender is outside the sandbox: in the namespace, senders outside have pid 0.
    fn sent_from_outside(&self, sender: u32) -> bool {
        match self.containment {
            Containment::PidNamespace => sender == 0,
            Containment::Subreaper => i32::try_from(sender).is_ok_and(|p| p != self.command),
        }
    }

    /// Passes a signal the helper forwarded on to the command, unless the command got it already.
    fn forward(&mut self, signals: &SignalFd, signal: u8) {
        if signal == TAKE_TERMINAL {
            if let Some(fd) = self.terminal.fd() {
                let _ = sys::set_foreground_group(fd, self.command);
            }
            return;
        }
        self.drain(signals);
        let for_group = signal & TO_GROUP != 0;
        let signal = signal & !TO_GROUP;
        let slot = usize::from(signal);
        let to_group = self.received.get(slot).copied().unwrap_or(false);
        if let Some(flag) = self.received.get_mut(slot) {
            *flag = false;
        }
        let command = nix::unistd::Pid::from_raw(self.command);
        let in_our_group =
            nix::unistd::getpgid(Some(command)).ok() == nix::unistd::getpgid(None).ok();
        if (to_group || for_group) && in_our_group {
            return;
        }
        // What the terminal would have sent the command's job goes to its whole group, and a
        // continue reaches every process a stop of that group stopped.
        let whole_job = for_group || i32::from(signal) == libc::SIGCONT;
        signal_job(self.target(whole_job), libc::c_int::from(signal));
    }

    /// Where a signal for the command goes: its whole process group when `whole_job` and the
    /// command leads a group of its own, else the command alone.
    fn target(&self, whole_job: bool) -> libc::pid_t {
        let command = nix::unistd::Pid::from_raw(self.command);
        let leads_own_group = nix::unistd::getpgid(Some(command)).ok() == Some(command)
            && nix::unistd::getpgid(None).ok() != Some(command);
        if whole_job && leads_own_group { -self.command } else { self.command }
    }
}

impl Supervisor {
    /// Starts the command and supervises it until it exits; then kills what is left, reports
    /// the command's status to the helper and exits. `rule_targets` are dropped once the
    /// command has started.
    pub fn run(self, command: &PreparedCommand, rule_targets: RuleTargets) -> ! {
        // The command gets a process group of its own, and the terminal's foreground when the
        // helper had it: a terminal's signals (Ctrl-C, Ctrl-Z, window size) then go to the
        // command alone, and the group leader the executor watches for an idle prompt is the
        // command. It takes both itself before it execs (the supervisor sleeps until then), so
        // its first read of the terminal does not stop it.
        // Only in the namespace, where the command's group dies with the supervisor: under the
        // subreaper the command stays in the helper's group, so that the caller's `killpg`
        // (a timeout) still reaches every descendant that did not leave it.
        // Handed no terminal, it gets a session of its own instead: a controlling terminal the
        // caller still has (`cordon sandbox … < /dev/null > log` typed at a shell) would
        // otherwise be its `/dev/tty`, to write to, to change the settings of, or to stop at.
        let (group, parent_death) = match self.containment {
            Containment::PidNamespace => (
                match self.terminal {
                    Terminal::Foreground(fd) => CommandGroup::Own { foreground: Some(fd) },
                    Terminal::Background(_) => CommandGroup::Own { foreground: None },
                    Terminal::None => CommandGroup::Session,
                },
                // The namespace ends with the supervisor, and the command with it.
                ParentDeathSignal::Unset,
            ),
            // No namespace kills the command when the supervisor dies.
            Containment::Subreaper => (CommandGroup::Inherited, ParentDeathSignal::Kill),
        };
        let pid = match command.spawn(group, parent_death) {
            Ok(Spawned { pid, exec_error: None }) => pid,
            Ok(Spawned { pid, exec_error: Some(source) }) => {
                // The child has exited 127 or 126; its status goes up as any other.
                crate::messages::error(command.exec_failed(source));
                pid
            }
            Err(error) => fail(error),
        };
        if let Some(link) = &self.helper {
            let _ = nix::unistd::write(&link.to_helper, &Report::Started.encode());
        }
        if let Some(spawner) = &self.spawner_report {
            let _ = nix::unistd::write(spawner, &Report::Started.encode());
        }
        drop(rule_targets);
        let mut watch = Watch {
            command: pid,
            containment: self.containment,
            status: None,
            stopped: false,
            terminal: match self.containment {
                Containment::PidNamespace => self.terminal,
                Containment::Subreaper => Terminal::None,
            },
            received: [false; 65],
            source: match self.helper {
                Some(_) => SignalSource::Helper,
                None => SignalSource::Outside,
            },
        };
        let signals = match SignalFd::with_flags(
            &watched(),
            SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK,
        ) {
            Ok(signals) => signals,
            Err(e) => {
                let _ = sys::send_signal(pid, libc::SIGKILL);
                fail(HelperError::Containment { what: "reading signals", source: e.into() })
            }
        };
        let mut helper_alive = true;
        while watch.status.is_none() && helper_alive {
            let mut fds = vec![PollFd::new(signals.as_fd(), PollFlags::POLLIN)];
            if let Some(link) = &self.helper {
                fds.push(PollFd::new(link.from_helper.as_fd(), PollFlags::POLLIN));
            }
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) | Err(nix::Error::EINTR) => {}
                Err(_) => break,
            }
            let from_helper = fds.get(1).and_then(PollFd::revents).unwrap_or(PollFlags::empty());
            drop(fds);
            watch.drain(&signals);
            let Some(link) = &self.helper else { continue };
            if std::mem::take(&mut watch.stopped) {
                let _ = nix::unistd::write(&link.to_helper, &Report::Stopped.encode());
            }
            if from_helper.intersects(PollFlags::POLLIN | PollFlags::POLLHUP) {
                let mut buf = [0u8; 64];
                match nix::unistd::read(&link.from_helper, &mut buf) {
                    Ok(0) => helper_alive = false,
                    Ok(n) => buf[..n].iter().for_each(|s| watch.forward(&signals, *s)),
                    Err(_) => {}
                }
            }
        }
        if self.containment == Containment::Subreaper {
            kill_descendants();
        }
        // Without a status (the helper went away) the helper is not listening any more.
        let status = watch.status.unwrap_or(libc::SIGKILL);
        if let Some(link) = &self.helper {
            let _ = nix::unistd::write(&link.to_helper, &Report::Exited(status).encode());
        }
        if let Some(spawner) = &self.spawner_report {
            let _ = nix::unistd::write(spawner, &Report::Exited(status).encode());
        }
        // As pid 1, exiting kills everything left in the namespace.
        sys::exit_now(if libc::WIFSIGNALED(status) {
            128 + libc::WTERMSIG(status)
        } else {
            libc::WEXITSTATUS(status)
        })
    }
}

/// Sends `signal` to `target` (a pid, or a group as its negative); a hang-up is followed by
/// SIGCONT, as the kernel does for an orphaned group: a stopped process would otherwise hold
/// the hang-up pending, and the run with it, for ever.
fn signal_job(target: libc::pid_t, signal: libc::c_int) {
    let _ = sys::send_signal(target, signal);
    if signal == libc::SIGHUP {
        let _ = sys::send_signal(target, libc::SIGCONT);
    }
}

fn fail(error: HelperError) -> ! {
    crate::messages::error(&error);
    sys::exit_now(error.exit_code())
}

/// Kills and reaps every remaining descendant: SIGKILL to each child, whose own children are
/// then reparented to this subreaper and killed in the next round, until none is left.
fn kill_descendants() {
    let me = nix::unistd::getpid().as_raw();
    loop {
        for child in children(me) {
            let _ = sys::send_signal(child, libc::SIGKILL);
        }
        loop {
            match sys::wait_raw(-1, Wait::NoHang) {
                Ok(Some(_)) => {}
                Ok(None) => break,
                // ECHILD: nothing left.
                Err(_) => return,
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// The pids of `parent`'s children: `/proc/PID/task/PID/children` (CONFIG_PROC_CHILDREN), else
/// a scan of every `/proc/PID/stat`.
fn children(parent: libc::pid_t) -> Vec<libc::pid_t> {
    if let Ok(text) = std::fs::read_to_string(format!("/proc/{parent}/task/{parent}/children")) {
        return text.split_whitespace().filter_map(|p| p.parse().ok()).collect();
    }
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).ok().is_some_and(|stat| {
                // The fields after the command name, which may itself contain spaces.
                let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
                rest.split_whitespace().nth(1).and_then(|p| p.parse().ok()) == Some(parent)
            })
        })
        .collect()
}

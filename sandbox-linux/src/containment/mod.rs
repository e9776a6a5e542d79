//! Process containment: nothing outlives the command, and the command reaches no host process
//! and no host System V IPC object.
//!
//! ```text
//! helper (the pid the caller spawned; outside the sandbox): waits, forwards signals, exits
//!  │                                                       with the command's status
//!  └─ supervisor: pid 1 of a new PID + IPC namespace, a fresh read-only /proc, confined like
//!      │          the command (Landlock, no capabilities, seccomp); reaps every zombie
//!      └─ the command (pid 2)
//! ```
//! A spawner that gives the command no terminal clones the supervisor straight into the
//! namespaces instead (`init.rs`): the same tree without the helper, the supervisor doing what
//! the helper did outside (passing signals from outside on, its exit status).
//!
//! When the command exits the supervisor exits, and the kernel kills whatever is left in the
//! namespace: background children, double forks, `setsid` daemons. The supervisor dies with the
//! helper (`PR_SET_PDEATHSIG`), so `kill -9` of the helper (or of its caller, with
//! `--die-with-parent`) takes the whole namespace down too.
//!
//! Without a PID namespace (no mount view: an unprivileged caller without user namespaces, or
//! `--no-mount-view`; or `--no-pid-namespace`) the tree is the same but the supervisor is a
//! child subreaper in the caller's namespace: orphans are reparented to it, and when the command
//! exits it kills and reaps every remaining descendant. If the helper itself is killed with
//! SIGKILL, the supervisor and the command die (parent-death signals) but a descendant that
//! called `setsid()` may survive; only the namespace closes that gap.
//!
//! Process groups and the terminal: in the namespace the command gets a process group of its
//! own and, when the helper's group held the terminal's foreground, the foreground (before it
//! execs, so its first read does not stop it). Terminal signals (Ctrl-C, Ctrl-Z, window size,
//! hangup) then reach the command's group directly, and the foreground group leader the
//! executor watches for an idle prompt is the command, as before. A command that stops for job
//! control on the terminal (TSTP, TTIN, TTOU) makes the helper stop too, so a shell sees its
//! job stop; on `fg` the helper hands the terminal back to the command's group. Other stops
//! (SIGSTOP, or any stop without a terminal) are not mirrored: nothing would continue the
//! helper, and its caller would wait for ever. When the command has exited, the helper returns
//! the terminal to its own group if the command's group was left holding it. Under the
//! subreaper the command stays in the helper's group, so a caller's `killpg` (a timeout) still
//! reaches every descendant that did not leave it.
//!
//! Signals: the helper forwards HUP, INT, QUIT, TERM, USR1, USR2, ALRM, WINCH and CONT that it
//! receives (from `kill` of its pid, or `killpg` of its group, which the orchestrator uses) to
//! the supervisor over a pipe, and the supervisor to the command, exactly once: one the kernel
//! sent for the terminal (`SI_KERNEL`) reached the command already and is not forwarded, nor is
//! one sent to the whole group while the command is still in it (subreaper mode), which the
//! supervisor recognises because it received the same signal itself. A command handed no
//! terminal has a session of its own, which the terminal's Ctrl-C, Ctrl-\ and hang-up do not
//! reach: those go to its whole process group from the helper (a hang-up followed by SIGCONT,
//! so that a stopped process does not keep it pending). Ctrl-Z stops that group with SIGSTOP
//! (a session of its own is an orphaned group, where SIGTSTP does nothing) and then the helper,
//! so a shell sees its job stop; SIGCONT continues the command's group. Where nothing would
//! continue the helper (its own group orphaned: no job-control shell above it), Ctrl-Z stops
//! nothing, as the kernel does. SIGSTOP sent to the helper's pid alone stops only the helper.
//!
//! Before the command exists the supervisor is still setting up (the mount view, `/proc`, the
//! proxy's listener, Landlock) and reads no forwarded signal, and any of those steps can stall
//! (a filesystem that never answers, a proxy that never takes the listener). So a SIGHUP,
//! SIGINT or SIGTERM that reaches the helper before the supervisor has reported the command
//! started ends the run: the helper kills the supervisor (SIGKILL, which also ends a wait a
//! handled signal could not interrupt, and with it the namespace) and dies of that signal. A
//! signal the helper inherited as ignored (`nohup`) stays ignored and is never acted on; the
//! command inherits it ignored.
//!
//! Exit status: the supervisor sends the command's raw wait status up a pipe; the helper exits
//! with the same code, or dies of the same signal (core dumps of the helper itself are turned
//! off first), so its caller sees exactly what it saw when the helper exec'd the command.
//!
//! The helper and the supervisor stay single-threaded, never panic, and only wait, read and
//! write pipes, and send signals.

use std::os::fd::{AsFd, OwnedFd};

use nix::fcntl::OFlag;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sched::{CloneFlags, unshare};
use nix::sys::signal::{SigSet, Signal};

mod applier;
mod helper;
mod init;
mod supervisor;

use crate::args::ParentDeath;
use crate::error::HelperError;
pub use crate::report::Containment;
use crate::sys::{self, Forked};
pub(crate) use applier::{Applier, start as start_applier};
pub use init::{
    ClonedInit, NamespaceInit, STATUS_REPORT_FD, clone_namespace_init, command_started,
    read_status_report,
};
pub(crate) use init::{StatusReport, init_namespaces};

/// Whether to try PID + IPC namespaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PidNamespaceRequest {
    /// When the mount view is built (a private mount namespace to mount /proc in).
    WhenAvailable,
    /// `--no-pid-namespace` or no mount view: the subreaper only.
    Disabled,
    /// The namespaces, or a set-up failure: a write layer is applied when the supervisor has
    /// ended, and only the namespace ends every process of the command with it (orphans
    /// outlive a subreaper the command kills).
    Required,
    /// This process is pid 1 of new PID + IPC namespaces already ([`clone_namespace_init`]):
    /// it is the supervisor, with no helper outside.
    Entered(StatusReport),
}

/// `si_code` of a signal the kernel itself sent (a terminal's INT, QUIT, WINCH, HUP).
const SI_KERNEL: i32 = 0x80;

/// The signals passed on to the command.
const FORWARDED: [Signal; 9] = [
    Signal::SIGHUP,
    Signal::SIGINT,
    Signal::SIGQUIT,
    Signal::SIGTERM,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGALRM,
    Signal::SIGWINCH,
    Signal::SIGCONT,
];

/// What the helper waits for: [`watched`] and SIGIO (a report from the supervisor).
fn helper_signals() -> SigSet {
    let mut set = watched();
    set.add(Signal::SIGIO);
    set
}

/// What the helper and the supervisor block and read from a signalfd: the forwarded signals,
/// SIGCHLD, and SIGTSTP, which would otherwise stop either of them on its own (a terminal's
/// Ctrl-Z reaches the whole group they share).
fn watched() -> SigSet {
    let mut set = SigSet::empty();
    for signal in FORWARDED {
        set.add(signal);
    }
    set.add(Signal::SIGCHLD);
    set.add(Signal::SIGTSTP);
    set
}

/// The confined side of the split: becomes the command's parent in [`Supervisor::run`].
#[derive(Debug)]
pub struct Supervisor {
    pub containment: Containment,
    /// The helper outside, or none when the supervisor is its spawner's own child.
    helper: Option<HelperLink>,
    /// Without a helper: where the spawner wants the command's raw wait status, if anywhere.
    spawner_report: Option<OwnedFd>,
    terminal: Terminal,
}

/// The pipes between the helper and the supervisor.
#[derive(Debug)]
struct HelperLink {
    /// Signal numbers from the helper, one byte each; end of file when the helper is gone.
    from_helper: OwnedFd,
    /// The command's raw wait status, to the helper.
    to_helper: OwnedFd,
}

/// The helper's controlling terminal (one of fds 0-2), if any, and whether the helper's group
/// was in its foreground when it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Terminal {
    None,
    Background(libc::c_int),
    Foreground(libc::c_int),
}

impl Terminal {
    /// Looks at fds 0, 1 and 2 from the helper's side (outside any PID namespace, where its
    /// process group has a number): the first that is the controlling terminal.
    fn of_helper() -> Terminal {
        let Some(fd) = sys::controlling_terminal_on_stdio() else { return Terminal::None };
        match sys::foreground_group(fd) {
            Ok(fg) if fg == sys::own_group() => Terminal::Foreground(fd),
            Ok(_) => Terminal::Background(fd),
            Err(_) => Terminal::None,
        }
    }

    fn fd(self) -> Option<libc::c_int> {
        match self {
            Terminal::None => None,
            Terminal::Background(fd) | Terminal::Foreground(fd) => Some(fd),
        }
    }
}

/// The byte the helper sends (instead of a signal number) when its process group is in the
/// terminal's foreground again (after a stop): the supervisor hands the terminal to the
/// command's group.
const TAKE_TERMINAL: u8 = 0;

/// Set in a forwarded signal's byte when the signal is for the command's whole process group
/// (what a terminal would have sent its foreground job), not for the command alone.
const TO_GROUP: u8 = 0x80;

fn setup_error(what: &'static str) -> impl Fn(nix::Error) -> HelperError {
    move |e| HelperError::Containment { what, source: e.into() }
}

/// What the helper does once the command is over, besides exiting like it.
#[derive(Debug, Default)]
pub(crate) struct Afterwards {
    /// Move aside what the command planted where the policy keeps names read-only.
    pub watch: Option<crate::planted::Watch>,
    /// Let the applier of the helper's own transaction apply, and wait for it.
    pub applier: Option<Applier>,
}

/// Enters PID + IPC namespaces when asked and possible, then forks. The helper (parent) never
/// returns from here: it waits for the supervisor and exits with the command's status. The
/// supervisor (child) returns, to confine itself and run the command.
///
/// # Safety
///
/// This process has one thread (see [`sys::fork`]). With [`PidNamespaceRequest::Entered`] and
/// [`StatusReport::OnDescriptor3`], descriptor 3 is the spawner's status pipe, which nothing
/// else in this process owns.
pub unsafe fn split(
    request: PidNamespaceRequest,
    parent_death: ParentDeath,
    after_run: Afterwards,
) -> Result<Supervisor, HelperError> {
    if let PidNamespaceRequest::Entered(report) = request {
        // SAFETY: descriptor 3 as this function's contract says.
        return unsafe { init_supervisor(parent_death, report) };
    }
    // Before the namespace: the sweeper must not be one of its processes, which end with it.
    let Afterwards { watch, applier } = after_run;
    let watch = watch.map(|watch| {
        let sweeper = helper::start_sweeper(&watch);
        (watch, sweeper)
    });
    let containment = match request {
        PidNamespaceRequest::Entered(_) => Containment::PidNamespace,
        PidNamespaceRequest::WhenAvailable
            if unshare(CloneFlags::CLONE_NEWPID | CloneFlags::CLONE_NEWIPC).is_ok() =>
        {
            Containment::PidNamespace
        }
        PidNamespaceRequest::Required => {
            unshare(CloneFlags::CLONE_NEWPID | CloneFlags::CLONE_NEWIPC).map_err(|source| {
                HelperError::Containment {
                    what: "a write layer needs the command in a PID namespace of its own",
                    source: source.into(),
                }
            })?;
            Containment::PidNamespace
        }
        PidNamespaceRequest::WhenAvailable | PidNamespaceRequest::Disabled => {
            Containment::Subreaper
        }
    };
    if parent_death == ParentDeath::Kill {
        nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)
            .map_err(|e| HelperError::ParentDeathSignal(e.into()))?;
    }
    let (down_read, down_write) =
        nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(setup_error("creating a pipe"))?;
    let (up_read, up_write) =
        nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(setup_error("creating a pipe"))?;
    // Blocked before the fork, so nothing that arrives in between is lost; signalfd reads them.
    helper_signals().thread_block().map_err(setup_error("blocking signals"))?;
    let terminal = Terminal::of_helper();
    // SAFETY: this process has one thread (this function's contract).
    let forked = unsafe { sys::fork() }
        .map_err(|source| HelperError::Containment { what: "forking the supervisor", source })?;
    // Neither the helper nor the supervisor may be read by the command: a same-uid process can
    // read a dumpable process's /proc/PID/environ and memory, and run in cordon's forked child
    // both hold cordon's whole environment — the secrets its environment policy kept from the
    // command. (An exec resets the command's own flag.) After the mount view: a non-dumpable
    // process's /proc files belong to root, and an unprivileged helper writes its uid_map.
    let not_dumpable =
        || nix::sys::prctl::set_dumpable(false).map_err(setup_error("turning off dumpable"));
    match forked {
        Forked::Parent { child } => {
            drop((down_read, up_write));
            if let Some((_, Some(sweeper))) = &watch {
                helper::tell_sweeper(sweeper, child);
            }
            if let Some(applier) = &applier {
                applier.tell(child);
            }
            not_dumpable()?;
            let after_run = helper::AfterCommand { watch, applier };
            helper::helper_waits(child, terminal, &down_write, &up_read, after_run)
        }
        Forked::Child => {
            drop((down_write, up_read));
            // The sweeper's and the applier's pipes and the watch are the helper's: the
            // supervisor holds none of them.
            drop((watch, applier));
            not_dumpable()?;
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)
                .map_err(|e| HelperError::ParentDeathSignal(e.into()))?;
            // The helper may have died before the line above; its end of the pipe says so.
            if helper_gone(&down_read) {
                sys::exit_now(crate::EXIT_SETUP_FAILED);
            }
            if containment == Containment::Subreaper {
                nix::sys::prctl::set_child_subreaper(true)
                    .map_err(setup_error("becoming a child subreaper"))?;
            }
            Ok(Supervisor {
                containment,
                helper: Some(HelperLink { from_helper: down_read, to_helper: up_write }),
                spawner_report: None,
                terminal,
            })
        }
    }
}

/// The supervisor as its spawner's child, pid 1 already ([`PidNamespaceRequest::Entered`]):
/// no fork. The signals it forwards come straight from outside, which needs a handler for
/// each; they stay blocked and are read from a signalfd like the rest. The spawner gives the
/// command no terminal, so there is none to hand over.
///
/// # Safety
///
/// With [`StatusReport::OnDescriptor3`], descriptor 3 is the spawner's status pipe, which
/// nothing else in this process owns.
unsafe fn init_supervisor(
    parent_death: ParentDeath,
    report: StatusReport,
) -> Result<Supervisor, HelperError> {
    if parent_death == ParentDeath::Kill {
        nix::sys::prctl::set_pdeathsig(Signal::SIGKILL)
            .map_err(|e| HelperError::ParentDeathSignal(e.into()))?;
    }
    helper_signals().thread_block().map_err(setup_error("blocking signals"))?;
    // A signal the spawner left ignored (`nohup`) gets no handler: the command inherits it
    // ignored, as it would from an exec'd helper.
    let forwarded: Vec<libc::c_int> =
        FORWARDED.iter().map(|s| *s as libc::c_int).filter(|s| !sys::signal_ignored(*s)).collect();
    sys::catch_signals(&forwarded)
        .map_err(|source| HelperError::Containment { what: "catching signals", source })?;
    // As in `split`: the spawner's copy holds its whole environment.
    nix::sys::prctl::set_dumpable(false).map_err(setup_error("turning off dumpable"))?;
    let spawner_report = match report {
        StatusReport::ExitCodeOnly => None,
        // SAFETY: the spawner put the pipe there for this process, `run_in_process` kept it
        // open when it closed the others, and nothing else owns it (this function's contract).
        StatusReport::OnDescriptor3 => Some(unsafe { sys::adopt_descriptor(STATUS_REPORT_FD) }),
    };
    Ok(Supervisor {
        containment: Containment::PidNamespace,
        helper: None,
        spawner_report,
        terminal: Terminal::None,
    })
}

/// Whether the helper's end of the pipe is closed (a forwarded signal waiting in the pipe is
/// POLLIN, not POLLHUP).
fn helper_gone(from_helper: &OwnedFd) -> bool {
    ready_now(from_helper).is_some_and(|events| events.contains(PollFlags::POLLHUP))
}

/// What `fd` is ready for now (something to read, its other end closed), without waiting;
/// `None` when nothing.
fn ready_now(fd: &OwnedFd) -> Option<PollFlags> {
    let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
    match poll(&mut fds, PollTimeout::ZERO) {
        Ok(n) if n > 0 => fds[0].revents(),
        _ => None,
    }
}

/// What the supervisor tells the helper: five bytes each, a tag and a little-endian `i32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Report {
    /// The command has been exec'd. Until then the supervisor is setting up and reads no
    /// forwarded signal: whoever is outside ends a run that has not started by killing it.
    Started,
    /// The command stopped (job control): the helper stops too, so a shell that started the
    /// helper sees its job stop as it did when the helper was the command.
    Stopped,
    /// The command's raw wait status; the supervisor exits next.
    Exited(libc::c_int),
}

impl Report {
    const LEN: usize = 5;

    fn encode(self) -> [u8; Self::LEN] {
        let (tag, value) = match self {
            Report::Started => (b'R', 0),
            Report::Stopped => (b'S', 0),
            Report::Exited(status) => (b'X', status),
        };
        let v = value.to_le_bytes();
        [tag, v[0], v[1], v[2], v[3]]
    }

    fn decode(bytes: [u8; Self::LEN]) -> Option<Report> {
        let value = i32::from_le_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]);
        match bytes[0] {
            b'R' => Some(Report::Started),
            b'S' => Some(Report::Stopped),
            b'X' => Some(Report::Exited(value)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_round_trip_and_unknown_tags_are_ignored() {
        for report in [
            Report::Started,
            Report::Stopped,
            Report::Exited(0),
            Report::Exited(0x8b),
            Report::Exited(-1),
        ] {
            assert_eq!(Report::decode(report.encode()), Some(report));
        }
        assert_eq!(Report::decode([b'?', 0, 0, 0, 0]), None);
    }

    #[test]
    fn no_forwarded_signal_is_the_take_terminal_byte() {
        assert!(FORWARDED.iter().all(|s| *s as i32 != i32::from(TAKE_TERMINAL)));
    }
}

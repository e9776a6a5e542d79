//! Spawning one attempt: own process group, parent-death signal, stdin, a timeout that kills
//! the whole group, stdout/stderr streamed to the caller and kept in a head+tail buffer.

use std::os::unix::process::ExitStatusExt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::capture::HeadTail;
use crate::classify::ExitKind;
use crate::interrupts::Interrupts;
use crate::launch::LaunchPlan;
use crate::spawner::{ChildStdio, Started};
use crate::terminal_filter::{self, EscapeFilter};

/// Bytes kept per stream (head + tail) for classification and `--json`: enough for the
/// classifier's evidence, bounded however much a command prints.
pub const CAPTURE_BYTES: usize = 1024 * 1024;

/// How long output may keep arriving after the command exited (from processes it left in its
/// group) before the group is killed.
const DRAIN_GRACE: Duration = Duration::from_millis(100);

/// What the child's stdin is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdinMode {
    Null,
    /// cordon's stdin (a pipe or a file).
    Inherit,
    /// cordon's stdin is a terminal: the child gets it and becomes the terminal's foreground
    /// process group while it runs (as a shell runs a job), so interactive programs work and
    /// Ctrl-C reaches them; cordon takes the terminal back when the child exits.
    Terminal,
}

/// Where the child's output goes besides the capture buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    /// Also copied, as it arrives, to this process's stdout and stderr.
    Stream,
    /// Only captured.
    Capture,
}

/// How to run one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunOptions<'a> {
    pub stdin: StdinMode,
    pub output: OutputMode,
    /// Kill the whole process group after this long (exit 124).
    pub timeout: Option<Duration>,
    /// A trash directory (earlier runs' directories) to empty on a thread of its own once the
    /// child has started: while the command runs, not before it or after it.
    pub empty_while_running: Option<&'a std::path::Path>,
}

/// The result of one process run.
#[derive(Debug)]
pub struct ProcessResult {
    pub exit: ExitKind,
    pub duration: Duration,
    pub stdout: HeadTail,
    pub stderr: HeadTail,
}

/// Runs `spec` to completion (or timeout). Errors only when the process cannot be started.
pub async fn run_process(
    spec: &LaunchPlan,
    options: &RunOptions<'_>,
) -> std::io::Result<ProcessResult> {
    let RunOptions { stdin, output, timeout, empty_while_running } = *options;
    // Whatever the command leaves behind — a `setsid` daemon, a double fork, the tree of an
    // unsandboxed retry that has no PID namespace — is reparented to cordon, not to init, and
    // ended below with the rest: nothing outlives its command.
    crate::sys::become_subreaper();
    let started = Instant::now();
    // Listening before the child exists: an interrupt that comes while it starts is not lost.
    let mut interrupts = Interrupts::new();
    // The cgroup the child starts in or joins first: the tree limits', or an unsandboxed
    // command's kill-only one.
    let cgroup = spec.child_cgroup()?;
    // Whether the terminal is cordon's to hand to the child and take back (not when cordon
    // runs in the background: the shell has it).
    let had_terminal = stdin == StdinMode::Terminal && crate::sys::in_the_foreground();
    let (mut child, stdout, stderr) = start(spec, stdin, cgroup.as_ref())?;
    // Only now: a thread started before the fork would have made the helper's in-process
    // start (which needs a single-threaded process) fall back to an exec.
    if let Some(trash) = empty_while_running {
        crate::upkeep::empty_trash_in_the_background(trash);
    }
    #[cfg(target_os = "linux")]
    let cpu_watch = cgroup.as_ref().map(|cgroup| {
        let cgroup = Arc::clone(cgroup);
        tokio::spawn(async move { cgroup.watch_cpu().await }).abort_handle()
    });
    let group = child.group();
    tracing::debug!(?group, ?stdin, ?output, ?timeout, "command started");
    let target = child.interrupt_target()?;
    // The readers run while we wait: a child that fills a pipe would otherwise block forever.
    let captured_out = Arc::new(Mutex::new(HeadTail::new(CAPTURE_BYTES)));
    let captured_err = Arc::new(Mutex::new(HeadTail::new(CAPTURE_BYTES)));
    let broken_pipe = Arc::new(tokio::sync::Notify::new());
    let copy_out = tokio::spawn(pump(
        stdout,
        Sink {
            mode: output,
            to: tokio::io::stdout(),
            filter: EscapeFilter::for_stream(&std::io::stdout()),
            broken: Arc::clone(&broken_pipe),
        },
        Arc::clone(&captured_out),
    ));
    let copy_err = tokio::spawn(pump(
        stderr,
        Sink {
            mode: output,
            to: tokio::io::stderr(),
            filter: EscapeFilter::for_stream(&std::io::stderr()),
            broken: Arc::clone(&broken_pipe),
        },
        Arc::clone(&captured_err),
    ));

    let wait = async {
        match timeout {
            Some(limit) => tokio::time::timeout(limit, child.wait()).await.ok(),
            None => Some(child.wait().await),
        }
    };
    let status = tokio::select! {
        status = wait => Ended::Exited(status),
        () = broken_pipe.notified() => Ended::BrokenPipe,
        signal = forward_interrupts(&mut interrupts, &target) => Ended::Interrupted(signal),
        () = follow_stops(group), if stdin == StdinMode::Terminal => unreachable!(),
    };
    let exit = match status {
        Ended::Exited(Some(Ok(raw))) => ExitKind::from_wait_status(raw),
        Ended::Exited(Some(Err(e))) => return Err(e),
        Ended::Exited(None) => {
            tracing::debug!("timed out: the command's group is killed");
            kill_group(group);
            let _ = child.wait().await;
            ExitKind::TimedOut
        }
        // Whoever read our output is gone (`cordon exec -- yes | head -c1`): end the command
        // as a shell pipeline would, with SIGPIPE's status (141).
        Ended::BrokenPipe => {
            tracing::debug!("the reader of cordon's output is gone: the command's group is killed");
            kill_group(group);
            let _ = child.wait().await;
            ExitKind::Signal(libc::SIGPIPE)
        }
        // Ended before the command existed (killed): the run ends as the signal would have
        // ended the command.
        Ended::Interrupted(signal) => {
            tracing::debug!(signal, "interrupted before the command existed");
            let _ = child.wait().await;
            ExitKind::Signal(signal)
        }
    };
    #[cfg(target_os = "linux")]
    if let Some(watch) = cpu_watch {
        watch.abort();
    }
    #[cfg(target_os = "linux")]
    let held = cgroup.as_deref();
    #[cfg(not(target_os = "linux"))]
    let held = None;
    let exit = crate::classify::limit_reached(&spec.limits, exit, held)
        .map_or(exit, ExitKind::LimitExceeded);
    let duration = started.elapsed();
    if stdin == StdinMode::Terminal {
        crate::sys::reclaim_terminal(crate::sys::Reclaim {
            child: group.map(Pid::as_raw),
            had_terminal,
        });
    }
    // Output may still come from processes the command left in its group; give them a moment,
    // then end the group so nothing it started outlives it. A process that left the group
    // (setsid) may hold the pipes open for good: after a second grace period the readers are
    // abandoned with what they captured.
    let (abort_out, abort_err) = (copy_out.abort_handle(), copy_err.abort_handle());
    let mut readers = std::pin::pin!(async { tokio::join!(copy_out, copy_err) });
    if tokio::time::timeout(DRAIN_GRACE, &mut readers).await.is_err() {
        tracing::debug!("output still open after the command exited: its group is killed");
        kill_group(group);
        crate::sys::kill_orphans();
        #[cfg(target_os = "linux")]
        if let Some(cgroup) = &cgroup {
            cgroup.kill();
        }
        if tokio::time::timeout(DRAIN_GRACE, &mut readers).await.is_err() {
            abort_out.abort();
            abort_err.abort();
        }
    }
    // A namespace's pid 1, once reaped, leaves nothing behind: the kernel ends every process
    // of its PID namespace before pid 1's exit completes, and none of them is ever reparented
    // to cordon (a subreaper outside the namespace). So only a forked child's group and
    // cordon's orphans are looked for (a read of /proc per attempt).
    if !child.ends_its_namespace() {
        kill_group(group);
        crate::sys::kill_orphans();
    }
    // Whatever is still in the command's cgroup ends with it, and the cgroup is removed.
    #[cfg(target_os = "linux")]
    if let Some(cgroup) = &cgroup {
        cgroup.remove();
    }
    let take =
        |captured: &Mutex<HeadTail>| std::mem::replace(&mut *lock(captured), HeadTail::new(0));
    Ok(ProcessResult { exit, duration, stdout: take(&captured_out), stderr: take(&captured_err) })
}

/// One output stream of the child.
type Stream = Option<Box<dyn AsyncRead + Unpin + Send>>;

/// The process an attempt runs.
enum Child {
    /// Spawned through std (a forked child that runs the helper or execs the command).
    Spawned(tokio::process::Child),
    /// The sandbox's supervisor as cordon's own child, pid 1 of the command's namespaces.
    #[cfg(target_os = "linux")]
    Init(crate::init_process::InitProcess),
}

impl Child {
    /// Whether its end is the end of every process it started: the cloned pid 1 of the
    /// command's PID namespace.
    fn ends_its_namespace(&self) -> bool {
        match self {
            Child::Spawned(_) => false,
            #[cfg(target_os = "linux")]
            Child::Init(_) => true,
        }
    }

    /// Its process group (its pid: it leads a group or a session of its own).
    fn group(&self) -> Option<Pid> {
        let pid = match self {
            Child::Spawned(child) => child.id().and_then(|id| i32::try_from(id).ok()),
            #[cfg(target_os = "linux")]
            Child::Init(process) => Some(process.pid()),
        };
        pid.map(Pid::from_raw)
    }

    /// Where cordon's interrupts go.
    fn interrupt_target(&self) -> std::io::Result<InterruptTarget> {
        Ok(match self {
            Child::Spawned(_) => InterruptTarget::Group(self.group()),
            #[cfg(target_os = "linux")]
            Child::Init(process) => {
                InterruptTarget::Init { group: self.group(), init: process.handle()? }
            }
        })
    }

    /// The raw wait status (the command's, for the supervisor).
    async fn wait(&mut self) -> std::io::Result<libc::c_int> {
        match self {
            Child::Spawned(child) => child.wait().await.map(ExitStatusExt::into_raw),
            #[cfg(target_os = "linux")]
            Child::Init(process) => process.wait().await,
        }
    }
}

/// Starts `spec` with the given stdin and stdout and stderr piped: as the supervisor cloned
/// straight into the command's namespaces when that applies, else through tokio's spawn.
fn start(
    spec: &LaunchPlan,
    stdin: StdinMode,
    cgroup: Option<&crate::spawner::ChildCgroup>,
) -> std::io::Result<(Child, Stream, Stream)> {
    let stdio = match stdin {
        StdinMode::Null => ChildStdio::Null,
        StdinMode::Inherit => ChildStdio::Inherit,
        StdinMode::Terminal => ChildStdio::Terminal,
    };
    let started = spec.start(stdio, cgroup, |command| {
        tokio::process::Command::from(command).kill_on_drop(true).spawn()
    })?;
    match started {
        #[cfg(target_os = "linux")]
        Started::Init(init) => {
            use tokio::net::unix::pipe::Receiver;
            let (process, stdout, stderr) = crate::init_process::InitProcess::from_child(init)?;
            let stdout: Stream = Some(Box::new(Receiver::from_owned_fd(stdout)?));
            let stderr: Stream = Some(Box::new(Receiver::from_owned_fd(stderr)?));
            Ok((Child::Init(process), stdout, stderr))
        }
        Started::Spawned(mut child) => {
            let stdout: Stream = child.stdout.take().map(|s| Box::new(s) as _);
            let stderr: Stream = child.stderr.take().map(|s| Box::new(s) as _);
            Ok((Child::Spawned(child), stdout, stderr))
        }
    }
}

/// How waiting for the child ended.
enum Ended {
    /// It exited (`None`: the timeout came first).
    Exited(Option<std::io::Result<libc::c_int>>),
    /// The reader of cordon's output went away.
    BrokenPipe,
    /// cordon received this interrupt before the command existed, and killed the child.
    Interrupted(libc::c_int),
}

/// Where cordon passes an interrupt it receives.
enum InterruptTarget {
    /// The child's process group: the command itself, or a helper that passes it on and ends
    /// a run that has not started.
    Group(Option<Pid>),
    /// A supervisor cloned as pid 1 of the command's namespace: its group once it has started
    /// the command (it passes the signal on); before that it is killed, since pid 1 ignores
    /// every signal it has no handler for and may be in a wait only SIGKILL ends.
    #[cfg(target_os = "linux")]
    Init { group: Option<Pid>, init: crate::init_process::InitHandle },
}

/// Where a stream is copied besides the capture buffer.
struct Sink<W> {
    mode: OutputMode,
    to: W,
    /// Set when `to` is a terminal: only what the filter keeps reaches it.
    filter: Option<EscapeFilter>,
    /// Told when writing to `to` fails because nobody reads it any more.
    broken: Arc<tokio::sync::Notify>,
}

/// Forwards SIGINT, SIGTERM and SIGHUP received by cordon to the command's process group
/// (it is not in the terminal's foreground group, so Ctrl-C would not reach it otherwise).
/// Returns only when it ended a run whose command did not exist yet, with the signal.
async fn forward_interrupts(interrupts: &mut Interrupts, target: &InterruptTarget) -> libc::c_int {
    loop {
        let received = interrupts.recv().await;
        let group = match target {
            InterruptTarget::Group(group) => *group,
            #[cfg(target_os = "linux")]
            InterruptTarget::Init { group, init } => {
                if !init.command_started() {
                    init.kill();
                    return received;
                }
                *group
            }
        };
        if let (Some(group), Ok(signal)) = (group, Signal::try_from(received)) {
            let _ = killpg(group, signal);
        }
    }
}

/// The child holds the terminal as the shell's job would: Ctrl-Z stops the child, not cordon,
/// and the shell, which waits for cordon, would never see the job stop. So when the child
/// stops, cordon stops itself as part of the job (the kernel decides: not where nothing would
/// continue it); continued, it gives the terminal back to the child and continues it. Never
/// completes.
async fn follow_stops(group: Option<Pid>) {
    #[cfg(target_os = "linux")]
    if let Some(group) = group
        && let Ok(mut children) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child())
    {
        loop {
            children.recv().await;
            if crate::sys::child_stopped(group.as_raw()) {
                crate::sys::stop_with_child(group.as_raw());
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = group;
    std::future::pending::<()>().await;
}

fn kill_group(group: Option<Pid>) {
    if let Some(group) = group {
        // ESRCH (the group is already gone) is the common, fine case.
        let _ = killpg(group, Signal::SIGKILL);
    }
}

fn lock(captured: &Mutex<HeadTail>) -> std::sync::MutexGuard<'_, HeadTail> {
    captured.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Copies a child stream into a head+tail buffer and, when streaming, to the sink. A sink
/// whose reader went away (EPIPE) ends the command; another write error only stops the copy
/// to the sink, not the capture.
async fn pump(
    source: Option<impl AsyncRead + Unpin>,
    sink: Sink<impl AsyncWrite + Unpin>,
    captured: Arc<Mutex<HeadTail>>,
) {
    let Some(mut source) = source else { return };
    let Sink { mode, to: mut sink, mut filter, broken } = sink;
    let mut forward = mode == OutputMode::Stream;
    let mut buf = vec![0u8; 64 * 1024];
    let mut kept = Vec::new();
    loop {
        let n = match source.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        lock(&captured).push(&buf[..n]);
        if !forward {
            continue;
        }
        let out = terminal_filter::shown(filter.as_mut(), &buf[..n], &mut kept);
        let written = match sink.write_all(out).await {
            Ok(()) => sink.flush().await,
            Err(error) => Err(error),
        };
        if let Err(error) = written {
            forward = false;
            if error.kind() == std::io::ErrorKind::BrokenPipe {
                broken.notify_one();
            }
        }
    }
}

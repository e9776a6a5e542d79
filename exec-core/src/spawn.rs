//! Spawning one attempt: own process group, parent-death signal, stdin, a timeout that kills
//! the whole group, stdout/stderr streamed to the caller and kept in a head+tail buffer.

use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::capture::HeadTail;
use crate::classify::ExitKind;

/// Bytes kept per stream for classification and `--json` (DESIGN §7).
pub const CAPTURE_BYTES: usize = 1024 * 1024;

/// How long output may keep arriving after the command exited (from processes it left in its
/// group) before the group is killed.
const DRAIN_GRACE: Duration = Duration::from_millis(100);

/// What the child's stdin is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdinMode {
    Null,
    Inherit,
}

/// Where the child's output goes besides the capture buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    /// Also copied, as it arrives, to this process's stdout and stderr.
    Stream,
    /// Only captured.
    Capture,
}

/// A command line as a value: what the orchestrator builds, what spawners (pipes here, PTYs in
/// sessions) turn into a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    pub program: PathBuf,
    /// `argv[0]` when it differs from `program` (the helper's arg0 trick).
    pub arg0: Option<OsString>,
    pub args: Vec<OsString>,
    /// The complete environment (nothing else is inherited).
    pub env: Vec<(OsString, OsString)>,
    pub cwd: PathBuf,
}

impl CommandSpec {
    /// A std `Command` with program, arg0, args, a clean environment and the cwd.
    pub fn to_command(&self) -> std::process::Command {
        let mut command = std::process::Command::new(&self.program);
        if let Some(arg0) = &self.arg0 {
            command.arg0(arg0);
        }
        command.args(&self.args).env_clear().envs(self.env.iter().cloned()).current_dir(&self.cwd);
        command
    }
}

/// How to run one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunOptions {
    pub stdin: StdinMode,
    pub output: OutputMode,
    /// Kill the whole process group after this long (exit 124).
    pub timeout: Option<Duration>,
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
    spec: &CommandSpec,
    options: &RunOptions,
) -> std::io::Result<ProcessResult> {
    let RunOptions { stdin, output, timeout } = *options;
    let mut command = spec.to_command();
    command
        .process_group(0)
        .stdin(match stdin {
            StdinMode::Null => Stdio::null(),
            StdinMode::Inherit => Stdio::inherit(),
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    crate::sys::prepare_child(&mut command);
    let started = Instant::now();
    let mut child = tokio::process::Command::from(command).kill_on_drop(true).spawn()?;
    let group = child.id().and_then(|id| i32::try_from(id).ok()).map(Pid::from_raw);
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    // The readers run while we wait: a child that fills a pipe would otherwise block forever.
    let captured_out = Arc::new(Mutex::new(HeadTail::new(CAPTURE_BYTES)));
    let captured_err = Arc::new(Mutex::new(HeadTail::new(CAPTURE_BYTES)));
    let copy_out =
        tokio::spawn(pump(stdout, output, tokio::io::stdout(), Arc::clone(&captured_out)));
    let copy_err =
        tokio::spawn(pump(stderr, output, tokio::io::stderr(), Arc::clone(&captured_err)));

    let wait = async {
        match timeout {
            Some(limit) => tokio::time::timeout(limit, child.wait()).await.ok(),
            None => Some(child.wait().await),
        }
    };
    let status = tokio::select! {
        status = wait => status,
        never = forward_interrupts(group) => match never {},
    };
    let exit = match status {
        Some(Ok(status)) => match status.code() {
            Some(code) => ExitKind::Code(code),
            None => ExitKind::Signal(status.signal().unwrap_or(libc::SIGKILL)),
        },
        Some(Err(e)) => return Err(e),
        None => {
            kill_group(group);
            let _ = child.wait().await;
            ExitKind::TimedOut
        }
    };
    let duration = started.elapsed();
    // Output may still come from processes the command left in its group; give them a moment,
    // then end the group so nothing it started outlives it. A process that left the group
    // (setsid) may hold the pipes open for good: after a second grace period the readers are
    // abandoned with what they captured.
    let (abort_out, abort_err) = (copy_out.abort_handle(), copy_err.abort_handle());
    let mut readers = std::pin::pin!(async { tokio::join!(copy_out, copy_err) });
    if tokio::time::timeout(DRAIN_GRACE, &mut readers).await.is_err() {
        kill_group(group);
        if tokio::time::timeout(DRAIN_GRACE, &mut readers).await.is_err() {
            abort_out.abort();
            abort_err.abort();
        }
    }
    kill_group(group);
    let take =
        |captured: &Mutex<HeadTail>| std::mem::replace(&mut *lock(captured), HeadTail::new(0));
    Ok(ProcessResult { exit, duration, stdout: take(&captured_out), stderr: take(&captured_err) })
}

/// Forwards SIGINT, SIGTERM and SIGHUP received by cordon to the command's process group
/// (it is not in the terminal's foreground group, so Ctrl-C would not reach it otherwise).
/// Never completes.
async fn forward_interrupts(group: Option<Pid>) -> std::convert::Infallible {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return std::future::pending().await;
    };
    loop {
        let forwarded = tokio::select! {
            _ = int.recv() => Signal::SIGINT,
            _ = term.recv() => Signal::SIGTERM,
            _ = hup.recv() => Signal::SIGHUP,
        };
        if let Some(group) = group {
            let _ = killpg(group, forwarded);
        }
    }
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

/// Copies a child stream into a head+tail buffer and, when streaming, to `sink`. A sink that
/// went away (closed pipe) stops the copy to the sink, not the capture.
async fn pump(
    source: Option<impl AsyncRead + Unpin>,
    output: OutputMode,
    mut sink: impl AsyncWrite + Unpin,
    captured: Arc<Mutex<HeadTail>>,
) {
    let Some(mut source) = source else { return };
    let mut forward = output == OutputMode::Stream;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match source.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        lock(&captured).push(&buf[..n]);
        if forward && (sink.write_all(&buf[..n]).await.is_err() || sink.flush().await.is_err()) {
            forward = false;
        }
    }
}

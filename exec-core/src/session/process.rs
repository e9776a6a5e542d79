//! One session's process: spawned in a PTY (portable-pty) or on pipes, its output gathered by
//! reader threads/tasks into a bounded head+tail buffer, its exit recorded.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use portable_pty::{MasterPty, PtySize, native_pty_system};
use tokio::io::AsyncReadExt;
use tokio::sync::Notify;

use super::{SessionError, UNREAD_CAP};
use crate::capture::HeadTail;
use crate::launch::LaunchPlan;
use crate::resolved::ProcessExit;
use crate::spawner::{ChildStdio, Started};

/// What the readers and the waiter share with the session.
struct Shared {
    state: Mutex<State>,
    notify: Notify,
}

struct State {
    unread: HeadTail,
    /// How the process ended, once it did.
    exit: Option<(ProcessExit, Instant)>,
    /// Readers reached end of file: nothing more will arrive.
    eof: bool,
    /// The last output or input.
    last_activity: Instant,
}

enum Io {
    Pty { master: Mutex<Box<dyn MasterPty + Send>>, writer: Arc<Mutex<Box<dyn Write + Send>>> },
    Pipes,
}

/// Why a write failed.
pub enum WriteError {
    NotATerminal,
    Io(std::io::Error),
}

pub struct SessionProcess {
    pid: Option<i32>,
    io: Io,
    shared: Arc<Shared>,
    /// The cgroup holding the session's tree limits, and the watch on its CPU time; the
    /// cgroup's processes are killed and it is removed when the session is dropped.
    limits: Option<SessionCgroup>,
    /// Every limit the command was given (what a result names when one was reached).
    asked: cordon_policies::Limits,
}

struct SessionCgroup {
    #[cfg_attr(
        not(target_os = "linux"),
        expect(dead_code, reason = "only Linux makes cgroups; the type stays for one shape")
    )]
    cgroup: crate::spawner::ChildCgroup,
    cpu_watch: tokio::task::AbortHandle,
}

impl Drop for SessionCgroup {
    fn drop(&mut self) {
        self.cpu_watch.abort();
        #[cfg(target_os = "linux")]
        self.cgroup.remove();
    }
}

/// Holds `cgroup` for the session and watches its CPU time.
#[cfg(target_os = "linux")]
fn hold(cgroup: Option<crate::spawner::ChildCgroup>) -> Option<SessionCgroup> {
    let cgroup = cgroup?;
    let watched = Arc::clone(&cgroup);
    let cpu_watch = tokio::spawn(async move { watched.watch_cpu().await }).abort_handle();
    Some(SessionCgroup { cgroup, cpu_watch })
}

/// No cgroups elsewhere: nothing to hold.
#[cfg(not(target_os = "linux"))]
fn hold(_cgroup: Option<crate::spawner::ChildCgroup>) -> Option<SessionCgroup> {
    None
}

impl Shared {
    fn new() -> Arc<Self> {
        Arc::new(Shared {
            state: Mutex::new(State {
                unread: HeadTail::new(UNREAD_CAP),
                exit: None,
                eof: false,
                last_activity: Instant::now(),
            }),
            notify: Notify::new(),
        })
    }
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
    /// Output does not wake the collector: it polls every few milliseconds anyway (an idle
    /// prompt is only recognised after a quiet period), and a wake-up per 4 KiB PTY read
    /// would cost more than the copy itself when a command floods the terminal.
    fn push(&self, bytes: &[u8]) {
        let mut state = self.state();
        state.unread.push(bytes);
        state.last_activity = Instant::now();
    }
    fn set_eof(&self) {
        self.state().eof = true;
        self.notify.notify_waiters();
    }
    fn set_exit(&self, exit: ProcessExit) {
        self.state().exit = Some((exit, Instant::now()));
        self.notify.notify_waiters();
    }
}

fn spawn_error(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> SessionError {
    SessionError::Spawn(e.into())
}

impl SessionProcess {
    /// In a new PTY: the child is a session leader with the PTY as controlling terminal.
    /// portable-pty allocates the terminal; the child is started like every other launch (the
    /// plan's program, `argv[0]`, environment and cwd through `std::process::Command`, the
    /// same pre-exec steps as a pipe session), with the terminal's other side as its stdio.
    pub fn spawn_pty(spec: &LaunchPlan) -> Result<Self, SessionError> {
        let pair = native_pty_system()
            .openpty(PtySize { rows: 24, cols: 200, pixel_width: 0, pixel_height: 0 })
            .map_err(spawn_error)?;
        let terminal = open_terminal(pair.master.as_ref())?;
        drop(pair.slave);
        // The terminal's other side stays with the child only: the session ends when it and
        // its descendants close it.
        let cgroup = spec.child_cgroup().map_err(spawn_error)?;
        let mut child = spec
            .start_in_terminal(terminal, cgroup.as_ref(), |mut command| command.spawn())
            .map_err(spawn_error)?;
        let pid = i32::try_from(child.id()).ok();
        let shared = Shared::new();
        let mut reader = pair.master.try_clone_reader().map_err(spawn_error)?;
        let writer = pair.master.take_writer().map_err(spawn_error)?;
        let to_reader = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("session-pty-reader".into())
            .spawn(move || {
                let mut buf = [0u8; 64 * 1024];
                loop {
                    match reader.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => to_reader.push(&buf[..n]),
                    }
                }
                to_reader.set_eof();
            })
            .map_err(spawn_error)?;
        let to_waiter = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("session-pty-wait".into())
            .spawn(move || {
                use std::os::unix::process::ExitStatusExt;
                let exit = child.wait().map_or(WAIT_FAILED, |s| from_raw(s.into_raw()));
                to_waiter.set_exit(exit);
            })
            .map_err(spawn_error)?;
        Ok(SessionProcess {
            pid,
            io: Io::Pty { master: Mutex::new(pair.master), writer: Arc::new(Mutex::new(writer)) },
            shared,
            limits: hold(cgroup),
            asked: spec.limits,
        })
    }

    /// On pipes: stdin from /dev/null, stdout and stderr merged into the session's output.
    pub fn spawn_pipes(spec: &LaunchPlan) -> Result<Self, SessionError> {
        // As in `cordon exec`: the helper in the forked child, while nothing runs beside this
        // thread (no PTY session's threads; `stdio` keeps the server's own stdin and stdout
        // off threads).
        let cgroup = spec.child_cgroup().map_err(spawn_error)?;
        let started = spec
            .start(ChildStdio::Null, cgroup.as_ref(), |command| {
                tokio::process::Command::from(command).spawn()
            })
            .map_err(spawn_error)?;
        #[cfg_attr(
            not(target_os = "linux"),
            expect(clippy::infallible_destructuring_match, reason = "one variant off Linux")
        )]
        let mut child = match started {
            // The sandbox's supervisor as this process's own child.
            #[cfg(target_os = "linux")]
            Started::Init(init) => {
                let mut process = Self::watch_init(init)?;
                process.limits = hold(cgroup);
                process.asked = spec.limits;
                return Ok(process);
            }
            Started::Spawned(child) => child,
        };
        let pid = child.id().and_then(|p| i32::try_from(p).ok());
        let streams: Vec<Box<dyn tokio::io::AsyncRead + Unpin + Send>> = [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
        ]
        .into_iter()
        .flatten()
        .collect();
        let exit = async move {
            use std::os::unix::process::ExitStatusExt;
            child.wait().await.map_or(WAIT_FAILED, |status| from_raw(status.into_raw()))
        };
        let mut process = Self::watch_pipes(pid, streams, exit);
        process.limits = hold(cgroup);
        process.asked = spec.limits;
        Ok(process)
    }

    /// [`spawn_pipes`](Self::spawn_pipes) through `crate::sys::spawn_namespace_init`: the
    /// output pipes read as any others, the exit read from the child's pidfd.
    #[cfg(target_os = "linux")]
    fn watch_init(init: crate::sys::InitChild) -> Result<Self, SessionError> {
        use tokio::net::unix::pipe::Receiver;
        let (mut process, stdout, stderr) =
            crate::init_process::InitProcess::from_child(init).map_err(spawn_error)?;
        let streams: Vec<Box<dyn tokio::io::AsyncRead + Unpin + Send>> = vec![
            Box::new(Receiver::from_owned_fd(stdout).map_err(spawn_error)?),
            Box::new(Receiver::from_owned_fd(stderr).map_err(spawn_error)?),
        ];
        let pid = process.pid();
        let exit = async move { process.wait().await.map_or(WAIT_FAILED, from_raw) };
        Ok(Self::watch_pipes(Some(pid), streams, exit))
    }

    /// Gathers a pipe session's output from `streams` and its exit code from `exit`.
    fn watch_pipes(
        pid: Option<i32>,
        streams: Vec<Box<dyn tokio::io::AsyncRead + Unpin + Send>>,
        exit: impl std::future::Future<Output = ProcessExit> + Send + 'static,
    ) -> Self {
        let shared = Shared::new();
        let open_streams = Arc::new(std::sync::atomic::AtomicUsize::new(streams.len()));
        for mut stream in streams {
            let shared = Arc::clone(&shared);
            let open_streams = Arc::clone(&open_streams);
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                while let Ok(n) = stream.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    shared.push(&buf[..n]);
                }
                if open_streams.fetch_sub(1, std::sync::atomic::Ordering::SeqCst) == 1 {
                    shared.set_eof();
                }
            });
        }
        let to_waiter = Arc::clone(&shared);
        tokio::spawn(async move {
            let exit = exit.await;
            to_waiter.set_exit(exit);
        });
        SessionProcess {
            pid,
            io: Io::Pipes,
            shared,
            limits: None,
            asked: cordon_policies::Limits::default(),
        }
    }

    pub fn is_pty(&self) -> bool {
        matches!(self.io, Io::Pty { .. })
    }

    /// Writes to the PTY (off the async thread: a full terminal input queue blocks).
    pub async fn write(&self, bytes: Vec<u8>) -> Result<(), WriteError> {
        let Io::Pty { writer, .. } = &self.io else { return Err(WriteError::NotATerminal) };
        self.shared.state().last_activity = Instant::now();
        let writer = Arc::clone(writer);
        let result = tokio::task::spawn_blocking(move || {
            let mut writer = writer.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            writer.write_all(&bytes).and_then(|()| writer.flush())
        })
        .await;
        self.shared.state().last_activity = Instant::now();
        match result {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(WriteError::Io(e)),
            Err(e) => Err(WriteError::Io(std::io::Error::other(e))),
        }
    }

    /// Completes at the process's exit or end of output (output itself does not wake it; see
    /// `Shared::push`). `enable()` it before looking at the state, or a change in between is
    /// missed: the notification keeps no permit.
    pub fn state_changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.shared.notify.notified()
    }

    /// How the process ended, once it did.
    pub fn exit(&self) -> Option<ProcessExit> {
        self.shared.state().exit.map(|(exit, _)| exit)
    }

    /// The resource limit the kernel stopped the process at, once it exited, with the value it
    /// was given.
    pub fn limit_reached(&self) -> Option<(cordon_policies::LimitKey, u64)> {
        let exit = crate::classify::ExitKind::from_remote(self.exit()?);
        #[cfg(target_os = "linux")]
        let held = self.limits.as_ref().map(|l| &*l.cgroup);
        #[cfg(not(target_os = "linux"))]
        let held = None;
        let key = crate::classify::limit_reached(&self.asked, exit, held)?;
        Some((key, self.asked.get(key)?))
    }

    /// The exit status once the process exited (128+N for signal N).
    pub fn exit_code(&self) -> Option<i32> {
        self.exit().map(ProcessExit::shell_status)
    }

    /// The process exited and its output is drained (end of file, or `drain` passed since the
    /// exit: what it left behind may keep the terminal open).
    pub fn exit_settled(&self, drain: Duration) -> bool {
        let state = self.shared.state();
        state.exit.is_some_and(|(_, at)| state.eof || at.elapsed() >= drain)
    }

    /// Time since the last output or input.
    pub fn quiet_for(&self) -> Duration {
        self.shared.state().last_activity.elapsed()
    }

    /// Whether a PTY session still has bytes in flight: typed input the program has not read
    /// yet (the terminal's input queue, seen through its name) or output the reader has not
    /// taken from the master. Either way the program is not idle at a prompt, whatever it is
    /// blocked in: under load a shell can sit in `read` for a while after the input arrived.
    /// False for pipes, and when the queues cannot be read.
    pub fn bytes_in_flight(&self) -> bool {
        let Io::Pty { master, .. } = &self.io else { return false };
        let master = master.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // The master stays open while its lock is held.
        let output = master.as_raw_fd().and_then(crate::sys::queued_bytes);
        let input = master.tty_name().and_then(|name| {
            use std::os::unix::fs::OpenOptionsExt;
            let terminal = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
                .open(name)
                .ok()?;
            crate::sys::queued_bytes(std::os::fd::AsRawFd::as_raw_fd(&terminal))
        });
        output.is_some_and(|n| n > 0) || input.is_some_and(|n| n > 0)
    }

    /// The PTY's foreground process group.
    pub fn foreground_group(&self) -> Option<i32> {
        let Io::Pty { master, .. } = &self.io else { return None };
        master.lock().unwrap_or_else(std::sync::PoisonError::into_inner).process_group_leader()
    }

    /// Everything printed since the last call (lossy UTF-8; a marker where bytes were
    /// dropped) and how many bytes that was in all.
    pub fn take_output(&self) -> (String, u64) {
        let mut state = self.shared.state();
        let taken = (state.unread.text(), state.unread.total());
        state.unread = HeadTail::new(UNREAD_CAP);
        taken
    }

    /// Sends SIGHUP to the session's process group (the terminal went away).
    pub fn hang_up(&self) {
        if let Some(pid) = self.pid {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGHUP);
        }
    }

    /// Kills the session's process group (and its cgroup's processes).
    pub fn terminate(&self) {
        if let Some(pid) = self.pid {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
        #[cfg(target_os = "linux")]
        if let Some(limits) = &self.limits {
            limits.cgroup.kill();
        }
    }
}

/// How a process whose wait status is `raw` ended.
fn from_raw(raw: i32) -> ProcessExit {
    ProcessExit::from_wait_status(raw)
}

/// What a session reports when its process could not be waited for.
const WAIT_FAILED: ProcessExit = ProcessExit::Code { code: 1 };

/// The terminal's other side, opened through the name its master gives it (portable-pty keeps
/// its own descriptor of it private). Not made cordon's controlling terminal.
fn open_terminal(master: &dyn MasterPty) -> Result<std::fs::File, SessionError> {
    use std::os::unix::fs::OpenOptionsExt;
    let name = master
        .tty_name()
        .ok_or_else(|| spawn_error("the new terminal has no name to open it by"))?;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY)
        .open(&name)
        .map_err(|e| spawn_error(format!("opening {}: {e}", name.display())))
}

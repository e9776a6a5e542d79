//! Interactive sessions: `exec_command` starts `[shell, -lc, cmd]` through the
//! orchestrator (decided, approved and sandboxed like any command) in a PTY or on pipes, and
//! collects output until the yield deadline or until there is nothing more to wait for:
//! the process exited and its output is drained, or — in a PTY — the foreground program is
//! back waiting for input ([`idle`]). A process still running keeps a session; `write_stdin`
//! types into it and collects what was printed since the last read.
//!
//! Bounds: at most [`MAX_SESSIONS`] live sessions (opening one more terminates the least
//! recently used one outside the [`PROTECTED_RECENT`] most recent, exited ones first); each
//! keeps at most [`UNREAD_CAP`] bytes of unread output (head + tail); every session's process
//! group is killed when it is pruned or when the manager shuts down.

mod api;
mod args;
mod error;
mod idle;
#[cfg(target_os = "linux")]
mod index;
mod listing;
mod process;
mod request;
mod resolved;
mod result;
mod text;

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cordon_policies::{AskForApproval, SandboxRequest, WriteChoice};

use crate::launch::{LaunchPlan, PinnedDir, SandboxKind, plan_launch};
use crate::network_proxy::NetworkProxy;
use crate::orchestrator::{Approver, Authorization, Orchestrator, SessionDenial};
use crate::resolved::ProcessExit;
use crate::runner::GitWatch;

use text::{Collected, Wait, clamp_yield, cut};

pub use api::Sessions;
pub use args::{
    CloseSessionArgs, ExecCommandArgs, NoArgs, SandboxPermissions, WriteStdinArgs, input_schema,
};
pub use error::SessionError;
pub use listing::SessionSummary;
#[cfg(test)]
pub use result::Truncation;
pub use result::{CallResult, Closed, Note, SessionState};
pub(crate) use text::{MAX_EMPTY_POLL_YIELD, MAX_YIELD};

use request::refusals_note;
pub(crate) use request::session_request;

use process::SessionProcess;

/// Live sessions at most.
pub const MAX_SESSIONS: usize = 64;
/// The most recently used sessions are never pruned.
pub const PROTECTED_RECENT: usize = 8;
/// Unread output kept per session (head + tail).
pub const UNREAD_CAP: usize = 1024 * 1024;

const DEFAULT_EXEC_YIELD_MS: u64 = 10_000;
const DEFAULT_WRITE_YIELD_MS: u64 = 250;
const DEFAULT_MAX_OUTPUT_TOKENS: usize = 10_000;
/// After the process exits, output from what it left behind may still be arriving.
const EXIT_DRAIN: Duration = Duration::from_millis(50);

/// Added to every session's environment: plain output, no pagers.
pub const SESSION_ENV: &[(&str, &str)] = &[
    ("NO_COLOR", "1"),
    ("TERM", "dumb"),
    ("LANG", "C.UTF-8"),
    ("LC_ALL", "C.UTF-8"),
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
];

/// A session about to start: what it runs (for listings) and how its first call collects.
pub(super) struct Start {
    pub started: Instant,
    pub cmd: String,
    pub tty: bool,
    pub yield_time_ms: Option<u64>,
    pub max_output_tokens: Option<usize>,
    /// With a domain allow-list: the session's own proxy, alive as long as the session.
    pub proxy: Option<NetworkProxy>,
    /// What the session's command could plant in the git dirs of its writable roots.
    pub git_watch: Option<GitWatch>,
}

/// When a call started, how long it may wait and how much it may return.
#[derive(Debug, Clone, Copy)]
struct Collect {
    started: Instant,
    yield_for: Duration,
    max_tokens: usize,
}

/// Settings every session shares.
#[derive(Debug, Clone)]
pub struct SessionDefaults {
    /// The default working directory: the workspace, which `sandbox.policy_cwd` names too.
    pub cwd: PathBuf,
    pub sandbox: SandboxRequest,
    pub approval: AskForApproval,
    /// The environment after the environment policy (the overlay is added on top).
    pub env: Vec<(OsString, OsString)>,
}

struct Entry {
    session: Arc<SessionProcess>,
    /// With a domain allow-list: the session's own proxy, alive as long as the session.
    proxy: Option<NetworkProxy>,
    /// How many of the proxy's refusals earlier results already reported.
    refusals_reported: usize,
    /// Checked at every result: what the command planted where git runs code from is moved
    /// aside and reported.
    git_watch: Option<Arc<GitWatch>>,
    /// What the session runs, for listings.
    about: listing::About,
    last_used: u64,
    /// Calls waiting on this session right now: a busy session is never pruned.
    busy: u32,
}

#[derive(Default)]
struct Table {
    sessions: HashMap<u32, Entry>,
    next_id: u32,
    clock: u64,
    /// Sessions closed to make room, most recent last (bounded), so their ids can say so.
    closed: std::collections::VecDeque<u32>,
}

/// How many pruned session ids are remembered.
const CLOSED_REMEMBERED: usize = 4096;

/// Marks a session busy while a call waits on it; dropping it (also when the call is
/// abandoned) releases the session.
struct Busy<'a> {
    manager: &'a SessionManager,
    id: u32,
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        if let Some(entry) = self.manager.table().sessions.get_mut(&self.id) {
            entry.busy = entry.busy.saturating_sub(1);
        }
    }
}

/// The sessions of one executor.
pub struct SessionManager {
    orchestrator: Arc<Orchestrator>,
    defaults: SessionDefaults,
    table: Mutex<Table>,
    /// The repositories of the roots, kept current while the server lives.
    #[cfg(target_os = "linux")]
    index: index::ServerIndex,
}

impl SessionManager {
    pub fn new(orchestrator: Arc<Orchestrator>, defaults: SessionDefaults) -> Self {
        // What a session's command leaves behind when it double-forks out of its group (an
        // unsandboxed session has no PID namespace to end it) comes back here, so that
        // `shutdown` can end it.
        crate::sys::become_subreaper();
        // Up to 64 live sessions, each holding its terminal or pipes and the git dirs its
        // watch keeps open: more than the usual soft limit of 1024 descriptors.
        crate::limits::raise_open_file_limit();
        SessionManager {
            orchestrator,
            defaults,
            table: Mutex::new(Table::default()),
            #[cfg(target_os = "linux")]
            index: index::ServerIndex::default(),
        }
    }

    /// The index of the server's roots for a call sandboxed as `kind` (only the Linux sandbox
    /// binds and checks repositories).
    #[cfg(target_os = "linux")]
    fn repository_index(
        &self,
        kind: SandboxKind,
    ) -> Option<Arc<cordon_sandbox_linux::RepositoryIndex>> {
        (kind == SandboxKind::Linux)
            .then(|| self.index.get(&self.defaults.sandbox, self.orchestrator.helper()))
            .flatten()
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `exec_command` (see [`Sessions::exec`]).
    async fn exec_command(
        &self,
        args: ExecCommandArgs,
        approver: &impl Approver,
    ) -> Result<CallResult, SessionError> {
        let started = Instant::now();
        // The workdir only sets where the command runs: the writable roots stay those the
        // executor started with. Opened here, before any question shows it, and the command
        // starts in the directory opened (see `PinnedDir`): what is shown for approval is where
        // the command runs, whatever happens to the path meanwhile.
        let dir = match &args.workdir {
            Some(dir) => self.defaults.cwd.join(dir),
            None => self.defaults.cwd.clone(),
        };
        let pin = PinnedDir::open(&dir).map_err(|source| SessionError::Workdir {
            path: args.workdir.clone().unwrap_or_else(|| dir.clone()),
            source,
        })?;
        let (request, narrowed_by) =
            session_request(&args, &self.defaults, (pin.path().to_path_buf(), Some(pin)))?;
        let mut approvals = Vec::new();
        let sandboxed = match self.orchestrator.authorize(&request, approver, &mut approvals).await
        {
            Authorization::Run { sandboxed, .. } => sandboxed,
            Authorization::Refused { reason, .. } => {
                tracing::debug!(command = ?request.command, %reason, "session refused");
                return Err(SessionError::Rejected(reason));
            }
        };
        let request = request.under(sandboxed);
        let kind = SandboxKind::for_run(&request.sandbox.policy, sandboxed);
        // A domain allow-list gets a proxy of its own for as long as the session lives.
        let test_resolve = &self.orchestrator.helper().proxy_test_resolve;
        let proxy =
            NetworkProxy::start_for(kind, &request.sandbox.policy, narrowed_by, test_resolve)?;
        // A transaction's changes are judged by the write gate when the command has ended.
        let git_watch = match request.sandbox.writes {
            WriteChoice::Direct => crate::runner::watch_git_dirs(crate::runner::WatchOf {
                request: &request.sandbox,
                sandbox: kind,
                helper: self.orchestrator.helper(),
                #[cfg(target_os = "linux")]
                index: self.repository_index(kind),
            }),
            WriteChoice::Transaction | WriteChoice::Auto => None,
        };
        let mut launch = request.launch(kind);
        launch.proxy = proxy.as_ref().map(NetworkProxy::endpoint);
        #[cfg(target_os = "linux")]
        {
            launch.walked = git_watch.as_ref().map(crate::runner::GitWatch::walked);
        }
        let spec = plan_launch(&launch, self.orchestrator.helper())?;
        crate::runner::log_plan(&spec, self.orchestrator.helper(), proxy.is_some());
        let start = Start {
            started,
            cmd: args.cmd.clone(),
            tty: args.tty.unwrap_or(false),
            yield_time_ms: args.yield_time_ms,
            max_output_tokens: args.max_output_tokens,
            proxy,
            git_watch,
        };
        let first = self.start_session(spec, start).await?;
        // A command that ended within the call, likely blocked by the sandbox: under a policy
        // that asks after a denial, the question goes to the client, and an approved retry
        // runs without the sandbox as a new session.
        let SessionState::Exited { exit: ProcessExit::Code { code } } = first.state else {
            return Ok(first);
        };
        // A command a resource limit stopped was not blocked by the sandbox.
        if first.notes.iter().any(|note| matches!(note, Note::LimitExceeded { .. })) {
            return Ok(first);
        }
        let denied =
            SessionDenial { request: &request, sandbox: kind, code, output: &first.output };
        if !self.orchestrator.approve_retry_after_session(denied, approver).await {
            return Ok(first);
        }
        tracing::debug!("retrying the session's command without the sandbox");
        let spec = plan_launch(&request.launch(SandboxKind::None), self.orchestrator.helper())?;
        let start = Start {
            started,
            cmd: args.cmd,
            tty: args.tty.unwrap_or(false),
            yield_time_ms: args.yield_time_ms,
            max_output_tokens: args.max_output_tokens,
            proxy: None,
            git_watch: None,
        };
        let mut retry = self.start_session(spec, start).await?;
        retry.notes.insert(
            0,
            Note::RetriedWithoutSandbox { first_exit: code, first_output: first.output },
        );
        Ok(retry)
    }

    /// Spawns `spec` as a new session and collects its first output.
    pub(super) async fn start_session(
        &self,
        spec: LaunchPlan,
        start: Start,
    ) -> Result<CallResult, SessionError> {
        let Start { started, cmd, tty, yield_time_ms, max_output_tokens, proxy, git_watch } = start;
        // Room first (nothing below awaits, so no other call can take it meanwhile).
        let closed = self.make_room()?;
        if !closed.is_empty() {
            tracing::debug!(?closed, "closed the oldest idle sessions to make room");
        }
        let session = Arc::new(if tty {
            SessionProcess::spawn_pty(&spec)?
        } else {
            SessionProcess::spawn_pipes(&spec)?
        });
        let about = listing::About { cmd, tty, started: Instant::now() };
        let id = self.register(Arc::clone(&session), about, (proxy, git_watch));
        tracing::debug!(session = id, tty, sandbox = spec.sandbox.as_str(), "session opened");
        let _busy = Busy { manager: self, id };
        let abandoned = listing::KillIfAbandoned::new(self, id);
        let yield_for =
            clamp_yield(yield_time_ms.unwrap_or(DEFAULT_EXEC_YIELD_MS), Wait::AfterInput);
        let max_tokens = max_output_tokens.unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS);
        let mut result =
            self.collect(id, &session, Collect { started, yield_for, max_tokens }).await;
        abandoned.disarm();
        if !closed.is_empty() {
            result.notes.push(Note::ClosedToMakeRoom { session_ids: closed });
        }
        Ok(result)
    }

    /// `write_stdin` (see [`Sessions::write`]); also the resolved form's `write_resolved`.
    async fn write_stdin(&self, args: WriteStdinArgs) -> Result<CallResult, SessionError> {
        let started = Instant::now();
        let id = args.session_id;
        let session = self.touch(id).ok_or_else(|| {
            if self.table().closed.contains(&id) {
                SessionError::Pruned(id)
            } else {
                SessionError::UnknownSession(id)
            }
        })?;
        let _busy = Busy { manager: self, id };
        let chars = args.chars.unwrap_or_default();
        let empty_poll = chars.is_empty();
        if !empty_poll {
            session.write(chars.into_bytes()).await.map_err(|e| match e {
                process::WriteError::NotATerminal => SessionError::NotATerminal(id),
                process::WriteError::Io(source) => SessionError::Write { id, source },
            })?;
        }
        let abandoned = listing::KillIfAbandoned::new(self, id);
        let yield_for = clamp_yield(
            args.yield_time_ms.unwrap_or(DEFAULT_WRITE_YIELD_MS),
            if empty_poll { Wait::EmptyPoll } else { Wait::AfterInput },
        );
        let max_tokens = args.max_output_tokens.unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS);
        let result = self.collect(id, &session, Collect { started, yield_for, max_tokens }).await;
        abandoned.disarm();
        Ok(result)
    }

    /// Waits for output (see the module docs), then reports and, for an exited process,
    /// forgets the session.
    async fn collect(&self, id: u32, session: &SessionProcess, limits: Collect) -> CallResult {
        let Collect { started, yield_for, max_tokens } = limits;
        let deadline = started + yield_for;
        loop {
            // Registered before the checks, so an exit or end of file between them and the
            // wait below ends the wait at once instead of after the next poll.
            let changed = session.state_changed();
            let mut changed = std::pin::pin!(changed);
            changed.as_mut().enable();
            if session.exit_settled(EXIT_DRAIN) {
                break;
            }
            if session.is_pty() && session.quiet_for() >= idle::QUIET && !session.bytes_in_flight()
            {
                if let Some(leader) = session.foreground_group() {
                    if idle::waiting_for_input(leader) {
                        break;
                    }
                }
            }
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            let poll = (deadline - now).min(Duration::from_millis(5));
            let _ = tokio::time::timeout(poll, changed).await;
        }
        let (output, original_bytes) = session.take_output();
        let mut notes: Vec<Note> = self.new_refusals(id).into_iter().collect();
        notes.extend(self.moved_aside(id));
        let state = match session.exit() {
            Some(exit) if session.exit_settled(EXIT_DRAIN) => {
                tracing::debug!(session = id, ?exit, "session exited");
                if let Some((key, limit)) = session.limit_reached() {
                    notes.push(Note::LimitExceeded { key, limit });
                }
                self.table().sessions.remove(&id);
                SessionState::Exited { exit }
            }
            _ => SessionState::Running { session_id: id },
        };
        let (output, truncated) = cut(Collected { text: &output, original_bytes }, max_tokens);
        CallResult { wall_time: started.elapsed(), state, output, truncated, notes }
    }

    /// At the cap, closes idle sessions until one more fits and returns their ids; refuses
    /// when every session is busy with a call.
    fn make_room(&self) -> Result<Vec<u32>, SessionError> {
        let mut table = self.table();
        let mut closed = Vec::new();
        while table.sessions.len() >= MAX_SESSIONS {
            let id = prune_one(&mut table).ok_or(SessionError::TooManySessions)?;
            table.closed.push_back(id);
            if table.closed.len() > CLOSED_REMEMBERED {
                table.closed.pop_front();
            }
            closed.push(id);
        }
        Ok(closed)
    }

    /// Adds a new session, busy with the call that started it.
    fn register(
        &self,
        session: Arc<SessionProcess>,
        about: listing::About,
        (proxy, git_watch): (Option<NetworkProxy>, Option<GitWatch>),
    ) -> u32 {
        let mut table = self.table();
        table.next_id += 1;
        table.clock += 1;
        let (id, last_used) = (table.next_id, table.clock);
        let git_watch = git_watch.map(Arc::new);
        let entry =
            Entry { session, proxy, refusals_reported: 0, git_watch, about, last_used, busy: 1 };
        table.sessions.insert(id, entry);
        id
    }

    /// What the session's command planted where git runs code from, moved aside now, and
    /// where the search for it did not reach.
    fn moved_aside(&self, id: u32) -> Vec<Note> {
        let Some(watch) = self.table().sessions.get(&id).and_then(|e| e.git_watch.clone()) else {
            return Vec::new();
        };
        let after = watch.move_aside();
        let entries: Vec<String> = after.moved_aside.iter().map(ToString::to_string).collect();
        let dirs: Vec<String> =
            after.not_searched.iter().map(|dir| dir.display().to_string()).collect();
        let moved = (!entries.is_empty()).then_some(Note::MovedAside { entries });
        let unsearched = (!dirs.is_empty()).then_some(Note::NotSearched { dirs });
        moved.into_iter().chain(unsearched).collect()
    }

    /// The proxy's refusals not reported yet.
    fn new_refusals(&self, id: u32) -> Option<Note> {
        let mut table = self.table();
        let entry = table.sessions.get_mut(&id)?;
        let proxy = entry.proxy.as_ref()?;
        let refusals = proxy.refusals();
        let new = refusals.get(entry.refusals_reported..).unwrap_or_default();
        entry.refusals_reported = refusals.len();
        refusals_note(new)
    }

    /// The session, marked used now and busy (release with a [`Busy`] guard).
    fn touch(&self, id: u32) -> Option<Arc<SessionProcess>> {
        let mut table = self.table();
        table.clock += 1;
        let clock = table.clock;
        let entry = table.sessions.get_mut(&id)?;
        entry.last_used = clock;
        entry.busy += 1;
        Some(Arc::clone(&entry.session))
    }

    /// Live sessions (for tests and benchmarks).
    pub fn len(&self) -> usize {
        self.table().sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Closes every session: SIGHUP to each process group (as a closing terminal would), a
    /// short grace period, then SIGKILL.
    pub fn shutdown(&self) {
        let sessions: Vec<Entry> = self.table().sessions.drain().map(|(_, e)| e).collect();
        if sessions.is_empty() {
            crate::sys::kill_orphans();
            return;
        }
        tracing::debug!(sessions = sessions.len(), "closing every session");
        for entry in &sessions {
            entry.session.hang_up();
        }
        std::thread::sleep(SHUTDOWN_GRACE);
        for entry in &sessions {
            entry.session.terminate();
        }
        // What they planted where git runs code from goes with them (`Entry`'s drop).
        std::thread::sleep(SHUTDOWN_GRACE);
        drop(sessions);
        // And whatever their commands left: orphans reparented to this subreaper.
        crate::sys::kill_orphans();
    }
}

impl Drop for Entry {
    /// A session that ends without a last result (shut down, pruned, abandoned) still has what
    /// its command planted moved aside.
    fn drop(&mut self) {
        if let Some(watch) = &self.git_watch {
            watch.move_aside();
        }
    }
}

/// How long sessions get between SIGHUP and SIGKILL at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(100);

/// Terminates and removes the least recently used idle session outside the protected most
/// recent ones, preferring sessions whose process already exited. A session a call is waiting
/// on is never pruned. Returns the id, or `None` when no session may go.
fn prune_one(table: &mut Table) -> Option<u32> {
    let mut by_age: Vec<(u64, u32, bool, bool)> = table
        .sessions
        .iter()
        .map(|(id, e)| (e.last_used, *id, e.session.exit_code().is_some(), e.busy > 0))
        .collect();
    by_age.sort_unstable();
    let candidates: Vec<_> = by_age[..by_age.len().saturating_sub(PROTECTED_RECENT)]
        .iter()
        .filter(|(_, _, _, busy)| !busy)
        .copied()
        .collect();
    let (_, id, _, _) =
        candidates.iter().find(|(_, _, exited, _)| *exited).or_else(|| candidates.first())?;
    if let Some(entry) = table.sessions.remove(id) {
        entry.session.terminate();
    }
    Some(*id)
}

impl Sessions for SessionManager {
    fn defaults(&self) -> &SessionDefaults {
        &self.defaults
    }

    async fn exec(
        &self,
        args: ExecCommandArgs,
        approver: &impl Approver,
    ) -> Result<CallResult, SessionError> {
        self.exec_command(args, approver).await
    }

    async fn write(&self, args: WriteStdinArgs) -> Result<CallResult, SessionError> {
        self.write_stdin(args).await
    }

    fn list(&self) -> Vec<SessionSummary> {
        self.summaries()
    }

    async fn close(&self, session_id: u32) -> Result<Closed, SessionError> {
        self.close_session(session_id).await?;
        Ok(Closed { session_id })
    }

    fn shutdown(&self) {
        SessionManager::shutdown(self);
    }
}

impl Drop for SessionManager {
    fn drop(&mut self) {
        self.shutdown();
    }
}

//! The resolved form's side of the sessions (protocol 2, `cordon executor --serve-remote`):
//! run exactly the argv, cwd, environment and sandbox an orchestrator elsewhere decided.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use cordon_policies::{SandboxPolicy, SandboxRequest};

use super::{CallResult, SessionError, SessionManager, SessionState, Start};
use crate::launch::{Launch, ParentDeath, PinnedDir, SandboxKind, plan_launch};
use crate::resolved::{ResolvedExec, ResolvedResult, SandboxAttempt};

impl SessionManager {
    /// The resolved form (protocol 2): runs exactly `exec` — argv, cwd, environment and
    /// sandbox decided (and approved) by the orchestrator on the other end of the link.
    /// Nothing is decided here beyond what this machine's sandbox can enforce.
    pub async fn exec_resolved(&self, exec: ResolvedExec) -> Result<CallResult, SessionError> {
        let started = Instant::now();
        if !exec.cwd.is_absolute() {
            return Err(SessionError::RelativeCwd(exec.cwd));
        }
        // The path the orchestrator showed must be the directory itself: a symbolic link on
        // the way (planted there by an earlier command, or swapped in since) would run the
        // command somewhere the question never named.
        let pin = PinnedDir::open(&exec.cwd)
            .map_err(|source| SessionError::Workdir { path: exec.cwd.clone(), source })?;
        if pin.path() != exec.cwd {
            return Err(SessionError::WorkdirElsewhere {
                shown: exec.cwd,
                resolved: pin.path().to_path_buf(),
            });
        }
        let env: Vec<(OsString, OsString)> =
            exec.env.iter().map(|(k, v)| (k.0.clone(), v.0.clone())).collect();
        let helper = self.orchestrator.helper();
        let (kind, sandbox) = match exec.sandbox {
            SandboxAttempt::None { limits } => (SandboxKind::None, {
                let mut request =
                    SandboxRequest::new(SandboxPolicy::DangerFullAccess {}, exec.cwd.clone());
                request.limits = limits;
                request
            }),
            SandboxAttempt::Platform { request } => {
                (SandboxKind::for_policy(&request.policy), *request)
            }
        };
        let launch = Launch {
            kind,
            command: exec.argv.iter().map(|word| word.0.clone()).collect(),
            cwd: &exec.cwd,
            cwd_pin: Some(&pin),
            sandbox: &sandbox,
            env: &env,
            parent_death: ParentDeath::Kill,
            proxy: None,
            #[cfg(target_os = "linux")]
            walked: None,
            #[cfg(target_os = "linux")]
            writes_to: None,
            #[cfg(target_os = "linux")]
            temporary_in: None,
        };
        // A transaction of the helper's own is applied when the command has ended: a
        // terminal session writes as it runs, and the gate is the check after it.
        if !sandbox.writes.is_direct() && exec.tty {
            return Err(SessionError::TransactionInTerminal);
        }
        let spec = plan_launch(&launch, helper)?;
        let git_watch = match sandbox.writes.is_direct() {
            true => crate::runner::watch_git_dirs(crate::runner::WatchOf {
                request: &sandbox,
                sandbox: kind,
                helper,
                #[cfg(target_os = "linux")]
                index: self.repository_index(kind),
            }),
            false => None,
        };
        let start = Start {
            started,
            cmd: cordon_policies::render_argv(&exec.argv.iter().map(|w| &w.0).collect::<Vec<_>>())
                .text,
            tty: exec.tty,
            yield_time_ms: exec.yield_time_ms,
            max_output_tokens: exec.max_output_tokens,
            // No proxy over there yet: a policy with a domain list runs without network
            // (fail closed), as `launch` does for any plan without a proxy socket.
            proxy: None,
            git_watch,
        };
        self.start_session(spec, start).await
    }
}

impl From<CallResult> for ResolvedResult {
    fn from(result: CallResult) -> Self {
        let (session_id, exit) = match result.state {
            SessionState::Running { session_id } => (Some(session_id), None),
            SessionState::Exited { exit } => (None, Some(exit)),
        };
        ResolvedResult {
            session_id,
            exit,
            wall_time_ms: result.wall_time.as_secs_f64() * 1000.0,
            output: result.output,
            truncated: result.truncated,
            notes: result.notes,
        }
    }
}

impl ResolvedResult {
    /// The far end's result as this side's, or `None` when it is not one: a process both
    /// running and exited, or neither, an exit no process can have, or a wall time that is no
    /// duration.
    pub(crate) fn into_call_result(self) -> Option<CallResult> {
        let state = match (self.session_id, self.exit) {
            (Some(session_id), None) => SessionState::Running { session_id },
            (None, Some(exit)) if exit.is_possible() => SessionState::Exited { exit },
            (None, Some(_)) => return None,
            (Some(_), Some(_)) | (None, None) => return None,
        };
        Some(CallResult {
            wall_time: Duration::try_from_secs_f64(self.wall_time_ms / 1000.0).ok()?,
            state,
            output: self.output,
            truncated: self.truncated,
            notes: self.notes,
        })
    }
}

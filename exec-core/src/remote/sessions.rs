//! `cordon executor --connect HOST` and `cordon mcp-server --connect HOST`: a harness's
//! sessions, decided here and run there. Each `exec_command` goes through this side's
//! orchestrator (rules, approval policy, approvals asked of the harness) and leaves as the
//! resolved form; `write_stdin` and `close_session` are passed through.

use std::sync::Arc;

use crate::launch::SandboxKind;
use crate::orchestrator::{Approver, Authorization, Orchestrator};
use crate::resolved::{ApprovalState, ResolvedExec, ResolvedResult, WireBytes};
use crate::session::{
    CallResult, Closed, ExecCommandArgs, SessionDefaults, SessionError, SessionSummary, Sessions,
    WriteStdinArgs, session_request,
};

use super::link::{ANSWER_GRACE, RemoteLink, Write};
use super::on_host::OnHost;
use super::{RemoteError, attempt_for};
use crate::session::{MAX_EMPTY_POLL_YIELD, MAX_YIELD};

/// The sessions of one harness on the far end of a [`RemoteLink`].
pub struct RemoteSessions {
    link: RemoteLink,
    orchestrator: Arc<Orchestrator>,
    /// The workspace is a path on the far end; the environment is the far end's, filtered by
    /// this side's environment policy.
    defaults: SessionDefaults,
}

impl RemoteSessions {
    pub fn new(
        link: RemoteLink,
        orchestrator: Arc<Orchestrator>,
        defaults: SessionDefaults,
    ) -> Self {
        RemoteSessions { link, orchestrator, defaults }
    }

    pub fn link(&self) -> &RemoteLink {
        &self.link
    }

    /// The far end's result as this side's.
    fn result(&self, result: ResolvedResult) -> Result<CallResult, SessionError> {
        result.into_call_result().ok_or_else(|| {
            SessionError::Remote(RemoteError::Protocol {
                host: self.link.host().to_owned(),
                message: "a result that is not one running or one exited process, or whose \
                          wall time is no duration"
                    .into(),
            })
        })
    }
}

impl Sessions for RemoteSessions {
    /// The workspace (a path there), the policy and the approval policy sessions run under.
    fn defaults(&self) -> &SessionDefaults {
        &self.defaults
    }

    /// Decided (and approved through `approver`) here, run there.
    async fn exec(
        &self,
        args: ExecCommandArgs,
        approver: &impl Approver,
    ) -> Result<CallResult, SessionError> {
        // The workdir is a path over there: joined here, never resolved here (this machine's
        // file system says nothing about it). The far end runs exactly this directory, which
        // is what an approval shows, and refuses it when the path leads elsewhere there.
        let cwd = match &args.workdir {
            Some(dir) => self.defaults.cwd.join(dir),
            None => self.defaults.cwd.clone(),
        };
        let (request, narrowed_by) = session_request(&args, &self.defaults, (cwd, None))?;
        if narrowed_by.is_some() || request.sandbox.policy.network_domains().is_some() {
            return Err(SessionError::NetworkByDomainElsewhere);
        }
        let mut approvals = Vec::new();
        let approver = OnHost { host: self.link.host(), inner: approver };
        let sandboxed = match self.orchestrator.authorize(&request, &approver, &mut approvals).await
        {
            Authorization::Run { sandboxed, .. } => sandboxed,
            Authorization::Refused { reason, .. } => return Err(SessionError::Rejected(reason)),
        };
        let request = request.under(sandboxed);
        let kind = SandboxKind::for_run(&request.sandbox.policy, sandboxed);
        let approval =
            if approvals.is_empty() { ApprovalState::NotNeeded } else { ApprovalState::Granted };
        let exec = ResolvedExec {
            argv: request.command.iter().map(|word| WireBytes::from(word.as_os_str())).collect(),
            cwd: request.cwd.clone(),
            env: super::wire_env(&request.env),
            sandbox: attempt_for(&request, kind),
            approval,
            tty: args.tty.unwrap_or(false),
            yield_time_ms: args.yield_time_ms,
            max_output_tokens: args.max_output_tokens,
        };
        let answer_within = ANSWER_GRACE + MAX_YIELD;
        self.result(self.link.within(answer_within, self.link.exec(exec)).await?)
    }

    /// Passed through.
    async fn write(&self, args: WriteStdinArgs) -> Result<CallResult, SessionError> {
        let chars = args.chars.unwrap_or_default();
        let longest_wait = if chars.is_empty() { MAX_EMPTY_POLL_YIELD } else { MAX_YIELD };
        let write = Write {
            session_id: args.session_id,
            chars: &chars,
            yield_time_ms: args.yield_time_ms,
            max_output_tokens: args.max_output_tokens,
        };
        let answer_within = ANSWER_GRACE + longest_wait;
        self.result(self.link.within(answer_within, self.link.write(write)).await?)
    }

    /// The sessions this side knows of there: those it started that have not been reported
    /// exited (so no exit code).
    fn list(&self) -> Vec<SessionSummary> {
        self.link
            .live_sessions()
            .into_iter()
            .map(|(session_id, session)| SessionSummary {
                session_id,
                cmd: session.cmd,
                tty: session.tty,
                exit_code: None,
                running_for_secs: session.started.elapsed().as_secs(),
                busy: session.busy > 0,
                host: Some(self.link.host().to_owned()),
            })
            .collect()
    }

    /// Ends one session there.
    async fn close(&self, session_id: u32) -> Result<Closed, SessionError> {
        self.link.within(ANSWER_GRACE, self.link.close_session(session_id)).await?;
        Ok(Closed { session_id })
    }

    /// EOF to the far end: it ends every session there.
    fn shutdown(&self) {
        self.link.hang_up();
    }
}

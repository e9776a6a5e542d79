//! `cordon executor --connect HOST`: a harness's sessions, decided here and run there. Each
//! `exec_command` goes through this side's orchestrator (rules, approval policy, approvals
//! asked of the harness) and leaves as the resolved form; `write_stdin` is passed through.

use std::sync::Arc;

use crate::executor::{Backend, Hello};
use crate::launch::SandboxKind;
use crate::orchestrator::{Approver, Authorization, Orchestrator};
use crate::resolved::{ApprovalState, ResolvedExec, ResolvedResult, WireBytes};
use crate::session::{ExecCommandArgs, SessionDefaults, WriteStdinArgs, session_request};

use super::attempt_for;
use super::link::{RemoteLink, Write};

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

    /// The workspace (a path there), the policy and the approval policy sessions run under.
    pub fn defaults(&self) -> &SessionDefaults {
        &self.defaults
    }

    /// `exec_command`: decided (and approved through `approver`) here, run there.
    pub async fn exec_command(
        &self,
        args: ExecCommandArgs,
        approver: &impl Approver,
    ) -> Result<String, String> {
        // The workdir is a path over there: joined here, never resolved here (this machine's
        // file system says nothing about it). The far end runs exactly this directory, which
        // is what an approval shows, and refuses it when the path leads elsewhere there.
        let cwd = match &args.workdir {
            Some(dir) => self.defaults.cwd.join(dir),
            None => self.defaults.cwd.clone(),
        };
        let (request, narrowed_by) =
            session_request(&args, &self.defaults, (cwd, None)).map_err(|e| e.to_string())?;
        if narrowed_by.is_some() || request.sandbox.policy.network_domains().is_some() {
            return Err("allowed_domains: network by domain is not available on another machine \
                        yet (its proxy would have to run there)"
                .to_owned());
        }
        let mut approvals = Vec::new();
        let sandboxed = match self.orchestrator.authorize(&request, approver, &mut approvals).await
        {
            Authorization::Run { sandboxed, .. } => sandboxed,
            Authorization::Refused { reason, .. } => return Err(format!("refused: {reason}")),
        };
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
        self.link.exec(&exec).await.map(|r| r.text).map_err(|e| e.to_string())
    }

    /// `write_stdin`, passed through.
    pub async fn write_stdin(&self, args: WriteStdinArgs) -> Result<String, String> {
        let chars = args.chars.unwrap_or_default();
        let write = Write {
            session_id: args.session_id,
            chars: &chars,
            yield_time_ms: args.yield_time_ms,
            max_output_tokens: args.max_output_tokens,
        };
        self.link.write(write).await.map(|r| r.text).map_err(|e| e.to_string())
    }

    /// Ends one session there.
    pub async fn close_session(&self, session_id: u32) -> Result<String, String> {
        self.link.close_session(session_id).await.map_err(|e| e.to_string())
    }

    /// EOF to the far end: it ends every session there.
    pub fn shutdown(&self) {
        self.link.hang_up();
    }
}

const RESOLVED_NOT_HERE: &str = "the resolved form is served by `cordon executor --serve-remote` \
     (the far end of this link), not by a harness-facing executor";

impl Backend for RemoteSessions {
    fn hello(&self) -> Hello {
        Hello { min_version: 1, forms: vec!["exec_command"], host: None }
    }

    async fn exec_command(
        &self,
        args: ExecCommandArgs,
        approver: &impl Approver,
    ) -> Result<String, String> {
        RemoteSessions::exec_command(self, args, approver).await
    }

    async fn write_stdin(&self, args: WriteStdinArgs) -> Result<String, String> {
        RemoteSessions::write_stdin(self, args).await
    }

    async fn exec_resolved(&self, _exec: ResolvedExec) -> Result<ResolvedResult, String> {
        Err(RESOLVED_NOT_HERE.to_owned())
    }

    async fn write_resolved(&self, _args: WriteStdinArgs) -> Result<ResolvedResult, String> {
        Err(RESOLVED_NOT_HERE.to_owned())
    }

    async fn close_session(&self, _session_id: u32) -> Result<String, String> {
        Err(RESOLVED_NOT_HERE.to_owned())
    }

    fn shutdown(&self) {
        RemoteSessions::shutdown(self);
    }
}

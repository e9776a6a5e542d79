//! What serves the protocol's requests: a [`Backend`]. `cordon executor` serves harnesses
//! with [`LocalExecutor`] (the high-level form, decided here); `cordon executor
//! --serve-remote` serves an orchestrator on another machine with [`RemoteServer`] (the
//! resolved form only, decided there); `cordon executor --connect` serves harnesses with
//! [`crate::remote::RemoteSessions`] (decided here, run there).

use std::future::Future;
use std::rc::Rc;

use crate::orchestrator::Approver;
use crate::session::{ExecCommandArgs, SessionManager, WriteStdinArgs};

use super::protocol::{HostFacts, RESOLVED_FORM_VERSION, ResolvedExec, ResolvedResult};

/// What a backend says about itself in `hello_response`.
#[derive(Debug, Clone)]
pub struct Hello {
    /// The oldest protocol version it serves.
    pub min_version: u32,
    /// The request forms it serves.
    pub forms: Vec<&'static str>,
    /// Facts about this machine, for an orchestrator elsewhere.
    pub host: Option<HostFacts>,
}

/// Serves the requests of one protocol connection. Errors are the message the peer gets.
pub trait Backend {
    fn hello(&self) -> Hello;
    fn exec_command(
        &self,
        args: ExecCommandArgs,
        approver: &impl Approver,
    ) -> impl Future<Output = Result<String, String>>;
    fn write_stdin(&self, args: WriteStdinArgs) -> impl Future<Output = Result<String, String>>;
    fn exec_resolved(
        &self,
        exec: ResolvedExec,
    ) -> impl Future<Output = Result<ResolvedResult, String>>;
    fn write_resolved(
        &self,
        args: WriteStdinArgs,
    ) -> impl Future<Output = Result<ResolvedResult, String>>;
    /// Ends one session (`close_resolved`).
    fn close_session(&self, session_id: u32) -> impl Future<Output = Result<String, String>>;
    /// Ends every session (EOF, `shutdown`, a signal).
    fn shutdown(&self);
}

const RESOLVED_ONLY_REMOTE: &str = "the resolved form (exec_resolved, write_resolved) is served only by \
     `cordon executor --serve-remote`, whose peer is an orchestrator that decided and approved \
     the command; a harness uses exec_command";

/// `cordon executor`: the high-level form, with this machine's approval policy.
pub struct LocalExecutor {
    pub manager: Rc<SessionManager>,
}

impl Backend for LocalExecutor {
    fn hello(&self) -> Hello {
        Hello { min_version: 1, forms: vec!["exec_command"], host: None }
    }

    async fn exec_command(
        &self,
        args: ExecCommandArgs,
        approver: &impl Approver,
    ) -> Result<String, String> {
        self.manager.exec_command(args, approver).await.map_err(|e| e.to_string())
    }

    async fn write_stdin(&self, args: WriteStdinArgs) -> Result<String, String> {
        self.manager.write_stdin(args).await.map_err(|e| e.to_string())
    }

    async fn exec_resolved(&self, _exec: ResolvedExec) -> Result<ResolvedResult, String> {
        Err(RESOLVED_ONLY_REMOTE.to_owned())
    }

    async fn write_resolved(&self, _args: WriteStdinArgs) -> Result<ResolvedResult, String> {
        Err(RESOLVED_ONLY_REMOTE.to_owned())
    }

    async fn close_session(&self, _session_id: u32) -> Result<String, String> {
        Err(RESOLVED_ONLY_REMOTE.to_owned())
    }

    fn shutdown(&self) {
        self.manager.shutdown();
    }
}

/// `cordon executor --serve-remote`: the far end of an ssh link. It runs exactly what the
/// orchestrator resolved, under this machine's sandbox, and decides nothing else: there is no
/// approval policy here, so the high-level form (which would need one) is refused.
pub struct RemoteServer {
    pub manager: Rc<SessionManager>,
    pub facts: HostFacts,
}

impl Backend for RemoteServer {
    fn hello(&self) -> Hello {
        Hello {
            min_version: RESOLVED_FORM_VERSION,
            forms: vec!["exec_resolved"],
            host: Some(self.facts.clone()),
        }
    }

    async fn exec_command(
        &self,
        _args: ExecCommandArgs,
        _approver: &impl Approver,
    ) -> Result<String, String> {
        Err("this executor serves an orchestrator (--serve-remote): it takes exec_resolved, \
             never exec_command, because approvals are decided on the orchestrator's side"
            .to_owned())
    }

    async fn write_stdin(&self, args: WriteStdinArgs) -> Result<String, String> {
        self.manager.write_stdin(args).await.map_err(|e| e.to_string())
    }

    async fn exec_resolved(&self, exec: ResolvedExec) -> Result<ResolvedResult, String> {
        self.manager.exec_resolved(exec).await.map(Into::into).map_err(|e| e.to_string())
    }

    async fn write_resolved(&self, args: WriteStdinArgs) -> Result<ResolvedResult, String> {
        self.manager.write_resolved(args).await.map(Into::into).map_err(|e| e.to_string())
    }

    async fn close_session(&self, session_id: u32) -> Result<String, String> {
        match self.manager.close(session_id).await {
            Ok(()) => Ok(format!("Session {session_id} closed")),
            Err(error) => Err(error.to_string()),
        }
    }

    fn shutdown(&self) {
        self.manager.shutdown();
    }
}

//! `cordon executor --serve-remote`: the far end of an ssh link. It runs exactly what the
//! orchestrator at the other end resolved, under this machine's sandbox, and decides nothing
//! else: there is no approval policy here, so `exec_command` (which would need one) is
//! refused, while `write_stdin` types into a session as `write_resolved` does.

use std::rc::Rc;

use super::Hello;
use super::calls::{CallError, ToolCall};
use super::protocol::{Form, HostFacts, RESOLVED_FORM_VERSION, ResolvedExec, ResolvedResult};
use crate::session::{CallResult, Closed, SessionError, SessionManager, Sessions, WriteStdinArgs};

/// Serves the resolved form on this machine's sessions.
pub struct RemoteServer {
    manager: Rc<SessionManager>,
    facts: HostFacts,
}

impl RemoteServer {
    /// `facts` travel to the orchestrator in `hello_response`.
    pub fn new(manager: Rc<SessionManager>, facts: HostFacts) -> Self {
        RemoteServer { manager, facts }
    }

    pub(super) fn hello(&self) -> Hello {
        Hello {
            min_version: RESOLVED_FORM_VERSION,
            forms: vec![Form::ExecResolved],
            host: Some(self.facts.clone()),
        }
    }

    /// `exec_resolved`.
    pub(super) async fn exec(&self, exec: ResolvedExec) -> Result<ResolvedResult, SessionError> {
        self.manager.exec_resolved(exec).await.map(Into::into)
    }

    /// `write_resolved`.
    pub(super) async fn write(&self, args: WriteStdinArgs) -> Result<ResolvedResult, SessionError> {
        self.manager.write(args).await.map(Into::into)
    }

    /// `close_resolved`.
    pub(super) async fn close(&self, session_id: u32) -> Result<Closed, SessionError> {
        self.manager.close(session_id).await
    }

    /// `call_tool`: only `write_stdin`.
    pub(super) async fn call_tool(&self, call: ToolCall) -> Result<CallResult, CallError> {
        match call {
            ToolCall::Exec(_) => Err(CallError::HighLevelForm),
            ToolCall::Write(args) => Ok(self.manager.write(args).await?),
        }
    }

    pub(super) fn shutdown(&self) {
        self.manager.shutdown();
    }
}

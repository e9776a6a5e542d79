//! [`Sessions`]: one API over interactive sessions, wherever they run. The executor protocol
//! and the MCP server serve any implementation and render its typed results as text in one
//! place ([`CallResult`]'s `Display`); [`SessionManager`](super::SessionManager) runs them on
//! this machine, [`RemoteSessions`](crate::remote::RemoteSessions) on another one over ssh.
//!
//! The futures are not `Send`: sessions are driven from one thread (a current-thread runtime
//! and a `LocalSet`), since each session's parent-death signal is tied to the thread that
//! spawned it.

use std::future::Future;

use super::{
    CallResult, Closed, ExecCommandArgs, SessionDefaults, SessionError, SessionSummary,
    WriteStdinArgs,
};
use crate::orchestrator::Approver;

/// The sessions of one harness or MCP client.
pub trait Sessions {
    /// The workspace, policy, approval policy and environment every session starts with.
    fn defaults(&self) -> &SessionDefaults;

    /// `exec_command`: decides (asking `approver` when the policy says so), starts the
    /// command, and collects its first output.
    fn exec(
        &self,
        args: ExecCommandArgs,
        approver: &impl Approver,
    ) -> impl Future<Output = Result<CallResult, SessionError>>;

    /// `write_stdin`: types into a session (or just polls it) and collects what it printed
    /// since the last read.
    fn write(&self, args: WriteStdinArgs)
    -> impl Future<Output = Result<CallResult, SessionError>>;

    /// The open sessions, oldest first.
    fn list(&self) -> Vec<SessionSummary>;

    /// Ends one session: SIGHUP to its process group, then SIGKILL.
    fn close(&self, session_id: u32) -> impl Future<Output = Result<Closed, SessionError>>;

    /// Ends every session (EOF, `shutdown`, a signal).
    fn shutdown(&self);
}

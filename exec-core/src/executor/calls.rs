//! `call_tool`: which tool, with which arguments, and why a call or request is not served.

use serde_json::Value;

use crate::orchestrator::Approver;
use crate::session::{CallResult, ExecCommandArgs, SessionError, Sessions, WriteStdinArgs};

/// One `call_tool`, its arguments read.
#[derive(Debug)]
pub(super) enum ToolCall {
    Exec(ExecCommandArgs),
    Write(WriteStdinArgs),
}

/// Why a request got an error answer instead of a result.
#[derive(Debug, thiserror::Error)]
pub(super) enum CallError {
    #[error("unknown tool {0:?}: expected exec_command or write_stdin")]
    UnknownTool(String),
    #[error("invalid {tool} arguments: {source}")]
    InvalidArguments { tool: &'static str, source: serde_json::Error },
    /// `exec_command` sent to `--serve-remote`.
    #[error(
        "this executor serves an orchestrator (--serve-remote): it takes exec_resolved, never \
         exec_command, because approvals are decided on the orchestrator's side"
    )]
    HighLevelForm,
    /// The resolved form sent to an executor that serves a harness.
    #[error(
        "the resolved form (exec_resolved, write_resolved) is served only by `cordon executor \
         --serve-remote`, whose peer is an orchestrator that decided and approved the command; \
         a harness uses exec_command"
    )]
    ResolvedForm,
    #[error(transparent)]
    Session(#[from] SessionError),
}

impl ToolCall {
    pub fn parse(tool: &str, arguments: Value) -> Result<ToolCall, CallError> {
        let invalid = |tool| move |source| CallError::InvalidArguments { tool, source };
        match tool {
            "exec_command" => serde_json::from_value(arguments)
                .map(ToolCall::Exec)
                .map_err(invalid("exec_command")),
            "write_stdin" => serde_json::from_value(arguments)
                .map(ToolCall::Write)
                .map_err(invalid("write_stdin")),
            other => Err(CallError::UnknownTool(other.to_owned())),
        }
    }

    /// Runs the call on a harness's sessions.
    pub async fn run(
        self,
        sessions: &impl Sessions,
        approver: &impl Approver,
    ) -> Result<CallResult, CallError> {
        Ok(match self {
            ToolCall::Exec(args) => sessions.exec(args, approver).await?,
            ToolCall::Write(args) => sessions.write(args).await?,
        })
    }
}

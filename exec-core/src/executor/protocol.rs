//! The executor's JSON-lines messages (`docs/executor-protocol.md`): `type` in snake_case,
//! fields in camelCase. Every message reads and writes both ways, so the remote link speaks the
//! protocol with the same types the executor serves it with.
//!
//! Protocol 1 is the high-level form for harnesses (`list_tools`, `call_tool` with
//! `exec_command`/`write_stdin`, approvals over the wire). Protocol 2 adds `hello` (version
//! negotiation) and the *resolved* form an orchestrator sends to a remote executor
//! (`exec_resolved`, `write_resolved`): the final argv, cwd, environment and sandbox attempt,
//! decided and approved on the orchestrator's side ([`crate::remote`]).

use cordon_policies::SandboxMode;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::orchestrator::ApprovalStage;
use crate::session::{ExecCommandArgs, WriteStdinArgs, input_schema};

pub use crate::resolved::{HostFacts, ResolvedExec, ResolvedResult};

/// The newest executor protocol this build speaks.
pub const PROTOCOL_VERSION: u32 = 5;
/// The version of the resolved form this build speaks (with `hello` since 2; the sandbox as
/// one request object since 3; a typed exit, no result text, and lines within the protocol's
/// limit both ways since 4; a sandbox that may ask for a transaction of the helper's own since 5).
/// Both ends of a remote link must speak exactly this one.
pub const RESOLVED_FORM_VERSION: u32 = 5;
/// This build's version, as `hello` reports it.
pub const CORDON_VERSION: &str = env!("CARGO_PKG_VERSION");

/// A line from the harness (or from the orchestrator, to `--serve-remote`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum Incoming {
    ListTools {
        request_id: Value,
    },
    CallTool {
        request_id: Value,
        tool_name: String,
        #[serde(default)]
        arguments: Value,
    },
    Shutdown {
        request_id: Value,
    },
    ApprovalResponse {
        request_id: Value,
        decision: ApprovalDecision,
    },
    /// Version negotiation (protocol 2): the version the peer speaks and its cordon version.
    Hello {
        request_id: Value,
        protocol_version: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cordon_version: Option<String>,
    },
    /// The resolved form (protocol 2, `--serve-remote` only): run exactly this.
    ExecResolved {
        request_id: Value,
        exec: Box<ResolvedExec>,
    },
    /// The resolved form of `write_stdin` (protocol 2, `--serve-remote` only).
    WriteResolved {
        request_id: Value,
        session_id: u32,
        #[serde(default)]
        chars: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        yield_time_ms: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_output_tokens: Option<usize>,
    },
    /// Ends a session (protocol 2, `--serve-remote` only): `close_session` of the MCP server
    /// or a call the orchestrator's client abandoned.
    CloseResolved {
        request_id: Value,
        session_id: u32,
    },
    /// Drops a resolved call in flight (protocol 2): the orchestrator's caller went away. The
    /// session it started or waited on is killed, as a dropped call is locally. No answer.
    Cancel {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        request_id: Option<Value>,
        call_request_id: Value,
    },
}

impl Incoming {
    /// The message's `requestId`, for an error about it.
    pub fn request_id(&self) -> Option<&Value> {
        match self {
            Incoming::ListTools { request_id }
            | Incoming::CallTool { request_id, .. }
            | Incoming::Shutdown { request_id }
            | Incoming::ApprovalResponse { request_id, .. }
            | Incoming::Hello { request_id, .. }
            | Incoming::ExecResolved { request_id, .. }
            | Incoming::WriteResolved { request_id, .. }
            | Incoming::CloseResolved { request_id, .. } => Some(request_id),
            Incoming::Cancel { request_id, .. } => request_id.as_ref(),
        }
    }
}

/// The harness's answer to an `approval_request`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    Approved,
    ApprovedForSession,
    Denied,
}

/// A line to the harness (or to the orchestrator, from `--serve-remote`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum Outgoing {
    ListToolsResponse {
        request_id: Value,
        /// The newest protocol version this executor speaks (see `hello`).
        protocol_version: u32,
        tools: Vec<Tool>,
    },
    HelloResponse {
        request_id: Value,
        /// The version both sides now speak.
        protocol_version: u32,
        cordon_version: String,
        /// The request forms served.
        forms: Vec<Form>,
        #[serde(default, skip_serializing_if = "Option::is_none", flatten)]
        host: Option<HostFacts>,
    },
    ResolvedResponse {
        request_id: Value,
        outcome: ResolvedOutcome,
    },
    CloseResponse {
        request_id: Value,
        outcome: CallOutcome,
    },
    CallToolResponse {
        request_id: Value,
        tool_name: String,
        outcome: CallOutcome,
    },
    ShutdownResponse {
        request_id: Value,
    },
    Error {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        request_id: Option<Value>,
        message: String,
    },
    /// `command` is the raw argv (JSON strings are lossless); `display` is the same argv as
    /// a terminal prompt shows it (quoted, hidden characters escaped), with `hiddenCharacters`
    /// telling a harness to warn.
    ApprovalRequest {
        request_id: String,
        call_request_id: Value,
        command: Vec<String>,
        display: String,
        hidden_characters: bool,
        cwd: String,
        /// `true` when the command is a terminal session the harness can type into
        /// (`write_stdin`) for as long as it runs.
        interactive: bool,
        reason: String,
        stage: ApprovalStage,
        sandbox_mode: SandboxMode,
        evidence: Vec<String>,
        /// The machine the command runs on, for `--connect` (`[user@]host[:port]`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        host: Option<String>,
    },
}

impl Outgoing {
    /// The request this message answers, when it answers one.
    pub fn request_id(&self) -> Option<&Value> {
        match self {
            Outgoing::ListToolsResponse { request_id, .. }
            | Outgoing::HelloResponse { request_id, .. }
            | Outgoing::ResolvedResponse { request_id, .. }
            | Outgoing::CloseResponse { request_id, .. }
            | Outgoing::CallToolResponse { request_id, .. }
            | Outgoing::ShutdownResponse { request_id } => Some(request_id),
            Outgoing::Error { request_id, .. } => request_id.as_ref(),
            // An approval request starts an exchange; it answers nothing.
            Outgoing::ApprovalRequest { .. } => None,
        }
    }
}

/// A request form an executor serves (`hello_response`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Form {
    /// Protocol 1: `call_tool` with `exec_command`, decided by the executor.
    ExecCommand,
    /// Protocol 2: `exec_resolved`, decided by the orchestrator at the other end.
    ExecResolved,
}

/// One tool of `list_tools_response`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// The outcome of `exec_resolved` / `write_resolved`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ResolvedOutcome {
    Success { result: ResolvedResult },
    Error { message: String },
}

/// The outcome of `call_tool` and `close_resolved`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CallOutcome {
    Success { content: Vec<Content> },
    Error { message: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    InputText { text: String },
}

impl CallOutcome {
    /// A successful call's text.
    pub fn text(text: String) -> Self {
        CallOutcome::Success { content: vec![Content::InputText { text }] }
    }
}

/// The two tools with their JSON Schemas (derived from the argument structs).
pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "exec_command".to_owned(),
            description: "Runs a shell command in the sandbox (in a PTY when tty is true) and \
                          returns its output; a command still running after yield_time_ms \
                          keeps a session for write_stdin."
                .to_owned(),
            input_schema: Value::Object(input_schema::<ExecCommandArgs>()),
        },
        Tool {
            name: "write_stdin".to_owned(),
            description: "Writes characters to a running PTY session and returns the output \
                          produced since the last read; empty chars just polls."
                .to_owned(),
            input_schema: Value::Object(input_schema::<WriteStdinArgs>()),
        },
    ]
}

//! `cordon mcp-server`: the executor's sessions served over the Model Context Protocol on
//! stdio, with the official Rust SDK (`rmcp`).
//!
//! - Tools: `exec_command` and `write_stdin` call any [`Sessions`] (the same arguments,
//!   schemas, clamps, truncation, session rules and result text as `cordon executor`);
//!   `list_sessions` and `close_session` look after the sessions. Tool annotations follow the
//!   sandbox policy.
//! - Approvals: when the policy asks, the client's user is asked through elicitation
//!   ([`approver`]); a client without that capability gets a refusal that says why.
//! - Cancellation (`notifications/cancelled`) drops the call, and a dropped call kills the
//!   session's process group. A `progressToken` gets a progress notification every second
//!   while the call waits.
//! - Transport: newline-delimited JSON-RPC on stdin/stdout; every malformed line is answered
//!   with an error ([`transport`]). Nothing else is ever written to stdout.
//! - Protocol versions: those with the `initialize` handshake (up to 2025-11-25), where the
//!   server may send `elicitation/create`; 2026-07-28's stateless requests are not offered.
//!
//! Threading: like the executor, run it on a current-thread runtime, inside a `LocalSet`
//! (rmcp's `local` feature: no future needs to be `Send`): the parent-death signal of every
//! session is tied to the thread that spawned it.

mod approver;
mod tools;
mod transport;

use std::borrow::Cow;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, ProgressNotificationParam, ProtocolVersion,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use tokio::sync::Notify;

use crate::executor::{ServeEnd, Signals};
use crate::session::{
    CallResult, CloseSessionArgs, ExecCommandArgs, NoArgs, SessionError, Sessions, WriteStdinArgs,
};

use approver::ElicitationApprover;

/// How often a call with a progress token reports that it is still waiting.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("the MCP service failed: {0}")]
    Join(#[from] tokio::task::JoinError),
}

/// The MCP server: the sessions and the tool table.
pub struct CordonMcp<S: Sessions + 'static> {
    sessions: Rc<S>,
    tool_router: ToolRouter<CordonMcp<S>>,
}

#[tool_router]
impl<S: Sessions + 'static> CordonMcp<S> {
    pub fn new(sessions: Rc<S>) -> Self {
        let mut tool_router = Self::tool_router();
        // Descriptions and annotations are values of this server's policy, not constants.
        for definition in tools::definitions(&sessions.defaults().sandbox.policy) {
            if let Some(route) = tool_router.map.get_mut(definition.name.as_ref()) {
                route.attr = definition;
            }
        }
        CordonMcp { sessions, tool_router }
    }

    #[tool(name = "exec_command", input_schema = tools::schema::<ExecCommandArgs>())]
    async fn exec_command(
        &self,
        Parameters(args): Parameters<ExecCommandArgs>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let approver = ElicitationApprover::new(context.peer.clone());
        let call = self.sessions.exec(args, &approver);
        let result = supervise(call, &context).await;
        tool_result(result, approver.notes())
    }

    #[tool(name = "write_stdin", input_schema = tools::schema::<WriteStdinArgs>())]
    async fn write_stdin(
        &self,
        Parameters(args): Parameters<WriteStdinArgs>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let result = supervise(self.sessions.write(args), &context).await;
        tool_result(result, Vec::new())
    }

    #[tool(name = "list_sessions", input_schema = tools::schema::<NoArgs>())]
    async fn list_sessions(&self, Parameters(_): Parameters<NoArgs>) -> CallToolResult {
        let listed = serde_json::to_string_pretty(&self.sessions.list());
        CallToolResult::success(vec![ContentBlock::text(listed.unwrap_or_else(|e| e.to_string()))])
    }

    #[tool(name = "close_session", input_schema = tools::schema::<CloseSessionArgs>())]
    async fn close_session(
        &self,
        Parameters(args): Parameters<CloseSessionArgs>,
    ) -> CallToolResult {
        match self.sessions.close(args.session_id).await {
            Ok(closed) => CallToolResult::success(vec![ContentBlock::text(closed.to_string())]),
            Err(error) => CallToolResult::error(vec![ContentBlock::text(error.to_string())]),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl<S: Sessions + 'static> ServerHandler for CordonMcp<S> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("cordon", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Runs shell commands inside cordon's OS sandbox. exec_command starts one \
                 (a still-running command keeps a session for write_stdin); commands that need \
                 more than the sandbox allows can ask with sandbox_permissions: \
                 \"require_escalated\" and a justification, which the user approves or not.",
            )
    }

    /// Only the handshake versions: approvals are `elicitation/create` requests, which the
    /// stateless 2026-07-28 protocol does not allow.
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
    }
}

/// Runs a tool call until it returns or the client cancels it (then the call is dropped, which
/// kills its session), sending progress while it waits when the client asked for progress.
async fn supervise<T>(
    call: impl Future<Output = T>,
    context: &RequestContext<RoleServer>,
) -> Option<T> {
    let token = context.meta.get_progress_token();
    let started = Instant::now();
    let mut tick =
        tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
    let mut call = std::pin::pin!(call);
    loop {
        tokio::select! {
            result = &mut call => return Some(result),
            () = context.ct.cancelled() => return None,
            _ = tick.tick(), if token.is_some() => {
                let Some(token) = token.clone() else { continue };
                let waited = started.elapsed().as_secs_f64().floor();
                let mut progress = ProgressNotificationParam::new(token, waited);
                progress.message = Some(format!("still running after {waited:.0} s"));
                let _ = context.peer.notify_progress(progress).await;
            }
        }
    }
}

/// The tool result: the session text, or the error, after what the approver had to say.
fn tool_result(
    result: Option<Result<CallResult, SessionError>>,
    notes: Vec<String>,
) -> CallToolResult {
    let mut lines = notes;
    let failed = match result {
        Some(Ok(result)) => {
            lines.push(result.to_string());
            false
        }
        Some(Err(error)) => {
            lines.push(error.to_string());
            true
        }
        None => {
            lines.push("cancelled: the command's process group was killed".to_owned());
            true
        }
    };
    let content = vec![ContentBlock::text(lines.join("\n"))];
    if failed { CallToolResult::error(content) } else { CallToolResult::success(content) }
}

/// Serves MCP on stdin/stdout until the client goes away (EOF) or a terminating signal; then
/// every session is closed. Call on a current-thread runtime, inside a `LocalSet`.
pub async fn serve_stdio<S: Sessions + 'static>(sessions: Rc<S>) -> Result<ServeEnd, McpError> {
    // Not rmcp's `stdio_pipes` (tokio's stdin and stdout, on blocking threads): without a
    // thread of its own the server stays single-threaded, and its pipe sessions start the
    // helper in the forked child (see `crate::stdio`).
    let (stdin, stdout) = (crate::stdio::stdin(), crate::stdio::stdout());
    let eof = Arc::new(Notify::new());
    let transport =
        transport::GuardedLines::new(tokio::io::BufReader::new(stdin), stdout, Arc::clone(&eof));
    let mut signals = Signals::new();
    let server = CordonMcp::new(Rc::clone(&sessions));
    let running = tokio::select! {
        running = server.serve(transport) => running,
        signal = signals.recv() => {
            sessions.shutdown();
            return Ok(ServeEnd::Signal(signal));
        }
    };
    // The client left (or broke the handshake) before it was done.
    let Ok(running) = running else {
        sessions.shutdown();
        return Ok(ServeEnd::Eof);
    };
    let mut waiting = std::pin::pin!(running.waiting());
    let (end, finished) = tokio::select! {
        quit = &mut waiting => {
            quit?;
            (ServeEnd::Eof, true)
        }
        // rmcp would give calls in flight five seconds to finish for a client that can no
        // longer read their results: their commands are killed now instead.
        () = eof.notified() => (ServeEnd::Eof, false),
        signal = signals.recv() => (ServeEnd::Signal(signal), false),
    };
    sessions.shutdown();
    if !finished {
        // Calls whose sessions just died return at once; anything else is abandoned.
        let _ = tokio::time::timeout(FINAL_DRAIN, &mut waiting).await;
    }
    Ok(end)
}

/// How long, after the sessions are closed, the service may take to wind down.
const FINAL_DRAIN: Duration = Duration::from_millis(300);

//! `cordon executor`: the JSON-lines protocol of DESIGN §10 over any reader/writer.
//!
//! Every line is handled as it arrives; tool calls run concurrently as local tasks (responses
//! may come out of order). A call that needs approval sends an `approval_request` and waits for
//! the matching `approval_response`. A line that does not parse gets an `error` and the loop
//! goes on. EOF or `shutdown` terminates every session and returns.

mod protocol;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use crate::orchestrator::{ApprovalAnswer, ApprovalRequest, Approver};
use crate::session::{ExecCommandArgs, SessionManager, WriteStdinArgs};

pub use protocol::{ApprovalDecision, CallOutcome, Content, Incoming, Outgoing, Tool, tools};

type Pending = Rc<RefCell<HashMap<String, oneshot::Sender<ApprovalDecision>>>>;

/// Asks the harness over the protocol.
struct ProtocolApprover {
    call_request_id: Value,
    out: mpsc::UnboundedSender<Outgoing>,
    pending: Pending,
    next: Rc<RefCell<u64>>,
}

impl Approver for ProtocolApprover {
    fn ask(&self, request: &ApprovalRequest) -> impl std::future::Future<Output = ApprovalAnswer> {
        let id = {
            let mut next = self.next.borrow_mut();
            *next += 1;
            format!("a{next}")
        };
        let (tx, rx) = oneshot::channel();
        self.pending.borrow_mut().insert(id.clone(), tx);
        let sent = self.out.send(Outgoing::ApprovalRequest {
            request_id: id,
            call_request_id: self.call_request_id.clone(),
            command: request.command.clone(),
            cwd: request.cwd.display().to_string(),
            reason: request.reason.clone(),
        });
        async move {
            if sent.is_err() {
                return ApprovalAnswer::Denied;
            }
            match rx.await {
                Ok(ApprovalDecision::Approved) => ApprovalAnswer::Approved,
                Ok(ApprovalDecision::ApprovedForSession) => ApprovalAnswer::ApprovedForSession,
                // A harness that went away answered no.
                Ok(ApprovalDecision::Denied) | Err(_) => ApprovalAnswer::Denied,
            }
        }
    }
}

/// Serves the protocol until EOF or `shutdown`. Must run inside a `LocalSet`.
pub async fn serve(
    input: impl AsyncBufRead + Unpin,
    mut output: impl AsyncWrite + Unpin + 'static,
    manager: Rc<SessionManager>,
) -> std::io::Result<()> {
    let (out, mut outbox) = mpsc::unbounded_channel::<Outgoing>();
    let writer = tokio::task::spawn_local(async move {
        while let Some(message) = outbox.recv().await {
            let mut line = serde_json::to_string(&message).unwrap_or_else(|e| {
                format!(r#"{{"type":"error","message":"cannot encode a response: {e}"}}"#)
            });
            line.push('\n');
            if output.write_all(line.as_bytes()).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });
    let pending: Pending = Rc::new(RefCell::new(HashMap::new()));
    let next = Rc::new(RefCell::new(0u64));
    let mut lines = input.lines();
    while let Some(line) = lines.next_line().await? {
        if line.trim().is_empty() {
            continue;
        }
        let message = match serde_json::from_str::<Incoming>(&line) {
            Ok(message) => message,
            Err(e) => {
                let request_id = serde_json::from_str::<Value>(&line)
                    .ok()
                    .and_then(|v| v.get("requestId").cloned());
                let _ = out.send(Outgoing::Error {
                    request_id,
                    message: format!("cannot read this line: {e}"),
                });
                continue;
            }
        };
        match message {
            Incoming::ListTools { request_id } => {
                let _ = out.send(Outgoing::ListToolsResponse { request_id, tools: tools() });
            }
            Incoming::Shutdown { request_id } => {
                manager.shutdown();
                let _ = out.send(Outgoing::ShutdownResponse { request_id });
                break;
            }
            Incoming::ApprovalResponse { request_id, decision } => {
                let key = match &request_id {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                match pending.borrow_mut().remove(&key) {
                    Some(waiter) => {
                        let _ = waiter.send(decision);
                    }
                    None => {
                        let _ = out.send(Outgoing::Error {
                            request_id: Some(request_id),
                            message: "no approval request with this id is waiting".into(),
                        });
                    }
                }
            }
            Incoming::CallTool { request_id, tool_name, arguments } => {
                let approver = ProtocolApprover {
                    call_request_id: request_id.clone(),
                    out: out.clone(),
                    pending: Rc::clone(&pending),
                    next: Rc::clone(&next),
                };
                let manager = Rc::clone(&manager);
                let out = out.clone();
                tokio::task::spawn_local(async move {
                    let outcome = call_tool(&manager, &tool_name, arguments, &approver).await;
                    let _ = out.send(Outgoing::CallToolResponse { request_id, tool_name, outcome });
                });
            }
        }
    }
    // EOF or shutdown: nothing the executor started may outlive it.
    manager.shutdown();
    drop(out);
    let _ = writer.await;
    Ok(())
}

async fn call_tool(
    manager: &SessionManager,
    tool: &str,
    arguments: Value,
    approver: &ProtocolApprover,
) -> CallOutcome {
    let result = match tool {
        "exec_command" => match serde_json::from_value::<ExecCommandArgs>(arguments) {
            Ok(args) => manager.exec_command(args, approver).await.map_err(|e| e.to_string()),
            Err(e) => Err(format!("invalid exec_command arguments: {e}")),
        },
        "write_stdin" => match serde_json::from_value::<WriteStdinArgs>(arguments) {
            Ok(args) => manager.write_stdin(args).await.map_err(|e| e.to_string()),
            Err(e) => Err(format!("invalid write_stdin arguments: {e}")),
        },
        other => Err(format!("unknown tool {other:?}: expected exec_command or write_stdin")),
    };
    match result {
        Ok(text) => CallOutcome::Success { content: vec![Content::InputText { text }] },
        Err(message) => CallOutcome::Error { message },
    }
}

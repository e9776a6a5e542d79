//! `cordon executor`: the JSON-lines protocol (`docs/executor-protocol.md`) over any
//! reader/writer.
//!
//! Every line is handled as it arrives; tool calls run concurrently as local tasks (responses
//! may come out of order). A call that needs approval sends an `approval_request` and waits for
//! the matching `approval_response`. A line that does not parse gets an `error` and the loop
//! goes on. EOF or `shutdown` terminates every session and returns.

mod backends;
mod protocol;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

use tokio::sync::{mpsc, oneshot};

use crate::orchestrator::{ApprovalAnswer, ApprovalRequest, Approver};
use crate::session::{ExecCommandArgs, WriteStdinArgs};

pub use backends::{Backend, Hello, LocalExecutor, RemoteServer};
pub use protocol::{
    ApprovalDecision, ApprovalState, CORDON_VERSION, CallOutcome, Content, HostFacts, Incoming,
    Outgoing, PROTOCOL_VERSION, RESOLVED_FORM_VERSION, ResolvedExec, ResolvedOutcome,
    ResolvedResult, SandboxAttempt, Tool, tools,
};

type Pending = Rc<RefCell<HashMap<String, oneshot::Sender<ApprovalDecision>>>>;

/// Asks the harness over the protocol.
pub struct ProtocolApprover {
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
        let display = cordon_policies::render_argv(&request.command);
        let sent = self.out.send(Outgoing::ApprovalRequest {
            request_id: id,
            call_request_id: self.call_request_id.clone(),
            // Protocol 1 is UTF-8: a byte that is not becomes U+FFFD here, and `display`
            // shows the exact bytes (`$'\xHH'`) with `hiddenCharacters` set.
            command: request.command.iter().map(|w| w.to_string_lossy().into_owned()).collect(),
            display: display.text,
            hidden_characters: display.hidden_characters,
            cwd: request.cwd.display().to_string(),
            reason: request.reason.clone(),
            stage: request.stage,
            sandbox_mode: request.sandbox_mode,
            evidence: request.evidence.clone(),
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

/// The longest input line served; a longer one is answered with an error and skipped.
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;
/// At most this much of a bad line (or of a parser message about it) is ever echoed back.
pub(crate) const EXCERPT_BYTES: usize = 200;

/// Why [`serve`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServeEnd {
    /// EOF on the input.
    Eof,
    /// A `shutdown` request.
    Shutdown,
    /// SIGTERM, SIGINT or SIGHUP (the number): the caller exits 128+N after cleaning up.
    Signal(i32),
}

/// Serves the protocol until EOF, `shutdown` or a terminating signal. Must run inside a
/// `LocalSet`. Every line is bytes: invalid UTF-8, invalid JSON, unknown tools and oversized
/// lines each get one `error` (with the requestId when it can be read) and serving goes on.
/// On the way out, pending approvals are denied and every session is terminated.
pub async fn serve<B: Backend + 'static>(
    mut input: impl AsyncBufRead + Unpin,
    mut output: impl AsyncWrite + Unpin + 'static,
    backend: Rc<B>,
) -> std::io::Result<ServeEnd> {
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
    let in_flight: InFlight = Rc::new(RefCell::new(HashMap::new()));
    let next = Rc::new(RefCell::new(0u64));
    let mut signals = Signals::new();
    let mut line = Vec::new();
    let end = loop {
        let read = tokio::select! {
            read = read_line(&mut input, &mut line) => read?,
            signal = signals.recv() => break ServeEnd::Signal(signal),
        };
        let message = match read {
            Line::Eof => break ServeEnd::Eof,
            Line::TooLong => {
                let _ = out.send(Outgoing::Error {
                    request_id: None,
                    message: format!(
                        "line longer than {MAX_LINE_BYTES} bytes; ignored (it began {})",
                        excerpt(&String::from_utf8_lossy(&line))
                    ),
                });
                continue;
            }
            Line::Complete if line.iter().all(u8::is_ascii_whitespace) => continue,
            Line::Complete => match parse_line(&line) {
                Ok(message) => message,
                Err((request_id, message)) => {
                    let _ = out.send(Outgoing::Error { request_id, message });
                    continue;
                }
            },
        };
        match message {
            Incoming::ListTools { request_id } => {
                let _ = out.send(Outgoing::ListToolsResponse {
                    request_id,
                    protocol_version: PROTOCOL_VERSION,
                    tools: tools(),
                });
            }
            Incoming::Hello { request_id, protocol_version, cordon_version } => {
                let _ = out.send(hello_response(
                    backend.hello(),
                    request_id,
                    protocol_version,
                    cordon_version.as_deref(),
                ));
            }
            Incoming::ExecResolved { request_id, exec } => {
                let backend = Rc::clone(&backend);
                let call = async move { backend.exec_resolved(*exec).await };
                spawn_resolved(&in_flight, request_id, &out, call);
            }
            Incoming::WriteResolved {
                request_id,
                session_id,
                chars,
                yield_time_ms,
                max_output_tokens,
            } => {
                let backend = Rc::clone(&backend);
                let args = WriteStdinArgs {
                    session_id,
                    chars: Some(chars),
                    yield_time_ms,
                    max_output_tokens,
                };
                let call = async move { backend.write_resolved(args).await };
                spawn_resolved(&in_flight, request_id, &out, call);
            }
            Incoming::Cancel { call_request_id, .. } => {
                // Dropping the call kills the session it started or was waiting on (as an
                // MCP cancellation does locally); a call already answered is not found.
                if let Some(call) = in_flight.borrow_mut().remove(&id_key(&call_request_id)) {
                    call.abort();
                }
            }
            Incoming::Shutdown { request_id } => {
                let _ = out.send(Outgoing::ShutdownResponse { request_id });
                break ServeEnd::Shutdown;
            }
            Incoming::ApprovalResponse { request_id, decision } => {
                let waiter = pending.borrow_mut().remove(&id_key(&request_id));
                match waiter {
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
            Incoming::CloseResolved { request_id, session_id } => {
                let backend = Rc::clone(&backend);
                let out = out.clone();
                tokio::task::spawn_local(async move {
                    let outcome = match backend.close_session(session_id).await {
                        Ok(text) => {
                            CallOutcome::Success { content: vec![Content::InputText { text }] }
                        }
                        Err(message) => CallOutcome::Error { message },
                    };
                    let _ = out.send(Outgoing::CloseResponse { request_id, outcome });
                });
            }
            Incoming::CallTool { request_id, tool_name, arguments } => {
                let approver = ProtocolApprover {
                    call_request_id: request_id.clone(),
                    out: out.clone(),
                    pending: Rc::clone(&pending),
                    next: Rc::clone(&next),
                };
                let backend = Rc::clone(&backend);
                let out = out.clone();
                tokio::task::spawn_local(async move {
                    let outcome = call_tool(&*backend, &tool_name, arguments, &approver).await;
                    let _ = out.send(Outgoing::CallToolResponse { request_id, tool_name, outcome });
                });
            }
        }
    };
    // Nothing the executor started may outlive it: questions still open are answered no (their
    // calls then refuse), and every session is closed.
    pending.borrow_mut().clear();
    backend.shutdown();
    drop(out);
    // Calls still finishing hold the outbox open; their last words are not worth a hang.
    let _ = tokio::time::timeout(std::time::Duration::from_millis(500), writer).await;
    Ok(end)
}

/// Calls of the resolved form in flight, by request id, so that `cancel` can drop one.
type InFlight = Rc<RefCell<HashMap<String, tokio::task::AbortHandle>>>;

/// A request id as a map key.
fn id_key(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Runs one resolved call as a task that `cancel` can abort, and answers it.
fn spawn_resolved(
    in_flight: &InFlight,
    request_id: Value,
    out: &mpsc::UnboundedSender<Outgoing>,
    call: impl std::future::Future<Output = Result<ResolvedResult, String>> + 'static,
) {
    let key = id_key(&request_id);
    let registry = Rc::clone(in_flight);
    let out = out.clone();
    let done = key.clone();
    // Registered before the task first runs: a local task only starts when this one yields.
    let task = tokio::task::spawn_local(async move {
        let outcome = match call.await {
            Ok(result) => ResolvedOutcome::Success { result },
            Err(message) => ResolvedOutcome::Error { message },
        };
        registry.borrow_mut().remove(&done);
        let _ = out.send(Outgoing::ResolvedResponse { request_id, outcome });
    });
    in_flight.borrow_mut().insert(key, task.abort_handle());
}

/// How reading one line ended.
enum Line {
    Complete,
    /// Longer than [`MAX_LINE_BYTES`]: the rest up to the newline was discarded; `line` holds
    /// the beginning.
    TooLong,
    Eof,
}

/// Reads one `\n`-terminated line of bytes into `line` (without the newline), never holding
/// more than [`MAX_LINE_BYTES`] of it.
async fn read_line(
    input: &mut (impl AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
) -> std::io::Result<Line> {
    line.clear();
    let mut too_long = false;
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (line.is_empty() && !too_long, too_long) {
                (true, _) => Line::Eof,
                (false, true) => Line::TooLong,
                (false, false) => Line::Complete,
            });
        }
        let (chunk, found) = match available.iter().position(|b| *b == b'\n') {
            Some(end) => (&available[..end], Some(end + 1)),
            None => (available, None),
        };
        let room = MAX_LINE_BYTES.saturating_sub(line.len());
        if chunk.len() > room {
            too_long = true;
        }
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = found.unwrap_or(available.len());
        input.consume(used);
        if found.is_some() {
            return Ok(if too_long { Line::TooLong } else { Line::Complete });
        }
    }
}

/// Parses one line; on failure, the requestId if it can be read and a short message.
fn parse_line(line: &[u8]) -> Result<Incoming, (Option<Value>, String)> {
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(error) => {
            // The id may still be readable around the bad bytes.
            let request_id = find_request_id(&String::from_utf8_lossy(line));
            return Err((
                request_id,
                format!("line is not valid UTF-8 (byte {}); ignored", error.valid_up_to()),
            ));
        }
    };
    serde_json::from_str::<Incoming>(text).map_err(|error| {
        let request_id = find_request_id(text);
        (request_id, format!("cannot read this line: {}", excerpt(&error.to_string())))
    })
}

/// The `requestId` of a line that is not a valid request: from the parsed object when it is
/// JSON, else the value after the first `"requestId":` that parses on its own.
fn find_request_id(text: &str) -> Option<Value> {
    let value = match serde_json::from_str::<Value>(text) {
        Ok(whole) => whole.get("requestId")?.clone(),
        Err(_) => {
            let after_key = text.split_once("\"requestId\"")?.1.trim_start().strip_prefix(':')?;
            serde_json::Deserializer::from_str(after_key).into_iter::<Value>().next()?.ok()?
        }
    };
    // An id with a replacement character is not the one the harness sent.
    let usable = match &value {
        Value::String(id) => !id.contains('\u{FFFD}'),
        Value::Number(_) => true,
        _ => false,
    };
    usable.then_some(value)
}

/// At most [`EXCERPT_BYTES`] of `text` (on a character boundary), marked when cut.
pub(crate) fn excerpt(text: &str) -> String {
    if text.len() <= EXCERPT_BYTES {
        return text.to_owned();
    }
    let mut end = EXCERPT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// SIGTERM, SIGINT and SIGHUP, as a stream (less those inherited as ignored).
pub(crate) use crate::interrupts::Interrupts as Signals;

/// The `hello_response` (or the error) for a peer speaking `requested`.
fn hello_response(
    hello: Hello,
    request_id: Value,
    requested: u32,
    peer_version: Option<&str>,
) -> Outgoing {
    if !(1..=PROTOCOL_VERSION).contains(&requested) || requested < hello.min_version {
        let peer = peer_version.map(|v| format!("cordon {} ", excerpt(v))).unwrap_or_default();
        return Outgoing::Error {
            request_id: Some(request_id),
            message: format!(
                "version mismatch: the peer ({peer}protocol {requested}) and this executor \
                 (cordon {CORDON_VERSION}, protocol {}..={PROTOCOL_VERSION}) share no protocol \
                 version",
                hello.min_version
            ),
        };
    }
    Outgoing::HelloResponse {
        request_id,
        protocol_version: requested,
        cordon_version: CORDON_VERSION,
        forms: hello.forms,
        host: hello.host,
    }
}

async fn call_tool<B: Backend>(
    backend: &B,
    tool: &str,
    arguments: Value,
    approver: &ProtocolApprover,
) -> CallOutcome {
    let result = match tool {
        "exec_command" => match serde_json::from_value::<ExecCommandArgs>(arguments) {
            Ok(args) => backend.exec_command(args, approver).await,
            Err(e) => Err(format!("invalid exec_command arguments: {e}")),
        },
        "write_stdin" => match serde_json::from_value::<WriteStdinArgs>(arguments) {
            Ok(args) => backend.write_stdin(args).await,
            Err(e) => Err(format!("invalid write_stdin arguments: {e}")),
        },
        other => Err(format!("unknown tool {other:?}: expected exec_command or write_stdin")),
    };
    match result {
        Ok(text) => CallOutcome::Success { content: vec![Content::InputText { text }] },
        Err(message) => CallOutcome::Error { message },
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;

//! `cordon executor`: the JSON-lines protocol (`docs/executor-protocol.md`) over any
//! reader/writer.
//!
//! - A harness ([`serve`]): protocol 1's `list_tools` and `call_tool` (`exec_command`,
//!   `write_stdin`) on any [`Sessions`], this machine's or another one's, with approvals asked
//!   over the wire.
//! - An orchestrator on another machine ([`serve_remote`], `--serve-remote`): protocol 2's
//!   resolved form on a [`RemoteServer`].
//!
//! Either answers the other's requests with an error saying who serves them. Every line is
//! handled as it arrives; calls run concurrently as local tasks (responses may come out of
//! order). A call that needs approval sends an `approval_request` and waits for the matching
//! `approval_response`. A line that does not parse gets an `error` and the loop goes on. EOF
//! or `shutdown` terminates every session and returns.

mod approver;
mod calls;
mod far_end;
mod lines;
mod protocol;

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::rc::Rc;

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::session::{SessionError, Sessions, WriteStdinArgs};

use approver::{Pending, ProtocolApprover};
use calls::{CallError, ToolCall};
use lines::{Line, parse_line, read_line};

pub use far_end::RemoteServer;
#[cfg(test)]
pub(crate) use lines::EXCERPT_BYTES;
pub use lines::MAX_LINE_BYTES;
pub(crate) use lines::excerpt;
pub use protocol::{
    CORDON_VERSION, CallOutcome, Form, HostFacts, Incoming, Outgoing, PROTOCOL_VERSION,
    RESOLVED_FORM_VERSION, ResolvedExec, ResolvedOutcome, ResolvedResult, tools,
};

/// What an executor says about itself in `hello_response`.
#[derive(Debug, Clone)]
pub(crate) struct Hello {
    /// The oldest protocol version it serves.
    pub min_version: u32,
    /// The request forms it serves.
    pub forms: Vec<Form>,
    /// Facts about this machine, for an orchestrator elsewhere.
    pub host: Option<HostFacts>,
}

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

/// Serves a harness (`cordon executor`, `--connect`) on `sessions` until EOF, `shutdown` or a
/// terminating signal. Must run inside a `LocalSet`. Every line is bytes: invalid UTF-8,
/// invalid JSON, unknown tools and oversized lines each get one `error` (with the requestId
/// when it can be read) and serving goes on. On the way out, pending approvals are denied
/// and every session is terminated.
pub async fn serve<S: Sessions + 'static>(
    input: impl AsyncBufRead + Unpin,
    output: impl AsyncWrite + Unpin + 'static,
    sessions: Rc<S>,
) -> std::io::Result<ServeEnd> {
    serve_peer(input, output, Peer::Harness(sessions)).await
}

/// Serves an orchestrator on another machine (`--serve-remote`), as [`serve`] does a harness.
pub async fn serve_remote(
    input: impl AsyncBufRead + Unpin,
    output: impl AsyncWrite + Unpin + 'static,
    server: Rc<RemoteServer>,
) -> std::io::Result<ServeEnd> {
    serve_peer::<crate::session::SessionManager>(input, output, Peer::Orchestrator(server)).await
}

/// Who is at the other end, and what serves it.
enum Peer<S> {
    Harness(Rc<S>),
    Orchestrator(Rc<RemoteServer>),
}

impl<S> Clone for Peer<S> {
    fn clone(&self) -> Self {
        match self {
            Peer::Harness(sessions) => Peer::Harness(Rc::clone(sessions)),
            Peer::Orchestrator(server) => Peer::Orchestrator(Rc::clone(server)),
        }
    }
}

/// A request of the resolved form.
enum ResolvedRequest {
    Exec(Box<ResolvedExec>),
    Write(WriteStdinArgs),
    Close(u32),
}

impl<S: Sessions> Peer<S> {
    fn hello(&self) -> Hello {
        match self {
            Peer::Harness(_) => {
                Hello { min_version: 1, forms: vec![Form::ExecCommand], host: None }
            }
            Peer::Orchestrator(server) => server.hello(),
        }
    }

    fn shutdown(&self) {
        match self {
            Peer::Harness(sessions) => sessions.shutdown(),
            Peer::Orchestrator(server) => server.shutdown(),
        }
    }
}

async fn serve_peer<S: Sessions + 'static>(
    mut input: impl AsyncBufRead + Unpin,
    mut output: impl AsyncWrite + Unpin + 'static,
    peer: Peer<S>,
) -> std::io::Result<ServeEnd> {
    let (out, mut outbox) = mpsc::unbounded_channel::<Outgoing>();
    let writer = tokio::task::spawn_local(async move {
        while let Some(message) = outbox.recv().await {
            let line = encode_line(&message);
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
    // The orchestrator's peer is strict: nothing but hello until a hello agreed on a version,
    // and no field a message type does not have (a newer peer's setting is refused, never
    // dropped).
    let strict = matches!(peer, Peer::Orchestrator(_));
    let mut greeted = !strict;
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
        if strict {
            let refusal = match (&message, greeted) {
                (Incoming::Hello { .. }, _) => unknown_fields(&line, &message),
                (_, false) => Some(
                    "say hello first: this executor serves the resolved form only after a \
                     hello that agreed on a protocol version"
                        .to_owned(),
                ),
                (_, true) => unknown_fields(&line, &message),
            };
            if let Some(message_text) = refusal {
                let request_id = message.request_id().cloned();
                let _ = out.send(Outgoing::Error { request_id, message: message_text });
                continue;
            }
        }
        match message {
            Incoming::ListTools { request_id } => {
                let _ = out.send(Outgoing::ListToolsResponse {
                    request_id,
                    protocol_version: PROTOCOL_VERSION,
                    tools: tools(),
                });
            }
            Incoming::Hello { request_id, protocol_version, cordon_version } => {
                let response = hello_response(
                    peer.hello(),
                    request_id,
                    protocol_version,
                    cordon_version.as_deref(),
                );
                greeted |= matches!(response, Outgoing::HelloResponse { .. });
                let _ = out.send(response);
            }
            Incoming::CallTool { request_id, tool_name, arguments } => {
                let call = ToolCall::parse(&tool_name, arguments);
                let approver = ProtocolApprover {
                    call_request_id: request_id.clone(),
                    out: out.clone(),
                    pending: Rc::clone(&pending),
                    next: Rc::clone(&next),
                };
                let peer = peer.clone();
                let out = out.clone();
                tokio::task::spawn_local(async move {
                    let result = match (call, &peer) {
                        (Err(error), _) => Err(error),
                        (Ok(call), Peer::Harness(sessions)) => {
                            call.run(&**sessions, &approver).await
                        }
                        (Ok(call), Peer::Orchestrator(server)) => server.call_tool(call).await,
                    };
                    let outcome = match result {
                        Ok(result) => CallOutcome::text(result.to_string()),
                        Err(error) => CallOutcome::Error { message: error.to_string() },
                    };
                    let _ = out.send(Outgoing::CallToolResponse { request_id, tool_name, outcome });
                });
            }
            Incoming::ExecResolved { request_id, exec } => {
                let request = ResolvedRequest::Exec(exec);
                serve_resolved(&peer, (request_id, request), &in_flight, &out);
            }
            Incoming::WriteResolved {
                request_id,
                session_id,
                chars,
                yield_time_ms,
                max_output_tokens,
            } => {
                let args = WriteStdinArgs {
                    session_id,
                    chars: Some(chars),
                    yield_time_ms,
                    max_output_tokens,
                };
                serve_resolved(&peer, (request_id, ResolvedRequest::Write(args)), &in_flight, &out);
            }
            Incoming::CloseResolved { request_id, session_id } => {
                let request = ResolvedRequest::Close(session_id);
                serve_resolved(&peer, (request_id, request), &in_flight, &out);
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
        }
    };
    // Nothing the executor started may outlive it: questions still open are answered no (their
    // calls then refuse), and every session is closed.
    pending.borrow_mut().clear();
    peer.shutdown();
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

/// Serves one request of the resolved form, or refuses it when the peer is a harness (the
/// resolved form claims decisions and approvals only an orchestrator makes).
fn serve_resolved<S>(
    peer: &Peer<S>,
    (request_id, request): (Value, ResolvedRequest),
    in_flight: &InFlight,
    out: &mpsc::UnboundedSender<Outgoing>,
) {
    let refusal = || CallError::ResolvedForm.to_string();
    match (peer, request) {
        (Peer::Harness(_), ResolvedRequest::Exec(_) | ResolvedRequest::Write(_)) => {
            let outcome = ResolvedOutcome::Error { message: refusal() };
            let _ = out.send(Outgoing::ResolvedResponse { request_id, outcome });
        }
        (Peer::Harness(_), ResolvedRequest::Close(_)) => {
            let outcome = CallOutcome::Error { message: refusal() };
            let _ = out.send(Outgoing::CloseResponse { request_id, outcome });
        }
        (Peer::Orchestrator(server), ResolvedRequest::Exec(exec)) => {
            let server = Rc::clone(server);
            spawn_resolved(in_flight, request_id, out, async move { server.exec(*exec).await });
        }
        (Peer::Orchestrator(server), ResolvedRequest::Write(args)) => {
            let server = Rc::clone(server);
            spawn_resolved(in_flight, request_id, out, async move { server.write(args).await });
        }
        (Peer::Orchestrator(server), ResolvedRequest::Close(session_id)) => {
            let server = Rc::clone(server);
            let out = out.clone();
            tokio::task::spawn_local(async move {
                let outcome = match server.close(session_id).await {
                    Ok(closed) => CallOutcome::text(closed.to_string()),
                    Err(error) => CallOutcome::Error { message: error.to_string() },
                };
                let _ = out.send(Outgoing::CloseResponse { request_id, outcome });
            });
        }
    }
}

/// One line of the protocol: `message`, or an error naming its request when it cannot be
/// encoded or would be longer than a peer reads ([`MAX_LINE_BYTES`]).
fn encode_line(message: &Outgoing) -> String {
    let error =
        |why: String| Outgoing::Error { request_id: message.request_id().cloned(), message: why };
    let mut line = match serde_json::to_string(message) {
        Ok(line) if line.len() < MAX_LINE_BYTES => line,
        Ok(line) => serde_json::to_string(&error(format!(
            "the response ({} bytes) is longer than the protocol's {MAX_LINE_BYTES}; not sent",
            line.len()
        )))
        .unwrap_or_default(),
        Err(e) => serde_json::to_string(&error(format!("cannot encode a response: {e}")))
            .unwrap_or_default(),
    };
    line.push('\n');
    line
}

/// Runs one resolved call as a task that `cancel` can abort, and answers it.
fn spawn_resolved(
    in_flight: &InFlight,
    request_id: Value,
    out: &mpsc::UnboundedSender<Outgoing>,
    call: impl Future<Output = Result<ResolvedResult, SessionError>> + 'static,
) {
    let key = id_key(&request_id);
    let registry = Rc::clone(in_flight);
    let out = out.clone();
    let done = key.clone();
    // Registered before the task first runs: a local task only starts when this one yields.
    let task = tokio::task::spawn_local(async move {
        let outcome = match call.await {
            Ok(result) => ResolvedOutcome::Success { result },
            Err(error) => ResolvedOutcome::Error { message: error.to_string() },
        };
        registry.borrow_mut().remove(&done);
        let _ = out.send(Outgoing::ResolvedResponse { request_id, outcome });
    });
    in_flight.borrow_mut().insert(key, task.abort_handle());
}

/// SIGTERM, SIGINT and SIGHUP, as a stream (less those inherited as ignored).
pub(crate) use crate::interrupts::Interrupts as Signals;

/// The `hello_response` (or the error) for a peer speaking `requested`.
/// The fields of `line` that its message type does not have, named in one message; `None`
/// when there are none. The parsed message written back holds every field it read, so a key
/// of the line missing from it is one the type does not know.
fn unknown_fields(line: &[u8], message: &Incoming) -> Option<String> {
    let raw: serde_json::Map<String, Value> = serde_json::from_slice(line).ok()?;
    let known = serde_json::to_value(message).ok()?;
    let unknown: Vec<&str> =
        raw.keys().filter(|key| known.get(key.as_str()).is_none()).map(String::as_str).collect();
    if unknown.is_empty() {
        return None;
    }
    Some(format!(
        "unknown field(s) {} in this message: refused rather than ignored",
        excerpt(&unknown.join(", "))
    ))
}

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
        cordon_version: CORDON_VERSION.to_owned(),
        forms: hello.forms,
        host: hello.host,
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;

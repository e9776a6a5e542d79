//! The link's reading side: each response goes to the request waiting for it, and what
//! nobody waits for (a line that is not the protocol, a connection lost while sessions ran
//! there) becomes a [`LinkEvent`] for the caller to report; the library itself prints nothing.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;

use super::RemoteError;
use super::link::{Shared, encode, lock};
use crate::executor::{Incoming, Outgoing, ResolvedOutcome, excerpt};

/// Something the link noticed while no request was waiting for it.
#[derive(Debug)]
pub enum LinkEvent {
    /// The far end wrote a line that is not a protocol message.
    NotProtocol { host: String, excerpt: String },
    /// A response no request is waiting for.
    Unexpected { host: String, excerpt: String },
    /// The connection dropped while sessions ran there and no call was waiting to report it
    /// (always [`RemoteError::Lost`]).
    Lost(RemoteError),
}

impl fmt::Display for LinkEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkEvent::NotProtocol { host, excerpt } => {
                write!(f, "{host}: not a protocol line: {excerpt}")
            }
            LinkEvent::Unexpected { host, excerpt } => {
                write!(f, "{host}: unexpected message: {excerpt}")
            }
            LinkEvent::Lost(error) => write!(f, "{error}"),
        }
    }
}

/// The link's [`LinkEvent`]s, in order; `None` once the link is gone.
pub struct LinkEvents(mpsc::UnboundedReceiver<LinkEvent>);

impl LinkEvents {
    pub(super) fn new(events: mpsc::UnboundedReceiver<LinkEvent>) -> Self {
        LinkEvents(events)
    }

    pub async fn next(&mut self) -> Option<LinkEvent> {
        self.0.recv().await
    }
}

/// A response line, or why it could not be read as one.
pub(super) type Response = Result<Outgoing, Unreadable>;

/// A line with a request id that is not a message of the protocol.
#[derive(Debug)]
pub(super) struct Unreadable {
    pub excerpt: String,
    pub why: serde_json::Error,
}

/// Request ids of the closes sent for abandoned calls: their answers interest nobody.
const ABANDONED: &str = "abandoned-";

/// The request id of a line that is not a message of the protocol, when it has one.
#[derive(Deserialize)]
struct Envelope {
    #[serde(rename = "requestId", default)]
    request_id: Option<Value>,
}

/// A request id as the pending map knows it.
fn id_key(id: &Value) -> String {
    match id {
        Value::String(id) => id.clone(),
        other => other.to_string(),
    }
}

/// The request a response answers.
fn answers(response: &Outgoing) -> Option<String> {
    match response {
        Outgoing::ListToolsResponse { request_id, .. }
        | Outgoing::HelloResponse { request_id, .. }
        | Outgoing::ResolvedResponse { request_id, .. }
        | Outgoing::CloseResponse { request_id, .. }
        | Outgoing::CallToolResponse { request_id, .. }
        | Outgoing::ShutdownResponse { request_id } => Some(id_key(request_id)),
        Outgoing::Error { request_id, .. } => request_id.as_ref().map(id_key),
        // Nobody asks the far end's approver: it has none.
        Outgoing::ApprovalRequest { .. } => None,
    }
}

/// Hands each response to the request waiting for it; at EOF marks the link lost, wakes every
/// waiter (they report the loss) and says which remote sessions ended with it. A response
/// whose caller went away (an MCP client cancelled the call) that left a session running
/// closes that session: nobody holds its id.
pub(super) async fn read_responses(
    mut stdout: BufReader<tokio::process::ChildStdout>,
    shared: Arc<Shared>,
    outbox: mpsc::WeakUnboundedSender<String>,
) {
    let mut line = String::new();
    loop {
        line.clear();
        match stdout.read_line(&mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let (id, response) = match serde_json::from_str::<Outgoing>(&line) {
            Ok(response) => (answers(&response), Ok(response)),
            Err(why) => match serde_json::from_str::<Envelope>(&line) {
                Ok(envelope) => {
                    let excerpt = excerpt(line.trim_end());
                    (envelope.request_id.as_ref().map(id_key), Err(Unreadable { excerpt, why }))
                }
                Err(_) => {
                    let excerpt = excerpt(line.trim_end());
                    shared.report(LinkEvent::NotProtocol { host: shared.host.clone(), excerpt });
                    continue;
                }
            },
        };
        let unexpected = || LinkEvent::Unexpected {
            host: shared.host.clone(),
            excerpt: excerpt(line.trim_end()),
        };
        let Some(id) = id else {
            shared.report(unexpected());
            continue;
        };
        let waiter = lock(&shared.pending).remove(&id);
        match waiter {
            Some(waiter) => {
                if let Err(Ok(response)) = waiter.send(response) {
                    close_abandoned(&shared, &outbox, &id, &response);
                }
            }
            None if id.starts_with(ABANDONED) => {}
            None => shared.report(unexpected()),
        }
    }
    shared.lost.store(true, Ordering::SeqCst);
    // A call in flight reports the loss to its caller; with none, this event is the only news.
    let calls_waiting = {
        let mut pending = lock(&shared.pending);
        let waiting = !pending.is_empty();
        pending.clear();
        waiting
    };
    if !shared.closing.load(Ordering::SeqCst) && !calls_waiting && !lock(&shared.live).is_empty() {
        shared.report(LinkEvent::Lost(shared.lost_error()));
    }
}

/// Closes the session an abandoned call (request `id`) left running there.
fn close_abandoned(
    shared: &Shared,
    outbox: &mpsc::WeakUnboundedSender<String>,
    id: &str,
    response: &Outgoing,
) {
    let Outgoing::ResolvedResponse { outcome: ResolvedOutcome::Success { result }, .. } = response
    else {
        return;
    };
    let Some(session_id) = result.session_id else { return };
    lock(&shared.live).remove(&session_id);
    let close = Incoming::CloseResolved {
        request_id: Value::String(format!("{ABANDONED}{id}")),
        session_id,
    };
    if let (Some(outbox), Ok(line)) = (outbox.upgrade(), encode(&close)) {
        let _ = outbox.send(line);
    }
}

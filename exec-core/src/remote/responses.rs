//! The link's reading side: each response goes to the request waiting for it, and what
//! nobody waits for (a line that is not the protocol, a connection lost while sessions ran
//! there) becomes a [`LinkEvent`] for the caller to report; the library itself prints nothing.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;

use super::RemoteError;
use super::link::{Shared, encode, lock};
use crate::executor::{Incoming, MAX_LINE_BYTES, Outgoing, ResolvedOutcome, excerpt};

/// Something the link noticed while no request was waiting for it.
#[derive(Debug)]
pub enum LinkEvent {
    /// The far end wrote a line that is not a protocol message.
    NotProtocol { host: String, excerpt: String },
    /// A response no request is waiting for.
    Unexpected { host: String, excerpt: String },
    /// The connection dropped while sessions ran there, or this side closed it because the
    /// far end broke the protocol, and no call was waiting to report it
    /// ([`RemoteError::Lost`] or [`RemoteError::Closed`]).
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

/// How much of a bad line is read for the excerpt a message shows (which is shorter still).
const SHOWN_BYTES: usize = 1024;

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

/// The request a response answers. Nobody asks the far end's approver: it has none, so an
/// approval request answers nothing here either.
fn answers(response: &Outgoing) -> Option<String> {
    response.request_id().map(id_key)
}

/// How reading one line from the far end ended.
#[derive(Debug, PartialEq, Eq)]
enum Read {
    Line,
    /// More than [`MAX_LINE_BYTES`] without a newline: nothing more is read.
    TooLong,
    Eof,
}

/// Reads one `\n`-terminated line into `line` (without the newline), holding at most
/// [`MAX_LINE_BYTES`] of it: a longer one stops the reading at once, whatever follows.
async fn read_bounded(
    input: &mut (impl AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
) -> std::io::Result<Read> {
    line.clear();
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            return Ok(if line.is_empty() { Read::Eof } else { Read::Line });
        }
        let (chunk, used) = match available.iter().position(|b| *b == b'\n') {
            Some(end) => (&available[..end], Some(end + 1)),
            None => (available, None),
        };
        if line.len() + chunk.len() > MAX_LINE_BYTES {
            return Ok(Read::TooLong);
        }
        line.extend_from_slice(chunk);
        let consumed = used.unwrap_or(available.len());
        input.consume(consumed);
        if used.is_some() {
            return Ok(Read::Line);
        }
    }
}

/// Hands each response to the request waiting for it; at EOF marks the link lost, wakes every
/// waiter (they report the loss) and says which remote sessions ended with it. A line longer
/// than the protocol allows breaks the link the same way, naming the reason. A response
/// whose caller went away (an MCP client cancelled the call) that left a session running
/// closes that session: nobody holds its id.
pub(super) async fn read_responses(
    mut stdout: BufReader<tokio::process::ChildStdout>,
    shared: Arc<Shared>,
    outbox: mpsc::WeakUnboundedSender<String>,
) {
    let mut bytes = Vec::new();
    loop {
        if lock(&shared.broken).is_some() {
            break;
        }
        match read_bounded(&mut stdout, &mut bytes).await {
            Ok(Read::Line) => {}
            Ok(Read::Eof) | Err(_) => break,
            Ok(Read::TooLong) => {
                shared.break_link(format!(
                    "it sent a line longer than the protocol's {MAX_LINE_BYTES} bytes"
                ));
                // Nothing more is read: ssh is killed when the link is closed or dropped.
                break;
            }
        }
        // What a message shows of the line: its start, as text.
        let shown = || {
            let start = &bytes[..bytes.len().min(SHOWN_BYTES)];
            excerpt(String::from_utf8_lossy(start).trim_end())
        };
        let (id, response) = match serde_json::from_slice::<Outgoing>(&bytes) {
            Ok(response) => (answers(&response), Ok(response)),
            Err(why) => match serde_json::from_slice::<Envelope>(&bytes) {
                Ok(envelope) => {
                    let excerpt = shown();
                    (envelope.request_id.as_ref().map(id_key), Err(Unreadable { excerpt, why }))
                }
                Err(_) => {
                    let excerpt = shown();
                    shared.report(LinkEvent::NotProtocol { host: shared.host.clone(), excerpt });
                    continue;
                }
            },
        };
        let unexpected = || LinkEvent::Unexpected { host: shared.host.clone(), excerpt: shown() };
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
    let broken = lock(&shared.broken).is_some();
    let sessions = !lock(&shared.live).is_empty();
    if !shared.closing.load(Ordering::SeqCst) && !calls_waiting && (sessions || broken) {
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

//! stdio for rmcp, with one change to what rmcp's own line transport does: every line that is
//! not a JSON-RPC message gets a JSON-RPC error (bad input is answered, never fatal, never
//! echoed beyond a short excerpt: a client's garbage must not take the server down or make it
//! print raw bytes). rmcp ignores lines that are not JSON at all, and
//! answers well-formed JSON of the wrong shape with an error that has no id.
//!
//! Reading is cancel-safe (the service loop polls `receive` inside a `select!`): the partial
//! line lives in the transport, never in a future. Writing is rmcp's (`AsyncRwTransport`).

use rmcp::model::{ErrorCode, ErrorData, RequestId};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use std::sync::Arc;

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite};
use tokio::sync::Notify;

// The executor's limits and excerpts: the longest message served (a longer line gets an error
// and is skipped), and at most this much of a bad line is ever echoed back.
use crate::executor::{MAX_LINE_BYTES, excerpt};

pub(super) struct GuardedLines<R, W: AsyncWrite + Send + Unpin + 'static> {
    input: R,
    /// Told once when the input ends: the client went away.
    eof: Arc<Notify>,
    line: Vec<u8>,
    too_long: bool,
    output: AsyncRwTransport<RoleServer, tokio::io::Empty, W>,
}

impl<R: AsyncBufRead + Send + Unpin, W: AsyncWrite + Send + Unpin + 'static> GuardedLines<R, W> {
    pub fn new(input: R, output: W, eof: Arc<Notify>) -> Self {
        GuardedLines {
            input,
            eof,
            line: Vec::new(),
            too_long: false,
            output: AsyncRwTransport::new_server(tokio::io::empty(), output),
        }
    }

    /// The next whole line (without its newline), `Err(())` for one that was too long, `None`
    /// at end of input.
    async fn next_line(&mut self) -> Option<Result<Vec<u8>, ()>> {
        loop {
            let available = match self.input.fill_buf().await {
                Ok(available) => available,
                Err(_) => return None,
            };
            if available.is_empty() {
                // A last line without a newline is still a line.
                let line = std::mem::take(&mut self.line);
                let too_long = std::mem::take(&mut self.too_long);
                return match (line.is_empty(), too_long) {
                    (_, true) => Some(Err(())),
                    (true, false) => None,
                    (false, false) => Some(Ok(line)),
                };
            }
            let (chunk, used, complete) = match available.iter().position(|b| *b == b'\n') {
                Some(end) => (&available[..end], end + 1, true),
                None => (available, available.len(), false),
            };
            let room = MAX_LINE_BYTES.saturating_sub(self.line.len());
            self.too_long |= chunk.len() > room;
            self.line.extend_from_slice(&chunk[..chunk.len().min(room)]);
            self.input.consume(used);
            if complete {
                let line = std::mem::take(&mut self.line);
                return Some(if std::mem::take(&mut self.too_long) { Err(()) } else { Ok(line) });
            }
        }
    }

    async fn answer(&mut self, id: Option<RequestId>, code: ErrorCode, message: String) {
        let error = TxJsonRpcMessage::<RoleServer>::error(ErrorData::new(code, message, None), id);
        let _ = self.output.send(error).await;
    }
}

impl<R, W> Transport<RoleServer> for GuardedLines<R, W>
where
    R: AsyncBufRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.output.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let Some(line) = self.next_line().await else {
                self.eof.notify_one();
                return None;
            };
            let line = match line {
                Ok(line) => line,
                Err(()) => {
                    let message = format!("message longer than {MAX_LINE_BYTES} bytes; ignored");
                    self.answer(None, ErrorCode::INVALID_REQUEST, message).await;
                    continue;
                }
            };
            let line = line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&line);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match judge(line) {
                Verdict::Message(message) => return Some(*message),
                Verdict::Ignore => continue,
                Verdict::Answer { id, code, message } => self.answer(id, code, message).await,
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.output.close().await
    }
}

/// What to do with one line.
enum Verdict {
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// A notification rmcp does not know: JSON-RPC never answers a notification.
    Ignore,
    Answer {
        id: Option<RequestId>,
        code: ErrorCode,
        message: String,
    },
}

fn judge(line: &[u8]) -> Verdict {
    let value = match serde_json::from_slice::<Value>(line) {
        Ok(value) => value,
        Err(error) => {
            let message = if std::str::from_utf8(line).is_err() {
                "Parse error: the message is not valid UTF-8".to_owned()
            } else {
                format!("Parse error: {}", excerpt(&error.to_string()))
            };
            return Verdict::Answer { id: None, code: ErrorCode::PARSE_ERROR, message };
        }
    };
    let id = value.get("id").and_then(|id| serde_json::from_value::<RequestId>(id.clone()).ok());
    let is_notification = value.get("method").is_some() && value.get("id").is_none();
    match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value) {
        Ok(message) => Verdict::Message(Box::new(message)),
        Err(_) if is_notification => Verdict::Ignore,
        Err(error) => Verdict::Answer {
            id,
            code: ErrorCode::INVALID_REQUEST,
            message: format!("Invalid request: {}", excerpt(&error.to_string())),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::executor::EXCERPT_BYTES;

    fn answer(line: &[u8]) -> (Option<RequestId>, ErrorCode) {
        match judge(line) {
            Verdict::Answer { id, code, message } => {
                assert!(message.len() < EXCERPT_BYTES + 50, "{message}");
                (id, code)
            }
            Verdict::Message(_) => panic!("{line:?} parsed"),
            Verdict::Ignore => panic!("{line:?} ignored"),
        }
    }

    #[test]
    fn bad_lines_are_answered_with_the_id_when_it_can_be_read() {
        assert_eq!(answer(b"not json"), (None, ErrorCode::PARSE_ERROR));
        assert_eq!(answer(b"\xff\xfe{}"), (None, ErrorCode::PARSE_ERROR));
        assert_eq!(
            answer(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"x"}"#),
            (Some(RequestId::Number(7)), ErrorCode::INVALID_REQUEST)
        );
        assert_eq!(answer(br#"[1,2]"#), (None, ErrorCode::INVALID_REQUEST));
        let long = format!("{{\"id\": 1, \"x\": \"{}\"", "y".repeat(10_000));
        assert_eq!(answer(long.as_bytes()).1, ErrorCode::PARSE_ERROR);
    }

    #[test]
    fn good_lines_and_unknown_notifications_pass() {
        let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        assert!(matches!(judge(ping), Verdict::Message(_)));
        let odd = br#"{"jsonrpc":"2.0","method":"notifications/whatever","params":5}"#;
        assert!(matches!(judge(odd), Verdict::Message(_) | Verdict::Ignore));
    }

    #[tokio::test]
    async fn a_line_read_in_pieces_is_whole() {
        let input: &[u8] = b"{\"a\":1}\nsecond";
        let mut lines = GuardedLines::new(
            tokio::io::BufReader::with_capacity(3, input),
            tokio::io::sink(),
            Arc::default(),
        );
        assert_eq!(lines.next_line().await, Some(Ok(b"{\"a\":1}".to_vec())));
        assert_eq!(lines.next_line().await, Some(Ok(b"second".to_vec())));
        assert_eq!(lines.next_line().await, None);
    }
}

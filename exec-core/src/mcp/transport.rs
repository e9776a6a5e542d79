//! stdio for rmcp, with one change to what rmcp's own line transport does: every line that is
//! not a JSON-RPC message gets a JSON-RPC error (bad input is answered, never fatal, never
//! echoed beyond a short excerpt: a client's garbage must not take the server down or make it
//! print raw bytes). rmcp ignores lines that are not JSON at all, and
//! answers well-formed JSON of the wrong shape with an error that has no id.
//!
//! Reading is cancel-safe (the service loop polls `receive` inside a `select!`): the partial
//! line lives in the transport, never in a future, and the answers `receive` gives itself are
//! written by tasks of their own. Writing is rmcp's (`AsyncRwTransport`).

use rmcp::model::{CallToolResult, ContentBlock, ErrorCode, ErrorData, RequestId, ServerResult};
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
    /// Answers to lines rmcp never sees, being written. Each is a task of its own: `receive`
    /// is polled inside rmcp's `select!` and may be dropped at any await, and an answer
    /// awaited there would be lost with it (the line it answers is consumed already).
    answers: Vec<tokio::task::JoinHandle<Result<(), std::io::Error>>>,
}

impl<R: AsyncBufRead + Send + Unpin, W: AsyncWrite + Send + Unpin + 'static> GuardedLines<R, W> {
    pub fn new(input: R, output: W, eof: Arc<Notify>) -> Self {
        GuardedLines {
            input,
            eof,
            line: Vec::new(),
            too_long: false,
            output: AsyncRwTransport::new_server(tokio::io::empty(), output),
            answers: Vec::new(),
        }
    }

    /// Writes `message` whatever becomes of the `receive` that decided it.
    fn send_answer(&mut self, message: TxJsonRpcMessage<RoleServer>) {
        self.answers.retain(|answer| !answer.is_finished());
        self.answers.push(tokio::spawn(self.output.send(message)));
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

    fn answer(&mut self, id: Option<RequestId>, code: ErrorCode, message: String) {
        let error = TxJsonRpcMessage::<RoleServer>::error(ErrorData::new(code, message, None), id);
        self.send_answer(error);
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
                // The answers to the last lines are written before the server winds down.
                for answer in std::mem::take(&mut self.answers) {
                    let _ = answer.await;
                }
                self.eof.notify_one();
                return None;
            };
            let line = match line {
                Ok(line) => line,
                Err(()) => {
                    let message = format!("message longer than {MAX_LINE_BYTES} bytes; ignored");
                    self.answer(None, ErrorCode::INVALID_REQUEST, message);
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
                Verdict::Answer { id, code, message } => self.answer(id, code, message),
                Verdict::Respond { id, result } => {
                    let result = ServerResult::CallToolResult(*result);
                    self.send_answer(TxJsonRpcMessage::<RoleServer>::response(result, id));
                }
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
    /// A tool call answered here, with a tool error.
    Respond {
        id: RequestId,
        result: Box<CallToolResult>,
    },
}

fn judge(line: &[u8]) -> Verdict {
    let value = match serde_json::from_slice::<Value>(line) {
        Ok(value) => value,
        Err(error) => {
            let text = std::str::from_utf8(line).ok();
            if let Some(verdict) = text.and_then(not_unicode) {
                return verdict;
            }
            let message = match text {
                None => "Parse error: the message is not valid UTF-8".to_owned(),
                Some(_) => format!("Parse error: {}", excerpt(&error.to_string())),
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

/// What to answer a message that is JSON but for a string holding half a UTF-16 surrogate
/// pair (`"\ud800"`, which JavaScript's `JSON.stringify` writes for a lone surrogate): its id
/// is read from the message with such escapes replaced, and it is answered — a tool call with a
/// tool error (nothing runs: the string is not the one the client meant), anything else with a
/// JSON-RPC error. `None` when the message has no such string, or is not JSON even without it.
fn not_unicode(text: &str) -> Option<Verdict> {
    let repaired = without_lone_surrogates(text)?;
    let value = serde_json::from_str::<Value>(&repaired).ok()?;
    const WHY: &str = "the request holds a string with half a UTF-16 surrogate pair (an \\ud800 \
                       to \\udfff escape without its other half), which is no text: nothing was run";
    let id = match value.get("id") {
        None => return Some(Verdict::Ignore), // a notification: never answered
        // An id that held such a string is not the one the client sent.
        Some(Value::String(id)) if id.contains('\u{fffd}') => None,
        Some(id) => serde_json::from_value::<RequestId>(id.clone()).ok(),
    };
    let Some(id) = id else {
        return Some(Verdict::Answer {
            id: None,
            code: ErrorCode::PARSE_ERROR,
            message: WHY.into(),
        });
    };
    if value.get("method").and_then(Value::as_str) == Some("tools/call") {
        let result = CallToolResult::error(vec![ContentBlock::text(WHY)]);
        return Some(Verdict::Respond { id, result: Box::new(result) });
    }
    Some(Verdict::Answer { id: Some(id), code: ErrorCode::INVALID_PARAMS, message: WHY.to_owned() })
}

/// `text` with every `\uD800`..`\uDFFF` escape that is not half of a pair written as
/// `\uFFFD`; `None` when there is none.
fn without_lone_surrogates(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let escape = |at: usize| -> Option<u16> {
        let digits = bytes.get(at..at + 6)?;
        if &digits[..2] != b"\\u" {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(&digits[2..]).ok()?, 16).ok()
    };
    let (high, low) = (0xd800..=0xdbff, 0xdc00..=0xdfff);
    let mut out = String::with_capacity(text.len());
    let (mut at, mut copied, mut in_string, mut replaced) = (0, 0, false, false);
    while at < bytes.len() {
        match bytes[at] {
            b'"' => in_string = !in_string,
            b'\\' if in_string => {
                let Some(unit) = escape(at) else {
                    at += 2; // `\"`, `\\` and the other two-byte escapes
                    continue;
                };
                let paired =
                    high.contains(&unit) && escape(at + 6).is_some_and(|u| low.contains(&u));
                if paired {
                    at += 12;
                    continue;
                }
                if high.contains(&unit) || low.contains(&unit) {
                    out.push_str(&text[copied..at]);
                    out.push_str("\\ufffd");
                    replaced = true;
                    copied = at + 6;
                }
                at += 6;
                continue;
            }
            _ => {}
        }
        at += 1;
    }
    out.push_str(&text[copied..]);
    replaced.then_some(out)
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
            Verdict::Respond { .. } => panic!("{line:?} answered with a result"),
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
    fn half_a_surrogate_pair_is_answered_with_the_id_and_a_tool_error() {
        assert_eq!(without_lone_surrogates(r#"{"a":"x"}"#), None);
        // A whole pair, and escaped backslashes before a `u`, are left alone.
        assert_eq!(without_lone_surrogates(r#"{"a":"\ud83d\ude00 \\ud800"}"#), None);
        assert_eq!(
            without_lone_surrogates(r#"{"a":"x\ud800y","b":"\udc00"}"#).as_deref(),
            Some(r#"{"a":"x\ufffdy","b":"\ufffd"}"#)
        );
        let call = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"exec_command","arguments":{"cmd":"echo \ud800"}}}"#;
        match judge(call) {
            Verdict::Respond { id, result } => {
                assert_eq!(id, RequestId::Number(5));
                assert_eq!(result.is_error, Some(true));
            }
            _ => panic!("not answered with a tool error"),
        }
        let ping = br#"{"jsonrpc":"2.0","id":"p","method":"ping","params":{"x":"\udfff"}}"#;
        assert_eq!(answer(ping), (Some(RequestId::String("p".into())), ErrorCode::INVALID_PARAMS));
        let bad_id = br#"{"jsonrpc":"2.0","id":"\ud800","method":"ping"}"#;
        assert_eq!(answer(bad_id), (None, ErrorCode::PARSE_ERROR));
        let notification =
            br#"{"jsonrpc":"2.0","method":"notifications/x","params":{"x":"\ud800"}}"#;
        assert!(matches!(judge(notification), Verdict::Ignore));
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

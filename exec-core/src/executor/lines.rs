//! Reading the protocol's lines: bytes up to a newline, never more than [`MAX_LINE_BYTES`] of
//! one held, parsed into an [`Incoming`] or answered with a short error that names the
//! request when its id can be read.

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

use super::protocol::Incoming;

/// The longest input line served; a longer one is answered with an error and skipped.
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;
/// At most this much of a bad line (or of a parser message about it) is ever echoed back.
pub(crate) const EXCERPT_BYTES: usize = 200;

/// How reading one line ended.
pub(super) enum Line {
    Complete,
    /// Longer than [`MAX_LINE_BYTES`]: the rest up to the newline was discarded; `line` holds
    /// the beginning.
    TooLong,
    Eof,
}

/// Reads one `\n`-terminated line of bytes into `line` (without the newline), never holding
/// more than [`MAX_LINE_BYTES`] of it.
pub(super) async fn read_line(
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
pub(super) fn parse_line(line: &[u8]) -> Result<Incoming, (Option<Value>, String)> {
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

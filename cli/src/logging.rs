//! The one `tracing` subscriber: the events cordon's libraries emit about their decisions (the
//! sandbox planned, how the helper starts, approvals, retries, sessions, the network proxy's
//! verdicts), as lines on stderr. stdout stays the command's or the protocol's.
//!
//! By default nothing is logged: no subscriber is installed, so an event costs one check of a
//! global level, and the output and the start-up time are what they are without logging. `-v`
//! shows cordon's debug events, `-vv` its trace events and the libraries' own (rmcp, hyper)
//! from info up. `RUST_LOG`, when set, is the filter instead (`RUST_LOG=cordon_exec_core=debug`,
//! `RUST_LOG=warn`, `RUST_LOG=trace`).
//!
//! Every line is escaped as cordon's messages are (`render_bytes`): an event's fields can hold
//! what a command, a workspace's rules, a far end or a client supplied (an argv, a reason, a
//! path), and none of it may act on the terminal.
//!
//! Installed after the `argv[0]` dispatch: the Linux helper personality never gets here.

use std::io::Write;

use tracing_subscriber::EnvFilter;

/// Installs the subscriber for `verbose` (the count of `-v`), unless `RUST_LOG` says otherwise.
pub fn init(verbose: u8) {
    let directives = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.trim().is_empty() => directives,
        Ok(_) | Err(_) => match default_directives(verbose) {
            Some(directives) => directives.to_owned(),
            None => return,
        },
    };
    // A second subscriber cannot be installed; there is only this one.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::new(directives))
        .with_writer(|| EscapedLines)
        .try_init();
}

/// stderr, through which each event passes as one escaped line.
struct EscapedLines;

impl Write for EscapedLines {
    /// The subscriber writes one whole event per call (a formatted line ending in `\n`).
    fn write(&mut self, event: &[u8]) -> std::io::Result<usize> {
        std::io::stderr().lock().write_all(escaped(event).as_bytes())?;
        Ok(event.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// `event` on one line: every control character and escape sequence shown as an escape.
fn escaped(event: &[u8]) -> String {
    let line = event.strip_suffix(b"\n").unwrap_or(event);
    format!("{}\n", cordon_policies::render_bytes(line).text)
}

/// The filter without `RUST_LOG`; `None`: no logging at all. `cordon` matches every cordon
/// crate (`cordon`, `cordon_exec_core`, …): targets match by prefix.
fn default_directives(verbose: u8) -> Option<&'static str> {
    match verbose {
        0 => None,
        1 => Some("cordon=debug"),
        _ => Some("info,cordon=trace"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_one_line_with_escapes_shown() {
        let event = b"DEBUG refused reason=fine\r\x1b[2K\x1b]0;t\x07 x\ny\n";
        assert_eq!(escaped(event), "DEBUG refused reason=fine\\r\\x1b[2K\\x1b]0;t\\x07 x\\ny\n");
    }

    #[test]
    fn more_v_shows_more() {
        pretty_assertions::assert_eq!(
            [0, 1, 2, 3].map(default_directives),
            [None, Some("cordon=debug"), Some("info,cordon=trace"), Some("info,cordon=trace")]
        );
    }
}

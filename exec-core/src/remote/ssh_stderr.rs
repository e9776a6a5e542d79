//! ssh's standard error: its own messages (a host key added, why it could not connect) and
//! whatever the far end's login and executor write there, which this side does not control.
//! It is read through a pipe as it comes — never waiting for its end, which a connection
//! master started by ssh may hold open — and relayed to this process's stderr one line at a
//! time, each line as text (`render_bytes`: every control character and escape sequence shown
//! escaped) after the host's name: nothing the far end writes there can act on the terminal,
//! move the cursor over cordon's words or pass for them.

use std::io::Write as _;

use tokio::io::AsyncReadExt;
use tokio::process::ChildStderr;
use tokio::task::JoinHandle;

/// A line longer than this is shown in pieces of this many bytes.
const MAX_LINE: usize = 4096;

/// Relays `stderr` until its end; the handle finishes when the pipe is closed.
pub(super) fn relay(mut stderr: ChildStderr, host: String) -> JoinHandle<()> {
    tokio::spawn(async move {
        let host = cordon_policies::render_text(&host).text;
        let mut buf = [0u8; 4096];
        let mut line = Vec::new();
        loop {
            let n = match stderr.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            for &byte in &buf[..n] {
                if byte == b'\n' {
                    show(&host, &line);
                    line.clear();
                    continue;
                }
                line.push(byte);
                if line.len() >= MAX_LINE {
                    show(&host, &line);
                    line.clear();
                }
            }
        }
        if !line.is_empty() {
            show(&host, &line);
        }
    })
}

/// One line of ssh's, as text. ssh ends its lines with CR LF: the CR is not shown.
fn show(host: &str, line: &[u8]) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let text = cordon_policies::render_bytes(line).text;
    // One write under the lock cordon's own messages take: lines never interleave.
    let _ = std::io::stderr().lock().write_all(format!("{host}: {text}\n").as_bytes());
}

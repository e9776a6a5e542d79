//! What one `exec_command` / `write_stdin` call returns ([`CallResult`]), and the one place
//! it becomes the result text a harness or an MCP client reads (its `Display`; [`Closed`]'s
//! for `close_session`):
//!
//! ```text
//! Wall time: 0.512 seconds
//! Process exited with code 0            (or: Process running with session ID 3)
//! Warning: truncated output (original token count: T, B bytes)      (when cut)
//! …one line per note…
//! Output:
//! …
//! ```

use std::fmt;
use std::time::Duration;

use super::MAX_SESSIONS;

/// Whether the process is still running (with its session id) or exited (and how).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionState {
    Running { session_id: u32 },
    Exited { exit: ProcessExit },
}

/// What one call collected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallResult {
    /// From the call's start (questions asked on the way included) to its result.
    pub wall_time: Duration,
    pub state: SessionState,
    /// What the command printed since the last read (stdout and stderr merged on pipes), cut
    /// in the middle to the budget.
    pub output: String,
    /// Set when `output` is not everything the command printed since the last read.
    pub truncated: Option<Truncation>,
    /// What else the caller should know, in the order the text shows it.
    pub notes: Vec<Note>,
}

pub use crate::resolved::{Note, ProcessExit, Truncation};

/// A session ended on request (`close_session`, `close_resolved`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed {
    pub session_id: u32,
}

impl fmt::Display for Closed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Session {} closed", self.session_id)
    }
}

impl fmt::Display for CallResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Wall time: {:.3} seconds", self.wall_time.as_secs_f64())?;
        match self.state {
            SessionState::Running { session_id } => {
                writeln!(f, "Process running with session ID {session_id}")?;
            }
            SessionState::Exited { exit } => {
                writeln!(f, "Process exited with code {}", exit.shell_status())?;
            }
        }
        if let Some(Truncation { original_tokens, original_bytes }) = self.truncated {
            writeln!(
                f,
                "Warning: truncated output (original token count: {original_tokens}, \
                 {original_bytes} bytes)"
            )?;
        }
        for note in &self.notes {
            writeln!(f, "{note}")?;
        }
        write!(f, "Output:\n{}", self.output)
    }
}

/// One line of the result text. What the command chose (host names, paths) is rendered with
/// hidden characters escaped, never raw.
impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::NetworkRefused { hosts } => write!(
                f,
                "Network: the allow-list refused {}; allow a host with --allow-domain HOST \
                 (config network.allow)",
                cordon_policies::render_text(&hosts.join(", ")).text
            ),
            Note::MovedAside { entries } => write!(
                f,
                "Warning: {}",
                cordon_policies::render_text(&crate::runner::moved_aside_warning(entries)).text
            ),
            Note::NotSearched { dirs } => write!(
                f,
                "Warning: {}",
                cordon_policies::render_text(&crate::runner::not_searched_warning(dirs)).text
            ),
            Note::RetriedWithoutSandbox { first_exit, first_output } => write!(
                f,
                "Note: the sandboxed attempt exited {first_exit}, likely blocked by the sandbox; \
                 it ran again WITHOUT the sandbox, as approved. The sandboxed attempt's output:\n{}",
                cordon_policies::render_text(first_output).text
            ),
            Note::LimitExceeded { key, limit } => write!(
                f,
                "Limit: the command exceeded its {key} limit ({}) and was stopped; it was not \
                 blocked by the sandbox",
                key.describe(*limit)
            ),
            Note::ClosedToMakeRoom { session_ids } => {
                let ids: Vec<String> = session_ids.iter().map(u32::to_string).collect();
                write!(
                    f,
                    "Note: closed session {} (oldest idle) to stay within {MAX_SESSIONS} sessions",
                    ids.join(", ")
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::text::{Collected, cut};
    use super::*;
    use pretty_assertions::assert_eq;

    fn result(
        wall: Duration,
        state: SessionState,
        output: Collected<'_>,
        max_tokens: usize,
    ) -> CallResult {
        let (output, truncated) = cut(output, max_tokens);
        CallResult { wall_time: wall, state, output, truncated, notes: Vec::new() }
    }

    #[test]
    fn result_text_has_the_design_shape() {
        let text = result(
            Duration::from_millis(512),
            SessionState::Exited { exit: ProcessExit::Code { code: 0 } },
            Collected::whole("hi\n"),
            100,
        )
        .to_string();
        assert_eq!(text, "Wall time: 0.512 seconds\nProcess exited with code 0\nOutput:\nhi\n");
        let text = result(
            Duration::from_millis(5),
            SessionState::Running { session_id: 3 },
            Collected::whole(&"x".repeat(100)),
            10,
        )
        .to_string();
        assert_eq!(
            text,
            format!(
                "Wall time: 0.005 seconds\nProcess running with session ID 3\nWarning: truncated output (original token count: 25, 100 bytes)\nOutput:\n{}…15 tokens truncated…{}",
                "x".repeat(20),
                "x".repeat(20)
            )
        );
    }

    #[test]
    fn bytes_the_session_buffer_dropped_count_in_the_original_size() {
        let text = result(
            Duration::from_millis(5),
            SessionState::Exited { exit: ProcessExit::Code { code: 0 } },
            Collected { text: "head…tail", original_bytes: 4_000_001 },
            10_000,
        )
        .to_string();
        assert!(
            text.contains(
                "Warning: truncated output (original token count: 1000001, 4000001 bytes)"
            ),
            "{text}"
        );
    }

    #[test]
    fn notes_come_after_the_truncation_warning_and_before_the_output() {
        let mut result = result(
            Duration::from_millis(5),
            SessionState::Running { session_id: 9 },
            Collected::whole(&"x".repeat(100)),
            10,
        );
        result.notes = vec![
            Note::NetworkRefused { hosts: vec!["evil.example:443".into(), "a\u{1b}b:80".into()] },
            Note::MovedAside { entries: vec!["/w/.git/hooks (now /w/.git/hooks.moved)".into()] },
            Note::ClosedToMakeRoom { session_ids: vec![1, 2] },
        ];
        let text = result.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[2..7],
            [
                "Warning: truncated output (original token count: 25, 100 bytes)",
                r"Network: the allow-list refused evil.example:443, a\x1bb:80; allow a host with --allow-domain HOST (config network.allow)",
                "Warning: the command created what git, a shell or another tool would later run code from, outside any sandbox; moved aside: /w/.git/hooks (now /w/.git/hooks.moved)",
                "Note: closed session 1, 2 (oldest idle) to stay within 64 sessions",
                "Output:",
            ]
        );
    }
}

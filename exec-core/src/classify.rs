//! Classifying a finished attempt (DESIGN §7 step 4). Pure: the retry decision matches on the
//! [`Verdict`] value, never on output text downstream of this function.

use serde::Serialize;

use crate::sandbox::SandboxKind;

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum ExitKind {
    Code(i32),
    Signal(i32),
    TimedOut,
}

impl ExitKind {
    /// The shell convention: the code, 128+N for signal N, 124 for a timeout.
    pub fn shell_status(self) -> i32 {
        match self {
            ExitKind::Code(code) => code,
            ExitKind::Signal(signal) => 128 + signal,
            ExitKind::TimedOut => 124,
        }
    }
}

/// What an attempt's result means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Success,
    Failure,
    /// The sandbox probably stopped the command (see [`classify`]).
    LikelySandboxDenied,
    Timeout,
    Signal,
}

/// Output words that suggest the sandbox refused something.
const DENIAL_MARKERS: &[&str] = &[
    "operation not permitted",
    "permission denied",
    "read-only file system",
    "seccomp",
    "sandbox",
    "landlock",
];

/// A sandbox denial is likely only when a sandbox was used, the command failed with a status
/// other than 126/127 (not executable/found), and either died of SIGSYS or said one of the
/// denial markers.
///
/// Unlike Codex, exit status 2 is not ruled out: POSIX shells (dash, Debian's `sh`) exit 2 when
/// a redirection fails, so `sh -c 'echo x > /etc/f'` under a read-only sandbox ends with 2 and
/// "Read-only file system" — the most common denial of all. A marker is still required.
pub fn classify(sandbox: SandboxKind, exit: ExitKind, stdout: &str, stderr: &str) -> Verdict {
    let sandboxed = sandbox != SandboxKind::None;
    match exit {
        ExitKind::TimedOut => Verdict::Timeout,
        ExitKind::Code(0) => Verdict::Success,
        ExitKind::Signal(signal) if sandboxed && signal == libc::SIGSYS => {
            Verdict::LikelySandboxDenied
        }
        ExitKind::Signal(_) => Verdict::Signal,
        ExitKind::Code(126 | 127) => Verdict::Failure,
        ExitKind::Code(code) if sandboxed && code == 128 + libc::SIGSYS => {
            Verdict::LikelySandboxDenied
        }
        ExitKind::Code(_) if sandboxed && mentions_denial(stdout, stderr) => {
            Verdict::LikelySandboxDenied
        }
        ExitKind::Code(_) => Verdict::Failure,
    }
}

fn mentions_denial(stdout: &str, stderr: &str) -> bool {
    [stdout, stderr].iter().any(|text| {
        let lower = text.to_lowercase();
        DENIAL_MARKERS.iter().any(|marker| lower.contains(marker))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_need_a_sandbox_a_real_failure_and_a_marker() {
        let eperm = "sh: 1: cannot create /etc/x: Read-only file system";
        assert_eq!(
            classify(SandboxKind::Linux, ExitKind::Code(2), "", eperm),
            Verdict::LikelySandboxDenied
        );
        assert_eq!(
            classify(SandboxKind::Linux, ExitKind::Code(2), "", "usage: grep [OPTION]"),
            Verdict::Failure
        );
        assert_eq!(
            classify(SandboxKind::Linux, ExitKind::Code(1), "", eperm),
            Verdict::LikelySandboxDenied
        );
        assert_eq!(classify(SandboxKind::None, ExitKind::Code(1), "", eperm), Verdict::Failure);
        assert_eq!(
            classify(SandboxKind::Linux, ExitKind::Code(1), "", "no such file"),
            Verdict::Failure
        );
        assert_eq!(classify(SandboxKind::Linux, ExitKind::Code(127), "", eperm), Verdict::Failure);
        assert_eq!(classify(SandboxKind::Linux, ExitKind::Code(0), "", eperm), Verdict::Success);
        assert_eq!(
            classify(SandboxKind::Linux, ExitKind::Signal(libc::SIGSYS), "", ""),
            Verdict::LikelySandboxDenied
        );
        assert_eq!(
            classify(SandboxKind::Linux, ExitKind::Code(128 + libc::SIGSYS), "", ""),
            Verdict::LikelySandboxDenied
        );
        assert_eq!(
            classify(SandboxKind::Linux, ExitKind::Signal(libc::SIGKILL), "", ""),
            Verdict::Signal
        );
        assert_eq!(classify(SandboxKind::Linux, ExitKind::TimedOut, "", eperm), Verdict::Timeout);
        assert_eq!(
            classify(SandboxKind::Linux, ExitKind::Code(1), "Permission denied (publickey)", ""),
            Verdict::LikelySandboxDenied
        );
    }

    #[test]
    fn shell_status_follows_the_convention() {
        assert_eq!(ExitKind::Code(3).shell_status(), 3);
        assert_eq!(ExitKind::Signal(9).shell_status(), 137);
        assert_eq!(ExitKind::TimedOut.shell_status(), 124);
    }
}

//! The resolved form of the executor protocol (version 2): one command as the orchestrator
//! decided it — final argv, absolute cwd, complete environment, the sandbox attempt, whether a
//! person approved it — and what running it collected. Plain data shared by the executor that
//! runs it ([`crate::session`]) and the orchestrator that sends it ([`crate::remote`]).
//!
//! A leaf module: it depends on no other module of this crate.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use cordon_policies::SandboxRequest;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One command, decided on the orchestrator's side: what a remote executor runs without
/// deciding anything itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResolvedExec {
    /// The final argv (`argv[0]` is looked up on the remote `PATH` when it has no slash).
    pub argv: Vec<WireBytes>,
    /// Absolute; the executor runs the command exactly there.
    pub cwd: PathBuf,
    /// The command's complete environment (nothing of the executor's own is added).
    pub env: Vec<(WireBytes, WireBytes)>,
    /// The sandbox this attempt runs under.
    pub sandbox: SandboxAttempt,
    /// Whether a person approved this attempt (recorded; the executor does not decide).
    pub approval: ApprovalState,
    #[serde(default)]
    pub tty: bool,
    #[serde(default)]
    pub yield_time_ms: Option<u64>,
    #[serde(default)]
    pub max_output_tokens: Option<usize>,
}

/// An argument, a variable's name or its value: any bytes. On the wire a JSON string when
/// they are UTF-8 (the usual case, readable in a log), else `{"hex": "…"}`; either way the far
/// end gets exactly these bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireBytes(pub OsString);

impl From<&OsStr> for WireBytes {
    fn from(value: &OsStr) -> Self {
        WireBytes(value.to_owned())
    }
}

impl From<&str> for WireBytes {
    fn from(value: &str) -> Self {
        WireBytes(OsString::from(value))
    }
}

impl Serialize for WireBytes {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0.to_str() {
            Some(text) => serializer.serialize_str(text),
            None => {
                use std::fmt::Write as _;
                let mut hex = String::with_capacity(self.0.len() * 2);
                for byte in self.0.as_bytes() {
                    let _ = write!(hex, "{byte:02x}");
                }
                WireForm::Hex { hex }.serialize(serializer)
            }
        }
    }
}

impl<'de> Deserialize<'de> for WireBytes {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match WireForm::deserialize(deserializer)? {
            WireForm::Text(text) => Ok(WireBytes(OsString::from(text))),
            WireForm::Hex { hex } => {
                let digits = hex.as_bytes();
                if digits.len() % 2 != 0 {
                    return Err(serde::de::Error::custom("hex: an odd number of digits"));
                }
                // Digits only: `from_str_radix` alone would take a sign (`+a`).
                if !digits.iter().all(u8::is_ascii_hexdigit) {
                    return Err(serde::de::Error::custom("hex: not a hex digit"));
                }
                let bytes = digits
                    .chunks(2)
                    .map(|pair| {
                        std::str::from_utf8(pair)
                            .ok()
                            .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                            .ok_or_else(|| serde::de::Error::custom("hex: not a hex digit"))
                    })
                    .collect::<Result<Vec<u8>, D::Error>>()?;
                Ok(WireBytes(OsString::from_vec(bytes)))
            }
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
enum WireForm {
    Text(String),
    Hex { hex: String },
}

/// The sandbox of one attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SandboxAttempt {
    /// No sandbox: `danger-full-access`, an approved escalation or an approved retry. A
    /// struct variant, so that a field beside `kind` (a `request` sent with it) is refused.
    /// The resource limits still hold there; left out when there are none, so a far end that
    /// does not know them refuses only a run that has them.
    None {
        #[serde(default, skip_serializing_if = "cordon_policies::Limits::is_empty")]
        limits: cordon_policies::Limits,
    },
    /// The executor's platform sandbox enforcing `request`, whose writable roots are resolved
    /// against its `policy_cwd` on the executor's machine. A setting the executor does not
    /// know makes the whole message unreadable there: it refuses rather than run without it.
    Platform { request: Box<SandboxRequest> },
}

/// Whether the attempt was approved by a person on the orchestrator's side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalState {
    /// The policy ran it without asking.
    NotNeeded,
    /// Someone said yes (before the run, or to a retry without the sandbox).
    Granted,
}

/// What one resolved call collected: the far end's session result, field by field (the
/// orchestrator writes the result text from them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedResult {
    /// Set while the process runs: poll it with `write_resolved`.
    pub session_id: Option<u32>,
    /// Set once it exited: its exit code, or the signal that killed it.
    pub exit: Option<ProcessExit>,
    /// The output since the last read (stdout and stderr merged), cut to the budget.
    pub output: String,
    /// How long the call took on the far end.
    pub wall_time_ms: f64,
    /// How much output there was, when `output` holds less.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncation>,
    /// What else happened, as the text reports it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<Note>,
}

/// How a process ended: typed on the wire, so that a signal stays a signal (an exit code of
/// 128+N is a code the command chose).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ProcessExit {
    Code { code: i32 },
    Signal { signal: i32 },
}

impl ProcessExit {
    /// What a raw wait status (as `waitpid` gives it) says.
    pub fn from_wait_status(raw: i32) -> ProcessExit {
        if libc::WIFSIGNALED(raw) {
            ProcessExit::Signal { signal: libc::WTERMSIG(raw) }
        } else {
            ProcessExit::Code { code: libc::WEXITSTATUS(raw) }
        }
    }

    /// The shell convention: the code, 128+N for signal N.
    pub fn shell_status(self) -> i32 {
        match self {
            ProcessExit::Code { code } => code,
            ProcessExit::Signal { signal } => 128 + signal,
        }
    }

    /// Whether a process could have ended this way: an exit code is 0..=255, a signal
    /// 1..=64. A peer's claim outside that is no exit at all.
    pub fn is_possible(self) -> bool {
        match self {
            ProcessExit::Code { code } => (0..=255).contains(&code),
            ProcessExit::Signal { signal } => (1..=64).contains(&signal),
        }
    }
}

/// How much output there was when a result holds less.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    /// Bytes / 4, rounded up.
    pub original_tokens: usize,
    pub original_bytes: u64,
}

/// Something that happened around a call, reported with its result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum Note {
    /// The network allow-list refused these destinations (`host:port`, as the command named
    /// them: rendered only in the text).
    NetworkRefused { hosts: Vec<String> },
    /// The command created what git, a shell or another tool would later run code from, outside any sandbox; each
    /// entry is `PATH (now ASIDE)` or says it could not be moved.
    MovedAside { entries: Vec<String> },
    /// The search after the run for repositories the command created had no allowance left for
    /// these directories (too many, or too deep): a repository made there was not looked at.
    NotSearched { dirs: Vec<String> },
    /// Sessions closed to make room for this one (the oldest idle ones).
    ClosedToMakeRoom { session_ids: Vec<u32> },
    /// The sandboxed attempt ended with `first_exit`, likely blocked by the sandbox; the client
    /// approved running it again without the sandbox, and this result is that run's. The
    /// sandboxed attempt's output is kept here.
    RetriedWithoutSandbox { first_exit: i32, first_output: String },
    /// The kernel stopped the command at this resource limit (its value as the command was
    /// given it): never a sandbox denial, never retried.
    LimitExceeded { key: cordon_policies::LimitKey, limit: u64 },
}

/// What a remote executor tells the orchestrator in its `hello_response`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HostFacts {
    /// `cordon doctor --json` on that machine.
    pub doctor: Value,
    /// The executor's own environment (the base the orchestrator's environment policy filters).
    pub env: Vec<(String, String)>,
    /// The executor's working directory (the default workspace).
    pub cwd: PathBuf,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_documented_exec_resolved_parses_and_unknown_fields_are_errors() {
        let documented = serde_json::json!({
            "argv": ["/bin/bash", "-lc", "make test"],
            "cwd": "/srv/build/repo",
            "env": [["PATH", "/usr/bin:/bin"], ["HOME", "/home/me"]],
            "sandbox": {"kind": "platform", "request": {
                        "policy": {"type": "workspace-write", "network_access": false},
                        "policy_cwd": "/srv/build/repo",
                        "strictness": "fail_closed", "mount_view": "auto"}},
            "approval": "not_needed",
            "tty": false, "yieldTimeMs": 10000, "maxOutputTokens": 10000
        });
        let exec: ResolvedExec = serde_json::from_value(documented.clone()).unwrap();
        assert_eq!(exec.cwd, PathBuf::from("/srv/build/repo"));
        assert_eq!(exec.approval, ApprovalState::NotNeeded);
        let SandboxAttempt::Platform { request } = &exec.sandbox else { panic!("{exec:?}") };
        assert_eq!(
            (request.strictness, request.mount_view),
            (
                cordon_policies::Strictness::FailClosed,
                cordon_policies::MountViewRequirement::WhenAvailable
            )
        );
        let again: ResolvedExec =
            serde_json::from_value(serde_json::to_value(&exec).unwrap()).unwrap();
        assert_eq!(again, exec);

        let mut extra = documented.clone();
        extra["sudo"] = true.into();
        assert!(serde_json::from_value::<ResolvedExec>(extra).is_err());
        // A sandbox setting this side does not know: refused, never dropped.
        let mut unknown_setting = documented;
        unknown_setting["sandbox"]["request"]["memory_limit"] = "1G".into();
        assert!(serde_json::from_value::<ResolvedExec>(unknown_setting).is_err());
        let none: ResolvedExec = serde_json::from_value(serde_json::json!({
            "argv": ["true"], "cwd": "/", "env": [], "sandbox": {"kind": "none"},
            "approval": "granted"}))
        .unwrap();
        assert_eq!(
            (none.sandbox, none.tty),
            (SandboxAttempt::None { limits: cordon_policies::Limits::default() }, false)
        );
        assert_eq!(
            serde_json::to_value(SandboxAttempt::None {
                limits: cordon_policies::Limits::default()
            })
            .unwrap(),
            serde_json::json!({"kind": "none"})
        );
        let mixed = serde_json::json!({"kind": "none", "request": {"policy": {"type": "read-only"}, "policy_cwd": "/"}});
        assert!(serde_json::from_value::<SandboxAttempt>(mixed).is_err());
    }

    #[test]
    fn bytes_travel_as_text_when_they_are_utf8_and_as_hex_otherwise() {
        let latin1 = WireBytes(OsString::from_vec(b"caf\xe9".to_vec()));
        let text = WireBytes::from("café");
        assert_eq!(serde_json::to_value(&text).unwrap(), serde_json::json!("café"));
        assert_eq!(serde_json::to_value(&latin1).unwrap(), serde_json::json!({"hex": "636166e9"}));
        for value in [latin1, text] {
            let again: WireBytes =
                serde_json::from_value(serde_json::to_value(&value).unwrap()).unwrap();
            assert_eq!(again, value);
        }
        for bad in [
            serde_json::json!({"hex": "6"}),
            serde_json::json!({"hex": "zz"}),
            serde_json::json!({"hex": "+a+b"}),
            serde_json::json!({"hex": "61", "more": 1}),
            serde_json::json!(7),
        ] {
            assert!(serde_json::from_value::<WireBytes>(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_limit_note_reads_as_documented() {
        let documented =
            serde_json::json!({"kind": "limit_exceeded", "key": "memory", "limit": 134217728});
        let note: Note = serde_json::from_value(documented.clone()).unwrap();
        assert_eq!(
            note,
            Note::LimitExceeded { key: cordon_policies::LimitKey::Memory, limit: 128 << 20 }
        );
        assert_eq!(serde_json::to_value(&note).unwrap(), documented);
        assert_eq!(
            note.to_string(),
            "Limit: the command exceeded its memory limit (128 MiB) and was stopped; it was not \
             blocked by the sandbox"
        );
    }
}

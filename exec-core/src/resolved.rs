//! The resolved form of the executor protocol (version 2): one command as the orchestrator
//! decided it — final argv, absolute cwd, complete environment, the sandbox attempt, whether a
//! person approved it — and what running it collected. Plain data shared by the executor that
//! runs it ([`crate::session`]) and the orchestrator that sends it ([`crate::remote`]).
//!
//! A leaf module: it depends on no other module of this crate but `launch` and the session
//! result types a [`ResolvedResult`] carries.

use std::path::PathBuf;

use cordon_policies::SandboxPolicy;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::launch::{MountViewRequirement, Strictness};
use crate::session::{Note, Truncation};

/// One command, decided on the orchestrator's side: what a remote executor runs without
/// deciding anything itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResolvedExec {
    /// The final argv (`argv[0]` is looked up on the remote `PATH` when it has no slash).
    pub argv: Vec<String>,
    /// Absolute; the executor runs the command exactly there.
    pub cwd: PathBuf,
    /// The command's complete environment (nothing of the executor's own is added).
    pub env: Vec<(String, String)>,
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

/// The sandbox of one attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum SandboxAttempt {
    /// No sandbox: `danger-full-access`, an approved escalation or an approved retry.
    None,
    /// The executor's platform sandbox under `policy`, whose writable roots are resolved
    /// against `policy_cwd` on the executor's machine.
    Platform {
        policy: SandboxPolicy,
        policy_cwd: PathBuf,
        strictness: WireStrictness,
        mount_view: WireMountView,
    },
}

/// [`Strictness`] on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireStrictness {
    FailClosed,
    BestEffort,
}

impl From<Strictness> for WireStrictness {
    fn from(value: Strictness) -> Self {
        match value {
            Strictness::FailClosed => WireStrictness::FailClosed,
            Strictness::BestEffort => WireStrictness::BestEffort,
        }
    }
}

impl From<WireStrictness> for Strictness {
    fn from(value: WireStrictness) -> Self {
        match value {
            WireStrictness::FailClosed => Strictness::FailClosed,
            WireStrictness::BestEffort => Strictness::BestEffort,
        }
    }
}

/// [`MountViewRequirement`] on the wire (`auto`, `required`, `off` as in config files).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireMountView {
    Auto,
    Required,
    Off,
}

impl From<MountViewRequirement> for WireMountView {
    fn from(value: MountViewRequirement) -> Self {
        match value {
            MountViewRequirement::WhenAvailable => WireMountView::Auto,
            MountViewRequirement::Required => WireMountView::Required,
            MountViewRequirement::Disabled => WireMountView::Off,
        }
    }
}

impl From<WireMountView> for MountViewRequirement {
    fn from(value: WireMountView) -> Self {
        match value {
            WireMountView::Auto => MountViewRequirement::WhenAvailable,
            WireMountView::Required => MountViewRequirement::Required,
            WireMountView::Off => MountViewRequirement::Disabled,
        }
    }
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

/// What one resolved call collected: the far end's session result, field by field, and its
/// text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedResult {
    /// Set while the process runs: poll it with `write_resolved`.
    pub session_id: Option<u32>,
    /// Set once it exited (128+N for signal N).
    pub exit_code: Option<i32>,
    /// The output since the last read (stdout and stderr merged), cut to the budget.
    pub output: String,
    /// The result text a harness would get from `exec_command`/`write_stdin`.
    pub text: String,
    /// How long the call took on the far end.
    pub wall_time_ms: f64,
    /// How much output there was, when `output` holds less.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncation>,
    /// What else happened, as the text reports it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<Note>,
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
            "sandbox": {"kind": "platform",
                        "policy": {"type": "workspace-write", "network_access": false},
                        "policyCwd": "/srv/build/repo",
                        "strictness": "fail_closed", "mountView": "auto"},
            "approval": "not_needed",
            "tty": false, "yieldTimeMs": 10000, "maxOutputTokens": 10000
        });
        let exec: ResolvedExec = serde_json::from_value(documented.clone()).unwrap();
        assert_eq!(exec.cwd, PathBuf::from("/srv/build/repo"));
        assert_eq!(exec.approval, ApprovalState::NotNeeded);
        let SandboxAttempt::Platform { strictness, mount_view, .. } = &exec.sandbox else {
            panic!("{exec:?}")
        };
        assert_eq!((*strictness, *mount_view), (WireStrictness::FailClosed, WireMountView::Auto));
        let again: ResolvedExec =
            serde_json::from_value(serde_json::to_value(&exec).unwrap()).unwrap();
        assert_eq!(again, exec);

        let mut extra = documented;
        extra["sudo"] = true.into();
        assert!(serde_json::from_value::<ResolvedExec>(extra).is_err());
        let none: ResolvedExec = serde_json::from_value(serde_json::json!({
            "argv": ["true"], "cwd": "/", "env": [], "sandbox": {"kind": "none"},
            "approval": "granted"}))
        .unwrap();
        assert_eq!((none.sandbox, none.tty), (SandboxAttempt::None, false));
    }

    #[test]
    fn wire_enums_map_both_ways() {
        for s in [Strictness::FailClosed, Strictness::BestEffort] {
            assert_eq!(Strictness::from(WireStrictness::from(s)), s);
        }
        for m in [
            MountViewRequirement::WhenAvailable,
            MountViewRequirement::Required,
            MountViewRequirement::Disabled,
        ] {
            assert_eq!(MountViewRequirement::from(WireMountView::from(m)), m);
        }
    }
}

//! The approval policy (`-a untrusted|on-failure|on-request|never`: when cordon asks a person
//! before running a command, and whether it may retry one without the sandbox) and a request's
//! ask to run outside the sandbox.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// When cordon asks the user before running a command, or before retrying it without the
/// sandbox. Spelled in kebab-case on the command line, in config files and in JSON.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum AskForApproval {
    /// Ask before anything that is not known-safe or allowed by a rule.
    Untrusted,
    /// Run sandboxed without asking; ask to retry without the sandbox after a denial.
    OnFailure,
    /// Run sandboxed; ask when the request asks for escalation, and after a denial only when a
    /// person at a terminal ran it.
    #[default]
    OnRequest,
    /// Never ask: what would need approval is refused.
    Never,
}

impl AskForApproval {
    /// Every policy, from most to least asking.
    pub const ALL: [AskForApproval; 4] = [
        AskForApproval::Untrusted,
        AskForApproval::OnFailure,
        AskForApproval::OnRequest,
        AskForApproval::Never,
    ];

    /// The spelling used on the command line and in config files.
    pub fn as_str(self) -> &'static str {
        match self {
            AskForApproval::Untrusted => "untrusted",
            AskForApproval::OnFailure => "on-failure",
            AskForApproval::OnRequest => "on-request",
            AskForApproval::Never => "never",
        }
    }
}

impl fmt::Display for AskForApproval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that names no approval policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown approval policy {given:?}: expected untrusted, on-failure, on-request or never")]
pub struct ParseApprovalError {
    /// What was given.
    pub given: String,
}

impl FromStr for AskForApproval {
    type Err = ParseApprovalError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AskForApproval::ALL
            .into_iter()
            .find(|policy| policy.as_str() == s)
            .ok_or_else(|| ParseApprovalError { given: s.to_owned() })
    }
}

/// Whether the request asks to run outside the sandbox (executor's
/// `sandbox_permissions: "require_escalated"` + justification).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Escalation {
    /// Run under the configured sandbox.
    UseDefault,
    /// Run without the sandbox if the user approves; the justification is shown to them.
    RequireEscalated { justification: Option<String> },
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn every_policy_round_trips_through_its_spelling_and_json() {
        for policy in AskForApproval::ALL {
            assert_eq!(policy.as_str().parse::<AskForApproval>(), Ok(policy));
            assert_eq!(policy.to_string(), policy.as_str());
            let json = serde_json::to_string(&policy).unwrap();
            assert_eq!(json, format!("\"{}\"", policy.as_str()));
            assert_eq!(serde_json::from_str::<AskForApproval>(&json).unwrap(), policy);
        }
    }

    #[test]
    fn the_default_is_on_request() {
        assert_eq!(AskForApproval::default(), AskForApproval::OnRequest);
    }

    #[test]
    fn other_spellings_are_errors_that_list_the_choices() {
        let err = "on_failure".parse::<AskForApproval>().unwrap_err();
        assert_eq!(err, ParseApprovalError { given: "on_failure".to_owned() });
        assert_eq!(
            err.to_string(),
            "unknown approval policy \"on_failure\": expected untrusted, on-failure, on-request \
             or never"
        );
        assert!("Never".parse::<AskForApproval>().is_err());
        assert!("".parse::<AskForApproval>().is_err());
    }
}

//! What the far end's `doctor` report says it cannot enforce, and the refusal when a policy
//! needs more than that.
//!
//! The report is the far end's to describe, so it is read leniently and fails closed: a mode
//! or list that is missing or malformed reports nothing, but a gap entry that is there counts,
//! as required unless it says otherwise, whatever else is wrong with it.

use cordon_policies::{SandboxMode, SandboxPolicy};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{RemoteError, RemoteLink};
use crate::platform::Gap;

/// The part of a `doctor` report read here: `modes[MODE].not_enforced` and
/// `not_enforced_with_network`.
#[derive(Debug, Default, Deserialize)]
struct DoctorModes {
    #[serde(default)]
    modes: Map<String, Value>,
}

/// One mode's lists, each read on its own.
#[derive(Debug, Default, Deserialize)]
struct ModeGaps {
    #[serde(default)]
    not_enforced: Option<Value>,
    #[serde(default)]
    not_enforced_with_network: Option<Value>,
}

/// The entries of a list, none when it is not one.
fn entries(list: Option<Value>) -> Vec<Value> {
    match list {
        Some(Value::Array(entries)) => entries,
        _ => Vec::new(),
    }
}

#[derive(Debug, Default, Deserialize)]
struct GapEntry {
    #[serde(default)]
    what: Option<Value>,
    #[serde(default)]
    required: Option<Value>,
}

impl From<GapEntry> for Gap {
    fn from(entry: GapEntry) -> Gap {
        Gap {
            what: match entry.what {
                Some(Value::String(what)) => what,
                _ => "(unnamed)".to_owned(),
            },
            required: !matches!(entry.required, Some(Value::Bool(false))),
        }
    }
}

/// The gaps `doctor` reports for `mode`, with those of the network on when `network`.
fn report_gaps(doctor: &Value, mode: SandboxMode, network: bool) -> Vec<Gap> {
    let modes = DoctorModes::deserialize(doctor).unwrap_or_default();
    let Some(report) = modes.modes.get(mode.as_str()) else { return Vec::new() };
    let report = ModeGaps::deserialize(report).unwrap_or_default();
    let mut gaps = entries(report.not_enforced);
    if network {
        gaps.extend(entries(report.not_enforced_with_network));
    }
    gaps.iter().map(|entry| Gap::from(GapEntry::deserialize(entry).unwrap_or_default())).collect()
}

impl RemoteLink {
    /// What the far end's `doctor` says it cannot enforce for `policy` (its mode, with the
    /// network on or off). Empty for `danger-full-access`.
    pub fn gaps(&self, policy: &SandboxPolicy) -> Vec<Gap> {
        let mode = policy.mode();
        if mode == SandboxMode::DangerFullAccess {
            return Vec::new();
        }
        report_gaps(&self.facts().doctor, mode, policy.has_network_access())
    }

    /// The refusal when the far end cannot enforce `policy` and best effort was not asked
    /// for.
    pub fn refusal(&self, policy: &SandboxPolicy) -> Option<RemoteError> {
        let required: Vec<String> =
            self.gaps(policy).into_iter().filter(|g| g.required).map(|g| g.what).collect();
        (!required.is_empty()).then(|| RemoteError::CannotEnforce {
            host: self.host().to_owned(),
            mode: policy.mode().as_str(),
            gaps: required,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn json(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    fn named(gaps: &[Gap]) -> Vec<(&str, bool)> {
        gaps.iter().map(|g| (g.what.as_str(), g.required)).collect()
    }

    #[test]
    fn gaps_are_read_for_the_mode_and_the_network() {
        let doctor = json(
            r#"{"modes": {"workspace-write": {
                "not_enforced": [{"what": "Landlock", "required": true}],
                "not_enforced_with_network": [{"what": "socket filter", "required": false}]}}}"#,
        );
        let mode = SandboxMode::WorkspaceWrite;
        assert_eq!(named(&report_gaps(&doctor, mode, false)), [("Landlock", true)]);
        assert_eq!(
            named(&report_gaps(&doctor, mode, true)),
            [("Landlock", true), ("socket filter", false)]
        );
        assert!(report_gaps(&doctor, SandboxMode::ReadOnly, false).is_empty());
        assert!(report_gaps(&Value::Null, mode, true).is_empty());
        let half = json(
            r#"{"modes": {"workspace-write": {
                "not_enforced": "garbled",
                "not_enforced_with_network": [{"what": "socket filter"}]}}}"#,
        );
        assert_eq!(named(&report_gaps(&half, mode, true)), [("socket filter", true)]);
    }

    #[test]
    fn a_malformed_gap_still_counts_and_as_required() {
        let doctor = json(
            r#"{"modes": {"read-only": {
                "not_enforced": [7, {"what": 3, "required": "yes"}, {"what": "seccomp"}]}}}"#,
        );
        assert_eq!(
            named(&report_gaps(&doctor, SandboxMode::ReadOnly, false)),
            [("(unnamed)", true), ("(unnamed)", true), ("seccomp", true)]
        );
    }
}

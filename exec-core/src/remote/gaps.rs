//! What the far end's `doctor` report says it cannot enforce, and the refusal when a policy
//! needs more than that.
//!
//! The report is the far end's word about itself, read as a typed report: fields this side
//! does not know are ignored, but the mode's entry, its lists and each gap's `what` and
//! `required` must be there with the right kind of value. A report that cannot be read that
//! way fails closed: every sandboxed run is refused, with the reason (nothing is assumed
//! enforced there).

use std::collections::BTreeMap;

use cordon_policies::{SandboxMode, SandboxPolicy};
use serde::Deserialize;
use serde_json::Value;

use super::{RemoteError, RemoteLink};
use crate::platform::Gap;
use crate::remote_error::FactsError;

/// The part of a `doctor` report read here: `modes[MODE]`, each mode read only when asked for
/// (a mode this side does not know may look like anything).
#[derive(Debug, Deserialize)]
struct DoctorModes {
    modes: BTreeMap<String, Value>,
}

/// One mode's lists.
#[derive(Debug, Deserialize)]
struct ModeGaps {
    not_enforced: Vec<GapFact>,
    /// Present for the modes whose network can be on.
    #[serde(default)]
    not_enforced_with_network: Option<Vec<GapFact>>,
}

#[derive(Debug, Deserialize)]
struct GapFact {
    what: String,
    required: bool,
}

/// The gaps `doctor` reports for `mode`, with those of the network on when `network`; why the
/// report cannot say, when it cannot.
fn report_gaps(doctor: &Value, mode: SandboxMode, network: bool) -> Result<Vec<Gap>, FactsError> {
    let modes = DoctorModes::deserialize(doctor).map_err(FactsError::Shape)?;
    let name = mode.as_str();
    let report = modes.modes.get(name).ok_or(FactsError::NoMode(name))?;
    let report =
        ModeGaps::deserialize(report).map_err(|source| FactsError::Mode { mode: name, source })?;
    let mut gaps = report.not_enforced;
    if network {
        gaps.extend(report.not_enforced_with_network.ok_or(FactsError::NoNetworkList(name))?);
    }
    Ok(gaps.into_iter().map(|g| Gap { what: g.what, required: g.required }).collect())
}

impl RemoteLink {
    /// What the far end's `doctor` says it cannot enforce for `policy` (its mode, with the
    /// network on or off); an error when its report cannot be read. Empty for
    /// `danger-full-access`.
    pub fn gaps(&self, policy: &SandboxPolicy) -> Result<Vec<Gap>, RemoteError> {
        let mode = policy.mode();
        if mode == SandboxMode::DangerFullAccess {
            return Ok(Vec::new());
        }
        report_gaps(&self.facts().doctor, mode, policy.has_network_access())
            .map_err(|source| RemoteError::UnreadableFacts { host: self.host().to_owned(), source })
    }

    /// The refusal when the far end cannot enforce `policy` and best effort was not asked
    /// for (or its report cannot be read, which best effort does not excuse).
    pub fn refusal(&self, policy: &SandboxPolicy) -> Option<RemoteError> {
        let gaps = match self.gaps(policy) {
            Ok(gaps) => gaps,
            Err(unreadable) => return Some(unreadable),
        };
        let required: Vec<String> =
            gaps.into_iter().filter(|g| g.required).map(|g| g.what).collect();
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
    fn gaps_are_read_for_the_mode_and_the_network_and_unknown_fields_are_ignored() {
        let doctor = json(
            r#"{"kernel": {"landlock_abi": 7}, "future_field": [1, 2],
                "modes": {"workspace-write": {"sandbox": true, "new_list": {},
                "not_enforced": [{"what": "Landlock", "required": true, "since": 9}],
                "not_enforced_with_network": [{"what": "socket filter", "required": false}]},
                "read-only": {"not_enforced": []},
                "some-future-mode": 7}}"#,
        );
        let mode = SandboxMode::WorkspaceWrite;
        assert_eq!(named(&report_gaps(&doctor, mode, false).unwrap()), [("Landlock", true)]);
        assert_eq!(
            named(&report_gaps(&doctor, mode, true).unwrap()),
            [("Landlock", true), ("socket filter", false)]
        );
        assert!(report_gaps(&doctor, SandboxMode::ReadOnly, false).unwrap().is_empty());
    }

    #[test]
    fn a_missing_fact_or_a_value_of_the_wrong_kind_makes_the_report_unreadable() {
        let mode = SandboxMode::WorkspaceWrite;
        let unreadable = [
            "null",
            "{}",
            r#"{"modes": {}}"#,
            r#"{"modes": {"workspace-write": {}}}"#,
            r#"{"modes": {"workspace-write": {"not_enforced": "garbled"}}}"#,
            r#"{"modes": {"workspace-write": {"not_enforced": [7]}}}"#,
            r#"{"modes": {"workspace-write": {"not_enforced": [{"what": "seccomp"}]}}}"#,
            r#"{"modes": {"workspace-write": {"not_enforced": [{"what": 3, "required": true}]}}}"#,
            r#"{"modes": {"workspace-write": {"not_enforced": [{"what": "x", "required": "yes"}]}}}"#,
        ];
        for text in unreadable {
            let why = report_gaps(&json(text), mode, false).unwrap_err().to_string();
            assert!(why.starts_with("doctor"), "{text}: {why}");
        }
        // The network's list is a fact a policy with the network on needs.
        let without = json(r#"{"modes": {"workspace-write": {"not_enforced": []}}}"#);
        assert!(report_gaps(&without, mode, false).unwrap().is_empty());
        assert!(report_gaps(&without, mode, true).is_err());
    }
}

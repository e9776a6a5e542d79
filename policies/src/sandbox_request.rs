//! What a sandbox enforces for one command, as one value: the policy, the directory its
//! writable roots are resolved against, and how strictly the kernel's gaps are treated. The
//! front-end plans it, the Linux helper applies it (`--request JSON`), the remote resolved form
//! carries it to another machine, and the executor's sessions hold it — the same value with the
//! same serde form everywhere, so a new setting is one field here and one step where it is
//! applied.
//!
//! Launch details are not part of it: which descriptor reaches a local proxy, whether the
//! command dies with its parent, the user's HOME on this machine. Those differ between the
//! machine that decides and the one that runs.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::limits::Limits;
use crate::sandbox_policy::SandboxPolicy;

/// One command's sandbox.
///
/// Unknown fields are an error: a peer that does not know a setting must refuse the request
/// rather than run the command without it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxRequest {
    /// What the command may do (network domains included).
    pub policy: SandboxPolicy,
    /// The directory the policy's writable roots and relative paths are resolved against: the
    /// workspace, fixed when a run or an executor starts.
    pub policy_cwd: PathBuf,
    #[serde(default)]
    pub strictness: Strictness,
    #[serde(default)]
    pub mount_view: MountViewRequirement,
    /// Resource limits for the command and everything it starts. Left out of the JSON when
    /// there are none, so a peer that predates limits still understands a request without
    /// them, and refuses one with them.
    #[serde(default, skip_serializing_if = "Limits::is_empty")]
    pub limits: Limits,
    /// What the command may read in the home directories. Left out of the JSON when it is the
    /// default (the allow-list alone), as for limits.
    #[serde(default, skip_serializing_if = "HomeReading::is_default")]
    pub home_reads: HomeReading,
    /// How the command writes its writable roots. Left out of the JSON when it is `direct`,
    /// which a request without the field means, as for limits.
    #[serde(default = "WriteChoice::direct", skip_serializing_if = "WriteChoice::is_direct")]
    pub writes: WriteChoice,
}

impl SandboxRequest {
    /// `policy` resolved against `policy_cwd`, fail-closed, with the mount view where the
    /// kernel allows.
    pub fn new(policy: SandboxPolicy, policy_cwd: PathBuf) -> SandboxRequest {
        SandboxRequest {
            policy,
            policy_cwd,
            strictness: Strictness::default(),
            mount_view: MountViewRequirement::default(),
            limits: Limits::default(),
            home_reads: HomeReading::default(),
            writes: WriteChoice::Direct,
        }
    }

    /// The request as one line of JSON (the helper's `--request` value).
    pub fn to_json(&self) -> String {
        // Every field is a string, a path or an enum, and a path that is not UTF-8 is written
        // lossily rather than failing: serde_json cannot fail here but for such a path, and
        // the helper then resolves a root that does not exist (skipped, so less writable).
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Parses a request; the error names the field serde could not accept.
    pub fn from_json(json: &str) -> Result<SandboxRequest, serde_json::Error> {
        serde_json::from_str(json)
    }
}

/// What a sandboxed command may read in the home directories (the hidden paths apply in
/// either case).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HomeReading {
    /// The entries on the allow-list, and these paths (`~/…` or absolute) besides.
    AllowList { also: Vec<String> },
    /// Every entry.
    Everything,
}

impl Default for HomeReading {
    fn default() -> Self {
        HomeReading::AllowList { also: Vec::new() }
    }
}

impl HomeReading {
    pub fn is_default(&self) -> bool {
        *self == HomeReading::default()
    }
}

/// How a sandboxed command writes its writable roots. Spelled `auto`, `transaction`, `direct`
/// in config files, flags and requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteChoice {
    /// Through a write layer where the machine can make one, else directly (and say why).
    #[default]
    Auto,
    /// Through a write layer whose changes reach the roots through the write gate when the
    /// command is over, or not at all.
    Transaction,
    /// Into the roots, as it runs.
    Direct,
}

impl WriteChoice {
    fn direct() -> WriteChoice {
        WriteChoice::Direct
    }

    /// Whether writes go straight to the roots.
    pub fn is_direct(&self) -> bool {
        *self == WriteChoice::Direct
    }
}

/// Whether a weaker sandbox than the policy asks for may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strictness {
    /// Exit 125 when a required protection cannot be enforced (the default).
    #[default]
    FailClosed,
    /// Run with what the kernel offers and say on stderr what is not enforced.
    BestEffort,
}

/// Whether the mount view (read-only mounts, protected and hidden paths) must be in place.
/// Spelled `auto`, `required`, `off` in config files and requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum MountViewRequirement {
    /// Build it when the kernel allows; what cannot be enforced without it is then decided
    /// by [`Strictness`].
    #[default]
    #[serde(rename = "auto")]
    WhenAvailable,
    /// Its absence is a set-up failure (exit 125).
    #[serde(rename = "required")]
    Required,
    /// Do not build it (for comparison benchmarks and kernels where it misbehaves).
    #[serde(rename = "off")]
    Disabled,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_request_round_trips_through_its_json() {
        let request = SandboxRequest {
            policy: SandboxPolicy::from_json(
                r#"{"type":"workspace-write","writable_roots":["/w"]}"#,
            )
            .unwrap(),
            policy_cwd: PathBuf::from("/srv/repo"),
            strictness: Strictness::BestEffort,
            mount_view: MountViewRequirement::Required,
            limits: Limits { pids: Some(64), ..Limits::default() },
            home_reads: HomeReading::AllowList { also: vec!["~/.sbt".into()] },
            writes: WriteChoice::Transaction,
        };
        let json = request.to_json();
        assert!(json.contains(r#""writes":"transaction""#), "{json}");
        assert!(json.contains(r#""strictness":"best_effort""#), "{json}");
        assert!(json.contains(r#""mount_view":"required""#), "{json}");
        assert!(json.contains(r#""limits":{"pids":64}"#), "{json}");
        assert!(json.contains(r#""home_reads":{"allow_list":{"also":["~/.sbt"]}}"#), "{json}");
        assert_eq!(SandboxRequest::from_json(&json).unwrap(), request);
    }

    #[test]
    fn absent_settings_take_the_fail_closed_defaults() {
        let request = SandboxRequest::from_json(
            r#"{"policy":{"type":"read-only"},"policy_cwd":"/srv/repo"}"#,
        )
        .unwrap();
        assert_eq!(
            request,
            SandboxRequest::new(
                SandboxPolicy::from_json(r#"{"type":"read-only"}"#).unwrap(),
                PathBuf::from("/srv/repo")
            )
        );
    }

    #[test]
    fn a_field_this_version_does_not_know_is_an_error() {
        let error = SandboxRequest::from_json(
            r#"{"policy":{"type":"read-only"},"policy_cwd":"/r","memory_limit":"1G"}"#,
        )
        .unwrap_err();
        assert!(error.to_string().contains("memory_limit"), "{error}");
    }
}

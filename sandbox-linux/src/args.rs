//! The helper's command line, Codex-compatible, and the argv builder the orchestrator uses.
//!
//! The helper's flags are parsed by a short loop rather than clap: the helper runs once per
//! sandboxed command and its whole budget is about one extra `execve` (see the crate docs), and
//! these are five fixed flags with no help text to render.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use cordon_policies::SandboxPolicy;

use crate::error::HelperError;

/// The name the helper personality answers to (`argv[0]`).
pub const HELPER_ARG0: &str = "codex-linux-sandbox";

/// Whether the helper may run with a weaker sandbox than the policy asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strictness {
    /// Exit 125 when a required protection cannot be enforced (the default).
    #[default]
    FailClosed,
    /// Run with what the kernel offers and say on stderr what is not enforced.
    BestEffort,
}

/// Whether the mount view (read-only mounts, protected and hidden paths) must be in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MountViewRequirement {
    /// Build it when the kernel allows; run with Landlock + seccomp alone otherwise.
    #[default]
    WhenAvailable,
    /// Its absence is a set-up failure (exit 125).
    Required,
    /// Do not build it (for comparison benchmarks and kernels where it misbehaves).
    Disabled,
}

/// Whether the command dies with the helper's parent (`PR_SET_PDEATHSIG`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ParentDeath {
    /// The command outlives its parent like any process (the Codex-compatible default).
    #[default]
    Ignore,
    /// SIGKILL when the parent dies (`--die-with-parent`): what the orchestrator and the
    /// executor's PTY sessions ask for, so nothing they started outlives them.
    Kill,
}

/// A parsed helper invocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelperArgs {
    /// The directory writable roots and relative paths are resolved against.
    pub sandbox_policy_cwd: PathBuf,
    /// The policy to enforce.
    pub sandbox_policy: SandboxPolicy,
    /// Where the command runs; the helper's own cwd when absent.
    pub command_cwd: Option<PathBuf>,
    pub strictness: Strictness,
    pub mount_view: MountViewRequirement,
    pub parent_death: ParentDeath,
    /// The command and its arguments (never empty).
    pub command: Vec<OsString>,
}

/// Parses the helper's arguments (without `argv[0]`).
pub fn parse_helper_args(
    args: impl IntoIterator<Item = OsString>,
) -> Result<HelperArgs, HelperError> {
    let mut args = args.into_iter();
    let mut policy_cwd: Option<PathBuf> = None;
    let mut policy_json: Option<OsString> = None;
    let mut command_cwd: Option<PathBuf> = None;
    let mut strictness = Strictness::FailClosed;
    let mut mount_view = MountViewRequirement::WhenAvailable;
    let mut parent_death = ParentDeath::Ignore;
    let mut saw_separator = false;

    while let Some(arg) = args.next() {
        if arg == "--" {
            saw_separator = true;
            break;
        }
        let text = arg.to_string_lossy();
        let (flag, inline_value) = match text.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag.to_owned(), Some(value)),
            _ => (text.to_string(), None),
        };
        let mut value = |name: &str| -> Result<OsString, HelperError> {
            match inline_value {
                Some(v) => Ok(OsString::from(v)),
                None => {
                    args.next().ok_or_else(|| HelperError::Usage(format!("{name} needs a value")))
                }
            }
        };
        match flag.as_str() {
            "--sandbox-policy-cwd" => policy_cwd = Some(PathBuf::from(value(&flag)?)),
            "--sandbox-policy" => policy_json = Some(value(&flag)?),
            "--command-cwd" => command_cwd = Some(PathBuf::from(value(&flag)?)),
            "--best-effort" => strictness = Strictness::BestEffort,
            "--require-mount-view" => mount_view = MountViewRequirement::Required,
            "--no-mount-view" => mount_view = MountViewRequirement::Disabled,
            "--die-with-parent" => parent_death = ParentDeath::Kill,
            // Codex passes this to ask its helper for a bubblewrap mount view; cordon's helper
            // builds its own mount view whenever the kernel allows, so it is accepted as is.
            "--use-bwrap-sandbox" => {}
            other => return Err(HelperError::Usage(format!("unknown argument {other:?}"))),
        }
    }
    if !saw_separator {
        return Err(HelperError::Usage("missing `--` before the command".into()));
    }
    let command: Vec<OsString> = args.collect();
    if command.is_empty() {
        return Err(HelperError::Usage("no command after `--`".into()));
    }
    let sandbox_policy_cwd =
        policy_cwd.ok_or_else(|| HelperError::Usage("--sandbox-policy-cwd is required".into()))?;
    let policy_json =
        policy_json.ok_or_else(|| HelperError::Usage("--sandbox-policy is required".into()))?;
    for cwd in std::iter::once(&sandbox_policy_cwd).chain(command_cwd.as_ref()) {
        if !cwd.is_absolute() {
            return Err(HelperError::Usage(format!("{} must be an absolute path", cwd.display())));
        }
    }
    let policy_json = policy_json
        .to_str()
        .ok_or_else(|| HelperError::Usage("--sandbox-policy is not valid UTF-8".into()))?;
    let sandbox_policy = SandboxPolicy::from_json(policy_json).map_err(HelperError::Policy)?;
    Ok(HelperArgs {
        sandbox_policy_cwd,
        sandbox_policy,
        command_cwd,
        strictness,
        mount_view,
        parent_death,
        command,
    })
}

/// Builds the helper's argv (after `argv[0]`) for a command: what the orchestrator and
/// `cordon sandbox linux` pass to `codex-linux-sandbox`.
pub fn helper_argv(invocation: &HelperArgs) -> Vec<OsString> {
    let mut argv: Vec<OsString> = vec![
        "--sandbox-policy-cwd".into(),
        invocation.sandbox_policy_cwd.clone().into(),
        "--sandbox-policy".into(),
        invocation.sandbox_policy.to_json().into(),
    ];
    if let Some(cwd) = &invocation.command_cwd {
        argv.push("--command-cwd".into());
        argv.push(cwd.clone().into());
    }
    match invocation.strictness {
        Strictness::FailClosed => {}
        Strictness::BestEffort => argv.push("--best-effort".into()),
    }
    match invocation.mount_view {
        MountViewRequirement::WhenAvailable => {}
        MountViewRequirement::Required => argv.push("--require-mount-view".into()),
        MountViewRequirement::Disabled => argv.push("--no-mount-view".into()),
    }
    match invocation.parent_death {
        ParentDeath::Ignore => {}
        ParentDeath::Kill => argv.push("--die-with-parent".into()),
    }
    argv.push("--".into());
    argv.extend(invocation.command.iter().cloned());
    argv
}

/// Whether `argv0` names the helper personality (its file name is `codex-linux-sandbox`).
pub fn is_helper_arg0(argv0: &OsStr) -> bool {
    std::path::Path::new(argv0).file_name().is_some_and(|name| name == HELPER_ARG0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn codex_style_arguments_parse_and_round_trip() {
        let parsed = parse_helper_args(os(&[
            "--sandbox-policy-cwd",
            "/w",
            "--sandbox-policy={\"type\":\"read-only\"}",
            "--command-cwd",
            "/w/sub",
            "--best-effort",
            "--die-with-parent",
            "--",
            "ls",
            "--",
            "-l",
        ]))
        .unwrap();
        assert_eq!(parsed.command, os(&["ls", "--", "-l"]));
        assert_eq!(parsed.command_cwd, Some(PathBuf::from("/w/sub")));
        assert_eq!(parsed.strictness, Strictness::BestEffort);
        assert_eq!(parsed.parent_death, ParentDeath::Kill);
        assert_eq!(parse_helper_args(helper_argv(&parsed)).unwrap(), parsed);
    }

    #[test]
    fn malformed_invocations_are_usage_errors() {
        let policy = r#"{"type":"read-only"}"#;
        for bad in [
            os(&["--sandbox-policy-cwd", "/w", "--sandbox-policy", policy, "ls"]),
            os(&["--sandbox-policy-cwd", "/w", "--sandbox-policy", policy, "--"]),
            os(&["--sandbox-policy-cwd", "rel", "--sandbox-policy", policy, "--", "ls"]),
            os(&["--sandbox-policy-cwd", "/w", "--sandbox-policy", "{", "--", "ls"]),
            os(&["--sandbox-policy", policy, "--", "ls"]),
            os(&["--sandbox-policy-cwd", "/w", "--", "ls"]),
            os(&["--sandbox-policy-cwd", "/w", "--sandbox-policy", policy, "--what", "--", "ls"]),
            os(&["--sandbox-policy-cwd"]),
            os(&[
                "--sandbox-policy-cwd",
                "/w",
                "--sandbox-policy",
                policy,
                "--command-cwd",
                "x",
                "--",
                "ls",
            ]),
        ] {
            assert!(parse_helper_args(bad.clone()).is_err(), "accepted {bad:?}");
        }
    }

    #[test]
    fn arg0_matches_by_file_name() {
        assert!(is_helper_arg0(OsStr::new("codex-linux-sandbox")));
        assert!(is_helper_arg0(OsStr::new("/usr/local/bin/codex-linux-sandbox")));
        assert!(!is_helper_arg0(OsStr::new("cordon")));
        assert!(!is_helper_arg0(OsStr::new("codex-linux-sandbox-x")));
    }
}

//! Picking the sandbox for an attempt and building its command line (DESIGN §7 step 2).

use std::ffi::OsString;
use std::path::PathBuf;

use cordon_policies::{EnvSnapshot, SandboxPolicy};
use cordon_sandbox_linux::{HelperArgs, MountViewRequirement, ParentDeath, Strictness};
use serde::Serialize;

use crate::orchestrator::ExecRequest;
use crate::spawn::CommandSpec;

/// Which sandbox an attempt ran under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxKind {
    None,
    /// The Linux helper (`codex-linux-sandbox`).
    Linux,
    /// Seatbelt (`/usr/bin/sandbox-exec`).
    Seatbelt,
}

impl SandboxKind {
    /// The platform sandbox for a policy, or none for `danger-full-access`.
    pub fn for_policy(policy: &SandboxPolicy) -> SandboxKind {
        match policy {
            SandboxPolicy::DangerFullAccess {} => SandboxKind::None,
            SandboxPolicy::ReadOnly { .. } | SandboxPolicy::WorkspaceWrite(_) => {
                if cfg!(target_os = "macos") { SandboxKind::Seatbelt } else { SandboxKind::Linux }
            }
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SandboxKind::None => "none",
            SandboxKind::Linux => "linux",
            SandboxKind::Seatbelt => "seatbelt",
        }
    }
}

/// How to reach and configure the Linux helper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelperSettings {
    /// The cordon binary (or a `codex-linux-sandbox` symlink to it).
    pub exe: PathBuf,
    pub strictness: Strictness,
    pub mount_view: MountViewRequirement,
}

/// Errors building a sandboxed command line.
#[derive(Debug, thiserror::Error)]
pub enum SandboxSetupError {
    #[error("the sandbox policy cannot be applied: {0}")]
    Policy(#[from] cordon_policies::PolicyError),
    #[error("the command is empty")]
    EmptyCommand,
}

/// The command line that runs the request's command in its cwd under `kind`.
pub fn command_spec(
    kind: SandboxKind,
    request: &ExecRequest,
    helper: &HelperSettings,
) -> Result<CommandSpec, SandboxSetupError> {
    let (policy, command, cwd, env) =
        (&request.sandbox_policy, &request.command, request.cwd.as_path(), &request.env);
    let (program, rest) = command.split_first().ok_or(SandboxSetupError::EmptyCommand)?;
    let argv: Vec<OsString> = command.iter().map(OsString::from).collect();
    let spec = match kind {
        SandboxKind::None => CommandSpec {
            program: PathBuf::from(program),
            arg0: None,
            args: rest.iter().map(OsString::from).collect(),
            env: env.to_vec(),
            cwd: cwd.to_path_buf(),
        },
        SandboxKind::Linux => {
            let args = HelperArgs {
                sandbox_policy_cwd: cwd.to_path_buf(),
                sandbox_policy: policy.clone(),
                command_cwd: Some(cwd.to_path_buf()),
                strictness: helper.strictness,
                mount_view: helper.mount_view,
                // Nothing the orchestrator or a session starts may outlive it.
                parent_death: ParentDeath::Kill,
                command: argv,
            };
            CommandSpec {
                program: helper.exe.clone(),
                arg0: Some(cordon_sandbox_linux::HELPER_ARG0.into()),
                args: cordon_sandbox_linux::helper_argv(&args),
                env: env.to_vec(),
                cwd: cwd.to_path_buf(),
            }
        }
        SandboxKind::Seatbelt => {
            let lookup = |key: &str| env.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
            let snapshot = EnvSnapshot::from_lookup(lookup, Some(nix::unistd::getuid().as_raw()));
            let resolved = policy.resolve(cwd, &snapshot.view(), |p| std::fs::canonicalize(p))?;
            let resolved = cordon_sandbox_macos::with_real_paths(&resolved);
            let profile = cordon_sandbox_macos::seatbelt_profile(&resolved);
            let mut full_env = env.to_vec();
            full_env
                .extend(profile.env.iter().map(|(k, v)| (OsString::from(k), OsString::from(v))));
            let mut args = cordon_sandbox_macos::sandbox_exec_argv(&profile, &argv);
            let program = PathBuf::from(args.remove(0));
            CommandSpec { program, arg0: None, args, env: full_env, cwd: cwd.to_path_buf() }
        }
    };
    Ok(spec)
}

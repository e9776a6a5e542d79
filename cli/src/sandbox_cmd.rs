//! `cordon sandbox linux|macos`: run one command in the platform sandbox, no approval step.

use std::ffi::OsString;
use std::process::ExitCode;

use anyhow::{Context, bail};
use cordon_exec_core::{Launch, ParentDeath, SandboxKind, plan_launch};
use cordon_policies::{SandboxMode, SandboxPolicy};

use crate::flags::{PolicyFlags, SandboxCommand, SandboxRunArgs};
use crate::settings::{Bypass, Settings};

pub fn run(cmd: SandboxCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        SandboxCommand::Linux(args) => run_in(SandboxKind::Linux, args),
        SandboxCommand::Macos(args) => run_in(SandboxKind::Seatbelt, args),
    }
}

/// Plans the command under `kind` and `exec`s the plan: the helper (and then the command), or
/// `sandbox-exec`, replaces this process, so signals, the terminal and the exit status are the
/// command's own with nothing in between.
fn run_in(kind: SandboxKind, args: SandboxRunArgs) -> anyhow::Result<ExitCode> {
    let here = if cfg!(target_os = "macos") { SandboxKind::Seatbelt } else { SandboxKind::Linux };
    if kind != here {
        match kind {
            SandboxKind::Seatbelt => bail!(
                "Seatbelt (sandbox-exec) exists only on macOS; use `cordon sandbox linux` here"
            ),
            SandboxKind::Linux | SandboxKind::None => {
                bail!("the Linux sandbox helper runs only on Linux")
            }
        }
    }
    let no_overrides = PolicyFlags { approval: None, overrides: Vec::new() };
    let settings = Settings::load(&args.sandbox, &no_overrides, SandboxMode::ReadOnly, Bypass::No)?;
    // `--inherit-env` passes cordon's own environment through; otherwise the environment
    // policy applies as it does for `cordon exec`.
    let env: Vec<(OsString, OsString)> =
        if args.inherit_env { std::env::vars_os().collect() } else { settings.command_env().0 };
    let kind = match settings.policy {
        SandboxPolicy::DangerFullAccess {} => SandboxKind::None,
        SandboxPolicy::ReadOnly { .. } | SandboxPolicy::WorkspaceWrite(_) => kind,
    };
    let launch = Launch {
        kind,
        command: args.command,
        cwd: &settings.cwd,
        policy_cwd: &settings.cwd,
        policy: &settings.policy,
        env: &env,
        // cordon execs the plan: the command replaces cordon, there is no parent to follow.
        parent_death: ParentDeath::Ignore,
        // No cordon process stays to run the proxy: with a domain allow-list the command gets
        // loopback only (use `cordon exec` for the proxy).
        proxy_socket: None,
    };
    let plan = plan_launch(&launch, &settings.helper)?;
    let error = plan.exec();
    Err(error).with_context(|| format!("cannot start {}", plan.program.display()))
}

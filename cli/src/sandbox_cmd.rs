//! `cordon sandbox linux|macos`: run one command in the platform sandbox, no approval step.

use std::ffi::OsString;
use std::process::ExitCode;

use anyhow::{Context, bail};
use cordon_exec_core::{
    ExecRequest, Launch, NetworkLog, OutputMode, ParentDeath, SandboxKind, StdinMode, plan_launch,
};
use cordon_policies::{AskForApproval, Escalation, Requester, SandboxMode, SandboxPolicy};

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
    settings.refuse_home_root()?;
    // `--inherit-env` passes cordon's own environment through; otherwise the environment
    // policy applies as it does for `cordon exec`.
    let env: Vec<(OsString, OsString)> =
        if args.inherit_env { std::env::vars_os().collect() } else { settings.command_env().0 };
    let kind = match settings.sandbox.policy {
        SandboxPolicy::DangerFullAccess {} => SandboxKind::None,
        SandboxPolicy::ReadOnly { .. } | SandboxPolicy::WorkspaceWrite(_) => kind,
    };
    // The proxy needs cordon to stay; so do limits, whose cgroup cordon makes, watches and
    // removes, and whose verdict it names.
    let proxy = kind != SandboxKind::None && settings.sandbox.policy.network_domains().is_some();
    if proxy || !settings.sandbox.limits.is_empty() {
        return run_with_proxy(&settings, env, args.command, kind);
    }
    let launch = Launch {
        kind,
        command: args.command,
        cwd: &settings.cwd,
        cwd_pin: settings.cwd_pin.as_ref(),
        sandbox: &settings.sandbox,
        env: &env,
        // cordon execs the plan: the command replaces cordon, there is no parent to follow.
        parent_death: ParentDeath::Ignore,
        // A domain allow-list needs cordon to stay (`run_with_proxy`); nothing else does.
        proxy: None,
    };
    let plan = plan_launch(&launch, &settings.helper)?;
    let error = plan.exec();
    Err(error).with_context(|| format!("cannot start {}", plan.program.display()))
}

/// With a domain allow-list cordon cannot exec the helper: its proxy must serve the command;
/// nor with resource limits, whose cgroup it makes, watches and removes and whose verdict it
/// names.
/// It runs the command as its child instead — one sandboxed attempt, streamed, the terminal
/// handed over while it runs — and exits with the command's status.
fn run_with_proxy(
    settings: &Settings,
    env: Vec<(OsString, OsString)>,
    command: Vec<OsString>,
    kind: SandboxKind,
) -> anyhow::Result<ExitCode> {
    let orchestrator = settings.orchestrator()?;
    let request = ExecRequest {
        command,
        cwd: settings.cwd.clone(),
        cwd_pin: settings.cwd_pin.clone(),
        sandbox: settings.sandbox.clone(),
        approval: AskForApproval::Never,
        escalation: Escalation::UseDefault,
        requester: Requester::Program,
        timeout: None,
        env,
        stdin: if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            StdinMode::Terminal
        } else {
            StdinMode::Inherit
        },
        output: OutputMode::Stream,
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    crate::terminal::note_start();
    crate::terminal::expose(match request.stdin {
        StdinMode::Terminal => crate::terminal::Exposure::Direct,
        StdinMode::Null | StdinMode::Inherit => crate::terminal::Exposure::Relayed,
    });
    let attempt = runtime.block_on(orchestrator.run_sandboxed(&request, kind))?;
    let denied = attempt.network.as_ref().map(NetworkLog::denied_hosts).unwrap_or_default();
    if !denied.is_empty() {
        crate::terminal::say(&[format!(
            "the network allow-list refused {}: allow a host with --allow-domain HOST (config \
             network.allow; docs/network.md)",
            denied.join(", ")
        )]);
    }
    if let cordon_exec_core::ExitKind::LimitExceeded(key) = attempt.exit {
        let value = settings.sandbox.limits.get(key).unwrap_or_default();
        crate::terminal::say(&[format!(
            "the command exceeded its {key} limit ({})",
            key.describe(value)
        )]);
    }
    Ok(crate::output::exit_code(attempt.exit.shell_status()))
}

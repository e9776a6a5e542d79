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
    if args.dry_run {
        crate::presets::look_only();
    }
    let policy_flags = PolicyFlags { approval: None, overrides: args.overrides.clone() };
    let mut settings =
        Settings::load(&args.sandbox, &policy_flags, SandboxMode::ReadOnly, Bypass::No)?;
    settings.refuse_home_root()?;
    // `--inherit-env` passes cordon's own environment through; otherwise the environment
    // policy applies as it does for `cordon exec`.
    let (env, removed) = if args.inherit_env {
        (std::env::vars_os().collect(), Vec::new())
    } else {
        settings.command_env()
    };
    let kind = match settings.sandbox.policy {
        SandboxPolicy::DangerFullAccess {} => SandboxKind::None,
        SandboxPolicy::ReadOnly { .. } | SandboxPolicy::WorkspaceWrite(_) => kind,
    };
    let stay = Stay { timeout: args.timeout, json: args.json };
    if args.dry_run {
        let request = request(&settings, env, args.command, stay);
        let (document, text) = crate::dry_run::sandbox_report(&settings, &request, removed);
        let text = if args.json {
            format!("{}\n", serde_json::to_string_pretty(&document)?)
        } else {
            text
        };
        crate::output::write_stdout(&text)?;
        return Ok(ExitCode::SUCCESS);
    }
    // The proxy needs cordon to stay; so do limits, whose cgroup cordon makes, watches and
    // removes, and whose verdict it names.
    let proxy = kind != SandboxKind::None && settings.sandbox.policy.network_domains().is_some();
    if proxy || stay.needed() || !settings.sandbox.limits.is_empty() {
        return run_as_parent(&settings, env, args.command, kind, stay);
    }
    // Transactional writes are the helper's own: the exec'd helper applies them when the
    // command is over (an applier process of its own), so cordon need not stay for them.
    if kind == SandboxKind::Linux {
        settings.sandbox.writes = settings.helper.writes;
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
        // Nothing else needs cordon to stay (`run_as_parent`): the plan is exec'd.
        proxy: None,
        // No watch: cordon does not stay to look after the run.
        #[cfg(target_os = "linux")]
        walked: None,
        // The helper makes its own write layers (the request's `writes`).
        #[cfg(target_os = "linux")]
        writes_to: None,
        #[cfg(target_os = "linux")]
        temporary_in: None,
    };
    let plan = plan_launch(&launch, &settings.helper)?;
    let error = plan.exec();
    Err(error).with_context(|| format!("cannot start {}", plan.program.display()))
}

/// What makes cordon stay as the command's parent rather than become it.
#[derive(Debug, Clone, Copy)]
struct Stay {
    timeout: Option<std::time::Duration>,
    json: bool,
}

impl Stay {
    fn needed(self) -> bool {
        self.timeout.is_some() || self.json
    }
}

/// One sandboxed attempt of `command` (the approval step does not exist here).
fn request(
    settings: &Settings,
    env: Vec<(OsString, OsString)>,
    command: Vec<OsString>,
    stay: Stay,
) -> ExecRequest {
    ExecRequest {
        command,
        cwd: settings.cwd.clone(),
        cwd_pin: settings.cwd_pin.clone(),
        sandbox: settings.sandbox.clone(),
        approval: AskForApproval::Never,
        escalation: Escalation::UseDefault,
        requester: Requester::Program,
        timeout: stay.timeout,
        env,
        stdin: if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            StdinMode::Terminal
        } else {
            StdinMode::Inherit
        },
        output: if stay.json { OutputMode::Capture } else { OutputMode::Stream },
        interaction: cordon_exec_core::Interaction::Batch,
    }
}

/// When cordon cannot exec the helper — its proxy must serve the command (a domain
/// allow-list), limits need their cgroup made, watched and removed, a timeout must be kept, or
/// `--json` must be written after — it runs the
/// command as its child instead: one sandboxed attempt, streamed (or captured for `--json`),
/// the terminal handed over while it runs, and exits with the command's status.
fn run_as_parent(
    settings: &Settings,
    env: Vec<(OsString, OsString)>,
    command: Vec<OsString>,
    kind: SandboxKind,
    stay: Stay,
) -> anyhow::Result<ExitCode> {
    let orchestrator = settings.orchestrator()?;
    let request = request(settings, env, command, stay);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    crate::terminal::note_start();
    crate::terminal::expose(match (request.stdin, request.output) {
        (StdinMode::Terminal, _) => crate::terminal::Exposure::Direct,
        (StdinMode::Null | StdinMode::Inherit, OutputMode::Stream) => {
            crate::terminal::Exposure::Relayed
        }
        (StdinMode::Null | StdinMode::Inherit, OutputMode::Capture) => {
            crate::terminal::Exposure::Untouched
        }
    });
    let attempt = runtime.block_on(orchestrator.run_sandboxed(&request, kind))?;
    if stay.json {
        let mut document = serde_json::to_value(&attempt)?;
        if let Some(map) = document.as_object_mut() {
            map.insert("schema_version".into(), crate::output::JSON_SCHEMA_VERSION.into());
            map.insert("sandboxed".into(), (attempt.sandbox != SandboxKind::None).into());
        }
        crate::output::write_stdout(&format!("{}\n", serde_json::to_string_pretty(&document)?))?;
    }
    if !attempt.held_back.is_empty() {
        crate::terminal::say(&[cordon_exec_core::held_back_warning(&attempt.held_back)]);
    }
    let denied = attempt.network.as_ref().map(NetworkLog::denied_hosts).unwrap_or_default();
    if !denied.is_empty() {
        crate::terminal::say(&[format!(
            "the network allow-list refused {}: {} (config network.allow; docs/network.md)",
            denied.join(", "),
            cordon_exec_core::refusal_advice(attempt.network.iter().flat_map(|l| &l.connections))
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

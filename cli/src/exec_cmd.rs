//! `cordon exec` and `cordon policy check`: the orchestrator behind a command line.

use std::process::ExitCode;

use cordon_exec_core::predicted_gaps;
use cordon_exec_core::{
    ExecRequest, ExitKind, OutcomeResult, OutputMode, SandboxKind, StdinMode, Verdict,
};
use cordon_exec_core::{RemoteExec, RemoteLink};
use cordon_policies::{Escalation, PreRunDecision, Requester, SandboxMode};

use crate::approver::TerminalApprover;
use crate::flags::{ExecArgs, PolicyCheckArgs};
use crate::settings::{
    Bypass, Settings, Workspace, check_remote_enforcement, print_link_events, remote_target,
};
use crate::terminal::Exposure;

pub fn run_exec(args: ExecArgs) -> anyhow::Result<ExitCode> {
    let bypass = if args.yolo { Bypass::ApprovalsAndSandbox } else { Bypass::No };
    if args.dry_run {
        return dry_run(&args, bypass);
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    // Before anything runs: the terminal as the shell handed it over.
    crate::terminal::note_start();
    let approver = TerminalApprover;
    let Ran { outcome, request, env_removed, gaps } = match &args.host {
        None => run_here(&args, bypass, &runtime, &approver)?,
        Some(host) => runtime.block_on(run_there(&args, bypass, host, &approver))?,
    };
    if args.json {
        let mut document = serde_json::to_value(&outcome)?;
        if let Some(map) = document.as_object_mut() {
            map.insert("schema_version".into(), crate::output::JSON_SCHEMA_VERSION.into());
            // Whether the attempt that gave the result ran in a sandbox (`--yolo`, an
            // approved retry or escalation did not).
            let last = outcome.attempts.last();
            map.insert(
                "sandboxed".into(),
                last.is_some_and(|a| a.sandbox != SandboxKind::None).into(),
            );
            map.insert("sandbox_mode".into(), request.sandbox.policy.mode().as_str().into());
            map.insert("not_enforced".into(), serde_json::to_value(&gaps)?);
            map.insert("env_removed".into(), serde_json::to_value(&env_removed)?);
            map.insert("network_denied".into(), serde_json::to_value(denied_hosts(&outcome))?);
            map.insert(
                "command_display".into(),
                cordon_policies::render_argv(&outcome.command).text.into(),
            );
        }
        crate::output::write_stdout(&format!("{}\n", serde_json::to_string_pretty(&document)?))?;
    }
    // Host names, paths and reasons come from the command, the workspace or a far end: `say`
    // shows them escaped, after the terminal's reset.
    let mut said = Vec::new();
    let denied = denied_hosts(&outcome);
    if outcome.exit_status() != 0 && !denied.is_empty() {
        said.push(format!(
            "the network allow-list refused {}: {} (config network.allow; docs/network.md)",
            denied.join(", "),
            cordon_exec_core::refusal_advice(
                outcome
                    .attempts
                    .iter()
                    .filter_map(|a| a.network.as_ref())
                    .flat_map(|l| &l.connections)
            )
        ));
    }
    for why in outcome.approvals.iter().filter_map(|a| a.rule_not_saved.as_ref()) {
        said.push(why.clone());
    }
    let moved: Vec<String> =
        outcome.attempts.iter().flat_map(|a| &a.moved_aside).map(ToString::to_string).collect();
    if !moved.is_empty() {
        said.push(cordon_exec_core::moved_aside_warning(&moved));
    }
    let attempts = outcome.attempts.len();
    for (number, attempt) in outcome.attempts.iter().enumerate() {
        if attempt.held_back.is_empty() {
            continue;
        }
        let warning = cordon_exec_core::held_back_warning(&attempt.held_back);
        said.push(match attempts {
            1 => warning,
            _ => format!("attempt {} of {attempts}: {warning}", number + 1),
        });
    }
    // A directory that existed before the run cannot be renamed through a write layer:
    // neither a sandbox denial nor the command's fault.
    let renamed_dir = matches!(
        outcome.result,
        OutcomeResult::Completed { verdict: Verdict::RenamedExistingDirectory, .. }
    );
    if renamed_dir {
        let why = match &outcome.result {
            OutcomeResult::Completed { blocked: Some(why), .. } => format!(" ({why})"),
            _ => String::new(),
        };
        said.push(format!(
            "a rename failed with Invalid cross-device link, as renaming a directory that \
             existed before the run does through a write layer (mv and most tools copy instead, \
             git mv does not){why}; if that is what the command did, run it with --writes direct \
             (its writes are then not judged by the write gate), or with -a on-failure to be \
             asked"
        ));
    }
    let not_searched: Vec<&std::path::Path> =
        outcome.attempts.iter().flat_map(|a| &a.not_searched).map(|d| d.as_path()).collect();
    if !not_searched.is_empty() {
        said.push(cordon_exec_core::not_searched_warning(&not_searched));
    }
    match &outcome.result {
        OutcomeResult::Rejected { reason } => said.push(format!("refused: {reason}")),
        OutcomeResult::Completed { verdict: Verdict::RenamedExistingDirectory, .. } => {}
        OutcomeResult::Completed { blocked: Some(why), .. } => {
            let sandbox = outcome.attempts.last().map_or("none", |a| a.sandbox.as_str());
            let mode = request.sandbox.policy.mode();
            said.push(format!(
                "the sandbox blocked this command ({sandbox}, {}); {why}",
                mode.as_str()
            ));
            let blocked = outcome.attempts.last().map(|a| a.blocked.as_slice()).unwrap_or(&[]);
            for blocked in blocked {
                said.push(format!("blocked (judged from the output): {}", blocked.advice()));
            }
            // Each blocked path's advice already names the mode when there is one.
            if mode == SandboxMode::ReadOnly && blocked.is_empty() {
                said.push(
                    "the sandbox is read-only: -s workspace-write lets the command write its \
                     workspace"
                        .to_owned(),
                );
            }
        }
        OutcomeResult::Completed { verdict: Verdict::SandboxSetupFailed, .. } => {
            // Streamed output already showed the helper's own line; `--json` captured it.
            let why = match (args.json, outcome.attempts.last()) {
                (true, Some(attempt)) => cordon_exec_core::setup_failure_line(&attempt.stderr.text)
                    .map(|line| format!(" ({line})"))
                    .unwrap_or_default(),
                _ => String::new(),
            };
            said.push(format!(
                "the sandbox could not be set up, so the command did not run{why}; this is \
                 never retried without the sandbox: see `cordon doctor`, or --best-effort to \
                 accept a weaker sandbox"
            ));
        }
        OutcomeResult::Completed { exit: ExitKind::LimitExceeded(key), .. } => {
            let value = request.sandbox.limits.get(*key).unwrap_or_default();
            said.push(format!(
                "the command exceeded its {key} limit ({}); raise it with --limit {key}=…",
                key.describe(value)
            ));
        }
        OutcomeResult::Completed { blocked: None, .. } => {}
    }
    if !said.is_empty() {
        crate::terminal::say(&said);
    }
    Ok(crate::output::exit_code(outcome.exit_status()))
}

/// `--dry-run`: the decision and the sandbox, on stdout; nothing runs.
fn dry_run(args: &ExecArgs, bypass: Bypass) -> anyhow::Result<ExitCode> {
    crate::presets::look_only();
    let settings =
        Settings::load(&args.sandbox, &args.policy, SandboxMode::WorkspaceWrite, bypass)?;
    settings.refuse_home_root()?;
    let orchestrator = settings.orchestrator()?;
    let (env, env_removed) = settings.command_env();
    let request = exec_request(args, &settings, env, StdinMode::Null);
    let (document, text) =
        crate::dry_run::exec_report(&settings, &orchestrator, &request, env_removed);
    if args.json {
        crate::output::write_stdout(&format!("{}\n", serde_json::to_string_pretty(&document)?))?;
    } else {
        crate::output::write_stdout(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What running the command gave, wherever it ran.
struct Ran {
    outcome: cordon_exec_core::Outcome,
    request: ExecRequest,
    env_removed: Vec<cordon_policies::RemovedVar>,
    /// What the sandbox could not enforce where the command ran (gathered for `--json` only).
    gaps: Vec<cordon_exec_core::Gap>,
}

/// The request for `args` in `settings`' workspace with environment `env`.
fn exec_request(
    args: &ExecArgs,
    settings: &Settings,
    env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    stdin: StdinMode,
) -> ExecRequest {
    ExecRequest {
        command: args.command.clone(),
        cwd: settings.cwd.clone(),
        cwd_pin: settings.cwd_pin.clone(),
        sandbox: settings.sandbox.clone(),
        approval: settings.approval,
        escalation: Escalation::UseDefault,
        // With a terminal to ask on, the person who typed the command is asked after a denial
        // under `on-request` too; without one nobody could answer.
        requester: if TerminalApprover::can_ask() { Requester::Person } else { Requester::Program },
        timeout: args.timeout,
        env,
        stdin,
        output: if args.json { OutputMode::Capture } else { OutputMode::Stream },
        interaction: cordon_exec_core::Interaction::Batch,
    }
}

/// What the run may write to the terminal: directly when the command gets it on its stdin,
/// through the escape filter when its output is streamed.
fn exposure(request: &ExecRequest) -> Exposure {
    match (request.stdin, request.output) {
        (StdinMode::Terminal, _) => Exposure::Direct,
        (StdinMode::Null | StdinMode::Inherit, OutputMode::Stream) => Exposure::Relayed,
        (StdinMode::Null | StdinMode::Inherit, OutputMode::Capture) => Exposure::Untouched,
    }
}

/// On this machine.
fn run_here(
    args: &ExecArgs,
    bypass: Bypass,
    runtime: &tokio::runtime::Runtime,
    approver: &TerminalApprover,
) -> anyhow::Result<Ran> {
    let settings =
        Settings::load(&args.sandbox, &args.policy, SandboxMode::WorkspaceWrite, bypass)?;
    settings.refuse_home_root()?;
    let orchestrator = settings.orchestrator()?;
    let (env, env_removed) = settings.command_env();
    // A terminal is handed to the command for as long as it runs (the approver asks on it
    // before and after); pipes and files go through.
    let stdin = if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        StdinMode::Terminal
    } else {
        StdinMode::Inherit
    };
    let request = exec_request(args, &settings, env, stdin);
    // The prediction forks probe children: only `--json` reports it, so only `--json` pays.
    // Before the run, while this process has one thread (the probes' children need that).
    let predicted = if args.json { predicted_gaps(&request.sandbox.policy) } else { Vec::new() };
    crate::terminal::expose(exposure(&request));
    let outcome = runtime.block_on(orchestrator.run(&request, approver))?;
    let gaps = not_enforced(&outcome, predicted);
    Ok(Ran { outcome, request, env_removed, gaps })
}

/// On another machine (`--host`): decided and approved here, run and sandboxed there.
async fn run_there(
    args: &ExecArgs,
    bypass: Bypass,
    host: &str,
    approver: &TerminalApprover,
) -> anyhow::Result<Ran> {
    let target = remote_target(host, &args.remote, args.timeout)?;
    let (link, events) = RemoteLink::connect(&target).await?;
    print_link_events(events);
    let default_cwd = link.facts().cwd.clone();
    let settings = Settings::load_in(
        &args.sandbox,
        &args.policy,
        (SandboxMode::WorkspaceWrite, bypass),
        Workspace::Remote { default_cwd: &default_cwd },
    )?;
    check_remote_enforcement(&link, &settings)?;
    let orchestrator = settings.orchestrator()?;
    let (env, env_removed) = settings.command_env_from(link.facts().env.clone());
    let request = exec_request(args, &settings, env, StdinMode::Null);
    let remote = RemoteExec { orchestrator: &orchestrator, link: &link };
    crate::terminal::expose(exposure(&request));
    let outcome = remote.run(&request, approver).await;
    link.close().await;
    let outcome = outcome?;
    let sandboxed = outcome.attempts.iter().any(|a| a.sandbox != SandboxKind::None);
    // Read before the run already (an unreadable report refused it then).
    let gaps = if sandboxed {
        link.gaps(&settings.sandbox.policy).unwrap_or_default()
    } else {
        Vec::new()
    };
    Ok(Ran { outcome, request, env_removed, gaps })
}

pub fn run_policy_check(args: PolicyCheckArgs) -> anyhow::Result<ExitCode> {
    crate::presets::look_only();
    let settings =
        Settings::load(&args.sandbox, &args.policy, SandboxMode::WorkspaceWrite, Bypass::No)?;
    let orchestrator = settings.orchestrator()?;
    let (env, _) = settings.command_env();
    let request = ExecRequest {
        command: args.command.iter().map(std::ffi::OsString::from).collect(),
        cwd: settings.cwd.clone(),
        cwd_pin: None,
        sandbox: settings.sandbox.clone(),
        approval: settings.approval,
        escalation: Escalation::UseDefault,
        requester: Requester::Program,
        timeout: None,
        env,
        stdin: StdinMode::Null,
        output: OutputMode::Capture,
        interaction: cordon_exec_core::Interaction::Batch,
    };
    let lookup = orchestrator.program_lookup(&request);
    let assessment =
        orchestrator.assess(&args.command, settings.approval, &Escalation::UseDefault, &lookup);
    let sandbox = match &assessment.decision {
        PreRunDecision::Refuse { .. } => None,
        PreRunDecision::Run { sandbox } | PreRunDecision::Ask { sandbox, .. } => {
            let sandboxed = cordon_exec_core::Sandboxed::from(*sandbox);
            Some(SandboxKind::for_run(&settings.sandbox.policy, sandboxed))
        }
    };
    let report = serde_json::json!({
        "schema_version": crate::output::JSON_SCHEMA_VERSION,
        "command": args.command,
        "approval_policy": settings.approval.as_str(),
        "sandbox_policy": settings.sandbox.policy.mode().as_str(),
        "decision": assessment.decision,
        "would_ask": matches!(assessment.decision, PreRunDecision::Ask { .. }),
        "known_safe": assessment.known_safe,
        "matched_rule": assessment.matched_rule,
        "unreadable": assessment.unreadable,
        "sandbox": sandbox.map(|s| s.as_str()),
    });
    crate::output::write_stdout(&format!("{}\n", serde_json::to_string_pretty(&report)?))?;
    Ok(ExitCode::SUCCESS)
}

/// What the sandbox could not enforce on this machine (`predicted`, the same prediction
/// `cordon doctor` makes), when a sandboxed attempt ran.
fn not_enforced(
    outcome: &cordon_exec_core::Outcome,
    predicted: Vec<cordon_exec_core::Gap>,
) -> Vec<cordon_exec_core::Gap> {
    let sandboxed = outcome.attempts.iter().any(|a| a.sandbox != SandboxKind::None);
    if sandboxed { predicted } else { Vec::new() }
}

/// `host:port` of every destination the proxy refused, over all attempts.
fn denied_hosts(outcome: &cordon_exec_core::Outcome) -> Vec<String> {
    let logs = outcome.attempts.iter().filter_map(|a| a.network.as_ref());
    cordon_exec_core::denied_hosts(logs.flat_map(|log| &log.connections))
}

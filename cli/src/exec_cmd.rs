//! `cordon exec`: the orchestrator behind a command line (DESIGN §8).

use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use cordon_exec_core::{
    ExecRequest, HelperSettings, Orchestrator, OutcomeResult, OutputMode, StdinMode,
};
use cordon_policies::{
    AskForApproval, Escalation, RuleSet, RuleSource, SandboxMode, SandboxPolicy,
};

use crate::approver::TerminalApprover;
use crate::config::{self, Config};
use crate::flags::{ExecArgs, PolicyCheckArgs, PolicyFlags};
use crate::sandbox_cmd::{SandboxRequest, helper_exe, sandbox_request};

/// Everything `exec` and `policy check` share: config, policy, rules, the orchestrator.
pub(crate) struct Prepared {
    pub config: Config,
    pub request: SandboxRequest,
    pub approval: AskForApproval,
    pub orchestrator: Orchestrator,
}

/// `--dangerously-bypass-approvals-and-sandbox` or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bypass {
    No,
    ApprovalsAndSandbox,
}

pub(crate) fn prepare(
    flags: &crate::flags::SandboxFlags,
    policy: &PolicyFlags,
    bypass: Bypass,
) -> anyhow::Result<Prepared> {
    let home = config::cordon_home();
    let config = config::load(home.as_deref(), &policy.overrides)?;
    let mut request = sandbox_request(flags, &config, SandboxMode::WorkspaceWrite)?;
    let approval = if bypass == Bypass::ApprovalsAndSandbox {
        request.policy = SandboxPolicy::DangerFullAccess {};
        AskForApproval::Never
    } else {
        policy
            .approval
            .map(AskForApproval::from)
            .or(config.approval_policy)
            .unwrap_or(AskForApproval::OnRequest)
    };
    if let Some(home) = &home {
        refuse_home_inside_writable_root(home, &request)?;
    }
    let rules = load_rules(home.as_deref(), &request.cwd)?;
    let helper = HelperSettings {
        exe: helper_exe(&config)?,
        strictness: request.strictness,
        mount_view: request.mount_view,
    };
    let orchestrator = Orchestrator::new(rules, home.map(|h| h.join("rules.toml")), helper);
    Ok(Prepared { config, request, approval, orchestrator })
}

/// `allow` rules live in `$CORDON_HOME`; a sandboxed command that could write there could
/// allow itself anything, so that combination is refused.
fn refuse_home_inside_writable_root(home: &Path, request: &SandboxRequest) -> anyhow::Result<()> {
    let Ok(home) = std::fs::canonicalize(home) else { return Ok(()) };
    let env = crate::sandbox_cmd::environment();
    let resolved =
        request.policy.resolve(&request.cwd, &env.view(), |p| std::fs::canonicalize(p))?;
    if let Some(root) = resolved.writable_roots.iter().find(|root| home.starts_with(root)) {
        bail!(
            "CORDON_HOME ({}) lies inside the writable root {}: a sandboxed command could rewrite \
             its own rules; move CORDON_HOME or narrow the writable roots",
            home.display(),
            root.display()
        );
    }
    Ok(())
}

fn load_rules(home: Option<&Path>, cwd: &Path) -> anyhow::Result<RuleSet> {
    let mut rules = RuleSet::default();
    let files = [
        home.map(|h| (h.join("rules.toml"), RuleSource::User)),
        Some((cwd.join(".cordon").join("rules.toml"), RuleSource::Workspace)),
    ];
    for (path, source) in files.into_iter().flatten() {
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        let (parsed, warnings) = RuleSet::parse(&text, source)
            .with_context(|| format!("invalid rules file {}", path.display()))?;
        for warning in warnings {
            eprintln!("cordon: {}: {warning}", path.display());
        }
        rules.merge(parsed);
    }
    Ok(rules)
}

/// The environment the command gets, after the environment policy.
pub(crate) fn command_env(config: &Config) -> Vec<(OsString, OsString)> {
    let vars = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
    config
        .shell_environment_policy
        .apply(vars)
        .into_iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect()
}

pub fn run_exec(args: ExecArgs) -> anyhow::Result<ExitCode> {
    let prepared = prepare(
        &args.sandbox,
        &args.policy,
        if args.yolo { Bypass::ApprovalsAndSandbox } else { Bypass::No },
    )?;
    let request = ExecRequest {
        command: args.command.clone(),
        cwd: prepared.request.cwd.clone(),
        sandbox_policy: prepared.request.policy.clone(),
        approval: prepared.approval,
        escalation: Escalation::UseDefault,
        timeout: args.timeout,
        env: command_env(&prepared.config),
        // A terminal stays with cordon (the approver asks on it); pipes and files go through.
        stdin: if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            StdinMode::Null
        } else {
            StdinMode::Inherit
        },
        output: if args.json { OutputMode::Capture } else { OutputMode::Stream },
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let outcome = runtime.block_on(prepared.orchestrator.run(&request, &TerminalApprover))?;
    if args.json {
        let mut document = serde_json::to_value(&outcome)?;
        if let Some(map) = document.as_object_mut() {
            map.insert(
                "not_enforced".into(),
                serde_json::to_value(not_enforced(&outcome, &request.sandbox_policy))?,
            );
        }
        crate::output::write_stdout(&format!("{}\n", serde_json::to_string_pretty(&document)?))?;
    }
    match &outcome.result {
        OutcomeResult::Rejected { reason } => eprintln!("cordon: refused: {reason}"),
        OutcomeResult::Completed { blocked: Some(why), .. } => {
            let sandbox = outcome.attempts.last().map_or("none", |a| a.sandbox.as_str());
            eprintln!(
                "cordon: the sandbox blocked this command ({sandbox}, {}); {why}",
                request.sandbox_policy.mode().as_str()
            );
        }
        OutcomeResult::Completed { blocked: None, .. } => {}
    }
    Ok(exit_code(outcome.exit_status()))
}

pub fn run_policy_check(args: PolicyCheckArgs) -> anyhow::Result<ExitCode> {
    let prepared = prepare(&args.sandbox, &args.policy, Bypass::No)?;
    let assessment =
        prepared.orchestrator.assess(&args.command, prepared.approval, &Escalation::UseDefault);
    let sandbox = match &assessment.decision {
        cordon_policies::PreRunDecision::Refuse { .. } => None,
        cordon_policies::PreRunDecision::Run { sandboxed }
        | cordon_policies::PreRunDecision::Ask { sandboxed, .. } => Some(if *sandboxed {
            cordon_exec_core::SandboxKind::for_policy(&prepared.request.policy)
        } else {
            cordon_exec_core::SandboxKind::None
        }),
    };
    let report = serde_json::json!({
        "command": args.command,
        "approval_policy": prepared.approval.as_str(),
        "sandbox_policy": prepared.request.policy.mode().as_str(),
        "decision": assessment.decision,
        "would_ask": matches!(assessment.decision, cordon_policies::PreRunDecision::Ask { .. }),
        "known_safe": assessment.known_safe,
        "matched_rule": assessment.matched_rule,
        "sandbox": sandbox.map(|s| s.as_str()),
    });
    crate::output::write_stdout(&format!("{}\n", serde_json::to_string_pretty(&report)?))?;
    Ok(ExitCode::SUCCESS)
}

/// The network setting of a policy, as the Linux sandbox names it.
#[cfg(target_os = "linux")]
pub(crate) fn network_of(policy: &SandboxPolicy) -> cordon_sandbox_linux::seccomp::Network {
    use cordon_sandbox_linux::seccomp::Network;
    if policy.has_network_access() { Network::On } else { Network::Off }
}

/// What the sandbox could not enforce on this machine, when a sandboxed attempt ran (the same
/// prediction `cordon doctor` makes: probes in short-lived child processes).
#[cfg(target_os = "linux")]
pub(crate) fn not_enforced(
    outcome: &cordon_exec_core::Outcome,
    policy: &SandboxPolicy,
) -> Vec<cordon_sandbox_linux::report::Gap> {
    let sandboxed =
        outcome.attempts.iter().any(|a| a.sandbox == cordon_exec_core::SandboxKind::Linux);
    if !sandboxed {
        return Vec::new();
    }
    cordon_sandbox_linux::report::gaps(
        &cordon_sandbox_linux::probe::probe().predicted_enforcement(network_of(policy)),
    )
}

#[cfg(not(target_os = "linux"))]
fn not_enforced(_outcome: &cordon_exec_core::Outcome, _policy: &SandboxPolicy) -> Vec<String> {
    Vec::new()
}

fn exit_code(status: i32) -> ExitCode {
    ExitCode::from(u8::try_from(status).unwrap_or(1))
}

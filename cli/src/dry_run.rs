//! `--dry-run`: what a command would get — the decision, and the sandbox it would run in —
//! without running or creating anything.

use std::fmt::Write as _;
use std::path::PathBuf;

use cordon_exec_core::{ExecRequest, Orchestrator, SandboxKind, Sandboxed};
use cordon_policies::{Escalation, PreRunDecision, RemovedVar, SandboxPolicy, secret_file};
use serde::Serialize;
use serde_json::json;

use crate::settings::Settings;

/// The sandbox a run would get, as far as this machine can tell before it starts.
#[derive(Debug, Serialize)]
pub struct SandboxPlan {
    /// `linux`, `seatbelt` or `none`.
    pub kind: &'static str,
    pub mode: &'static str,
    pub cwd: PathBuf,
    /// Canonical writable roots (empty when nothing may be written).
    pub writable_roots: Vec<PathBuf>,
    /// `off`, `on`, or `domains` (only `allowed_domains`, through cordon's proxy).
    pub network: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_domains: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub denied_domains: Vec<String>,
    /// Read-only inside every writable root (relative names) or where they are (absolute).
    pub protected_paths: Vec<String>,
    /// The hidden paths that exist here (the rest of the list is hidden too, if it appears).
    pub hidden_here: Vec<HiddenPath>,
    pub hidden_entries: usize,
    /// Entries of the home directories that are not on the allow-list of what a sandboxed
    /// command may read there.
    pub home_hidden: Vec<PathBuf>,
    /// Places granted although an entry the list hides holds them (where an allowed link
    /// leads, git's includes, `PATH` directories and their programs' installations, `--unhide`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub home_granted: Vec<PathBuf>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allowed_unix_sockets: Vec<PathBuf>,
    /// `auto`, `required` or `off`.
    pub mount_view: String,
    /// `fail_closed` (exit 125 when the kernel cannot enforce) or `best_effort`.
    pub strictness: String,
    /// Environment variables the command would not get (names only).
    pub environment_removed: Vec<RemovedVar>,
    /// Resource limits, `key=value` (docs/limits.md).
    pub limits: Vec<String>,
    /// Writable roots that do not exist yet (a preset's cache, made by the first real run).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub roots_created_on_first_run: Vec<PathBuf>,
    /// Variables only a sandboxed run gets (a preset's cache and registry), names only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sandbox_variables: Vec<String>,
    /// `direct` (the command writes its roots as it runs) or `transaction` (through the write
    /// gate when it is over).
    pub writes: cordon_exec_core::WriteMode,
    /// Why the roots are written directly where `auto` wanted a transaction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writes_direct_because: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct HiddenPath {
    pub path: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<&'static str>,
}

/// The plan for `request` under `settings`, run as `sandboxed`.
pub fn plan(
    settings: &Settings,
    request: &ExecRequest,
    sandboxed: Sandboxed,
    environment_removed: Vec<RemovedVar>,
) -> SandboxPlan {
    let request = request.under(sandboxed);
    let policy = &request.sandbox.policy;
    let kind = match sandboxed {
        Sandboxed::No => SandboxKind::None,
        Sandboxed::Yes | Sandboxed::ReadOnly => SandboxKind::for_run(policy, sandboxed),
    };
    let view = settings.helper.user_view.view();
    let resolved = policy.resolve(&request.cwd, &view, |p| std::fs::canonicalize(p)).ok();
    let sandbox_runs = kind != SandboxKind::None;
    let domains = policy.network_domains();
    let network = match (sandbox_runs, policy, domains) {
        (false, _, _) | (true, SandboxPolicy::DangerFullAccess {}, _) => "on",
        (true, _, Some(_)) => "domains",
        (true, _, None) if resolved.as_ref().is_some_and(|r| r.network_access) => "on",
        (true, _, None) => "off",
    };
    let (writable_roots, protected_paths, hidden, sockets) = match (&resolved, sandbox_runs) {
        (Some(r), true) => (
            r.writable_roots.clone(),
            r.protected_paths.clone(),
            r.hidden_paths.clone(),
            r.allowed_sockets.clone(),
        ),
        _ => Default::default(),
    };
    let hidden_entries = hidden.len();
    let home = match (&resolved, sandbox_runs) {
        (Some(r), true) => {
            cordon_exec_core::home_list_plan(&request.sandbox, &settings.helper.user_view, r)
        }
        _ => cordon_policies::HomeReads::default(),
    };
    let hidden_here = hidden
        .into_iter()
        .filter(|path| std::fs::symlink_metadata(path).is_ok())
        .map(|path| {
            let tool = settings
                .helper
                .user_view
                .home
                .as_ref()
                .and_then(|home| path.strip_prefix(home).ok())
                .and_then(|rest| secret_file(&format!("~/{}", rest.display())))
                .map(|entry| entry.tool);
            HiddenPath { path, tool }
        })
        .collect();
    // Under transactional writes the repositories are not searched: their files are judged
    // by the write gate after the run instead of bound read-only.
    let planned = cordon_exec_core::planned_writes(&settings.helper, &request, kind);
    let transaction = planned == cordon_exec_core::PlannedWrites::Transaction;
    let protected_paths: Vec<String> = protected_paths
        .into_iter()
        .filter(|path| !(transaction && path.starts_with(".git/")))
        .collect();
    SandboxPlan {
        kind: kind.as_str(),
        mode: if sandbox_runs { policy.mode().as_str() } else { "danger-full-access" },
        cwd: request.cwd.clone(),
        writable_roots,
        network,
        allowed_domains: domains.map(|d| d.allow.clone()).unwrap_or_default(),
        denied_domains: domains.map(|d| d.deny.clone()).unwrap_or_default(),
        protected_paths,
        hidden_here,
        hidden_entries,
        home_hidden: home.hidden,
        home_granted: home.granted,
        allowed_unix_sockets: sockets,
        mount_view: enum_text(&request.sandbox.mount_view),
        strictness: enum_text(&request.sandbox.strictness),
        environment_removed,
        roots_created_on_first_run: match (policy, sandbox_runs) {
            (SandboxPolicy::WorkspaceWrite(ww), true) => ww
                .writable_roots
                .iter()
                .filter(|root| root.is_absolute() && std::fs::symlink_metadata(root).is_err())
                .cloned()
                .collect(),
            _ => Vec::new(),
        },
        sandbox_variables: if sandbox_runs {
            settings
                .helper
                .sandboxed_env
                .iter()
                .map(|(name, _)| name.to_string_lossy().into_owned())
                .collect()
        } else {
            Vec::new()
        },
        limits: request
            .sandbox
            .limits
            .iter()
            .map(|(key, value)| format!("{}={}", key.as_str(), key.describe(value)))
            .collect(),
        writes: if transaction {
            cordon_exec_core::WriteMode::Transaction
        } else {
            cordon_exec_core::WriteMode::Direct
        },
        writes_direct_because: match planned {
            cordon_exec_core::PlannedWrites::DirectBecause(why) => Some(why.to_string()),
            _ => None,
        },
    }
}

/// A serde enum's own spelling (what the config file takes).
fn enum_text<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(text)) => text,
        _ => String::new(),
    }
}

/// `cordon exec --dry-run`: the decision for `request` and the sandbox it would run in.
pub fn exec_report(
    settings: &Settings,
    orchestrator: &Orchestrator,
    request: &ExecRequest,
    environment_removed: Vec<RemovedVar>,
) -> (serde_json::Value, String) {
    let words: Vec<String> =
        request.command.iter().map(|w| w.to_string_lossy().into_owned()).collect();
    let lookup = orchestrator.program_lookup(request);
    let assessment =
        orchestrator.assess(&words, settings.approval, &Escalation::UseDefault, &lookup);
    let sandboxed = match &assessment.decision {
        PreRunDecision::Refuse { .. } => None,
        PreRunDecision::Run { sandbox } | PreRunDecision::Ask { sandbox, .. } => {
            Some(Sandboxed::from(*sandbox))
        }
    };
    let plan = sandboxed.map(|s| plan(settings, request, s, environment_removed));
    let document = json!({
        "schema_version": crate::output::JSON_SCHEMA_VERSION,
        "dry_run": true,
        "command": words,
        "approval_policy": settings.approval.as_str(),
        "decision": assessment.decision,
        "known_safe": assessment.known_safe,
        "matched_rule": assessment.matched_rule,
        "unreadable": assessment.unreadable,
        "sandbox": plan,
    });
    let mut text = String::new();
    let shown = cordon_policies::render_argv(&request.command).text;
    let _ = writeln!(text, "dry run: nothing runs, nothing is created");
    let _ = writeln!(text, "command:      {shown}");
    let decision = match &assessment.decision {
        PreRunDecision::Run { .. } => {
            format!("run without asking ({})", settings.approval.as_str())
        }
        PreRunDecision::Ask { reason, .. } => format!("ask first: {reason}"),
        PreRunDecision::Refuse { reason } => format!("refused: {reason}"),
    };
    let _ = writeln!(text, "decision:     {decision}");
    if let Some(plan) = &plan {
        render_plan(&mut text, plan);
    }
    (document, text)
}

/// `cordon sandbox … --dry-run`: the sandbox alone (no approval step there).
pub fn sandbox_report(
    settings: &Settings,
    request: &ExecRequest,
    environment_removed: Vec<RemovedVar>,
) -> (serde_json::Value, String) {
    let plan = plan(settings, request, Sandboxed::Yes, environment_removed);
    let words: Vec<String> =
        request.command.iter().map(|w| w.to_string_lossy().into_owned()).collect();
    let document = json!({
        "schema_version": crate::output::JSON_SCHEMA_VERSION,
        "dry_run": true,
        "command": words,
        "sandbox": plan,
    });
    let mut text = String::new();
    let _ = writeln!(text, "dry run: nothing runs, nothing is created");
    let _ = writeln!(text, "command:      {}", cordon_policies::render_argv(&request.command).text);
    render_plan(&mut text, &plan);
    (document, text)
}

fn render_plan(text: &mut String, plan: &SandboxPlan) {
    let show = |path: &PathBuf| cordon_policies::render_text(&path.display().to_string()).text;
    let _ = writeln!(text, "sandbox:      {} ({})", plan.mode, plan.kind);
    let _ = writeln!(text, "cwd:          {}", show(&plan.cwd));
    if plan.kind == "none" {
        let _ = writeln!(text, "              no sandbox: the command may do anything you may");
    } else {
        let roots: Vec<String> = plan.writable_roots.iter().map(show).collect();
        let roots = if roots.is_empty() { "nothing".to_owned() } else { roots.join(", ") };
        let _ = writeln!(text, "writable:     {roots}");
        match (&plan.writes, &plan.writes_direct_because) {
            (cordon_exec_core::WriteMode::Transaction, _) => {
                let _ = writeln!(
                    text,
                    "writes:       transaction: applied when the command is over, through the \
                     write gate (its /tmp and $TMPDIR: the workspace's own)"
                );
            }
            (cordon_exec_core::WriteMode::Direct, Some(why)) => {
                let _ = writeln!(
                    text,
                    "writes:       direct (no write layer here: {}); the workspace is searched \
                     for repositories before and after the run instead",
                    cordon_policies::render_text(why).text
                );
            }
            (cordon_exec_core::WriteMode::Direct, None) if plan.mode == "workspace-write" => {
                let _ = writeln!(text, "writes:       direct");
            }
            (cordon_exec_core::WriteMode::Direct, None) => {}
        }
        if !plan.roots_created_on_first_run.is_empty() {
            let later: Vec<String> = plan.roots_created_on_first_run.iter().map(show).collect();
            let _ =
                writeln!(text, "              and, created by the first run: {}", later.join(", "));
        }
        if !plan.sandbox_variables.is_empty() {
            let _ = writeln!(text, "sets:         {}", plan.sandbox_variables.join(", "));
        }
        let network = match plan.network {
            "domains" => {
                let mut line =
                    format!("only {} (through cordon's proxy)", plan.allowed_domains.join(", "));
                if !plan.denied_domains.is_empty() {
                    let _ = write!(line, "; never {}", plan.denied_domains.join(", "));
                }
                line
            }
            other => other.to_owned(),
        };
        let _ = writeln!(text, "network:      {network}");
        if !plan.protected_paths.is_empty() {
            let _ = writeln!(
                text,
                "protected:    {} (read-only inside every writable root)",
                plan.protected_paths.join(", ")
            );
        }
        let here: Vec<String> = plan
            .hidden_here
            .iter()
            .map(|h| match h.tool {
                Some(tool) => format!("{} ({tool})", show(&h.path)),
                None => show(&h.path),
            })
            .collect();
        let _ = writeln!(
            text,
            "hidden:       {} of {} hidden paths (the catalogue's entries expanded for this user's \
             $HOME, XDG and tool variables) exist here{}{}",
            here.len(),
            plan.hidden_entries,
            if here.is_empty() { "" } else { ": " },
            here.join(", ")
        );
        if !plan.home_hidden.is_empty() {
            let entries: Vec<String> = plan.home_hidden.iter().map(show).collect();
            let _ = writeln!(
                text,
                "home list:    {} entries of your home directories hidden, not on the allow-list \
                 of what sandboxed commands read there (--unhide PATH, docs/secrets.md): {}",
                entries.len(),
                entries.join(", ")
            );
        }
        if !plan.home_granted.is_empty() {
            let places: Vec<String> = plan.home_granted.iter().map(show).collect();
            let _ = writeln!(
                text,
                "granted:      {} (readable although a hidden entry holds them)",
                places.join(", ")
            );
        }
        if !plan.allowed_unix_sockets.is_empty() {
            let sockets: Vec<String> = plan.allowed_unix_sockets.iter().map(show).collect();
            let _ =
                writeln!(text, "sockets:      {} (reachable although hidden)", sockets.join(", "));
        }
        let _ = writeln!(
            text,
            "mount view:   {}; when the kernel cannot enforce: {}",
            plan.mount_view,
            if plan.strictness == "best_effort" {
                "run weaker, saying what is missing"
            } else {
                "refuse (exit 125)"
            }
        );
    }
    if !plan.limits.is_empty() {
        let _ = writeln!(text, "limits:       {}", plan.limits.join(", "));
    }
    let removed: Vec<&str> = plan.environment_removed.iter().map(|r| r.name.as_str()).collect();
    let _ = writeln!(
        text,
        "environment:  {} removed{}{}",
        removed.len(),
        if removed.is_empty() { "" } else { ": " },
        removed.join(", ")
    );
}

//! The orchestrator (DESIGN §7): decide → approve → pick sandbox → spawn → classify → maybe
//! retry once without the sandbox. [`Orchestrator::run`] is that flow in one function.

use std::collections::HashSet;
use std::ffi::OsString;
use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use cordon_policies::{
    AskForApproval, Assessment, Escalation, PreRunDecision, RetryDecision, RuleSet, SandboxPolicy,
    allow_rule_toml, assess, retry_after_denial,
};
use serde::Serialize;

use crate::capture::Captured;
use crate::classify::{ExitKind, Verdict, classify};
use crate::sandbox::{HelperSettings, SandboxKind, SandboxSetupError, command_spec};
use crate::spawn::{OutputMode, RunOptions, StdinMode, run_process};

/// One command to run.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    pub command: Vec<String>,
    pub cwd: PathBuf,
    pub sandbox_policy: SandboxPolicy,
    pub approval: AskForApproval,
    pub escalation: Escalation,
    pub timeout: Option<Duration>,
    /// The complete environment of the command (already filtered by the environment policy).
    pub env: Vec<(OsString, OsString)>,
    pub stdin: StdinMode,
    pub output: OutputMode,
}

/// When approval is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStage {
    BeforeRun,
    RetryWithoutSandbox,
}

/// A question for the user (or the harness).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApprovalRequest {
    pub command: Vec<String>,
    pub cwd: PathBuf,
    pub reason: String,
    pub stage: ApprovalStage,
    /// The prefix an "always allow" answer would persist.
    pub prefix: Vec<String>,
}

/// The answers of DESIGN §4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalAnswer {
    Approved,
    ApprovedForSession,
    AlwaysAllowPrefix,
    Denied,
}

/// Asks whether to run something. The CLI asks on the terminal; the executor sends a protocol
/// message.
pub trait Approver {
    fn ask(&self, request: &ApprovalRequest) -> impl Future<Output = ApprovalAnswer>;
}

/// An approval that was asked, and its answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApprovalRecord {
    pub stage: ApprovalStage,
    pub reason: String,
    pub answer: ApprovalAnswer,
}

/// One run of the command.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attempt {
    pub sandbox: SandboxKind,
    pub exit: ExitKind,
    pub duration_ms: f64,
    pub verdict: Verdict,
    pub stdout: Captured,
    pub stderr: Captured,
}

/// How the request ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum OutcomeResult {
    /// Nothing ran: a forbidden rule, a denied approval, or an escalation under `never`.
    Rejected { reason: String },
    /// The last attempt finished. `blocked` explains a sandbox denial that was not retried.
    Completed { exit: ExitKind, verdict: Verdict, blocked: Option<String> },
}

/// Everything that happened for one request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    pub command: Vec<String>,
    pub cwd: PathBuf,
    pub assessment: Assessment,
    pub approvals: Vec<ApprovalRecord>,
    pub attempts: Vec<Attempt>,
    pub result: OutcomeResult,
}

impl Outcome {
    /// The exit status for `cordon exec`: the last attempt's (128+N for a signal, 124 for a
    /// timeout), 125 for a refusal.
    pub fn exit_status(&self) -> i32 {
        match &self.result {
            OutcomeResult::Rejected { .. } => 125,
            OutcomeResult::Completed { exit, .. } => exit.shell_status(),
        }
    }
}

/// Why the orchestrator could not even try.
#[derive(Debug, thiserror::Error)]
pub enum OrchestratorError {
    #[error(transparent)]
    Setup(#[from] SandboxSetupError),
    #[error("cannot start {program}: {source}")]
    Spawn { program: PathBuf, source: std::io::Error },
}

/// Long-lived state: rules, the helper, approvals cached for this session.
#[derive(Debug)]
pub struct Orchestrator {
    rules: Mutex<RuleSet>,
    /// `$CORDON_HOME/rules.toml`, where "always allow" answers are written.
    user_rules_path: Option<PathBuf>,
    helper: HelperSettings,
    session_approvals: Mutex<HashSet<(Vec<String>, PathBuf)>>,
}

impl Orchestrator {
    pub fn new(rules: RuleSet, user_rules_path: Option<PathBuf>, helper: HelperSettings) -> Self {
        Orchestrator {
            rules: Mutex::new(rules),
            user_rules_path,
            helper,
            session_approvals: Mutex::new(HashSet::new()),
        }
    }

    /// What would happen to `command` before running (for `cordon policy check`).
    pub fn assess(
        &self,
        command: &[String],
        approval: AskForApproval,
        escalation: &Escalation,
    ) -> Assessment {
        let rules = self.rules.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        assess(command, approval, &rules, escalation)
    }

    /// Runs `request` through the whole flow.
    pub async fn run(
        &self,
        request: &ExecRequest,
        approver: &impl Approver,
    ) -> Result<Outcome, OrchestratorError> {
        // 1. Decide, and ask when needed.
        let mut approvals = Vec::new();
        let (assessment, authorized) = self.authorize(request, approver, &mut approvals).await;
        let mut outcome = Outcome {
            command: request.command.clone(),
            cwd: request.cwd.clone(),
            assessment,
            approvals,
            attempts: Vec::new(),
            result: OutcomeResult::Rejected { reason: String::new() },
        };
        let sandboxed = match authorized {
            Ok(sandboxed) => sandboxed,
            Err(reason) => {
                outcome.result = OutcomeResult::Rejected { reason };
                return Ok(outcome);
            }
        };

        // 2-4. Pick the sandbox, spawn, classify.
        let sandbox = if sandboxed {
            SandboxKind::for_policy(&request.sandbox_policy)
        } else {
            SandboxKind::None
        };
        let first = self.attempt(request, sandbox).await?;
        let (exit, verdict) = (first.exit, first.verdict);
        outcome.attempts.push(first);
        if verdict != Verdict::LikelySandboxDenied {
            outcome.result = OutcomeResult::Completed { exit, verdict, blocked: None };
            return Ok(outcome);
        }

        // 5. A likely denial: retry once without the sandbox if the policy lets us ask.
        let why_not = match retry_after_denial(request.approval) {
            RetryDecision::NoRetry { why } => why,
            RetryDecision::AskToRetryUnsandboxed => {
                let reason = format!(
                    "the {} sandbox probably blocked this command (exit {}); run it again without the sandbox?",
                    sandbox.as_str(),
                    exit.shell_status()
                );
                if self
                    .approve(
                        request,
                        reason,
                        ApprovalStage::RetryWithoutSandbox,
                        approver,
                        &mut outcome.approvals,
                    )
                    .await
                {
                    let retry = self.attempt(request, SandboxKind::None).await?;
                    let (exit, verdict) = (retry.exit, retry.verdict);
                    outcome.attempts.push(retry);
                    outcome.result = OutcomeResult::Completed { exit, verdict, blocked: None };
                    return Ok(outcome);
                }
                "the retry without the sandbox was not approved".to_owned()
            }
        };
        outcome.result = OutcomeResult::Completed { exit, verdict, blocked: Some(why_not) };
        Ok(outcome)
    }

    /// Step 1 alone: decide, ask when needed. `Ok(sandboxed)` to run (and whether in the
    /// sandbox), `Err(reason)` when refused. Interactive sessions use this and spawn themselves.
    pub async fn authorize(
        &self,
        request: &ExecRequest,
        approver: &impl Approver,
        approvals: &mut Vec<ApprovalRecord>,
    ) -> (Assessment, Result<bool, String>) {
        let assessment = self.assess(&request.command, request.approval, &request.escalation);
        let authorized = match assessment.decision.clone() {
            PreRunDecision::Refuse { reason } => Err(reason),
            PreRunDecision::Run { sandboxed } => Ok(sandboxed),
            PreRunDecision::Ask { reason, sandboxed } => {
                if self
                    .approve(request, reason, ApprovalStage::BeforeRun, approver, approvals)
                    .await
                {
                    Ok(sandboxed)
                } else {
                    Err("approval denied".into())
                }
            }
        };
        (assessment, authorized)
    }

    /// The helper settings (for spawners outside this module).
    pub fn helper(&self) -> &HelperSettings {
        &self.helper
    }

    /// Asks (unless this exact command was approved for the session) and records the answer.
    async fn approve(
        &self,
        request: &ExecRequest,
        reason: String,
        stage: ApprovalStage,
        approver: &impl Approver,
        approvals: &mut Vec<ApprovalRecord>,
    ) -> bool {
        let key = (request.command.clone(), request.cwd.clone());
        if self
            .session_approvals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(&key)
        {
            return true;
        }
        let question = ApprovalRequest {
            command: request.command.clone(),
            cwd: request.cwd.clone(),
            reason: reason.clone(),
            stage,
            prefix: suggested_prefix(&request.command),
        };
        let answer = approver.ask(&question).await;
        approvals.push(ApprovalRecord { stage, reason, answer });
        match answer {
            ApprovalAnswer::Denied => false,
            ApprovalAnswer::Approved => true,
            ApprovalAnswer::ApprovedForSession => {
                self.session_approvals
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(key);
                true
            }
            ApprovalAnswer::AlwaysAllowPrefix => {
                self.persist_allow_rule(&question.prefix);
                true
            }
        }
    }

    /// Appends an allow rule to `$CORDON_HOME/rules.toml` and applies it to this session.
    /// A write failure is reported on stderr; the approval itself still stands.
    fn persist_allow_rule(&self, prefix: &[String]) {
        let text = allow_rule_toml(prefix);
        if let Ok((parsed, _)) = RuleSet::parse(&text, cordon_policies::RuleSource::User) {
            self.rules.lock().unwrap_or_else(std::sync::PoisonError::into_inner).merge(parsed);
        }
        let Some(path) = &self.user_rules_path else { return };
        if let Err(e) = append(path, &text) {
            eprintln!("cordon: cannot save the rule to {}: {e}", path.display());
        }
    }

    async fn attempt(
        &self,
        request: &ExecRequest,
        sandbox: SandboxKind,
    ) -> Result<Attempt, OrchestratorError> {
        let spec = command_spec(sandbox, request, &self.helper)?;
        let options =
            RunOptions { stdin: request.stdin, output: request.output, timeout: request.timeout };
        let result = run_process(&spec, &options)
            .await
            .map_err(|source| OrchestratorError::Spawn { program: spec.program.clone(), source })?;
        let (stdout, stderr) = (result.stdout.text(), result.stderr.text());
        let verdict = classify(sandbox, result.exit, &stdout, &stderr);
        Ok(Attempt {
            sandbox,
            exit: result.exit,
            duration_ms: result.duration.as_secs_f64() * 1000.0,
            verdict,
            stdout: result.stdout.captured(),
            stderr: result.stderr.captured(),
        })
    }
}

fn append(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(text.as_bytes())
}

/// The prefix an "always allow" answer persists: the program, plus its subcommand when the
/// second word looks like one (`cargo test`, `git push`), never file arguments or flags.
pub fn suggested_prefix(command: &[String]) -> Vec<String> {
    let mut prefix: Vec<String> = command.iter().take(1).cloned().collect();
    if let Some(second) = command.get(1) {
        let subcommand = !second.is_empty()
            && second.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            && !second.starts_with('-');
        if subcommand {
            prefix.push(second.clone());
        }
    }
    prefix
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn suggested_prefixes_stop_before_files_and_flags() {
        assert_eq!(suggested_prefix(&words("cargo test --release")), words("cargo test"));
        assert_eq!(suggested_prefix(&words("touch f")), words("touch f"));
        assert_eq!(suggested_prefix(&words("rm -rf /")), words("rm"));
        assert_eq!(suggested_prefix(&words("cat ./x.txt")), words("cat"));
        assert_eq!(suggested_prefix(&[]), Vec::<String>::new());
    }
}

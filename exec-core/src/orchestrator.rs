//! The orchestrator: decide → approve → pick sandbox → spawn → classify → maybe
//! retry once without the sandbox. [`Orchestrator::run`] is that flow in one function.

use std::collections::HashSet;
use std::ffi::OsString;
use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use cordon_policies::{
    AskForApproval, AssessInput, Assessment, Escalation, MountViewRequirement, PreRunDecision,
    RetryDecision, RuleSet, SandboxMode, SandboxRequest, allow_rule_toml, always_allow_prefix,
    assess, retry_after_denial,
};
use serde::{Deserialize, Serialize};

use crate::capture::Captured;
use crate::classify::{
    Blocked, DenialContext, ExitKind, Finished, Verdict, WriteRefusal, classify, command_exit,
    explain_output, is_denial_evidence, setup_failure_line,
};
use crate::launch::{HelperSettings, SandboxKind, Sandboxed};
use crate::network_proxy::NetworkLog;
use crate::program_trust::ProgramLookup;
use crate::resolved::ApprovalState;
use crate::runner::{AttemptRun, AttemptWrites, LocalRunner, MovedAside, Runner};

pub use crate::request::{ExecRequest, Interaction};
pub use crate::runner::OrchestratorError;

/// What step 1 (decide, and ask when needed) concluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Authorization {
    /// Run, inside the sandbox or not.
    Run { assessment: Assessment, sandboxed: Sandboxed },
    /// Do not run: a forbidden rule, a denied approval, an escalation under `never`.
    Refused { assessment: Assessment, reason: String },
}

/// When approval is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalStage {
    BeforeRun,
    RetryWithoutSandbox,
    /// Again in the sandbox, writing the roots directly: the transactional attempt could not
    /// rename a directory that existed before it.
    RetryWithDirectWrites,
}

/// A question for the user (or the harness).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApprovalRequest {
    /// The exact argv that runs if approved (render it with `render_argv`).
    #[serde(serialize_with = "crate::lossy::lossy_texts")]
    pub command: Vec<OsString>,
    pub cwd: PathBuf,
    /// Whether the approved command is a terminal session the caller types into while it runs.
    pub interaction: Interaction,
    pub reason: String,
    pub stage: ApprovalStage,
    /// The sandbox mode the command runs under if approved (`danger-full-access` for a
    /// retry or an escalation: no sandbox).
    pub sandbox_mode: SandboxMode,
    /// For a retry: the output lines that made cordon think the sandbox blocked the first
    /// attempt (which already ran and had its effects). Empty before a first run.
    pub evidence: Vec<String>,
    /// The prefix an "always allow" answer would persist; `None` when no prefix rule could
    /// cover exactly what was approved (a bare shell, wrapper or interpreter).
    pub prefix: Option<Vec<String>>,
    /// The machine the command runs on when it is not this one (`[user@]host[:port]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// What made cordon ask, for advice when nobody can answer.
    #[serde(skip)]
    pub cause: AskCause,
}

/// What made cordon ask.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AskCause {
    /// A `prompt` rule (or any rule that might apply to a command cordon cannot read): asked
    /// under every approval policy, refused under `never`.
    Rule,
    /// The command asks to run outside the sandbox.
    Escalation,
    /// `untrusted`, and the command is not known-safe (or its read-only sandbox could not be
    /// set up).
    #[default]
    Untrusted,
    /// The sandbox likely blocked the command: run it again without?
    Retry,
}

/// The answers to an approval question: yes once, yes for this session (the same argv, cwd,
/// stage and sandboxing), always allow this prefix (written as a rule), no.
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
    /// Why an "always allow" rule could not be saved (the approval itself still stood).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule_not_saved: Option<String>,
}

/// One run of the command.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attempt {
    pub sandbox: SandboxKind,
    pub exit: ExitKind,
    pub duration_ms: f64,
    pub verdict: Verdict,
    /// For a likely denial: what the sandbox blocked, as far as the output tells (a heuristic
    /// over the command's own output), each with the knob that would allow it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blocked: Vec<Blocked>,
    pub stdout: Captured,
    pub stderr: Captured,
    /// With a domain allow-list: every connection the command asked the proxy for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkLog>,
    /// What the command planted where git would run code from later, moved aside after it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub moved_aside: Vec<MovedAside>,
    /// Directories the search after the run for repositories the command created did not
    /// reach: a repository made there kept whatever the command gave it.
    #[serde(skip_serializing_if = "Vec::is_empty", serialize_with = "crate::lossy::lossy_texts")]
    pub not_searched: Vec<PathBuf>,
    /// How the command wrote its writable roots (shown when not directly).
    #[serde(skip_serializing_if = "crate::transaction::WriteMode::is_direct")]
    pub writes: crate::transaction::WriteMode,
    /// What the write gate kept from the roots, each with why and where it is kept.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub held_back: Vec<crate::transaction::HeldBack>,
    /// Why the command wrote its roots directly where write layers were wanted where
    /// available.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writes_direct_because: Option<String>,
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
    #[serde(serialize_with = "crate::lossy::lossy_texts")]
    pub command: Vec<OsString>,
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

/// Long-lived state: rules, the helper, approvals cached for this session.
#[derive(Debug)]
pub struct Orchestrator {
    rules: Mutex<RuleSet>,
    /// `$CORDON_HOME/rules.toml`, where "always allow" answers are written.
    user_rules_path: Option<PathBuf>,
    helper: HelperSettings,
    session_approvals: Mutex<HashSet<SessionKey>>,
}

/// What a "yes for this session" answer covers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct SessionKey {
    /// The request as it runs ([`ExecRequest::session_identity`]).
    request: String,
    stage: ApprovalStage,
    sandboxed: Sandboxed,
}

/// What a run's later steps work with.
struct RunState<'a, R, A> {
    request: &'a ExecRequest,
    approver: &'a A,
    runner: &'a R,
    sandbox: SandboxKind,
}

/// A session's first attempt that exited, for [`Orchestrator::approve_retry_after_session`].
pub(crate) struct SessionDenial<'a> {
    pub request: &'a ExecRequest,
    pub sandbox: SandboxKind,
    pub code: i32,
    /// What the command printed (stdout and stderr merged).
    pub output: &'a str,
}

/// One question for [`Orchestrator::approve`].
struct Question {
    reason: String,
    cause: AskCause,
    stage: ApprovalStage,
    sandboxed: Sandboxed,
    evidence: Vec<String>,
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

    /// What would happen to `command` before running (for `cordon policy check`); `lookup`
    /// says where its programs are found.
    pub fn assess(
        &self,
        command: &[String],
        approval: AskForApproval,
        escalation: &Escalation,
        lookup: &ProgramLookup<'_>,
    ) -> Assessment {
        let rules = self.rules.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let trusted_program = |program: &str| lookup.trusts(program);
        assess(&AssessInput {
            command,
            approval,
            rules: &rules,
            escalation,
            trusted_program: &trusted_program,
        })
    }

    /// Where `request`'s programs are found, and what its sandbox lets it write.
    pub fn program_lookup<'a>(&'a self, request: &'a ExecRequest) -> ProgramLookup<'a> {
        let path = request.env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.clone());
        ProgramLookup::new(path, request.cwd.clone(), move || {
            request.writable_roots(&self.helper.user_view)
        })
    }

    /// Runs `request` through the whole flow on this machine.
    pub async fn run(
        &self,
        request: &ExecRequest,
        approver: &impl Approver,
    ) -> Result<Outcome, OrchestratorError> {
        self.run_on(request, approver, &LocalRunner { helper: &self.helper }).await
    }

    /// The whole flow with attempts run by `runner`: decisions, approvals and classification
    /// stay here whichever machine the command runs on.
    pub(crate) async fn run_on<R: Runner>(
        &self,
        request: &ExecRequest,
        approver: &impl Approver,
        runner: &R,
    ) -> Result<Outcome, R::Error> {
        // 1. Decide, and ask when needed.
        let mut approvals = Vec::new();
        let authorization = self.authorize(request, approver, &mut approvals).await;
        let (assessment, sandboxed, refused) = match authorization {
            Authorization::Run { assessment, sandboxed } => (assessment, sandboxed, None),
            Authorization::Refused { assessment, reason } => {
                tracing::debug!(command = ?request.command, %reason, "refused");
                (assessment, Sandboxed::Yes, Some(reason))
            }
        };
        let mut outcome = Outcome {
            command: request.command.clone(),
            cwd: request.cwd.clone(),
            assessment,
            approvals,
            attempts: Vec::new(),
            result: OutcomeResult::Rejected { reason: String::new() },
        };
        if let Some(reason) = refused {
            outcome.result = OutcomeResult::Rejected { reason };
            return Ok(outcome);
        }

        // 2-4. Pick the sandbox, spawn, classify.
        let context = DenialContextOnce::new(request, &self.helper.user_view);
        let approval = if outcome.approvals.is_empty() {
            ApprovalState::NotNeeded
        } else {
            ApprovalState::Granted
        };
        let mut sandbox = SandboxKind::for_run(&request.sandbox.policy, sandboxed);
        let mut first = if sandboxed == Sandboxed::ReadOnly {
            let confined = request.under(sandboxed);
            let run = AttemptRun {
                request: &confined,
                sandbox,
                approval,
                writes: AttemptWrites::AsConfigured,
            };
            self.attempt(runner, run, &context).await?
        } else {
            let run =
                AttemptRun { request, sandbox, approval, writes: AttemptWrites::AsConfigured };
            self.attempt(runner, run, &context).await?
        };
        if sandboxed == Sandboxed::ReadOnly && first.verdict == Verdict::SandboxSetupFailed {
            // Known-safe grants nothing where the read-only confinement cannot be enforced:
            // the command is asked about as any other.
            tracing::debug!("the read-only confinement could not be set up; asking instead");
            let why = setup_failure_line(&first.stderr.text)
                .unwrap_or("the sandbox could not be set up")
                .to_owned();
            outcome.attempts.push(first);
            let question = Question {
                reason: format!(
                    "the command is on the known-safe list, but the read-only sandbox it would \
                     run in unasked could not be set up here ({why}); run it in the policy's \
                     sandbox?"
                ),
                cause: AskCause::Untrusted,
                stage: ApprovalStage::BeforeRun,
                sandboxed: Sandboxed::Yes,
                evidence: Vec::new(),
            };
            if !self.approve(request, question, approver, &mut outcome.approvals).await {
                outcome.result = OutcomeResult::Rejected { reason: "approval denied".to_owned() };
                return Ok(outcome);
            }
            sandbox = SandboxKind::for_run(&request.sandbox.policy, Sandboxed::Yes);
            let run = AttemptRun {
                request,
                sandbox,
                approval: ApprovalState::Granted,
                writes: AttemptWrites::AsConfigured,
            };
            first = self.attempt(runner, run, &context).await?;
        }
        let (exit, verdict) = (first.exit, first.verdict);
        outcome.attempts.push(first);
        if verdict == Verdict::RenamedExistingDirectory {
            return self
                .rerun_with_direct_writes(RunState { request, approver, runner, sandbox }, outcome)
                .await;
        }
        if verdict != Verdict::LikelySandboxDenied {
            outcome.result = OutcomeResult::Completed { exit, verdict, blocked: None };
            return Ok(outcome);
        }

        // 5. A likely denial: retry once without the sandbox if the policy lets us ask.
        let why_not = match retry_after_denial(request.approval, request.requester) {
            RetryDecision::NoRetry { why } => {
                tracing::debug!(%why, "likely denied by the sandbox; no retry");
                why
            }
            RetryDecision::AskToRetryUnsandboxed => {
                tracing::debug!("likely denied by the sandbox; asking to retry without it");
                let reason = retry_reason(sandbox, exit.shell_status());
                let reason = match program_inside_roots(request, &context.get().writable_roots) {
                    Some(program) => format!(
                        "{reason} Note: the program {} lies inside a writable root, so the \
                         sandboxed attempt may have changed it.",
                        program.display()
                    ),
                    None => reason,
                };
                let question = Question {
                    reason,
                    cause: AskCause::Retry,
                    stage: ApprovalStage::RetryWithoutSandbox,
                    sandboxed: Sandboxed::No,
                    evidence: denial_evidence(outcome.attempts.last(), context.get()),
                };
                if self.approve(request, question, approver, &mut outcome.approvals).await {
                    let run = AttemptRun {
                        request,
                        sandbox: SandboxKind::None,
                        approval: ApprovalState::Granted,
                        writes: AttemptWrites::AsConfigured,
                    };
                    tracing::debug!("retrying without the sandbox");
                    let retry = self.attempt(runner, run, &context).await?;
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

    /// After a transactional attempt that could not rename a directory: where the policy
    /// asks after a failure, asks to run the command again in the sandbox with direct writes.
    async fn rerun_with_direct_writes<R: Runner>(
        &self,
        state: RunState<'_, R, impl Approver>,
        mut outcome: Outcome,
    ) -> Result<Outcome, R::Error> {
        let RunState { request, approver, runner, sandbox } = state;
        let Some(last) = outcome.attempts.last() else { return Ok(outcome) };
        let (exit, verdict) = (last.exit, last.verdict);
        let evidence = evidence_lines(&[&last.stdout.text, &last.stderr.text], |line| {
            crate::classify::renamed_existing_directory(line, "")
        });
        let why_not = match retry_after_denial(request.approval, request.requester) {
            RetryDecision::NoRetry { .. } => {
                "the approval policy does not ask after a failure, so it was not run again with \
                 direct writes"
                    .to_owned()
            }
            RetryDecision::AskToRetryUnsandboxed => {
                let question = Question {
                    reason: "the command's output says a rename failed with Invalid \
                             cross-device link, as renaming a directory that existed before the \
                             run does through a write layer (git mv does not copy instead); run \
                             it again in the sandbox, writing the workspace directly? Direct \
                             writes are not judged by the write gate: git's config and hooks \
                             stay read-only and what git would run is moved aside after the run \
                             as far as the search reaches, but a tool's configuration the \
                             command writes (.cargo/config.toml, rust-toolchain.toml, .npmrc) is \
                             not held back, and /tmp is the host's"
                        .to_owned(),
                    cause: AskCause::Retry,
                    stage: ApprovalStage::RetryWithDirectWrites,
                    sandboxed: Sandboxed::Yes,
                    evidence,
                };
                if self.approve(request, question, approver, &mut outcome.approvals).await {
                    let context = DenialContextOnce::new(request, &self.helper.user_view);
                    let run = AttemptRun {
                        request,
                        sandbox,
                        approval: ApprovalState::Granted,
                        writes: AttemptWrites::Direct,
                    };
                    tracing::debug!("running again with direct writes");
                    let retry = self.attempt(runner, run, &context).await?;
                    let (exit, verdict) = (retry.exit, retry.verdict);
                    outcome.attempts.push(retry);
                    outcome.result = OutcomeResult::Completed { exit, verdict, blocked: None };
                    return Ok(outcome);
                }
                "the run with direct writes was not approved".to_owned()
            }
        };
        outcome.result = OutcomeResult::Completed { exit, verdict, blocked: Some(why_not) };
        Ok(outcome)
    }

    /// Step 1 alone: decide, and ask when needed. Interactive sessions use this and spawn
    /// themselves.
    pub async fn authorize(
        &self,
        request: &ExecRequest,
        approver: &impl Approver,
        approvals: &mut Vec<ApprovalRecord>,
    ) -> Authorization {
        let lookup = self.program_lookup(request);
        let assessment =
            self.assess(&request.words(), request.approval, &request.escalation, &lookup);
        tracing::debug!(
            command = ?request.command,
            decision = ?assessment.decision,
            rule = ?assessment.matched_rule,
            known_safe = assessment.known_safe,
            "assessed"
        );
        match assessment.decision.clone() {
            PreRunDecision::Refuse { reason } => Authorization::Refused { assessment, reason },
            PreRunDecision::Run { sandbox } => {
                Authorization::Run { assessment, sandboxed: Sandboxed::from(sandbox) }
            }
            PreRunDecision::Ask { reason, sandbox } => {
                let by_rule = assessment.unreadable.is_some()
                    || assessment
                        .matched_rule
                        .as_ref()
                        .is_some_and(|rule| rule.decision != cordon_policies::RuleDecision::Allow);
                let cause = match (&request.escalation, by_rule) {
                    (_, true) => AskCause::Rule,
                    (Escalation::RequireEscalated { .. }, false) => AskCause::Escalation,
                    (Escalation::UseDefault, false) => AskCause::Untrusted,
                };
                let question = Question {
                    reason,
                    cause,
                    stage: ApprovalStage::BeforeRun,
                    sandboxed: Sandboxed::from(sandbox),
                    evidence: Vec::new(),
                };
                if self.approve(request, question, approver, approvals).await {
                    Authorization::Run { assessment, sandboxed: Sandboxed::from(sandbox) }
                } else {
                    Authorization::Refused { assessment, reason: "approval denied".into() }
                }
            }
        }
    }

    /// After a session's command exited within its first call: when the policy asks after a
    /// denial and the exit looks like one, asks to run it again without the sandbox; whether
    /// that was approved.
    pub(crate) async fn approve_retry_after_session(
        &self,
        denied: SessionDenial<'_>,
        approver: &impl Approver,
    ) -> bool {
        let SessionDenial { request, sandbox, code, output } = denied;
        if sandbox == SandboxKind::None {
            return false;
        }
        match retry_after_denial(request.approval, request.requester) {
            RetryDecision::NoRetry { .. } => return false,
            RetryDecision::AskToRetryUnsandboxed => {}
        }
        let context = denial_context(request, &self.helper.user_view);
        let exit = ExitKind::Code(code);
        let finished = Finished { sandbox, exit, stdout: output, stderr: "" };
        if classify(finished, &context) != Verdict::LikelySandboxDenied {
            return false;
        }
        let evidence = evidence_lines(&[output], |line| is_denial_evidence(line, &context));
        let question = Question {
            reason: retry_reason(sandbox, code),
            cause: AskCause::Retry,
            stage: ApprovalStage::RetryWithoutSandbox,
            sandboxed: Sandboxed::No,
            evidence,
        };
        self.approve(request, question, approver, &mut Vec::new()).await
    }

    /// One sandboxed attempt under `kind`, without deciding or asking: `cordon sandbox` with a
    /// domain allow-list, which needs cordon to stay and serve the proxy for the attempt.
    pub async fn run_sandboxed(
        &self,
        request: &ExecRequest,
        kind: SandboxKind,
    ) -> Result<Attempt, OrchestratorError> {
        let context = DenialContextOnce::new(request, &self.helper.user_view);
        let run = AttemptRun {
            request,
            sandbox: kind,
            approval: ApprovalState::NotNeeded,
            writes: AttemptWrites::AsConfigured,
        };
        self.attempt(&LocalRunner { helper: &self.helper }, run, &context).await
    }

    /// The helper settings (for spawners outside this module).
    pub fn helper(&self) -> &HelperSettings {
        &self.helper
    }

    /// Asks (unless this exact question was approved for the session) and records the answer.
    /// A session approval covers exactly the request as it runs (argv, cwd, sandbox with its
    /// network list and limits, environment, whether it is a terminal session, …), the stage
    /// and whether the run is sandboxed: approving a sandboxed run never approves the
    /// unsandboxed retry or an escalation of the same command, and a pipe run never the same
    /// command as a terminal session. A terminal session that runs unsandboxed is never
    /// approved for the session: whoever holds it can type anything into it.
    async fn approve(
        &self,
        request: &ExecRequest,
        question: Question,
        approver: &impl Approver,
        approvals: &mut Vec<ApprovalRecord>,
    ) -> bool {
        let Question { reason, cause, stage, sandboxed, evidence } = question;
        let key = SessionKey { request: request.session_identity(), stage, sandboxed };
        if self
            .session_approvals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(&key)
        {
            tracing::debug!(?stage, "approved earlier in this session");
            return true;
        }
        // An allow rule runs the command sandboxed, so it can only stand for a sandboxed run.
        // Rules are text: an argv that is not UTF-8 gets no "always allow" (its rule would
        // stand for other bytes too); yes for this session covers the exact bytes.
        let text = request.command.iter().all(|word| word.to_str().is_some());
        let sandbox_mode = match sandboxed {
            Sandboxed::Yes => request.sandbox.policy.mode(),
            Sandboxed::ReadOnly => SandboxMode::ReadOnly,
            Sandboxed::No => SandboxMode::DangerFullAccess,
        };
        // A program inside a writable root may be rewritten by any sandboxed command, so a rule
        // naming it would allow whatever is written there next. Under danger-full-access the
        // policy's "sandbox" is none: a rule would run the command unsandboxed unasked.
        let prefix =
            if sandboxed == Sandboxed::Yes && sandbox_mode != SandboxMode::DangerFullAccess && text
            {
                always_allow_prefix(&request.words()).filter(|_| {
                    let roots = request.writable_roots(&self.helper.user_view);
                    program_inside_roots(request, &roots).is_none()
                })
            } else {
                None
            };
        // The front of the reason: a terminal session stays open to the caller's input.
        let reason = match request.interaction {
            Interaction::Terminal => format!(
                "interactive terminal session: the agent can type into it for as long as it runs \
                 — {reason}"
            ),
            Interaction::Batch => reason,
        };
        let question = ApprovalRequest {
            command: request.command.clone(),
            cwd: request.cwd.clone(),
            interaction: request.interaction,
            reason: reason.clone(),
            stage,
            sandbox_mode,
            evidence,
            prefix,
            host: None,
            cause,
        };
        tracing::debug!(?stage, ?sandbox_mode, "asking for approval");
        let answer = approver.ask(&question).await;
        tracing::debug!(?stage, ?answer, "approval answered");
        let mut record = ApprovalRecord { stage, reason, answer, rule_not_saved: None };
        let approved = match answer {
            ApprovalAnswer::Denied => false,
            ApprovalAnswer::Approved => true,
            ApprovalAnswer::ApprovedForSession
                if request.interaction == Interaction::Terminal && sandboxed == Sandboxed::No =>
            {
                tracing::debug!(
                    "an unsandboxed terminal session is approved once, never for the session"
                );
                true
            }
            ApprovalAnswer::ApprovedForSession => {
                self.session_approvals
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(key);
                true
            }
            ApprovalAnswer::AlwaysAllowPrefix => {
                // Offered only with a prefix; an approver that answers it anyway gets a
                // one-time approval and no rule.
                if let Some(prefix) = &question.prefix {
                    record.rule_not_saved =
                        self.persist_allow_rule(prefix).err().map(|e| e.to_string());
                }
                true
            }
        };
        approvals.push(record);
        approved
    }

    /// Appends an allow rule to `$CORDON_HOME/rules.toml` and applies it to this session.
    /// A write failure is returned for the record; the approval itself still stands.
    fn persist_allow_rule(&self, prefix: &[String]) -> Result<(), RuleNotSaved> {
        let text = allow_rule_toml(prefix);
        if let Ok((parsed, _)) = RuleSet::parse(&text, cordon_policies::RuleSource::User) {
            self.rules.lock().unwrap_or_else(std::sync::PoisonError::into_inner).merge(parsed);
        }
        let Some(path) = &self.user_rules_path else { return Ok(()) };
        append(path, &text).map_err(|source| RuleNotSaved { path: path.clone(), source })
    }

    /// One attempt through `runner`, classified here.
    async fn attempt<R: Runner>(
        &self,
        runner: &R,
        run: AttemptRun<'_>,
        context: &DenialContextOnce<'_>,
    ) -> Result<Attempt, R::Error> {
        let sandbox = run.sandbox;
        tracing::debug!(sandbox = sandbox.as_str(), "attempt starts");
        let result = runner.run_attempt(run).await?;
        let (stdout, stderr) = (result.stdout.text(), result.stderr.text());
        let exit = command_exit(sandbox, result.exit, &stderr);
        let finished = Finished { sandbox, exit, stdout: &stdout, stderr: &stderr };
        let verdict = match exit {
            // A command that succeeded is not read for denials: no context is worked out.
            ExitKind::Code(0) => Verdict::Success,
            ExitKind::Code(_)
                if result.writes == crate::transaction::WriteMode::Transaction
                    && crate::classify::renamed_existing_directory(&stdout, &stderr) =>
            {
                Verdict::RenamedExistingDirectory
            }
            _ => classify(finished, context.get()),
        };
        let blocked = match verdict {
            Verdict::LikelySandboxDenied => explain_output(&stdout, &stderr, context.get()),
            _ => Vec::new(),
        };
        tracing::debug!(
            sandbox = sandbox.as_str(),
            ?exit,
            ?verdict,
            duration_ms = result.duration.as_millis(),
            "attempt finished"
        );
        Ok(Attempt {
            sandbox,
            exit,
            duration_ms: result.duration.as_secs_f64() * 1000.0,
            verdict,
            blocked,
            stdout: result.stdout.captured(),
            stderr: result.stderr.captured(),
            network: result.network,
            moved_aside: result.moved_aside,
            not_searched: result.not_searched,
            writes: result.writes,
            held_back: result.held_back,
            writes_direct_because: result.writes_direct_because,
        })
    }
}

/// The program of `request` (found as `execvp` would: by its path, else on the command's
/// `PATH`) when it lies inside one of `roots`: a sandboxed attempt could have rewritten it, so
/// the question for an unsandboxed retry says so.
fn program_inside_roots(request: &ExecRequest, roots: &[PathBuf]) -> Option<PathBuf> {
    let program = Path::new(request.command.first()?);
    let found = if program.components().count() > 1 {
        Some(request.cwd.join(program))
    } else {
        let path = request.env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.clone())?;
        std::env::split_paths(&path)
            .map(|dir| request.cwd.join(dir).join(program))
            .find(|candidate| candidate.is_file())
    }?;
    let canonical = std::fs::canonicalize(&found).ok()?;
    roots.iter().any(|root| canonical.starts_with(root)).then_some(found)
}

/// [`denial_context`], worked out when first needed: a command that succeeds needs none, and
/// resolving the policy expands the whole hidden-path catalogue.
struct DenialContextOnce<'a> {
    request: &'a ExecRequest,
    user_view: &'a cordon_policies::EnvSnapshot,
    context: std::cell::OnceCell<DenialContext>,
}

impl<'a> DenialContextOnce<'a> {
    fn new(request: &'a ExecRequest, user_view: &'a cordon_policies::EnvSnapshot) -> Self {
        DenialContextOnce { request, user_view, context: std::cell::OnceCell::new() }
    }

    fn get(&self) -> &DenialContext {
        self.context.get_or_init(|| denial_context(self.request, self.user_view))
    }
}

/// The TCP ports this host listens on at a loopback or wildcard address (`/proc/net/tcp` and
/// `tcp6`, state LISTEN), Linux only.
fn host_loopback_listeners() -> Vec<u16> {
    let mut ports = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else { continue };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state)) = (fields.get(1), fields.get(3)) else { continue };
            let Some((address, port)) = local.split_once(':') else { continue };
            let loopback_or_any = matches!(
                address,
                "0100007F"
                    | "00000000"
                    | "00000000000000000000000000000000"
                    | "00000000000000000000000001000000"
            );
            if *state == "0A" && loopback_or_any {
                if let Ok(port) = u16::from_str_radix(port, 16) {
                    ports.push(port);
                }
            }
        }
    }
    ports.sort_unstable();
    ports.dedup();
    ports
}

/// What the home directories' allow-list hides from a command of `sandbox`, and grants
/// besides (nothing on a platform that does not apply the list).
pub fn home_list_plan(
    sandbox: &SandboxRequest,
    user_view: &cordon_policies::EnvSnapshot,
    resolved: &cordon_policies::ResolvedPolicy,
) -> cordon_policies::HomeReads {
    if matches!(sandbox.policy, cordon_policies::SandboxPolicy::DangerFullAccess {}) {
        return cordon_policies::HomeReads::default();
    }
    #[cfg(target_os = "linux")]
    let plan = cordon_sandbox_linux::planned_home_reads(
        &sandbox.home_reads,
        user_view,
        resolved,
        &sandbox.policy_cwd,
    );
    #[cfg(not(target_os = "linux"))]
    let plan = {
        let _ = (user_view, resolved);
        cordon_policies::HomeReads::default()
    };
    plan
}

/// What the request's sandbox lets the command write, for judging denial messages. A policy
/// that cannot be resolved gives an empty context: nothing counts as writable, so every path
/// in a denial message fits.
fn denial_context(
    request: &ExecRequest,
    user_view: &cordon_policies::EnvSnapshot,
) -> DenialContext {
    let resolved =
        request
            .sandbox
            .policy
            .resolve(&request.sandbox.policy_cwd, &user_view.view(), |p| std::fs::canonicalize(p));
    let Ok(resolved) = resolved else {
        return DenialContext { cwd: request.cwd.clone(), ..DenialContext::default() };
    };
    let mut protected: Vec<PathBuf> = Vec::new();
    for name in &resolved.protected_paths {
        let name = Path::new(name);
        if name.is_absolute() {
            protected.push(name.to_path_buf());
        } else {
            protected.extend(resolved.writable_roots.iter().map(|root| root.join(name)));
        }
    }
    let home_hidden = home_list_plan(&request.sandbox, user_view, &resolved).hidden;
    DenialContext {
        cwd: request.cwd.clone(),
        writable_roots: resolved.writable_roots,
        protected,
        hidden: resolved.hidden_paths,
        home_hidden,
        network: resolved.network_access,
        home: user_view.home.as_deref().and_then(|home| std::fs::canonicalize(home).ok()),
        own_dirs: user_view
            .cordon_executables
            .iter()
            .filter_map(|exe| exe.parent().map(Path::to_path_buf))
            .collect(),
        read_only: matches!(
            request.sandbox.policy,
            cordon_policies::SandboxPolicy::ReadOnly { .. }
        ),
        host_loopback_ports: if resolved.network_access {
            Vec::new()
        } else {
            host_loopback_listeners()
        },
        write_refusal: match (
            SandboxKind::for_policy(&request.sandbox.policy),
            request.sandbox.mount_view,
        ) {
            (
                SandboxKind::Linux,
                MountViewRequirement::Required | MountViewRequirement::WhenAvailable,
            ) => WriteRefusal::ReadOnlyMounts,
            (SandboxKind::Linux, MountViewRequirement::Disabled)
            | (SandboxKind::Seatbelt | SandboxKind::None, _) => WriteRefusal::AnyDenial,
        },
    }
}

/// An "always allow" rule that could not be written to the user's rules file.
#[derive(Debug, thiserror::Error)]
#[error("cannot save the rule to {}: {source}", .path.display())]
struct RuleNotSaved {
    path: PathBuf,
    source: std::io::Error,
}

fn append(path: &Path, text: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(text.as_bytes())
}

/// The question after a likely denial: the first attempt ran, and what it did stays done.
fn retry_reason(sandbox: SandboxKind, status: i32) -> String {
    format!(
        "the {} sandbox probably blocked this command (exit {status}); it already ran once, \
         sandboxed, and whatever it did then stays done. Run it again WITHOUT the sandbox?",
        sandbox.as_str()
    )
}

/// The lines of `texts` that `is_evidence` picks, at most five, each cut short.
fn evidence_lines(texts: &[&str], is_evidence: impl Fn(&str) -> bool) -> Vec<String> {
    texts
        .iter()
        .flat_map(|text| text.lines())
        .filter(|line| is_evidence(line))
        .take(5)
        .map(|line| line.chars().take(300).collect())
        .collect()
}

/// The output lines that made the classifier call an attempt a likely sandbox denial (at most
/// a few, each cut short), shown on the retry prompt.
fn denial_evidence(attempt: Option<&Attempt>, context: &DenialContext) -> Vec<String> {
    let Some(attempt) = attempt else { return Vec::new() };
    let texts = [attempt.stderr.text.as_str(), attempt.stdout.text.as_str()];
    let mut lines = evidence_lines(&texts, |line| {
        is_denial_evidence(line, context)
            || (attempt.blocked.iter().any(|b| matches!(b, Blocked::Network { .. }))
                && line.to_lowercase().contains("operation not permitted"))
    });
    if lines.is_empty() {
        lines.push(format!("exit status {}", attempt.exit.shell_status()));
    }
    lines
}

//! The approval table (approval policy × rules × known-safe list × escalation) as pure functions:
//! what to do before running a command ([`assess`]) and after a likely sandbox denial
//! ([`retry_after_denial`]).

use serde::Serialize;

use crate::approval::{AskForApproval, Escalation};
use crate::rules::{Rule, RuleDecision, RuleSet};
use crate::safe_commands::{is_known_safe, known_safe_programs};
use crate::unreadable::Unreadable;

/// Which sandbox a run gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunSandbox {
    /// The sandbox of the request's policy (none under `danger-full-access`).
    Policy,
    /// Read-only with no network, whatever the policy: a known-safe command that runs without
    /// a question because it is known-safe.
    ReadOnly,
    /// No sandbox: an approved escalation.
    None,
}

/// What to do before running a command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PreRunDecision {
    /// Run under `sandbox`.
    Run { sandbox: RunSandbox },
    /// Ask the user first; if approved run under `sandbox`.
    Ask { reason: String, sandbox: RunSandbox },
    /// Refuse without running (forbidden rule, or approval needed under `never`).
    Refuse { reason: String },
}

/// The decision and what it was based on (printed by `cordon policy check`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Assessment {
    pub decision: PreRunDecision,
    /// The strictest matching rule, if any.
    pub matched_rule: Option<Rule>,
    /// Whether the command is on the known-safe list (and its programs are system files).
    pub known_safe: bool,
    /// Why cordon cannot tell which programs the command runs, if it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<Unreadable>,
}

/// What [`assess`] judges.
pub struct AssessInput<'a> {
    pub command: &'a [String],
    pub approval: AskForApproval,
    pub rules: &'a RuleSet,
    pub escalation: &'a Escalation,
    /// Whether a program name of a known-safe command resolves to a file the command cannot
    /// have planted (the caller looks it up where the command would).
    pub trusted_program: &'a dyn Fn(&str) -> bool,
}

/// Decides, strictest first: a `forbidden` rule refuses; a `prompt` rule — or any `prompt` or
/// `forbidden` rule that might apply to a command cordon cannot read — asks (refuses under
/// `never`); an escalation request asks to run unsandboxed (refused under `never`); an `allow`
/// rule runs sandboxed; otherwise `untrusted` asks unless the command is known-safe — which then
/// runs read-only without network — and every other policy runs in the policy's sandbox.
pub fn assess(input: &AssessInput<'_>) -> Assessment {
    let AssessInput { command, approval, rules, escalation, trusted_program } = *input;
    let judgement = rules.judge(command);
    let matched_rule = judgement.rule.cloned();
    let on_list = is_known_safe(command);
    let untrusted = if on_list {
        known_safe_programs(command).into_iter().find(|p| !trusted_program(p))
    } else {
        None
    };
    let known_safe = on_list && untrusted.is_none();
    let escalation = match escalation {
        Escalation::UseDefault => None,
        Escalation::RequireEscalated { justification } => {
            Some(escalation_reason(justification.as_deref()))
        }
    };
    let uncertain = judgement.uncertain.map(|(rule, why)| uncertain_reason(rule, why.as_ref()));
    let decision = match (&matched_rule, uncertain, escalation) {
        (Some(rule), _, _) if rule.decision == RuleDecision::Forbidden => {
            PreRunDecision::Refuse { reason: rule_reason(rule, "forbids this command") }
        }
        (_, Some(uncertain), escalation) => question(approval, uncertain, escalation),
        (Some(rule), None, escalation) => match rule.decision {
            RuleDecision::Forbidden | RuleDecision::Prompt => {
                prompt_rule_decision(rule, approval, escalation)
            }
            RuleDecision::Allow => match escalation {
                Some(reason) => escalation_decision(approval, reason),
                None => PreRunDecision::Run { sandbox: RunSandbox::Policy },
            },
        },
        (None, None, Some(reason)) => escalation_decision(approval, reason),
        (None, None, None) => match approval {
            AskForApproval::Untrusted if known_safe => {
                PreRunDecision::Run { sandbox: RunSandbox::ReadOnly }
            }
            AskForApproval::Untrusted => PreRunDecision::Ask {
                reason: match &untrusted {
                    Some(program) => format!(
                        "approval policy is untrusted, and the known-safe list does not apply: \
                         `{program}` is not a system file where PATH finds it (root-owned and \
                         not writable by others, with no directory before it in PATH inside a \
                         writable root)"
                    ),
                    None => "approval policy is untrusted and the command is not on the \
                             known-safe list"
                        .to_owned(),
                },
                sandbox: RunSandbox::Policy,
            },
            AskForApproval::OnFailure | AskForApproval::OnRequest | AskForApproval::Never => {
                PreRunDecision::Run { sandbox: RunSandbox::Policy }
            }
        },
    };
    Assessment { decision, matched_rule, known_safe, unreadable: judgement.unreadable }
}

/// `cordon cannot tell which programs this command runs (…): rule … might apply`.
fn uncertain_reason(rule: &Rule, why: Option<&Unreadable>) -> String {
    let rule_name = rule_name(rule);
    let verb = match rule.decision {
        RuleDecision::Forbidden => "forbids",
        RuleDecision::Prompt | RuleDecision::Allow => "asks for approval of",
    };
    match why {
        Some(why) => format!(
            "cordon cannot tell which programs this command runs ({why}), and {rule_name} {verb} \
             a program it might run"
        ),
        None => format!(
            "a word the shell computes stands where {rule_name} names a program; that rule \
             {verb} it"
        ),
    }
}

/// A question (with an escalation's reason too), or under `never` a refusal.
fn question(
    approval: AskForApproval,
    reason: String,
    escalation: Option<String>,
) -> PreRunDecision {
    match approval {
        AskForApproval::Never => PreRunDecision::Refuse {
            reason: format!("{reason}; approval policy is never, so it does not run"),
        },
        AskForApproval::Untrusted | AskForApproval::OnFailure | AskForApproval::OnRequest => {
            match escalation {
                Some(escalation) => PreRunDecision::Ask {
                    reason: format!("{reason}; {escalation}"),
                    sandbox: RunSandbox::None,
                },
                None => PreRunDecision::Ask { reason, sandbox: RunSandbox::Policy },
            }
        }
    }
}

/// A `prompt` rule asks under every policy but `never`; approving it also approves a requested
/// escalation, so the question says so.
fn prompt_rule_decision(
    rule: &Rule,
    approval: AskForApproval,
    escalation: Option<String>,
) -> PreRunDecision {
    match approval {
        AskForApproval::Never => {
            let rule_name = rule_name(rule);
            let reason = match &rule.justification {
                Some(j) => {
                    format!("{rule_name} needs approval ({j}), but approval policy is never")
                }
                None => format!("{rule_name} needs approval, but approval policy is never"),
            };
            PreRunDecision::Refuse { reason }
        }
        AskForApproval::Untrusted | AskForApproval::OnFailure | AskForApproval::OnRequest => {
            let rule_reason = rule_reason(rule, "asks for approval");
            match escalation {
                Some(escalation) => PreRunDecision::Ask {
                    reason: format!("{rule_reason}; {escalation}"),
                    sandbox: RunSandbox::None,
                },
                None => PreRunDecision::Ask { reason: rule_reason, sandbox: RunSandbox::Policy },
            }
        }
    }
}

/// A request to run outside the sandbox is always a question, and under `never` a refusal.
fn escalation_decision(approval: AskForApproval, reason: String) -> PreRunDecision {
    match approval {
        AskForApproval::Never => PreRunDecision::Refuse {
            reason: "the command asks to run outside the sandbox, but approval policy is never"
                .to_owned(),
        },
        AskForApproval::Untrusted | AskForApproval::OnFailure | AskForApproval::OnRequest => {
            PreRunDecision::Ask { reason, sandbox: RunSandbox::None }
        }
    }
}

/// `rule ["git", "push"] in $CORDON_HOME/rules.toml`.
fn rule_name(rule: &Rule) -> String {
    let prefix = &rule.prefix;
    let file = rule.source.file_name();
    format!("rule {prefix:?} in {file}")
}

/// `rule ["git", "push"] in $CORDON_HOME/rules.toml <verb>: <justification>`.
fn rule_reason(rule: &Rule, verb: &str) -> String {
    let rule_name = rule_name(rule);
    match &rule.justification {
        Some(justification) => format!("{rule_name} {verb}: {justification}"),
        None => format!("{rule_name} {verb}"),
    }
}

fn escalation_reason(justification: Option<&str>) -> String {
    match justification.map(str::trim).filter(|j| !j.is_empty()) {
        Some(justification) => {
            format!("the command asks to run outside the sandbox: {justification}")
        }
        None => "the command asks to run outside the sandbox (no justification given)".to_owned(),
    }
}

/// After a likely sandbox denial: may the orchestrator ask to retry without the sandbox?
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryDecision {
    /// Ask the user whether to run the command again without the sandbox.
    AskToRetryUnsandboxed,
    /// Report the failure; `why` says why there is no retry and what would allow one.
    NoRetry { why: String },
}

/// Who stands behind a request: decides what `on-request` does after a denial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requester {
    /// A person who typed the command and can be asked on its terminal (`cordon exec` with a
    /// controlling terminal): the one who could request escalation is right there.
    Person,
    /// A program — an agent harness over the executor or MCP, a script without a terminal. It
    /// requests escalation explicitly (`require_escalated`), so a denial is reported to it.
    Program,
}

/// After a likely denial: `untrusted` and `on-failure` ask to retry without the sandbox; `never`
/// reports the failure; `on-request` asks a [`Requester::Person`] (at a terminal it would
/// otherwise behave exactly like `never`) and reports to a program, which can ask for an
/// escalation itself.
pub fn retry_after_denial(approval: AskForApproval, requester: Requester) -> RetryDecision {
    match approval {
        AskForApproval::Untrusted | AskForApproval::OnFailure => {
            RetryDecision::AskToRetryUnsandboxed
        }
        AskForApproval::OnRequest => match requester {
            Requester::Person => RetryDecision::AskToRetryUnsandboxed,
            Requester::Program => RetryDecision::NoRetry {
                why: "approval policy on-request retries without the sandbox only when asked \
                      (sandbox_permissions \"require_escalated\"); use -a on-failure to be \
                      asked after every denial"
                    .to_owned(),
            },
        },
        AskForApproval::Never => RetryDecision::NoRetry {
            why: "approval policy never does not retry without the sandbox; use -a on-failure \
                  to be asked"
                .to_owned(),
        },
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;

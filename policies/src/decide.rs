//! The approval table (approval policy × rules × known-safe list × escalation) as pure functions:
//! what to do before running a command ([`assess`]) and after a likely sandbox denial
//! ([`retry_after_denial`]).

use serde::Serialize;

use crate::approval::{AskForApproval, Escalation};
use crate::rules::{Rule, RuleDecision, RuleSet};
use crate::safe_commands::is_known_safe;

/// What to do before running a command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PreRunDecision {
    /// Run; `sandboxed: false` only for an approved escalation or danger-full-access (the
    /// caller decides the latter from the sandbox policy; here: escalation).
    Run { sandboxed: bool },
    /// Ask the user first; if approved run with `sandboxed` as given.
    Ask { reason: String, sandboxed: bool },
    /// Refuse without running (forbidden rule, or approval needed under `never`).
    Refuse { reason: String },
}

/// The decision and what it was based on (printed by `cordon policy check`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Assessment {
    pub decision: PreRunDecision,
    /// The strictest matching rule, if any.
    pub matched_rule: Option<Rule>,
    /// Whether the command is on the known-safe list.
    pub known_safe: bool,
}

/// Decides, strictest first: a `forbidden` rule refuses; a `prompt` rule asks (refuses under
/// `never`); an escalation request asks to run unsandboxed (refused under `never`); an `allow`
/// rule runs sandboxed; otherwise `untrusted` asks unless the command is known-safe, and every
/// other policy runs sandboxed.
pub fn assess(
    command: &[String],
    approval: AskForApproval,
    rules: &RuleSet,
    escalation: &Escalation,
) -> Assessment {
    let matched_rule = rules.evaluate(command).cloned();
    let known_safe = is_known_safe(command);
    let escalation = match escalation {
        Escalation::UseDefault => None,
        Escalation::RequireEscalated { justification } => {
            Some(escalation_reason(justification.as_deref()))
        }
    };
    let decision = match (&matched_rule, escalation) {
        (Some(rule), escalation) => match rule.decision {
            RuleDecision::Forbidden => {
                PreRunDecision::Refuse { reason: rule_reason(rule, "forbids this command") }
            }
            RuleDecision::Prompt => prompt_rule_decision(rule, approval, escalation),
            RuleDecision::Allow => match escalation {
                Some(reason) => escalation_decision(approval, reason),
                None => PreRunDecision::Run { sandboxed: true },
            },
        },
        (None, Some(reason)) => escalation_decision(approval, reason),
        (None, None) => match approval {
            AskForApproval::Untrusted if !known_safe => PreRunDecision::Ask {
                reason: "approval policy is untrusted and the command is not on the known-safe \
                         list"
                    .to_owned(),
                sandboxed: true,
            },
            AskForApproval::Untrusted
            | AskForApproval::OnFailure
            | AskForApproval::OnRequest
            | AskForApproval::Never => PreRunDecision::Run { sandboxed: true },
        },
    };
    Assessment { decision, matched_rule, known_safe }
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
                    sandboxed: false,
                },
                None => PreRunDecision::Ask { reason: rule_reason, sandboxed: true },
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
            PreRunDecision::Ask { reason, sandboxed: false }
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

//! What an `exec_command` call asks for, as a request: the shell command line, the session
//! environment, the executor's policy narrowed by the call's `allowed_domains`; and the note
//! that reports the proxy's refusals in a result.

use std::ffi::OsString;
use std::path::PathBuf;

use cordon_policies::{
    DomainMatcher, DomainRules, Escalation, Requester, SandboxPolicy, SandboxRequest, WriteChoice,
};

use super::{
    ExecCommandArgs, Note, SESSION_ENV, SandboxPermissions, SessionDefaults, SessionError,
};
use crate::launch::PinnedDir;
use crate::network_proxy::ProxyError;
use crate::request::{ExecRequest, Interaction};
use crate::spawn::{OutputMode, StdinMode};

/// The request an `exec_command` call makes: `[shell, -lc|-c, cmd]` in `cwd`, with the
/// session environment, under the executor's policy (the writable roots stay those of
/// `defaults.cwd`; a call's `allowed_domains` only narrows the network), and the list that
/// narrows its proxy. Shared by local sessions and remote ones ([`crate::remote`]).
pub(crate) fn session_request(
    args: &ExecCommandArgs,
    defaults: &SessionDefaults,
    (cwd, cwd_pin): (PathBuf, Option<PinnedDir>),
) -> Result<(ExecRequest, Option<DomainRules>), SessionError> {
    // A NUL would end the string where the kernel reads it: what ran would not be what was
    // asked (and shown for approval).
    let workdir = args.workdir.as_ref().map(|w| w.as_os_str().as_encoded_bytes());
    let fields = [
        ("cmd", Some(args.cmd.as_bytes())),
        ("shell", args.shell.as_ref().map(|s| s.as_bytes())),
        ("workdir", workdir),
    ];
    if let Some((name, _)) = fields.iter().find(|(_, v)| v.is_some_and(|v| v.contains(&0))) {
        return Err(SessionError::NulByte(name));
    }
    let shell = args.shell.clone().unwrap_or_else(|| "/bin/bash".to_owned());
    let flag = if args.login.unwrap_or(true) { "-lc" } else { "-c" };
    let mut env = defaults.env.clone();
    env.retain(|(k, _)| !SESSION_ENV.iter().any(|(name, _)| k == name));
    env.extend(SESSION_ENV.iter().map(|(k, v)| (OsString::from(k), OsString::from(v))));
    let escalation = match args.sandbox_permissions {
        Some(SandboxPermissions::RequireEscalated) => {
            Escalation::RequireEscalated { justification: args.justification.clone() }
        }
        Some(SandboxPermissions::UseDefault) | None => Escalation::UseDefault,
    };
    let (sandbox_policy, narrowed_by) =
        narrow_network(&defaults.sandbox.policy, args.allowed_domains.as_deref(), &escalation)?;
    // A call may only lower the executor's limits.
    let call_limits = super::args::call_limits(args.limits.as_deref())?;
    let limits = defaults.sandbox.limits.lowered_by(&call_limits);
    // Through a transaction of the helper's own, which applies when the command has ended.
    let writes = match (args.writes, args.tty.unwrap_or(false)) {
        (Some(super::args::CallWrites::Transaction), true) => {
            return Err(SessionError::TransactionInTerminal);
        }
        (Some(super::args::CallWrites::Transaction), false) => {
            let escalated = matches!(escalation, Escalation::RequireEscalated { .. });
            if escalated || matches!(sandbox_policy, SandboxPolicy::DangerFullAccess {}) {
                return Err(SessionError::TransactionWithoutSandbox);
            }
            WriteChoice::Transaction
        }
        (Some(super::args::CallWrites::Direct) | None, _) => WriteChoice::Direct,
    };
    let request = ExecRequest {
        command: vec![shell.into(), flag.into(), args.cmd.clone().into()],
        cwd,
        cwd_pin,
        sandbox: SandboxRequest {
            policy: sandbox_policy,
            limits,
            writes,
            ..defaults.sandbox.clone()
        },
        approval: defaults.approval,
        escalation,
        // A harness asks for escalation itself (`require_escalated`).
        requester: Requester::Program,
        timeout: None,
        env,
        stdin: StdinMode::Null,
        output: OutputMode::Capture,
        interaction: if args.tty.unwrap_or(false) {
            Interaction::Terminal
        } else {
            Interaction::Batch
        },
    };
    Ok((request, narrowed_by))
}

/// The policy one call runs under, and the list that narrows its proxy, for a call's
/// `allowed_domains`: under a domain list both apply; with the network fully on the call's
/// list becomes the list; with no network, no sandbox or an escalation it is refused (it would
/// widen what the command may reach, or there is no sandbox to narrow).
fn narrow_network(
    policy: &SandboxPolicy,
    allowed: Option<&[String]>,
    escalation: &Escalation,
) -> Result<(SandboxPolicy, Option<DomainRules>), SessionError> {
    let Some(allowed) = allowed else { return Ok((policy.clone(), None)) };
    let call = DomainRules { allow: allowed.to_vec(), deny: Vec::new() };
    DomainMatcher::new(&call).map_err(|e| SessionError::Proxy(ProxyError::Pattern(e)))?;
    if matches!(escalation, Escalation::RequireEscalated { .. }) {
        return Err(SessionError::NetworkNotNarrowable(
            "an escalated command runs without the sandbox; ask for one or the other",
        ));
    }
    match policy {
        SandboxPolicy::WorkspaceWrite(ww) if ww.network_domains.is_some() => {
            Ok((policy.clone(), Some(call)))
        }
        SandboxPolicy::WorkspaceWrite(ww) if ww.network_access => {
            let mut narrowed = ww.clone();
            narrowed.network_domains = Some(call);
            Ok((SandboxPolicy::WorkspaceWrite(narrowed), None))
        }
        SandboxPolicy::WorkspaceWrite(_) | SandboxPolicy::ReadOnly { .. } => {
            Err(SessionError::NetworkNotNarrowable(
                "this executor runs commands without network, and a call cannot widen that \
                 (start it with --allow-domain or --network)",
            ))
        }
        SandboxPolicy::DangerFullAccess {} => Err(SessionError::NetworkNotNarrowable(
            "this executor runs commands without a sandbox (danger-full-access)",
        )),
    }
}

/// The note that reports the proxy's refusals among `refused` (`host:port`, once each), if
/// any.
pub(super) fn refusals_note(refused: &[crate::network_proxy::ConnectionRecord]) -> Option<Note> {
    let hosts = crate::network_proxy::denied_hosts(refused);
    (!hosts.is_empty()).then_some(Note::NetworkRefused { hosts })
}

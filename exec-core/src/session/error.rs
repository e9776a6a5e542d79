//! Why a session call failed. The message is what the harness or MCP client reads.

use std::path::PathBuf;

use super::MAX_SESSIONS;
use crate::launch::SandboxSetupError;
use crate::network_proxy::ProxyError;
use crate::remote_error::RemoteError;

/// Why a call failed; the message goes back to the harness as an error outcome.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("refused: {0}")]
    Rejected(String),
    #[error("unknown session id {0} (it never existed, or its process exited and was reported)")]
    UnknownSession(u32),
    #[error("session {0} was closed to make room (oldest idle; at most {MAX_SESSIONS} sessions)")]
    Pruned(u32),
    #[error(
        "at most {MAX_SESSIONS} sessions, and every one is busy with a call: wait for one to \
         return, or end one (exit, Ctrl-D) before starting another"
    )]
    TooManySessions,
    #[error("session {0} runs on pipes, not a terminal: it has no stdin to write to")]
    NotATerminal(u32),
    #[error("allowed_domains only narrows the network of a sandboxed command: {0}")]
    NetworkNotNarrowable(&'static str),
    /// A call's `allowed_domains` for sessions on another machine, where no proxy runs.
    #[error(
        "allowed_domains: network by domain is not available on another machine yet (its \
         proxy would have to run there)"
    )]
    NetworkByDomainElsewhere,
    #[error("limits: {0}")]
    Limit(#[from] cordon_policies::LimitError),
    #[error(
        "writes: `transaction` is for commands on pipes; a terminal session (tty) writes its \
         workspace directly, as it runs: nothing was run"
    )]
    TransactionInTerminal,
    #[error(
        "writes: `transaction` needs the sandbox, and this call runs without one \
         (danger-full-access, or an escalation): nothing was run"
    )]
    TransactionWithoutSandbox,
    #[error("{0} holds a NUL byte, which no command line or path can carry: nothing was run")]
    NulByte(&'static str),
    #[error("cannot use workdir {}: {source}", .path.display())]
    Workdir { path: PathBuf, source: std::io::Error },
    #[error("the working directory {} is not absolute (the resolved form needs one)", .0.display())]
    RelativeCwd(PathBuf),
    #[error(
        "the working directory {} leads to {} here: it was shown for approval as the first, so \
         nothing was run; use the second (without symbolic links)",
        .shown.display(),
        .resolved.display()
    )]
    WorkdirElsewhere { shown: PathBuf, resolved: PathBuf },
    #[error(transparent)]
    Setup(#[from] SandboxSetupError),
    #[error(transparent)]
    Proxy(#[from] ProxyError),
    #[error("cannot start the session: {0}")]
    Spawn(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("cannot write to session {id}: {source}")]
    Write { id: u32, source: std::io::Error },
    /// Sessions on another machine: the link failed, or the far end answered with an error.
    #[error(transparent)]
    Remote(#[from] RemoteError),
}

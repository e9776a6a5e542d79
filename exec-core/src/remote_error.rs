//! Why a run on another machine could not happen or went wrong: its own module, below both the
//! sessions (whose errors carry it) and the remote link (which returns it).

use std::path::PathBuf;
use std::time::Duration;

use crate::runner::OrchestratorError;

/// Why a remote run could not happen or went wrong.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("cannot read the host {spec:?}: expected [user@]HOST[:PORT]")]
    BadHost { spec: String },
    #[error("cannot start {}: {source}", .program.display())]
    Spawn { program: PathBuf, source: std::io::Error },
    #[error("the connection to {host} was lost{}", lost_sessions(.sessions))]
    Lost { host: String, sessions: Vec<(u32, String)> },
    #[error(
        "version mismatch: this cordon is {local_version} (executor protocol \
         {local_protocol}); the cordon on {host} is {remote_version} (protocol \
         {remote_protocol}): install the same cordon on both machines"
    )]
    VersionMismatch {
        host: String,
        local_version: &'static str,
        local_protocol: u32,
        remote_version: String,
        remote_protocol: String,
    },
    #[error(
        "{host}: no executor answered over ssh within {} s (ssh's own message, if any, is \
         above; is cordon installed there? --remote-cordon PATH names it)",
        .waited.as_secs_f64()
    )]
    NoHello { host: String, waited: Duration },
    #[error(
        "{host} did not answer within {} s; the link was closed{}",
        .waited.as_secs_f64(),
        lost_sessions(.sessions)
    )]
    Silent { host: String, waited: Duration, sessions: Vec<(u32, String)> },
    #[error("the link to {host} was closed: {why}{}", lost_sessions(.sessions))]
    Closed { host: String, why: String, sessions: Vec<(u32, String)> },
    #[error(
        "{host} cannot run a sandboxed command: its report of what its sandbox enforces \
         cannot be read ({source}); nothing ran (install the same cordon on both machines)"
    )]
    UnreadableFacts { host: String, source: FactsError },
    #[error("{host} answered something unexpected: {message}")]
    Protocol { host: String, message: String },
    #[error(
        "the request for {host} would be {bytes} bytes, more than the protocol's line limit \
         ({limit}): the command's arguments and environment must be smaller; nothing was sent"
    )]
    TooLong { host: String, bytes: usize, limit: usize },
    #[error("cannot write a request for {host}: {source}")]
    Encode { host: String, source: serde_json::Error },
    #[error("{host}: {message}")]
    Remote { host: String, message: String },
    #[error(
        "{host} cannot enforce {mode} (its `cordon doctor`): {}; nothing ran (--best-effort \
         runs there anyway with what it can enforce)",
        .gaps.join("; ")
    )]
    CannotEnforce { host: String, mode: &'static str, gaps: Vec<String> },
    #[error(transparent)]
    Orchestrator(#[from] OrchestratorError),
}

/// Why the far end's `doctor` report cannot say what its sandbox enforces.
#[derive(Debug, thiserror::Error)]
pub enum FactsError {
    #[error("doctor: {0}")]
    Shape(#[source] serde_json::Error),
    #[error("doctor: no entry for {0}")]
    NoMode(&'static str),
    #[error("doctor: {mode}: {source}")]
    Mode { mode: &'static str, source: serde_json::Error },
    #[error("doctor: {0}: no not_enforced_with_network for a policy with the network on")]
    NoNetworkList(&'static str),
}

fn lost_sessions(sessions: &[(u32, String)]) -> String {
    if sessions.is_empty() {
        return String::new();
    }
    let list: Vec<String> = sessions
        .iter()
        .map(|(id, cmd)| format!("{id} ({})", cordon_policies::render_text(cmd).text))
        .collect();
    format!("; remote sessions ended with it on the remote host: {}", list.join(", "))
}
